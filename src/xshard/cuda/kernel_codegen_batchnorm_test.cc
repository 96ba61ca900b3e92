// The batch-norm kernels: training, inference and grad modules (feature dim leading, inner and
// minor; f32, f64, f16, bf16) compile with NVRTC for sm_90 and on the host emulator give the CPU
// executor's results; small cases worked out by hand; and the corpus and tests/data modules with
// batch-norm ops, planned for the GPU and run through RunPlanOnHost.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <cmath>
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

struct BatchNormCase {
  std::string what, text, strategy;
};

// batch-norm-<op> of x = t<dims> with feature dim `fi` (F features), the per-feature operands
// and the results each op takes.
std::string BatchNorm(const std::string& op, const std::string& t, const std::string& dims, int64_t features, int fi,
                      const std::string& epsilon = "0.001") {
  const std::string x = t + dims, v = t + "[" + std::to_string(features) + "]";
  std::string text = "HloModule m\nENTRY e {\n  x = " + x + " parameter(0)\n  p1 = " + v +
                     " parameter(1)\n  p2 = " + v + " parameter(2)\n";
  std::string call;
  if (op == "training") {
    call = "(" + x + ", " + v + ", " + v + ") batch-norm-training(x, p1, p2)";
  } else {
    text += "  p3 = " + v + " parameter(3)\n  p4 = " + (op == "grad" ? x : v) + " parameter(4)\n";
    call = op == "grad" ? "(" + x + ", " + v + ", " + v + ") batch-norm-grad(x, p1, p2, p3, p4)"
                        : x + " batch-norm-inference(x, p1, p2, p3, p4)";
  }
  return text + "  ROOT r = " + call + ", epsilon=" + epsilon + ", feature_index=" + std::to_string(fi) + "\n}\n";
}

std::vector<BatchNormCase> BatchNormCases() {
  const std::string tr = "batch_norm_training_block_per_feature", gr = "batch_norm_grad_block_per_feature";
  return {
      {"training f32 NCHW, 12 features (a grid-stride loop on the emulator)",
       BatchNorm("training", "f32", "[4,12,3,5]", 12, 1), tr},
      {"training f32 NHWC, 40 features (32 per block, then 8)", BatchNorm("training", "f32", "[2,5,5,40]", 40, 3), tr},
      {"training f32, 400 elements per feature", BatchNorm("training", "f32", "[40,3,10]", 3, 1, "1e-05"), tr},
      {"training bf16, feature dim inner", BatchNorm("training", "bf16", "[6,4,5]", 4, 1), tr},
      {"training f16, feature dim leading", BatchNorm("training", "f16", "[3,50]", 3, 0), tr},
      {"training f64 NHWC, 3 features", BatchNorm("training", "f64", "[4,4,3]", 3, 2), tr},
      {"inference f32 NCHW", BatchNorm("inference", "f32", "[3,5,4,4]", 5, 1), "elementwise"},
      {"inference bf16, feature dim 2 of 4", BatchNorm("inference", "bf16", "[2,3,6,4]", 6, 2), "elementwise"},
      {"grad f32 NCHW", BatchNorm("grad", "f32", "[4,6,3,5]", 6, 1), gr},
      {"grad bf16, feature dim leading", BatchNorm("grad", "bf16", "[5,8,3]", 5, 0), gr},
      {"grad f16 NHWC, 3 features (2 per block, then 1)", BatchNorm("grad", "f16", "[4,5,3]", 3, 2), gr},
  };
}

// x (and grad_output) around 1 so that the mean matters; per-feature operands (scale, offset,
// mean, variance) positive.
std::vector<Array> Arguments(const Executable& e, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> real(-1.0, 1.0), positive(0.25, 1.5);
  std::vector<Array> args;
  for (const Shape& s : e.argument_shapes()) {
    Array a(s);
    for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, s.rank() == 1 ? positive(rng) : 1 + 2 * real(rng));
    args.push_back(std::move(a));
  }
  return args;
}

// Arguments(exe, rng) for each module in turn.
auto ArgumentsFrom(std::mt19937_64& rng) {
  return [&rng](const testing::PlannedModule& p, size_t) { return Arguments(*p.exe, rng); };
}

TEST(KernelCodegenBatchNorm, KernelsCompileForSm90AndMatchTheCpuOnTheHost) {
  std::vector<testing::PlannedModule> planned;
  std::vector<GeneratedKernel> all;
  for (const BatchNormCase& c : BatchNormCases()) {
    StatusOr<testing::PlannedModule> p = testing::PlanForHost(c.what, c.text);
    ASSERT_TRUE(p.ok()) << p.status().message();
    const Instruction& root = *p->module->entry()->root();
    StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(root, /*in_place=*/false);
    ASSERT_TRUE(ks.ok()) << c.what << ": " << ks.status().message();
    ASSERT_EQ(ks->size(), 1u) << c.what;
    EXPECT_EQ((*ks)[0].strategy, c.strategy) << c.what;
    const int results = root.shape().IsTuple() ? root.shape().tuple_size() : 1;
    EXPECT_EQ((*ks)[0].num_pointers, static_cast<int>(root.operand_count()) + results) << c.what;
    all.push_back((*ks)[0]);
    planned.push_back(std::move(*p));
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost({}, all);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(11);
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(planned, **host, ArgumentsFrom(rng)), ::testing::IsEmpty());
}

