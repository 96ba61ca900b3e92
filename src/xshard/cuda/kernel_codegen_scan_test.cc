// The scan, map and reduce-precision kernels, and reduce-window's prefix scans (JAX's cumsum and
// cummax lowering, thread- and block-per-row), on hand-written modules (cumulative sums forward
// and reversed, several inputs and carries of mixed types, carries that swap, scalar slices
// broadcast into a vector carry, bf16; maps of two operands; reduce-precision to bf16-like and
// f16-like formats over special values) and on the XLA corpus modules that use them: every
// kernel compiles with NVRTC for sm_90 and, on the host emulator (the op alone and the whole GPU
// plan), gives the CPU executor's results bit for bit; a few results are worked out by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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

struct ScanCase {
  std::string what, text, strategy;
};

std::string ScanModule(const std::string& body, const std::string& entry) {
  return "HloModule m\n" + body + "\nENTRY e {\n" + entry + "}\n";
}

std::vector<ScanCase> ScanCases() {
  const std::string add =
      "add {\n  x = f32[7] parameter(0)\n  c = f32[7] parameter(1)\n  s = f32[7] add(x, c)\n"
      "  ROOT t = (f32[7], f32[7]) tuple(s, s)\n}\n";
  return {
      {"cumulative sum, one carry",
       ScanModule(add,
                  "  x = f32[5,7] parameter(0)\n  i = f32[7] parameter(1)\n"
                  "  ROOT s = (f32[5,7], f32[7]) scan(x, i), dimensions={0}, num_carries=1, to_apply=add\n"),
       "scan_thread_per_position"},
      {"cumulative sum along the minor dim, reversed",
       ScanModule(
           add,
           "  x = f32[7,6] parameter(0)\n  i = f32[7] parameter(1)\n"
           "  ROOT s = (f32[7,6], f32[7]) scan(x, i), dimensions={1}, num_carries=1, is_reverse=true, to_apply=add\n"),
       "scan_thread_per_position"},
      {"reverse, two inputs (f32, s32) and two carries, a middle scan dim",
       ScanModule(
           "body {\n  x = f32[3,4] parameter(0)\n  y = s32[3,4] parameter(1)\n  c = f32[3,4] parameter(2)\n"
           "  d = s32[3,4] parameter(3)\n  h = f32[] constant(0.5)\n  hb = f32[3,4] broadcast(h), dimensions={}\n"
           "  xc = f32[3,4] multiply(x, c)\n  yf = f32[3,4] convert(y)\n  o = f32[3,4] add(xc, yf)\n"
           "  c2 = f32[3,4] add(hb, o)\n  d2 = s32[3,4] maximum(d, y)\n  dy = s32[3,4] subtract(d2, y)\n"
           "  ROOT t = (f32[3,4], s32[3,4], f32[3,4], s32[3,4]) tuple(o, dy, c2, d2)\n}\n",
           "  x = f32[3,9,4] parameter(0)\n  y = s32[3,9,4] parameter(1)\n  c = f32[3,4] parameter(2)\n"
           "  d = s32[3,4] parameter(3)\n  ROOT s = (f32[3,9,4], s32[3,9,4], f32[3,4], s32[3,4]) scan(x, y, c, d), "
           "dimensions={1}, num_carries=2, is_reverse=true, to_apply=body\n"),
       "scan_thread_per_position"},
      {"carries that swap",
       ScanModule(
           "swap {\n  x = f32[4] parameter(0)\n  a = f32[4] parameter(1)\n  b = f32[4] parameter(2)\n"
           "  s = f32[4] add(a, x)\n  ROOT t = (f32[4], f32[4], f32[4]) tuple(s, b, a)\n}\n",
           "  x = f32[5,4] parameter(0)\n  a = f32[4] parameter(1)\n  b = f32[4] parameter(2)\n"
           "  ROOT s = (f32[5,4], f32[4], f32[4]) scan(x, a, b), dimensions={0}, num_carries=2, to_apply=swap\n"),
       "scan_thread_per_position"},
      {"carries only, no outputs",
       ScanModule("body {\n  x = s32[4] parameter(0)\n  a = s32[4] parameter(1)\n  s = s32[4] multiply(a, x)\n"
                  "  ROOT t = (s32[4]) tuple(s)\n}\n",
                  "  x = s32[5,4] parameter(0)\n  a = s32[4] parameter(1)\n"
                  "  ROOT s = (s32[4]) scan(x, a), dimensions={0}, num_carries=1, to_apply=body\n"),
       "scan_thread_per_position"},
      {"scalar slices broadcast into a vector carry, a scalar output",
       ScanModule(
           "body {\n  x = f32[] parameter(0)\n  c = f32[6] parameter(1)\n  xb = f32[6] broadcast(x), dimensions={}\n"
           "  k = f32[] constant(0.75)\n  kb = f32[6] broadcast(k), dimensions={}\n  m = f32[6] multiply(c, kb)\n"
           "  n = f32[6] add(m, xb)\n  y = f32[] negate(x)\n  ROOT t = (f32[], f32[6]) tuple(y, n)\n}\n",
           "  x = f32[9] parameter(0)\n  c = f32[6] parameter(1)\n"
           "  ROOT s = (f32[9], f32[6]) scan(x, c), dimensions={0}, num_carries=1, to_apply=body\n"),
       "scan_thread_per_position"},
      {"bf16 running maximum and sum with clamp",
       ScanModule("body {\n  x = bf16[8] parameter(0)\n  c = bf16[8] parameter(1)\n  lo = bf16[] constant(-4)\n"
                  "  hi = bf16[] constant(4)\n  s = bf16[8] add(x, c)\n  k = bf16[8] clamp(lo, s, hi)\n"
                  "  m = bf16[8] maximum(x, c)\n  ROOT t = (bf16[8], bf16[8]) tuple(m, k)\n}\n",
                  "  x = bf16[6,8] parameter(0)\n  c = bf16[8] parameter(1)\n"
                  "  ROOT s = (bf16[6,8], bf16[8]) scan(x, c), dimensions={0}, num_carries=1, to_apply=body\n"),
       "scan_thread_per_position"},
  };
}

