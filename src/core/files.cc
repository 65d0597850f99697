#include "core/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/strings.h"

namespace shoal {
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

namespace {

Status Replace(const std::string& path, std::string_view data, mode_t mode, bool sync) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CLOEXEC | O_CREAT | O_TRUNC, mode);
  if (fd < 0) return Internal(ErrnoMessage("open " + tmp));
  Status status = WriteAll(fd, data, tmp);
  if (status.ok() && sync && ::fsync(fd) != 0) status = Internal(ErrnoMessage("fsync " + tmp));
  ::close(fd);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    status = Internal(ErrnoMessage("rename " + tmp));
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  if (sync) {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return Internal(ErrnoMessage("open " + dir));
    const bool synced = ::fsync(dfd) == 0;
    ::close(dfd);
    if (!synced) return Internal(ErrnoMessage("fsync " + dir));
  }
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode) {
  return Replace(path, data, mode, /*sync=*/false);
}

Status WriteFileDurably(const std::string& path, std::string_view data, mode_t mode) {
  return Replace(path, data, mode, /*sync=*/true);
}

std::string FindProgram(const std::string& name, std::string_view search) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  for (std::string_view dir : Split(search, ':')) {
    const std::string candidate = std::string(dir) + "/" + name;
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace shoal
