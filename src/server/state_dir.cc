#include "server/state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

namespace shoal::server {

namespace {

constexpr mode_t kDirMode = 0711;
// Read or write for group or others.
constexpr mode_t kOpenBits = S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH;

std::string ModeText(mode_t mode) {
  return fmt::format("{:04o}", mode & 07777);
}

Status Errno(const std::string& what) {
  return Internal(fmt::format("{}: {}", what, std::strerror(errno)));
}

// Takes group's and others' read and write away from the entries directly
// inside the directory `d` (named `dir`); a sentence for each change.
Result<std::vector<std::string>> CloseEntries(DIR* d, const std::string& dir) {
  const int fd = ::dirfd(d);
  std::vector<std::string> notes;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    if (S_ISLNK(st.st_mode) || S_ISSOCK(st.st_mode) || (st.st_mode & kOpenBits) == 0) continue;
    const mode_t mode = (st.st_mode & 07777) & ~kOpenBits;
    if (::fchmodat(fd, name.c_str(), mode, 0) != 0)
      return Errno(fmt::format("chmod {}/{}", dir, name));
    notes.push_back(fmt::format("{}/{} was open to other users (mode {}): it is {} now", dir, name,
                                ModeText(st.st_mode), ModeText(mode)));
  }
  return notes;
}

}  // namespace

Result<std::vector<std::string>> SecureStateDir(const std::string& dir) {
  if (dir.empty()) return InvalidArgument("the state directory is not set");
  std::error_code ec;
  const std::filesystem::path path(dir);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  // mkdir's mode is cut by the umask; the chmod below makes it exact.
  const bool created = ::mkdir(dir.c_str(), kDirMode) == 0;
  if (!created && errno != EEXIST) return Errno("cannot create the state directory " + dir);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open the state directory " + dir);
  const std::unique_ptr<DIR, int (*)(DIR*)> closer(::fdopendir(fd), ::closedir);
  if (!closer) {
    ::close(fd);
    return Errno("cannot read the state directory " + dir);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Errno("stat " + dir);
  if (st.st_uid != ::geteuid()) {
    return FailedPrecondition(fmt::format(
        "the state directory {} belongs to uid {}, not to this server's uid {}: its owner could "
        "change the server's tokens and database (chown it, or use another --state-dir)",
        dir, st.st_uid, ::geteuid()));
  }
  std::vector<std::string> notes;
  if ((st.st_mode & 07777) != kDirMode) {
    if (::fchmod(fd, kDirMode) != 0) return Errno("chmod " + dir);
    if (!created) {
      notes.push_back(fmt::format(
          "{} was mode {}: it is {} now (other users may reach its socket by name, not list it)",
          dir, ModeText(st.st_mode), ModeText(kDirMode)));
    }
  }
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> closed, CloseEntries(closer.get(), dir));
  notes.insert(notes.end(), closed.begin(), closed.end());
  return notes;
}

std::string UnreachableByOthers(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec).parent_path();
  for (; !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) {
      return fmt::format("{} (mode {}) is not searchable by other users", p.string(),
                         ModeText(st.st_mode));
    }
    if (p == p.root_path()) break;
  }
  return "";
}

}  // namespace shoal::server
