// Tests of fused elementwise loops: fused and op-by-op runs agree bit for bit on random chains
// (every op family, f32 / bf16 / s32 / pred, broadcasts in any dims, scalar constants, iota,
// uneven tile tails, results used outside a group, several outputs), kLoop fusion callees, a
// hand-computed reference for the tanh * logistic chain, and the plan's loop merging and tile
// buffers. Fused reduces: executable_fusion_reduce_test.cc.
#include <cmath>
#include <cstring>
#include <random>

#include "gtest/gtest.h"
#include "xshard/exec/executable.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/exec/fusion_plan.h"
#include "xshard/exec/fusion_test_util.h"
#include "xshard/text/parse_test_util.h"

namespace xs {
namespace {

using xs::testing::ParseOrFail;
using xs::fusion_test::ExpectFusedEqualsUnfused;
using xs::fusion_test::FusedLoops;
using xs::fusion_test::RandomArray;

std::string DimsText(const std::vector<int64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) StrAppend(&s, i ? "," : "", d[i]);
  return s;
}

// A random DAG of elementwise ops over f32 / bf16 / s32 / pred values of `dims`.
struct ChainGen {
  std::mt19937 rng;
  std::vector<int64_t> dims;
  std::string body;
  std::vector<std::pair<std::string, DType>> values;
  std::vector<Array> args;
  int next = 0;
  int params = 0;

