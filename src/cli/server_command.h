// A command that talks to the server, parsed with CLI11 like every other
// (cli/app.h), with the client flags. Includes CLI11 through app.h: include
// this only from .cc files.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/app.h"
#include "cli/client.h"

namespace shoal::cli {

// A command's CLI11 app with the client flags. The command adds its own
// options, positionals and verbs to app(), then calls Parse and, when that
// says go on, Open. Not thread-safe; one per command run.
class ServerCommand {
 public:
  ServerCommand(std::string name, std::string description)
      : name_(std::move(name)), who_("shoal " + name_), app_(std::move(description), who_) {
    AddClientFlags(app_, flags_);
  }

  CLI::App& app() { return app_; }
  const ClientFlags& flags() const { return flags_; }
  const std::string& name() const { return name_; }

  // An exit code to stop with (after --help or a usage error), or -1.
  int Parse(const std::vector<std::string>& raw) { return ParseApp(app_, raw, who_); }
  int UsageError(std::string_view what) const { return cli::UsageError(who_, what); }
  Result<ApiClient> Open() const { return ApiClient::Open(flags_); }

 private:
  std::string name_;
  std::string who_;
  CLI::App app_;
  ClientFlags flags_;
};

// Parses `raw` with `cmd`, opens a client and runs fn on it; returns the exit
// code. Usage errors are found before anything is sent.
template <typename F>
int RunServerCommand(ServerCommand& cmd, const std::vector<std::string>& raw, F&& fn) {
  if (int code = cmd.Parse(raw); code >= 0) return code;
  auto client = cmd.Open();
  if (!client.ok()) return Fail(cmd.name(), client.status());
  return std::forward<F>(fn)(*client);
}

}  // namespace shoal::cli
