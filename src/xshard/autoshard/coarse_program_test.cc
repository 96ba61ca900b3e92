// SolveCoarse: optimum known by hand where a greedy choice is wrong; memory rows.
#include "xshard/autoshard/coarse_program.h"

#include <gtest/gtest.h>

namespace xs::autoshard {
namespace {

// Each class alone prefers choice 0, but the edge makes (0, 0) dear: the optimum is (0, 1) or
// (1, 0) at 1.
CoarseProgram Trap() {
  CoarseProgram p;
  p.cost = {{0, 1}, {0, 1}, {0, 0, 5}};
  p.edges.push_back({0, 1, {{10, 0}, {0, 0}}});
  p.edges.push_back({1, 2, {{0, 0, 0}, {0, 3, 0}}});  // (1 -> choice 1) pairs badly with class 2's 1
  return p;
}

TEST(SolveCoarseTest, ExactOptimum) {
  auto sol = SolveCoarse(Trap(), 10, 1000);
  ASSERT_TRUE(sol.ok()) << sol.status().ToString();
  EXPECT_EQ(sol->method, "ILP (CBC)");
  EXPECT_TRUE(sol->optimal);
  EXPECT_DOUBLE_EQ(sol->objective, 1);
  EXPECT_DOUBLE_EQ(Evaluate(Trap(), sol->choice), 1);
}

TEST(SolveCoarseTest, LocalSearchWhenTooBig) {
  auto sol = SolveCoarse(Trap(), 10, 0);
  ASSERT_TRUE(sol.ok());
  EXPECT_EQ(sol->method, "local search");
  EXPECT_FALSE(sol->optimal);
  ASSERT_EQ(sol->notes.size(), 1u);
  EXPECT_DOUBLE_EQ(sol->objective, Evaluate(Trap(), sol->choice));
}

TEST(SolveCoarseTest, MemoryRowForcesTheDearChoice) {
  CoarseProgram p;
  p.cost = {{0, 5}, {0, 1}};
  CoarseProgram::MemoryRow row;
  row.bytes[0] = {100, 10};  // choice 0 holds 100 bytes, choice 1 holds 10
  row.bytes[1] = {60, 60};
  row.budget = 100;
  p.memory.push_back(row);
  auto sol = SolveCoarse(p, 10, 1000);
  ASSERT_TRUE(sol.ok());
  EXPECT_EQ(sol->choice[0], 1);
  EXPECT_EQ(sol->choice[1], 0);
  EXPECT_DOUBLE_EQ(sol->objective, 5);
  p.memory[0].budget = 50;  // even the smallest holds 70
  auto none = SolveCoarse(p, 10, 1000);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace xs::autoshard
