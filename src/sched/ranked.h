// A pending job's place in a pass's order, and sorting a queue that is
// mostly in order already.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/job.h"
#include "core/time.h"
#include "sched/plugin.h"
#include "sched/request.h"

namespace shoal::sched {

// A pending job's place in the order (kept small: a deep queue is sorted).
struct Ranked {
  JobRank rank;
  Time submit;
  JobId id;
  uint32_t index;            // into Snapshot::pending
  uint32_t shape_class = 0;  // as the pass places it (0: none); read by OrderTails
};

// Partition tier (higher first), sort value (lower first), submit time, job id.
bool RankedBefore(const Ranked& a, const Ranked& b);

// Sorts the order, which is often sorted already in a few long runs (the
// previous pass's order with newcomers behind it): few runs are merged,
// many are sorted.
void SortRanked(std::vector<Ranked>& order);

// Where in a sorted order the last jobs of a kind lie (places are indices
// into the order; -1: none), for a pass that ends once no job left could
// start. Each answer is worked out on first use, so a pass that never asks
// does not read the queue again.
class OrderTails {
 public:
  // The request a job is placed with, by index into Snapshot::pending, and
  // the shape class (0: none) of the job at a place of the order. Only
  // Ranked::index of the order is read.
  using RequestOf = std::function<const Request&(uint32_t)>;
  using ClassOf = std::function<uint32_t(size_t)>;
  // The order and what the functions read must outlive this.
  OrderTails(const std::vector<Ranked>& order, RequestOf request_of, ClassOf class_of,
             size_t partitions);

  ptrdiff_t LastInPartition(int partition);
  // The last job that needs no GPU, or a share of one.
  ptrdiff_t LastNotWholeGpus();
  ptrdiff_t LastClassless();  // the last job without a shape class

  struct ClassTail {
    uint32_t shape_class;
    ptrdiff_t last;
  };
  // Every shape class in the order with its last place, latest first.
  const std::vector<ClassTail>& Classes();
  // The index in Classes() of a shape class of the order.
  size_t ClassIndex(uint32_t shape_class) {
    if (!classes_) FindClasses();
    return index_of_class_[shape_class];
  }
  // The shape class of the job at `place` (0: none).
  uint32_t ClassAt(size_t place) {
    if (!classes_) FindClasses();
    return class_at_[place];
  }
  // The shortest time limit among the jobs of Classes()[k] from place `from` on.
  Duration ShortestLimitFrom(size_t k, ptrdiff_t from);

 private:
  void FindKinds();
  void FindClasses();

  const std::vector<Ranked>& order_;
  RequestOf request_of_;
  ClassOf class_of_;
  std::optional<std::vector<ptrdiff_t>> last_in_partition_;  // with last_not_whole_
  ptrdiff_t last_not_whole_ = -1;
  size_t partitions_;
  std::optional<std::vector<ClassTail>> classes_;  // with index_of_class_, last_classless_
  std::vector<size_t> index_of_class_;             // by shape class: its index in classes_
  std::vector<uint32_t> class_at_;                 // by place: the job's shape class
  ptrdiff_t last_classless_ = -1;
  // By index in classes_: the class's places, latest first, each with the
  // shortest time limit from there on.
  std::vector<std::vector<std::pair<ptrdiff_t, Duration>>> limits_;
};

}  // namespace shoal::sched
