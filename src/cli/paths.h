// Where Shoal keeps things on a host when nobody says otherwise.
#pragma once

#include <string>
#include <string_view>

namespace shoal::cli {

// $SHOAL_STATE_DIR, else $XDG_DATA_HOME/shoal, else ~/.local/share/shoal.
std::string DefaultStateDir();

// Where `shoal server` listens unless told otherwise.
inline constexpr std::string_view kDefaultServerAddress = "127.0.0.1:6820";
// $SHOAL_SERVER, else the URL the local server wrote to <state dir>/endpoint
// (its scheme and port), else 127.0.0.1:6820 (TLS).
std::string DefaultServer();
// Where this program's companions (shoal-step, shoal-full) are: beside the
// running binary.
std::string CompanionPath(const std::string& name);
// The program that has the daemons and heavy tools; `shoal` runs it for them.
inline constexpr const char* kFullBinary = "shoal-full";

// The folder of the data Shoal ships (data/ in the repository: traces, GPU
// specs, published runs; data/README.md). The first that applies:
//   1. `flag`, when a command's --data gives one;
//   2. $SHOAL_DATA_DIR;
//   3. <prefix>/share/shoal/data beside an installed binary (found from
//      /proc/self/exe), when it exists;
//   4. the source tree's data/, as it was when this binary was built (so that
//      a build tree works from any current directory), when it exists;
// else the installed location of 3, so that an error names where it belongs.
std::string DataDir(const std::string& flag = "");

// The folder DataDir() picks and which rule picked it (`shoal version` prints both).
struct DataDirChoice {
  std::string path;
  std::string_view
      source;  // "--data", "$SHOAL_DATA_DIR", "install prefix", "source tree" or "missing"
};
DataDirChoice ChooseDataDir(const std::string& flag = "");

// A file or folder a user named: `path` itself when it exists or is absolute;
// else the same relative path inside Shoal's data, tried as
// <data>/traces/<path>, <data>/<path> and, for a path written from the
// repository's root ("data/traces/..."), <data>/<path without "data/">; else
// `path` unchanged (so that the error names what the user gave). Lets
// `shoal sim --trace microsoft-itp-2021/raw/cluster01.csv` run anywhere.
std::string FindInData(const std::string& path);

// Blocks until SIGINT or SIGTERM. The long-running commands (server, agent,
// up) stop their threads afterwards, which a signal handler must not do.
void WaitForStopSignal();

}  // namespace shoal::cli
