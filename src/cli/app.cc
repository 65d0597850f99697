#include "cli/app.h"

#include <iostream>

#include "cli/client.h"

namespace shoal::cli {

int ParseApp(CLI::App& app, const std::vector<std::string>& raw, std::string_view who) {
  // CLI11 takes the arguments last first.
  std::vector<std::string> args(raw.rbegin(), raw.rend());
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    // A subcommand's --help shows the subcommand's options, under its full
    // name ("shoal bench node").
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::ExtrasError& e) {
    return UsageError(who, e.what());
  } catch (const CLI::ParseError& e) {
    // A word the parser did not expect (a misspelt option) is told first:
    // it is often why a required value then seems missing.
    const std::vector<std::string> extras = app.remaining(true);
    if (!extras.empty() && !app.get_allow_extras()) {
      return UsageError(who, CLI::ExtrasError(extras).what());
    }
    return UsageError(who, e.what());
  }
  return -1;
}

int UsageError(std::string_view who, std::string_view what) {
  std::cerr << who << ": " << what << " (" << who << " --help)\n";
  return kExitUsage;
}

void AddClientFlags(CLI::App& app, ClientFlags& flags) {
  constexpr const char* kGroup = "Server";
  app.add_option("--server", flags.server,
                 "the server's [https://|http://]HOST:PORT, TLS unless http:// (default: "
                 "$SHOAL_SERVER, else 127.0.0.1:6820)")
      ->type_name("ADDRESS")
      ->group(kGroup);
  app.add_option("--ca-file", flags.ca_file,
                 "the cluster CA's certificate, to check the server (default: $SHOAL_CA_FILE, "
                 "~/.config/shoal/ca.crt, or the local server's <state dir>/tls/ca.crt)")
      ->type_name("FILE")
      ->group(kGroup);
  app.add_option("--token", flags.token,
                 "an API token (default: $SHOAL_TOKEN, $SHOAL_TOKEN_FILE, "
                 "~/.config/shoal/token, or the local server's unix socket)")
      ->type_name("TOKEN")
      ->group(kGroup);
  app.add_flag("--json", flags.json, "print the server's answer as JSON")->group(kGroup);
}

}  // namespace shoal::cli
