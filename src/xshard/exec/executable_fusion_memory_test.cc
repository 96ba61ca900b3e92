// Fused loops and memory: in-place while state, donors of every output, and the generators
// read inside a loop (slices of an iota, concatenates of runs). Split from
// executable_fusion_test.cc, which holds the grouping and kernel tests.
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

// A while loop's state updated by one fused loop with two outputs (y1 reads x1, so they are one
// group; y1 is the primary output, x1 the other one): from the second iteration on,
// each output is written over the state element it replaces (the primary output through the
// step's in-place operand, the other through its own donor), so the loop allocates nothing per
// iteration. Before, the parameter tuple outlived the loop's step (its last get-tuple-element,
// the key passed through to the root as threefry's loop passes its rotations, came after it in
// post order) and both were fresh buffers.
// n = 2^20 streams the outputs (4 MiB each); n = 4096 writes them as their ops run.
TEST(Fusion, WhileStateIsUpdatedInPlaceByEveryOutputOfTheLoop) {
  for (const int64_t n : {int64_t{4096}, int64_t{1} << 20}) {
    // $T: the state's arrays, $S: the state.
    std::string text = R"(
HloModule w
cond {
  s = $S parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(5)
  ROOT lt = pred[] compare(i, k), direction=LT
}
body {
  s = $S parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = $T get-tuple-element(s), index=1
  y = $T get-tuple-element(s), index=2
  x1 = $T add(x, y)
  h = f32[] constant(0.5)
  hb = $T broadcast(h), dimensions={}
  d = $T subtract(x1, x)
  y1 = $T multiply(d, hb)
  key = u32[4] get-tuple-element(s), index=3
  ROOT r = $S tuple(j, x1, y1, key)
}
ENTRY main {
  x = $T parameter(0)
  y = $T parameter(1)
  z = s32[] constant(0)
  x2 = $T add(x, x)
  key = u32[4] constant({13, 15, 26, 6})
  s = $S tuple(z, x2, y, key)
  w = $S while(s), condition=cond, body=body
  a = $T get-tuple-element(w), index=1
  b = $T get-tuple-element(w), index=2
  ROOT r = ($T, $T) tuple(a, b)
})";
    const std::string t = StrCat("f32[", n, "]");
    for (const auto& [key, value] :
         {std::pair<std::string, std::string>{"$S", StrCat("(s32[], ", t, ", ", t, ", u32[4])")},
          std::pair<std::string, std::string>{"$T", t}}) {
      for (size_t at = text.find(key); at != std::string::npos; at = text.find(key)) text.replace(at, 2, value);
    }
    std::unique_ptr<Module> m = ParseOrFail(text);
    std::unique_ptr<Executable> e = *Executable::Create(*m);
    std::vector<Array> args = {Array::Full(DType::kF32, {n}, 1.0), Array::Full(DType::kF32, {n}, 16.0)};
    ExecuteStats stats;
    StatusOr<std::vector<Array>> out = e->Run(args, {}, &stats);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    // x = 2 + 16 + 8 + 4 + 2 + 1, y = 16 / 32.
    EXPECT_EQ(out->at(0).GetDouble(n - 1), 33.0) << n;
    EXPECT_EQ(out->at(1).GetDouble(0), 0.5) << n;
    // The arena, then the first iteration's two new state buffers while the entry's are alive;
    // after that each iteration writes over the state it reads (a third state buffer: one
    // output was a fresh buffer while both old ones lived).
    const int64_t bytes = n * 4;
    EXPECT_LT(stats.peak_bytes, e->arena_bytes() + 3 * bytes) << n;
  }
}

