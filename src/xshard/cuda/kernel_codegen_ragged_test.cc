// The ragged-dot and __op$block_scaled_dot kernels: hand-written modules as JAX writes them
// (jax.lax.ragged_dot for a mixture of experts, the contracting and batch modes, per-batch group
// sizes, f32 / bf16 / f16 / s32, f8 operands with block scales) compile with NVRTC for sm_90 and
// on the host emulator give the CPU executor's results; small cases worked out by hand; and the
// corpus modules with these ops, planned for the GPU and run through RunPlanOnHost.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "xshard/cuda/gpu_executable_plan.h"
#include "xshard/cuda/kernel_codegen.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

// A module whose entry is `params` and one root op; `gs` the group sizes parameter's values.
struct CaseRagged {
  std::string what, text;
  std::vector<int64_t> group_sizes;  // values of parameter 2 (ragged-dot), empty otherwise
  bool exact;                        // bit-identical to the CPU (f64 sums in the CPU's order)
};

std::string Ragged(const std::string& lhs, const std::string& rhs, const std::string& gs, const std::string& out,
                   const std::string& dims) {
  return "HloModule m\nENTRY e {\n  a = " + lhs + " parameter(0)\n  b = " + rhs + " parameter(1)\n  c = " + gs +
         " parameter(2)\n  ROOT d = " + out + " ragged-dot(a, b, c), " + dims + "\n}\n";
}

std::string Scaled(const std::vector<std::string>& operands, const std::string& out) {
  std::string t = "HloModule m\nENTRY e {\n", names;
  for (size_t i = 0; i < operands.size(); ++i) {
    t += "  p" + std::to_string(i) + " = " + operands[i] + " parameter(" + std::to_string(i) + ")\n";
    names += (i ? ", p" : "p") + std::to_string(i);
  }
  return t + "  ROOT d = " + out + " custom-call(" + names + "), custom_call_target=\"__op$block_scaled_dot\"\n}\n";
}

const char* kMoe = "lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}";

std::vector<CaseRagged> CasesRagged() {
  return {
      {"MoE f32, a zero-size group, sizes summing below m",
       Ragged("f32[40,24]", "f32[4,24,20]", "s32[4]", "f32[40,20]", kMoe),
       {7, 0, 20, 9},
       true},
      {"MoE f32, three groups in one row tile, 12 tiles (a grid-stride loop on the emulator)",
       Ragged("f32[130,16]", "f32[3,16,200]", "s32[3]", "f32[130,200]", kMoe),
       {30, 25, 40},
       true},
      {"MoE f32, sizes summing past m",
       Ragged("f32[70,16]", "f32[3,16,33]", "s32[3]", "f32[70,33]", kMoe),
       {30, 25, 40},
       true},
      {"MoE bf16", Ragged("bf16[48,32]", "bf16[4,32,24]", "s32[4]", "bf16[48,24]", kMoe), {16, 0, 8, 20}, false},
      {"MoE bf16 with preferred_element_type=f32",
       Ragged("bf16[96,40]", "bf16[2,40,70]", "s32[2]", "f32[96,70]", kMoe),
       {50, 46},
       false},
      {"MoE f16, s64 group sizes", Ragged("f16[20,8]", "f16[3,8,12]", "s64[3]", "f16[20,12]", kMoe), {5, 5, 5}, false},
      {"MoE with k = 0: zeros", Ragged("f32[5,0]", "f32[2,0,3]", "s32[2]", "f32[5,3]", kMoe), {2, 3}, true},
      {"MoE s32", Ragged("s32[10,6]", "s32[2,6,4]", "s32[2]", "s32[10,4]", kMoe), {4, 6}, true},
      {"ragged contracting dim (a weight gradient)",
       Ragged("f32[12,50]", "f32[50,10]", "s32[3]", "f32[3,12,10]",
              "lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}"),
       {20, 0, 25},
       true},
      {"ragged contracting dim, two contracting dims, sizes past the dim",
       Ragged("f32[6,5,4]", "f32[5,4,7]", "s32[3]", "f32[3,6,7]",
              "lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}, lhs_ragged_dims={1}"),
       {2, 1, 3},
       true},
      {"ragged batch dim: a batched dot",
       Ragged("f32[2,9,10]", "f32[2,10,6]", "u32[2]", "f32[2,9,6]",
              "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, "
              "lhs_ragged_dims={0}"),
       {1, 1},
       true},
      {"batched ragged rows, group sizes per batch",
       Ragged("f32[3,20,8]", "f32[2,3,8,5]", "s32[3,2]", "f32[3,20,5]",
              "lhs_batch_dims={0}, rhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_contracting_dims={2}, "
              "lhs_ragged_dims={1}, rhs_group_dims={0}"),
       {5, 10, 20, 0, 0, 3},
       true},
      {"block_scaled_dot, MXFP8 with batch",
       Scaled({"f8e4m3fn[2,24,64]", "f8e4m3fn[2,40,64]", "f8e8m0fnu[2,24,2]", "f8e8m0fnu[2,40,2]"}, "f32[2,24,40]"),
       {},
       true},
      {"block_scaled_dot, bf16 without scales", Scaled({"bf16[20,48]", "bf16[36,48]"}, "f32[20,36]"), {}, true},
      {"block_scaled_dot, f32 lhs scale over rows and k, bf16 result",
       Scaled({"f32[16,32]", "f32[8,32]", "f32[4,4]"}, "bf16[16,8]"),
       {},
       true},
  };
}

