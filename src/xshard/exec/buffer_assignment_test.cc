// Buffer assignment: the interval allocator (no two live buffers overlap, checked by brute force
// over random intervals; in-place reuse; best fit), the executor's arena plan (alias chains,
// while bodies, tuple outputs, donated arguments, results independent of later runs) and the
// plan's per-kind step payloads (which kind each op's step holds; a read of another kind aborts).
#include "xshard/exec/buffer_assignment.h"

#include <cmath>
#include <map>
#include <random>

#include "gtest/gtest.h"
#include "xshard/exec/executable.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/exec/fusion_plan.h"
#include "xshard/text/parse_test_util.h"

namespace xs {
namespace {

// Independent of BufferAssignmentIsValid: every pair alive at a common step, byte by byte.
bool NoOverlapWhileLive(const std::vector<BufferInterval>& iv, const BufferAssignment& a) {
  for (size_t i = 0; i < iv.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      bool both_live = false;
      for (int t = 0; t <= 1000 && !both_live; ++t) {
        both_live = iv[i].first <= t && t <= iv[i].last && iv[j].first <= t && t <= iv[j].last;
      }
      if (!both_live || iv[i].bytes == 0 || iv[j].bytes == 0) continue;
      const bool joined = (a.reused[i] && iv[i].reuse == static_cast<int>(j));
      if (joined) continue;
      const int64_t i0 = a.offsets[i], i1 = i0 + iv[i].bytes, j0 = a.offsets[j], j1 = j0 + iv[j].bytes;
      if (i0 < j1 && j0 < i1) return false;
    }
  }
  return true;
}

// Runs the op-by-op plan, whose temporaries are what these tests place in the arena (the fused
// plan keeps elementwise chains in tile buffers).
ExecuteOptions OpByOp() {
  ExecuteOptions o;
  o.fusion = false;
  return o;
}

TEST(BufferAssignment, RandomIntervalsNeverOverlapWhileLive) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferInterval> iv;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const int first = static_cast<int>(rng() % 60);
      iv.push_back({static_cast<int64_t>(rng() % 5000), first, first + static_cast<int>(rng() % 20), -1});
      if (i > 0 && rng() % 3 == 0) iv.back().reuse = static_cast<int>(rng() % i);
    }
    const BufferAssignment a = AssignBuffers(iv);
    ASSERT_TRUE(NoOverlapWhileLive(iv, a)) << "trial " << trial;
    ASSERT_TRUE(BufferAssignmentIsValid(iv, a));
    int64_t sum = 0;
    for (const BufferInterval& b : iv) sum += AlignedBufferBytes(b.bytes);
    EXPECT_LE(a.arena_bytes, sum);
    for (int64_t off : a.offsets) EXPECT_EQ(off % 64, 0);
  }
}

TEST(BufferAssignment, DisjointLifetimesShareMemory) {
  // a [0,1], b [2,3]: one 128-byte slot; c [1,2] overlaps both and needs its own.
  std::vector<BufferInterval> iv = {{100, 0, 1, -1}, {128, 2, 3, -1}, {64, 1, 2, -1}};
  const BufferAssignment a = AssignBuffers(iv);
  EXPECT_EQ(a.offsets[0], a.offsets[1]);
  EXPECT_EQ(a.arena_bytes, 192);
}

TEST(BufferAssignment, InPlaceReuseOnlyWhenTheSourceDiesThere) {
  // b starts at 1 where a dies: it takes a's memory. d asks for c's memory, but c lives on.
  std::vector<BufferInterval> iv = {{256, 0, 1, -1}, {256, 1, 2, 0}, {256, 0, 5, -1}, {256, 3, 4, 2}};
  const BufferAssignment a = AssignBuffers(iv);
  EXPECT_TRUE(a.reused[1]);
  EXPECT_EQ(a.offsets[1], a.offsets[0]);
  EXPECT_FALSE(a.reused[3]);
  EXPECT_NE(a.offsets[3], a.offsets[2]);
  EXPECT_TRUE(NoOverlapWhileLive(iv, a));
  EXPECT_EQ(a.arena_bytes, 512);
}

using xs::testing::ParseOrFail;

