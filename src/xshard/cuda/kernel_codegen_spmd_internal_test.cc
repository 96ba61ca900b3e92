// The _SPMDInternalOp_* kernels (RotateRight, MultiRotate, Wrap, MultiSlice, MultiPad) on
// hand-written custom-calls as XLA's SPMD partitioner writes them (several dims, dtypes of 1, 2,
// 4, 8 and 16 bytes, rotations beyond the dim's size, strided slices) and on the XLA corpus modules
// that use them: every kernel compiles with NVRTC for sm_90 and, on the host emulator (the op
// alone and the whole GPU plan), copies exactly what the CPU executor copies; one result of each
// op is worked out by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "xshard/cuda/gpu_executable.h"
#include "xshard/cuda/kernel_codegen.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/ir/computation.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

// custom-call(x[, pad value]) -> result, with `config` as its backend_config.
std::string Call(const std::string& x, const std::string& result, const std::string& target, const std::string& config,
                 const std::string& pad_type = "") {
  std::string text = "HloModule m\nENTRY e {\n  x = " + x + " parameter(0)\n";
  if (!pad_type.empty()) text += "  v = " + pad_type + "[] parameter(1)\n";
  text += "  ROOT r = " + result + " custom-call(x" + (pad_type.empty() ? "" : ", v") +
          "), custom_call_target=\"_SPMDInternalOp_" + target + "\", backend_config=\"" + config + "\"\n}\n";
  return text;
}

struct CaseInternal {
  std::string what, text;
};

std::vector<CaseInternal> CasesInternal() {
  return {
      {"RotateRight f32[12] by 2", Call("f32[12]", "f32[12]", "RotateRight", "dimension=0,amount=2")},
      {"RotateRight s32[3,7] dim 1 by 5", Call("s32[3,7]", "s32[3,7]", "RotateRight", "dimension=1,amount=5")},
      {"RotateRight u8[4,3] dim 0 by 9 (more than the dim)",
       Call("u8[4,3]", "u8[4,3]", "RotateRight", "dimension=0,amount=9")},
      {"RotateRight f64[5] by 0", Call("f64[5]", "f64[5]", "RotateRight", "dimension=0,amount=0")},
      {"MultiRotate f32[12] 1 and 1", Call("f32[12]", "(f32[12], f32[12], f32[12])", "MultiRotate",
                                           "dimension=0,left_amount=1,right_amount=1,bufferize=0")},
      {"MultiRotate bf16[4,5] dim 0, 2 and 0", Call("bf16[4,5]", "(bf16[4,5], bf16[4,5], bf16[4,5])", "MultiRotate",
                                                    "dimension=0,left_amount=2,right_amount=0")},
      {"MultiRotate s16[2,3,6] dim 2, 0 and 3", Call("s16[2,3,6]", "(s16[2,3,6], s16[2,3,6], s16[2,3,6], s16[2,3,6])",
                                                     "MultiRotate", "dimension=2,left_amount=0,right_amount=3")},
      {"Wrap f32[12] 1 and 1", Call("f32[12]", "f32[14]", "Wrap", "dimension=0,left_amount=1,right_amount=1")},
      {"Wrap f64[3,5] dim 1, 2 and 3",
       Call("f64[3,5]", "f64[3,10]", "Wrap", "dimension=1,left_amount=2,right_amount=3")},
      {"Wrap pred[4,2] dim 0, the whole dim left",
       Call("pred[4,2]", "pred[8,2]", "Wrap", "dimension=0,left_amount=4,right_amount=0")},
      {"MultiSlice f64[40] amount 3",
       Call("f64[40]", "(f64[24], f64[24], f64[24], f64[24])", "MultiSlice",
            "dimension=0,amount=3,start_indices=[6],limit_indices=[30],strides=[1],bufferize=0")},
      {"MultiSlice f32[6,20] dim 1 strided",
       Call("f32[6,20]", "(f32[2,5], f32[2,5], f32[2,5])", "MultiSlice",
            "dimension=1,amount=2,start_indices=[1,3],limit_indices=[5,17],strides=[2,3]")},
      {"MultiSlice s8[9,4] dim 0", Call("s8[9,4]", "(s8[6,4], s8[6,4])", "MultiSlice",
                                        "dimension=0,amount=1,start_indices=[2,0],limit_indices=[8,4],strides=[1,1]")},
      {"MultiPad f64[7,6] dim 0 by 1",
       Call("f64[7,6]", "(f64[8,6], f64[8,6])", "MultiPad", "dimension=0,amt=1,bufferize=0", "f64")},
      {"MultiPad s8[4,5] dim 1 by 3", Call("s8[4,5]", "(s8[4,8], s8[4,8])", "MultiPad", "dimension=1,amt=3", "s8")},
      {"MultiPad f16[6] by 0", Call("f16[6]", "(f16[6], f16[6])", "MultiPad", "dimension=0,amt=0", "f16")},
      {"RotateRight c128[5,3] dim 0 by 1 (16-byte elements)",
       Call("c128[5,3]", "c128[5,3]", "RotateRight", "dimension=0,amount=1")},
      {"MultiPad c64[4] by 2", Call("c64[4]", "(c64[6], c64[6])", "MultiPad", "dimension=0,amt=2", "c64")},
  };
}

