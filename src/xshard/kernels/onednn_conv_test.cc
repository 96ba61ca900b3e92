// OneDnnConvolution against the direct loop (ConvolutionReference): NHWC / HWIO, NCHW / OIHW and
// batch-last layouts, strides, asymmetric padding, window dilation, feature groups, 1 to 3
// spatial dims, 1 and 3 threads; and the shapes it must refuse (Convolution then takes its own
// paths).
#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "xshard/kernels/convolution.h"
#include "xshard/kernels/onednn_conv.h"

namespace xs::kernels {
namespace {

Array OneDnnRandomF32(const std::vector<int64_t>& dims, std::mt19937& rng) {
  Array a(DType::kF32, dims);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : a.values<float>()) v = u(rng);
  return a;
}

struct OneDnnConvCase {
  const char* name;
  std::vector<int64_t> lhs, rhs;
  ConvolutionDimensionNumbers dims;
  std::vector<WindowDim> window;
  int64_t groups = 1;
};

// Window dim of `size` with stride, low / high padding and window dilation.
WindowDim OneDnnWindow(int64_t size, int64_t stride = 1, int64_t lo = 0, int64_t hi = 0, int64_t dilation = 1) {
  return WindowDim{size, stride, lo, hi, 1, dilation, false};
}

ConvolutionDimensionNumbers OneDnnNhwc(int spatial) {  // b01f_01io->b01f
  ConvolutionDimensionNumbers d;
  d.input_batch = 0;
  d.input_feature = spatial + 1;
  d.kernel_input_feature = spatial;
  d.kernel_output_feature = spatial + 1;
  d.output_batch = 0;
  d.output_feature = spatial + 1;
  for (int i = 0; i < spatial; ++i) {
    d.input_spatial.push_back(i + 1);
    d.kernel_spatial.push_back(i);
    d.output_spatial.push_back(i + 1);
  }
  return d;
}

ConvolutionDimensionNumbers OneDnnNchw() {  // bf01_oi01->bf01
  ConvolutionDimensionNumbers d;
  d.input_batch = 0;
  d.input_feature = 1;
  d.input_spatial = {2, 3};
  d.kernel_output_feature = 0;
  d.kernel_input_feature = 1;
  d.kernel_spatial = {2, 3};
  d.output_batch = 0;
  d.output_feature = 1;
  d.output_spatial = {2, 3};
  return d;
}

ConvolutionDimensionNumbers OneDnnBatchLast() {  // f01b_i01o->01bf: how JAX writes a kernel gradient
  ConvolutionDimensionNumbers d;
  d.input_feature = 0;
  d.input_spatial = {1, 2};
  d.input_batch = 3;
  d.kernel_input_feature = 0;
  d.kernel_spatial = {1, 2};
  d.kernel_output_feature = 3;
  d.output_spatial = {0, 1};
  d.output_batch = 2;
  d.output_feature = 3;
  return d;
}

TEST(OneDnnConvolution, MatchesTheDirectLoopInEveryLayout) {
  const OneDnnConvCase cases[] = {
      {"3x3 same NHWC", {2, 9, 9, 16}, {3, 3, 16, 24}, OneDnnNhwc(2), {OneDnnWindow(3, 1, 1, 1), OneDnnWindow(3, 1, 1, 1)}},
      {"NCHW strided, dilated, asymmetric padding", {2, 8, 11, 10}, {12, 8, 3, 2}, OneDnnNchw(),
       {OneDnnWindow(3, 2, 1, 0, 2), OneDnnWindow(2, 1, 0, 1)}},
      {"feature groups", {1, 7, 7, 8}, {3, 3, 2, 12}, OneDnnNhwc(2), {OneDnnWindow(3, 1, 1, 1), OneDnnWindow(3, 2, 0, 0)}, 4},
      {"1-D", {3, 20, 5}, {4, 5, 6}, OneDnnNhwc(1), {OneDnnWindow(4, 1, 2, 1)}},
      {"3-D", {1, 5, 6, 7, 3}, {2, 2, 2, 3, 4}, OneDnnNhwc(3), {OneDnnWindow(2), OneDnnWindow(2, 2), OneDnnWindow(2, 1, 1, 0)}},
      {"batch last (a kernel gradient)", {16, 10, 10, 4}, {16, 8, 8, 6}, OneDnnBatchLast(), {OneDnnWindow(8), OneDnnWindow(8)}},
  };
  std::mt19937 rng(5);
  for (const OneDnnConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    ConvolutionParams p;
    p.dims = c.dims;
    p.window.dims = c.window;
    p.feature_group_count = c.groups;
    const Array x = OneDnnRandomF32(c.lhs, rng), k = OneDnnRandomF32(c.rhs, rng);
    const std::vector<int64_t> out_dims = *ConvolutionResultDims(x.dims(), k.dims(), p);
    const Array want = *ConvolutionReference(x, k, p, DType::kF32);
    for (int threads : {1, 3}) {
      StatusOr<Array> got = OneDnnConvolution(x, k, p, out_dims, threads);
      ASSERT_TRUE(got.ok()) << got.status().message();
      ASSERT_EQ(got->dims(), want.dims());
      for (int64_t i = 0; i < want.num_elements(); ++i) {
        const double w = want.GetDouble(i);
        ASSERT_NEAR(got->GetDouble(i), w, 1e-5 * (1 + std::abs(w)) * 16) << "element " << i << ", threads " << threads;
      }
    }
    // Convolution itself takes this path for f32 and gives the same values.
    const Array through = *Convolution(x, k, p, DType::kF32);
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      ASSERT_NEAR(through.GetDouble(i), want.GetDouble(i), 1e-5 * (1 + std::abs(want.GetDouble(i))) * 16);
    }
  }
}

TEST(OneDnnConvolution, RefusesWhatItCannotComputeAndConvolutionStillDoes) {
  std::mt19937 rng(6);
  const Array x = OneDnnRandomF32({1, 6, 6, 4}, rng), k = OneDnnRandomF32({3, 3, 4, 5}, rng);
  std::vector<ConvolutionParams> refused;
  ConvolutionParams base;
  base.dims = OneDnnNhwc(2);
  base.window.dims = {OneDnnWindow(3, 1, 1, 1), OneDnnWindow(3, 1, 1, 1)};
  ConvolutionParams lhs_dilated = base;
  lhs_dilated.window.dims[0].lhs_dilation = 2;
  refused.push_back(lhs_dilated);
  ConvolutionParams reversed = base;
  reversed.window.dims[1].window_reversal = true;
  refused.push_back(reversed);
  ConvolutionParams cropped = base;
  cropped.window.dims[0].pad_low = -1;
  refused.push_back(cropped);
  for (const ConvolutionParams& p : refused) {
    const std::vector<int64_t> out_dims = *ConvolutionResultDims(x.dims(), k.dims(), p);
    StatusOr<Array> got = OneDnnConvolution(x, k, p, out_dims, 1);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kUnimplemented);
    const Array want = *ConvolutionReference(x, k, p, DType::kF32);
    const Array through = *Convolution(x, k, p, DType::kF32);
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      ASSERT_NEAR(through.GetDouble(i), want.GetDouble(i), 1e-4);
    }
  }
  // f64 operands are not oneDNN's.
  const std::vector<int64_t> out_dims = *ConvolutionResultDims(x.dims(), k.dims(), base);
  EXPECT_EQ(OneDnnConvolution(x.Convert(DType::kF64), k.Convert(DType::kF64), base, out_dims, 1).status().code(),
            StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace xs::kernels
