// Shared<T>: a value that copies share and nobody changes in place; giving it
// a new value replaces it for that copy alone. For the large parts of a job
// spec (its script, its environment) that every task of an array holds: one
// copy per task made an array of 100,000 tasks hold 100,000 environments.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>

namespace shoal {

template <typename T>
class Shared {
 public:
  Shared() : value_(Empty()) {}
  Shared(T value)
      : value_(std::make_shared<const T>(std::move(value))) {}  // NOLINT: a T is a Shared
  Shared& operator=(T value) {
    value_ = std::make_shared<const T>(std::move(value));
    return *this;
  }
  Shared& operator=(std::initializer_list<typename T::value_type> items) {
    return *this = T(items);
  }

  const T& get() const { return *value_; }
  operator const T&() const { return *value_; }  // NOLINT: reads as the T it holds
  const T* operator->() const { return value_.get(); }

  bool empty() const { return value_->empty(); }
  size_t size() const { return value_->size(); }
  auto begin() const { return value_->begin(); }
  auto end() const { return value_->end(); }

  // Whether the two hold the very same value (not merely equal ones).
  bool SharesWith(const Shared& other) const { return value_ == other.value_; }

  friend bool operator==(const Shared& a, const Shared& b) {
    return a.value_ == b.value_ || *a.value_ == *b.value_;
  }
  friend bool operator==(const Shared& a, const T& b) { return *a.value_ == b; }

 private:
  static const std::shared_ptr<const T>& Empty() {
    static const std::shared_ptr<const T> empty = std::make_shared<const T>();
    return empty;
  }

  std::shared_ptr<const T> value_;
};

}  // namespace shoal
