// Strategies and reshard prices on hand-checked cases (prices from simple linear cost functions).
#include "xshard/autoshard/strategy.h"

#include <gtest/gtest.h>

#include "xshard/rules/rule_registry.h"
#include "xshard/text/parser.h"

namespace xs::autoshard {
namespace {

// 1 us per collective plus 1 ns per byte received; 1 ns per FLOP; memory free.
CostFunctions Linear() {
  CostFunctions c;
  c.dot = [](DType, double flops) { return flops * 1e-9; };
  c.memory = [](double) { return 0.0; };
  c.collective = [](std::string_view, int64_t, double bytes) { return 1e-6 + bytes * 1e-9; };
  return c;
}

Mesh M(const char* text) { return *Mesh::Parse(text); }

TEST(ReshardSecondsTest, GatherMoveAndSlice) {
  const Mesh mesh = M("x=2,y=2");
  const Shape s(DType::kF32, {8, 8});  // 256 bytes
  double bytes = 0;
  int n = 0;
  // P('x') -> P(): all-gather over 2; each device ends with 256 B and received half of it.
  EXPECT_NEAR(ReshardSeconds(s, {{0}, {}}, {{}, {}}, mesh, Linear(), &bytes, &n), 1e-6 + 128e-9, 1e-15);
  EXPECT_EQ(bytes, 128);
  EXPECT_EQ(n, 1);
  // P('x') -> P(None, 'x'): one all-to-all of the 128 B tile, half of it received.
  EXPECT_NEAR(ReshardSeconds(s, {{0}, {}}, {{}, {0}}, mesh, Linear(), &bytes, &n), 1e-6 + 64e-9, 1e-15);
  EXPECT_EQ(n, 1);
  // Adding axes is a local slice.
  EXPECT_EQ(ReshardSeconds(s, {{}, {}}, {{0}, {1}}, mesh, Linear(), &bytes, &n), 0);
  EXPECT_EQ(n, 0);
  // P('x', 'y') -> P(None, 'y'): the slice-free gather over x of a 64 B tile -> 128 B, 64 received.
  EXPECT_NEAR(ReshardSeconds(s, {{0}, {1}}, {{}, {1}}, mesh, Linear(), &bytes, &n), 1e-6 + 64e-9, 1e-15);
}

TEST(SpecTextTest, AsJaxPrintsIt) {
  const Mesh mesh = M("x=2,y=2");
  EXPECT_EQ(SpecText({{}, {}}, mesh), "P()");
  EXPECT_EQ(SpecText({{0}, {}}, mesh), "P('x')");
  EXPECT_EQ(SpecText({{}, {1, 0}}, mesh), "P(None, ('y', 'x'))");
}

TEST(EnumerateStrategiesTest, DotOnOneAxis) {
  auto m = ParseHloModule(R"(
HloModule m
ENTRY e {
  a = f32[4,8] parameter(0)
  b = f32[8,6] parameter(1)
  ROOT d = f32[4,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Instruction* dot = (*m)->entry()->root();
  auto rule = GetRule(*dot);
  ASSERT_TRUE(rule.ok());
  const std::vector<Strategy> s = EnumerateStrategies(*dot, *rule, M("x=2"), Linear());
  // Replicated, then x on m, on k (partial sums), on n: 4 ways.
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].result, (DimAxes{{}, {}}));
  EXPECT_NEAR(s[0].seconds, 2 * 4 * 6 * 8 * 1e-9, 1e-15);
  int reduction = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].operands[0] == DimAxes{{}, {0}}) reduction = static_cast<int>(i);
  }
  ASSERT_GE(reduction, 0);
  const Strategy& k = s[reduction];
  EXPECT_EQ(k.result, (DimAxes{{}, {}}));
  EXPECT_EQ(k.operands[1], (DimAxes{{0}, {}}));
  // Half the FLOPs, plus an all-reduce of the 96 B result over 2 (ring: 96 B received).
  EXPECT_NEAR(k.comm_seconds, 1e-6 + 96e-9, 1e-15);
  EXPECT_NEAR(k.seconds, 4 * 6 * 8 * 1e-9 + 1e-6 + 96e-9, 1e-15);
  EXPECT_EQ(k.result_bytes, 96);
}

TEST(EnumerateStrategiesTest, BatchedDotIsPricedPerBatchElement) {
  auto m = ParseHloModule(R"(
HloModule m
ENTRY e {
  a = f32[4,8,16] parameter(0)
  b = f32[4,16,8] parameter(1)
  ROOT d = f32[4,8,8] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Instruction* dot = (*m)->entry()->root();
  auto rule = GetRule(*dot);
  ASSERT_TRUE(rule.ok());
  CostFunctions c = Linear();
  c.dot = [](DType, double flops) { return 1e-6 + flops * 1e-9; };  // a fixed cost per GEMM call
  const std::vector<Strategy> s = EnumerateStrategies(*dot, *rule, M("x=2"), c);
  const double per_element = 2.0 * 8 * 8 * 16;  // FLOPs of one batch element
  for (const Strategy& st : s) {
    if (st.result == DimAxes{{0}, {}, {}}) {  // batch split: 2 GEMMs per device
      EXPECT_NEAR(st.seconds, 2 * (1e-6 + per_element * 1e-9), 1e-15);
    } else if (st.result == DimAxes{{}, {0}, {}}) {  // rows split: 4 half-size GEMMs
      EXPECT_NEAR(st.seconds, 4 * (1e-6 + per_element / 2 * 1e-9), 1e-15);
    }
  }
}

TEST(EnumerateStrategiesTest, UnevenFactorsAreNotSplit) {
  auto m = ParseHloModule(R"(
HloModule m
ENTRY e {
  ROOT a = f32[3,4] parameter(0)
})");
  ASSERT_TRUE(m.ok());
  const Instruction* p = (*m)->entry()->root();
  auto rule = GetRule(*p);
  ASSERT_TRUE(rule.ok());
  const std::vector<Strategy> s = EnumerateStrategies(*p, *rule, M("x=2"), Linear());
  ASSERT_EQ(s.size(), 2u);  // replicated, dim 1 on x (3 does not divide by 2)
  EXPECT_EQ(s[1].result, (DimAxes{{}, {0}}));
  EXPECT_EQ(FindUniformStrategy(s, DimAxes{{}, {0}}), 1);
  EXPECT_EQ(FindUniformStrategy(s, DimAxes{{0}, {}}), -1);
}

}  // namespace
}  // namespace xs::autoshard
