// Reducers of (value, index) pairs: the regions jnp.argmax / argmin lower to (JAX 0.10.2's text)
// are recognized as kernels::ArgSelect, near misses are not, and both run to JAX's answers.
#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "xshard/exec/exec_test_util.h"
#include "xshard/exec/executable_plan.h"

namespace xs {
namespace {

// jnp.argmax(x, axis=1) on f32[3,4] as JAX 0.10.2 lowers it; `region` replaces the reducer.
constexpr std::string_view kArgmaxRegion = R"(region_0.1 {
  reduce.4 = f32[] parameter(0)
  reduce.6 = f32[] parameter(2)
  gt.1 = pred[] compare(reduce.4, reduce.6), direction=GT
  ne.1 = pred[] compare(reduce.4, reduce.4), direction=NE
  or.2 = pred[] or(gt.1, ne.1)
  select_n.2 = f32[] select(or.2, reduce.4, reduce.6)
  eq.1 = pred[] compare(reduce.4, reduce.6), direction=EQ
  reduce.5 = s32[] parameter(1)
  reduce.7 = s32[] parameter(3)
  lt.1 = pred[] compare(reduce.5, reduce.7), direction=LT
  and.1 = pred[] and(eq.1, lt.1)
  or.3 = pred[] or(or.2, and.1)
  select_n.3 = s32[] select(or.3, reduce.5, reduce.7)
  ROOT tuple.1 = (f32[], s32[]) tuple(select_n.2, select_n.3)
})";

std::string ArgmaxModule(std::string_view region, std::string_view init = "-inf") {
  return std::string("HloModule jit_argmax\n\n") + std::string(region) + R"(

ENTRY main {
  x = f32[3,4]{1,0} parameter(0)
  iota.2 = s32[4]{0} iota(), iota_dimension=0
  iota.3 = s32[3,4]{1,0} broadcast(iota.2), dimensions={1}
  constant.3 = f32[] constant()" + std::string(init) + R"()
  constant.2 = s32[] constant(0)
  reduce.11 = (f32[3]{0}, s32[3]{0}) reduce(x, iota.3, constant.3, constant.2), dimensions={1}, to_apply=region_0.1
  ROOT reduce.13 = s32[3]{0} get-tuple-element(reduce.11), index=1
})";
}

// jnp.argmin(x, axis=0) on s32[4,5] (no NaN test for integers).
constexpr std::string_view kIntArgminModule = R"(HloModule jit_argmin

region_0.1 {
  reduce.4 = s32[] parameter(0)
  reduce.6 = s32[] parameter(2)
  lt.2 = pred[] compare(reduce.4, reduce.6), direction=LT
  select_n.2 = s32[] select(lt.2, reduce.4, reduce.6)
  eq.1 = pred[] compare(reduce.4, reduce.6), direction=EQ
  reduce.5 = s32[] parameter(1)
  reduce.7 = s32[] parameter(3)
  lt.3 = pred[] compare(reduce.5, reduce.7), direction=LT
  and.1 = pred[] and(eq.1, lt.3)
  or.1 = pred[] or(lt.2, and.1)
  select_n.3 = s32[] select(or.1, reduce.5, reduce.7)
  ROOT tuple.1 = (s32[], s32[]) tuple(select_n.2, select_n.3)
}

ENTRY main {
  x = s32[4,5]{1,0} parameter(0)
  iota.3 = s32[4,5]{1,0} iota(), iota_dimension=0
  constant.3 = s32[] constant(2147483647)
  constant.2 = s32[] constant(0)
  reduce.11 = (s32[5]{0}, s32[5]{0}) reduce(x, iota.3, constant.3, constant.2), dimensions={0}, to_apply=region_0.1
  ROOT reduce.13 = s32[5]{0} get-tuple-element(reduce.11), index=1
})";

std::optional<kernels::ArgSelect> Classify(const std::string& text) {
  auto m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return std::nullopt;
  return ClassifyArgSelect(*(*m)->GetComputation("region_0.1"));
}

