// gather and scatter kernels (kernel_codegen_gather.cc) on hand-written modules, run on the host
// emulation (kernel_codegen_test_util.h) against the CPU executor and hand-computed values:
// embedding lookups, clamped starts, batching dims, index vector dims, every index type; scatter
// combiners through atomics, compare-and-swap loops, ordered windows and the serial kernel,
// skipped windows, variadic and in-place scatters. Every kernel also compiles with NVRTC.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/exec/executable.h"
#include "xshard/ir/computation.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

Array Make(DType t, std::vector<int64_t> dims, const std::function<double(int64_t)>& value) {
  Array a(t, std::move(dims));
  for (int64_t k = 0; k < a.num_elements(); ++k) a.SetDouble(k, value(k));
  return a;
}
Array Of(DType t, std::vector<int64_t> dims, const std::vector<double>& v) {
  return Make(t, std::move(dims), [&](int64_t k) { return v.at(k); });
}
Array Random(DType t, std::vector<int64_t> dims, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(lo, hi);
  return Make(t, std::move(dims), [&](int64_t) { return IsFloating(t) ? pick(rng) * 0.375 : pick(rng); });
}

// A scalar computation `name` of type t: `a op b`, "overwrite" (b), or any root text over a, b.
std::string Combiner(const std::string& name, const std::string& t, const std::string& op) {
  std::string root = op == "overwrite" ? "ROOT c = " + t + "[] parameter(1)" : "ROOT c = " + t + "[] " + op + "(a, b)";
  if (op == "overwrite") return name + " {\n  a = " + t + "[] parameter(0)\n  " + root + "\n}\n";
  return name + " {\n  a = " + t + "[] parameter(0)\n  b = " + t + "[] parameter(1)\n  " + root + "\n}\n";
}

std::string Entry(const std::vector<std::string>& params, const std::string& root) {
  std::string p;
  for (size_t k = 0; k < params.size(); ++k) {
    p += "  p" + std::to_string(k) + " = " + params[k] + " parameter(" + std::to_string(k) + ")\n";
  }
  return "ENTRY e {\n" + p + "  ROOT r = " + root + "\n}\n";
}

std::string Scatter(const std::string& t, const std::string& op, const std::string& operand, const std::string& indices,
                     const std::string& updates, const std::string& dims, const std::string& extra = "") {
  return "HloModule m\n" + Combiner("comb", t, op) +
         Entry({operand, indices, updates}, operand + " scatter(p0, p1, p2), " + dims + extra + ", to_apply=comb");
}

const char* kRows = "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1";

struct Ran {
  std::vector<Array> got, want;
  std::vector<std::string> strategies;
};

// Plans `text`, runs its entry with host-compiled kernels and with the CPU executor, and checks
// that every kernel compiles with NVRTC for sm_90.
Ran RunBoth(const std::string& text, const std::vector<Array>& args) {
  Ran r;
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().message() << "\n" << text;
  if (!m.ok()) return r;
  StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
  EXPECT_TRUE(e.ok()) << e.status().message();
  if (!e.ok()) return r;
  std::vector<GeneratedKernel> ks;
  EXPECT_TRUE(testing::HostRunsEntry(**e, &ks)) << text;
  for (const GeneratedKernel& k : ks) r.strategies.push_back(k.strategy);
  const Status compiled = testing::CompileAll(ks, 50);
  EXPECT_TRUE(compiled.ok()) << compiled.message().substr(0, 3000);
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(ks);
  EXPECT_TRUE(host.ok()) << host.status().message();
  if (!host.ok()) return r;
  StatusOr<std::vector<Array>> want = (*e)->Run(args);
  EXPECT_TRUE(want.ok()) << want.status().message();
  StatusOr<std::vector<Array>> got = testing::RunOnHost(**e, args, **host);
  EXPECT_TRUE(got.ok()) << got.status().message();
  if (!want.ok() || !got.ok()) return r;
  r.want = std::move(*want);
  r.got = std::move(*got);
  EXPECT_EQ(r.got.size(), r.want.size());
  for (size_t i = 0; i < r.got.size() && i < r.want.size(); ++i) {
    const std::string diff = testing::Compare(r.got[i], r.want[i]);
    EXPECT_TRUE(diff.empty()) << "result " << i << ": " << diff << "\n" << text;
  }
  return r;
}

