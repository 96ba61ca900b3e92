// One test per handler behaviour: each module is partitioned, run on N devices with NaN (or 77)
// in every input's padding, and compared with the single-device result; the collectives the
// partitioner chose are pinned where they are the point of the test.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs::spmd {
namespace {

using testing::CollectiveKinds;

// Partitions `body` (an ENTRY computation, plus helper computations) for n partitions, checks the
// numbers on TestInputs(seed), and returns the result for further checks.
PartitionResult Check(const std::string& body, int64_t n, uint64_t seed = 3) {
  return testing::PartitionAndCompare(body, n, {seed});
}

const char* kSum = "sum { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n";
const char* kMax = "mx { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] maximum(a, b) }\n";

TEST(ReduceHandlerTest, UnevenShardedReducedDimIsMaskedWithTheInitValue) {
  // 10 rows over 4 devices: shards of 3, the last holds one real row and two padding rows (NaN).
  PartitionResult r = Check(StrCat(kSum, R"(ENTRY e {
  x = f32[10,4] parameter(0), sharding={devices=[4,1]<=[4]}
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(x, z), dimensions={0}, to_apply=sum, sharding={replicated}
})"), 4);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-reduce"}));
}

TEST(ReduceHandlerTest, MaxOverUnevenShardsIgnoresPadding) {
  Check(StrCat(kMax, R"(ENTRY e {
  x = f32[7,3] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  z = f32[] constant(-inf)
  ROOT r = f32[3] reduce(x, z), dimensions={0}, to_apply=mx, sharding={replicated}
})"), 4);
}

TEST(ReduceHandlerTest, KeptDimStaysShardedWithoutCollectives) {
  PartitionResult r = Check(StrCat(kSum, R"(ENTRY e {
  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  z = f32[] constant(0)
  ROOT r = f32[8] reduce(x, z), dimensions={1}, to_apply=sum, sharding={devices=[4]<=[4]}
})"), 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

TEST(DotHandlerTest, UnevenContractingDimIsMaskedOnBothOperands) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[4,10] parameter(0), sharding={devices=[1,4]<=[4]}
  y = f32[10,3] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT d = f32[4,3] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
})", 4);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-reduce"}));
}

TEST(DotHandlerTest, ContractingShardedOutputRowsShardedOnTheSameAxesIsAReduceScatter) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[8,16] parameter(0), sharding={devices=[1,4]<=[4]}
  y = f32[16,8] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT d = f32[8,8] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[4]}
})", 4);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"reduce-scatter"}));
}

TEST(DotHandlerTest, OperandsClaimingOneAxisKeepTheSplitThatLeadsToTheTarget) {
  // x P(x, y) @ w P(y, x) into P(y, x) on a 2 x 4 mesh: both operands split K over y, and x's
  // rows and w's columns both want x. Keeping w's columns: gather x's rows (f32[16,4], 128 B),
  // multiply locally into partial sums f32[16,8] over y, reduce-scatter them over y along the
  // rows (3/4 of 512 B = 384 B): the target, 512 B. Keeping x's rows all-reduces f32[8,16]
  // (768 B) and still has to move the result (1 KiB in all; XLA: 896 B).
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[16,16] parameter(0), sharding={devices=[2,4]<=[8]}
  w = f32[16,16] parameter(1), sharding={devices=[4,2]<=[2,4]T(1,0)}
  ROOT d = f32[16,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,2]<=[2,4]T(1,0)}
})",
                            8);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-gather", "reduce-scatter"}));
  EXPECT_EQ(r.report.TotalCollectiveBytes(), 512);
}

TEST(DotHandlerTest, BatchDimShardedOnAllOperandsNeedsNoCollectives) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[4,3,5] parameter(0), sharding={devices=[4,1,1]<=[4]}
  y = f32[4,5,2] parameter(1), sharding={devices=[4,1,1]<=[4]}
  ROOT d = f32[4,3,2] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[4,1,1]<=[4]}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

TEST(DotHandlerTest, FreeDimsShardedOnTwoMeshAxesGiveA2DTiledResult) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[6,5] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  y = f32[5,6] parameter(1), sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT d = f32[6,6] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,2]<=[4]}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

TEST(ElementwiseHandlerTest, OperandInAnotherLayoutIsMovedWithAnAllToAll) {
  PartitionResult r = Check(R"(ENTRY e {
  a = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  b = f32[8,8] parameter(1), sharding={devices=[1,4]<=[4]}
  ROOT s = f32[8,8] add(a, b), sharding={devices=[4,1]<=[4]}
})", 4);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-to-all"}));
}