using Loaded = testing::PlannedModule;

// Plans `text` for the CPU and the GPU (PlanForGpu) into `out`; the op's own kernel
// (`op_kernel`), which must be an index_map, goes into `op_kernels`.
void Load(const std::string& what, const std::string& text, bool op_kernel, std::vector<Loaded>& out,
          std::vector<GeneratedKernel>& op_kernels) {
  const Status loaded = testing::PlanWithRootKernel(what, text, op_kernel ? "index_map" : "", out, op_kernels);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
}

// Distinct values (element i holds about i), so a wrong index shows.
Array Distinct(const Shape& s, std::mt19937_64& rng) {
  Array a(s);
  std::uniform_int_distribution<int> offset(0, 50);
  const int base = offset(rng);
  if (IsComplex(s.dtype())) {  // distinct bytes
    for (int64_t b = 0; b < a.byte_size(); ++b) a.data()[b] = static_cast<std::byte>((base + b * 13) & 0xff);
    return a;
  }
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (s.dtype() == DType::kPred) {
      a.SetDouble(i, (i * 7 + base) % 3 == 0);
    } else if (IsFloating(s.dtype())) {
      a.SetDouble(i, (base + i) * 0.25 - 3);
    } else {
      a.SetDouble(i, (base + i) % 100);
    }
  }
  return a;
}

// Every module on the host emulator (the op alone when `op_alone`, and as a GPU plan) against
// the CPU executor, bit for bit (complex results by their bytes alone).
void RunAllInternal(const std::vector<Loaded>& loaded, testing::HostKernels& host, bool op_alone) {
  std::mt19937_64 rng(5);
  testing::CheckOptions options;
  options.op_alone = op_alone;
  options.check = [](size_t, const Array& got, const Array& want) -> std::string {
    if (!IsComplex(want.dtype())) return testing::CompareAndBits(got, want);
    if (got.byte_size() != want.byte_size() || std::memcmp(got.data(), want.data(), want.byte_size()) != 0) {
      return "the bytes differ";
    }
    return "";
  };
  const auto args = [&](const Loaded& l, size_t) {
    std::vector<Array> a;
    for (const Shape& s : l.exe->argument_shapes()) a.push_back(Distinct(s, rng));
    return a;
  };
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(loaded, host, args, options), ::testing::IsEmpty());
}