std::vector<ScanCase> MapCases() {
  return {
      {"map of two f32 operands",
       "HloModule m\nf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
       "  p = f32[] multiply(a, b)\n  m = f32[] maximum(a, b)\n  ROOT r = f32[] add(p, m)\n}\n"
       "ENTRY e {\n  x = f32[33,5] parameter(0)\n  y = f32[33,5] parameter(1)\n"
       "  ROOT r = f32[33,5] map(x, y), dimensions={0,1}, to_apply=f\n}\n",
       "elementwise_vec4"},
      {"map of s32 and f16 operands to f16",
       "HloModule m\nf {\n  a = s32[] parameter(0)\n  b = f16[] parameter(1)\n"
       "  c = f16[] convert(a)\n  ROOT r = f16[] subtract(b, c)\n}\n"
       "ENTRY e {\n  x = s32[37] parameter(0)\n  y = f16[37] parameter(1)\n"
       "  ROOT r = f16[37] map(x, y), dimensions={0}, to_apply=f\n}\n",
       "elementwise_vec4"},
  };
}

std::string ReducePrecisionModule(const std::string& t, int n, int e, int m) {
  return "HloModule m\nENTRY e {\n  x = " + t + "[" + std::to_string(n) + "] parameter(0)\n  ROOT r = " + t + "[" +
         std::to_string(n) + "] reduce-precision(x), exponent_bits=" + std::to_string(e) +
         ", mantissa_bits=" + std::to_string(m) + "\n}\n";
}