TEST(ExecutorArena, AliasChainKeepsTheSourceAliveUntilItsLastUse) {
  // r2 views a's buffer through reshape and bitcast; b and c are made while r2 is alive, so they
  // must not take a's memory: a wrong plan would change r's values.
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule alias
ENTRY main {
  x = f32[4,4] parameter(0)
  a = f32[4,4] add(x, x)
  r1 = f32[16] reshape(a)
  r2 = f32[2,8] bitcast(r1)
  b = f32[4,4] multiply(x, x)
  c = f32[4,4] add(b, x)
  r3 = f32[4,4] reshape(r2)
  d = f32[4,4] subtract(r3, c)
  ROOT r = f32[4,4] transpose(d), dimensions={1,0}
})");
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  // a (then d over it in place) and b (then c over it): two 64-byte slots.
  EXPECT_EQ(e->arena_bytes(/*fused=*/false), 128);
  // Fused: b and c are tile temporaries; a (a loop output, read through the reshapes by the
  // second loop) gets a slot, and d (that loop's output, read by the transpose) runs over it;
  // the result r, written while d is read, gets the second.
  EXPECT_EQ(e->arena_bytes(), 128);
  std::vector<float> xs(16);
  for (int i = 0; i < 16; ++i) xs[i] = static_cast<float>(i);
  Array x = Array::FromVector<float>({4, 4}, xs);
  std::vector<Array> out = *e->Run(std::span<const Array>(&x, 1), OpByOp());
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      const int k = j * 4 + i;  // d[j][i] = 2k - (k * k + k)
      EXPECT_EQ(out[0].At({i, j}), 2.0 * k - (k * k + k)) << i << "," << j;
    }
  }
}

TEST(ExecutorArena, ResultFedInPlaceChainsUseTheOutputBuffer) {
  // r = subtract(r3, c) reaches the root and overwrites a in place: a (then r) and b (then c)
  // are the arena's two slots, r's alive to the end.
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule alias
ENTRY main {
  x = f32[4,4] parameter(0)
  a = f32[4,4] add(x, x)
  r1 = f32[16] reshape(a)
  b = f32[4,4] multiply(x, x)
  c = f32[4,4] add(b, x)
  r3 = f32[4,4] reshape(r1)
  ROOT r = f32[4,4] subtract(r3, c)
})");
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  EXPECT_EQ(e->arena_bytes(/*fused=*/false), 128);
  std::vector<float> xs(16);
  for (int i = 0; i < 16; ++i) xs[i] = static_cast<float>(i);
  Array x = Array::FromVector<float>({4, 4}, xs);
  std::vector<Array> out = *e->Run(std::span<const Array>(&x, 1), OpByOp());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[0].GetDouble(i), 2.0 * i - (i * i + i)) << i;
}

TEST(ExecutorArena, ResultsDoNotChangeWhenTheArenaIsReused) {
  // Tuple outputs, one of them a reshape alias: each run's results stay the caller's (views that
  // keep their arena from the next run).
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule t
ENTRY main {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  s = f32[8] add(x, y)
  t = f32[8] multiply(s, y)
  rs = f32[2,4] reshape(t)
  p = f32[8] multiply(x, y)
  ROOT out = (f32[2,4], f32[8], f32[8]) tuple(rs, p, s)
})");
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> a1 = {Array::Full(DType::kF32, {8}, 1.0), Array::Full(DType::kF32, {8}, 2.0)};
  std::vector<Array> a2 = {Array::Full(DType::kF32, {8}, 5.0), Array::Full(DType::kF32, {8}, 7.0)};
  std::vector<Array> first = *e->Run(a1);
  std::vector<Array> second = *e->Run(a2);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(first[0].GetDouble(3), 6.0);   // (1 + 2) * 2
  EXPECT_EQ(first[1].GetDouble(3), 2.0);   // 1 * 2
  EXPECT_EQ(first[2].GetDouble(3), 3.0);   // 1 + 2
  EXPECT_EQ(second[0].GetDouble(3), 84.0); // (5 + 7) * 7
  EXPECT_EQ(second[2].GetDouble(3), 12.0);
}

