// Slurm's node counts of --constraint, read alike by the submit parser, the
// spec's checks and the scheduler.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace shoal {

// Slurm's node counts of --constraint, as one entry of JobSpec::constraints
// holds them, standing alone: "a*2" (at least 2 of the job's nodes have label
// a: Slurm's "Node Count") or "[a*2&b*4]" (2 of its nodes have a and 4 others
// b, and those are all of its nodes: Slurm's "Multiple Counts").
struct ConstraintCounts {
  struct Term {
    std::string label;
    int count = 0;
  };
  std::vector<Term> terms;  // in the order given, each label once
  bool all_nodes = false;   // [..]: the counts add up to the job's node count
  int Sum() const;
};

// The counts among `constraints`; none when no entry has a '*'. An error when
// an entry with one is malformed or is not the only entry.
Result<std::optional<ConstraintCounts>> ParseConstraintCounts(
    const std::vector<std::string>& constraints);

}  // namespace shoal
