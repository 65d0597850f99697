// Small file helpers: the agent's steps folders, cgroup control files and
// /proc, the controller's keys and tokens. Every descriptor they open is
// O_CLOEXEC, so that none leaks into a job. Thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace shoal {

// "what: strerror(errno)" for the current errno.
std::string ErrnoMessage(std::string_view what);

// The whole file; NotFound when it does not exist.
Result<std::string> ReadFile(const std::string& path);

// Writes `data` into an existing file (a cgroup control file: no O_CREAT)
// or, when `mode` is not 0, creates or truncates it with that mode.
Status WriteFile(const std::string& path, std::string_view data, mode_t mode = 0);

// Writes `path` whole or not at all: a temporary file beside it, then
// rename. No fsync: a step's files only matter while the host stays up (a
// reboot ends every step, which Scan then reports as lost).
Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode);

// The same, durably: the file and its folder are synced before it returns,
// so that what it wrote survives a crash of the machine (keys, tokens).
Status WriteFileDurably(const std::string& path, std::string_view data, mode_t mode);

// Where a program is: `name` itself when it has a slash, else the first
// folder of the colon-separated `search` holding an executable `name`;
// empty when there is none.
std::string FindProgram(const std::string& name, std::string_view search);

}  // namespace shoal