// Floats in [-1, 1] (f8 operands [-2, 2]; scales positive powers of two near 1), small integers;
// parameter 2 of a ragged-dot gets `group_sizes`.
std::vector<Array> Arguments(const Executable& e, const std::vector<int64_t>& group_sizes, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 3), power(-2, 2);
  std::vector<Array> args;
  for (size_t p = 0; p < e.argument_shapes().size(); ++p) {
    const Shape& s = e.argument_shapes()[p];
    Array a(s);
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      if (p == 2 && !group_sizes.empty()) {
        a.SetDouble(i, static_cast<double>(group_sizes[i]));
      } else if (s.dtype() == DType::kF8E8M0FNU) {
        a.SetDouble(i, std::ldexp(1.0, power(rng)));
      } else if (IsFloating(s.dtype())) {
        a.SetDouble(i, real(rng) * (DTypeSize(s.dtype()) == 1 ? 2 : 1));
      } else {
        a.SetDouble(i, small(rng));
      }
    }
    args.push_back(std::move(a));
  }
  return args;
}

TEST(KernelCodegenRagged, KernelsCompileForSm90AndMatchTheCpuOnTheHost) {
  const std::vector<CaseRagged> cases = CasesRagged();
  std::vector<testing::PlannedModule> planned;
  std::vector<GeneratedKernel> all;
  for (const CaseRagged& c : cases) {
    StatusOr<testing::PlannedModule> p = testing::PlanForHost(c.what, c.text);
    ASSERT_TRUE(p.ok()) << p.status().message();
    const Instruction& root = *p->module->entry()->root();
    ASSERT_FALSE(root.shape().IsTuple()) << c.what;  // one result
    StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(root, /*in_place=*/false);
    ASSERT_TRUE(ks.ok()) << c.what << ": " << ks.status().message();
    ASSERT_EQ(ks->size(), 1u) << c.what;
    const bool scaled = root.opcode() == Opcode::kCustomCall;
    EXPECT_EQ((*ks)[0].strategy, scaled ? "block_scaled_dot_tiled" : "ragged_dot_tiled") << c.what;
    EXPECT_EQ((*ks)[0].num_pointers, static_cast<int>(root.operand_count()) + 1) << c.what;
    all.push_back((*ks)[0]);
    planned.push_back(std::move(*p));
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost({}, all);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(5);
  testing::CheckOptions options;
  options.check = [&](size_t c, const Array& got, const Array& want) {
    return cases[c].exact ? testing::CompareAndBits(got, want) : testing::Compare(got, want);
  };
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(
                  planned, **host,
                  [&](const testing::PlannedModule& p, size_t c) { return Arguments(*p.exe, cases[c].group_sizes, rng); },
                  options),
              ::testing::IsEmpty());
}

// Runs `text`'s root kernel on the emulator with `args`; the result.
Array RunByHand(const std::string& text, const std::vector<Array>& args) {
  StatusOr<std::vector<Array>> got = testing::RunRootOnHost(text, [&](const Executable&) { return args; });
  EXPECT_TRUE(got.ok()) << got.status().message();
  return got.ok() ? (*got)[0] : Array(Shape(DType::kF32, {}));
}

Array Values(DType t, const std::vector<int64_t>& dims, const std::vector<double>& v) {
  Array a(Shape(t, dims));
  for (size_t i = 0; i < v.size(); ++i) a.SetDouble(static_cast<int64_t>(i), v[i]);
  return a;
}

