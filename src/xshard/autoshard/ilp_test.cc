// Ilp: small programs whose optimum is known by hand.
#include "xshard/autoshard/ilp.h"

#include <gtest/gtest.h>

namespace xs::autoshard {
namespace {

TEST(IlpTest, PicksCheapestOfOneChoice) {
  Ilp ilp;
  const int a = ilp.AddVariable(5, true), b = ilp.AddVariable(3, true), c = ilp.AddVariable(4, true);
  ilp.AddRow({{a, 1}, {b, 1}, {c, 1}}, 1, 1);
  auto sol = ilp.Solve(10);
  ASSERT_TRUE(sol.ok()) << sol.status().ToString();
  EXPECT_TRUE(sol->optimal);
  EXPECT_NEAR(sol->x[b], 1, 1e-6);
  EXPECT_NEAR(sol->x[a] + sol->x[c], 0, 1e-6);
  EXPECT_NEAR(sol->objective, 3, 1e-9);
}

TEST(IlpTest, KnapsackNeedsIntegrality) {
  // max 6a + 5b + 4c s.t. 5a + 4b + 3c <= 7 (the LP relaxation takes fractions; the optimum is
  // b + c = 9).
  Ilp ilp;
  const int a = ilp.AddVariable(-6, true), b = ilp.AddVariable(-5, true), c = ilp.AddVariable(-4, true);
  ilp.AddRow({{a, 5}, {b, 4}, {c, 3}}, -1e30, 7);
  auto sol = ilp.Solve(10);
  ASSERT_TRUE(sol.ok());
  EXPECT_NEAR(sol->objective, -9, 1e-9);
  EXPECT_NEAR(sol->x[a], 0, 1e-6);
}

TEST(IlpTest, InfeasibleIsAnError) {
  Ilp ilp;
  const int a = ilp.AddVariable(1, true);
  ilp.AddRow({{a, 1}}, 2, 3);
  auto sol = ilp.Solve(10);
  ASSERT_FALSE(sol.ok());
  EXPECT_NE(sol.status().message().find("infeasible"), std::string::npos);
}

}  // namespace
}  // namespace xs::autoshard