// An output other than the primary one must not be written over an input a later op of the tile
// still reads: the primary output b takes y (the first input of its type), and `a` is computed
// before b reads x again, so x may not take a's place.
TEST(Fusion, AnOutputIsNotWrittenOverAnInputReadAfterIt) {
  const std::string text = R"(
HloModule o
cond {
  s = (s32[], f32[4096], f32[4096]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(3)
  ROOT lt = pred[] compare(i, k), direction=LT
}
body {
  s = (s32[], f32[4096], f32[4096]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[4096] get-tuple-element(s), index=1
  y = f32[4096] get-tuple-element(s), index=2
  a = f32[4096] add(y, x)
  b = f32[4096] multiply(a, x)
  ROOT r = (s32[], f32[4096], f32[4096]) tuple(j, b, a)
}
ENTRY main {
  x = f32[4096] parameter(0)
  y = f32[4096] parameter(1)
  z = s32[] constant(0)
  x2 = f32[4096] add(x, x)
  s = (s32[], f32[4096], f32[4096]) tuple(z, x2, y)
  w = (s32[], f32[4096], f32[4096]) while(s), condition=cond, body=body
  p = f32[4096] get-tuple-element(w), index=1
  q = f32[4096] get-tuple-element(w), index=2
  ROOT r = (f32[4096], f32[4096]) tuple(p, q)
})";
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> args = {Array::Full(DType::kF32, {4096}, 1.0), Array::Full(DType::kF32, {4096}, 1.0)};
  StatusOr<std::vector<Array>> out = e->Run(args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // (x, y): (2, 1) -> (6, 3) -> (54, 9) -> (3402, 63).
  for (int64_t k : {int64_t{0}, int64_t{4095}}) {
    EXPECT_EQ(out->at(0).GetDouble(k), 3402.0) << k;
    EXPECT_EQ(out->at(1).GetDouble(k), 63.0) << k;
  }
}

// Slices of an iota (JAX's random bits slice one iota into the counters' halves) are computed
// inside the loops that read them, as the iota is: neither the iota nor its slices are
// materialized. Strided 2-D slices along and across the iota's dim, and unsigned halves of a 1-D one.
TEST(Fusion, SlicesOfAnIotaAreGeneratedInTheLoop) {
  const std::string text = R"(
HloModule iota_slices
ENTRY main {
  k = u32[] parameter(0)
  q = s32[] parameter(1)
  io = u32[8000] iota(), iota_dimension=0
  lo = u32[4000] slice(io), slice={[0:4000]}
  hi = u32[4000] slice(io), slice={[4000:8000]}
  kb = u32[4000] broadcast(k), dimensions={}
  a = u32[4000] add(lo, kb)
  c = u32[4000] xor(hi, kb)
  rows = s32[40,300] iota(), iota_dimension=0
  cols = s32[40,300] iota(), iota_dimension=1
  rs = s32[13,100] slice(rows), slice={[3:40:3], [1:300:3]}
  cs = s32[13,100] slice(cols), slice={[3:40:3], [1:300:3]}
  qb = s32[13,100] broadcast(q), dimensions={}
  m = s32[13,100] multiply(rs, cs)
  n = s32[13,100] add(m, qb)
  ROOT t = (u32[4000], u32[4000], s32[13,100]) tuple(a, c, n)
})";
  const std::vector<Array> args = {Array::FromVector<uint32_t>({}, {0x9e3779b9u}),
                                   Array::FromVector<int32_t>({}, {-7})};
  ExpectFusedEqualsUnfused(text, args);
  ExpectFusedEqualsUnfused(text, args, 2);
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  EXPECT_EQ(FusedLoops(*e).size(), 3u);
  for (const Step& st : e->program().entry->steps) {
    EXPECT_NE(st.inst->opcode(), Opcode::kIota) << st.inst->name();
    EXPECT_NE(st.inst->opcode(), Opcode::kSlice) << st.inst->name();
  }
  StatusOr<std::vector<Array>> out = e->Run(args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at(1).GetDouble(0), static_cast<double>(4000u ^ 0x9e3779b9u));
  EXPECT_EQ(out->at(2).GetDouble(12 * 100 + 99), 39.0 * 298.0 - 7.0);  // row 39, column 298
}

// A concatenate whose pieces are runs of its elements (along dim 0, or after dims of size 1), or
// a reshape of one, is read piece by piece inside the loops that use it: the joined array is never
// written. Pieces of 700, 1300 and 45 rows of 3 straddle the 512-element tiles; a concatenate
// along a later dim (its pieces interleave) stays a step of its own.
TEST(Fusion, ConcatenatesOfRunsAreReadPieceByPieceInTheLoop) {
  const std::string text = R"(
HloModule concat_runs
ENTRY main {
  a = f32[700,3] parameter(0)
  b = f32[1300,3] parameter(1)
  c = f32[45,3] parameter(2)
  j = f32[2045,3] concatenate(a, b, c), dimensions={0}
  e = f32[2045,3] exponential(j)
  u = u32[3000] parameter(3)
  v = u32[3000] parameter(4)
  uv = u32[6000] concatenate(u, v), dimensions={0}
  r = u32[1000,6] reshape(uv)
  nine = u32[] constant(9)
  nb = u32[1000,6] broadcast(nine), dimensions={}
  s = u32[1000,6] shift-right-logical(r, nb)
  x = f32[1,40,5] parameter(5)
  y = f32[1,2,5] parameter(6)
  xy = f32[1,42,5] concatenate(x, y), dimensions={1}
  n = f32[1,42,5] negate(xy)
  p = f32[40,5] parameter(7)
  q = f32[40,7] parameter(8)
  pq = f32[40,12] concatenate(p, q), dimensions={1}
  m = f32[40,12] multiply(pq, pq)
  ROOT t = (f32[2045,3], u32[1000,6], f32[1,42,5], f32[40,12]) tuple(e, s, n, m)
})";
  std::mt19937 rng(21);
  std::vector<Array> args = {RandomArray(DType::kF32, {700, 3}, rng), RandomArray(DType::kF32, {1300, 3}, rng),
                             RandomArray(DType::kF32, {45, 3}, rng)};
  std::vector<uint32_t> bits(3000);
  for (uint32_t& w : bits) w = static_cast<uint32_t>(rng());
  args.push_back(Array::FromVector<uint32_t>({3000}, bits));
  for (uint32_t& w : bits) w = static_cast<uint32_t>(rng());
  args.push_back(Array::FromVector<uint32_t>({3000}, bits));
  args.push_back(RandomArray(DType::kF32, {1, 40, 5}, rng));
  args.push_back(RandomArray(DType::kF32, {1, 2, 5}, rng));
  args.push_back(RandomArray(DType::kF32, {40, 5}, rng));
  args.push_back(RandomArray(DType::kF32, {40, 7}, rng));
  ExpectFusedEqualsUnfused(text, args);
  ExpectFusedEqualsUnfused(text, args, 2);
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<std::string> joins;
  for (const Step& st : e->program().entry->steps) {
    if (st.inst->opcode() == Opcode::kConcatenate) joins.push_back(st.inst->name());
  }
  EXPECT_EQ(joins, std::vector<std::string>{"pq"});
  StatusOr<std::vector<Array>> out = e->Run(args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at(1).GetDouble(999 * 6 + 5), static_cast<double>(bits[2999] >> 9));  // v's last element
  EXPECT_EQ(out->at(2).GetDouble(41 * 5 + 4), -args[6].GetDouble(1 * 5 + 4));          // y's last element
}

