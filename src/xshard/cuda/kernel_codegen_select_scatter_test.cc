// The select-and-scatter kernels on hand-written modules (max-pool gradients as JAX writes them,
// overlapping and padded windows, a min select, bf16 and s8): every kernel compiles with NVRTC
// for sm_90 and, on the host emulator, gives the CPU executor's results; the result of a small
// case is also checked against values worked out by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/cuda/platform.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

std::string PoolGradient(const std::string& t, const std::string& op, const std::string& src, const std::string& window,
                   const std::string& direction = "GE", const std::string& combine = "add") {
  return "HloModule m\nsel {\n  a = " + t + "[] parameter(0)\n  b = " + t + "[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=" +
         direction + "\n}\nsc {\n  a = " + t + "[] parameter(0)\n  b = " + t + "[] parameter(1)\n  ROOT c = " + t + "[] " + combine +
         "(a, b)\n}\nENTRY e {\n  x = " + t + op + " parameter(0)\n  s = " + t + src + " parameter(1)\n  i = " + t +
         "[] constant(0)\n  ROOT r = " + t + op + " select-and-scatter(x, s, i), window={" + window +
         "}, select=sel, scatter=sc\n}\n";
}

struct CaseScatter {
  std::string what, text, strategy;
};

std::vector<CaseScatter> Cases() {
  return {
      {"max-pool gradient, 2x2 stride 2 (JAX's NHWC)", PoolGradient("f32", "[2,8,8,3]", "[2,4,4,3]", "size=1x2x2x1 stride=1x2x2x1"),
       "select_scatter_atomic_cas"},
      {"overlapping 3x3 stride 2 windows, padded", PoolGradient("f32", "[1,9,9,2]", "[1,5,5,2]", "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0"),
       "select_scatter_atomic_cas"},
      {"min select, 1-D, stride 1", PoolGradient("f32", "[40]", "[38]", "size=3", "LE"), "select_scatter_atomic_cas"},
      {"bf16, overlapping", PoolGradient("bf16", "[4,10]", "[4,4]", "size=1x4 stride=1x2"), "select_scatter_atomic_cas"},
      {"s8, max combine (one thread in order)", PoolGradient("s8", "[6,6]", "[5,5]", "size=2x2", "GE", "maximum"), "select_scatter_serial"},
  };
}

TEST(KernelCodegenSelectScatter, KernelsCompileForSm90AndMatchTheCpuOnTheHost) {
  std::vector<testing::PlannedModule> planned;
  std::vector<GeneratedKernel> all;
  for (const CaseScatter& c : Cases()) {
    StatusOr<testing::PlannedModule> p = testing::PlanForHost(c.what, c.text);
    ASSERT_TRUE(p.ok()) << p.status().message();
    ASSERT_FALSE(p->module->entry()->root()->shape().IsTuple()) << c.what;  // one result
    StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*p->module->entry()->root(), /*in_place=*/false);
    ASSERT_TRUE(ks.ok()) << c.what << ": " << ks.status().message();
    ASSERT_EQ(ks->size(), 2u) << c.what;
    EXPECT_EQ((*ks)[1].strategy, c.strategy) << c.what;
    for (const GeneratedKernel& k : *ks) {
      EXPECT_EQ(k.num_pointers, 4) << c.what;
      all.push_back(k);
    }
    planned.push_back(std::move(*p));
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost({}, all);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> small(-4, 4);  // many ties: the select's order matters
  const auto args = [&](const testing::PlannedModule& p, size_t) {
    std::vector<Array> a;
    for (const Shape& s : p.exe->argument_shapes()) {
      Array x(s);
      for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, small(rng) * (IsFloating(s.dtype()) ? 0.5 : 1.0));
      a.push_back(std::move(x));
    }
    return a;
  };
  // Sums of halves and small integers are exact: bit for bit, whatever the order.
  testing::CheckOptions options;
  options.check = [](size_t, const Array& got, const Array& want) { return testing::CompareAndBits(got, want); };
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(planned, **host, args, options), ::testing::IsEmpty());
}

// x = [1, 5, 5, 2], windows of 2 at stride 1 with GE: windows pick indices 1, 1 (the first of the
// tie: select(5, 5) is true, so the chosen one stays), 2; sources 10, 20, 30 -> [0, 30, 30, 0].
TEST(KernelCodegenSelectScatter, TiesKeepTheFirstElementAsWorkedOutByHand) {
  Array x(Shape(DType::kF32, {4})), s(Shape(DType::kF32, {3}));
  const float xv[] = {1, 5, 5, 2}, sv[] = {10, 20, 30};
  for (int i = 0; i < 4; ++i) x.SetDouble(i, xv[i]);
  for (int i = 0; i < 3; ++i) s.SetDouble(i, sv[i]);
  const std::vector<Array> args = {x, s};
  StatusOr<std::vector<Array>> got =
      testing::RunRootOnHost(PoolGradient("f32", "[4]", "[3]", "size=2"), [&](const Executable&) { return args; });
  ASSERT_TRUE(got.ok()) << got.status().message();
  const double want[] = {0, 30, 30, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ((*got)[0].GetDouble(i), want[i]) << "element " << i;
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(KernelCodegenSelectScatter, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif  // XSHARD_WITH_CUDA
