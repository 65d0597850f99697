// The job's user, and the rules on who a job may run as: never an unknown
// user; never root unless the agent allows root jobs (single-user
// machines); and, when the agent does not run as root, only the agent's
// own user, since nothing else could switch to another. The agent looks
// the user up once (Launch) and hands the account to the supervisor, which
// checks the rules again on the numbers alone, so that it needs no user
// database lookup of its own. Thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace shoal::agent {

struct UserAccount {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
  std::string shell;
  std::vector<gid_t> groups;  // supplementary groups, the primary one included
};

// Looks the user up (getpwnam_r, getgrouplist) and applies the rules.
Result<UserAccount> LookUpJobUser(const std::string& name, bool allow_root_jobs);

// The rules alone, for an account looked up before.
Status CheckJobUser(const UserAccount& account, bool allow_root_jobs);

}  // namespace shoal::agent