// Special values and edge cases of reduce-precision's rounding, followed by random ones.
constexpr int kSpecials = 24;
std::vector<double> Specials() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  return {nan,
          -nan,
          inf,
          -inf,
          0.0,
          -0.0,
          1.0,
          -1.0,
          1.0 + std::ldexp(1, -8),
          1.0 + 3 * std::ldexp(1, -8),  // bf16 ties: to even (down, up)
          1.0 + std::ldexp(1, -11),
          1.0 + 3 * std::ldexp(1, -11),  // f16 ties
          65504.0,
          65520.0,
          70000.0,
          3.4e38,  // f16's max, overflow to inf
          std::ldexp(1, -14),
          std::ldexp(1, -15),
          1e-40,
          -1e-42,  // f16 min normal, denormals
          std::ldexp(1, -126),
          3.14159,
          -2.5e-3,
          1e20};
}

std::vector<ScanCase> ReducePrecisionCases() {
  return {
      {"f32 to bf16-like (8, 7)", ReducePrecisionModule("f32", 100, 8, 7), "elementwise_vec4"},
      {"f32 to f16-like (5, 10)", ReducePrecisionModule("f32", 100, 5, 10), "elementwise_vec4"},
      {"f32 with no mantissa (NaN becomes inf), 3 exponent bits", ReducePrecisionModule("f32", 40, 3, 0),
       "elementwise_vec4"},
      {"f64 to f32-like (8, 23)", ReducePrecisionModule("f64", 60, 8, 23), "elementwise_vec2"},
      {"f16 to (4, 3)", ReducePrecisionModule("f16", 64, 4, 3), "elementwise_vec8"},
      {"bf16 to (5, 2)", ReducePrecisionModule("bf16", 64, 5, 2), "elementwise_vec8"},
  };
}

using Loaded = testing::PlannedModule;

// Plans `text` for the CPU and the GPU (PlanForGpu) into `out`; with a `strategy`, the root op's
// own kernel, which must have that strategy, goes into `op_kernels`.
void Load(const std::string& what, const std::string& text, const std::string& strategy, std::vector<Loaded>& out,
          std::vector<GeneratedKernel>& op_kernels) {
  const Status loaded = testing::PlanWithRootKernel(what, text, strategy, out, op_kernels);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
}

Array RandomArray(const Shape& s, std::mt19937_64& rng, const std::vector<double>& first = {}) {
  Array a(s);
  std::uniform_real_distribution<double> real(-3.0, 3.0);
  std::uniform_int_distribution<int> small(-20, 20);
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (i < static_cast<int64_t>(first.size())) {
      a.SetDouble(i, first[i]);
    } else {
      a.SetDouble(i, IsFloating(s.dtype()) ? real(rng) * std::exp2(small(rng) / 2) : small(rng));
    }
  }
  return a;
}

// Every module on the host emulator, the op alone (RunOnHost; `op_alone`) and as a GPU plan,
// against the CPU executor bit for bit.
void RunAll(const std::vector<Loaded>& loaded, testing::HostKernels& host, bool op_alone,
            const std::vector<double>& first = {}) {
  std::mt19937_64 rng(11);
  testing::CheckOptions options;
  options.op_alone = op_alone;
  options.check = [](size_t, const Array& got, const Array& want) { return testing::CompareAndBits(got, want); };
  const auto args = [&](const Loaded& l, size_t) {
    std::vector<Array> a;
    for (const Shape& s : l.exe->argument_shapes()) a.push_back(RandomArray(s, rng, first));
    return a;
  };
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(loaded, host, args, options), ::testing::IsEmpty());
}

