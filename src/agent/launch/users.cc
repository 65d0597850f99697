#include "agent/launch/users.h"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shoal::agent {

Result<UserAccount> LookUpJobUser(const std::string& name, bool allow_root_jobs) {
  if (name.empty()) return InvalidArgument("the step names no user");
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  int rc = 0;
  while ((rc = ::getpwnam_r(name.c_str(), &pw, buffer.data(), buffer.size(), &found)) == ERANGE &&
         buffer.size() < (1u << 20)) {
    buffer.resize(buffer.size() * 2);
  }
  if (rc != 0) {
    return Internal(fmt::format("cannot look up user '{}': {}", name, std::strerror(rc)));
  }
  if (found == nullptr) return NotFound(fmt::format("no user '{}' on this node", name));
  UserAccount account;
  account.name = name;
  account.uid = pw.pw_uid;
  account.gid = pw.pw_gid;
  account.home = pw.pw_dir != nullptr ? pw.pw_dir : "/";
  account.shell = pw.pw_shell != nullptr ? pw.pw_shell : "";
  SHOAL_RETURN_IF_ERROR(CheckJobUser(account, allow_root_jobs));
  int count = 32;
  std::vector<gid_t> groups(static_cast<size_t>(count));
  while (::getgrouplist(name.c_str(), account.gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<size_t>(count) + 32);
    count = static_cast<int>(groups.size());
  }
  groups.resize(static_cast<size_t>(count));
  account.groups = std::move(groups);
  return account;
}

Status CheckJobUser(const UserAccount& account, bool allow_root_jobs) {
  if (account.uid == 0 && !allow_root_jobs) {
    return Status(StatusCode::kPermissionDenied,
                  fmt::format("jobs do not run as root (user '{}'); an agent started with root "
                              "jobs allowed may run them",
                              account.name));
  }
  const uid_t self = ::geteuid();
  if (self != 0 && account.uid != self) {
    return Status(StatusCode::kPermissionDenied,
                  fmt::format("this agent runs as uid {} and can start jobs only as that user, not "
                              "as '{}' (uid {})",
                              self, account.name, account.uid));
  }
  return Status::Ok();
}

}  // namespace shoal::agent