  std::string Shape(DType t) const { return StrCat(DTypeName(t), "[", DTypeText(), "]"); }
  std::string DTypeText() const { return DimsText(dims); }
  std::string Add(DType t, const std::string& rhs) {
    const std::string name = StrCat("v", next++);
    body += StrCat("  ", name, " = ", Shape(t), " ", rhs, "\n");
    values.push_back({name, t});
    return name;
  }
  std::string Param(DType t, const std::vector<int64_t>& d) {
    const std::string name = StrCat("p", params);
    body += StrCat("  ", name, " = ", DTypeName(t), "[", DimsText(d), "] parameter(", params++, ")\n");
    args.push_back(RandomArray(t, d, rng));
    return name;
  }
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  std::string PickOf(DType t) {
    std::vector<std::string> c;
    for (auto& [n, d] : values) if (d == t) c.push_back(n);
    if (c.empty()) return Make(t);
    // Prefer recent values (chains), sometimes reuse old ones (several users).
    const int k = static_cast<int>(c.size());
    return c[Pick(3) == 0 ? Pick(k) : k - 1 - Pick(std::min(k, 3))];
  }
  std::string Const(DType t) {
    const std::string name = StrCat("c", next++);
    const std::string v = t == DType::kPred ? "true" : t == DType::kS32 ? std::to_string(Pick(7) - 3) : "0.75";
    body += StrCat("  ", name, " = ", DTypeName(t), "[] constant(", v, ")\n");
    return name;
  }
  // A fresh value of type t from a leaf (parameter, broadcast, iota).
  std::string Make(DType t) {
    switch (Pick(4)) {
      case 0: return Add(t, StrCat("broadcast(", Const(t), "), dimensions={}"));
      case 1: {
        const int d = Pick(static_cast<int>(dims.size()));
        return Add(t, StrCat("broadcast(", Param(t, {dims[d]}), "), dimensions={", d, "}"));
      }
      case 2: return Add(t, StrCat("iota(), iota_dimension=", Pick(static_cast<int>(dims.size()))));
      default: {
        const std::string p = Param(t, dims);
        values.push_back({p, t});
        return p;
      }
    }
  }
  void Step() {
    static const DType kTypes[] = {DType::kF32, DType::kBF16, DType::kS32, DType::kPred};
    const DType t = kTypes[Pick(4)];
    const auto pick = [&] { return PickOf(t); };
    if (t == DType::kPred) {
      switch (Pick(4)) {
        case 0: { const DType s = kTypes[Pick(3)]; Add(t, StrCat("compare(", PickOf(s), ", ", PickOf(s), "), direction=", Pick(2) ? "LT" : "GE")); return; }
        case 1: Add(t, StrCat("and(", pick(), ", ", pick(), ")")); return;
        case 2: Add(t, StrCat("not(", pick(), ")")); return;
        default: Add(t, StrCat("xor(", pick(), ", ", pick(), ")")); return;
      }
    }
    switch (Pick(8)) {
      case 0: {
        static const char* kFloat[] = {"tanh", "logistic", "exponential", "sine", "negate", "abs", "floor", "sqrt"};
        static const char* kInt[] = {"negate", "abs", "not", "popcnt", "sign"};
        Add(t, t == DType::kS32 ? StrCat(kInt[Pick(5)], "(", pick(), ")")
                                : StrCat(kFloat[Pick(8)], "(", pick(), ")"));
        return;
      }
      case 1: case 2: {
        static const char* kBin[] = {"add", "multiply", "subtract", "maximum", "minimum", "divide"};
        Add(t, StrCat(kBin[Pick(6)], "(", pick(), ", ", pick(), ")"));
        return;
      }
      case 3: Add(t, StrCat("select(", PickOf(DType::kPred), ", ", pick(), ", ", pick(), ")")); return;
      case 4: Add(t, StrCat("clamp(", Const(t), ", ", pick(), ", ", Const(t), ")")); return;
      case 5: { const DType s = kTypes[Pick(4)]; Add(t, StrCat("convert(", PickOf(s), ")")); return; }
      case 6: Add(t, StrCat("multiply(", pick(), ", ", Make(t), ")")); return;
      default:
        if (t == DType::kS32) Add(t, StrCat(Pick(2) ? "shift-left(" : "shift-right-arithmetic(", pick(), ", ", pick(), ")"));
        else Add(t, StrCat("copy(", pick(), ")"));
        return;
    }
  }
  std::string Module(int steps, int outputs) {
    for (int i = 0; i < steps; ++i) Step();
    std::vector<std::string> roots = {values.back().first};
    for (int i = 1; i < outputs; ++i) roots.push_back(values[Pick(static_cast<int>(values.size()))].first);
    std::string root_shape, root_list;
    for (size_t i = 0; i < roots.size(); ++i) {
      for (auto& [n, d] : values) {
        if (n == roots[i]) StrAppend(&root_shape, i ? ", " : "", Shape(d));
      }
      StrAppend(&root_list, i ? ", " : "", roots[i]);
    }
    return StrCat("HloModule chain\nENTRY main {\n", body, "  ROOT r = (", root_shape, ") tuple(",
                  root_list, ")\n}\n");
  }
};

TEST(Fusion, RandomChainsMatchOpByOpBitwise) {
  const std::vector<std::vector<int64_t>> shapes = {{1}, {5}, {3, 37, 50}, {2048}, {2049}, {7, 4099}, {300, 257}};
  int cases = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    for (int seed = 0; seed < 12; ++seed) {
      ChainGen g;
      g.rng.seed(static_cast<unsigned>(seed * 101 + s));
      g.dims = shapes[s];
      const std::string text = g.Module(4 + seed * 2, 1 + seed % 4);
      SCOPED_TRACE(text);
      ExpectFusedEqualsUnfused(text, g.args, 1 + seed % 3);
      ++cases;
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_EQ(cases, 84);
}

TEST(Fusion, TanhLogisticChainMatchesHandComputation) {
  const std::string text = R"(
HloModule chain
ENTRY main {
  x = f32[513,67] parameter(0)
  y = f32[513,67] parameter(1)
  t = f32[513,67] tanh(x)
  s = f32[513,67] logistic(y)
  ts = f32[513,67] multiply(t, s)
  half = f32[] constant(0.5)
  hb = f32[513,67] broadcast(half), dimensions={}
  xh = f32[513,67] multiply(x, hb)
  ROOT r = f32[513,67] add(ts, xh)
})";
  std::mt19937 rng(7);
  std::vector<Array> args = {RandomArray(DType::kF32, {513, 67}, rng), RandomArray(DType::kF32, {513, 67}, rng)};
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  ExecuteStats stats;
  std::vector<Array> out = *e->Run(args, {}, &stats);
  // The fused step counts its five members; the constant is a step; the broadcast, recomputed
  // inside the loop, is not run.
  EXPECT_EQ(stats.instructions_run, 6);
  // Only the result (in the arena, rounded up to 64 bytes): no temporaries, no broadcast.
  EXPECT_EQ(stats.peak_bytes, (513 * 67 * 4 + 63) / 64 * 64);
  for (int64_t i = 0; i < out[0].num_elements(); ++i) {
    const double x = args[0].GetDouble(i), y = args[1].GetDouble(i);
    const double want = std::tanh(x) / (1 + std::exp(-y)) + x * 0.5;
    ASSERT_NEAR(out[0].GetDouble(i), want, 2e-6 * (1 + std::fabs(want))) << i;
  }
  ExpectFusedEqualsUnfused(text, args, 2);
}

TEST(Fusion, MulhiJoinsTheLoop) {
  // mulhi is fusible (ir/opcode.h): with the add it forms one loop that reads the broadcast of
  // `c` in place, so the broadcast never runs. Were mulhi left out, the broadcast would run as a
  // step of its own to feed it (4 instructions instead of 3).
  const std::string text = R"(
HloModule mulhi_chain
ENTRY main {
  x = s32[300,70] parameter(0)
  y = s32[300,70] parameter(1)
  c = s32[] constant(-1000003)
  cb = s32[300,70] broadcast(c), dimensions={}
  h = s32[300,70] mulhi(x, cb)
  ROOT r = s32[300,70] add(h, y)
})";
  Array x(DType::kS32, {300, 70}), y(DType::kS32, {300, 70});
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.SetDouble(i, static_cast<double>((i * 2654435761LL) % 2000000000LL - 1000000000LL));
    y.SetDouble(i, static_cast<double>(i % 97 - 48));
  }
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  ExecuteStats stats;
  const std::vector<Array> args = {x, y};
  std::vector<Array> out = *e->Run(args, {}, &stats);
  EXPECT_EQ(stats.instructions_run, 3);  // the fused step's mulhi and add, the constant
  for (int64_t i = 0; i < out[0].num_elements(); ++i) {
    const int64_t product = static_cast<int64_t>(x.GetDouble(i)) * int64_t{-1000003};
    const int64_t want = (product >> 32) + static_cast<int64_t>(y.GetDouble(i));
    ASSERT_EQ(static_cast<int64_t>(out[0].GetDouble(i)), want) << i;
  }
  ExpectFusedEqualsUnfused(text, {x, y}, 2);
}

