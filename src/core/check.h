// Assertions that stay on in release builds: a failed check is a bug, and a
// scheduler that goes on after one could hand a GPU out twice (STYLE habit 7).
#pragma once

#include <cstdio>
#include <cstdlib>

#define SHOAL_CHECK(cond, msg)                                                        \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: check failed: %s: %s\n", __FILE__, __LINE__, #cond, \
                   (msg));                                                           \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)
