// The Gittins index of a job's attained service against the distribution of
// service that past jobs needed (Gittins; used for GPU clusters by Tiresias,
// Gu et al., NSDI 2019): the best ratio, over a further quantum D, of the
// chance to finish within D to the service it would cost.
//
//   G(a) = max over D > 0 of  P(S <= a + D | S > a) / E[min(S, a + D) - a | S > a]
//
// Serving the highest index first minimises mean completion time when only the
// distribution, not each job's size, is known. Computed once per pass on a
// log-spaced grid of attained service and looked up for each job.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace shoal::sched {

// The sort's value of a Gittins index: -log2 of it, so that a whole unit is
// a factor of two (within [-63, 63]); 64, after everything, past all history.
double GittinsValue(double index);

class GittinsTable {
 public:
  // `sorted` is ascending; fewer than kMinHistory samples give an empty table.
  explicit GittinsTable(const std::vector<double>& sorted);

  static constexpr size_t kMinHistory = 32;

  bool empty() const { return grid_.empty(); }
  // The index at attained service `a` (GPU-seconds); 0 past every sample.
  double Index(double attained) const;
  // The attained service at which a job's class (the integer part of
  // GittinsValue, constant between the table's points) next becomes one
  // above `above`; while it is above `above` already, at its next change of
  // class. Infinity if it never does. O(log points).
  double NextClassChange(double attained, double above) const;

  // The exact index from the samples (for tests and the table itself).
  static double Compute(const std::vector<double>& sorted, const std::vector<double>& prefix,
                        double a);

 private:
  size_t PointAt(double attained) const;  // the point whose index holds at `attained`

  std::vector<double> grid_;     // attained-service points
  std::vector<double> index_;    // the index at each point
  std::vector<int> class_;       // floor(GittinsValue(index)) at each point
  std::vector<size_t> run_end_;  // the first later point of another class (or the end)
  // The classes that occur, ascending, and for each the first point at or
  // after each point whose class is at least it (or the end).
  std::vector<int> classes_;
  std::vector<std::vector<size_t>> next_at_least_;
};

// The service (GPU-seconds) of the last kWindow jobs that completed, and
// their Gittins table, rebuilt every kRebuildEvery completions (only past
// jobs: no lookahead). The simulator and the controller keep one each for a
// policy whose sort uses the history (SortPlugin::UsesServiceHistory).
class ServiceHistory {
 public:
  static constexpr size_t kWindow = 2000;
  static constexpr size_t kRebuildEvery = 50;

  void Record(double gpu_s);
  // Builds the table from what is recorded now (after recording many at once).
  void Rebuild();
  // Null until the first completion; empty below GittinsTable::kMinHistory.
  const std::shared_ptr<const GittinsTable>& table() const { return table_; }
  size_t size() const { return service_.size(); }

 private:
  std::vector<double> service_;  // a ring of the last kWindow
  size_t next_ = 0;
  size_t since_rebuild_ = 0;
  std::shared_ptr<const GittinsTable> table_;
};

}  // namespace shoal::sched