// `got` holds expected(k) at every k.
void ExpectValues(const Ran& r, const std::function<double(int64_t)>& expected, size_t result = 0) {
  ASSERT_GT(r.got.size(), result);
  for (int64_t k = 0; k < r.got[result].num_elements(); ++k) {
    ASSERT_EQ(r.got[result].GetDouble(k), expected(k)) << "element " << k;
  }
}

std::vector<std::string> Strategies(std::initializer_list<const char*> s) { return {s.begin(), s.end()}; }

TEST(GatherKernel, EmbeddingLookupWithAnImplicitIndexVectorDim) {
  const std::string text = "HloModule m\n" + Entry({"f32[10,4]", "s32[5]"},
      "f32[5,4] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
      "slice_sizes={1,4}");
  const std::vector<double> idx = {3, 0, 9, 3, 7};
  Ran r = RunBoth(text, {Make(DType::kF32, {10, 4}, [](int64_t k) { return k + 0.5; }), Of(DType::kS32, {5}, idx)});
  EXPECT_EQ(r.strategies, Strategies({"gather"}));
  ExpectValues(r, [&](int64_t k) { return idx[k / 4] * 4 + k % 4 + 0.5; });
}

TEST(GatherKernel, OutOfRangeStartsAreClampedSoTheSliceFits) {
  const std::string text = "HloModule m\n" + Entry({"s32[6,7]", "s64[3,2]"},
      "s32[3,2,3] gather(p0, p1), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, "
      "slice_sizes={2,3}");
  Ran r = RunBoth(text, {Make(DType::kS32, {6, 7}, [](int64_t k) { return 10 * (k / 7) + k % 7; }),
                     Of(DType::kS64, {3, 2}, {-2, 9, 5, 5, 1, 2})});
  const int starts[3][2] = {{0, 4}, {4, 4}, {1, 2}};  // clamped to [0, 6-2] x [0, 7-3]
  ExpectValues(r, [&](int64_t k) {
    const int64_t b = k / 6, i = k / 3 % 2, j = k % 3;
    return 10.0 * (starts[b][0] + i) + starts[b][1] + j;
  });
}

TEST(GatherKernel, BatchingDimsWithUnsignedByteIndices) {
  const std::string text = "HloModule m\n" + Entry({"f32[3,5,4]", "u8[3,2]"},
      "f32[3,2,4] gather(p0, p1), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, "
      "operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,4}");
  const std::vector<double> idx = {4, 0, 1, 1, 2, 250};  // 250 clamps to 4
  Ran r = RunBoth(text, {Make(DType::kF32, {3, 5, 4}, [](int64_t k) { return k; }), Of(DType::kU8, {3, 2}, idx)});
  ExpectValues(r, [&](int64_t k) {
    const int64_t b = k / 8, i = k / 4 % 2, j = k % 4;
    return b * 20.0 + std::min(4.0, idx[b * 2 + i]) * 4 + j;
  });
}

TEST(GatherKernel, IndexVectorDimZeroAndMultiBlockBf16) {
  const std::string text = "HloModule m\n" + Entry({"f32[4,5]", "s32[2,3]"},
      "f32[3] gather(p0, p1), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=0, "
      "slice_sizes={1,1}");
  Ran r = RunBoth(text, {Make(DType::kF32, {4, 5}, [](int64_t k) { return k; }), Of(DType::kS32, {2, 3}, {0, 3, 1, 4, 2, 7})});
  ExpectValues(r, [](int64_t k) { return std::vector<double>{4, 17, 9}[k]; });  // (0,4), (3,2), (1,4): 7 clamps
  // 300 x 64 results: several blocks, every element through the grid-stride loop.
  const std::string big = "HloModule m\n" + Entry({"bf16[50,64]", "u16[300,1]"},
      "bf16[300,64] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
      "slice_sizes={1,64}");
  RunBoth(big, {Random(DType::kBF16, {50, 64}, -40, 40, 1), Random(DType::kU16, {300, 1}, 0, 60, 2)});
}

