// ConvLayoutFor's mapping of XLA convolutions onto cuDNN descriptors (expected strides worked by
// hand from the row-major buffers), and with a GPU a ConvPlan against the CPU reference.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <cmath>
#include <random>

#include "xshard/cuda/conv.h"
#include "xshard/kernels/convolution.h"
#include "xshard/testing/value_or_fail.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

using testing::ValueOrFail;

struct Conv {
  std::unique_ptr<Module> module;
  const Instruction& inst() const { return *module->entry()->root(); }
};

Conv MakeConv(std::string_view x, std::string_view k, std::string_view out, std::string_view attrs) {
  const std::string text = StrCat("HloModule m\nENTRY e {\n  x = ", x, " parameter(0)\n  k = ", k,
                                  " parameter(1)\n  ROOT c = ", out, " convolution(x, k), ", attrs,
                                  "\n}\n");
  return {ValueOrFail(ParseHloModule(text), text)};
}

ConvLayout LayoutOf(std::string_view x, std::string_view k, std::string_view out, std::string_view attrs) {
  Conv c = MakeConv(x, k, out, attrs);
  return ValueOrFail(ConvLayoutFor(c.inst()));
}

Status ErrorOf(std::string_view x, std::string_view k, std::string_view out, std::string_view attrs) {
  Conv c = MakeConv(x, k, out, attrs);
  StatusOr<ConvLayout> l = ConvLayoutFor(c.inst());
  return l.ok() ? OkStatus() : l.status();
}

TEST(ConvLayout, NhwcInputWithHwioKernelPermutesTheKernelToKrsc) {
  const ConvLayout l = LayoutOf("f32[8,32,32,3]", "f32[3,3,3,16]", "f32[8,32,32,16]",
                                "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f");
  EXPECT_EQ(l.ToString(),
            "x=[8,3,32,32]/[3072,1,96,3] w=[16,3,3,3]KRSC y=[8,16,32,32]/[16384,1,512,16] "
            "pad=[1,1] stride=[1,1] dilation=[1,1] groups=1 f32 tf32 kernel_perm={3,0,1,2}");
}

TEST(ConvLayout, NchwInputWithOihwKernelIsReadInPlace) {
  const ConvLayout l = LayoutOf("f32[2,3,8,8]", "f32[16,3,3,3]", "f32[2,16,4,4]",
                                "window={size=3x3 stride=2x2 pad=1_1x1_1 rhs_dilate=1x1}, "
                                "dim_labels=bf01_oi01->bf01");
  EXPECT_EQ(l.ToString(),
            "x=[2,3,8,8]/[192,64,8,1] w=[16,3,3,3]KCRS y=[2,16,4,4]/[256,16,4,1] "
            "pad=[1,1] stride=[2,2] dilation=[1,1] groups=1 f32 tf32 kernel_perm={}");
}

TEST(ConvLayout, OneSpatialDimGetsATrailingUnitDim) {
  const ConvLayout l = LayoutOf("f32[4,10,2]", "f32[3,2,5]", "f32[4,8,5]",
                                "window={size=3}, dim_labels=b0f_0io->b0f");
  EXPECT_EQ(l.ToString(),
            "x=[4,2,10,1]/[20,1,2,2] w=[5,2,3,1]KRSC y=[4,5,8,1]/[40,1,5,5] pad=[0,0] "
            "stride=[1,1] dilation=[1,1] groups=1 f32 tf32 kernel_perm={2,0,1}");
}

TEST(ConvLayout, GroupsDilationAndPrecision) {
  const ConvLayout l = LayoutOf("f32[1,4,9,9]", "f32[6,2,3,3]", "f32[1,6,5,5]",
                                "window={size=3x3 rhs_dilate=2x2}, dim_labels=bf01_oi01->bf01, "
                                "feature_group_count=2, operand_precision={highest,highest}");
  EXPECT_EQ(l.groups, 2);
  EXPECT_EQ(l.w_dims, (std::vector<int64_t>{6, 2, 3, 3}));
  EXPECT_EQ(l.dilation, (std::vector<int64_t>{2, 2}));
  EXPECT_FALSE(l.allow_tf32);
  const ConvLayout h = LayoutOf("bf16[1,4,9,9]", "bf16[6,4,3,3]", "bf16[1,6,7,7]",
                                "window={size=3x3}, dim_labels=bf01_oi01->bf01");
  EXPECT_EQ(h.dtype, DType::kBF16);
  EXPECT_FALSE(h.allow_tf32);
}

