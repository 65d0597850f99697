// The rendezvous ports the controller hands to running jobs: a job's
// MASTER_PORT and, after it, one port per task for TF_CONFIG's workers.
// Blocks are held per node, so that two jobs sharing a node never get
// overlapping ports (the hash of the job id used before collided: errno 98,
// "Address already in use"); a block is free again when its job stops.
// Handed out round-robin through the range, so that a port just released
// (perhaps still in TIME_WAIT) is the last to be reused. Pure bookkeeping:
// whether a process outside Shoal holds a port is not known here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace shoal::server {

class PortBook {
 public:
  // Ports first..last (inclusive) are Shoal's to hand out.
  PortBook(int first, int last);

  // `count` consecutive ports free on every node of `nodes`, now held by
  // `job`; nullopt when the range has no such block.
  std::optional<int> Reserve(uint64_t job, const std::vector<std::string>& nodes, int count);
  // Records a block a job already holds (a job that was running when the
  // controller restarted). Overlaps are not checked: it is a fact.
  void Hold(uint64_t job, const std::vector<std::string>& nodes, int first, int count);
  // Frees what `job` holds (nothing when it holds nothing).
  void Release(uint64_t job);

  size_t jobs() const { return by_job_.size(); }

 private:
  struct Held {
    std::vector<std::string> nodes;
    int first = 0;
    int count = 0;
  };
  // The end (exclusive) of the last block on any of `nodes` that overlaps
  // [first, first + count), or 0 when none does.
  int ConflictEnd(const std::vector<std::string>& nodes, int first, int count) const;

  int first_;
  int last_;
  int cursor_;  // where the next search starts
  // node -> block start -> block end (exclusive)
  std::unordered_map<std::string, std::map<int, int>> by_node_;
  std::unordered_map<uint64_t, Held> by_job_;
};

}  // namespace shoal::server