TEST(KernelCodegenSpmdInternal, KernelsCompileForSm90AndMatchTheCpuOnTheHost) {
  std::vector<Loaded> loaded;
  std::vector<GeneratedKernel> all;
  for (const CaseInternal& c : CasesInternal()) {
    Load(c.what, c.text, /*op_kernel=*/true, loaded, all);
    if (HasFatalFailure()) return;
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost(loaded, all);
  ASSERT_TRUE(host.ok()) << host.status().message();
  RunAllInternal(loaded, **host, /*op_alone=*/true);
}

// Results worked out by hand on x = [0, 1, 2, 3, 4, 5] (s32):
//   RotateRight amount=2:            [4, 5, 0, 1, 2, 3]
//   MultiRotate left=1, right=1:     [1, 2, 3, 4, 5, 0], x, [5, 0, 1, 2, 3, 4]
//   Wrap left=1, right=2:            [5, 0, 1, 2, 3, 4, 5, 0, 1]
//   MultiSlice amount=1 of [1:4]:    [1, 2, 3], [2, 3, 4]
//   MultiPad amt=2 with 9:           [9, 9, 0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5, 9, 9]
TEST(KernelCodegenSpmdInternal, ResultsWorkedOutByHand) {
  const std::vector<CaseInternal> cases = {
      {"RotateRight", Call("s32[6]", "s32[6]", "RotateRight", "dimension=0,amount=2")},
      {"MultiRotate",
       Call("s32[6]", "(s32[6], s32[6], s32[6])", "MultiRotate", "dimension=0,left_amount=1,right_amount=1")},
      {"Wrap", Call("s32[6]", "s32[9]", "Wrap", "dimension=0,left_amount=1,right_amount=2")},
      {"MultiSlice", Call("s32[6]", "(s32[3], s32[3])", "MultiSlice",
                          "dimension=0,amount=1,start_indices=[1],limit_indices=[4],strides=[1]")},
      {"MultiPad", Call("s32[6]", "(s32[8], s32[8])", "MultiPad", "dimension=0,amt=2", "s32")},
  };
  const std::vector<std::vector<std::vector<int>>> want = {
      {{4, 5, 0, 1, 2, 3}},
      {{1, 2, 3, 4, 5, 0}, {0, 1, 2, 3, 4, 5}, {5, 0, 1, 2, 3, 4}},
      {{5, 0, 1, 2, 3, 4, 5, 0, 1}},
      {{1, 2, 3}, {2, 3, 4}},
      {{9, 9, 0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5, 9, 9}},
  };
  std::vector<Loaded> loaded;
  std::vector<GeneratedKernel> all;
  for (const CaseInternal& c : cases) {
    Load(c.what, c.text, /*op_kernel=*/false, loaded, all);
    if (HasFatalFailure()) return;
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host =
      testing::CompileAndBuildForHost(loaded, all, testing::Nvrtc::kSkip);
  ASSERT_TRUE(host.ok()) << host.status().message();
  const Array x = Array::FromVector<int32_t>({6}, {0, 1, 2, 3, 4, 5});
  const Array nine = Array::FromVector<int32_t>({}, {9});
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<Array> args = {x};
    if (cases[c].what == "MultiPad") args.push_back(nine);
    StatusOr<std::vector<Array>> got = testing::RunPlanOnHost(*loaded[c].plan, args, **host);
    ASSERT_TRUE(got.ok()) << cases[c].what << ": " << got.status().message();
    ASSERT_EQ(got->size(), want[c].size()) << cases[c].what;
    for (size_t r = 0; r < want[c].size(); ++r) {
      ASSERT_EQ((*got)[r].num_elements(), static_cast<int64_t>(want[c][r].size())) << cases[c].what;
      for (size_t i = 0; i < want[c][r].size(); ++i) {
        EXPECT_EQ((*got)[r].GetDouble(static_cast<int64_t>(i)), want[c][r][i])
            << cases[c].what << " result " << r << " element " << i;
      }
    }
  }
}

// Attributes that do not fit the operand are refused as invalid, naming the custom-call.
TEST(KernelCodegenSpmdInternal, BadConfigsAreRefusedByName) {
  const std::string texts[] = {
      Call("f32[4]", "f32[4]", "RotateRight", "dimension=3,amount=1"),
      Call("f32[4]", "f32[9]", "Wrap", "dimension=0,left_amount=5,right_amount=0"),
      Call("f32[4]", "(f32[2], f32[2])", "MultiSlice",
           "dimension=0,amount=1,start_indices=[1],limit_indices=[4],strides=[1]"),
  };
  for (const std::string& text : texts) {
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
    ASSERT_TRUE(m.ok()) << m.status().message();
    StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*(*m)->entry()->root(), false);
    ASSERT_FALSE(ks.ok()) << text;
    EXPECT_EQ(ks.status().code(), StatusCode::kInvalidArgument) << ks.status().message();
    EXPECT_NE(std::string(ks.status().message()).find("custom-call 'r' (_SPMDInternalOp_"), std::string::npos)
        << ks.status().message();
  }
}

// The XLA corpus modules with _SPMDInternalOp_ custom-calls that the CPU executor plans: planned for the GPU (no step
// refused) and run as whole plans on the host, against the CPU executor.
TEST(KernelCodegenSpmdInternal, CorpusModulesRunAsGpuPlansOnTheHost) {
  const std::string dir = XSHARD_CORPUS_DIR;
  if (!xs::testing::CorpusAvailable(dir)) GTEST_SKIP() << "corpus not found at " << dir;
  const std::string files[] = {
      "spmd_partitioner_test/CustomCallMultiPad.hlo",
      "spmd_partitioner_test/CustomCallMultiRotate.hlo",
      "spmd_partitioner_test/CustomCallMultiSlice.hlo",
      "spmd_partitioner_test/CustomCallMultiSlice2.hlo",
      "spmd_partitioner_test/CustomCallMultiSlicePaddingRequiresNoLeftHalo.hlo",
      "spmd_partitioner_test/CustomCallMultiSliceRealWorldPaddingBug.hlo",
      "spmd_partitioner_test/CustomCallRotateRight.hlo",
      // CustomCallWrap.hlo is not here: its f32[20] result does not fit its f32[12] operand with
      // left_amount=1 and right_amount=1 (f32[14]), and the CPU executor refuses it.
  };
  StatusOr<std::vector<Loaded>> loaded = testing::PlanFilesForGpu(dir, files);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost(*loaded);
  ASSERT_TRUE(host.ok()) << host.status().message();
  RunAllInternal(*loaded, **host, /*op_alone=*/false);
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(KernelCodegenSpmdInternal, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif  // XSHARD_WITH_CUDA