std::string Replace(std::string_view text, std::string_view from, std::string_view to) {
  std::string s(text);
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

Array RowsWithNaNsTiesAndZeros() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return Array::FromVector<float>({3, 4}, {1, nan, 3, nan, 2, 5, 5, 1, -0.0f, 0.0f, -1, 0.0f});
}

TEST(ArgSelectRegions, JaxArgmaxAndArgminAreRecognized) {
  auto s = Classify(ArgmaxModule(kArgmaxRegion));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->direction, ComparisonDirection::kGt);
  EXPECT_TRUE(s->nan_first);
  EXPECT_TRUE(s->tie_lower_index);
  s = Classify(std::string(kIntArgminModule));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->direction, ComparisonDirection::kLt);
  EXPECT_FALSE(s->nan_first);
  EXPECT_TRUE(s->tie_lower_index);
  // Operands written the other way round are the same reducer.
  s = Classify(ArgmaxModule(Replace(Replace(kArgmaxRegion, "compare(reduce.4, reduce.6), direction=GT",
                                            "compare(reduce.6, reduce.4), direction=LT"),
                                    "and(eq.1, lt.1)", "and(lt.1, eq.1)")));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->direction, ComparisonDirection::kGt);
}

TEST(ArgSelectRegions, NearMissesAreLeftToTheGenericPath) {
  const std::string near_misses[] = {
      // The value select's branches swapped: keeps the smaller value.
      Replace(kArgmaxRegion, "select(or.2, reduce.4, reduce.6)", "select(or.2, reduce.6, reduce.4)"),
      // A total-order compare is not the default float compare.
      Replace(kArgmaxRegion, "direction=GT", "direction=GT, type=TOTALORDER"),
      // Ties to the higher index.
      Replace(kArgmaxRegion, "compare(reduce.5, reduce.7), direction=LT", "compare(reduce.5, reduce.7), direction=GT"),
      // The tie test on <= instead of ==.
      Replace(kArgmaxRegion, "compare(reduce.4, reduce.6), direction=EQ", "compare(reduce.4, reduce.6), direction=LE"),
      // The NaN test on the new value.
      Replace(kArgmaxRegion, "compare(reduce.4, reduce.4), direction=NE", "compare(reduce.6, reduce.6), direction=NE"),
      // and -> or in the tie.
      Replace(kArgmaxRegion, "and(eq.1, lt.1)", "or(eq.1, lt.1)"),
  };
  for (const std::string& region : near_misses) {
    EXPECT_FALSE(Classify(ArgmaxModule(region)).has_value()) << region;
  }
}

TEST(ArgSelectRegions, RecognizedAndGenericRegionsGiveJaxsIndices) {
  // jnp.argmax(x, 1) in JAX 0.10.2: [1, 1, 0] (the first NaN wins; -0 and 0 tie).
  auto r = testing::RunText(ArgmaxModule(kArgmaxRegion), {RowsWithNaNsTiesAndZeros()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(testing::Doubles((*r)[0]), (std::vector<double>{1, 1, 0}));
  // Ties to the higher index (generic path): [1, 2, 3].
  r = testing::RunText(ArgmaxModule(Replace(kArgmaxRegion, "compare(reduce.5, reduce.7), direction=LT",
                                            "compare(reduce.5, reduce.7), direction=GT")),
                       {RowsWithNaNsTiesAndZeros()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(testing::Doubles((*r)[0]), (std::vector<double>{1, 2, 3}));
  // jnp.argmin(x, 0) on s32[4,5]: the first row holding each column's minimum.
  r = testing::RunText(std::string(kIntArgminModule),
                       {Array::FromVector<int32_t>({4, 5}, {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 1, 3, 0, 5})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(testing::Doubles((*r)[0]), (std::vector<double>{0, 0, 3, 3, 1}));
}

}  // namespace
}  // namespace xs
