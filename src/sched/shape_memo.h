// One pass's memory of request shapes: what did not fit, what could not
// preempt, why jobs wait. A deep queue is mostly a few shapes, so a pass
// looks each shape up instead of placing every job.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sched/request.h"

namespace shoal::sched {

// How a memo finds a request's shape: by the driver's JobInfo::shape_class
// when it gave one, else by Request::ShapeHash().
struct ShapeKey {
  uint64_t hash = 0;
  uint32_t shape_class = 0;
};

inline ShapeKey KeyOf(const Request& r) {
  return {r.ShapeHash(), 0};
}

// Results remembered by request shape for one pass. Callers that look one
// request up often work its key out once.
template <typename V>
class ShapeMemo {
 public:
  const V* Find(const Request& r, ShapeKey key) const {
    if (key.shape_class != 0) {
      if (key.shape_class >= by_class_.size() || !by_class_[key.shape_class]) return nullptr;
      return &*by_class_[key.shape_class];
    }
    auto it = map_.find(key.hash);
    if (it == map_.end()) return nullptr;
    for (const auto& [rep, v] : it->second) {
      if (rep.SameShape(r)) return &v;
    }
    return nullptr;
  }
  const V* Find(const Request& r) const { return Find(r, KeyOf(r)); }
  bool HasClass(uint32_t shape_class) const {
    return shape_class < by_class_.size() && by_class_[shape_class].has_value();
  }
  void Put(const Request& r, ShapeKey key, V v) {
    if (key.shape_class == 0) {
      map_[key.hash].emplace_back(r, std::move(v));
      return;
    }
    if (key.shape_class >= by_class_.size()) by_class_.resize(key.shape_class + 1);
    by_class_[key.shape_class] = std::move(v);
  }
  void Put(const Request& r, V v) { Put(r, KeyOf(r), std::move(v)); }
  void Clear() {
    map_.clear();
    by_class_.clear();
  }

 private:
  std::unordered_map<uint64_t, std::vector<std::pair<Request, V>>> map_;
  std::vector<std::optional<V>> by_class_;  // by JobInfo::shape_class
};

}  // namespace shoal::sched
