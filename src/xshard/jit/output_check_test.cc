// CompareOutputs: allclose bounds per dtype, exact integers, NaN handling, error messages, and the
// scale term's growth with the program's longest sum.
#include "xshard/jit/output_check.h"

#include <cmath>
#include <memory>

#include <gtest/gtest.h>

#include "xshard/text/parser.h"

namespace xs {
namespace {

TEST(OutputCheckTest, FloatsWithinTheDefaultBoundPass) {
  Array want = Array::FromVector<float>({3}, {1.0f, 100.0f, 0.0f});
  Array got = Array::FromVector<float>({3}, {1.00005f, 100.009f, 0.00005f});
  StatusOr<std::vector<OutputDiff>> d = CompareOutputs({got}, {want});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE((*d)[0].ok());
  EXPECT_NEAR((*d)[0].max_abs_error, 0.009, 1e-5);
  EXPECT_NEAR((*d)[0].max_rel_error, 9e-5, 1e-6);
}

TEST(OutputCheckTest, IntegersMustMatchExactlyAndTheFirstMismatchIsNamed) {
  Array want = Array::FromVector<int32_t>({2, 2}, {1, 2, 3, 4});
  Array got = Array::FromVector<int32_t>({2, 2}, {1, 2, 5, 6});
  StatusOr<std::vector<OutputDiff>> d = CompareOutputs({got}, {want});
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE((*d)[0].ok());
  EXPECT_EQ((*d)[0].mismatches, 2);
  EXPECT_EQ((*d)[0].first_mismatch, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ((*d)[0].ToString({2, 2}, DType::kS32),
            "out0 s32[2,2]: max abs error 2, max rel error 0.667 (atol 0, rtol 0): 2 of 4 elements "
            "differ, first at [1,0]: got 5, want 3");
}

TEST(OutputCheckTest, NaNMatchesNaNButNotANumber) {
  const float nan = std::nanf("");
  StatusOr<std::vector<OutputDiff>> same =
      CompareOutputs({Array::FromVector<float>({2}, {nan, 1})}, {Array::FromVector<float>({2}, {nan, 1})});
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE((*same)[0].ok());
  StatusOr<std::vector<OutputDiff>> differ =
      CompareOutputs({Array::FromVector<float>({2}, {0, 1})}, {Array::FromVector<float>({2}, {nan, 1})});
  ASSERT_TRUE(differ.ok());
  EXPECT_EQ((*differ)[0].mismatches, 1);
}

TEST(OutputCheckTest, ExplicitToleranceOverridesTheDefault) {
  Array want = Array::FromVector<float>({1}, {1.0f});
  Array got = Array::FromVector<float>({1}, {1.5f});
  StatusOr<std::vector<OutputDiff>> strict = CompareOutputs({got}, {want});
  ASSERT_TRUE(strict.ok());
  EXPECT_FALSE((*strict)[0].ok());
  StatusOr<std::vector<OutputDiff>> loose = CompareOutputs({got}, {want}, Tolerance{0.6, 0});
  ASSERT_TRUE(loose.ok());
  EXPECT_TRUE((*loose)[0].ok());
}

// A bf16 dot whose contracting dim is split over devices: the element 32 carries an ulp of 32
// (0.25) from its partial sums, and the element -0.125 that came out small by cancellation carries
// the same absolute error; 0.25 is within 2^-5 x 32 = 1 of the scale term but far beyond
// atol 0.05 + rtol 0.05 x 0.125.
TEST(OutputCheckTest, SmallElementsMayCarryTheRoundingErrorOfTheOutputsScale) {
  Array want = Array::FromVector<float>({2}, {32.0f, -0.125f}).Convert(DType::kBF16);
  Array got = Array::FromVector<float>({2}, {32.25f, 0.125f}).Convert(DType::kBF16);
  StatusOr<std::vector<OutputDiff>> d = CompareOutputs({got}, {want});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE((*d)[0].ok());
  EXPECT_EQ((*d)[0].within_scale, 1);
  EXPECT_EQ((*d)[0].largest, 32.0);
  EXPECT_EQ((*d)[0].ToString({2}, DType::kBF16),
            "out0 bf16[2]: max abs error 0.25, max rel error 2 (atol 0.05, rtol 0.05; 1 element within "
            "0.0312 x largest |want| 32): ok");
  // An error of 1.5 on that element is beyond every term: a wrong result still fails.
  Array wrong = Array::FromVector<float>({2}, {32.0f, 1.375f}).Convert(DType::kBF16);
  StatusOr<std::vector<OutputDiff>> w = CompareOutputs({wrong}, {want});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)[0].mismatches, 1);
  // Explicit tolerances have no scale term unless they give one.
  StatusOr<std::vector<OutputDiff>> strict = CompareOutputs({got}, {want}, Tolerance{0.05, 0.05});
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ((*strict)[0].mismatches, 1);
}

// XLA's ConvolutionLhsTiledRhsTiledWhenV2ShardingGeneratesReplicaGroupV2: each of 16,384 f32
// outputs sums 401,408 products, the largest |output| is 889, and the partitioned run's 8 partial
// sums put one small element 0.0017 away from the one-device run. The scale term grows with
// sqrt(K) / 8 (K = 401,408: x79.2), so that element passes; a wrong value (0.5 off) still fails.
TEST(OutputCheckTest, TheScaleTermGrowsWithTheLengthOfTheSums) {
  Array want = Array::FromVector<float>({3}, {889.0f, -0.37f, 12.5f});
  Array got = Array::FromVector<float>({3}, {889.0f, -0.3683f, 12.5f});
  StatusOr<OutputDiff> short_sums = CompareOutput(got, want);
  ASSERT_TRUE(short_sums.ok());
  EXPECT_EQ(short_sums->mismatches, 1);  // 0.0017 > 1e-4 + 1e-4 x 0.37 + 2^-21 x 889
  StatusOr<OutputDiff> long_sums = CompareOutput(got, want, 0, std::nullopt, 401408);
  ASSERT_TRUE(long_sums.ok());
  EXPECT_TRUE(long_sums->ok());
  EXPECT_EQ(long_sums->within_scale, 1);
  EXPECT_NEAR(long_sums->scale_growth, std::sqrt(401408.0) / 8, 1e-9);
  Array wrong = Array::FromVector<float>({3}, {889.0f, 0.13f, 12.5f});
  EXPECT_EQ(CompareOutput(wrong, want, 0, std::nullopt, 401408)->mismatches, 1);
  // Up to 64 terms the term is the plain 4 ulps of the largest value.
  EXPECT_EQ(CompareOutput(got, want, 0, std::nullopt, 64)->scale_growth, 1.0);
}

TEST(OutputCheckTest, LongestSumFindsTheLongestReduction) {
  auto longest = [](std::string_view text) {
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? LongestSum(**m) : -1;
  };
  EXPECT_EQ(longest(R"(
HloModule conv
ENTRY entry {
  lhs = f32[128,56,56,64] parameter(0)
  rhs = f32[128,56,56,256] parameter(1)
  ROOT conv = f32[1,1,64,256] convolution(lhs, rhs), window={size=56x56}, dim_labels=f01b_i01o->01bf
})"), 128 * 56 * 56);
  EXPECT_EQ(longest(R"(
HloModule dot_and_reduce
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  a = f32[8,16] parameter(0)
  b = f32[16,4] parameter(1)
  d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(d, zero), dimensions={0,1}, to_apply=add
})"), 32);
  EXPECT_EQ(longest("HloModule n\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] negate(x)\n}\n"), 1);
}

TEST(OutputCheckTest, ShapeAndCountMismatchesAreErrors) {
  StatusOr<std::vector<OutputDiff>> count = CompareOutputs({}, {Array::FromVector<float>({1}, {1})});
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.status().message(), "got 0 outputs but the reference has 1");
  StatusOr<std::vector<OutputDiff>> shape =
      CompareOutputs({Array::FromVector<float>({2}, {1, 2})}, {Array::FromVector<float>({1, 2}, {1, 2})});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.status().message(), "output 0 is f32[2] but the reference's is f32[1,2]");
}