TEST(Fusion, ValuesAlsoReadOutsideTheGroupAndAcrossANonFusibleOp) {
  // `a` feeds a reduce whose broadcast feeds the same chain: fusing `a` into the chain would be a
  // cycle, so it must stay a separate output; `e` is both a result and an intermediate.
  const std::string text = R"(
HloModule mixed
sum {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
ENTRY main {
  x = f32[64,300] parameter(0)
  a = f32[64,300] exponential(x)
  z = f32[] constant(0)
  r = f32[64] reduce(a, z), dimensions={1}, to_apply=sum
  rb = f32[64,300] broadcast(r), dimensions={0}
  d = f32[64,300] divide(a, rb)
  e = f32[64,300] tanh(d)
  t = f32[300,64] transpose(e), dimensions={1,0}
  io = s32[64,300] iota(), iota_dimension=1
  iof = f32[64,300] convert(io)
  f = f32[64,300] add(e, iof)
  ROOT out = (f32[64,300], f32[300,64], f32[64,300]) tuple(f, t, e)
})";
  std::mt19937 rng(3);
  ExpectFusedEqualsUnfused(text, {RandomArray(DType::kF32, {64, 300}, rng)}, 2);
}

TEST(Fusion, ManyThreadsStayExact) {
  // Fused loops over many threads (more than this machine's cores) stay exact.
  ChainGen g;
  g.rng.seed(17);
  g.dims = {513, 1031};
  const std::string text = g.Module(30, 3);
  ExpectFusedEqualsUnfused(text, g.args, 7);
}

// Broadcast tiles are read in place from the operand when a tile is one run of it, kept between
// tiles when the operand's period divides the tile, and expanded otherwise: per-channel vectors
// (period 128), a [H, C] operand over N (period 3584: in place, or wrapping around), a [N, C]
// operand (runs of 128) and, in the second module, a [B, D] operand with D = 2048 (in place).
TEST(Fusion, BroadcastTilesReadInPlaceOrKeptMatchOpByOp) {
  const std::string text = R"(
HloModule bn
ENTRY main {
  x = f32[24,28,128] parameter(0)
  m = f32[128] parameter(1)
  w = f32[28,128] parameter(2)
  b = f32[24,128] parameter(3)
  mb = f32[24,28,128] broadcast(m), dimensions={2}
  wb = f32[24,28,128] broadcast(w), dimensions={1,2}
  bb = f32[24,28,128] broadcast(b), dimensions={0,2}
  s = f32[24,28,128] subtract(x, mb)
  t = f32[24,28,128] multiply(s, wb)
  ROOT o = f32[24,28,128] add(t, bb)
})";
  std::mt19937 rng(23);
  const std::vector<Array> args = {RandomArray(DType::kF32, {24, 28, 128}, rng), RandomArray(DType::kF32, {128}, rng),
                                   RandomArray(DType::kF32, {28, 128}, rng), RandomArray(DType::kF32, {24, 128}, rng)};
  for (int threads : {1, 3}) ExpectFusedEqualsUnfused(text, args, threads);
  std::unique_ptr<Module> mod = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*mod);
  const Array out = (*e->Run(args, ExecuteOptions{}))[0];
  for (int64_t n = 0; n < 24; ++n) {
    for (int64_t h = 0; h < 28; ++h) {
      for (int64_t c = 0; c < 128; ++c) {
        const double want =
            (args[0].GetDouble((n * 28 + h) * 128 + c) - args[1].GetDouble(c)) * args[2].GetDouble(h * 128 + c) +
            args[3].GetDouble(n * 128 + c);
        ASSERT_NEAR(out.GetDouble((n * 28 + h) * 128 + c), want, 1e-5 * (1 + std::abs(want)))
            << n << " " << h << " " << c;
      }
    }
  }
  const std::string rows = R"(
