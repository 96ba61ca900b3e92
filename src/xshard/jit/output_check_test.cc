// CompareOutputs: allclose bounds per dtype, exact integers, NaN handling, error messages.
#include "xshard/jit/output_check.h"

#include <cmath>

#include <gtest/gtest.h>

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

TEST(OutputCheckTest, ShapeAndCountMismatchesAreErrors) {
  StatusOr<std::vector<OutputDiff>> count = CompareOutputs({}, {Array::FromVector<float>({1}, {1})});
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.status().message(), "got 0 outputs but the reference has 1");
  StatusOr<std::vector<OutputDiff>> shape =
      CompareOutputs({Array::FromVector<float>({2}, {1, 2})}, {Array::FromVector<float>({1, 2}, {1, 2})});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.status().message(), "output 0 is f32[2] but the reference's is f32[1,2]");
}

TEST(OutputCheckTest, DefaultTolerancesFollowThePrecision) {
  EXPECT_EQ(DefaultTolerance(DType::kS32).atol, 0);
  EXPECT_LT(DefaultTolerance(DType::kF64).rtol, DefaultTolerance(DType::kF32).rtol);
  EXPECT_LT(DefaultTolerance(DType::kF32).rtol, DefaultTolerance(DType::kF16).rtol);
  EXPECT_LT(DefaultTolerance(DType::kF16).rtol, DefaultTolerance(DType::kBF16).rtol);
}

}  // namespace
}  // namespace xs
