// The entry's results live in the planned arena: the peak of a run is the arena (hand-computed
// sizes), and results stay valid as views that keep their arena out of later runs.
#include <cmath>

#include "gtest/gtest.h"
#include "xshard/runtime/client.h"
#include "xshard/exec/executable.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/text/parse_test_util.h"

namespace xs {
namespace {

// r = reverse(x) (4 KiB, steps 0-1), d = r @ x (4 KiB, steps 1-2), e = reverse(d) (4 KiB, the
// result: step 2 to the end). At most two are alive at once: the arena is 8 KiB, and a run
// allocates nothing else (the result is the arena's, not a third buffer).
constexpr std::string_view kReverseDotReverse = R"(
HloModule rdr
ENTRY main {
  x = f32[32,32] parameter(0)
  r = f32[32,32] reverse(x), dimensions={0}
  d = f32[32,32] dot(r, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[32,32] reverse(d), dimensions={1}
})";

using xs::testing::ParseOrFail;

Array Input(float scale) {
  Array x(DType::kF32, {32, 32});
  for (int64_t i = 0; i < 32 * 32; ++i) x.SetDouble(i, scale * static_cast<double>((i * 7) % 13 - 6));
  return x;
}

// e[i][j] = sum_k x[31-i][k] * x[k][31-j], computed in double.
void ExpectReverseDotReverse(const Array& x, const Array& e) {
  ASSERT_EQ(e.dims(), (std::vector<int64_t>{32, 32}));
  for (int64_t i = 0; i < 32; ++i) {
    for (int64_t j = 0; j < 32; ++j) {
      double want = 0;
      for (int64_t k = 0; k < 32; ++k) want += x.GetDouble((31 - i) * 32 + k) * x.GetDouble(k * 32 + 31 - j);
      ASSERT_NEAR(e.GetDouble(i * 32 + j), want, 1e-4 * (1 + std::abs(want))) << i << "," << j;
    }
  }
}

TEST(ExecutableMemory, PeakIsTheArenaWhichHoldsTheResult) {
  std::unique_ptr<Module> m = ParseOrFail(kReverseDotReverse);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  EXPECT_EQ(e->arena_bytes(), 2 * 4096);
  const Array x = Input(1.0f);
  ExecuteStats stats;
  std::vector<Array> out = *e->Run(std::span<const Array>(&x, 1), {}, &stats);
  EXPECT_EQ(stats.peak_bytes, 2 * 4096);
  ExpectReverseDotReverse(x, out[0]);
}

TEST(ExecutableMemory, ExtraOutputsOfAFusedLoopAreArenaBuffers) {
  // a = -x and b = a * a fuse into one loop with two outputs (the dot reads both): a, b and the
  // result d = a @ b are alive at the dot, 3 x 4 KiB, all in the arena; nothing else.
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule multi
ENTRY main {
  x = f32[32,32] parameter(0)
  a = f32[32,32] negate(x)
  b = f32[32,32] multiply(a, a)
  ROOT d = f32[32,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  EXPECT_EQ(e->arena_bytes(), 3 * 4096);
  const Array x = Input(0.25f);
  ExecuteStats stats;
  std::vector<Array> out = *e->Run(std::span<const Array>(&x, 1), {}, &stats);
  EXPECT_EQ(stats.peak_bytes, 3 * 4096);
  // d[i][j] = sum_k -x[i][k] * x[k][j]^2
  for (int64_t i = 0; i < 32; ++i) {
    for (int64_t j = 0; j < 32; ++j) {
      double want = 0;
      for (int64_t k = 0; k < 32; ++k) want -= x.GetDouble(i * 32 + k) * x.GetDouble(k * 32 + j) * x.GetDouble(k * 32 + j);
      ASSERT_NEAR(out[0].GetDouble(i * 32 + j), want, 1e-4 * (1 + std::abs(want))) << i << "," << j;
    }
  }
}

TEST(ExecutableMemory, ResultsOutliveLaterRunsAndTheExecutable) {
  std::unique_ptr<Module> m = ParseOrFail(kReverseDotReverse);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  const Array x1 = Input(1.0f), x2 = Input(-0.5f);
  std::vector<Array> out1 = *e->Run(std::span<const Array>(&x1, 1));
  // out1 still views its arena: the second run takes another one.
  std::vector<Array> out2 = *e->Run(std::span<const Array>(&x2, 1));
  EXPECT_NE(out1[0].data(), out2[0].data());
  ExpectReverseDotReverse(x1, out1[0]);
  ExpectReverseDotReverse(x2, out2[0]);
  // A dropped result's arena is reused by the next run.
  const std::byte* freed = out2[0].data();
  out2.clear();
  std::vector<Array> out3 = *e->Run(std::span<const Array>(&x2, 1));
  EXPECT_EQ(out3[0].data(), freed);
  e.reset();
  ExpectReverseDotReverse(x1, out1[0]);
  ExpectReverseDotReverse(x2, out3[0]);
  // A copy owns its data.
  Array copy = out1[0];
  EXPECT_TRUE(copy.owns_data());
  out1.clear();
  ExpectReverseDotReverse(x1, copy);
}

TEST(ExecutableMemory, SpmdPeakIsArgumentsPlusArena) {
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule rdr_spmd, num_partitions=2
ENTRY main {
  x = f32[32,32] parameter(0)
  r = f32[32,32] reverse(x), dimensions={0}
  d = f32[32,32] dot(r, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[32,32] reverse(d), dimensions={1}
})");
  StatusOr<std::unique_ptr<SpmdExecutable>> e = SpmdExecutable::Create(*m);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ClientOptions options;
  options.num_devices = 2;
  std::unique_ptr<Client> client = *Client::Create(options);
  const Array x0 = Input(1.0f), x1 = Input(2.0f);
  StatusOr<SpmdResult> r = (*e)->Run(*client, std::vector<std::vector<const Array*>>{{&x0}, {&x1}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(r->memory[d].argument_bytes, 4096);
    EXPECT_EQ(r->memory[d].arena_bytes, 2 * 4096);
    EXPECT_EQ(r->memory[d].peak_bytes, 4096 + 2 * 4096);
    EXPECT_EQ(r->memory[d].live_bytes, 4096);
  }
  ExpectReverseDotReverse(x0, r->outputs[0][0]);
  ExpectReverseDotReverse(x1, r->outputs[1][0]);
}

}  // namespace
}  // namespace xs