TEST(ElementwiseHandlerTest, SelectCompareClampAndConvertKeepTheSharding) {
  PartitionResult r = Check(R"(ENTRY e {
  a = f32[9,4] parameter(0), sharding={devices=[4,1]<=[4]}
  b = f32[9,4] parameter(1), sharding={devices=[4,1]<=[4]}
  lo = f32[] constant(-1)
  hi = f32[] constant(2)
  p = pred[9,4] compare(a, b), direction=LT, sharding={devices=[4,1]<=[4]}
  s = f32[9,4] select(p, a, b), sharding={devices=[4,1]<=[4]}
  c = f32[9,4] clamp(lo, s, hi), sharding={devices=[4,1]<=[4]}
  ROOT i = s32[9,4] convert(c), sharding={devices=[4,1]<=[4]}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

TEST(ShapeHandlerTest, ReshapeMergingTheShardedMajorDimKeepsTheSharding) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT y = f32[48] reshape(x), sharding={devices=[4]<=[4]}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

TEST(ShapeHandlerTest, ReshapeSplittingAShardedDimKeepsTheShardingOnTheMajorPart) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[24,3] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT y = f32[4,6,3] reshape(x), sharding={devices=[4,1,1]<=[4]}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

TEST(ShapeHandlerTest, ReshapeOfAShardedMinorDimReshards) {
  Check(R"(ENTRY e {
  x = f32[8,6] parameter(0), sharding={devices=[1,2]<=[2]}
  ROOT y = f32[48] reshape(x), sharding={devices=[2]<=[2]}
})", 2);
}

TEST(ShapeHandlerTest, TransposeMovesTheShardingWithTheDim) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[5,8,3] parameter(0), sharding={devices=[1,4,1]<=[4]}
  ROOT y = f32[8,3,5] transpose(x), dimensions={1,2,0}, sharding={devices=[4,1,1]<=[4]}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

TEST(ShapeHandlerTest, BroadcastShardsItsNewDimForFree) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[6] parameter(0), sharding={replicated}
  ROOT y = f32[10,6] broadcast(x), dimensions={1}, sharding={devices=[4,1]<=[4]}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

// A bias v f32[16] over y (mesh x=2, y=4) broadcast to dim 0 and added to x f32[16,8,16] over x:
// the broadcast keeps v's split, the add needs x's. Resharding the broadcast result would gather
// the 3-D array (6 KiB per device); the vector is gathered instead (48 B) and broadcast again
// locally. Uneven (v f32[13] over y, rows 13 over x): the same, with the padded tiles.
TEST(ShapeHandlerTest, ABroadcastIsReshardedThroughItsOperand) {
  for (int64_t rows : {16, 13}) {
    const std::string r = std::to_string(rows);
    PartitionResult p = Check(
        StrCat(R"(ENTRY e {
  v = f32[)",
               r, R"(] parameter(0), sharding={devices=[4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  x = f32[)",
               r, R"(,8,16] parameter(1), sharding={devices=[2,1,1,4]<=[8] last_tile_dim_replicate}
  b = f32[)",
               r,
               R"(,8,16] broadcast(v), dimensions={0}, sharding={devices=[4,1,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  a = f32[)",
               r, R"(,8,16] add(b, x), sharding={devices=[2,1,1,4]<=[8] last_tile_dim_replicate}
  ROOT t = f32[)",
               r, R"(,8,16] tanh(a), sharding={devices=[2,1,1,4]<=[8] last_tile_dim_replicate}
})"),
        8);
    ASSERT_EQ(CollectiveKinds(p), (std::vector<std::string>{"all-gather"})) << rows;
    EXPECT_LE(p.report.collectives[0].bytes, 64) << rows;
  }
}

