// Where Shoal keeps things on a host when nobody says otherwise.
#pragma once

#include <string>
#include <string_view>

namespace shoal::cli {

// $SHOAL_STATE_DIR, else $XDG_DATA_HOME/shoal, else ~/.local/share/shoal.
std::string DefaultStateDir();

// Where `shoal server` listens unless told otherwise.
inline constexpr std::string_view kDefaultServerAddress = "127.0.0.1:6820";
// $SHOAL_SERVER, else 127.0.0.1:6820.
std::string DefaultServer();
// Where this program's companions (shoal-step) are: beside the running binary.
std::string CompanionPath(const std::string& name);

// Blocks until SIGINT or SIGTERM. The long-running commands (server, agent,
// up) stop their threads afterwards, which a signal handler must not do.
void WaitForStopSignal();

}  // namespace shoal::cli
