// CompareElement / AccumulateElementDiffs and CompareNumerics against hand-computed values:
// element bounds (extra term, NaN / inf rules, complex), first failures across boxes, integer
// exactness; allclose (numpy semantics), error rows / columns, worst element, array_split block
// grids, mixed float dtypes, every error.
#include "xshard/core/numerics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <utility>

namespace xs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// got - want = [[0, 0.5, 0], [0.5, 0, 0.25]].
Array Got23() { return Array::FromVector<float>({2, 3}, {1, 2.5, 3, 4.5, 5, 6}); }
Array Want23() { return Array::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6.25}); }

TEST(NumericsTest, StatisticsOfASmallMatrix) {
  NumericsOptions o;
  o.atol = 0.1;
  o.rtol = 0.1;
  StatusOr<NumericsReport> r = CompareNumerics(Got23(), Want23(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->elements, 6);
  // Tolerances 0.1 + 0.1 * |want|: 0.3 at want 2 (diff 0.5: not close), 0.5 at want 4 (diff
  // 0.5: close, the bound is inclusive), 0.725 at want 6.25.
  EXPECT_FALSE(r->allclose);
  EXPECT_EQ(r->not_close, 1);
  EXPECT_DOUBLE_EQ(r->max_abs_diff, 0.5);
  EXPECT_DOUBLE_EQ(r->mean_abs_diff, 1.25 / 6);
  EXPECT_DOUBLE_EQ(r->median_abs_diff, 0.125);  // sorted 0 0 0 .25 .5 .5: mean of 0 and .25
  EXPECT_DOUBLE_EQ(r->max_rel_diff, 0.25);      // 0.5 / 2
  // Without a threshold the errors are the elements not close: [0, 1] only.
  EXPECT_EQ(r->errors, 1);
  EXPECT_THAT(r->error_rows, ElementsAre(0));
  EXPECT_THAT(r->error_columns, ElementsAre(1));
  EXPECT_EQ(r->row_count, 2);
  EXPECT_EQ(r->column_count, 3);
  // Two elements differ by 0.5: the first one is the worst, as numpy.argmax picks it.
  ASSERT_TRUE(r->worst_index.has_value());
  EXPECT_THAT(*r->worst_index, ElementsAre(0, 1));
  EXPECT_EQ(r->worst_got, 2.5);
  EXPECT_EQ(r->worst_want, 2);
}

TEST(NumericsTest, ThresholdChoosesTheErrors) {
  NumericsOptions o;
  o.threshold = 0.2;  // diffs 0.5, 0.5, 0.25 at [0,1], [1,0], [1,2]
  StatusOr<NumericsReport> r = CompareNumerics(Got23(), Want23(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->not_close, 3);  // default atol 1e-8, rtol 1e-5
  EXPECT_EQ(r->errors, 3);
  EXPECT_DOUBLE_EQ(r->error_percent(), 50.0);
  EXPECT_THAT(r->error_rows, ElementsAre(0, 1));
  EXPECT_THAT(r->error_columns, ElementsAre(0, 1, 2));
}

TEST(NumericsTest, EqualArraysAreClose) {
  StatusOr<NumericsReport> r = CompareNumerics(Want23(), Want23(), {.atol = 0, .rtol = 0});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->allclose);
  EXPECT_EQ(r->errors, 0);
  EXPECT_EQ(r->max_abs_diff, 0);
  EXPECT_TRUE(r->error_rows.empty());
}

TEST(NumericsTest, QuadrantsOfAFourByFour) {
  // diff[i][j] = 4i + j: quadrant means (0+1+4+5)/4 = 2.5, 4.5, 10.5, 12.5.
  NumericsOptions o;
  o.threshold = 9;
  o.blocks = {2, 2};
  StatusOr<NumericsReport> r =
      CompareNumerics(Array::Iota(DType::kF32, {4, 4}), Array(DType::kF32, {4, 4}), o);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->mean_abs_diff, 7.5);
  EXPECT_DOUBLE_EQ(r->median_abs_diff, 7.5);
  EXPECT_EQ(r->max_rel_diff, 0);  // want is all zero
  EXPECT_THAT(*r->worst_index, ElementsAre(3, 3));
  EXPECT_EQ(r->errors, 6);  // 10..15
  EXPECT_THAT(r->error_rows, ElementsAre(2, 3));
  EXPECT_THAT(r->error_columns, ElementsAre(0, 1, 2, 3));
  ASSERT_EQ(r->blocks.size(), 4u);
  const double means[] = {2.5, 4.5, 10.5, 12.5}, maxes[] = {5, 7, 13, 15};
  const int64_t errors[] = {0, 0, 2, 4};
  for (int k = 0; k < 4; ++k) {
    EXPECT_THAT(r->blocks[k].index, ElementsAre(k / 2, k % 2));
    EXPECT_THAT(r->blocks[k].start, ElementsAre(2 * (k / 2), 2 * (k % 2)));
    EXPECT_THAT(r->blocks[k].limit, ElementsAre(2 * (k / 2) + 2, 2 * (k % 2) + 2));
    EXPECT_EQ(r->blocks[k].elements, 4);
    EXPECT_DOUBLE_EQ(r->blocks[k].mean_abs_diff, means[k]) << k;
    EXPECT_EQ(r->blocks[k].max_abs_diff, maxes[k]) << k;
    EXPECT_EQ(r->blocks[k].errors, errors[k]) << k;
  }
}

