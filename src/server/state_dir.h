// The controller's state directory, made safe to share a host with other
// users: the directory is 0711 (anyone may pass through it to the local
// identity socket by name, nobody else may list it) and nothing directly
// inside it is readable or writable by anyone but its owner (tokens, keys,
// the database with its WAL). Directories inside keep their search bits, so
// that a path an agent of `shoal up` opens to job users stays reachable.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace shoal::server {

// Creates `dir` (0711; its missing parents 0755) or checks the existing one:
// it must be a directory owned by this process's effective uid (an error
// naming the owner otherwise). A directory readable or writable by group or
// others becomes 0711; each entry directly inside that is readable or
// writable by group or others loses those bits (files 0600, directories keep
// their search bits). Sockets are left alone (the server makes its own). Each
// change is returned as a sentence for the operator.
Result<std::vector<std::string>> SecureStateDir(const std::string& dir);

// Why other local users cannot reach `path` (a folder on its way that they
// may not search), or empty when they can.
std::string UnreachableByOthers(const std::string& path);

}  // namespace shoal::server