TEST(ScatterKernel, AddWithDuplicateIndicesUsesAtomics) {
  const std::vector<double> idx = {0, 2, 0, 5, 2};
  for (const char* t : {"f32", "s32", "u64", "f64"}) {
    const DType dt = *ParseDType(t);
    Ran r = RunBoth(Scatter(t, "add", std::string(t) + "[6,3]", "s32[5,1]", std::string(t) + "[5,3]", kRows),
                {Make(dt, {6, 3}, [](int64_t k) { return 2 * k; }), Of(DType::kS32, {5, 1}, idx),
                 Make(dt, {5, 3}, [](int64_t k) { return k + 1; })});
    ASSERT_EQ(r.strategies.size(), 2u) << t;
    EXPECT_EQ(r.strategies[1], "scatter_atomic") << t;
    ExpectValues(r, [&](int64_t k) {
      double v = 2.0 * k;
      for (int u = 0; u < 5; ++u) v += idx[u] == k / 3 ? u * 3 + k % 3 + 1 : 0;
      return v;
    });
  }
}

TEST(ScatterKernel, MaxAndMultiplyGoThroughAtomicsOrCompareAndSwap) {
  const struct {
    const char *t, *op, *strategy;
  } cases[] = {{"s32", "maximum", "scatter_atomic"}, {"f32", "maximum", "scatter_atomic_cas"},
               {"f64", "minimum", "scatter_atomic_cas"}, {"s64", "minimum", "scatter_atomic"},
               {"f32", "multiply", "scatter_atomic_cas"}, {"s16", "maximum", "scatter_atomic_cas"},
               {"u32", "or", "scatter_atomic"}, {"s64", "and", "scatter_atomic"}};
  for (const auto& c : cases) {
    const DType dt = *ParseDType(c.t);
    const int lo = IsUnsignedInteger(dt) ? 0 : -9;
    Ran r = RunBoth(Scatter(c.t, c.op, std::string(c.t) + "[7,4]", "s32[9,1]", std::string(c.t) + "[9,4]", kRows),
                {Random(dt, {7, 4}, lo, 9, 3), Random(DType::kS32, {9, 1}, 0, 6, 4), Random(dt, {9, 4}, lo, 9, 5)});
    ASSERT_EQ(r.strategies.size(), 2u);
    EXPECT_EQ(r.strategies[1], c.strategy) << c.t << " " << c.op;
  }
}

TEST(ScatterKernel, Bf16AddWithDuplicatesComparesAndSwapsSixteenBits) {
  Ran r = RunBoth(Scatter("bf16", "add", "bf16[5,8]", "s32[12,1]", "bf16[12,8]", kRows),
              {Random(DType::kBF16, {5, 8}, -20, 20, 6), Random(DType::kS32, {12, 1}, 0, 4, 7),
               Random(DType::kBF16, {12, 8}, -20, 20, 8)});
  ASSERT_EQ(r.strategies.size(), 2u);
  EXPECT_EQ(r.strategies[1], "scatter_atomic_cas");
  // 600 rows into 2: sums of 300 values rounded to 8 bits per step depend on the order, so wide
  // windows go in the CPU's order (bit-identical), across several blocks.
  r = RunBoth(Scatter("bf16", "add", "bf16[2,64]", "s32[600,1]", "bf16[600,64]", kRows),
              {Random(DType::kBF16, {2, 64}, -20, 20, 15), Random(DType::kS32, {600, 1}, 0, 1, 16),
               Random(DType::kBF16, {600, 64}, -20, 20, 17)});
  ASSERT_EQ(r.strategies.size(), 2u);
  EXPECT_EQ(r.strategies[1], "scatter_ordered_windows");
  ASSERT_EQ(r.got.size(), 1u);
  for (int64_t k = 0; k < r.got[0].num_elements(); ++k) ASSERT_EQ(r.got[0].GetDouble(k), r.want[0].GetDouble(k)) << k;
}