HloModule rows
ENTRY main {
  x = f32[4,3,2048] parameter(0)
  b = f32[4,2048] parameter(1)
  bb = f32[4,3,2048] broadcast(b), dimensions={0,2}
  ROOT o = f32[4,3,2048] multiply(x, bb)
})";
  const std::vector<Array> row_args = {RandomArray(DType::kF32, {4, 3, 2048}, rng),
                                       RandomArray(DType::kF32, {4, 2048}, rng)};
  for (int threads : {1, 3}) ExpectFusedEqualsUnfused(rows, row_args, threads);
}

// Row gathers (jnp.take(table, ids, axis=0) and its out-of-bounds select) are read inside the
// loop that uses them: fused and op-by-op runs agree bit for bit for rows shorter and longer than
// a tile, 3-D tables, unsigned and 64-bit indices, out-of-range indices (clamped), and a gather
// that is also a result; jnp.take's program gives the table's rows and NaN for the bad ids.
TEST(Fusion, RowGathersAreReadInsideTheLoop) {
  std::mt19937 rng(29);
  auto ids = [&](DType t, const std::vector<int64_t>& dims, int64_t lo, int64_t hi) {
    Array a(t, dims);
    std::uniform_int_distribution<int64_t> u(lo, hi);
    for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, static_cast<double>(u(rng)));
    return a;
  };
  const std::string short_rows = R"(
HloModule g
ENTRY main {
  t = f32[300,100] parameter(0)
  i = s32[900] parameter(1)
  g = f32[900,100] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,100}
  ROOT o = f32[900,100] tanh(g)
})";
  const std::string long_rows = R"(
HloModule g
ENTRY main {
  t = f32[64,1500] parameter(0)
  i = s64[60,1] parameter(1)
  y = f32[60,1500] parameter(2)
  g = f32[60,1500] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,1500}
  m = f32[60,1500] multiply(g, y)
  ROOT o = (f32[60,1500], f32[60,1500]) tuple(m, g)
})";
  const std::string cube = R"(
HloModule g
ENTRY main {
  t = bf16[20,6,40] parameter(0)
  i = u8[10,12,1] parameter(1)
  g = bf16[10,12,6,40] gather(t, i), offset_dims={2,3}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,6,40}
  ROOT o = bf16[10,12,6,40] negate(g)
})";
  for (int threads : {1, 3}) {
    ExpectFusedEqualsUnfused(short_rows, {RandomArray(DType::kF32, {300, 100}, rng), ids(DType::kS32, {900}, -20, 320)},
                             threads);
    ExpectFusedEqualsUnfused(long_rows,
                             {RandomArray(DType::kF32, {64, 1500}, rng), ids(DType::kS64, {60, 1}, -3, 70),
                              RandomArray(DType::kF32, {60, 1500}, rng)},
                             threads);
    ExpectFusedEqualsUnfused(cube, {RandomArray(DType::kBF16, {20, 6, 40}, rng), ids(DType::kU8, {10, 12, 1}, 0, 255)},
                             threads);
  }
  // jnp.take(t, i, axis=0) as JAX lowers it (mode="fill"): ids in [-V, V) wrap, others give NaN.
  const std::string take = R"(
