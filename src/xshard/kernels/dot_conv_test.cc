// dot and convolution: hand values, JAX-printed values (lax.conv_general_dilated on CPU, see each
// test) and the BLAS / im2col fast paths against the naive references on random inputs.
#include <random>

#include "gtest/gtest.h"
#include "xshard/kernels/convolution.h"
#include "xshard/kernels/convolution_taps.h"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/elementwise.h"

namespace xs::kernels {
namespace {

template <typename T>
std::vector<T> Values(const Array& a) {
  auto v = a.values<T>();
  return std::vector<T>(v.begin(), v.end());
}

Array RandomF32(std::vector<int64_t> dims, std::mt19937& rng) {
  Array a(Shape(DType::kF32, std::move(dims)));
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (float& x : a.values<float>()) x = d(rng);
  return a;
}

// Integer-valued f32 data: sums are exact, so fast and reference agree bit for bit.
Array SmallInts(std::vector<int64_t> dims, int mod, int shift) {
  Array a(Shape(DType::kF32, std::move(dims)));
  int i = 0;
  for (float& x : a.values<float>()) x = static_cast<float>((i++ % mod) - shift);
  return a;
}

void ExpectNear(const Array& a, const Array& b, double tol) {
  ASSERT_EQ(a.dims(), b.dims());
  for (int64_t i = 0; i < a.num_elements(); ++i) EXPECT_NEAR(a.GetDouble(i), b.GetDouble(i), tol) << i;
}

TEST(Dot, MatmulOfTheSeedMatrices) {
  // Seed 000: x = rows 1..4 repeated 16 times (f16), y = x^T -> z[i][j] = 16 (i+1)(j+1).
  std::vector<Half> xv;
  for (int i = 1; i <= 4; ++i)
    for (int j = 0; j < 16; ++j) xv.push_back(FloatToHalf(static_cast<float>(i)));
  Array x = Array::FromVector<Half>({4, 16}, xv);
  DotDimensionNumbers dn;
  dn.lhs_contracting = {1};
  dn.rhs_contracting = {1};  // x @ x^T without materializing the transpose
  Array z = *DotGeneral(x, x, dn, DType::kF16);
  EXPECT_EQ(z.dims(), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(z.GetDouble(0), 16.0);
  EXPECT_EQ(z.GetDouble(5), 64.0);
  EXPECT_EQ(z.GetDouble(15), 256.0);
}

TEST(Dot, BatchAndContractingDimsInAnyPositionMatchReference) {
  std::mt19937 rng(7);
  // lhs [k=3, b=2, m=4], rhs [n=5, b=2, k=3] -> [b, m, n].
  Array lhs = RandomF32({3, 2, 4}, rng), rhs = RandomF32({5, 2, 3}, rng);
  DotDimensionNumbers dn;
  dn.lhs_batch = {1};
  dn.rhs_batch = {1};
  dn.lhs_contracting = {0};
  dn.rhs_contracting = {2};
  Array fast = *DotGeneral(lhs, rhs, dn, DType::kF32);
  EXPECT_EQ(fast.dims(), (std::vector<int64_t>{2, 4, 5}));
  ExpectNear(fast, *DotGeneralReference(lhs, rhs, dn, DType::kF32), 1e-5);
  ExpectNear(*DotGeneral(*Convert(lhs, DType::kF64), *Convert(rhs, DType::kF64), dn, DType::kF64), fast, 1e-5);
}

TEST(Dot, Bf16InputsWithF32ResultAccumulateInF32) {
  std::mt19937 rng(8);
  Array a = *Convert(RandomF32({8, 64}, rng), DType::kBF16), b = *Convert(RandomF32({64, 8}, rng), DType::kBF16);
  DotDimensionNumbers dn;
  dn.lhs_contracting = {1};
  dn.rhs_contracting = {0};
  Array out = *DotGeneral(a, b, dn, DType::kF32);
  ASSERT_EQ(out.dtype(), DType::kF32);
  ExpectNear(out, *DotGeneralReference(a, b, dn, DType::kF32), 1e-4);
}

TEST(Dot, IntegerDotWrapsInResultType) {
  Array a = Array::FromVector<int8_t>({1, 2}, {100, 100}), b = Array::FromVector<int8_t>({2, 1}, {100, 100});
  DotDimensionNumbers dn;
  dn.lhs_contracting = {1};
  dn.rhs_contracting = {0};
  EXPECT_EQ(Values<int32_t>(*DotGeneral(a, b, dn, DType::kS32)), (std::vector<int32_t>{20000}));
  // In s8: 100*100 = 10000 -> 16 (mod 256), twice -> 32.
  EXPECT_EQ(Values<int8_t>(*DotGeneral(a, b, dn, DType::kS8)), (std::vector<int8_t>{32}));
}

TEST(Dot, MismatchedContractingSizesNameBothDims) {
  DotDimensionNumbers dn;
  dn.lhs_contracting = {1};
  dn.rhs_contracting = {0};
  StatusOr<Array> r = DotGeneral(Array(DType::kF32, {2, 3}), Array(DType::kF32, {4, 2}), dn, DType::kF32);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("contracting dim sizes differ: lhs dim 1 is 3, rhs dim 0 is 4"),
            std::string::npos);
}

ConvolutionParams Params(std::string_view labels_2d_nhwc, int n_spatial) {
  ConvolutionParams p;
  (void)labels_2d_nhwc;
  // b01f_01io->b01f for 2 spatial dims, b0f_0io->b0f for 1.
  p.dims.input_batch = 0;
  p.dims.input_feature = n_spatial + 1;
  p.dims.kernel_input_feature = n_spatial;
  p.dims.kernel_output_feature = n_spatial + 1;
  p.dims.output_batch = 0;
  p.dims.output_feature = n_spatial + 1;
  for (int i = 0; i < n_spatial; ++i) {
    p.dims.input_spatial.push_back(i + 1);
    p.dims.kernel_spatial.push_back(i);
    p.dims.output_spatial.push_back(i + 1);
  }
  p.window.dims.resize(n_spatial);
  return p;
}

TEST(Convolution, FeatureGroupsStridesPaddingAndLhsDilationMatchJax) {
  // lax.conv_general_dilated(x[1,4,4,2] = (i % 7) - 3, k[3,3,1,4] = (i % 5) - 2, strides (2,1),
  // padding ((1,1),(0,2)), lhs_dilation (1,2), NHWC/HWIO/NHWC, feature_group_count=2).
  Array x = SmallInts({1, 4, 4, 2}, 7, 3), k = SmallInts({3, 3, 1, 4}, 5, 2);
  ConvolutionParams p = Params("b01f_01io->b01f", 2);
  p.window.dims[0] = {3, 2, 1, 1, 1, 1, false};
  p.window.dims[1] = {3, 1, 0, 2, 2, 1, false};
  p.feature_group_count = 2;
  Array y = *Convolution(x, k, p, DType::kF32);
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 2, 7, 4}));
  const std::vector<float> want = {-2, 2, -1, 2, 1, 0, -2, -1, -2, 0, 5, -4, 1, 4, -4, 1, -2, -9, -3,
                                   -3, -6, -6, 1, -4, -6, 9, -4, 6, 2, 2, 3, -6, 1, 4, -5, 1, 0, -5,
                                   -9, -5, -2, -10, -2, -4, -9, 2, 0, 10, -5, 4, 1, -2, 4, 3, -2, 0};
  EXPECT_EQ(Values<float>(y), want);
}