void CompileAndRun(const std::vector<ScanCase>& cases, const std::vector<double>& first = {}) {
  std::vector<Loaded> loaded;
  std::vector<GeneratedKernel> ops;
  for (const ScanCase& c : cases) {
    Load(c.what, c.text, c.strategy, loaded, ops);
    if (::testing::Test::HasFatalFailure()) return;
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost(loaded, ops);
  ASSERT_TRUE(host.ok()) << host.status().message();
  RunAll(loaded, **host, /*op_alone=*/true, first);
}

TEST(KernelCodegenScan, ScansCompileForSm90AndMatchTheCpuBitForBit) { CompileAndRun(ScanCases()); }

TEST(KernelCodegenScan, MapsCompileForSm90AndMatchTheCpuBitForBit) { CompileAndRun(MapCases()); }

TEST(KernelCodegenScan, ReducePrecisionMatchesTheCpuBitForBitOnSpecialValues) {
  std::vector<double> first = Specials();
  ASSERT_EQ(first.size(), static_cast<size_t>(kSpecials));
  CompileAndRun(ReducePrecisionCases(), first);
}

// A signaling NaN comes back quiet with its payload and sign, as the CPU's f32 path (through
// double) gives it: 0x7f800001 -> 0x7fc00001, 0xff800005 -> 0xffc00005.
TEST(KernelCodegenScan, ReducePrecisionQuietsSignalingNaNsAsTheCpu) {
  std::vector<Loaded> loaded;
  std::vector<GeneratedKernel> all;
  Load("(8, 7)", ReducePrecisionModule("f32", 2, 8, 7), "elementwise", loaded, all);
  Load("(5, 10)", ReducePrecisionModule("f32", 2, 5, 10), "elementwise", loaded, all);
  if (HasFatalFailure()) return;
  StatusOr<std::unique_ptr<testing::HostKernels>> host =
      testing::CompileAndBuildForHost(loaded, all, testing::Nvrtc::kSkip);
  ASSERT_TRUE(host.ok()) << host.status().message();
  Array x(Shape(DType::kF32, {2}));
  const uint32_t in[] = {0x7f800001u, 0xff800005u}, want[] = {0x7fc00001u, 0xffc00005u};
  std::memcpy(x.data(), in, sizeof(in));
  for (const Loaded& l : loaded) {
    const std::vector<Array> args = {x};
    StatusOr<std::vector<Array>> cpu = l.exe->Run(args);
    StatusOr<std::vector<Array>> got = testing::RunPlanOnHost(*l.plan, args, **host);
    ASSERT_TRUE(cpu.ok() && got.ok()) << l.name;
    uint32_t c[2], g[2];
    std::memcpy(c, (*cpu)[0].data(), sizeof(c));
    std::memcpy(g, (*got)[0].data(), sizeof(g));
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(c[i], want[i]) << l.name << " CPU element " << i;
      EXPECT_EQ(g[i], want[i]) << l.name << " GPU plan element " << i;
    }
  }
}

