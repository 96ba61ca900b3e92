// The executor runs topk (op and the TopK custom-call jax.lax.top_k lowers to), fft, cholesky,
// triangular-solve, rng, rng-bit-generator, batch-norm and ragged-dot from HLO text.
#include <cmath>
#include <complex>

#include "gtest/gtest.h"
#include "xshard/exec/exec_test_util.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

using testing::Doubles;
using testing::RunText;

TEST(ExecutableExtraOps, TopKOpAndJaxCustomCall) {
  constexpr std::string_view kOp = R"(
HloModule m
ENTRY main {
  p = f32[2,4] parameter(0)
  ROOT t = (f32[2,2], s32[2,2]) topk(p), k=2, largest=true
})";
  Array x = Array::FromVector<float>({2, 4}, {1, 9, 3, 7, 0, -1, 5, 5});
  StatusOr<std::vector<Array>> r = RunText(kOp, {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{9, 7, 5, 5}));
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{1, 3, 2, 3}));
  // As jax.lax.top_k lowers it (XLA's TopK custom-call: k from the result shape).
  constexpr std::string_view kCustom = R"(
HloModule m
ENTRY main {
  p = f32[2,4] parameter(0)
  ROOT t = (f32[2,3], s32[2,3]) custom-call(p), custom_call_target="TopK"
})";
  r = RunText(kCustom, {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{9, 7, 3, 5, 5, 0}));
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{1, 3, 2, 2, 3, 0}));
}

TEST(ExecutableExtraOps, TopKWithoutKIsAClearError) {
  constexpr std::string_view kNoK = R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  ROOT t = (f32[2], s32[2]) topk(p), largest=true
})";
  StatusOr<std::vector<Array>> r = RunText(kNoK, {Array(DType::kF32, {4})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("k"), std::string::npos) << r.status().ToString();
}

TEST(ExecutableExtraOps, FftRoundTrip) {
  constexpr std::string_view kText = R"(
HloModule m
ENTRY main {
  p = f32[2,4] parameter(0)
  f = c64[2,3] fft(p), fft_type=RFFT, fft_length={4}
  ROOT b = f32[2,4] fft(f), fft_type=IRFFT, fft_length={4}
})";
  Array x = Array::FromVector<float>({2, 4}, {1, 2, 3, 4, -1, 0.5, 2, 8});
  StatusOr<std::vector<Array>> r = RunText(kText, {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<double> got = Doubles((*r)[0]), want = Doubles(x);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5);
}

TEST(ExecutableExtraOps, CholeskyThenTriangularSolveSolvesASystem) {
  // Solve A x = b with A = L L^T: L y = b, then L^T x = y. A = [[4,2],[2,3]], x = [1, 2]
  // gives b = [8, 8].
  constexpr std::string_view kText = R"(
HloModule m
ENTRY main {
  a = f32[2,2] parameter(0)
  b = f32[2,1] parameter(1)
  l = f32[2,2] cholesky(a), lower=true
  y = f32[2,1] triangular-solve(l, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  ROOT x = f32[2,1] triangular-solve(l, y), left_side=true, lower=true, transpose_a=TRANSPOSE
})";
  StatusOr<std::vector<Array>> r =
      RunText(kText, {Array::FromVector<float>({2, 2}, {4, 2, 2, 3}), Array::FromVector<float>({2, 1}, {8, 8})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR((*r)[0].GetDouble(0), 1, 1e-5);
  EXPECT_NEAR((*r)[0].GetDouble(1), 2, 1e-5);
}

TEST(ExecutableExtraOps, RngIsReproducibleAndInRange) {
  constexpr std::string_view kText = R"(
HloModule m
ENTRY main {
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  ROOT r = f32[1000] rng(lo, hi), distribution=rng_uniform
})";
  StatusOr<std::vector<Array>> a = RunText(kText, {});
  StatusOr<std::vector<Array>> b = RunText(kText, {});
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString();
  EXPECT_EQ((*a)[0], (*b)[0]);
  for (double v : Doubles((*a)[0])) {
    EXPECT_GE(v, -1);
    EXPECT_LT(v, 1);
  }
}

TEST(ExecutableExtraOps, RngBitGeneratorTupleAndBitsForms) {
  constexpr std::string_view kText = R"(
HloModule m
ENTRY main {
  s = u64[2] parameter(0)
  ROOT r = (u64[2], u32[8]) rng-bit-generator(s), algorithm=rng_philox
})";
  StatusOr<std::vector<Array>> r = RunText(kText, {Array::FromVector<uint64_t>({2}, {1, 5})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].values<uint64_t>()[1], 7u);  // 32 bytes = two Philox blocks
  constexpr std::string_view kBits = R"(
HloModule m
ENTRY main {
  s = u64[2] parameter(0)
  ROOT r = u32[8] rng-bit-generator(s), algorithm=rng_default
})";
  StatusOr<std::vector<Array>> bits = RunText(kBits, {Array::FromVector<uint64_t>({2}, {1, 5})});
  ASSERT_TRUE(bits.ok()) << bits.status().ToString();
  EXPECT_EQ((*bits)[0], (*r)[1]);  // rng_default is Philox
}

TEST(ExecutableExtraOps, BatchNormTrainingAndInference) {
  constexpr std::string_view kText = R"(
HloModule m
ENTRY main {
  x = f32[2,2] parameter(0)
  scale = f32[2] constant({1, 2})
  offset = f32[2] constant({0, 10})
  t = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, scale, offset), epsilon=0, feature_index=1
  mean = f32[2] get-tuple-element(t), index=1
  var = f32[2] get-tuple-element(t), index=2
  ROOT i = f32[2,2] batch-norm-inference(x, scale, offset, mean, var), epsilon=0, feature_index=1
})";
  StatusOr<std::vector<Array>> r = RunText(kText, {Array::FromVector<float>({2, 2}, {1, 2, 3, 6})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<double> want = {-1, 8, 1, 12};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR((*r)[0].GetDouble(i), want[i], 1e-5);
}

TEST(ExecutableExtraOps, RaggedDotBatchModeIsAPlainDot) {
  constexpr std::string_view kText = R"(
HloModule m
ENTRY main {
  a = f32[2,1,2] parameter(0)
  b = f32[2,2,1] parameter(1)
  c = u32[2] constant({1, 1})
  ROOT d = f32[2,1,1] ragged-dot(a, b, c), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, lhs_ragged_dims={0}
})";
  StatusOr<std::vector<Array>> r = RunText(
      kText, {Array::FromVector<float>({2, 1, 2}, {1, 2, 3, 4}), Array::FromVector<float>({2, 2, 1}, {5, 6, 7, 8})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{1 * 5 + 2 * 6, 3 * 7 + 4 * 8}));
}

}  // namespace
}  // namespace xs