TEST(NumericsTest, UnevenBlocksSplitLikeArraySplit) {
  // 5 elements in 2 blocks: [0:3] and [3:5]; the only difference (1) is in the second.
  NumericsOptions o;
  o.blocks = {2};
  StatusOr<NumericsReport> r = CompareNumerics(Array::FromVector<double>({5}, {0, 0, 0, 0, 1}),
                                               Array(DType::kF64, {5}), o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->blocks.size(), 2u);
  EXPECT_THAT(r->blocks[0].start, ElementsAre(0));
  EXPECT_THAT(r->blocks[0].limit, ElementsAre(3));
  EXPECT_EQ(r->blocks[0].mean_abs_diff, 0);
  EXPECT_THAT(r->blocks[1].start, ElementsAre(3));
  EXPECT_THAT(r->blocks[1].limit, ElementsAre(5));
  EXPECT_DOUBLE_EQ(r->blocks[1].mean_abs_diff, 0.5);
  EXPECT_EQ(r->blocks[1].errors, 1);
  EXPECT_TRUE(r->error_rows.empty());  // rank 1: columns only
  EXPECT_THAT(r->error_columns, ElementsAre(4));
}

TEST(NumericsTest, RowsAndColumnsSpanLeadingDims) {
  Array got(DType::kF32, {2, 2, 3});
  got.SetDouble(1 * 6 + 0 * 3 + 2, 1.0);  // [1, 0, 2]
  StatusOr<NumericsReport> r = CompareNumerics(got, Array(DType::kF32, {2, 2, 3}));
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->error_rows, ElementsAre(0));
  EXPECT_THAT(r->error_columns, ElementsAre(2));
  EXPECT_THAT(*r->worst_index, ElementsAre(1, 0, 2));
}

TEST(NumericsTest, NaNsAreNeverCloseUnlessEqualNan) {
  const Array got = Array::FromVector<double>({3}, {kNaN, 1, kNaN});
  const Array want = Array::FromVector<double>({3}, {kNaN, 1, 2});
  StatusOr<NumericsReport> r = CompareNumerics(got, want);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->allclose);
  EXPECT_EQ(r->not_close, 2);
  EXPECT_EQ(r->nan_mismatches, 2);
  EXPECT_THAT(*r->first_nan_mismatch, ElementsAre(0));
  EXPECT_EQ(r->max_abs_diff, 0);  // statistics over element 1 only
  EXPECT_THAT(*r->worst_index, ElementsAre(1));
  r = CompareNumerics(got, want, {.equal_nan = true});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->not_close, 1);
  EXPECT_EQ(r->nan_mismatches, 1);
  EXPECT_THAT(*r->first_nan_mismatch, ElementsAre(2));
  // All NaN: no worst element.
  r = CompareNumerics(Array::FromVector<double>({1}, {kNaN}), Array::FromVector<double>({1}, {0}));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->worst_index.has_value());
}

TEST(NumericsTest, BlockMeansLeaveNaNsOut) {
  // Block [0:2] holds a NaN mismatch and a diff of 3: mean 3 over its one element without NaN,
  // two errors (the NaN and 3 > 1); block [2:4] diffs 0 and 1 (not > 1).
  NumericsOptions o;
  o.threshold = 1;
  o.blocks = {2};
  StatusOr<NumericsReport> r = CompareNumerics(Array::FromVector<double>({4}, {kNaN, 3, 0, 1}),
                                               Array(DType::kF64, {4}), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->errors, 2);
  EXPECT_EQ(r->blocks[0].elements, 2);
  EXPECT_EQ(r->blocks[0].mean_abs_diff, 3);
  EXPECT_EQ(r->blocks[0].errors, 2);
  EXPECT_EQ(r->blocks[1].mean_abs_diff, 0.5);
  EXPECT_EQ(r->blocks[1].errors, 0);
  EXPECT_DOUBLE_EQ(r->mean_abs_diff, 4.0 / 3);
  EXPECT_EQ(r->median_abs_diff, 1);
}

