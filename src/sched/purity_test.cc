// sched/ is a pure function of its input (DESIGN.md boundary 1): no clock,
// threads, I/O, process environment or global randomness. The build already
// refuses other libraries (shoal_check_deps); this test refuses the standard
// library's ways around that.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

TEST(SchedPurityTest, NoClocksThreadsIoOrGlobals) {
  const char* forbidden[] = {
      "<thread>",      "<mutex>",  "<atomic>",  "<future>",  "<fstream>", "<iostream>",
      "<cstdio>",      "<random>", "::now()",   "getenv",    "std::rand", "srand(",
      "time(nullptr)", "printf(",  "std::cout", "std::cerr",
  };
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(SHOAL_SOURCE_DIR) +
                                                                     "/src/sched")) {
    const std::string path = e.path().string();
    if (!e.is_regular_file() || path.ends_with("_test.cc")) continue;
    if (!path.ends_with(".h") && !path.ends_with(".cc")) continue;
    ++files;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    for (const char* f : forbidden) {
      EXPECT_EQ(text.str().find(f), std::string::npos) << path << " uses " << f;
    }
  }
  EXPECT_GT(files, 10);
}

}  // namespace