// batch_group_count: output feature o reads input batch (o / (O / G)) * (B / G) + output batch.
// The groups split over devices stay local (XLA's plan): a convolution with 4 groups of 2 batch
// rows, its batch over 4 and its output features over 4; a depthwise kernel gradient (JAX's
// f01b_i01o->01bf form, 16 channels as 16 groups) with the channels over 8, evenly and unevenly
// (12 channels).
TEST(ConvolutionHandlerTest, BatchGroupsSplitOverDevicesStayLocal) {
  PartitionResult grouped = Check(R"(ENTRY e {
  x = f32[8,6,6,3] parameter(0), sharding={devices=[4,1,1,1]<=[4]}
  w = f32[3,3,3,8] parameter(1), sharding={devices=[1,1,1,4]<=[4]}
  ROOT c = f32[2,6,6,8] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, batch_group_count=4, sharding={devices=[1,1,1,4]<=[4]}
})",
                                  4);
  EXPECT_TRUE(CollectiveKinds(grouped).empty());
  for (int64_t c : {16, 12}) {
    const std::string n = std::to_string(c);
    PartitionResult depthwise = Check(
        StrCat(R"(ENTRY e {
  x = f32[2,8,8,)",
               n, R"(] parameter(0), sharding={devices=[1,1,1,8]<=[8]}
  g = f32[2,8,8,)",
               n, R"(] parameter(1), sharding={devices=[1,1,1,8]<=[8]}
  ROOT c = f32[7,7,1,)",
               n,
               R"(] convolution(x, g), window={size=8x8 pad=3_3x3_3}, dim_labels=f01b_i01o->01bf, batch_group_count=)",
               n,
               R"(, sharding={devices=[1,1,1,8]<=[8]}
})"),
        8);
    EXPECT_TRUE(CollectiveKinds(depthwise).empty()) << c;
  }
  // More devices along the batch than groups (2 groups of 4 rows over 4), and 3 groups over a
  // 2 x 4 mesh with the output features over 4: right results, whatever moves.
  Check(R"(ENTRY e {
  x = f32[8,6,6,3] parameter(0), sharding={devices=[4,1,1,1]<=[4]}
  w = f32[3,3,3,8] parameter(1), sharding={replicated}
  ROOT c = f32[4,6,6,8] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, batch_group_count=2, sharding={devices=[4,1,1,1]<=[4]}
})",
        4);
  Check(R"(ENTRY e {
  x = f32[12,6,6,3] parameter(0), sharding={devices=[2,1,1,1,4]<=[8] last_tile_dim_replicate}
  w = f32[3,3,3,12] parameter(1), sharding={devices=[1,1,1,8]<=[8]}
  ROOT c = f32[4,6,6,12] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, batch_group_count=3, sharding={devices=[1,1,1,4,2]<=[8] last_tile_dim_replicate}
})",
        8);
}

TEST(HaloTest, SliceOfAShardedDimExchangesHalosInsteadOfGathering) {
  // Rows [3:11) of 16 on 4 devices: output tile k (2 rows) needs input rows 3+2k, 4+2k, which
  // lie in the device's own tile or its neighbour's: one permute from each side.
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[16,6] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT y = f32[8,6] slice(x), slice={[3:11], [0:6]}, sharding={devices=[4,1]<=[4]}
})", 4);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"collective-permute", "collective-permute"}));
}

TEST(HaloTest, SliceOfBothDimsOfATwoDimTiling) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[16,6] parameter(0), sharding={devices=[2,2]<=[4]}
  ROOT y = f32[8,5] slice(x), slice={[3:11], [1:6]}, sharding={devices=[2,2]<=[4]}
})", 4);
  for (const std::string& k : CollectiveKinds(r)) EXPECT_EQ(k, "collective-permute");
}

TEST(HaloTest, PadOfAnUnevenShardedDimFillsThePadValueAndExchangesHalos) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[10,3] parameter(0), sharding={devices=[4,1]<=[4]}
  v = f32[] constant(7)
  ROOT y = f32[13,4] pad(x, v), padding=2_1x0_1, sharding={devices=[4,1]<=[4]}
})", 4);
  for (const std::string& k : CollectiveKinds(r)) EXPECT_EQ(k, "collective-permute");
}

TEST(HaloTest, NegativePaddingCropsLikeASlice) {
  Check(R"(ENTRY e {
  x = s32[12] parameter(0), sharding={devices=[4]<=[4]}
  v = s32[] constant(-5)
  ROOT y = s32[11] pad(x, v), padding=-3_2, sharding={devices=[4]<=[4]}
})", 4);
}

TEST(HaloTest, WindowsReachingFarFallBackToGathering) {
  // [0:2] of 16 rows on 8 devices: tile 1's rows are beyond its neighbours; still correct.
  Check(R"(ENTRY e {
  x = f32[64,2] parameter(0), sharding={devices=[8,1]<=[8]}
  ROOT y = f32[8,2] slice(x), slice={[40:48], [0:2]}, sharding={devices=[8,1]<=[8]}
})", 8);
}

TEST(ShapeHandlerTest, PadConcatenateAndReverseAreCorrectOnUnevenShards) {
  Check(R"(ENTRY e {
  x = f32[7,3] parameter(0), sharding={devices=[4,1]<=[4]}
  y = f32[5,3] parameter(1), sharding={devices=[4,1]<=[4]}
  z = f32[] constant(9)
  p = f32[10,3] pad(x, z), padding=1_2x0_0, sharding={devices=[4,1]<=[4]}
  c = f32[15,3] concatenate(p, y), dimensions={0}, sharding={devices=[4,1]<=[4]}
  ROOT r = f32[15,3] reverse(c), dimensions={0}, sharding={devices=[4,1]<=[4]}
})", 4);
}

TEST(ShapeHandlerTest, DynamicSliceAndUpdateSliceKeepWholeDimsSharded) {
  Check(R"(ENTRY e {
  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  u = f32[8,2] parameter(1), sharding={devices=[4,1]<=[4]}
  i = s32[] constant(3)
  o = s32[] constant(0)
  d = f32[8,2] dynamic-slice(x, o, i), dynamic_slice_sizes={8,2}, sharding={devices=[4,1]<=[4]}
  a = f32[8,2] add(d, u), sharding={devices=[4,1]<=[4]}
  ROOT w = f32[8,6] dynamic-update-slice(x, a, o, o), sharding={devices=[4,1]<=[4]}
})", 4);
}

