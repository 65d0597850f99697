#include "cli/admin_values.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/strings.h"

namespace shoal::cli {

Status CheckName(std::string_view what, std::string_view s) {
  const bool ok =
      !s.empty() && s.size() <= kMaxNameBytes && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
      });
  if (ok) return Status::Ok();
  return InvalidArgument(
      fmt::format("'{}' is not {} name (letters, digits, '.', '_' and '-', at most {})", s, what,
                  kMaxNameBytes));
}

Result<Duration> ParsePartitionTime(std::string_view s, bool is_maximum) {
  const std::string lower = ToLower(Trim(s));
  if (is_maximum && (lower == "unlimited" || lower == "infinite")) return Duration(0);
  auto d = ParseDuration(s);
  if (!d.ok()) {
    return InvalidArgument(fmt::format(
        "'{}' is not a time: MIN, MIN:SEC, H:M:S, D-H, D-H:M, D-H:M:S, or 90s, 45m, 2h, 3d ({})", s,
        is_maximum ? "0 or unlimited: no limit" : "0: the maximum, or a day without one"));
  }
  if (*d > kMaxPartitionTime) return InvalidArgument(fmt::format("'{}' is more than 365 days", s));
  return *d;
}

Result<int> ParseWhole(std::string_view s, int64_t lo, int64_t hi) {
  auto v = ParseInt(s);
  if (!v.ok() || *v < lo || *v > hi)
    return InvalidArgument(fmt::format("'{}' is not a whole number from {} to {}", s, lo, hi));
  return static_cast<int>(*v);
}

Result<double> ParsePercent(std::string_view s) {
  auto v = ParseDouble(s);
  if (!v.ok() || !(*v >= 0 && *v <= 100))
    return InvalidArgument(fmt::format("'{}' is not a percentage from 0 to 100", s));
  return *v;
}

Result<double> ParseShares(std::string_view s) {
  auto v = ParseDouble(s);
  if (!v.ok() || !(*v > 0 && *v <= kMaxShares))
    return InvalidArgument(
        fmt::format("'{}' is not a number more than 0, at most {:.0f}", s, kMaxShares));
  return *v;
}

Result<std::vector<std::string>> ParseAccountList(std::string_view s) {
  std::vector<std::string> out;
  const std::string lower = ToLower(Trim(s));
  if (lower.empty() || lower == "all") return out;
  for (std::string_view part : Split(s, ',')) {
    const std::string name(Trim(part));
    SHOAL_RETURN_IF_ERROR(CheckName("an account", name));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

CLI::Validator NameCheck(const std::string& what) {
  return Checked([what](const std::string& s) { return CheckName(what, s); }, "Name");
}

std::string NameOf(const api::Json& j) {
  auto it = j.find("name");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const api::Json* FindNamed(const api::Json& answer, const char* key, const std::string& name) {
  for (const api::Json& item : answer.at(key)) {
    if (item.is_object() && NameOf(item) == name) return &item;
  }
  return nullptr;
}

Result<api::Json> GetList(ApiClient& c, const char* path, const char* key) {
  SHOAL_ASSIGN_OR_RETURN(api::Json r, c.Get(path));
  if (!r.is_object() || !r.contains(key) || !r[key].is_array())
    return Internal(fmt::format("the server's answer to {} has no list '{}'", path, key));
  return r;
}

}  // namespace shoal::cli