TEST(ExecutorArena, WhileBodyTemporariesUseAFixedRegion) {
  // The body makes two temporaries per iteration; memory does not grow with the trip count.
  auto text = [](int trips) {
    return StrCat(R"(
HloModule w
body {
  p = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[1024] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  half = f32[] constant(0.5)
  h = f32[1024] broadcast(half), dimensions={}
  t1 = f32[1024] multiply(v, h)
  t2 = f32[1024] add(t1, h)
  v1 = f32[1024] add(t2, t1)
  ROOT r = (s32[], f32[1024]) tuple(i1, v1)
}
cond {
  p = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant()", trips, R"()
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[1024] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[1024]) tuple(zero, x)
  w = (s32[], f32[1024]) while(init), condition=cond, body=body
  ROOT v = f32[1024] get-tuple-element(w), index=1
})");
  };
  std::unique_ptr<Module> m3 = ParseOrFail(text(3)), m30 = ParseOrFail(text(30));
  std::unique_ptr<Executable> e3 = *Executable::Create(*m3), e30 = *Executable::Create(*m30);
  EXPECT_EQ(e3->arena_bytes(false), e30->arena_bytes(false));
  EXPECT_GT(e3->arena_bytes(false), 0);
  Array x = Array::Full(DType::kF32, {1024}, 1.0);
  ExecuteStats s3, s30;
  std::vector<Array> o3 = *e3->Run(std::span<const Array>(&x, 1), OpByOp(), &s3);
  std::vector<Array> o30 = *e30->Run(std::span<const Array>(&x, 1), OpByOp(), &s30);
  EXPECT_EQ(s3.peak_bytes, s30.peak_bytes);
  // v -> 2 * (0.5 v) + 0.5 = v + 0.5 per trip.
  EXPECT_EQ(o3[0].GetDouble(10), 2.5);
  EXPECT_EQ(o30[0].GetDouble(10), 16.0);
}

TEST(ExecutorArena, DonatedArgumentsAreWrittenInPlaceNotCopiedToTheArena) {
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule d
ENTRY main {
  a = f32[1024] parameter(0)
  b = f32[1024] parameter(1)
  c = f32[1024] multiply(a, b)
  d = f32[1024] add(c, b)
  ROOT e = f32[1024] negate(d)
})");
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> args = {Array::Full(DType::kF32, {1024}, 3.0), Array::Full(DType::kF32, {1024}, 2.0)};
  const std::byte* a_buffer = args[0].data();
  ExecuteStats stats;
  std::vector<Array> out = *e->RunDonated(std::move(args), {}, &stats);
  EXPECT_EQ(out[0].GetDouble(5), -8.0);  // -(3 * 2 + 2)
  EXPECT_EQ(out[0].data(), a_buffer);
  // The whole chain runs in a's buffer; the arena still reserves the result's planned buffer
  // (the plan does not know whether a run donates).
  EXPECT_EQ(e->arena_bytes(), 4096);
  EXPECT_EQ(stats.peak_bytes, 2 * 4096 + 4096);  // the two donated arguments and the arena
}

// Results of kernels (dot, transpose, slice, iota, concatenate, a fused loop and its reduce)
// live in the arena, and so does the result: a fused run allocates nothing, so peak = arena.
TEST(ExecutorArena, KernelResultsAreArenaBuffers) {
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule k
add {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
ENTRY main {
  x = f32[16,16] parameter(0)
  d = f32[16,16] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[16,16] transpose(d), dimensions={1,0}
  s = f32[8,16] slice(t), slice={[0:8], [0:16]}
  i = f32[8,16] iota(), iota_dimension=1
  c = f32[16,16] concatenate(s, i), dimensions={0}
  e = f32[16,16] exponential(c)
  z = f32[] constant(0)
  r = f32[16] reduce(e, z), dimensions={1}, to_apply=add
  ROOT o = f32[16] negate(r)
})");
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  // x[i][j] = 1 when i == j + 1 (a shift): d = x @ x has d[i][j] = 1 when i == j + 2.
  Array x(DType::kF32, {16, 16});
  for (int i = 1; i < 16; ++i) x.SetDouble(i * 16 + i - 1, 1.0);
  for (bool fused : {true, false}) {
    ExecuteOptions options;
    options.fusion = fused;
    ExecuteStats stats;
    std::vector<Array> out = *e->Run(std::span<const Array>(&x, 1), options, &stats);
    EXPECT_GT(e->arena_bytes(fused), 0);
    // Fused, the f32[16] result is in the arena; op by op, the reduce makes its own 64-byte
    // buffer and the negate result is written over it.
    EXPECT_EQ(stats.peak_bytes, e->arena_bytes(fused) + (fused ? 0 : 64)) << "fused=" << fused;
    // Rows 0..7 of c are rows of t = d^T: t[i][j] = 1 when j == i + 2, so each row holds one 1
    // (sum of exp = 15 + e) for i + 2 < 16, all rows here; rows 8..15 are iota 0..15.
    double iota_row = 0;
    for (int j = 0; j < 16; ++j) iota_row += std::exp(static_cast<double>(j));
    for (int i = 0; i < 16; ++i) {
      const double want = -(i < 8 ? 15.0 + std::exp(1.0) : iota_row);
      EXPECT_NEAR(out[0].GetDouble(i), want, 1e-5 * std::abs(want)) << i << " fused=" << fused;
    }
  }
}