TEST(Convolution, BatchGroupsMatchJax) {
  // x[4,3,2] = (i % 5) - 1, k[2,2,4] = (i % 3) - 1, NWC/WIO/NWC, batch_group_count=2.
  Array x = SmallInts({4, 3, 2}, 5, 1), k = SmallInts({2, 2, 4}, 3, 1);
  ConvolutionParams p = Params("b0f_0io->b0f", 1);
  p.window.dims[0] = {2, 1, 0, 0, 1, 1, false};
  p.batch_group_count = 2;
  Array y = *Convolution(x, k, p, DType::kF32);
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{0, -1, -2, 3, 3, -1, 5, -4, -1, -1, -1, -3, -3, 4, 1, 0}));
}

TEST(Convolution, Im2ColFastPathMatchesDirectLoop) {
  std::mt19937 rng(9);
  for (int variant = 0; variant < 4; ++variant) {
    Array x = SmallInts({2, 7, 6, 3}, 11, 5), k = SmallInts({3, 2, 3, 5}, 7, 3);
    ConvolutionParams p = Params("", 2);
    p.window.dims[0] = {3, 1 + variant % 2, variant, 1, 1 + variant / 2, 1, variant == 3};
    p.window.dims[1] = {2, 2, -1 + variant, 1, 1, 1 + variant % 2, false};
    StatusOr<Array> fast = Convolution(x, k, p, DType::kF32);
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    EXPECT_EQ(*fast, *ConvolutionReference(x, k, p, DType::kF32)) << "variant " << variant;
  }
  // Feature groups (3 groups of 1 input feature, 5 output features split 3 ways does not divide:
  // use 6 outputs) and a bf16 result that computes in f32 and rounds once.
  Array x = SmallInts({2, 7, 6, 3}, 11, 5), k = SmallInts({3, 2, 1, 6}, 7, 3);
  ConvolutionParams p = Params("", 2);
  p.window.dims[0] = {3, 2, 1, 1, 1, 1, false};
  p.window.dims[1] = {2, 1, 0, 1, 1, 2, true};
  p.feature_group_count = 3;
  EXPECT_EQ(*Convolution(x, k, p, DType::kF32), *ConvolutionReference(x, k, p, DType::kF32));
  Array xb = *Convert(x, DType::kBF16), kb = *Convert(k, DType::kBF16);
  EXPECT_EQ(*Convolution(xb, kb, p, DType::kBF16), *Convert(*ConvolutionReference(x, k, p, DType::kF32), DType::kBF16));
  (void)rng;
}