TEST(ScatterKernel, OverwriteWithUniqueIndices) {
  const std::vector<double> idx = {4, 1, 0};
  for (const std::string extra : {"", ", unique_indices=true"}) {
    Ran r = RunBoth(Scatter("f32", "overwrite", "f32[6,2]", "s32[3,1]", "f32[3,2]", kRows, extra),
                {Make(DType::kF32, {6, 2}, [](int64_t k) { return -k; }), Of(DType::kS32, {3, 1}, idx),
                 Make(DType::kF32, {3, 2}, [](int64_t k) { return 100 + k; })});
    ASSERT_EQ(r.strategies.size(), 2u);
    EXPECT_EQ(r.strategies[1], extra.empty() ? "scatter_overwrite" : "scatter_unique");
    ExpectValues(r, [&](int64_t k) {
      for (int u = 0; u < 3; ++u) {
        if (idx[u] == k / 2) return 100.0 + u * 2 + k % 2;
      }
      return -static_cast<double>(k);
    });
  }
}

TEST(ScatterKernel, WindowsThatDoNotFitAreSkippedWhole) {
  Ran r = RunBoth(Scatter("f32", "add", "f32[5,4]", "s32[4,2]", "f32[4,2,2]",
                      "update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1"),
              {Make(DType::kF32, {5, 4}, [](int64_t) { return 0; }), Of(DType::kS32, {4, 2}, {0, 0, 4, 1, -1, 0, 3, 2}),
               Make(DType::kF32, {4, 2, 2}, [](int64_t k) { return k + 1; })});
  // Window 0 at (0,0) and window 3 at (3,2) fit; (4,1) and (-1,0) do not and change nothing.
  ExpectValues(r, [](int64_t k) {
    const int64_t i = k / 4, j = k % 4;
    if (i < 2 && j < 2) return 1.0 + i * 2 + j;
    if (i >= 3 && j >= 2) return 13.0 + (i - 3) * 2 + (j - 2);
    return 0.0;
  });
}

TEST(ScatterKernel, WindowDimsBeforeScatterDimsWithS64Indices) {
  // updates[j][u] goes to operand[idx[u]][j]: the window dim leads the updates.
  const std::vector<double> idx = {3, 1, 3, -4, 0};
  Ran r = RunBoth(Scatter("f32", "add", "f32[4,3]", "s64[5]", "f32[3,5]",
                          "update_window_dims={0}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"),
                  {Make(DType::kF32, {4, 3}, [](int64_t) { return 0.5; }), Of(DType::kS64, {5}, idx),
                   Make(DType::kF32, {3, 5}, [](int64_t k) { return k + 1; })});
  ExpectValues(r, [&](int64_t k) {
    double v = 0.5;
    for (int u = 0; u < 5; ++u) v += idx[u] == k / 3 ? (k % 3) * 5 + u + 1 : 0;
    return v;
  });
}

TEST(ScatterKernel, BatchingDims) {
  const std::string text = Scatter("f32", "add", "f32[3,5]", "s32[3,2]", "f32[3,2]",
                                   "update_window_dims={}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, "
                                   "input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2");
  const std::vector<double> idx = {4, 4, 0, 2, 7, 1};  // batch 2's 7 is out of bounds: skipped
  Ran r = RunBoth(text, {Make(DType::kF32, {3, 5}, [](int64_t) { return 0; }), Of(DType::kS32, {3, 2}, idx),
                     Make(DType::kF32, {3, 2}, [](int64_t k) { return k + 1; })});
  ExpectValues(r, [&](int64_t k) {
    double v = 0;
    for (int u = 0; u < 2; ++u) v += idx[k / 5 * 2 + u] == k % 5 ? k / 5 * 2 + u + 1 : 0;
    return v;
  });
}

