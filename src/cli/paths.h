// Where Shoal keeps things on a host when nobody says otherwise.
#pragma once

#include <string>

namespace shoal::cli {

// $SHOAL_STATE_DIR, else $XDG_DATA_HOME/shoal, else ~/.local/share/shoal.
std::string DefaultStateDir();
// $SHOAL_SERVER, else 127.0.0.1:6820.
std::string DefaultServer();

}  // namespace shoal::cli