TEST(ExecutorArena, ConvertToAWiderTypeIsNeverWrittenInPlace) {
  // f16[1,2] (4 B) and f32[1,2] (8 B) both round up to one 64-byte slot; converting in place
  // would overwrite the second f16 with the first f32's upper half.
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule widen
ENTRY main {
  x = f32[1,2] parameter(0)
  h = f16[1,2] convert(x)
  c = f16[1,2] cosine(h)
  w = f32[1,2] convert(c)
  ROOT r = f32[1,4] concatenate(w, x), dimensions={1}
})");
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  Array x = Array::FromVector<float>({1, 2}, {1.0f, 2.0f});
  std::vector<Array> out = *e->Run(std::span<const Array>(&x, 1), OpByOp());
  EXPECT_NEAR(out[0].GetDouble(0), 0.5403, 1e-3);   // cos(1)
  EXPECT_NEAR(out[0].GetDouble(1), -0.4161, 1e-3);  // cos(2)
  EXPECT_EQ(out[0].GetDouble(3), 2.0);
}

// dot, exp + add (fused into one loop), sort, reduce and topk, each step's payload kind by
// instruction name in the fused and the unfused plan.
constexpr std::string_view kPayloadKinds = R"(
HloModule kinds
less { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT }
sum { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
ENTRY main {
  x = f32[8,8] parameter(0)
  y = f32[8,8] parameter(1)
  d = f32[8,8] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[8,8] exponential(d)
  a = f32[8,8] add(e, y)
  s = f32[8,8] sort(a), dimensions={1}, to_apply=less
  z = f32[] constant(0)
  r = f32[8] reduce(s, z), dimensions={1}, to_apply=sum
  k = (f32[8,2], s32[8,2]) topk(s), k=2, largest=true
  ROOT t = (f32[8], (f32[8,2], s32[8,2])) tuple(r, k)
})";

std::map<std::string, PayloadKind> KindsByInstruction(const ComputationPlan& plan) {
  std::map<std::string, PayloadKind> kinds;
  for (const Step& step : plan.steps) kinds[step.inst->name()] = step.payload_kind();
  return kinds;
}

TEST(StepPayload, EachOpFamilyHoldsItsOwnPayloadKind) {
  std::unique_ptr<Module> m = ParseOrFail(kPayloadKinds);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  ASSERT_NE(e->program().unfused, nullptr);
  const std::map<std::string, PayloadKind> unfused = KindsByInstruction(*e->program().unfused->entry);
  const std::map<std::string, PayloadKind> want = {
      {"d", PayloadKind::kDot},     {"e", PayloadKind::kElementwise}, {"a", PayloadKind::kElementwise},
      {"s", PayloadKind::kSort},    {"z", PayloadKind::kNone},        {"r", PayloadKind::kCombine},
      {"k", PayloadKind::kExtra},   {"t", PayloadKind::kNone}};
  EXPECT_EQ(unfused, want);
  // Fused: exp and add are one loop step, named after its primary output `a`; the rest is kept.
  std::map<std::string, PayloadKind> fused_want = want;
  fused_want.erase("e");
  fused_want["a"] = PayloadKind::kFused;
  EXPECT_EQ(KindsByInstruction(*e->program().entry), fused_want);
  for (const Step& step : e->program().entry->steps) {
    if (step.payload_kind() != PayloadKind::kFused) continue;
    EXPECT_EQ(step.fused().loop->members, 2);
    EXPECT_EQ(step.FindPayload<DotPayload>(), nullptr);
  }
}

TEST(StepPayloadDeathTest, ReadingAnotherKindsPayloadAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::unique_ptr<Module> m = ParseOrFail(kPayloadKinds);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  const Step* dot = nullptr;
  for (const Step& step : e->program().entry->steps) {
    if (step.inst->name() == "d") dot = &step;
  }
  ASSERT_NE(dot, nullptr);
  EXPECT_NE(dot->dot().plan, nullptr);
  EXPECT_DEATH((void)dot->sort(), "step of 'd' holds a dot payload; its handler read it as sort");
  EXPECT_DEATH((void)dot->elementwise(), "holds a dot payload; its handler read it as elementwise");
}

}  // namespace
}  // namespace xs
