// GemmLayoutFor's mapping of dot forms onto cuBLASLt (expected values worked by hand from the
// column-major identity C^T = rhs^T * lhs^T), and with a GPU a GemmPlan against the CPU reference.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <cmath>
#include <random>

#include "xshard/cuda/gemm.h"
#include "xshard/kernels/dot.h"
#include "xshard/testing/value_or_fail.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

using testing::ValueOrFail;

struct Dot {
  std::unique_ptr<Module> module;
  const Instruction& inst() const { return *module->entry()->root(); }
};

// A module whose root is `out = dot(x, y), <attrs>`.
Dot MakeDot(std::string_view lhs, std::string_view rhs, std::string_view out, std::string_view attrs) {
  const std::string text = StrCat("HloModule m\nENTRY e {\n  x = ", lhs, " parameter(0)\n  y = ", rhs,
                                  " parameter(1)\n  ROOT d = ", out, " dot(x, y), ", attrs, "\n}\n");
  return {ValueOrFail(ParseHloModule(text), text)};
}

GemmLayout LayoutOfGemm(std::string_view lhs, std::string_view rhs, std::string_view out,
                    std::string_view attrs) {
  Dot d = MakeDot(lhs, rhs, out, attrs);
  return ValueOrFail(GemmLayoutFor(d.inst()));
}

TEST(GemmLayout, PlainMatmulReadsBothOperandsInPlace) {
  const GemmLayout g = LayoutOfGemm("f32[4,16]", "f32[16,8]", "f32[4,8]",
                                "lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  EXPECT_EQ(g.ToString(),
            "m=4 n=8 k=16 batch=1 transa=N transb=N lda=8 ldb=16 ldc=8 stride_a=0 stride_b=0 "
            "stride_c=0 types=f32xf32->f32 compute=32F_FAST_TF32 scale=f32 lhs_perm={} rhs_perm={}");
}

TEST(GemmLayout, TransposedRhsFoldsIntoTransa) {
  const GemmLayout g = LayoutOfGemm("f32[64,32]", "f32[48,32]", "f32[64,48]",
                                "lhs_contracting_dims={1}, rhs_contracting_dims={1}");
  EXPECT_EQ(g.m, 64);
  EXPECT_EQ(g.n, 48);
  EXPECT_EQ(g.k, 32);
  EXPECT_TRUE(g.transa);
  EXPECT_EQ(g.lda, 32);
  EXPECT_FALSE(g.transb);
  EXPECT_EQ(g.ldb, 32);
  EXPECT_EQ(g.ldc, 48);
  EXPECT_TRUE(g.lhs_permutation.empty() && g.rhs_permutation.empty());
}

TEST(GemmLayout, TransposedLhsFoldsIntoTransb) {
  const GemmLayout g = LayoutOfGemm("f32[32,64]", "f32[32,48]", "f32[64,48]",
                                "lhs_contracting_dims={0}, rhs_contracting_dims={0}");
  EXPECT_TRUE(g.transb);
  EXPECT_EQ(g.ldb, 64);
  EXPECT_FALSE(g.transa);
  EXPECT_EQ(g.lda, 48);
  EXPECT_TRUE(g.lhs_permutation.empty() && g.rhs_permutation.empty());
}

