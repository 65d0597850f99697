// What the admin commands (`shoal partition`, `account`, `qos`,
// `reservation`) share: the checks of the values they take, as CLI11
// validators that make a bad value a usage error saying what is wrong, and
// the reading of the server's named lists.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/json.h"
#include "cli/client.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal::cli {

// Limits past which a value is a mistake rather than a policy.
inline constexpr Duration kMaxPartitionTime = std::chrono::hours(24 * 365);  // as submit's --time
inline constexpr int64_t kMaxNodesPerJob = 100'000;                          // as JobSpec::Validate
inline constexpr int64_t kMaxGpus = 1'000'000;                               // as JobSpec::Validate
inline constexpr int64_t kMaxPriorityTier = 65'533;  // as Slurm's PriorityTier
inline constexpr int64_t kMaxIdleMinutes = 525'600;  // a year
inline constexpr double kMaxShares = 1e6;
inline constexpr size_t kMaxNameBytes = 64;

// Partition, account and QoS names: what -p, -A and --qos carry and a table shows.
Status CheckName(std::string_view what, std::string_view s);
// A partition's time in Slurm's forms (core ParseDuration, as sbatch --time);
// 0 is none, and a maximum may also be "unlimited" or "infinite", as Slurm's
// MaxTime takes it.
Result<Duration> ParsePartitionTime(std::string_view s, bool is_maximum);
Result<int> ParseWhole(std::string_view s, int64_t lo, int64_t hi);
Result<double> ParsePercent(std::string_view s);
Result<double> ParseShares(std::string_view s);
// "a,b" into account names; "ALL" (as Slurm's AllowAccounts) or "" is every
// account, an empty list.
Result<std::vector<std::string>> ParseAccountList(std::string_view s);

inline const Status& StatusOf(const Status& s) {
  return s;
}
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

// A CLI11 check of a value with one of the parsers above, so that a bad
// value is a usage error that says what is wrong with it.
template <typename Parse>
CLI::Validator Checked(Parse parse, std::string name) {
  return CLI::Validator(
      [parse](std::string& s) {
        const auto r = parse(s);
        const Status& status = StatusOf(r);
        return status.ok() ? std::string() : status.message();
      },
      "", std::move(name));
}

CLI::Validator NameCheck(const std::string& what);

// A limit as a table shows it: "-" for none (0).
inline std::string Limit(int n) {
  return n > 0 ? std::to_string(n) : "-";
}

// j["name"] when it is a string, else "".
std::string NameOf(const api::Json& j);
// The item of the server's list `key` (checked by GetList) named `name`, or nullptr.
const api::Json* FindNamed(const api::Json& answer, const char* key, const std::string& name);
// The server's answer to GET `path`, checked to hold a list `key`.
Result<api::Json> GetList(ApiClient& c, const char* path, const char* key);

}  // namespace shoal::cli
