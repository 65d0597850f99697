#include "agent/launch/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shoal::agent {
namespace {

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Internal(ErrnoMessage("write " + path));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

std::string ErrnoMessage(std::string_view what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

Result<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound(ErrnoMessage(path));
    return Internal(ErrnoMessage("open " + path));
  }
  std::string out;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status error = Internal(ErrnoMessage("read " + path));
      ::close(fd);
      return error;
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Status WriteFile(const std::string& path, std::string_view data, mode_t mode) {
  int flags = O_WRONLY | O_CLOEXEC;
  if (mode != 0) flags |= O_CREAT | O_TRUNC;
  int fd = ::open(path.c_str(), flags, mode);
  if (fd < 0) return Internal(ErrnoMessage("open " + path));
  Status status = WriteAll(fd, data, path);
  ::close(fd);
  return status;
}

Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode) {
  const std::string tmp = path + ".tmp";
  SHOAL_RETURN_IF_ERROR(WriteFile(tmp, data, mode));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status error = Internal(ErrnoMessage("rename " + tmp));
    ::unlink(tmp.c_str());
    return error;
  }
  return Status::Ok();
}

}  // namespace shoal::agent
