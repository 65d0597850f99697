#include "core/constraints.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "core/strings.h"

namespace shoal {

int ConstraintCounts::Sum() const {
  int sum = 0;
  for (const Term& t : terms)
    sum += t.count;
  return sum;
}

namespace {

inline constexpr int kMaxCountedNodes = 100000;  // as JobSpec::nodes

// "a*2" -> {a, 2}.
Result<ConstraintCounts::Term> ParseCountTerm(std::string_view text) {
  const size_t star = text.find('*');
  const std::string_view label = text.substr(0, star);
  if (star == std::string_view::npos) {
    return InvalidArgument(
        fmt::format("'{}' has no count: with counts, every label needs one ([a*2&b*4])", label));
  }
  if (label.empty() || label.find_first_of("[]|&,()!* \t") != std::string_view::npos) {
    return InvalidArgument(fmt::format("'{}' is not a label with a count (label*N)", text));
  }
  Result<int64_t> count = ParseInt(text.substr(star + 1));
  if (!count.ok() || *count < 1 || *count > kMaxCountedNodes) {
    return InvalidArgument(
        fmt::format("the count of '{}' must be a whole number, 1 to {}", label, kMaxCountedNodes));
  }
  return ConstraintCounts::Term{std::string(label), static_cast<int>(*count)};
}

}  // namespace

Result<std::optional<ConstraintCounts>> ParseConstraintCounts(
    const std::vector<std::string>& constraints) {
  auto counted = [](const std::string& c) { return c.find('*') != std::string::npos; };
  auto it = std::find_if(constraints.begin(), constraints.end(), counted);
  if (it == constraints.end()) return std::optional<ConstraintCounts>();
  if (constraints.size() > 1)
    return InvalidArgument("label counts stand alone, with no other labels beside them");
  ConstraintCounts out;
  std::string text = *it;
  if (text.starts_with('[') && text.ends_with(']')) {
    out.all_nodes = true;
    text = text.substr(1, text.size() - 2);
  }
  if (!out.all_nodes && text.find_first_of("&,") != std::string::npos)
    return InvalidArgument("counts of more than one label go in brackets ([a*2&b*4])");
  std::replace(text.begin(), text.end(), ',', '&');  // Slurm's other AND
  for (std::string_view part : Split(text, '&')) {
    SHOAL_ASSIGN_OR_RETURN(ConstraintCounts::Term term, ParseCountTerm(part));
    for (const ConstraintCounts::Term& t : out.terms) {
      if (t.label == term.label)
        return InvalidArgument(fmt::format("label '{}' is counted twice", term.label));
    }
    out.terms.push_back(std::move(term));
  }
  if (out.Sum() > kMaxCountedNodes)
    return InvalidArgument(
        fmt::format("the counts add up to more than {} nodes", kMaxCountedNodes));
  return std::optional<ConstraintCounts>(std::move(out));
}

}  // namespace shoal