// A body that moves elements between positions (a reverse of the slice) or reduces is refused
// with a message naming the scan and the op.
TEST(KernelCodegenScan, BodiesThatAreNotElementwiseAreRefusedByName) {
  const std::string texts[] = {
      ScanModule(
          "body {\n  x = f32[4] parameter(0)\n  c = f32[4] parameter(1)\n  r = f32[4] reverse(x), dimensions={0}\n"
          "  s = f32[4] add(r, c)\n  ROOT t = (f32[4], f32[4]) tuple(s, s)\n}\n",
          "  x = f32[3,4] parameter(0)\n  i = f32[4] parameter(1)\n"
          "  ROOT my_scan = (f32[3,4], f32[4]) scan(x, i), dimensions={0}, num_carries=1, to_apply=body\n"),
      ScanModule("sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
                 "body {\n  x = f32[4] parameter(0)\n  c = f32[] parameter(1)\n  z = f32[] constant(0)\n"
                 "  r = f32[] reduce(x, z), dimensions={0}, to_apply=sum\n  s = f32[] add(r, c)\n"
                 "  ROOT t = (f32[], f32[]) tuple(s, s)\n}\n",
                 "  x = f32[3,4] parameter(0)\n  i = f32[] parameter(1)\n"
                 "  ROOT my_scan = (f32[3], f32[]) scan(x, i), dimensions={0}, num_carries=1, to_apply=body\n"),
  };
  const std::string ops[] = {"reverse 'r'", "reduce 'r'"};
  for (int k = 0; k < 2; ++k) {
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(texts[k]);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_TRUE(Executable::Create(**m).ok()) << "the CPU runs this scan";
    StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*(*m)->entry()->root(), false);
    ASSERT_FALSE(ks.ok()) << ops[k];
    EXPECT_EQ(ks.status().code(), StatusCode::kUnimplemented);
    const std::string msg(ks.status().message());
    EXPECT_NE(msg.find("scan 'my_scan'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(ops[k]), std::string::npos) << msg;
  }
}

// reduce-window as JAX lowers cumsum / cummax (a prefix-scan window: kernels::PrefixScanDim).
std::string CumulativeWindow(const std::string& type, const std::string& dims, const std::string& window) {
  return "HloModule m\nadd {\n  a = " + type + "[] parameter(0)\n  b = " + type + "[] parameter(1)\n  ROOT s = " + type +
         "[] add(a, b)\n}\nENTRY e {\n  x = " + type + "[" + dims + "] parameter(0)\n  z = " + type +
         "[] constant(0)\n  ROOT r = " + type + "[" + dims + "] reduce-window(x, z), window={" + window +
         "}, to_apply=add\n}\n";
}

// A running maximum with the index where it was reached (the earlier index on ties), two
// operands through one reducer.
std::string CumulativeArgmax(const std::string& dims, const std::string& window) {
  return "HloModule m\nargmax {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  bv = f32[] parameter(2)\n"
         "  bi = s32[] parameter(3)\n  gt = pred[] compare(bv, av), direction=GT\n  v = f32[] select(gt, bv, av)\n"
         "  i = s32[] select(gt, bi, ai)\n  ROOT t = (f32[], s32[]) tuple(v, i)\n}\nENTRY e {\n  x = f32[" + dims +
         "] parameter(0)\n  ix = s32[" + dims + "] parameter(1)\n  ninf = f32[] constant(-inf)\n"
         "  none = s32[] constant(-1)\n  ROOT r = (f32[" + dims + "], s32[" + dims + "]) reduce-window(x, ix, ninf, none), "
         "window={" + window + "}, to_apply=argmax\n}\n";
}

// Thread-per-row scans fold each row in the CPU's order (bit for bit, f32 and bf16 alike); the
// block-per-row ones reassociate, which is exact for integers and for the running argmax.
std::vector<ScanCase> CumulativeWindowCases() {
  return {
      {"f32 cumsum along the middle dim (30 rows of 300)",
       CumulativeWindow("f32", "6,300,5", "size=1x300x1 pad=0_0x299_0x0_0"), "reduce_window_scan_thread_per_row"},
      {"f32 cumsum with a window wider than the dim",
       CumulativeWindow("f32", "6,300,5", "size=1x420x1 pad=0_0x419_0x0_0"), "reduce_window_scan_thread_per_row"},
      {"bf16 cumsum along the minor dim", CumulativeWindow("bf16", "4,300", "size=1x300 pad=0_0x299_0"),
       "reduce_window_scan_thread_per_row"},
      {"f32 cumsum of 40000 rows of 8 (rows enough for a thread each)",
       CumulativeWindow("f32", "40000,8", "size=1x8 pad=0_0x7_0"), "reduce_window_scan_thread_per_row"},
      {"s32 cumsum of 3 rows of 2000 along the minor dim",
       CumulativeWindow("s32", "3,2000", "size=1x2000 pad=0_0x1999_0"), "reduce_window_scan_block_per_row"},
      {"s32 cumsum along the major dim, 700 long (chunks of 3, 234 of 256 threads)",
       CumulativeWindow("s32", "700,2,3", "size=700x1x1 pad=699_0x0_0x0_0"), "reduce_window_scan_block_per_row"},
      {"running argmax along the major dim of 1500", CumulativeArgmax("1500,3", "size=1500x1 pad=1499_0x0_0"),
       "reduce_window_scan_block_per_row"},
      {"running argmax of 50 (a thread per row)", CumulativeArgmax("50,3", "size=50x1 pad=49_0x0_0"),
       "reduce_window_scan_thread_per_row"},
  };
}

TEST(KernelCodegenScan, CumulativeWindowsCompileForSm90AndMatchTheCpuBitForBit) {
  CompileAndRun(CumulativeWindowCases());
}

// A long f32 cumsum on one block per row: its sums are reassociated, so they match the CPU's fold
// within float tolerance (inputs in [0, 1): no cancellation to magnify rounding), and its last
// element is the whole row's sum.
TEST(KernelCodegenScan, LongFloatCumulativeSumsOnABlockMatchTheCpuWithinTolerance) {
  std::vector<Loaded> loaded;
  std::vector<GeneratedKernel> ops;
  Load("f32 cumsum of 2 rows of 5000", CumulativeWindow("f32", "2,5000", "size=1x5000 pad=0_0x4999_0"),
       "reduce_window_scan_block_per_row", loaded, ops);
  Load("f32 cumsum of 4097 (chunks of 17 on 241 of 256 threads)",
       CumulativeWindow("f32", "4097", "size=4097 pad=4096_0"), "reduce_window_scan_block_per_row", loaded, ops);
  if (HasFatalFailure()) return;
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost(loaded, ops);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  testing::CheckOptions options;
  options.op_alone = true;
  const auto args = [&](const Loaded& l, size_t) {
    Array a(l.exe->argument_shapes()[0]);
    for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, unit(rng));
    return std::vector<Array>{std::move(a)};
  };
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(loaded, **host, args, options), ::testing::IsEmpty());
  // 1..4097 by hand: the prefix sums n(n+1)/2, exact in f32 below 2^24.
  Array counting(Shape(DType::kF32, {4097}));
  for (int64_t i = 0; i < 4097; ++i) counting.SetDouble(i, static_cast<double>(i + 1));
  StatusOr<std::vector<Array>> got = testing::RunPlanOnHost(*loaded[1].plan, std::vector<Array>{counting}, **host);
  ASSERT_TRUE(got.ok()) << got.status().message();
  for (int64_t i = 0; i < 4097; ++i) {
    ASSERT_EQ((*got)[0].GetDouble(i), static_cast<double>((i + 1) * (i + 2) / 2)) << "element " << i;
  }
}

