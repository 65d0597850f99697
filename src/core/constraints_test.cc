#include "core/constraints.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

// The stored forms of Slurm's node counts, and every way one can be wrong.
TEST(ConstraintCountsTest, ReadsTheStoredFormsByTable) {
  struct Case {
    std::vector<std::string> constraints;
    std::string want;  // "label*count,..." with [ ] when all_nodes; "none"; or part of the error
    bool ok;
  } cases[] = {
      {{"ib", "a|b", "[a|b]"}, "none", true},
      {{"a*2"}, "a*2", true},
      {{"[rack1*2&rack2*4]"}, "[rack1*2,rack2*4]", true},
      {{"[a*2,b*4]"}, "[a*2,b*4]", true},
      {{"[a*1]"}, "[a*1]", true},
      {{"ib", "[a*2&b*4]"}, "stand alone", false},
      {{"a*2&b*4"}, "go in brackets", false},
      {{"[a*2&b]"}, "'b' has no count", false},
      {{"[a|b*2]"}, "'a|b*2' is not a label with a count", false},
      {{"a*0"}, "the count of 'a' must be a whole number, 1 to 100000", false},
      {{"a*-1"}, "the count of 'a'", false},
      {{"[a*2&a*1]"}, "label 'a' is counted twice", false},
      {{"[a*60000&b*60000]"}, "more than 100000 nodes", false},
  };
  for (const Case& c : cases) {
    auto r = ParseConstraintCounts(c.constraints);
    ASSERT_EQ(r.ok(), c.ok) << c.want << ": " << r.status().ToString();
    if (!c.ok) {
      EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
      continue;
    }
    std::string got = "none";
    if (r->has_value()) {
      got.clear();
      for (const ConstraintCounts::Term& t : (*r)->terms)
        got += (got.empty() ? "" : ",") + t.label + "*" + std::to_string(t.count);
      if ((*r)->all_nodes) got = "[" + got + "]";
    }
    EXPECT_EQ(got, c.want);
  }
  auto six = ParseConstraintCounts({"[a*2&b*4]"});
  ASSERT_TRUE(six.ok() && six->has_value());
  EXPECT_EQ((*six)->Sum(), 6);
}

}  // namespace
}  // namespace shoal