HloModule take
ENTRY main {
  t = f32[1000,512] parameter(0)
  i = s32[700] parameter(1)
  zero = s32[] constant(0)
  zb = s32[700] broadcast(zero), dimensions={}
  neg = pred[700] compare(i, zb), direction=LT
  v = s32[] constant(1000)
  vb = s32[700] broadcast(v), dimensions={}
  wrapped = s32[700] add(i, vb)
  w = s32[700] select(neg, wrapped, i)
  w1 = s32[700,1] reshape(w)
  zb1 = s32[700,1] broadcast(zero), dimensions={}
  ge = pred[700,1] compare(w1, zb1), direction=GE
  last = s32[] constant(999)
  lb1 = s32[700,1] broadcast(last), dimensions={}
  le = pred[700,1] compare(w1, lb1), direction=LE
  ok = pred[700,1] and(ge, le)
  ok1 = pred[700] reshape(ok)
  okb = pred[700,512] broadcast(ok1), dimensions={0}
  g = f32[700,512] gather(t, w1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,512}
  nan = f32[] constant(nan)
  nanb = f32[700,512] broadcast(nan), dimensions={}
  ROOT o = f32[700,512] select(okb, g, nanb)
})";
  const Array table = RandomArray(DType::kF32, {1000, 512}, rng);
  const Array index = ids(DType::kS32, {700}, -1100, 1100);
  for (int threads : {1, 3}) ExpectFusedEqualsUnfused(take, {table, index}, threads);
  std::unique_ptr<Module> m = ParseOrFail(take);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  const std::vector<Array> take_args = {table, index};
  ExecuteStats fused_stats, plain_stats;
  const Array out = (*e->Run(take_args, ExecuteOptions{}, &fused_stats))[0];
  ExecuteOptions plain;
  plain.fusion = false;
  ASSERT_TRUE(e->Run(take_args, plain, &plain_stats).ok());
  // The gathered rows never exist as an array of their own when fused.
  const int64_t result_bytes = 700 * 512 * 4;
  EXPECT_LT(fused_stats.peak_bytes, result_bytes + result_bytes / 4);
  EXPECT_GE(plain_stats.peak_bytes, 2 * result_bytes);
  int bad = 0;
  for (int64_t r = 0; r < 700; ++r) {
    const int64_t k = static_cast<int64_t>(index.GetDouble(r));
    const int64_t row = k < 0 ? k + 1000 : k;
    bad += row < 0 || row >= 1000;
    for (int64_t c = 0; c < 512; ++c) {
      const double got = out.GetDouble(r * 512 + c);
      if (row < 0 || row >= 1000) {
        ASSERT_TRUE(std::isnan(got)) << r << " " << c;
      } else {
        ASSERT_EQ(got, table.GetDouble(row * 512 + c)) << r << " " << c;
      }
    }
  }
  EXPECT_GT(bad, 10);  // the ids cover both kinds
}

TEST(Fusion, LoopFusionCalleeRunsFused) {
  const std::string text = R"(
HloModule f
fused_computation {
  p0 = bf16[1000,70] parameter(0)
  p1 = bf16[70] parameter(1)
  b = bf16[1000,70] broadcast(p1), dimensions={1}
  m = bf16[1000,70] multiply(p0, b)
  c = bf16[] constant(-1.5)
  cb = bf16[1000,70] broadcast(c), dimensions={}
  ROOT mx = bf16[1000,70] maximum(m, cb)
}
ENTRY main {
  x = bf16[1000,70] parameter(0)
  v = bf16[70] parameter(1)
  ROOT f = bf16[1000,70] fusion(x, v), kind=kLoop, calls=fused_computation
})";
  std::mt19937 rng(5);
  std::vector<Array> args = {RandomArray(DType::kBF16, {1000, 70}, rng), RandomArray(DType::kBF16, {70}, rng)};
  ExpectFusedEqualsUnfused(text, args, 2);
  // The callee runs as one loop: no broadcast or product is materialized, only the result.
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  ExecuteStats stats;
  ASSERT_TRUE(e->Run(args, {}, &stats).ok());
  EXPECT_EQ(stats.peak_bytes, 1000 * 70 * 2);
}

TEST(Fusion, DonatedInputIsOverwrittenInPlace) {
  const std::string text = R"(
HloModule d
ENTRY main {
  x = f32[100000] parameter(0)
  y = f32[100000] parameter(1)
  a = f32[100000] add(x, y)
  ROOT m = f32[100000] multiply(a, x)
})";
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> args = {Array::Full(DType::kF32, {100000}, 2.0), Array::Full(DType::kF32, {100000}, 3.0)};
  ExecuteStats stats;
  std::vector<Array> out = *e->RunDonated(args, {}, &stats);
  EXPECT_EQ(out[0].GetDouble(99999), 10.0);
  // The two donated arguments; the result is written over x, but the arena still reserves the
  // result's planned buffer (the plan does not know whether a run donates).
  EXPECT_EQ(stats.peak_bytes, 2 * 100000 * 4 + 100000 * 4);
}