TEST(ShapeHandlerTest, SortAlongAnUnshardedDimKeepsRowsSharded) {
  PartitionResult r = Check(R"(
lt { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT c = pred[] compare(a, b), direction=LT }
ENTRY e {
  x = f32[8,5] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT s = f32[8,5] sort(x), dimensions={1}, to_apply=lt, sharding={devices=[4,1]<=[4]}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

TEST(ShapeHandlerTest, GatherWithShardedIndexBatch) {
  Check(R"(ENTRY e {
  t = f32[6,4] parameter(0), sharding={replicated}
  i = s32[8,1] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT g = f32[8,4] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, sharding={devices=[4,1]<=[4]}
})", 4);
}

TEST(SourceHandlerTest, IotaAndConstantAreCutLocally) {
  PartitionResult r = Check(R"(ENTRY e {
  i = s32[10,3] iota(), iota_dimension=0, sharding={devices=[4,1]<=[4]}
  c = s32[10,3] constant({{0,1,2},{3,4,5},{6,7,8},{9,10,11},{12,13,14},{15,16,17},{18,19,20},{21,22,23},{24,25,26},{27,28,29}}), sharding={devices=[4,1]<=[4]}
  ROOT a = s32[10,3] add(i, c), sharding={devices=[4,1]<=[4]}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

TEST(ControlHandlerTest, WhileLoopKeepsItsShardedState) {
  PartitionResult r = Check(StrCat(R"(
cond { p = (s32[], f32[8,4]) parameter(0)
 i = s32[] get-tuple-element(p), index=0
 n = s32[] constant(3)
 ROOT c = pred[] compare(i, n), direction=LT }
body { p = (s32[], f32[8,4]) parameter(0)
 i = s32[] get-tuple-element(p), index=0
 x = f32[8,4] get-tuple-element(p), index=1
 one = s32[] constant(1)
 j = s32[] add(i, one)
 y = f32[8,4] add(x, x)
 ROOT t = (s32[], f32[8,4]) tuple(j, y) }
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  z = s32[] constant(0)
  t = (s32[], f32[8,4]) tuple(z, x), sharding={{replicated}, {devices=[4,1]<=[4]}}
  w = (s32[], f32[8,4]) while(t), condition=cond, body=body, sharding={{replicated}, {devices=[4,1]<=[4]}}
  ROOT r = f32[8,4] get-tuple-element(w), index=1, sharding={devices=[4,1]<=[4]}
})"), 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

// jax.checkpoint's remat boundary: the sharded values pass through the opt-barrier as they are
// (it used to be computed on replicated operands: an all-gather per leaf).
TEST(ControlHandlerTest, OptimizationBarrierKeepsEachLeafsSharding) {
  PartitionResult r = Check(R"(ENTRY e {
  w = f32[8,8] parameter(0), sharding={devices=[1,4]<=[4]}
  x = f32[8,8] parameter(1), sharding={devices=[4,1]<=[4]}
  t = (f32[8,8], f32[8,8]) tuple(w, x)
  b = (f32[8,8], f32[8,8]) opt-barrier(t)
  w2 = f32[8,8] get-tuple-element(b), index=0
  x2 = f32[8,8] get-tuple-element(b), index=1
  ROOT s = (f32[8,8], f32[8,8]) tuple(w2, x2), sharding={{devices=[1,4]<=[4]}, {devices=[4,1]<=[4]}}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
  bool kept = false;
  for (const Instruction* inst : r.module->entry()->instructions()) {
    if (inst->opcode() == Opcode::kOptimizationBarrier) kept = inst->shape().ToString(false) == "(f32[8,2], f32[2,8])";
  }
  EXPECT_TRUE(kept) << PrintHloModule(*r.module);
}

TEST(ControlHandlerTest, ConditionalAndCallPartitionTheirComputations) {
  Check(R"(
neg { x = f32[8] parameter(0)
 ROOT n = f32[8] negate(x) }
dbl { x = f32[8] parameter(0)
 ROOT d = f32[8] add(x, x) }
ENTRY e {
  x = f32[8] parameter(0), sharding={devices=[4]<=[4]}
  p = pred[] parameter(1), sharding={replicated}
  c = f32[8] conditional(p, x, x), true_computation=neg, false_computation=dbl, sharding={devices=[4]<=[4]}
  ROOT k = f32[8] call(c), to_apply=dbl, sharding={devices=[4]<=[4]}
})", 4);
}

TEST(CustomCallHandlerTest, ShardingCustomCallReshardsItsOperand) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[8,8] parameter(0), sharding={replicated}
  s = f32[8,8] custom-call(x), custom_call_target="Sharding", sharding={devices=[2,2]<=[4]}
  ROOT n = f32[8,8] negate(s), sharding={devices=[2,2]<=[4]}
})", 4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
  for (const Instruction* inst : r.module->entry()->instructions()) EXPECT_NE(inst->opcode(), Opcode::kCustomCall);
}

// jit(out_shardings=NamedSharding(mesh, P("x"), memory_kind="pinned_host")) as JAX 0.10 lowers it
// (copied): an unannotated annotate_device_placement custom-call places the output in host memory,
// and the root reads it directly. It is an identity on the sharding, as XLA's plan (no collective)
// shows: the output stays tiled over the 4 devices, not gathered.
TEST(CustomCallHandlerTest, AnnotateDevicePlacementKeepsItsOperandsSharding) {
  PartitionResult r = Check(R"(ENTRY e {
  x = f32[16,8] parameter(0), sharding={devices=[4,1]<=[4]}
  s = f32[16,8] sine(x)
  p = f32[16,8] custom-call(s), custom_call_target="annotate_device_placement", custom_call_has_side_effect=true, frontend_attributes={_xla_buffer_placement="pinned_host"}
  r = f32[16,8] reshape(p), sharding={devices=[4,1]<=[4]}
  ROOT t = (f32[16,8]) tuple(p), sharding={{devices=[4,1]<=[4]}}
})",
                            4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

TEST(FallbackTest, OpWithoutAPartitionedFormRunsReplicatedWithAWarning) {
  // bitcast has no partitioned form (kOpReplicatedForm): the partitioner gathers its operand and
  // warns.
  const std::string text = R"(HloModule m, num_partitions=4
ENTRY e {
  x = f32[8] parameter(0), sharding={devices=[4]<=[4]}
  ROOT f = f32[8] bitcast(x), sharding={devices=[4]<=[4]}
})";
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  StatusOr<PartitionResult> r = Partition(**m, 4);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->report.warnings.size(), 1u);
  EXPECT_NE(r->report.warnings[0].find("%f (bitcast): no partitioned form; computed on fully replicated operands "
                                       "(operand 0 {devices=[4]<=[4]}"),
            std::string::npos)
      << r->report.warnings[0];
}

TEST(ManualTest, ManualRegionBetweenFullToShardAndShardToFullIsCopiedAsIs) {
  const std::string text = R"(HloModule m, num_partitions=2
ENTRY e {
  x = f32[8,2] parameter(0), sharding={devices=[2,1]<=[2]}
  s = f32[8,2] custom-call(x), custom_call_target="Sharding", sharding={devices=[2,1]<=[2]}
  m = f32[4,2] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  d = f32[4,2] add(m, m), sharding={manual}
  ROOT f = f32[8,2] custom-call(d), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1]<=[2]}
})";
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  StatusOr<PartitionResult> r = Partition(**m, 2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(CollectiveKinds(*r).empty());
  // Each device doubles its own rows: x = iota-like inputs, output shard = 2 * input shard.
  Array x = Array::FromVector<float>({8, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  StatusOr<std::vector<std::vector<Array>>> out = testing::RunPartitioned(*r, {x});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[1][0], Array::FromVector<float>({4, 2}, {16, 18, 20, 22, 24, 26, 28, 30}));
}

// A boundary whose operand is tiled along a dim the manual region keeps whole (y here) would get
// pieces too small for the region (zero padded: a wrong result; it used to be an error): the
// operand is first resharded to the boundary's pieces, an all-gather over y, as XLA reshards it.
TEST(ManualTest, BoundaryOperandTiledMoreFinelyThanTheRegionIsGatheredFirst) {
  const std::string text = R"(HloModule m, num_partitions=8
ENTRY e {
  u = f32[8,8] parameter(0), sharding={devices=[2,4]<=[8]}
  s = f32[4,8] custom-call(u), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,4]<=[8] last_tile_dims={manual, replicated}}
  d = f32[4,8] add(s, s), sharding={devices=[1,1,2,4]<=[8] last_tile_dims={manual, replicated}}
  ROOT f = f32[8,8] custom-call(d), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
})";
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  StatusOr<PartitionResult> r = Partition(**m, 8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(CollectiveKinds(*r), std::vector<std::string>{"all-gather"});
  EXPECT_EQ(r->report.collectives[0].cause, "s");
  std::vector<float> values(64);
  for (int i = 0; i < 64; ++i) values[i] = static_cast<float>(i);
  StatusOr<std::vector<std::vector<Array>>> out =
      testing::RunPartitioned(*r, {Array::FromVector<float>({8, 8}, values)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // Device 5 (x = 1, y = 1) holds rows 4..7 of f = 2u, every column.
  std::vector<float> want(32);
  for (int i = 0; i < 32; ++i) want[i] = 2.0f * static_cast<float>(32 + i);
  EXPECT_EQ((*out)[5][0], Array::FromVector<float>({4, 8}, want));
}

TEST(ManualTest, ManualValueUsedAsATiledOneIsAnError) {
  const std::string text = R"(HloModule m, num_partitions=2
ENTRY e {
  x = f32[4,2] parameter(0), sharding={manual}
  ROOT n = f32[4,2] negate(x), sharding={devices=[2,1]<=[2]}
})";
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  ASSERT_TRUE(m.ok());
  StatusOr<PartitionResult> r = Partition(**m, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("instruction 'n' (negate): operand 0 has sharding {manual} but the "
                                      "result has {devices=[2,1]<=[2]}: manual values only meet manual uses"),
            std::string::npos)
      << r.status().message();
}

TEST(PartitionTest, ShardingNamingMoreDevicesThanPartitionsIsAnError) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(R"(HloModule m
ENTRY e {
  ROOT x = f32[8] parameter(0), sharding={devices=[8]<=[8]}
})");
  ASSERT_TRUE(m.ok());
  StatusOr<PartitionResult> r = Partition(**m, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("%x does not fit 4 devices"), std::string::npos) << r.status().message();
}

TEST(PartitionTest, PartitionCountMustBePositive) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule("HloModule m\nENTRY e {\n  ROOT x = f32[8] parameter(0)\n}\n");
  ASSERT_TRUE(m.ok());
  StatusOr<PartitionResult> r = Partition(**m, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the partition count must be >= 1, got 0");
}

TEST(PartitionTest, ProgramSizeDoesNotGrowWithThePartitionCount) {
  // The same module for 4 and 64 partitions: the same instructions (tables are longer constants).
  const std::string body = R"(
ENTRY e {
  x = f32[256,256] parameter(0), sharding={devices=[%N,1]<=[%N]}
  ROOT y = f32[256,256] copy(x), sharding={devices=[1,%N]<=[%N]}
})";
  std::vector<int> counts;
  for (int n : {4, 64}) {
    std::string text = body;
    for (size_t pos; (pos = text.find("%N")) != std::string::npos;) text.replace(pos, 2, std::to_string(n));
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(StrCat("HloModule m\n", text));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    StatusOr<PartitionResult> r = Partition(**m, n);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    counts.push_back(r->module->entry()->instruction_count());
  }
  EXPECT_EQ(counts[0], counts[1]);
}

}  // namespace
}  // namespace xs::spmd