std::vector<Array> RunByHand(const std::string& text, const std::vector<std::vector<double>>& values) {
  StatusOr<std::vector<Array>> got = testing::RunRootOnHost(text, [&](const Executable& e) {
    std::vector<Array> args;
    for (size_t p = 0; p < values.size(); ++p) {
      Array a(e.argument_shapes()[p]);
      for (size_t i = 0; i < values[p].size(); ++i) a.SetDouble(static_cast<int64_t>(i), values[p][i]);
      args.push_back(std::move(a));
    }
    return args;
  });
  EXPECT_TRUE(got.ok()) << got.status().message();
  return got.ok() ? *got : std::vector<Array>{};
}

// x [2,2,1,2] with features minor: feature 0 holds 1 3 5 7, feature 1 holds 2 4 6 8: means 4
// and 5, biased variances (9 + 1 + 1 + 9) / 4 = 5; x = 1 normalizes to (1 - 4) / sqrt(5.001) *
// scale 2 + offset 1.
TEST(KernelCodegenBatchNorm, TrainingAsWorkedOutByHand) {
  const std::vector<Array> r =
      RunByHand(BatchNorm("training", "f32", "[2,2,1,2]", 2, 3), {{1, 2, 3, 4, 5, 6, 7, 8}, {2, 3}, {1, 2}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].GetDouble(0), 4);
  EXPECT_EQ(r[1].GetDouble(1), 5);
  EXPECT_EQ(r[2].GetDouble(0), 5);
  EXPECT_EQ(r[2].GetDouble(1), 5);
  const double sd = std::sqrt(5.001);
  const double want[] = {-3 / sd * 2 + 1, -3 / sd * 3 + 2, -1 / sd * 2 + 1, -1 / sd * 3 + 2,
                         1 / sd * 2 + 1,  1 / sd * 3 + 2,  3 / sd * 2 + 1,  3 / sd * 3 + 2};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(r[0].GetDouble(i), want[i], 1e-6) << "element " << i;
}

// One feature, x = 1 2 6 with mean 3, variance 1, epsilon 0: x_hat = -2 -1 3; dy = 1 0 2 gives
// grad_offset 3, grad_scale -2 + 6 = 4 and grad_x = 2 * (dy - 3/3 - x_hat * 4/3) = 16/3 2/3 -6.
TEST(KernelCodegenBatchNorm, GradAsWorkedOutByHand) {
  const std::vector<Array> r =
      RunByHand(BatchNorm("grad", "f32", "[3,1]", 1, 1, "0"), {{1, 2, 6}, {2}, {3}, {1}, {1, 0, 2}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].GetDouble(0), 4);
  EXPECT_EQ(r[2].GetDouble(0), 3);
  const double want[] = {16.0 / 3, 2.0 / 3, -6};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(r[0].GetDouble(i), want[i], 1e-6) << "element " << i;
}

// x = 1 2 6, mean 3, variance 4, epsilon 0, scale 2, offset 1: (x - 3) / 2 * 2 + 1 = -1 0 4.
TEST(KernelCodegenBatchNorm, InferenceAsWorkedOutByHand) {
  const std::vector<Array> r =
      RunByHand(BatchNorm("inference", "f32", "[3,1]", 1, 1, "0"), {{1, 2, 6}, {2}, {1}, {3}, {4}});
  ASSERT_EQ(r.size(), 1u);
  const double want[] = {-1, 0, 4};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r[0].GetDouble(i), want[i]) << "element " << i;
}

// The corpus and tests/data modules with batch-norm ops: planned for the GPU without an
// unsupported step, and their whole plans, run on the host, match the CPU executor.
TEST(KernelCodegenBatchNorm, ModulesRunThroughTheGpuPlanOnTheHost) {
  std::vector<std::string> paths = {std::string(XSHARD_SOURCE_DIR) + "/tests/data/spmd/batch_norm_shared_gather.hlo"};
  const bool corpus = xs::testing::CorpusAvailable(XSHARD_CORPUS_DIR);
  if (corpus) {
    for (const char* f : {"BatchNormGrad", "BatchNormInference", "BatchNormTraining"}) {
      paths.push_back(std::string(XSHARD_CORPUS_DIR) + "/hlo_parser_test/" + f + ".hlo");
    }
  }
  StatusOr<std::vector<testing::PlannedModule>> planned = testing::PlanFilesForGpu("", paths);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost(*planned);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(13);
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(*planned, **host, ArgumentsFrom(rng)), ::testing::IsEmpty());
  if (!corpus) GTEST_SKIP() << "corpus not found at " << XSHARD_CORPUS_DIR << ": only tests/data ran";
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(KernelCodegenBatchNorm, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif  // XSHARD_WITH_CUDA