// Results worked out by hand: cumulative sums of [1, 2, 3, 4] (forward [1, 3, 6, 10], reversed
// [10, 9, 7, 4], carry 10 both ways); map add of [1, 2] and [3, 4] = [4, 6]; reduce-precision
// (8, 7) of 1 + 2^-8 (a tie: to even, 1), 1 + 3 * 2^-8 (a tie: up to 1 + 2^-6) and (5, 10) of
// 65520 (inf), 1e-5 (below f16's smallest normal: 0) and -NaN (NaN).
TEST(KernelCodegenScan, ResultsWorkedOutByHand) {
  const std::string body =
      "add {\n  x = f32[] parameter(0)\n  c = f32[] parameter(1)\n  s = f32[] add(x, c)\n"
      "  ROOT t = (f32[], f32[]) tuple(s, s)\n}\n";
  const std::vector<ScanCase> cases = {
      {"forward",
       ScanModule(body,
                  "  x = f32[4] parameter(0)\n  i = f32[] constant(0)\n  ROOT s = (f32[4], f32[]) "
                  "scan(x, i), dimensions={0}, num_carries=1, to_apply=add\n"),
       ""},
      {"reversed",
       ScanModule(body,
                  "  x = f32[4] parameter(0)\n  i = f32[] constant(0)\n  ROOT s = (f32[4], f32[]) "
                  "scan(x, i), dimensions={0}, num_carries=1, is_reverse=true, to_apply=add\n"),
       ""},
      {"map",
       "HloModule m\nf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n"
       "ENTRY e {\n  x = f32[2] parameter(0)\n  y = f32[2] parameter(1)\n  ROOT r = f32[2] map(x, y), dimensions={0}, "
       "to_apply=f\n}\n",
       ""},
      {"bf16-like", ReducePrecisionModule("f32", 2, 8, 7), ""},
      {"f16-like", ReducePrecisionModule("f32", 3, 5, 10), ""},
  };
  std::vector<Loaded> loaded;
  std::vector<GeneratedKernel> all;
  for (const ScanCase& c : cases) {
    Load(c.what, c.text, "", loaded, all);
    if (HasFatalFailure()) return;
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host =
      testing::CompileAndBuildForHost(loaded, all, testing::Nvrtc::kSkip);
  ASSERT_TRUE(host.ok()) << host.status().message();
  const std::vector<std::vector<std::vector<double>>> args = {
      {{1, 2, 3, 4}},
      {{1, 2, 3, 4}},
      {{1, 2}, {3, 4}},
      {{1 + std::ldexp(1, -8), 1 + 3 * std::ldexp(1, -8)}},
      {{65520, 1e-5, -std::numeric_limits<double>::quiet_NaN()}}};
  const std::vector<std::vector<std::vector<double>>> want = {
      {{1, 3, 6, 10}, {10}},
      {{10, 9, 7, 4}, {10}},
      {{4, 6}},
      {{1, 1 + std::ldexp(1, -6)}},
      {{std::numeric_limits<double>::infinity(), 0, std::numeric_limits<double>::quiet_NaN()}}};
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<Array> in;
    for (const std::vector<double>& v : args[c]) {
      Array a(Shape(DType::kF32, {static_cast<int64_t>(v.size())}));
      for (size_t i = 0; i < v.size(); ++i) a.SetDouble(static_cast<int64_t>(i), v[i]);
      in.push_back(std::move(a));
    }
    StatusOr<std::vector<Array>> got = testing::RunPlanOnHost(*loaded[c].plan, in, **host);
    ASSERT_TRUE(got.ok()) << cases[c].what << ": " << got.status().message();
    ASSERT_EQ(got->size(), want[c].size()) << cases[c].what;
    for (size_t r = 0; r < want[c].size(); ++r) {
      ASSERT_EQ((*got)[r].num_elements(), static_cast<int64_t>(want[c][r].size())) << cases[c].what;
      for (size_t i = 0; i < want[c][r].size(); ++i) {
        const double g = (*got)[r].GetDouble(static_cast<int64_t>(i)), w = want[c][r][i];
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(g)) << cases[c].what << " result " << r << " element " << i << ": " << g;
        } else {
          EXPECT_EQ(g, w) << cases[c].what << " result " << r << " element " << i;
          EXPECT_EQ(std::signbit(g), std::signbit(w)) << cases[c].what << " result " << r << " element " << i;
        }
      }
    }
  }
}

// The XLA corpus modules with scan, map and reduce-precision: planned for the GPU (no step
// refused) and run as a whole plan on the host, against the CPU executor.
TEST(KernelCodegenScan, CorpusModulesRunAsGpuPlansOnTheHost) {
  const std::string dir = XSHARD_CORPUS_DIR;
  if (!xs::testing::CorpusAvailable(dir)) GTEST_SKIP() << "corpus not found at " << dir;
  const std::string files[] = {"hlo_parser_test/Scan.hlo", "shardy_xla_pass_test/ScanAssociative.hlo",
                               "shardy_xla_pass_test/ScanNonAssociative.hlo", "hlo_parser_test/Map.hlo",
                               "hlo_parser_test/ReducePrecision.hlo"};
  StatusOr<std::vector<Loaded>> loaded = testing::PlanFilesForGpu(dir, files);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost(*loaded);
  ASSERT_TRUE(host.ok()) << host.status().message();
  RunAll(*loaded, **host, /*op_alone=*/false);
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(KernelCodegenScan, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif  // XSHARD_WITH_CUDA
