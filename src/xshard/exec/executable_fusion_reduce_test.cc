// Tests of reduces inside fused loops: a reduce of a chain, of an input, of a value also read
// elsewhere, row and column sums (blocked column sums on 1 and 3 threads), max / min / multiply
// combiners, softmax's two reduces sharing their operands' loops; fused and op-by-op runs agree
// bit for bit, and hand-computed values where the sums are exact.
#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "xshard/exec/fusion_test_util.h"

namespace xs {
namespace {

using xs::fusion_test::ExpectFusedEqualsUnfused;
using xs::testing::ParseOrFail;
using xs::fusion_test::RandomArray;

// A module reducing `v` (defined by `body` from parameter x) with `combiner`, or x itself when
// `body` is empty.
std::string ReduceModule(const std::string& t, const std::string& dims, const std::string& out_dims,
                         const std::string& reduce_dims, const std::string& combiner, const std::string& init,
                         const std::string& body) {
  return StrCat("HloModule r\ncomb {\n  a = ", t, "[] parameter(0)\n  b = ", t, "[] parameter(1)\n  ROOT c = ", t,
                "[] ", combiner, "(a, b)\n}\nENTRY main {\n  x = ", t, "[", dims, "] parameter(0)\n", body, "  z = ", t,
                "[] constant(", init, ")\n  ROOT r = ", t, "[", out_dims, "] reduce(", body.empty() ? "x" : "v",
                ", z), dimensions={", reduce_dims, "}, to_apply=comb\n}\n");
}

// exp(x) reduced (add) over dim `reduced` of the 2-D `dims`, the sum broadcast back and divided
// into exp(x): the reduce's operand is also read by another op of its loop, and both are results.
std::string ReduceAlsoReadModule(const std::string& dims, const std::string& out_dims, int reduced) {
  const std::string t = StrCat("f32[", dims, "]");
  return StrCat(
      "HloModule r\ncomb {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n",
      "ENTRY main {\n  x = ", t, " parameter(0)\n  v = ", t, " exponential(x)\n  z = f32[] constant(0)\n", "  r = f32[",
      out_dims, "] reduce(v, z), dimensions={", reduced, "}, to_apply=comb\n  rb = ", t, " broadcast(r), dimensions={",
      1 - reduced, "}\n  d = ", t, " divide(v, rb)\n  ROOT out = (", t, ", f32[", out_dims, "]) tuple(d, r)\n}\n");
}

TEST(Fusion, ReduceOfAChainMatchesOpByOpBitwise) {
  std::mt19937 rng(11);
  struct Case {
    std::string t, dims, out_dims, reduce_dims, combiner, init;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {"f32", "300,257", "300", "1", "add", "0", {300, 257}},  // rows: threads split rows
      {"f32", "300,257", "257", "0", "add", "0", {300, 257}},  // columns
      {"f32", "3,500,50", "500", "0,2", "maximum", "-inf", {3, 500, 50}},
      {"f32", "3,200,150", "200,150", "0", "add", "0", {3, 200, 150}},  // threads split columns
      {"bf16", "70,1000", "", "0,1", "add", "0", {70, 1000}},           // bf16 rounds every step
      {"f32", "2,70000", "2", "1", "multiply", "1", {2, 70000}},
      {"s32", "400,300", "400", "1", "minimum", "1000", {400, 300}},
      // Column sums in blocks of rows (kernels::PlanColumnBlocks), fused and op by op alike.
      {"f32", "2048,300", "300", "0", "add", "0", {2048, 300}},       // 3 blocks of 874 rows
      {"f32", "64,80,128", "128", "0,1", "add", "0", {64, 80, 128}},  // batch statistics
      {"f32", "600,8,64", "8", "0,2", "add", "0", {600, 8, 64}},      // minor dim reduced too
      {"f64", "3000,100", "100", "0", "add", "0", {3000, 100}},
  };
  for (const Case& c : cases) {
    const std::string body = StrCat("  e = ", c.t, "[", c.dims, "] ", c.t == "s32" ? "negate" : "tanh",
                                    "(x)\n  h = ", c.t, "[] constant(3)\n  hb = ", c.t, "[", c.dims,
                                    "] broadcast(h), dimensions={}\n  v = ", c.t, "[", c.dims, "] multiply(e, hb)\n");
    const std::string text = ReduceModule(c.t, c.dims, c.out_dims, c.reduce_dims, c.combiner, c.init, body);
    SCOPED_TRACE(text);
    const DType t = c.t == "f32"    ? DType::kF32
                    : c.t == "f64"  ? DType::kF64
                    : c.t == "bf16" ? DType::kBF16
                                    : DType::kS32;
    for (int threads : {1, 2}) ExpectFusedEqualsUnfused(text, {RandomArray(t, c.shape, rng)}, threads);
  }
}

TEST(Fusion, ReduceMatchesHandComputation) {
  // Row sums of 2 * x on small integers are exact in f32 (every partial sum < 2^24):
  // x[i, j] = j + i % 4, so row i sums to 2 * (499500 + 1000 * (i % 4)).
  const std::string text =
      ReduceModule("f32", "100,1000", "100", "1", "add", "0",
                   "  two = f32[] constant(2)\n  tb = f32[100,1000] broadcast(two), dimensions={}\n"
                   "  v = f32[100,1000] multiply(x, tb)\n");
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  Array x(DType::kF32, {100, 1000});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, static_cast<double>(i % 1000 + (i / 1000) % 4));
  ExecuteOptions o;
  o.intra_op_threads = 2;
  ExecuteStats stats;
  std::vector<Array> args = {x};
  std::vector<Array> out = *e->Run(args, o, &stats);
  for (int64_t i = 0; i < 100; ++i) {
    ASSERT_EQ(out[0].GetDouble(i), 2.0 * (499500.0 + 1000.0 * (i % 4))) << i;
  }
  EXPECT_EQ(stats.peak_bytes, 448);  // the result (400 bytes in a 64-byte unit); no product
}

TEST(Fusion, ReduceOfAnInputOrOfAValueUsedElsewhere) {
  std::mt19937 rng(13);
  // A reduce of a parameter gets a loop of its own (threads split the kept outer dim).
  ExpectFusedEqualsUnfused(ReduceModule("f32", "512,256", "512", "1", "add", "0", "  v = f32[512,256] copy(x)\n"),
                           {RandomArray(DType::kF32, {512, 256}, rng)}, 2);
  // `v` is also a result: it stays an output of the loop, reduced from the same tile.
  ExpectFusedEqualsUnfused(ReduceAlsoReadModule("64,2000", "64", 1), {RandomArray(DType::kF32, {64, 2000}, rng)}, 2);
  // A column sum of a parameter (one call per block of rows) and of a value that is also a result
  // (the blocks write it too), on 1 and 3 threads.
  for (int threads : {1, 3}) {
    ExpectFusedEqualsUnfused(ReduceModule("f32", "4096,100", "100", "0", "add", "0", "  v = f32[4096,100] copy(x)\n"),
                             {RandomArray(DType::kF32, {4096, 100}, rng)}, threads);
    ExpectFusedEqualsUnfused(ReduceModule("f32", "4096,100", "100", "0", "add", "0", ""),
                             {RandomArray(DType::kF32, {4096, 100}, rng)}, threads);
    ExpectFusedEqualsUnfused(ReduceAlsoReadModule("4096,100", "100", 0), {RandomArray(DType::kF32, {4096, 100}, rng)},
                             threads);
  }
}

// Softmax: max(x) and sum(exp) each reduce a value that another loop also reads (x - max reads
// x, exp / sum reads exp), so each reduce joins its operand's loop as a second output. Random rows
// agree with the op-by-op run bit for bit; rows of one repeated value give exactly 1/256 per
// element, the row's value as max and 256 as sum (exp(0) = 1 exactly).
TEST(Fusion, SoftmaxReducesShareTheirOperandsLoop) {
  const std::string text = R"(
HloModule softmax
mx {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  p = f32[16,256] parameter(0)
  eight = f32[] constant(8)
  eb = f32[16,256] broadcast(eight), dimensions={}
  x = f32[16,256] divide(p, eb)
  ninf = f32[] constant(-inf)
  m = f32[16] reduce(x, ninf), dimensions={1}, to_apply=mx
  mb = f32[16,256] broadcast(m), dimensions={0}
  d = f32[16,256] subtract(x, mb)
  e = f32[16,256] exponential(d)
  zero = f32[] constant(0)
  s = f32[16] reduce(e, zero), dimensions={1}, to_apply=sum
  sb = f32[16,256] broadcast(s), dimensions={0}
  y = f32[16,256] divide(e, sb)
  ROOT out = (f32[16,256], f32[16], f32[16]) tuple(y, m, s)
})";
  std::mt19937 rng(17);
  for (int threads : {1, 2}) ExpectFusedEqualsUnfused(text, {RandomArray(DType::kF32, {16, 256}, rng)}, threads);
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  Array p(DType::kF32, {16, 256});
  for (int64_t i = 0; i < p.num_elements(); ++i) p.SetDouble(i, 8.0 * static_cast<double>(i / 256) - 40.0);
  std::vector<Array> args = {p};
  std::vector<Array> out = *e->Run(args);
  ASSERT_EQ(out.size(), 3u);
  for (int64_t i = 0; i < p.num_elements(); ++i) ASSERT_EQ(out[0].GetDouble(i), 1.0 / 256) << i;
  for (int64_t r = 0; r < 16; ++r) {
    EXPECT_EQ(out[1].GetDouble(r), static_cast<double>(r) - 5.0) << r;
    EXPECT_EQ(out[2].GetDouble(r), 256.0) << r;
  }
}

}  // namespace
}  // namespace xs
