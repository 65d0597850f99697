// Small text helpers shared by the parsers of cluster files, traces and job options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace shoal {

std::string_view Trim(std::string_view s);
std::vector<std::string_view> Split(std::string_view s, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
std::string ToLower(std::string_view s);
// Equal but for the case of ASCII letters.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool StartsWith(std::string_view s, std::string_view prefix);

// Levenshtein distance, for "did you mean" hints on unknown keys and options.
size_t EditDistance(std::string_view a, std::string_view b);

// The name nearest to `word` (ignoring case) when it is a near miss: under
// three edits, and fewer than half the word's letters ("zz" is not a
// misspelt "b"); empty when none is.
std::string_view NearMiss(std::string_view word, const std::vector<std::string_view>& names);
// What follows "unknown X 'word'": " (did you mean 'name'?)" for a near
// miss among `names`, else " (known: a, b, c)": `listed`, or `names` when
// null (a catalogue may accept aliases it does not list).
std::string UnknownNameHint(std::string_view word, const std::vector<std::string_view>& names,
                            const std::vector<std::string_view>* listed = nullptr);

// `text` as the inside of a JSON string: quotes, backslashes and control
// characters escaped (\n, \t, \r by name, the others as \u00XX).
std::string JsonEscaped(std::string_view text);

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points past U+10FFFF): JSON carries nothing else.
bool IsValidUtf8(std::string_view s);

Result<int64_t> ParseInt(std::string_view s);
Result<double> ParseDouble(std::string_view s);
// One "NAME=NUMBER" of a list such as "h100=1,a100=0.55" (spaces around
// either part allowed): the name and the number, or nullopt when it is not
// one (no '=', an empty name, not a number).
std::optional<std::pair<std::string, double>> ParseNamedNumber(std::string_view item);

// Parses a memory size into MiB: "512" (MiB), "16384M", "80G", "80GiB", "1T", "2048MB".
Result<int64_t> ParseMemoryMib(std::string_view s);

// Parses "0-3,6,8-9" into a sorted list of integers.
Result<std::vector<int>> ParseIntRanges(std::string_view s);

// 1536 MiB -> "1.5G"; used in tables.
std::string FormatMemoryMib(int64_t mib);

// A signal by number (1-64) or name, with or without SIG, in any case
// ("USR1", "SIGusr1", "10"), as scancel and sbatch --signal take them.
Result<int> ParseSignal(std::string_view s);
// Its name without SIG ("USR1"), or the number for one without a name.
std::string SignalName(int sig);

}  // namespace shoal