TEST(ScatterKernel, VariadicScatterRunsInTheCpuOrder) {
  // (value, index) pairs keeping the smaller value, the smaller index on ties: argmin.
  const std::string text =
      "HloModule m\nargmin {\n  a = f32[] parameter(0)\n  i = s32[] parameter(1)\n  b = f32[] parameter(2)\n"
      "  j = s32[] parameter(3)\n  lt = pred[] compare(a, b), direction=LT\n  eq = pred[] compare(a, b), direction=EQ\n"
      "  il = pred[] compare(i, j), direction=LT\n  t = pred[] and(eq, il)\n  take = pred[] or(lt, t)\n"
      "  v = f32[] select(take, a, b)\n  k = s32[] select(take, i, j)\n  ROOT r = (f32[], s32[]) tuple(v, k)\n}\n"
      "ENTRY e {\n  p0 = f32[4] parameter(0)\n  p1 = s32[4] parameter(1)\n  p2 = s32[6,1] parameter(2)\n"
      "  p3 = f32[6] parameter(3)\n  p4 = s32[6] parameter(4)\n"
      "  ROOT r = (f32[4], s32[4]) scatter(p0, p1, p2, p3, p4), update_window_dims={}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=argmin\n}\n";
  Ran r = RunBoth(text, {Of(DType::kF32, {4}, {5, 5, 5, 10}), Of(DType::kS32, {4}, {-1, -1, -1, -1}),
                     Of(DType::kS32, {6, 1}, {1, 3, 1, 1, 0, 3}), Of(DType::kF32, {6}, {2, 9, 1, 1, 7, 9}),
                     Of(DType::kS32, {6}, {10, 11, 12, 13, 14, 15})});
  ASSERT_EQ(r.strategies.size(), 2u);
  EXPECT_EQ(r.strategies[1], "scatter_serial");
  ExpectValues(r, [](int64_t k) { return std::vector<double>{5, 1, 5, 9}[k]; }, 0);
  ExpectValues(r, [](int64_t k) { return std::vector<double>{-1, 12, -1, 11}[k]; }, 1);
}

TEST(ScatterKernel, GenericCombinersAndBytesWalkWindowsInOrder) {
  // a + 0.5 * b: not a typed combiner; 64-wide windows: a thread per window offset.
  const std::string half =
      "HloModule m\ncomb {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  h = f32[] constant(0.5)\n"
      "  m = f32[] multiply(b, h)\n  ROOT c = f32[] add(a, m)\n}\n" +
      Entry({"f32[8,64]", "s32[40,1]", "f32[40,64]"}, std::string("f32[8,64] scatter(p0, p1, p2), ") + kRows + ", to_apply=comb");
  Ran r = RunBoth(half, {Random(DType::kF32, {8, 64}, -50, 50, 9), Random(DType::kS32, {40, 1}, 0, 7, 10),
                     Random(DType::kF32, {40, 64}, -50, 50, 11)});
  ASSERT_EQ(r.strategies.size(), 2u);
  EXPECT_EQ(r.strategies[1], "scatter_ordered_windows");
  // The same sizes with add: atomics over several blocks.
  r = RunBoth(Scatter("f32", "add", "f32[8,64]", "s32[40,1]", "f32[40,64]", kRows),
          {Random(DType::kF32, {8, 64}, -50, 50, 9), Random(DType::kS32, {40, 1}, 0, 7, 10),
           Random(DType::kF32, {40, 64}, -50, 50, 11)});
  EXPECT_EQ(r.strategies.at(1), "scatter_atomic");
  // Bytes: u8 add over 32-wide windows, pred or over one-element windows, and s8 windows that an
  // index moves (they overlap: one thread).
  r = RunBoth(Scatter("u8", "add", "u8[4,32]", "s32[9,1]", "u8[9,32]", kRows),
          {Random(DType::kU8, {4, 32}, 0, 200, 12), Random(DType::kS32, {9, 1}, -1, 4, 13), Random(DType::kU8, {9, 32}, 0, 200, 14)});
  EXPECT_EQ(r.strategies.at(1), "scatter_ordered_windows");
  r = RunBoth(Scatter("pred", "or", "pred[6]", "s32[5,1]", "pred[5]",
                  "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"),
          {Of(DType::kPred, {6}, {0, 0, 1, 0, 0, 0}), Of(DType::kS32, {5, 1}, {1, 1, 4, 6, 2}), Of(DType::kPred, {5}, {0, 1, 1, 1, 0})});
  EXPECT_EQ(r.strategies.at(1), "scatter_serial");
  ExpectValues(r, [](int64_t k) { return std::vector<double>{0, 1, 1, 0, 1, 0}[k]; });
  r = RunBoth(Scatter("s8", "add", "s8[10]", "s32[4,1]", "s8[4,3]",
                  "update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"),
          {Make(DType::kS8, {10}, [](int64_t k) { return k; }), Of(DType::kS32, {4, 1}, {0, 2, 1, 8}),
           Make(DType::kS8, {4, 3}, [](int64_t k) { return 10 * (k + 1); })});
  EXPECT_EQ(r.strategies.at(1), "scatter_serial");
  // Windows at 0, 2, 1 (8 does not fit): element 2 gets 30 + 40 + 80 (as s8: wraps).
  ExpectValues(r, [](int64_t k) {
    const int v[10] = {10, 1 + 20 + 70, 2 + 30 + 40 + 80, 3 + 50 + 90, 4 + 60, 5, 6, 7, 8, 9};
    return static_cast<double>(static_cast<int8_t>(v[k]));
  });
}