// A generator read by a dropped generator is still computed when the latter reads its value (the
// iota under a broadcast, a broadcast piece of a concatenate); only an iota under slices of it,
// or a concatenate under a reshape, is dropped with them.
TEST(Fusion, GeneratorsReadByDroppedGeneratorsAreStillComputed) {
  const std::string text = R"(
HloModule nested_generators
ENTRY main {
  i = s32[16] iota(), iota_dimension=0
  b = s32[16,5] broadcast(i), dimensions={0}
  p = s32[16,5] parameter(0)
  a = s32[16,5] add(b, p)
  k = f32[] parameter(1)
  kb = f32[10,3] broadcast(k), dimensions={}
  q = f32[20,3] parameter(2)
  j = f32[30,3] concatenate(kb, q), dimensions={0}
  r = f32[90] reshape(j)
  e = f32[90] negate(r)
  ROOT t = (s32[16,5], f32[90]) tuple(a, e)
})";
  std::mt19937 rng(8);
  const std::vector<Array> args = {RandomArray(DType::kS32, {16, 5}, rng), Array::FromVector<float>({}, {2.5f}),
                                   RandomArray(DType::kF32, {20, 3}, rng)};
  ExpectFusedEqualsUnfused(text, args);
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  StatusOr<std::vector<Array>> out = e->Run(args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at(0).GetDouble(15 * 5), 15.0 + args[0].GetDouble(15 * 5));
  EXPECT_EQ(out->at(1).GetDouble(29), -2.5);
}

// A loop's result is never written over an input a broadcast reads: the broadcast may transpose it
// (dimensions={1,0}), reading elements of later tiles that the in-place result would already have
// overwritten. The result here went to a's buffer and 1792 of 4096 elements came out wrong.
TEST(Fusion, AResultIsNotWrittenOverAnInputABroadcastTransposes) {
  const std::string text = R"(
HloModule transposing_broadcast
ENTRY main {
  x = f32[64,64] parameter(0)
  y = f32[64,64] parameter(1)
  a = f32[64,64] add(x, y)
  b = f32[64,64] broadcast(a), dimensions={1,0}
  ROOT r = f32[64,64] add(b, y)
})";
  std::mt19937 rng(31);
  const std::vector<Array> args = {RandomArray(DType::kF32, {64, 64}, rng), RandomArray(DType::kF32, {64, 64}, rng)};
  ExpectFusedEqualsUnfused(text, args);
  ExpectFusedEqualsUnfused(text, args, 2);
}

}  // namespace
}  // namespace xs