TEST(NumericsTest, Infinities) {
  StatusOr<NumericsReport> r = CompareNumerics(Array::FromVector<double>({3}, {kInf, -kInf, 1}),
                                               Array::FromVector<double>({3}, {kInf, kInf, 1}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->not_close, 1);
  EXPECT_EQ(r->max_abs_diff, kInf);
  EXPECT_THAT(*r->worst_index, ElementsAre(1));
}

TEST(NumericsTest, Bf16AgainstF32AndIntegers) {
  // bf16 1 + 2^-7 (the next bf16 after 1) against f32 1.
  StatusOr<NumericsReport> r = CompareNumerics(Array::FromVector<BFloat16>({1}, {FloatToBFloat16(1.0078125f)}),
                                               Array::FromVector<float>({1}, {1}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->max_abs_diff, 0.0078125);
  EXPECT_FALSE(r->allclose);
  r = CompareNumerics(Array::FromVector<int32_t>({2}, {1, 5}), Array::FromVector<int32_t>({2}, {1, 2}),
                      {.atol = 3, .rtol = 0});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_abs_diff, 3);
  EXPECT_TRUE(r->allclose);  // 3 <= 3
}

TEST(NumericsTest, EmptyArraysAreClose) {
  StatusOr<NumericsReport> r = CompareNumerics(Array(DType::kF32, {0, 3}), Array(DType::kF32, {0, 3}));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->allclose);
  EXPECT_EQ(r->elements, 0);
  EXPECT_FALSE(r->worst_index.has_value());
}

TEST(NumericsTest, Errors) {
  const Array f(DType::kF32, {2, 2});
  auto message = [](const StatusOr<NumericsReport>& r) { return std::string(r.status().message()); };
  EXPECT_THAT(message(CompareNumerics(f, Array(DType::kF32, {2, 3}))),
              HasSubstr("shapes differ (got f32[2,2], want f32[2,3])"));
  EXPECT_THAT(message(CompareNumerics(f, Array(DType::kS32, {2, 2}))),
              HasSubstr("dtypes differ (got f32[2,2], want s32[2,2])"));
  EXPECT_THAT(message(CompareNumerics(Array(DType::kC64, {2, 2}), Array(DType::kC64, {2, 2}))),
              HasSubstr("c64 is not supported"));
  EXPECT_THAT(message(CompareNumerics(f, f, {.atol = -1})), HasSubstr("atol must be a finite number >= 0, got -1"));
  EXPECT_THAT(message(CompareNumerics(f, f, {.rtol = kNaN})), HasSubstr("rtol must be"));
  EXPECT_THAT(message(CompareNumerics(f, f, {.blocks = {1, 2, 2}})),
              HasSubstr("a block grid of 3 dims (1,2,2) for arrays of rank 2"));
  EXPECT_THAT(message(CompareNumerics(f, f, {.blocks = {3, 1}})),
              HasSubstr("block count 3 for dim 0 of size 2"));
  EXPECT_THAT(message(CompareNumerics(f, f, {.blocks = {0}})), HasSubstr("block count 0 for dim 1"));
}

TEST(NumericsTest, FormatsIndexRanges) {
  EXPECT_EQ(FormatIndexRanges({0, 1, 2, 3, 7, 9, 10}), "0-3, 7, 9-10");
  EXPECT_EQ(FormatIndexRanges({}), "");
  EXPECT_EQ(FormatIndexRanges({1, 3, 5, 7}, 2), "1, 3, ... (2 more)");
}

TEST(NumericsTest, PrintsATable) {
  NumericsOptions o;
  o.threshold = 0.2;
  o.blocks = {1, 3};
  StatusOr<NumericsReport> r = CompareNumerics(Got23(), Want23(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(FormatNumericsReport(*r),
            "got f32[2,3], want f32[2,3]: 6 elements\n"
            "allclose (atol 1e-08, rtol 1e-05): no, 3 of 6 elements (50.00%) not close\n"
            "max abs diff        0.5\n"
            "mean abs diff       0.208333\n"
            "median abs diff     0.125\n"
            "max rel diff        0.25\n"
            "errors (> 0.2)      3 of 6 (50.00%)\n"
            "rows with errors    2 of 2: 0-1\n"
            "cols with errors    3 of 3: 0-2\n"
            "worst               at [0, 1]: got 2.5, want 2 (diff 0.5)\n"
            "blocks 1x3 over dims 0, 1:\n"
            "  range       mean abs     max abs      errors\n"
            "  [0:2, 0:1]  0.25         0.5          1 (50.00%)\n"
            "  [0:2, 1:2]  0.25         0.5          1 (50.00%)\n"
            "  [0:2, 2:3]  0.125        0.25         1 (50.00%)\n");
}

TEST(ElementClosenessTest, BoundIsInclusiveAndTheExtraTermIsCountedApart) {
  // atol 0.25 + rtol 0.125 * |4| = 0.75; with extra 0.125 up to 0.875 (all exact in binary).
  const ElementBound b{0.25, 0.125, 0.125, true};
  ElementComparison c = CompareElement(4.75, 4.0, b);
  EXPECT_EQ(c.verdict, Closeness::kClose);
  EXPECT_EQ(c.abs_error, 0.75);
  c = CompareElement(3.125, 4.0, b);  // error 0.875: only by the extra term
  EXPECT_EQ(c.verdict, Closeness::kCloseByExtra);
  EXPECT_TRUE(c.close());
  c = CompareElement(5.0, 4.0, b);
  EXPECT_EQ(c.verdict, Closeness::kNotClose);
  EXPECT_EQ(c.abs_error, 1.0);
  EXPECT_FALSE(c.nan);
  // The tolerance scales with WANT, not GOT: error 1 is within 0.25 + 0.125 * 6 = 1 but not
  // within 0.25 + 0.125 * 5 = 0.875.
  const ElementBound no_extra{0.25, 0.125, 0, true};
  EXPECT_EQ(CompareElement(5.0, 6.0, no_extra).verdict, Closeness::kClose);
  EXPECT_EQ(CompareElement(6.0, 5.0, no_extra).verdict, Closeness::kNotClose);
}

TEST(ElementClosenessTest, NaNAndInfinities) {
  const ElementBound equal{0, 0, 0, true}, unequal{0, 0, 0, false};
  const ElementBound loose{1e300, 1e300, 1e300, true};
  ElementComparison c = CompareElement(kNaN, kNaN, equal);
  EXPECT_EQ(c.verdict, Closeness::kClose);
  EXPECT_EQ(c.abs_error, 0.0);
  EXPECT_TRUE(c.nan);
  c = CompareElement(kNaN, kNaN, unequal);
  EXPECT_EQ(c.verdict, Closeness::kNotClose);
  EXPECT_EQ(c.abs_error, kInf);
  // NaN on one side is never close, however loose the bound.
  for (const auto& [got, want] : {std::pair{kNaN, 1.0}, std::pair{1.0, kNaN}}) {
    c = CompareElement(got, want, loose);
    EXPECT_EQ(c.verdict, Closeness::kNotClose) << got << " vs " << want;
    EXPECT_EQ(c.abs_error, kInf);
    EXPECT_TRUE(c.nan);
  }
  c = CompareElement(kInf, kInf, equal);
  EXPECT_EQ(c.verdict, Closeness::kClose);
  EXPECT_EQ(c.abs_error, 0.0);
  EXPECT_EQ(CompareElement(-kInf, kInf, equal).abs_error, kInf);
  EXPECT_EQ(CompareElement(-kInf, kInf, equal).verdict, Closeness::kNotClose);
  // An infinite WANT adds nothing to the bound: 5 is not close to inf even with rtol 1.
  EXPECT_EQ(CompareElement(5.0, kInf, ElementBound{0, 1, 0, true}).verdict, Closeness::kNotClose);
  EXPECT_EQ(CompareElement(kInf, 1e308, ElementBound{1, 1, 0, true}).verdict, Closeness::kNotClose);
}

TEST(ElementClosenessTest, ComplexTakesTheLargerPartErrorAndTheMagnitude) {
  // Error max(0, 0.5) = 0.5; |want| = |1 + 2i| = sqrt(5) ~ 2.236: rtol 0.25 allows 0.559,
  // rtol 0.2 allows 0.447.
  const std::complex<double> got(1, 2.5), want(1, 2);
  EXPECT_EQ(CompareElement(got, want, ElementBound{0, 0.25, 0, true}).verdict, Closeness::kClose);
  EXPECT_EQ(CompareElement(got, want, ElementBound{0, 0.2, 0, true}).verdict, Closeness::kNotClose);
  EXPECT_EQ(CompareElement(got, want, ElementBound{0, 0.2, 0, true}).abs_error, 0.5);
}

TEST(ElementDiffsTest, IntegersAreExactAndTheFirstFailureIsNamed) {
  // 16777217 vs 16777216 differ by 1 (f32 could not tell them apart; f64 can).
  StatusOr<ElementDiffs> d =
      CompareElements(Array::FromVector<int32_t>({2, 2}, {5, 16777217, 7, 9}),
                      Array::FromVector<int32_t>({2, 2}, {5, 16777216, 7, 8}), ElementBound{});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->elements, 4);
  EXPECT_EQ(d->not_close, 2);
  EXPECT_FALSE(d->ok());
  EXPECT_EQ(d->max_abs_error, 1.0);
  EXPECT_EQ(d->max_rel_error, 0.125);  // 1 / 8 beats 1 / 16777216
  EXPECT_THAT(d->first_failure, ElementsAre(0, 1));
  EXPECT_EQ(d->first_got, 16777217.0);
  EXPECT_EQ(d->first_want, 16777216.0);
}

TEST(ElementDiffsTest, NaNAndInfinitiesInArrays) {
  // [0,0] NaN both: close; [0,1] inf both: close; [0,2] equal; [1,0] error 0.5 > atol 0.1;
  // [1,1] NaN on one side; [1,2] equal.
  StatusOr<ElementDiffs> d =
      CompareElements(Array::FromVector<float>({2, 3}, {NAN, INFINITY, 1, 2, NAN, 3}),
                      Array::FromVector<float>({2, 3}, {NAN, INFINITY, 1, 2.5, 4, 3}),
                      ElementBound{0.1, 0, 0, true});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->not_close, 2);
  EXPECT_EQ(d->nan_mismatches, 1);
  EXPECT_EQ(d->max_abs_error, kInf);
  EXPECT_EQ(d->max_rel_error, kInf);  // inf / 4 at [1,1]
  EXPECT_THAT(d->first_failure, ElementsAre(1, 0));
  EXPECT_EQ(d->first_got, 2.0);
  EXPECT_EQ(d->first_want, 2.5);
}

TEST(ElementDiffsTest, BoxesOfPaddedArraysAccumulateAndKeepTheEarliestFailure) {
  const Array want = Array::FromVector<float>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  // Want's box [0,2] + [2,2] = {2, 3; 6, 7}, held in a [2,3] array whose last column is padding.
  const Array got = Array::FromVector<float>({2, 3}, {2, 3.5, 99, 6, 7.25, 99});
  const ElementBound b{0, 0, 0.25, true};
  ElementDiffs d;
  ASSERT_TRUE(AccumulateElementDiffs(got, {0, 0}, want, {0, 2}, {2, 2}, b, &d).ok());
  EXPECT_EQ(d.elements, 4);
  EXPECT_EQ(d.not_close, 1);       // 3.5 vs 3
  EXPECT_EQ(d.close_by_extra, 1);  // 7.25 vs 7: 0.25 <= 0 + 0.25
  EXPECT_THAT(d.first_failure, ElementsAre(0, 3));
  EXPECT_EQ(d.first_got, 3.5);
  // A later box with a failure earlier in WANT's order takes over the first failure.
  const Array got2 = Array::FromVector<float>({1, 2}, {0.5, 1});
  ASSERT_TRUE(AccumulateElementDiffs(got2, {0, 0}, want, {0, 0}, {1, 2}, b, &d).ok());
  EXPECT_EQ(d.elements, 6);
  EXPECT_EQ(d.not_close, 2);
  EXPECT_THAT(d.first_failure, ElementsAre(0, 0));
  EXPECT_EQ(d.first_got, 0.5);
  EXPECT_EQ(d.first_want, 0.0);
  EXPECT_EQ(d.max_abs_error, 0.5);
  EXPECT_DOUBLE_EQ(d.max_rel_error, 0.5 / 3);  // want 0 at [0,0] is left out
  // Boxes outside an array, wrong ranks and different dims are errors.
  Status s = AccumulateElementDiffs(got, {0, 0}, want, {1, 3}, {2, 2}, b, &d);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("outside want f32[2,4]"));
  EXPECT_FALSE(AccumulateElementDiffs(got, {0}, want, {0, 0}, {2, 2}, b, &d).ok());
  EXPECT_FALSE(CompareElements(got, want, b).ok());
  EXPECT_EQ(d.elements, 6);  // errors add nothing
}

}  // namespace
}  // namespace xs