// In place (the result buffer already holds the operand): only the combine kernel runs.
TEST(ScatterKernel, InPlaceSkipsTheCopy) {
  const std::string text = Scatter("f32", "add", "f32[6,3]", "s32[5,1]", "f32[5,3]", kRows);
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Instruction& root = *(*m)->entry()->root();
  StatusOr<std::vector<GeneratedKernel>> copy = GenerateOpKernels(root, /*in_place=*/false);
  StatusOr<std::vector<GeneratedKernel>> in_place = GenerateOpKernels(root, /*in_place=*/true);
  ASSERT_TRUE(copy.ok() && in_place.ok());
  ASSERT_EQ(copy->size(), 2u);
  ASSERT_EQ(in_place->size(), 1u);
  EXPECT_EQ((*copy)[0].strategy.rfind("elementwise", 0), 0u);
  EXPECT_EQ((*in_place)[0].source.name, (*copy)[1].source.name);
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(*in_place);
  ASSERT_TRUE(host.ok()) << host.status().message();
  Array operand = Make(DType::kF32, {6, 3}, [](int64_t k) { return k; });
  Array indices = Of(DType::kS32, {5, 1}, {5, 0, 5, 9, 1});
  Array updates = Make(DType::kF32, {5, 3}, [](int64_t k) { return 100 * (k + 1); });
  Array result = operand;
  ASSERT_TRUE((*host)->Launch((*in_place)[0], {result.data(), indices.data(), updates.data(), result.data()}).ok());
  ExpectValues(Ran{{result}, {}, {}}, [](int64_t k) {
    // Update rows 1 and 4 land on rows 0 and 1, rows 0 and 2 on row 5; row 3 (index 9) is skipped.
    const double rows[6][3] = {{400, 500, 600}, {1300, 1400, 1500}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0},
                               {100 + 700, 200 + 800, 300 + 900}};
    return k + rows[k / 3][k % 3];
  });
}

// Gather only moves elements, so it takes complex ones (as the prelude's xs_c64 struct; the fft
// suite runs one on the host); scatter combines them and refuses, naming the instruction.
TEST(GatherScatterKernels, GatherMovesComplexScatterRefusesIt) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule("HloModule m\n" + Entry({"c64[10,4]", "s32[5]"},
      "c64[5,4] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
      "slice_sizes={1,4}"));
  ASSERT_TRUE(m.ok()) << m.status().message();
  StatusOr<GeneratedKernel> k = GenerateGatherKernel(*(*m)->entry()->root());
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->strategy, "gather");
  EXPECT_NE(k->body.find("xs_c64"), std::string::npos) << k->body;
  m = ParseHloModule(Scatter("c64", "add", "c64[6,3]", "s32[5,1]", "c64[5,3]", kRows));
  ASSERT_TRUE(m.ok()) << m.status().message();
  StatusOr<std::vector<GeneratedKernel>> ks = GenerateScatterKernels(*(*m)->entry()->root(), false);
  ASSERT_FALSE(ks.ok());
  EXPECT_EQ(ks.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(ks.status().message().find("'r'"), std::string::npos) << ks.status().message();
}

}  // namespace
}  // namespace xs::cuda

#else

TEST(GatherKernel, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif
