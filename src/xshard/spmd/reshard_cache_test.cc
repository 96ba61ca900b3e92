// The per-computation reshard cache (Emitter::FindReshard): one value resharded the same way for
// two users is moved once; other targets, other values and other computations are not merged.
// Each case is checked against the one-device run and its collectives are pinned.
#include <gtest/gtest.h>

#include <algorithm>

#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

// PyTorch/XLA's batch-norm step: x split over the batch feeds batch-norm-training and
// batch-norm-grad, each of which needs it whole: one all-gather (3/4 of 512 B = 384 B), not two.
TEST(ReshardCacheTest, BatchNormTrainingAndGradShareOneAllGather) {
  const PartitionResult r = testing::PartitionAndCompare(R"(
ENTRY main {
  x = f32[8,4,2,2] parameter(0), sharding={devices=[4,1,1,1]<=[4]}
  scale = f32[4] parameter(1), sharding={replicated}
  offset = f32[4] parameter(2), sharding={replicated}
  gy = f32[8,4,2,2] parameter(3), sharding={replicated}
  bn = (f32[8,4,2,2], f32[4], f32[4]) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1, sharding={replicated}
  y = f32[8,4,2,2] get-tuple-element(bn), index=0, sharding={replicated}
  mean = f32[4] get-tuple-element(bn), index=1, sharding={replicated}
  var = f32[4] get-tuple-element(bn), index=2, sharding={replicated}
  grad = (f32[8,4,2,2], f32[4], f32[4]) batch-norm-grad(x, scale, mean, var, gy), epsilon=0.001, feature_index=1, sharding={replicated}
  gx = f32[8,4,2,2] get-tuple-element(grad), index=0, sharding={replicated}
  ROOT out = (f32[8,4,2,2], f32[8,4,2,2]) tuple(y, gx), sharding={{replicated}, {replicated}}
}
)", 4, {1});
  ASSERT_EQ(testing::CollectiveKinds(r), std::vector<std::string>{"all-gather"});
  EXPECT_EQ(r.report.collectives[0].bytes, 8 * 4 * 2 * 2 * 4 * 3 / 4);
  int all_gathers = 0;
  for (const Computation* c : r.module->computations()) {
    for (const Instruction* inst : c->instructions()) all_gathers += inst->opcode() == Opcode::kAllGather;
  }
  EXPECT_EQ(all_gathers, 1);
}

// Two targets of one value are two reshards: x is asked for whole twice (one all-gather) and
// split along dim 1 once (an all-to-all): the repeated target is emitted once, the other apart.
TEST(ReshardCacheTest, DifferentTargetsStayApart) {
  const PartitionResult r = testing::PartitionAndCompare(R"(
ENTRY main {
  x = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  s1 = f32[8,8] custom-call(x), custom_call_target="Sharding", sharding={replicated}
  s2 = f32[8,8] custom-call(x), custom_call_target="Sharding", sharding={replicated}
  s3 = f32[8,8] custom-call(x), custom_call_target="Sharding", sharding={devices=[1,4]<=[4]}
  a = f32[8,8] negate(s1), sharding={replicated}
  c = f32[8,8] exponential(s2), sharding={replicated}
  b = f32[8,8] abs(s3), sharding={devices=[1,4]<=[4]}
  d = f32[8,8] add(a, c), sharding={replicated}
  ROOT t = (f32[8,8], f32[8,8]) tuple(d, b), sharding={{replicated}, {devices=[1,4]<=[4]}}
}
)", 4, {1});
  std::vector<std::string> kinds = testing::CollectiveKinds(r);
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(kinds, (std::vector<std::string>{"all-gather", "all-to-all"}));
}

// A step of a longer route reuses an earlier reshard: x (a, b) on a 2 x 2 mesh is gathered along
// dim 1 for s1, and s2 (dim 1 split over a) is reached by the same gather and then an all-to-all.
// The gather is emitted once (it used to be emitted again inside s2's route: two all-gathers).
TEST(ReshardCacheTest, ARouteStepReusesAnEarlierReshardOfTheSameValue) {
  const PartitionResult r = testing::PartitionAndCompare(R"(
ENTRY main {
  x = f32[8,8] parameter(0), sharding={devices=[2,2]<=[4]}
  s1 = f32[8,8] custom-call(x), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  s2 = f32[8,8] custom-call(x), custom_call_target="Sharding", sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}
  a = f32[8,8] negate(s1), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  b = f32[8,8] abs(s2), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}
  ROOT t = (f32[8,8], f32[8,8]) tuple(a, b), sharding={{devices=[2,1,2]<=[4] last_tile_dim_replicate}, {devices=[1,2,2]<=[4] last_tile_dim_replicate}}
}
)",
                                                         4, {1});
  std::vector<std::string> kinds = testing::CollectiveKinds(r);
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(kinds, (std::vector<std::string>{"all-gather", "all-to-all"}));
}

// The cache is per computation: a value resharded in the entry and the same global value's
// parameter resharded inside a called computation each move it (the callee cannot see the
// entry's instructions).
TEST(ReshardCacheTest, CalledComputationsKeepTheirOwnReshards) {
  const PartitionResult r = testing::PartitionAndCompare(R"(
body {
  p = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT n = f32[8,8] negate(p), sharding={replicated}
}

ENTRY main {
  x = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  a = f32[8,8] abs(x), sharding={replicated}
  c = f32[8,8] call(x), to_apply=body, sharding={replicated}
  ROOT d = f32[8,8] add(a, c), sharding={replicated}
}
)", 4, {1});
  EXPECT_EQ(testing::CollectiveKinds(r), std::vector<std::string>(2, "all-gather"));
}

// A plan's cost counts a reshard the computation already emitted as free: x is gathered whole for
// `s`, so the dot that contracts x's split dim reads the gathered copy (no collective of its own)
// instead of summing partial products with an all-reduce (896 B, cheaper than a second gather of
// 14 KiB, but not than reusing the first).
TEST(ReshardCacheTest, PlansCountACachedReshardAsFree) {
  const PartitionResult r = testing::PartitionAndCompare(R"(
ENTRY main {
  x = f32[64,64] parameter(0), sharding={devices=[1,8]<=[8]}
  w = f32[64,2] parameter(1), sharding={replicated}
  s = f32[64,64] custom-call(x), custom_call_target="Sharding", sharding={replicated}
  n = f32[64,64] negate(s), sharding={replicated}
  d = f32[64,2] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
  ROOT t = (f32[64,64], f32[64,2]) tuple(n, d), sharding={{replicated}, {replicated}}
}
)", 8, {1});
  EXPECT_EQ(testing::CollectiveKinds(r), std::vector<std::string>{"all-gather"});
}

}  // namespace
}  // namespace xs::spmd
