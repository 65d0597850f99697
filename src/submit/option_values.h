// The values of sbatch's options (options.cc's table calls these): each
// parser reads one option's value as the user gave it (a Call) and says,
// naming the option, what is wrong with it. Internal to src/submit.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/strings.h"
#include "core/time.h"
#include "submit/options.h"
#include "submit/request.h"

namespace shoal::submit {

// Values quoted back in messages are cut to this many characters.
inline constexpr size_t kShownValueChars = 80;
inline constexpr size_t kMaxNameBytes = 256;
inline constexpr size_t kMaxPathBytes = 4096;
// Enough for any count or time field; longer runs of digits would overflow
// the arithmetic in ParseDuration and ParseArraySpec before their checks.
inline constexpr size_t kMaxNumberDigits = 9;
// 9999-12-31T23:59:59 UTC.
inline constexpr int64_t kMaxUnixSeconds = 253'402'300'799;

// The value as it goes into a message: control characters escaped, long
// values cut short, so that a message stays one readable line.
std::string Printable(std::string_view s);

// One option as the user gave it.
struct Call {
  std::string_view name;   // as spelled: "--nodes" or "-N"
  std::string canonical;   // "--nodes" for both
  std::string_view value;  // empty for a flag
  Source source;

  std::string Shown() const {
    if (value.empty()) return std::string(name);
    return fmt::format("{}{}{}", name, StartsWith(name, "--") ? "=" : " ", Printable(value));
  }
};

Status Invalid(const Call& c, std::string_view why);

bool IsControl(char ch);

bool IsSpace(char ch);

bool AllDigits(std::string_view s);

// Whether a run of digits in `s` has more than `max_digits` significant digits.
bool HasLongNumber(std::string_view s, size_t max_digits);

// A name-like value: no control characters, no spaces unless allowed, and
// not too long.
Status CheckText(const Call& c, size_t max_bytes, bool allow_spaces);

Result<int64_t> Count(const Call& c, std::string_view text, int64_t lo, int64_t hi,
                      std::string_view what);

// Sets a group of exclusive options; the same option again replaces its
// earlier value, a different one of the group is a conflict.
template <typename G>
Status SetGroup(const Call& c, std::optional<G>& slot, G value, std::string_view what) {
  if (slot && slot->option != c.canonical) {
    return InvalidArgument(fmt::format("{} conflicts with {} given before it: ask for {} one way",
                                       c.Shown(), slot->option, what));
  }
  value.option = c.canonical;
  slot = std::move(value);
  return Status::Ok();
}

bool IsModelName(std::string_view s);

// "[type:]N" as --gpus and --gpus-per-node take it.
Result<GpuRequest> ParseGpuCount(const Call& c, bool per_node);

// Slurm's --gres=gpu[:type][:count]; Shoal knows no other generic resource.
Result<GpuRequest> ParseGres(const Call& c);

Result<int64_t> ParseMemory(const Call& c);

Result<std::optional<Time>> ParseBegin(const Call& c, std::vector<std::string>& notes);

bool IsEnvName(std::string_view s);

// --export: ALL (the default: the submitting shell's variables), NONE, or
// names of its variables; NAME=value sets one whatever the rest says. As
// Slurm, a list without ALL or NONE copies only what it names.
Result<ExportRequest> ParseExport(const Call& c);

// --signal=[{R|B}:]SIG[@TIME], as sbatch reads it (R:, a reservation's
// overlap, means nothing in Shoal and is accepted).
Result<Request::SignalRequest> ParseSignalOption(const Call& c);

// A Slurm host list (n[01-04],m1) for --nodelist and --exclude, expanded.
Result<std::vector<std::string>> ParseNodeNames(const Call& c);

// --constraint: labels joined with & or , (every node has each), where a
// term may be a choice a|b (every node has one of them): "a|b&c" is
// (a or b) and c. Each term is one entry of JobSpec::constraints. Slurm's
// node counts, a*2 or [a*2&b*4], stand alone as one entry (ConstraintCounts).
Result<std::vector<std::string>> ParseConstraint(const Call& c);

}  // namespace shoal::submit