TEST(OutputCheckTest, BlocksAreComparedWhereTheyAreHeldAndTheGlobalFirstMismatchIsNamed) {
  // want is s32[3,4] = 0..11. Two padded holders: rows 0-1 (held 2x4) and row 2 (held in a 2x4
  // whose second row is padding), each wrong in one place; the global first is [1,3], although
  // the block holding row 2 comes first in the list.
  Array want = Array::Iota(DType::kS32, {3, 4});
  Array top = Array::FromVector<int32_t>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 70});
  Array bottom = Array::FromVector<int32_t>({2, 4}, {8, 9, 100, 11, -1, -1, -1, -1});
  std::vector<OutputBlock> blocks = {{&bottom, {2, 0}, {1, 4}}, {&top, {0, 0}, {2, 4}}};
  StatusOr<OutputDiff> d = CompareOutputBlocks(blocks, want);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->mismatches, 2);  // the padding (-1) is not compared
  EXPECT_EQ(d->first_mismatch, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(d->got, 70);
  EXPECT_EQ(d->want, 7);
  EXPECT_EQ(d->max_abs_error, 90);
  // The same values assembled give the same answer through CompareOutput.
  Array global = Array::FromVector<int32_t>({3, 4}, {0, 1, 2, 3, 4, 5, 6, 70, 8, 9, 100, 11});
  StatusOr<OutputDiff> whole = CompareOutput(global, want);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->mismatches, d->mismatches);
  EXPECT_EQ(whole->first_mismatch, d->first_mismatch);
  EXPECT_EQ(whole->max_abs_error, d->max_abs_error);
}

TEST(OutputCheckTest, BlocksThatDoNotTileTheReferenceAreErrors) {
  Array want = Array::Iota(DType::kF32, {2, 2});
  Array held = Array::Iota(DType::kF32, {1, 2});
  StatusOr<OutputDiff> missing = CompareOutputBlocks({{&held, {0, 0}, {1, 2}}}, want);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "output 0: its blocks hold 2 elements but the reference f32[2,2] has 4");
  StatusOr<OutputDiff> outside = CompareOutputBlocks({{&held, {1, 1}, {1, 2}}}, want);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.status().message(),
            "output 0: the block [1,1] + [1,2] held in f32[1,2] is outside the reference's f32[2,2]");
  Array ints = Array::Iota(DType::kS32, {2, 2});
  EXPECT_FALSE(CompareOutputBlocks({{&ints, {0, 0}, {2, 2}}}, want).ok());
}

TEST(OutputCheckTest, DefaultTolerancesFollowThePrecision) {
  EXPECT_EQ(DefaultTolerance(DType::kS32).atol, 0);
  EXPECT_LT(DefaultTolerance(DType::kF64).rtol, DefaultTolerance(DType::kF32).rtol);
  EXPECT_LT(DefaultTolerance(DType::kF32).rtol, DefaultTolerance(DType::kF16).rtol);
  EXPECT_LT(DefaultTolerance(DType::kF16).rtol, DefaultTolerance(DType::kBF16).rtol);
}

}  // namespace
}  // namespace xs
