// Folder trees of the image cache, handled by descriptor: nothing here
// follows a symbolic link, so that a tree unpacked from a stranger's image
// can be measured and removed safely. Thread-safe (no state).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace shoal::agent {

// Owns a file descriptor.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// The names in a folder, but "." and "..".
Result<std::vector<std::string>> ListDir(int dirfd);
// Removes `name` in `dirfd`, the whole tree if it is a folder; gone already is fine.
Status RemoveAt(int dirfd, const std::string& name);
// Removes everything in the folder, not the folder.
Status RemoveChildren(int dirfd);
Status RemoveTree(const std::string& path);
// Bytes on disk in the tree (blocks, a hard-linked file once).
Result<int64_t> TreeBytes(const std::string& path);
// mkdir -p.
Status MakeDirs(const std::string& path, mode_t mode);
// Opens `path` (created 0600 if need be) and flocks it with `operation`;
// Unavailable when LOCK_NB finds it held.
Result<UniqueFd> LockFile(const std::string& path, int operation);

}  // namespace shoal::agent