TEST(ConvLayout, UnsupportedFormsNameWhatAndTheFallback) {
  Status s = ErrorOf("f32[1,1,8,8]", "f32[1,1,3,3]", "f32[1,1,7,7]",
                     "window={size=3x3 pad=0_1x0_1}, dim_labels=bf01_oi01->bf01");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "convolution c: padding 0_1 in spatial dim 0 (cuDNN pads both sides alike "
                         "and never negatively); pad the input first");
  s = ErrorOf("f32[1,1,4,4]", "f32[1,1,3,3]", "f32[1,1,5,5]",
              "window={size=3x3 lhs_dilate=2x2}, dim_labels=bf01_oi01->bf01");
  EXPECT_NE(s.message().find("transposed convolution"), std::string::npos) << s.message();
  s = ErrorOf("s32[1,1,4,4]", "s32[1,1,3,3]", "s32[1,1,2,2]", "window={size=3x3}, dim_labels=bf01_oi01->bf01");
  EXPECT_NE(s.message().find("fallback convolution"), std::string::npos) << s.message();
}

TEST(ConvPlanGpu, CreateWithoutGpuFailsCleanly) {
  if (DeviceCount().ok()) GTEST_SKIP() << "a GPU is present: the no-GPU path is not reachable";
  Conv c = MakeConv("f32[2,3,8,8]", "f32[16,3,3,3]", "f32[2,16,6,6]",
                    "window={size=3x3}, dim_labels=bf01_oi01->bf01");
  DeviceInfo gpu;
  StatusOr<ConvPlan> p = ConvPlan::Create(c.inst(), gpu);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message().find('\n'), std::string::npos) << p.status().message();
}

// With a GPU: random operands through ConvPlan against the CPU's direct loop in f64.
void CheckAgainstCpu(std::string_view x, std::string_view k, std::string_view out,
                     std::string_view attrs, double tol) {
  if (!DeviceCount().ok()) {
    GTEST_SKIP() << NoGpuReason();
  }
  Conv c = MakeConv(x, k, out, attrs);
  const Instruction& inst = c.inst();
  ConvPlan plan = ValueOrFail(ConvPlan::Create(inst, ValueOrFail(GetDeviceInfo(0))));
  ASSERT_TRUE(plan.kernel_permutation().empty()) << plan.layout().ToString();
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  auto random = [&](const Shape& s) {
    Array a = Array::Full(DType::kF64, s.dims(), 0);
    for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, u(rng));
    return a.Convert(s.dtype());
  };
  Array xa = random(inst.operand(0)->shape()), ka = random(inst.operand(1)->shape());
  kernels::ConvolutionParams p;
  p.window = *inst.attrs().window;
  p.dims = *inst.attrs().conv_dims;
  p.feature_group_count = inst.attrs().feature_group_count;
  Array want = ValueOrFail(kernels::ConvolutionReference(xa.Convert(DType::kF64), ka.Convert(DType::kF64),
                                                         p, DType::kF64));
  void *dx = nullptr, *dk = nullptr, *dy = nullptr, *ws = nullptr;
  const int64_t out_bytes = inst.shape().byte_size();
  ASSERT_EQ(cudaMalloc(&dx, xa.byte_size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dk, ka.byte_size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, out_bytes), cudaSuccess);
  if (plan.workspace_bytes() > 0) {
    ASSERT_EQ(cudaMalloc(&ws, plan.workspace_bytes()), cudaSuccess);
  }
  cudaMemcpy(dx, xa.data(), xa.byte_size(), cudaMemcpyHostToDevice);
  cudaMemcpy(dk, ka.data(), ka.byte_size(), cudaMemcpyHostToDevice);
  Status run = plan.Run(nullptr, dx, dk, dy, ws);
  ASSERT_TRUE(run.ok()) << run.message();
  Array got = Array::Full(inst.shape().dtype(), inst.shape().dims(), 0);
  ASSERT_EQ(cudaMemcpy(got.data(), dy, out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (void* q : {dx, dk, dy, ws}) cudaFree(q);
  Array got64 = got.Convert(DType::kF64);
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    ASSERT_NEAR(got64.GetDouble(i), want.GetDouble(i), tol) << "element " << i << " of " << plan.layout().ToString();
  }
}

TEST(ConvPlanGpu, NchwF32HighestMatchesCpu) {
  CheckAgainstCpu("f32[2,3,9,9]", "f32[8,3,3,3]", "f32[2,8,5,5]",
                  "window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, "
                  "operand_precision={highest,highest}", 1e-4);
}

TEST(ConvPlanGpu, NhwcF16GroupedMatchesCpu) {
  CheckAgainstCpu("f16[2,8,8,4]", "f16[4,3,3,2]", "f16[2,6,6,4]",
                  "window={size=3x3}, dim_labels=b01f_o01i->b01f, feature_group_count=2", 2e-2);
}

}  // namespace
}  // namespace xs::cuda

#else

TEST(ConvLayout, SkippedWithoutCuda) { GTEST_SKIP() << "this xshard was built without CUDA"; }

#endif  // XSHARD_WITH_CUDA