// 9 window positions x 4096 input features make a patch row of 147,456 bytes, so the 32 MiB
// im2col budget holds 227 rows: the 2 x 16 x 16 = 512 output positions run as three GEMMs whose
// boundaries fall inside a batch element and inside a row of the output image.
TEST(Convolution, Im2ColInChunksMatchesDirectLoopAcrossChunkBoundaries) {
  Array x = SmallInts({2, 16, 16, 4096}, 11, 5), k = SmallInts({3, 3, 4096, 3}, 7, 3);
  ConvolutionParams p = Params("", 2);
  p.window.dims[0] = {3, 1, 1, 1, 1, 1, false};
  p.window.dims[1] = {3, 1, 1, 1, 1, 1, true};
  StatusOr<Array> fast = Convolution(x, k, p, DType::kF32);
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  ASSERT_EQ(fast->dims(), (std::vector<int64_t>{2, 16, 16, 3}));
  const Array want = *ConvolutionReference(x, k, p, DType::kF32);
  EXPECT_EQ(*fast, want);
  // bf16 operands are widened while the patches are built; the f32 sums round once at the end.
  Array xb = *Convert(x, DType::kBF16), kb = *Convert(k, DType::kBF16);
  EXPECT_EQ(*Convolution(xb, kb, p, DType::kBF16), *Convert(want, DType::kBF16));
}

// The tap GEMM path (>= 32 input features, >= 16 output rows) on integer-valued data, so every
// order of summation is exact and it must equal the direct loop bit for bit: padding past the
// image (taps that land outside contribute nothing), negative padding (crop), stride, window
// dilation, reversal, feature groups, a non-canonical layout and 1 to 3 spatial dims.
TEST(Convolution, TapGemmsMatchDirectLoop) {
  struct Case {
    std::vector<int64_t> x, k;
    std::vector<WindowDim> window;
    int64_t groups;
  };
  const std::vector<Case> cases = {
      // 2-D, window 3x3 dilated by 8 with padding 8: most taps of edge rows fall outside.
      {{2, 20, 18, 32}, {3, 3, 32, 5}, {{3, 1, 8, 8, 1, 8, false}, {3, 1, 8, 8, 1, 8, false}}, 1},
      // 2-D, stride 2, crop on one side, reversal on the last dim.
      {{1, 9, 40, 40}, {2, 3, 40, 3}, {{2, 2, 1, 0, 1, 1, false}, {3, 2, -1, 2, 1, 1, true}}, 1},
      // 1-D with 2 feature groups of 32.
      {{3, 24, 64}, {4, 32, 6}, {{4, 1, 2, 1, 1, 2, false}}, 2},
      // 3-D.
      {{1, 3, 4, 17, 32}, {2, 2, 3, 32, 4}, {{2, 1, 1, 0, 1, 1, false}, {2, 1, 0, 1, 1, 1, false},
                                             {3, 1, 1, 1, 1, 1, false}}, 1},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& tc = cases[c];
    const int n = static_cast<int>(tc.window.size());
    Array x = SmallInts(tc.x, 11, 5), k = SmallInts(tc.k, 7, 3);
    ConvolutionParams p = Params("", n);
    p.window.dims = tc.window;
    p.feature_group_count = tc.groups;
    const std::vector<int64_t> out = *ConvolutionResultDims(x.dims(), k.dims(), p);
    ASSERT_TRUE(TapGemmApplies(x, k, p, out)) << "case " << c;
    const Array want = *ConvolutionReference(x, k, p, DType::kF32);
    EXPECT_EQ(*Convolution(x, k, p, DType::kF32), want) << "case " << c;
    Array xb = *Convert(x, DType::kBF16), kb = *Convert(k, DType::kBF16);
    EXPECT_EQ(*Convolution(xb, kb, p, DType::kBF16), *Convert(want, DType::kBF16)) << "case " << c;
  }
  // The same 2-D case with features first (bf01 / oi01 -> bf01): the layouts are transposed
  // around the same GEMMs.
  Array x = SmallInts({2, 32, 20, 18}, 11, 5), k = SmallInts({5, 32, 3, 3}, 7, 3);
  ConvolutionParams p;
  p.dims.input_batch = 0;
  p.dims.input_feature = 1;
  p.dims.input_spatial = {2, 3};
  p.dims.kernel_output_feature = 0;
  p.dims.kernel_input_feature = 1;
  p.dims.kernel_spatial = {2, 3};
  p.dims.output_batch = 0;
  p.dims.output_feature = 1;
  p.dims.output_spatial = {2, 3};
  p.window.dims = {{3, 1, 8, 8, 1, 8, false}, {3, 1, 8, 8, 1, 8, false}};
  EXPECT_EQ(*Convolution(x, k, p, DType::kF32), *ConvolutionReference(x, k, p, DType::kF32));
}

TEST(Convolution, MismatchedFeaturesAreAnError) {
  ConvolutionParams p = Params("", 1);
  p.window.dims[0] = {2, 1, 0, 0, 1, 1, false};
  StatusOr<Array> r = Convolution(Array(DType::kF32, {1, 4, 3}), Array(DType::kF32, {2, 2, 5}), p, DType::kF32);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input features (3) must equal kernel input features (2)"),
            std::string::npos);
}

}  // namespace
}  // namespace xs::kernels
