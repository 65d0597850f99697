#include "cli/app.h"

#include <iostream>

namespace shoal::cli {

int ParseApp(CLI::App& app, const std::vector<std::string>& raw, std::string_view who) {
  std::vector<std::string> args(raw.rbegin(), raw.rend());
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    // A subcommand's --help shows the subcommand's options.
    const std::vector<CLI::App*> subs = app.get_subcommands();
    std::cout << (subs.empty() ? app.help() : subs.front()->help());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << who << ": " << e.what() << " (" << who << " --help)\n";
    return 2;
  }
  return -1;
}

}  // namespace shoal::cli
