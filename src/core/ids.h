// Typed identifiers: a JobId cannot be passed where a NodeId is expected.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace shoal {

template <typename Tag, typename Rep>
class StrongId {
 public:
  using rep = Rep;
  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep value) : value_(value) {}
  constexpr Rep value() const { return value_; }
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
  friend std::string ToString(StrongId id) { return std::to_string(id.value_); }

 private:
  Rep value_ = 0;
};

using JobId = StrongId<struct JobIdTag, uint64_t>;
using NodeId = StrongId<struct NodeIdTag, uint32_t>;

}  // namespace shoal

template <typename Tag, typename Rep>
struct std::hash<shoal::StrongId<Tag, Rep>> {
  size_t operator()(shoal::StrongId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>()(id.value());
  }
};