TEST(Fusion, OutputsLargerThanTheCachesAreStreamedExactly) {
  // Every output is at least kernels::kStreamMinBytes (bf16[1031,2100] is 4.3 MB), so the loop
  // writes them with non-temporal stores from per-tile buffers; `e` is both an output and an
  // operand of later members, and the tile tail (2,165,100 elements) is uneven.
  const std::string text = R"(
HloModule big
ENTRY main {
  x = f32[1031,2100] parameter(0)
  e = f32[1031,2100] tanh(x)
  one = f32[] constant(1)
  ob = f32[1031,2100] broadcast(one), dimensions={}
  m = f32[1031,2100] multiply(e, x)
  f = f32[1031,2100] add(m, ob)
  g = bf16[1031,2100] convert(f)
  ROOT out = (f32[1031,2100], f32[1031,2100], bf16[1031,2100]) tuple(f, e, g)
})";
  std::mt19937 rng(11);
  std::vector<Array> args = {RandomArray(DType::kF32, {1031, 2100}, rng)};
  ExpectFusedEqualsUnfused(text, args, 2);
  ExpectFusedEqualsUnfused(text, args, 1);
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> out = *e->Run(args, {});
  for (int64_t i : {int64_t{0}, int64_t{4095}, int64_t{4096}, int64_t{1031} * 2100 - 1}) {
    const double x = args[0].GetDouble(i);
    EXPECT_NEAR(out[1].GetDouble(i), std::tanh(x), 1e-6) << i;
    EXPECT_NEAR(out[0].GetDouble(i), std::tanh(x) * x + 1, 1e-5) << i;
    EXPECT_NEAR(out[2].GetDouble(i), out[0].GetDouble(i), 0.01 * std::fabs(out[0].GetDouble(i))) << i;
  }
}

// Three rounds of threefry2x32 as jax.random lowers them (rotations by runtime scalars), then
// the bits -> float step of jax.random.uniform. `a2` has users in both final sums, so grouping
// alone splits the round into two loops, one reading the other's outputs back; the groups merge
// into one loop of three outputs, the same-size bitcast-convert joins it, and its 21 members
// share a few tile buffers.
TEST(Fusion, ThreefryRoundsAreOneLoopWithFewTiles) {
  const std::string text = R"(
HloModule threefry
ENTRY main {
  x0 = u32[300,257] parameter(0)
  x1 = u32[300,257] parameter(1)
  r = u32[] parameter(2)
  k = u32[] parameter(3)
  thirty_two = u32[] constant(32)
  rc = u32[] subtract(thirty_two, r)
  rb = u32[300,257] broadcast(r), dimensions={}
  rcb = u32[300,257] broadcast(rc), dimensions={}
  a1 = u32[300,257] add(x0, x1)
  l1 = u32[300,257] shift-left(x1, rb)
  h1 = u32[300,257] shift-right-logical(x1, rcb)
  o1 = u32[300,257] or(l1, h1)
  y1 = u32[300,257] xor(a1, o1)
  a2 = u32[300,257] add(a1, y1)
  l2 = u32[300,257] shift-left(y1, rb)
  h2 = u32[300,257] shift-right-logical(y1, rcb)
  o2 = u32[300,257] or(l2, h2)
  y2 = u32[300,257] xor(a2, o2)
  a3 = u32[300,257] add(a2, y2)
  l3 = u32[300,257] shift-left(y2, rb)
  h3 = u32[300,257] shift-right-logical(y2, rcb)
  o3 = u32[300,257] or(l3, h3)
  y3 = u32[300,257] xor(a3, o3)
  kb = u32[300,257] broadcast(k), dimensions={}
  out0 = u32[300,257] add(a2, kb)
  out1 = u32[300,257] add(y3, kb)
  nine = u32[] constant(9)
  nb = u32[300,257] broadcast(nine), dimensions={}
  m = u32[300,257] shift-right-logical(out1, nb)
  one_bits = u32[] constant(1065353216)
  ob = u32[300,257] broadcast(one_bits), dimensions={}
  f = u32[300,257] or(m, ob)
  fl = f32[300,257] bitcast-convert(f)
  one = f32[] constant(1)
  oneb = f32[300,257] broadcast(one), dimensions={}
  u = f32[300,257] subtract(fl, oneb)
  ROOT out = (u32[300,257], u32[300,257], f32[300,257]) tuple(out0, out1, u)
})";
  const int64_t n = 300 * 257;
  Array x0(DType::kU32, {300, 257}), x1(DType::kU32, {300, 257});
  uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (int64_t i = 0; i < n; ++i) {
    reinterpret_cast<uint32_t*>(x0.data())[i] = next();
    reinterpret_cast<uint32_t*>(x1.data())[i] = next();
  }
  const uint32_t rot = 13, key = 0x9E3779B9u;
  const std::vector<Array> args = {x0, x1, Array::FromVector<uint32_t>({}, {rot}),
                                   Array::FromVector<uint32_t>({}, {key})};
  for (int threads : {1, 3}) ExpectFusedEqualsUnfused(text, args, threads);

  std::unique_ptr<Module> mod = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*mod);
  const std::vector<const FusedLoop*> loops = FusedLoops(*e);
  ASSERT_EQ(loops.size(), 1u);
  const FusedLoop* loop = loops[0];
  EXPECT_EQ(loop->outputs.size(), 3u);
  EXPECT_EQ(loop->members, 21);  // every elementwise op and the bitcast-convert
  // Six scalars (r, 32 - r, k, 9, the float bits, 1) and four tiles: a round's sum, its xor and
  // the two shifted halves are all that is ever live (one buffer per member would be 28).
  EXPECT_LE(loop->num_buffers, 10);
  ExecuteStats stats;
  std::vector<Array> out = *e->Run(args, {}, &stats);
  // The three results and the scalar 32 - r: no round's value is ever a whole array.
  EXPECT_LE(stats.peak_bytes, 3 * ((n * 4 + 63) / 64 * 64) + 64);
  auto rotl = [](uint32_t v, uint32_t r) { return (v << r) | (v >> (32 - r)); };
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = reinterpret_cast<const uint32_t*>(x0.data())[i];
    const uint32_t b = reinterpret_cast<const uint32_t*>(x1.data())[i];
    const uint32_t a1 = a + b, y1 = a1 ^ rotl(b, rot);
    const uint32_t a2 = a1 + y1, y2 = a2 ^ rotl(y1, rot);
    const uint32_t a3 = a2 + y2, y3 = a3 ^ rotl(y2, rot);
    const uint32_t o0 = a2 + key, o1 = y3 + key;
    const uint32_t bits = (o1 >> 9) | 0x3F800000u;
    float fv;
    std::memcpy(&fv, &bits, 4);
    ASSERT_EQ(reinterpret_cast<const uint32_t*>(out[0].data())[i], o0) << i;
    ASSERT_EQ(reinterpret_cast<const uint32_t*>(out[1].data())[i], o1) << i;
    ASSERT_EQ(reinterpret_cast<const float*>(out[2].data())[i], fv - 1.0f) << i;
  }
}

