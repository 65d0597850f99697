// Reading files a job's user controls (its output and error files) with
// that user's rights alone. The agent runs as root; a path in a job spec is
// the user's to choose and the user's to change while the job runs (a
// symbolic link in place of the output file, or in place of a folder on
// its way), so the agent never opens such a path itself: a short-lived
// child process takes on the user's uid, gid and groups, opens the file
// with O_NOFOLLOW and hands the descriptor back. What the user could not
// open is never served, and neither is anything but a regular file that
// the user owns. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/launch/users.h"
#include "core/status.h"

namespace shoal::agent {

struct OutputChunk {
  int64_t size = 0;   // the whole file's size
  std::string bytes;  // from the offset asked for, at most the bytes asked for
};

// Up to `max_bytes` of `path` from `offset`, read as `user`. NotFound when
// the file does not exist (yet); PermissionDenied when the user may not
// read it, it is a symbolic link, not a regular file, or not the user's.
Result<OutputChunk> ReadOutputAs(const UserAccount& user, const std::string& path, int64_t offset,
                                 size_t max_bytes);

}  // namespace shoal::agent