// lhs rows [1 2] [3 4] [5 6] [7 8]; expert 0 sums a row, expert 1 subtracts; group sizes {1, 2}:
// row 0 -> 1 + 2 = 3, rows 1 and 2 -> 3 - 4 = -1 and 5 - 6 = -1, row 3 is in no group -> 0.
TEST(KernelCodegenRagged, MixtureOfExpertsAsWorkedOutByHand) {
  const Array out = RunByHand(Ragged("f32[4,2]", "f32[2,2,1]", "s32[2]", "f32[4,1]", kMoe),
                              {Values(DType::kF32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                               Values(DType::kF32, {2, 2, 1}, {1, 1, 1, -1}), Values(DType::kS32, {2}, {1, 2})});
  const double want[] = {3, -1, -1, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.GetDouble(i), want[i]) << "row " << i;
}

// lhs [1 2 3 4] against ones, contracting groups {1, 0, 3}: [1], [], [2 3 4] -> 1, 0, 9.
TEST(KernelCodegenRagged, RaggedContractionAsWorkedOutByHand) {
  const Array out = RunByHand(Ragged("f32[1,4]", "f32[4,1]", "s32[3]", "f32[3,1,1]",
                                     "lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}"),
                              {Values(DType::kF32, {1, 4}, {1, 2, 3, 4}), Values(DType::kF32, {4, 1}, {1, 1, 1, 1}),
                               Values(DType::kS32, {3}, {1, 0, 3})});
  const double want[] = {1, 0, 9};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out.GetDouble(i), want[i]) << "group " << i;
}

// f8 [1.5 2] scaled by 4 -> [6 8]; [0.5 -0.25] scaled by 0.5 -> [0.25 -0.125]: 1.5 - 1 = 0.5.
TEST(KernelCodegenRagged, BlockScaledDotAsWorkedOutByHand) {
  const Array out =
      RunByHand(Scaled({"f8e4m3fn[1,2]", "f8e4m3fn[1,2]", "f8e8m0fnu[1,1]", "f8e8m0fnu[1,1]"}, "f32[1,1]"),
                {Values(DType::kF8E4M3FN, {1, 2}, {1.5, 2}), Values(DType::kF8E4M3FN, {1, 2}, {0.5, -0.25}),
                 Values(DType::kF8E8M0FNU, {1, 1}, {4}), Values(DType::kF8E8M0FNU, {1, 1}, {0.5})});
  EXPECT_EQ(out.GetDouble(0), 0.5);
}

// The corpus modules with ragged-dot or __op$block_scaled_dot: planned for the GPU without an
// unsupported step, and their whole plans, run on the host, match the CPU executor.
TEST(KernelCodegenRagged, CorpusModulesRunThroughTheGpuPlanOnTheHost) {
  if (!xs::testing::CorpusAvailable(XSHARD_CORPUS_DIR)) GTEST_SKIP() << "corpus not found at " << XSHARD_CORPUS_DIR;
  std::vector<std::string> files = {
      "shardy_xla_pass_test/RaggedDotMode1.hlo", "spmd_partitioner_test/RaggedDotBatchModeWithPadding.hlo",
      "spmd_partitioner_test/RaggedDotBatchModeWithoutPadding.hlo",
      "spmd_partitioner_test/RaggedDotContractingMode.hlo", "spmd_partitioner_test/RaggedDotNonContractingMode.hlo"};
  for (const char* mx : {"BatchAndBatch", "BatchAndNonContracting", "BatchNonContractingAndBatchNonContracting",
                         "ContractingAndContracting", "ContractingAndReplicated",
                         "ContractingNonContractingAndContractingNonContracting0",
                         "ContractingNonContractingAndContractingNonContracting1", "NonContractingAndContracting",
                         "ReplicatedAndReplicated0", "ReplicatedAndReplicated1"}) {
    files.push_back(std::string("dot_handler_test/MXCustomCall_") + mx + ".hlo");
  }
  StatusOr<std::vector<testing::PlannedModule>> planned = testing::PlanFilesForGpu(XSHARD_CORPUS_DIR, files);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost(*planned);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(7);
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(
                  *planned, **host, [&](const testing::PlannedModule& p, size_t) { return Arguments(*p.exe, {}, rng); }),
              ::testing::IsEmpty());
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(KernelCodegenRagged, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif  // XSHARD_WITH_CUDA
