#include "agent/image/tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "core/files.h"

namespace shoal::agent {
namespace {

// Bytes on disk under `dirfd`, a hard-linked file counted once.
Status AddTreeBytes(int dirfd, int64_t& bytes, std::unordered_set<ino_t>& linked) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dirfd));
  for (const std::string& name : names) {
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return Internal(ErrnoMessage("stat " + name));
    const bool dir = S_ISDIR(st.st_mode);
    if (!dir && st.st_nlink > 1 && !linked.insert(st.st_ino).second) continue;
    bytes += static_cast<int64_t>(st.st_blocks) * 512;
    if (!dir) continue;
    UniqueFd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub.get() < 0) return Internal(ErrnoMessage("open " + name));
    SHOAL_RETURN_IF_ERROR(AddTreeBytes(sub.get(), bytes, linked));
  }
  return Status::Ok();
}

}  // namespace

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::vector<std::string>> ListDir(int dirfd) {
  // A descriptor of its own: fdopendir takes it, and its offset is not dirfd's.
  int own = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (own < 0) return Internal(ErrnoMessage("open folder"));
  DIR* dir = ::fdopendir(own);
  if (dir == nullptr) {
    ::close(own);
    return Internal(ErrnoMessage("fdopendir"));
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  const int error = errno;
  ::closedir(dir);
  if (error != 0) return Internal(fmt::format("readdir: {}", std::strerror(error)));
  return names;
}

Status RemoveChildren(int dirfd) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dirfd));
  for (const std::string& name : names)
    SHOAL_RETURN_IF_ERROR(RemoveAt(dirfd, name));
  return Status::Ok();
}

Status RemoveAt(int dirfd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Status::Ok() : Internal(ErrnoMessage("stat " + name));
  }
  const bool dir = S_ISDIR(st.st_mode);
  if (dir) {
    UniqueFd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub.get() < 0) return Internal(ErrnoMessage("open " + name));
    SHOAL_RETURN_IF_ERROR(RemoveChildren(sub.get()));
  }
  if (::unlinkat(dirfd, name.c_str(), dir ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT) {
    return Internal(ErrnoMessage("remove " + name));
  }
  return Status::Ok();
}

Status RemoveTree(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  UniqueFd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return Internal(ErrnoMessage("open " + parent));
  return RemoveAt(dir.get(), path.substr(slash + 1)).WithContext("remove " + path);
}

Result<int64_t> TreeBytes(const std::string& path) {
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.get() < 0) return Internal(ErrnoMessage("open " + path));
  int64_t bytes = 0;
  std::unordered_set<ino_t> linked;
  SHOAL_RETURN_IF_ERROR(AddTreeBytes(dir.get(), bytes, linked));
  return bytes;
}

Status MakeDirs(const std::string& path, mode_t mode) {
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    const std::string prefix = path.substr(0, end);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST)
      return Internal(ErrnoMessage("mkdir " + prefix));
    if (end == std::string::npos) break;
  }
  return Status::Ok();
}

Result<UniqueFd> LockFile(const std::string& path, int operation) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) return Internal(ErrnoMessage("open " + path));
  while (::flock(fd.get(), operation) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return Unavailable(path + " is held");
    return Internal(ErrnoMessage("flock " + path));
  }
  return fd;
}

}  // namespace shoal::agent