TEST(GemmLayout, BatchedBf16IsOneStridedCallAccumulatingInF32) {
  const GemmLayout g = LayoutOfGemm("bf16[5,4,16]", "bf16[5,16,8]", "bf16[5,4,8]",
                                "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                                "rhs_contracting_dims={1}");
  EXPECT_EQ(g.ToString(),
            "m=4 n=8 k=16 batch=5 transa=N transb=N lda=8 ldb=16 ldc=8 stride_a=128 stride_b=64 "
            "stride_c=32 types=bf16xbf16->bf16 compute=32F scale=f32 lhs_perm={} rhs_perm={}");
}

TEST(GemmLayout, BatchDimNotLeadingAsksForAPermutation) {
  const GemmLayout g = LayoutOfGemm("f32[4,5,16]", "f32[5,16,8]", "f32[5,4,8]",
                                "lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                                "rhs_contracting_dims={1}");
  EXPECT_EQ(g.lhs_permutation, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_TRUE(g.rhs_permutation.empty());
  EXPECT_EQ(g.batch, 5);
  EXPECT_FALSE(g.transb);
  EXPECT_EQ(g.stride_b, 64);
}

TEST(GemmLayout, VectorTimesMatrix) {
  const GemmLayout g = LayoutOfGemm("f16[16]", "f16[16,8]", "f32[8]",
                                "lhs_contracting_dims={0}, rhs_contracting_dims={0}");
  EXPECT_EQ(g.m, 1);
  EXPECT_EQ(g.n, 8);
  EXPECT_EQ(g.k, 16);
  EXPECT_EQ(g.ldb, 16);
  EXPECT_EQ(g.lda, 8);
  EXPECT_EQ(g.ldc, 8);
  EXPECT_EQ(g.out_type, DType::kF32);
  EXPECT_EQ(g.compute, GemmCompute::k32F);
}

TEST(GemmLayout, MatrixTimesVector) {
  const GemmLayout g = LayoutOfGemm("f32[4,16]", "f32[16]", "f32[4]",
                                "lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  EXPECT_EQ(g.n, 1);
  EXPECT_EQ(g.ldc, 1);
  EXPECT_EQ(g.m, 4);
  EXPECT_TRUE(g.lhs_permutation.empty() && g.rhs_permutation.empty());
}

TEST(GemmLayout, ContractingDimsInOppositeOrdersPermuteOneOperand) {
  // Pairs lhs1<->rhs1 (3) and lhs2<->rhs0 (4): in lhs memory order the rhs reads k as (1, 0).
  const GemmLayout g = LayoutOfGemm("f32[2,3,4]", "f32[4,3,5]", "f32[2,5]",
                                "lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}");
  EXPECT_EQ(g.k, 12);
  EXPECT_EQ(g.m, 2);
  EXPECT_EQ(g.n, 5);
  EXPECT_TRUE(g.lhs_permutation.empty());
  EXPECT_EQ(g.rhs_permutation, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_FALSE(g.transa);
  EXPECT_EQ(g.lda, 5);
}

TEST(GemmLayout, UnitDimsDoNotForceACopy) {
  const GemmLayout g = LayoutOfGemm("f32[1,4,1,16]", "f32[16,8]", "f32[1,4,1,8]",
                                "lhs_contracting_dims={3}, rhs_contracting_dims={0}");
  EXPECT_EQ(g.m, 4);
  EXPECT_TRUE(g.lhs_permutation.empty());
}

TEST(GemmLayout, FreeDimSplitByContractingDimIsPermuted) {
  const GemmLayout g = LayoutOfGemm("f32[3,16,4]", "f32[16,8]", "f32[3,4,8]",
                                "lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  EXPECT_EQ(g.lhs_permutation, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(g.m, 12);
}

TEST(GemmLayout, PrecisionDecidesTf32LikeXlaGpu) {
  const char* kAttrs = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";
  EXPECT_EQ(LayoutOfGemm("f32[4,16]", "f32[16,8]", "f32[4,8]",
                     StrCat(kAttrs, ", operand_precision={highest,highest}")).compute,
            GemmCompute::k32F);
  EXPECT_EQ(LayoutOfGemm("f32[4,16]", "f32[16,8]", "f32[4,8]",
                     StrCat(kAttrs, ", operand_precision={default,highest}")).compute,
            GemmCompute::k32F);
  EXPECT_EQ(LayoutOfGemm("f32[4,16]", "f32[16,8]", "f32[4,8]",
                     StrCat(kAttrs, ", operand_precision={high,high}")).compute,
            GemmCompute::k32FFastTF32);
  const GemmLayout f64 = LayoutOfGemm("f64[4,16]", "f64[16,8]", "f64[4,8]", kAttrs);
  EXPECT_EQ(f64.compute, GemmCompute::k64F);
  EXPECT_EQ(f64.scale_type, DType::kF64);
  const GemmLayout bf = LayoutOfGemm("bf16[4,16]", "bf16[16,8]", "f32[4,8]", kAttrs);
  EXPECT_EQ(bf.compute, GemmCompute::k32F);
  EXPECT_EQ(bf.out_type, DType::kF32);
}

TEST(GemmLayout, EmptyContractionHasKZero) {
  const GemmLayout g = LayoutOfGemm("f32[4,0]", "f32[0,8]", "f32[4,8]",
                                "lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  EXPECT_EQ(g.k, 0);
  EXPECT_EQ(g.m * g.n, 32);
}

TEST(GemmLayout, UnsupportedTypesNameTheFallback) {
  const char* kAttrs = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";
  Dot ints = MakeDot("s8[4,16]", "s8[16,8]", "s32[4,8]", kAttrs);
  StatusOr<GemmLayout> s = GemmLayoutFor(ints.inst());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.status().message(), "integer dot d (s8 x s8 -> s32) has no cuBLASLt form: it needs "
                                  "the fallback dot kernel");
  Dot f32_to_bf16 = MakeDot("f32[4,16]", "f32[16,8]", "bf16[4,8]", kAttrs);
  s = GemmLayoutFor(f32_to_bf16.inst());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("f32 -> f32"), std::string::npos) << s.status().message();
}

// With a GPU: random operands, GemmPlan against the CPU's naive dot (in f64), relative error
// within each type's tolerance (TF32 keeps 10 mantissa bits: 2^-10 relative per product).
void CheckAgainstCpuGemm(std::string_view lhs, std::string_view rhs, std::string_view out,
                     std::string_view attrs, double tol) {
  StatusOr<int> n = DeviceCount();
  if (!n.ok()) {
    GTEST_SKIP() << NoGpuReason();
  }
  Dot d = MakeDot(lhs, rhs, out, attrs);
  const DeviceInfo gpu = ValueOrFail(GetDeviceInfo(0));
  GemmPlan plan = ValueOrFail(GemmPlan::Create(d.inst(), gpu));
  ASSERT_TRUE(plan.lhs_permutation().empty() && plan.rhs_permutation().empty());
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  auto random = [&](const Shape& s) {
    Array a = Array::Full(DType::kF64, s.dims(), 0);
    for (int64_t i = 0; i < a.num_elements(); ++i) reinterpret_cast<double*>(a.data())[i] = u(rng);
    return a.Convert(s.dtype());
  };
  Array x = random(d.inst().operand(0)->shape()), y = random(d.inst().operand(1)->shape());
  Array want = ValueOrFail(kernels::DotGeneralReference(x.Convert(DType::kF64), y.Convert(DType::kF64),
                                                        *d.inst().attrs().dot, DType::kF64));
  void *dx = nullptr, *dy = nullptr, *dout = nullptr, *ws = nullptr;
  const int64_t out_bytes = d.inst().shape().byte_size();
  ASSERT_EQ(cudaMalloc(&dx, x.byte_size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, y.byte_size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, out_bytes), cudaSuccess);
  if (plan.workspace_bytes() > 0) {
    ASSERT_EQ(cudaMalloc(&ws, plan.workspace_bytes()), cudaSuccess);
  }
  cudaMemcpy(dx, x.data(), x.byte_size(), cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y.data(), y.byte_size(), cudaMemcpyHostToDevice);
  Status run = plan.Run(nullptr, dx, dy, dout, ws);
  ASSERT_TRUE(run.ok()) << run.message();
  Array got = Array::Full(d.inst().shape().dtype(), d.inst().shape().dims(), 0);
  ASSERT_EQ(cudaMemcpy(got.data(), dout, out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (void* p : {dx, dy, dout, ws}) cudaFree(p);
  Array got64 = got.Convert(DType::kF64);
  const double* g = reinterpret_cast<const double*>(got64.data());
  const double* w = reinterpret_cast<const double*>(want.data());
  const double k = std::sqrt(static_cast<double>(x.num_elements()));
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    ASSERT_NEAR(g[i], w[i], tol * k) << "element " << i << " of " << plan.layout().ToString();
  }
}

TEST(GemmPlanGpu, CreateWithoutGpuFailsWithOneLine) {
  if (DeviceCount().ok()) GTEST_SKIP() << "a GPU is present: the no-GPU path is not reachable";
  Dot d = MakeDot("f32[4,16]", "f32[16,8]", "f32[4,8]",
                  "lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  StatusOr<GemmPlan> p = GemmPlan::Create(d.inst(), DeviceInfo{});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message().find('\n'), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("cuda"), std::string::npos) << p.status().message();
}

TEST(GemmPlanGpu, F32HighestMatchesCpu) {
  CheckAgainstCpuGemm("f32[64,96]", "f32[48,96]", "f32[64,48]",
                  "lhs_contracting_dims={1}, rhs_contracting_dims={1}, "
                  "operand_precision={highest,highest}", 1e-5);
}

TEST(GemmPlanGpu, BatchedBf16MatchesCpu) {
  CheckAgainstCpuGemm("bf16[3,32,64]", "bf16[3,64,16]", "f32[3,32,16]",
                  "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                  "rhs_contracting_dims={1}", 1e-3);
}

TEST(GemmPlanGpu, F64TransposedLhsMatchesCpu) {
  CheckAgainstCpuGemm("f64[40,24]", "f64[40,8]", "f64[24,8]",
                  "lhs_contracting_dims={0}, rhs_contracting_dims={0}", 1e-12);
}

}  // namespace
}  // namespace xs::cuda

#else

TEST(GemmLayout, SkippedWithoutCuda) { GTEST_SKIP() << "this xshard was built without CUDA"; }

#endif  // XSHARD_WITH_CUDA