// JAX's rotate_left, or(shift-left(x, a), shift-right-logical(x, bits - a)), is one kRotateLeft
// op: with the amount a scalar and bits - a computed from it (threefry in a loop), any amount
// (XLA's shift rules: a above bits gives 0) gives the three ops' bits; with two constants that add
// up to the width, too. Shifts whose amounts do not add up, or that are also read elsewhere, stay
// separate ops.
TEST(Fusion, RotationsAreOneOpWithXlasShiftRules) {
  const std::string text = R"(
HloModule rotate
ENTRY main {
  x = u32[70,33] parameter(0)
  r = u32[] parameter(1)
  y = s64[70,33] parameter(2)
  w = u32[] constant(32)
  rc = u32[] subtract(w, r)
  rb = u32[70,33] broadcast(r), dimensions={}
  rcb = u32[70,33] broadcast(rc), dimensions={}
  l = u32[70,33] shift-left(x, rb)
  h = u32[70,33] shift-right-logical(x, rcb)
  rot = u32[70,33] or(h, l)
  out0 = u32[70,33] xor(rot, x)
  k17 = s64[] constant(17)
  k47 = s64[] constant(47)
  k46 = s64[] constant(46)
  b17 = s64[70,33] broadcast(k17), dimensions={}
  b47 = s64[70,33] broadcast(k47), dimensions={}
  b46 = s64[70,33] broadcast(k46), dimensions={}
  yl = s64[70,33] shift-left(y, b17)
  yh = s64[70,33] shift-right-logical(y, b47)
  yrot = s64[70,33] or(yl, yh)
  zl = s64[70,33] shift-left(y, b17)
  zh = s64[70,33] shift-right-logical(y, b46)
  notrot = s64[70,33] or(zl, zh)
  out1 = s64[70,33] add(yrot, notrot)
  ROOT out = (u32[70,33], s64[70,33], u32[70,33]) tuple(out0, out1, l)
})";
  std::mt19937_64 rng(41);
  Array x(DType::kU32, {70, 33}), y(DType::kS64, {70, 33});
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    reinterpret_cast<uint32_t*>(x.data())[i] = static_cast<uint32_t>(rng());
    reinterpret_cast<int64_t*>(y.data())[i] = static_cast<int64_t>(rng());
  }
  std::unique_ptr<Module> mod = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*mod);
  int rotates = 0, shifts = 0;
  for (const FusedLoop* loop : FusedLoops(*e)) {
    for (const FusedOp& op : loop->body) {
      rotates += op.kind == FusedOpKind::kRotateLeft;
      const Opcode code = op.inst->opcode();
      shifts += code == Opcode::kShiftLeft || code == Opcode::kShiftRightLogical;
    }
  }
  // `l` is an output, so x's rotation keeps its shifts; y's is one op; 17 + 46 is no rotation.
  EXPECT_EQ(rotates, 1);
  EXPECT_EQ(shifts, 4);
  auto rotl64 = [](uint64_t v, int a) { return (v << a) | (v >> (64 - a)); };
  for (uint32_t amount : {0u, 1u, 13u, 31u, 32u, 33u, 100u, 0xFFFFFFFFu}) {
    const std::vector<Array> args = {x, Array::FromVector<uint32_t>({}, {amount}), y};
    for (int threads : {1, 3}) ExpectFusedEqualsUnfused(text, args, threads);
    std::vector<Array> out = *e->Run(args);
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const uint32_t v = reinterpret_cast<const uint32_t*>(x.data())[i];
      const uint32_t left = amount < 32 ? v << amount : 0;
      const uint32_t right = 32 - amount < 32 ? v >> (32 - amount) : 0;  // wraps above 32
      ASSERT_EQ(reinterpret_cast<const uint32_t*>(out[0].data())[i], (left | right) ^ v) << amount << " " << i;
      const uint64_t u = static_cast<uint64_t>(reinterpret_cast<const int64_t*>(y.data())[i]);
      const uint64_t sum = rotl64(u, 17) + ((u << 17) | (u >> 46));
      ASSERT_EQ(static_cast<uint64_t>(reinterpret_cast<const int64_t*>(out[1].data())[i]), sum) << i;
    }
  }
}

