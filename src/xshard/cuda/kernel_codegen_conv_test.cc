// The direct convolution and dot kernels (kernel_codegen_conv.cc) on hand-written modules of the
// forms cuDNN / cuBLASLt refuse: each compiles with NVRTC for sm_90 and, compiled for the host,
// matches the CPU executor (integers bit-exactly); the GPU plan falls back to them only where
// the libraries refuse, naming why. With a GPU, the cases also run on it.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "xshard/cuda/gpu_executable.h"
#include "xshard/cuda/gpu_executable_plan.h"
#include "xshard/cuda/kernel_codegen.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/cuda/platform.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

struct ConvCase {
  std::string name, params, root;
};

std::string ModuleText(const ConvCase& c) {
  return "HloModule " + c.name + "\nENTRY e {\n" + c.params + "  ROOT r = " + c.root + "\n}\n";
}

// Forms cuDNN or cuBLASLt refuse, and some they take (run here through the direct kernels too).
std::vector<ConvCase> ConvCases() {
  return {
      {"transposed", "  x = f32[2,5,5,3] parameter(0)\n  k = f32[3,3,3,4] parameter(1)\n",
       "f32[2,10,10,4] convolution(x, k), window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f"},
      {"strided_transposed", "  x = f32[1,3,4,7] parameter(0)\n  k = f32[4,3,3,3] parameter(1)\n",
       "f32[1,4,6,11] convolution(x, k), window={size=3x3 stride=2x1 pad=2_1x1_1 lhs_dilate=3x2 rhs_dilate=1x2}, "
       "dim_labels=bf01_oi01->bf01"},
      {"asymmetric_negative_pad", "  x = f32[1,8,7,2] parameter(0)\n  k = f32[2,3,2,3] parameter(1)\n",
       "f32[1,5,5,3] convolution(x, k), window={size=2x3 stride=2x1 pad=2_0x-1_1}, dim_labels=b01f_01io->b01f"},
      {"reversal", "  x = f32[2,6,5,3] parameter(0)\n  k = f32[3,2,3,4] parameter(1)\n",
       "f32[2,6,4,4] convolution(x, k), window={size=3x2 pad=1_1x0_0 rhs_reversal=1x1}, dim_labels=b01f_01io->b01f"},
      {"feature_groups", "  x = f32[2,6,6,4] parameter(0)\n  k = f32[3,3,2,6] parameter(1)\n",
       "f32[2,4,2,6] convolution(x, k), window={size=3x3 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f, "
       "feature_group_count=2"},
      // The weight gradient of a conv with feature_group_count=2 (x [2,6,6,4], kernel [3,3,2,4]).
      {"batch_groups", "  x = f32[2,6,6,4] parameter(0)\n  dy = f32[2,4,4,4] parameter(1)\n",
       "f32[3,3,2,4] convolution(x, dy), window={size=4x4}, dim_labels=f01b_i01o->01bf, batch_group_count=2"},
      {"batch_groups_f16", "  x = f16[4,5,5,3] parameter(0)\n  k = f16[3,3,3,6] parameter(1)\n",
       "f16[2,3,3,6] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=2"},
      {"one_d", "  x = f32[2,10,3] parameter(0)\n  k = f32[3,3,4] parameter(1)\n",
       "f32[2,5,4] convolution(x, k), window={size=3 stride=2 pad=1_1}, dim_labels=b0f_0io->b0f"},
      {"four_d", "  x = f32[1,3,4,3,3,2] parameter(0)\n  k = f32[2,2,2,2,2,3] parameter(1)\n",
       "f32[1,2,3,2,2,3] convolution(x, k), window={size=2x2x2x2}, dim_labels=b0123f_0123io->b0123f"},
      {"s32", "  x = s32[1,6,6,2] parameter(0)\n  k = s32[3,3,2,3] parameter(1)\n",
       "s32[1,4,6,3] convolution(x, k), window={size=3x3 pad=0_0x1_1}, dim_labels=b01f_01io->b01f"},
      {"s8_to_s32", "  x = s8[2,7,5,4] parameter(0)\n  k = s8[3,2,4,3] parameter(1)\n",
       "s32[2,5,4,3] convolution(x, k), window={size=3x2}, dim_labels=b01f_01io->b01f"},
      {"bf16", "  x = bf16[2,7,7,4] parameter(0)\n  k = bf16[3,3,4,8] parameter(1)\n",
       "bf16[2,7,7,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"},
      // >= 32 input features and >= 16 outputs along the last spatial dim: the CPU's per-tap GEMMs.
      {"tap_gemm", "  x = f32[2,4,18,32] parameter(0)\n  k = f32[3,3,32,4] parameter(1)\n",
       "f32[2,4,18,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"},
      {"f64_long", "  x = f64[1,9,9,40] parameter(0)\n  k = f64[9,9,40,2] parameter(1)\n",
       "f64[1,1,1,2] convolution(x, k), window={size=9x9}, dim_labels=b01f_01io->b01f"},
      {"dot_s32_batch", "  a = s32[3,4,5] parameter(0)\n  b = s32[3,5,6] parameter(1)\n",
       "s32[3,4,6] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
       "rhs_contracting_dims={1}"},
      {"dot_s8_to_s32", "  a = s8[7,9] parameter(0)\n  b = s8[9,5] parameter(1)\n",
       "s32[7,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
      {"dot_two_contracting", "  a = s8[4,3,5] parameter(0)\n  b = s8[5,2,3] parameter(1)\n",
       "s32[4,2] dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={2,0}"},
      {"dot_mixed_f32", "  a = f16[6,8] parameter(0)\n  b = f32[8,3] parameter(1)\n",
       "f32[6,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
      {"gemm_f32", "  a = f32[8,300] parameter(0)\n  b = f32[300,4] parameter(1)\n",
       "f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
  };
}

ConvCase Named(const std::string& name) {
  for (const ConvCase& c : ConvCases()) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no case " << name;
  return {};
}

// Integers over their whole range (products and sums wrap), floats in [-1, 1].
Array RandomArray(const Shape& shape, std::mt19937_64& rng) {
  Array a(shape);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  for (int64_t k = 0; k < a.num_elements(); ++k) {
    if (shape.dtype() == DType::kS8) {
      a.SetDouble(k, static_cast<double>(static_cast<int8_t>(rng())));
    } else if (shape.dtype() == DType::kS32) {
      a.SetDouble(k, static_cast<double>(static_cast<int32_t>(rng())));
    } else {
      a.SetDouble(k, real(rng));
    }
  }
  return a;
}

struct Planned {
  std::string text;
  std::unique_ptr<Module> module;
  std::unique_ptr<Executable> exe;
};

std::vector<Planned> PlanCases() {
  std::vector<Planned> out;
  for (const ConvCase& c : ConvCases()) {
    const std::string text = ModuleText(c);
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, c.name);
    EXPECT_TRUE(m.ok()) << c.name << ": " << m.status().message();
    if (!m.ok()) continue;
    StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
    EXPECT_TRUE(e.ok()) << c.name << ": " << e.status().message();
    if (!e.ok()) continue;
    out.push_back({text, std::move(*m), std::move(*e)});
  }
  return out;
}

TEST(KernelCodegenConv, DirectKernelsCompileForSm90AndMatchTheCpuOnTheHost) {
  std::vector<Planned> planned = PlanCases();
  ASSERT_EQ(planned.size(), ConvCases().size());
  std::vector<GeneratedKernel> kernels;
  for (const Planned& p : planned) {
    testing::ModuleKernels mk;
    testing::CollectKernels(*p.exe, mk);
    for (const auto& [why, n] : mk.refused) ADD_FAILURE() << why << "\n" << p.text;
    const Opcode op = p.module->entry()->root()->opcode();
    const std::string want = op == Opcode::kDot ? "dot_direct" : "conv_direct";
    int direct = 0;
    for (GeneratedKernel& k : mk.kernels) {
      direct += k.strategy == want;
      kernels.push_back(std::move(k));
    }
    EXPECT_GE(direct, 1) << p.text;
  }
  {
    testing::NoDiskCache no_cache;  // every kernel really goes through NVRTC
    const Status compiled = testing::CompileAll(kernels, 64);
    EXPECT_TRUE(compiled.ok()) << compiled.message().substr(0, 4000);
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(kernels);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(11);
  for (const Planned& p : planned) {
    for (int trial = 0; trial < 2; ++trial) {
      std::vector<Array> args;
      for (const Shape& s : p.exe->argument_shapes()) args.push_back(RandomArray(s, rng));
      StatusOr<std::vector<Array>> want = p.exe->Run(args);
      ASSERT_TRUE(want.ok()) << want.status().message() << "\n" << p.text;
      StatusOr<std::vector<Array>> got = testing::RunOnHost(*p.exe, args, **host);
      ASSERT_TRUE(got.ok()) << got.status().message() << "\n" << p.text;
      ASSERT_EQ(got->size(), want->size());
      for (size_t i = 0; i < want->size(); ++i) {
        const std::string diff = testing::Compare((*got)[i], (*want)[i]);
        EXPECT_TRUE(diff.empty()) << diff << "\n" << p.text;
      }
    }
  }
}

// On a GPU (skipped here): the same cases through NVRTC and the device.
TEST(KernelCodegenConv, DirectKernelsMatchTheCpuOnAGpu) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << NoGpuReason();
  std::mt19937_64 rng(12);
  for (const Planned& p : PlanCases()) {
    std::vector<Array> args;
    for (const Shape& s : p.exe->argument_shapes()) args.push_back(RandomArray(s, rng));
    StatusOr<std::vector<Array>> want = p.exe->Run(args);
    ASSERT_TRUE(want.ok()) << want.status().message() << "\n" << p.text;
    StatusOr<std::vector<Array>> got = testing::RunOnGpu(*p.exe, args);
    ASSERT_TRUE(got.ok()) << got.status().message() << "\n" << p.text;
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      const std::string diff = testing::Compare((*got)[i], (*want)[i]);
      EXPECT_TRUE(diff.empty()) << diff << "\n" << p.text;
    }
  }
}

// A wrong tap or group offset changes the result: the host run of a kernel generated for a
// reversed window differs from the CPU's convolution without reversal (the comparison can fail).
TEST(KernelCodegenConv, ComparisonSeesAWrongWindow) {
  const ConvCase reversed = Named("reversal");
  ConvCase unreversed = reversed;
  unreversed.root = "f32[2,6,4,4] convolution(x, k), window={size=3x2 pad=1_1x0_0}, dim_labels=b01f_01io->b01f";
  StatusOr<std::unique_ptr<Module>> a = ParseHloModule(ModuleText(reversed), "a");
  StatusOr<std::unique_ptr<Module>> b = ParseHloModule(ModuleText(unreversed), "b");
  ASSERT_TRUE(a.ok() && b.ok());
  StatusOr<std::unique_ptr<Executable>> ea = Executable::Create(**a);
  StatusOr<std::unique_ptr<Executable>> eb = Executable::Create(**b);
  ASSERT_TRUE(ea.ok() && eb.ok());
  testing::ModuleKernels mk;
  testing::CollectKernels(**ea, mk);
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(mk.kernels);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(3);
  std::vector<Array> args;
  for (const Shape& s : (*ea)->argument_shapes()) args.push_back(RandomArray(s, rng));
  StatusOr<std::vector<Array>> got = testing::RunOnHost(**ea, args, **host);
  StatusOr<std::vector<Array>> other = (*eb)->Run(args);
  ASSERT_TRUE(got.ok() && other.ok());
  EXPECT_FALSE(testing::Compare((*got)[0], (*other)[0]).empty());
}

// The GPU plan: cuDNN / cuBLASLt where they take the op, else the direct kernel whose strategy
// says why they refused.
TEST(KernelCodegenConv, GpuPlanFallsBackOnlyWhereTheLibrariesRefuse) {
  const struct {
    std::string name;
    ActionKind kind;
    std::string strategy;  // prefix of the kernel's strategy (kernels only)
  } cases[] = {
      {"transposed", ActionKind::kKernels, "conv_direct (cuDNN: convolution r: lhs_dilate"},
      {"asymmetric_negative_pad", ActionKind::kKernels, "conv_direct (cuDNN: convolution r: padding 2_0"},
      {"batch_groups", ActionKind::kKernels, "conv_direct (cuDNN: convolution r: batch_group_count="},
      {"four_d", ActionKind::kKernels, "conv_direct (cuDNN: convolution r: 4 spatial dims"},
      {"s8_to_s32", ActionKind::kKernels, "conv_direct (cuDNN: convolution r (s8 x s8 -> s32)"},
      {"bf16", ActionKind::kConv, ""},
      {"dot_s8_to_s32", ActionKind::kKernels, "dot_direct (cuBLASLt: integer"},
      {"dot_mixed_f32", ActionKind::kKernels, "dot_direct (cuBLASLt: "},
      {"gemm_f32", ActionKind::kGemm, ""},
  };
  for (const auto& c : cases) {
    const std::string text = ModuleText(Named(c.name));
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, "m");
    ASSERT_TRUE(m.ok()) << m.status().message();
    StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
    ASSERT_TRUE(e.ok()) << e.status().message();
    StatusOr<std::unique_ptr<GpuPlan>> g = GpuPlan::Create(**e);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_TRUE((*g)->Supported().ok()) << (*g)->Supported().message() << "\n" << text;
    const Action* op = nullptr;
    for (const Action& a : (*g)->data().entry->actions) {
      if (a.step->inst == (*m)->entry()->root()) op = &a;
    }
    ASSERT_NE(op, nullptr) << text;
    EXPECT_EQ(op->kind, c.kind) << text;
    if (c.kind != ActionKind::kKernels) continue;
    ASSERT_EQ(op->kernels.size(), 1u) << text;
    EXPECT_EQ(op->kernels[0].kernel.strategy.rfind(c.strategy, 0), 0u) << op->kernels[0].kernel.strategy;
  }
}

// Complex dots have neither a cuBLASLt plan nor a direct kernel: unsupported, naming why.
TEST(KernelCodegenConv, ComplexDotIsRefusedNamingTheType) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(
      "HloModule m\nENTRY e {\n  a = c64[2,3] parameter(0)\n  b = c64[3,2] parameter(1)\n"
      "  ROOT r = c64[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
      "m");
  ASSERT_TRUE(m.ok()) << m.status().message();
  StatusOr<GeneratedKernel> k = GenerateOpKernel(*(*m)->entry()->root());
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(k.status().message().find("c64"), std::string::npos) << k.status().message();
}

}  // namespace
}  // namespace xs::cuda

#else

TEST(KernelCodegenConv, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif
