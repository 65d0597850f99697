// Assertions that stay on in release builds: a failed check is a bug, and a
// scheduler that goes on after one could hand a GPU out twice (STYLE habit 7).
//
// SHOAL_CHECK(cond, msg) costs one predicted branch when `cond` holds; `msg`
// (a const char*) is evaluated only when it fails. The failure path lives out
// of line in a cold function so that checks in hot accessors such as
// Result<T>::value() stay small enough to inline.
#pragma once

namespace shoal::check_internal {

// Prints "file:line: check failed: condition: message" to stderr and aborts.
[[noreturn, gnu::cold, gnu::noinline]] void CheckFailed(const char* file, int line,
                                                        const char* condition,
                                                        const char* message) noexcept;

}  // namespace shoal::check_internal

#define SHOAL_CHECK(cond, msg)                                                \
  do {                                                                        \
    if (!(cond)) [[unlikely]] {                                               \
      ::shoal::check_internal::CheckFailed(__FILE__, __LINE__, #cond, (msg)); \
    }                                                                         \
  } while (0)

// SHOAL_DCHECK(cond, msg): SHOAL_CHECK in debug builds (the sanitizer
// builds run the tests so), nothing in release builds, for checks that cost
// what a hot path cannot pay, such as looking up again what it avoided
// looking up. `cond` is still compiled, so that it stays correct.
#ifdef NDEBUG
#define SHOAL_DCHECK(cond, msg) \
  do {                          \
    if (false && (cond)) {      \
      static_cast<void>(msg);   \
    }                           \
  } while (0)
#else
#define SHOAL_DCHECK(cond, msg) SHOAL_CHECK(cond, msg)
#endif
