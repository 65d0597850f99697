// Status and Result<T>: expected failures as values (STYLE habit 7).
//
// A Status is either OK or a code with a message written for the person who
// will read it. Result<T> holds a T or a non-OK Status. Neither throws; a
// caller that reads the value of a failed Result is a bug in the caller, and
// it aborts with the Status in every build type (SHOAL_CHECK, core/check.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/check.h"

namespace shoal {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // malformed input; HTTP 400
  kNotFound,            // HTTP 404
  kAlreadyExists,       // HTTP 409
  kFailedPrecondition,  // valid request, wrong state (e.g. cancel a finished job); HTTP 409
  kUnsatisfiable,       // a request no node could ever satisfy; HTTP 400
  kPermissionDenied,    // HTTP 403
  kUnauthenticated,     // HTTP 401
  kResourceExhausted,   // a limit was hit (queue full, body too large); HTTP 413/503
  kUnavailable,         // try again later; HTTP 503
  kInternal,            // a bug or an I/O failure; HTTP 500
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid_argument: message", or "ok".
  std::string ToString() const;

  // Returns a copy whose message is "context: message".
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status NotFound(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status FailedPrecondition(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message));
}
inline Status Unsatisfiable(std::string message) {
  return Status(StatusCode::kUnsatisfiable, std::move(message));
}
inline Status Internal(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}
inline Status Unavailable(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    SHOAL_CHECK(!status_.ok(), "a Result built from a Status must carry an error");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // Reading the value of a failed Result aborts with its Status: a bug, not an
  // expected failure, so it stays on in release builds.
  const T& value() const& {
    CheckOk();
    return *value_;
  }
  T& value() & {
    CheckOk();
    return *value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  // The message is built only on the failure path.
  void CheckOk() const {
    SHOAL_CHECK(ok(), ("value() of a failed Result: " + status_.ToString()).c_str());
  }

  std::optional<T> value_;
  Status status_;
};

}  // namespace shoal

// Returns early from the enclosing function when `expr` is not OK.
#define SHOAL_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::shoal::Status shoal_status_ = (expr);        \
    if (!shoal_status_.ok()) return shoal_status_; \
  } while (0)

#define SHOAL_CONCAT_INNER_(a, b) a##b
#define SHOAL_CONCAT_(a, b) SHOAL_CONCAT_INNER_(a, b)

// Declares `lhs` from a Result, or returns its Status from the enclosing function.
#define SHOAL_ASSIGN_OR_RETURN(lhs, expr) \
  SHOAL_ASSIGN_OR_RETURN_IMPL_(SHOAL_CONCAT_(shoal_result_, __LINE__), lhs, expr)
#define SHOAL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
