// A fixed-size bit set over node indices, with fast iteration over set bits.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace shoal::sched {

class NodeBitset {
 public:
  NodeBitset() = default;
  explicit NodeBitset(size_t bits) : words_((bits + 63) / 64, 0), bits_(bits) {}

  size_t size() const { return bits_; }
  void Set(size_t i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  void Clear(size_t i) { words_[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  bool Test(size_t i) const { return words_[i >> 6] >> (i & 63) & 1; }
  const std::vector<uint64_t>& words() const { return words_; }
  std::vector<uint64_t>& words() { return words_; }

  bool None() const {
    for (uint64_t w : words_)
      if (w != 0) return false;
    return true;
  }

  size_t Count() const {
    size_t n = 0;
    for (uint64_t w : words_)
      n += static_cast<size_t>(std::popcount(w));
    return n;
  }

  // Calls f(index) for every bit set in both sets, in increasing order, until f returns false.
  template <typename F>
  static void ForEachAnd(const NodeBitset& a, const NodeBitset& b, F&& f) {
    const size_t n = a.words_.size();
    for (size_t w = 0; w < n; ++w) {
      uint64_t bits = a.words_[w] & b.words_[w];
      while (bits != 0) {
        const size_t i = (w << 6) + static_cast<size_t>(std::countr_zero(bits));
        if (!f(static_cast<uint32_t>(i))) return;
        bits &= bits - 1;
      }
    }
  }

  // Like ForEachAnd, for bits set in a and b but not in c.
  template <typename F>
  static void ForEachAndNot(const NodeBitset& a, const NodeBitset& b, const NodeBitset& c, F&& f) {
    const size_t n = a.words_.size();
    for (size_t w = 0; w < n; ++w) {
      uint64_t bits = a.words_[w] & b.words_[w] & ~c.words_[w];
      while (bits != 0) {
        const size_t i = (w << 6) + static_cast<size_t>(std::countr_zero(bits));
        if (!f(static_cast<uint32_t>(i))) return;
        bits &= bits - 1;
      }
    }
  }

 private:
  std::vector<uint64_t> words_;
  size_t bits_ = 0;
};

}  // namespace shoal::sched