// `out1` reads `y1` of the first loop and, through a transpose (not fusible), `a2` of the same
// loop: joining the two loops would make the joined loop wait for itself, so they stay two loops
// (a plan that tried would fail its step order and fall back to one loop per output: four).
TEST(Fusion, GroupsJoinedThroughAnotherOpStayApart) {
  const std::string text = R"(
HloModule apart
ENTRY main {
  x0 = u32[64,64] parameter(0)
  x1 = u32[64,64] parameter(1)
  a1 = u32[64,64] add(x0, x1)
  y1 = u32[64,64] xor(a1, x1)
  a2 = u32[64,64] add(a1, y1)
  t = u32[64,64] transpose(a2), dimensions={1,0}
  out0 = u32[64,64] multiply(a2, y1)
  out1 = u32[64,64] add(y1, t)
  ROOT out = (u32[64,64], u32[64,64]) tuple(out0, out1)
})";
  Array x0(DType::kU32, {64, 64}), x1(DType::kU32, {64, 64});
  for (int64_t i = 0; i < 64 * 64; ++i) {
    reinterpret_cast<uint32_t*>(x0.data())[i] = static_cast<uint32_t>(i * 2654435761u);
    reinterpret_cast<uint32_t*>(x1.data())[i] = static_cast<uint32_t>(i * 40503u + 7);
  }
  ExpectFusedEqualsUnfused(text, {x0, x1}, 2);
  std::unique_ptr<Module> mod = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*mod);
  EXPECT_EQ(FusedLoops(*e).size(), 2u);
  const std::vector<Array> args = {x0, x1};
  std::vector<Array> out = *e->Run(args);
  for (int64_t i = 0; i < 64; ++i) {
    for (int64_t j = 0; j < 64; ++j) {
      auto at = [](const Array& a, int64_t r, int64_t c) {
        return reinterpret_cast<const uint32_t*>(a.data())[r * 64 + c];
      };
      auto y1 = [&](int64_t r, int64_t c) { return (at(x0, r, c) + at(x1, r, c)) ^ at(x1, r, c); };
      auto a2 = [&](int64_t r, int64_t c) { return at(x0, r, c) + at(x1, r, c) + y1(r, c); };
      ASSERT_EQ(at(out[0], i, j), a2(i, j) * y1(i, j)) << i << " " << j;
      ASSERT_EQ(at(out[1], i, j), y1(i, j) + a2(j, i)) << i << " " << j;
    }
  }
}

}  // namespace
}  // namespace xs
