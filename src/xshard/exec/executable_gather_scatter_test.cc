// The executor's gather and scatter: results written into planned buffers, a scatter operand
// overwritten in place only when nothing else reads it (a donated argument, a dying temporary),
// never a caller's argument or an operand that is also the updates.
#include "gtest/gtest.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parse_test_util.h"

namespace xs {
namespace {

using xs::testing::ParseOrFail;

constexpr std::string_view kScatterAdd = R"(
HloModule s
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
ENTRY main {
  x = f32[4,2] parameter(0)
  i = s32[3,1] parameter(1)
  u = f32[3,2] parameter(2)
  ROOT r = f32[4,2] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})";

std::vector<Array> ScatterArgs() {
  return {Array::FromVector<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), Array::FromVector<int32_t>({3, 1}, {2, 0, 2}),
          Array::FromVector<float>({3, 2}, {10, 20, 30, 40, 50, 60})};
}

// Row 2 gets updates 0 and 2, row 0 update 1.
Array ScatterAddWant() { return Array::FromVector<float>({4, 2}, {31, 42, 3, 4, 65, 86, 7, 8}); }

TEST(ExecutableGatherScatter, ScatterLeavesTheCallersArgumentAlone) {
  std::unique_ptr<Module> m = ParseOrFail(kScatterAdd);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  const std::vector<Array> args = ScatterArgs();
  for (int run = 0; run < 2; ++run) {
    StatusOr<std::vector<Array>> out = e->Run(args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0], ScatterAddWant());
    EXPECT_EQ(args[0], ScatterArgs()[0]);
  }
}

TEST(ExecutableGatherScatter, DonatedOperandIsScatteredInPlace) {
  std::unique_ptr<Module> m = ParseOrFail(kScatterAdd);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> args = ScatterArgs();
  const std::byte* x_buffer = args[0].data();
  StatusOr<std::vector<Array>> out = e->RunDonated(std::move(args));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0], ScatterAddWant());
  EXPECT_EQ((*out)[0].data(), x_buffer);  // no copy of the operand
}

TEST(ExecutableGatherScatter, OperandThatIsAlsoTheUpdatesIsNotOverwritten) {
  // out[idx[k]] += x[k] with the original x: x = [1, 2, 3, 4], idx = [3, 2, 1, 0] gives 5
  // everywhere. Read from a buffer already updated, element 1 would get 2 + 5.
  constexpr std::string_view kText = R"(
HloModule s
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
ENTRY main {
  p = f32[4] parameter(0)
  i = s32[4,1] parameter(1)
  x = f32[4] negate(p)
  a = f32[4] scatter(p, i, p), update_window_dims={}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  b = f32[4] scatter(x, i, x), update_window_dims={}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT t = (f32[4], f32[4]) tuple(a, b)
})";
  std::unique_ptr<Module> m = ParseOrFail(kText);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  for (int run = 0; run < 2; ++run) {
    std::vector<Array> args = {Array::FromVector<float>({4}, {1, 2, 3, 4}),
                               Array::FromVector<int32_t>({4, 1}, {3, 2, 1, 0})};
    StatusOr<std::vector<Array>> out = run == 0 ? e->Run(args) : e->RunDonated(std::move(args));
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0], Array::FromVector<float>({4}, {5, 5, 5, 5})) << "run " << run;
    EXPECT_EQ((*out)[1], Array::FromVector<float>({4}, {-5, -5, -5, -5})) << "run " << run;
  }
}

TEST(ExecutableGatherScatter, SegmentSumOfABroadcastAndAGatherOfItsRows) {
  // jax.ops.segment_sum into zeros (a dying broadcast: scattered in place), then jnp.take of
  // its rows (ids clamped) feeding an add; run twice on the same arena.
  constexpr std::string_view kText = R"(
HloModule s
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
ENTRY main {
  x = f32[5,3] parameter(0)
  seg = s32[5] parameter(1)
  ids = s32[4] parameter(2)
  zero = f32[] constant(0)
  z = f32[3,3] broadcast(zero), dimensions={}
  seg2 = s32[5,1] reshape(seg)
  sums = f32[3,3] scatter(z, seg2, x), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ids2 = s32[4,1] reshape(ids)
  rows = f32[4,3] gather(sums, ids2), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0},
      index_vector_dim=1, slice_sizes={1,3}
  one = f32[] constant(1)
  ones = f32[4,3] broadcast(one), dimensions={}
  ROOT r = f32[4,3] add(rows, ones)
})";
  std::unique_ptr<Module> m = ParseOrFail(kText);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  const std::vector<Array> args = {
      Array::FromVector<float>({5, 3}, {1, 2, 3, 10, 20, 30, 100, 200, 300, 4, 5, 6, 7, 8, 9}),
      Array::FromVector<int32_t>({5}, {2, 0, 2, 7, 0}),  // segment 7 is out of range: dropped
      Array::FromVector<int32_t>({4}, {0, 2, -1, 5})};   // -1 clamps to 0, 5 to 2
  // Segment sums: 0 = rows 1 + 4 = [17, 28, 39]; 1 = 0; 2 = rows 0 + 2 = [101, 202, 303].
  const Array want = Array::FromVector<float>({4, 3}, {18, 29, 40, 102, 203, 304, 18, 29, 40, 102, 203, 304});
  for (int run = 0; run < 2; ++run) {
    StatusOr<std::vector<Array>> out = e->Run(args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0], want) << "run " << run;
  }
}

TEST(ExecutableGatherScatter, VariadicScatterWithAGenericCombinerStillWorks) {
  // (value, count) pairs combined by one computation: the kept value is the larger one, the
  // counts add.
  constexpr std::string_view kText = R"(
HloModule s
comb { a = f32[] parameter(0)
  n = s32[] parameter(1)
  b = f32[] parameter(2)
  m = s32[] parameter(3)
  mx = f32[] maximum(a, b)
  s = s32[] add(n, m)
  ROOT t = (f32[], s32[]) tuple(mx, s) }
ENTRY main {
  v = f32[3] parameter(0)
  c = s32[3] parameter(1)
  i = s32[4,1] parameter(2)
  uv = f32[4] parameter(3)
  uc = s32[4] parameter(4)
  ROOT r = (f32[3], s32[3]) scatter(v, c, i, uv, uc), update_window_dims={}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
})";
  std::unique_ptr<Module> m = ParseOrFail(kText);
  // Index 3 is out of range: that update is dropped.
  const std::vector<Array> args = {Array::FromVector<float>({3}, {0, 5, 1}), Array::FromVector<int32_t>({3}, {0, 0, 0}),
                                   Array::FromVector<int32_t>({4, 1}, {1, 2, 1, 3}),
                                   Array::FromVector<float>({4}, {3, 4, 9, 8}),
                                   Array::FromVector<int32_t>({4}, {1, 1, 1, 1})};
  StatusOr<std::vector<Array>> out = Execute(*m, args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0], Array::FromVector<float>({3}, {0, 9, 4}));
  EXPECT_EQ((*out)[1], Array::FromVector<int32_t>({3}, {0, 2, 1}));
}

}  // namespace
}  // namespace xs
