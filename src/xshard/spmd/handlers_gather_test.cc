// gather / scatter on operands sharded along an indexed dim (handlers_gather.cc): each module is
// partitioned, run on N devices with garbage in every input's padding and compared with the
// one-device run; the collectives are pinned (no all-gather of the table where a masked local
// lookup + all-reduce, or a local scatter, moves less). Index values are spread past both ends
// of the indexed dim (i * 5 + 7 for TestInputs' -3..3) so clamping (gather) and skipping
// (scatter) of out-of-bounds indices are exercised on every shard.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs::spmd {
namespace {

std::vector<std::string> KindsGather(const PartitionResult& r) { return testing::CollectiveKinds(r); }

PartitionResult CheckGather(const std::string& body, int64_t n) {
  return testing::PartitionAndCompare(body, n, {1, 2, 3});
}

const char* kSum = "sum { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n";

// Indices i * 5 + 7 of shape s32[4] (values -8..22), reshaped to [4,1]: four lookups in a table
// of 20 rows, where summing the looked-up rows moves less than gathering the table.
const char* kSpread = R"(
  five = s32[] constant(5)
  seven = s32[] constant(7)
  b5 = s32[4] broadcast(five), dimensions={}
  b7 = s32[4] broadcast(seven), dimensions={}
  i5 = s32[4] multiply(i, b5)
  j = s32[4] add(i5, b7)
  ids = s32[4,1] reshape(j)
)";

TEST(GatherHandlerTest, EmbeddingTableShardedOverRowsIsLookedUpLocallyAndAllReduced) {
  const PartitionResult r = CheckGather(StrCat(R"(ENTRY e {
  t = f32[20,4] parameter(0), sharding={devices=[4,1]<=[4]}
  i = s32[4] parameter(1), sharding={replicated})", kSpread, R"(
  ROOT g = f32[4,4] gather(t, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, sharding={replicated}
})"), 4);
  EXPECT_EQ(KindsGather(r), std::vector<std::string>{"all-reduce"});
}

TEST(GatherHandlerTest, ResultShardedOverTheLookupsIsAReduceScatter) {
  const PartitionResult r = CheckGather(StrCat(R"(ENTRY e {
  t = f32[20,4] parameter(0), sharding={devices=[4,1]<=[4]}
  i = s32[4] parameter(1), sharding={replicated})", kSpread, R"(
  ROOT g = f32[4,4] gather(t, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, sharding={devices=[4,1]<=[4]}
})"), 4);
  // Propagation splits the index arithmetic like the result; the four indices are gathered back
  // (the table is not).
  ASSERT_EQ(KindsGather(r), (std::vector<std::string>{"all-gather", "reduce-scatter"}));
  EXPECT_EQ(r.report.collectives[0].shape.dtype(), DType::kS32);
}

// Mesh x=2 (rows of the table), y=2 (its columns): the columns pass through sharded, the rows are
// summed over x only.
TEST(GatherHandlerTest, TwoDimTableKeepsItsColumnsShardedAndSumsOverTheRowAxis) {
  const PartitionResult r = CheckGather(StrCat(R"(ENTRY e {
  t = f32[20,6] parameter(0), sharding={devices=[2,2]<=[4]}
  i = s32[4] parameter(1), sharding={replicated})", kSpread, R"(
  ROOT g = f32[4,6] gather(t, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}, sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
})"), 4);
  ASSERT_EQ(KindsGather(r), std::vector<std::string>{"all-reduce"});
  // f32[4,3] per device, all-reduced over 2 devices: 2 * 48 bytes * 1/2.
  EXPECT_EQ(r.report.collectives[0].bytes, 48);
}

// Data-parallel lookups: the indices are split over y, the table over x.
TEST(GatherHandlerTest, IndicesShardedOnAnotherAxisStaySharded) {
  const PartitionResult r = CheckGather(StrCat(R"(ENTRY e {
  t = f32[20,4] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  i = s32[4] parameter(1), sharding={devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate})", kSpread, R"(
  ROOT g = f32[4,4] gather(t, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
})"), 4);
  EXPECT_EQ(KindsGather(r), std::vector<std::string>{"all-reduce"});
}

// Point lookups in a matrix sharded along both indexed dims: a lookup is this partition's only
// when both components land in its tile.
TEST(GatherHandlerTest, TwoShardedIndexComponentsMustBothLandInTheTile) {
  const PartitionResult r = CheckGather(R"(ENTRY e {
  t = f32[6,5] parameter(0), sharding={devices=[2,2]<=[4]}
  i = s32[7,2] parameter(1), sharding={replicated}
  two = s32[] constant(2)
  b2 = s32[7,2] broadcast(two), dimensions={}
  ids = s32[7,2] multiply(i, b2)
  ROOT g = f32[7] gather(t, ids), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1}, sharding={replicated}
})", 4);
  EXPECT_EQ(KindsGather(r), std::vector<std::string>{"all-reduce"});
}

// Unsigned indices (0..6, clamped to 4) into a table with fewer rows than shards (the last shard is padding).
TEST(GatherHandlerTest, UnsignedIndicesIntoAnUnevenTable) {
  const PartitionResult r = CheckGather(R"(ENTRY e {
  t = f32[5,64] parameter(0), sharding={devices=[4,1]<=[4]}
  i = u32[2] parameter(1), sharding={replicated}
  ids = u32[2,1] reshape(i)
  ROOT g = f32[2,64] gather(t, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,64}, sharding={replicated}
})", 4);
  EXPECT_EQ(KindsGather(r), std::vector<std::string>{"all-reduce"});
}

// vmap(lambda t, i: t[i]): explicit batch dims (operand_batching_dims) sharded over x on the
// table, the indices and the result stay sharded; the indexed dim, sharded over y, is looked up
// locally and summed over y.
TEST(GatherHandlerTest, ExplicitBatchDimsStayShardedNextToAShardedIndexedDim) {
  const PartitionResult r = CheckGather(R"(ENTRY e {
  t = f32[4,20,8] parameter(0), sharding={devices=[2,2,1]<=[4]}
  i = s32[4,3] parameter(1), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  five = s32[] constant(5)
  seven = s32[] constant(7)
  b5 = s32[4,3] broadcast(five), dimensions={}
  b7 = s32[4,3] broadcast(seven), dimensions={}
  i5 = s32[4,3] multiply(i, b5)
  j = s32[4,3] add(i5, b7)
  ids = s32[4,3,1] reshape(j)
  ROOT g = f32[4,3,8] gather(t, ids), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,8}, sharding={devices=[2,1,1,2]<=[4] last_tile_dim_replicate}
})", 4);
  ASSERT_EQ(KindsGather(r), std::vector<std::string>{"all-reduce"});
  EXPECT_EQ(r.report.collectives[0].groups, "[2,2]<=[4]");
}

// take_along_axis along an unsharded dim with the batch dim sharded on both operands: no
// collectives (the batch dim used to be gathered: its slice size is 1).
TEST(GatherHandlerTest, ShardedExplicitBatchDimsNeedNoCollectives) {
  const PartitionResult r = CheckGather(R"(ENTRY e {
  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  i = s32[8,5,1] parameter(1), sharding={devices=[4,1,1]<=[4]}
  ROOT g = f32[8,5] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}, sharding={devices=[4,1]<=[4]}
})", 4);
  EXPECT_TRUE(KindsGather(r).empty());
}

// s8 indices into a table of 300 rows: shard offsets (up to 225) do not fit the index type, so
// the table is gathered (values stay right; the lookup reaches rows 0..127 only).
TEST(GatherHandlerTest, NarrowIndexTypesThatCannotHoldTheOffsetsGather) {
  const PartitionResult r = CheckGather(R"(ENTRY e {
  t = f32[300,2] parameter(0), sharding={devices=[4,1]<=[4]}
  i = s8[2,1] parameter(1), sharding={replicated}
  ROOT g = f32[2,2] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}, sharding={replicated}
})", 4);
  EXPECT_EQ(KindsGather(r), std::vector<std::string>{"all-gather"});
}

// Many lookups in a small table: gathering the table moves fewer bytes than summing the results.
// The indexed dim is not collapsed (slice size 1, an offset dim of size 1 in the result) and is
// sharded over every device: its axes are the partial ones, so the result's offset dim must not
// take them too (that plan was a check failure, "not a permutation", from the pipeline fuzzer).
TEST(GatherHandlerTest, IndexedDimThatIsAlsoAnOffsetDimLeavesItsAxesToThePartialSum) {
  const PartitionResult r = CheckGather(R"(ENTRY e {
  t = f32[3,16] parameter(0), sharding={devices=[1,8]<=[8]}
  i = s32[16] iota(), iota_dimension=0, sharding={devices=[8]<=[8]}
  ROOT g = f32[1,16] gather(t, i), offset_dims={0}, collapsed_slice_dims={0}, start_index_map={1}, index_vector_dim=1, slice_sizes={1,1}, sharding={devices=[1,8]<=[8]}
})",
                                        8);
  EXPECT_FALSE(KindsGather(r).empty());
}

TEST(GatherHandlerTest, SmallTableWithManyLookupsIsGathered) {
  const PartitionResult r = CheckGather(R"(ENTRY e {
  t = f32[8,2] parameter(0), sharding={devices=[4,1]<=[4]}
  i = s32[512,1] parameter(1), sharding={replicated}
  ROOT g = f32[512,2] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}, sharding={replicated}
})", 4);
  EXPECT_EQ(KindsGather(r), std::vector<std::string>{"all-gather"});
}

// The embedding gradient: scatter-add into a zero table sharded over its rows needs no
// collectives (updates for other shards are out of bounds and skipped).
// jax.ops.segment_sum with the rows over 4 devices into a small replicated result: each device
// scatters its rows into zeros and one all-reduce sums them (gathering the updates and ids moved
// 2.5x the bytes); the operand (not zero here) is added once.
TEST(ScatterHandlerTest, ShardedUpdatesIntoASmallResultAreScatteredLocallyAndAllReduced) {
  const char* kScatter = R"(ENTRY e {
  t = f32[8,4] parameter(0), sharding={replicated}
  ids = s32[32,1] parameter(1), sharding={devices=[4,1]<=[4]}
  u = f32[32,4] parameter(2), sharding={devices=[4,1]<=[4]}
  ROOT s = f32[8,4] scatter(t, ids, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=COMBINER, sharding={replicated}
})";
  std::string text = StrCat(kSum, kScatter);
  text.replace(text.find("COMBINER"), 8, "sum");
  EXPECT_EQ(KindsGather(CheckGather(text, 4)), (std::vector<std::string>{"all-reduce"}));
  // max: the identity is -inf, and the operand is combined with max once.
  const char* kMaxF = "mx { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] maximum(a, b) }\n";
  text = StrCat(kMaxF, kScatter);
  text.replace(text.find("COMBINER"), 8, "mx");
  EXPECT_EQ(KindsGather(CheckGather(text, 4)), (std::vector<std::string>{"all-reduce"}));
  // 30 rows do not split evenly over 4: the padding rows (garbage here) must not be scattered.
  // Their indices are set out of bounds (-1; the largest value when unsigned), and the plan stays
  // a local scatter and one all-reduce (k-means' segment sums over 100 points on 8 devices).
  for (const char* index_type : {"s32", "u32", "u8"}) {
    SCOPED_TRACE(index_type);
    text = StrCat(kSum, kScatter);
    text.replace(text.find("COMBINER"), 8, "sum");
    text.replace(text.find("s32[32,1]"), 9, StrCat(index_type, "[30,1]"));
    text.replace(text.find("f32[32,4]"), 9, "f32[30,4]");
    EXPECT_EQ(KindsGather(CheckGather(text, 4)), (std::vector<std::string>{"all-reduce"}));
  }
}

// Ids i * 5 + 7 of shape s32[32] (values -8..22), reshaped to [32,1]; `spec1` / `spec2` split the
// lookups of i and of the ids.
std::string Spread32(const std::string& spec1, const std::string& spec2) {
  return StrCat(R"(
  i = s32[32] parameter(0), sharding=)",
                spec1, R"(
  five = s32[] constant(5)
  seven = s32[] constant(7)
  b5 = s32[32] broadcast(five), dimensions={}
  b7 = s32[32] broadcast(seven), dimensions={}
  i5 = s32[32] multiply(i, b5)
  j = s32[32] add(i5, b7)
  ids = s32[32,1] reshape(j), sharding=)",
                spec2, "\n");
}

// The embedding gradient with the ids and updates split over the lookups on the same axes as the
// table's rows: each partition scatters its own updates into zeros and one reduce-scatter leaves
// each its rows (the sharded-operand plan gathered the updates and ids: twice the bytes).
TEST(ScatterHandlerTest, UpdatesSplitLikeTheRowsAreScatteredLocallyAndReduceScattered) {
  const PartitionResult r =
      CheckGather(StrCat(kSum, "ENTRY e {", Spread32("{devices=[4]<=[4]}", "{devices=[4,1]<=[4]}"), R"(
  zero = f32[] constant(0)
  t = f32[20,4] broadcast(zero), dimensions={}, sharding={devices=[4,1]<=[4]}
  u = f32[32,4] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT s = f32[20,4] scatter(t, ids, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sum, sharding={devices=[4,1]<=[4]}
})"),
                  4);
  EXPECT_EQ(KindsGather(r), std::vector<std::string>{"reduce-scatter"});
}

// Mesh x=2, y=2: the table's rows over x, the ids and updates over y (jnp.take of a row-sharded
// table by ids sharded on another axis, differentiated). Each partition scatters the updates of
// its y shard that fall in its own x rows (indices moved to the shard's origin, the rest skipped)
// and the row shards are all-reduced over y alone: XLA's plan. The operand (not zero here) is
// added once.
TEST(ScatterHandlerTest, RowsOnOneAxisAndUpdatesOnAnotherAllReduceOnlyTheRowShards) {
  const char* kY = "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}";
  const PartitionResult r =
      CheckGather(StrCat(kSum, "ENTRY e {", Spread32("{devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}", kY), R"(
  t = f32[20,4] parameter(2), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  u = f32[32,4] parameter(1), sharding=)",
                         kY, R"(
  ROOT s = f32[20,4] scatter(t, ids, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sum, sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
})"),
                  4);
  ASSERT_EQ(KindsGather(r), std::vector<std::string>{"all-reduce"});
  // The all-reduce sums one row shard ([10,4]) over y, not the whole table.
  EXPECT_EQ(r.report.collectives[0].shape.dims(), (std::vector<int64_t>{10, 4}));
}

TEST(ScatterHandlerTest, ScatterAddIntoARowShardedTableNeedsNoCollectives) {
  const PartitionResult r = CheckGather(StrCat(kSum, R"(ENTRY e {
  zero = f32[] constant(0)
  t = f32[20,4] broadcast(zero), dimensions={}, sharding={devices=[4,1]<=[4]}
  i = s32[4] parameter(0), sharding={replicated})", kSpread, R"(
  u = f32[4,4] parameter(1), sharding={replicated}
  ROOT s = f32[20,4] scatter(t, ids, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sum, sharding={devices=[4,1]<=[4]}
})"), 4);
  EXPECT_TRUE(KindsGather(r).empty());
}

// Scatter into a parameter sharded over both dims (rows indexed, columns passed through): the
// updates are cut along the columns, nothing is gathered.
TEST(ScatterHandlerTest, ScatterIntoATwoDimShardedOperandCutsTheUpdates) {
  const PartitionResult r = CheckGather(StrCat(kSum, R"(ENTRY e {
  t = f32[20,6] parameter(0), sharding={devices=[2,2]<=[4]}
  i = s32[4] parameter(1), sharding={replicated})", kSpread, R"(
  u = f32[4,6] parameter(2), sharding={replicated}
  ROOT s = f32[20,6] scatter(t, ids, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sum, sharding={devices=[2,2]<=[4]}
})"), 4);
  EXPECT_TRUE(KindsGather(r).empty());
}

// Point updates into a matrix sharded along both indexed dims, unsigned indices past the end.
TEST(ScatterHandlerTest, UnsignedPointUpdatesIntoATwoDimTiling) {
  const PartitionResult r = CheckGather(StrCat(kSum, R"(ENTRY e {
  t = f32[5,3] parameter(0), sharding={devices=[2,2]<=[4]}
  i = u32[6,2] parameter(1), sharding={replicated}
  u = f32[6] parameter(2), sharding={replicated}
  ROOT s = f32[5,3] scatter(t, i, u), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=sum, sharding={devices=[2,2]<=[4]}
})"), 4);
  EXPECT_TRUE(KindsGather(r).empty());
}

// The gradient of take_along_axis (softmax cross-entropy's label pick): scatter-add with explicit
// batch dims into a zero [rows, vocab] operand sharded over x on the rows and y on the vocabulary,
// the indices and updates sharded over x on their batch dim. Each partition scatters its own rows
// into its own vocabulary shard: no collectives (the rows, indices and updates used to be
// gathered over x).
TEST(ScatterHandlerTest, ExplicitBatchDimsStayShardedNextToAShardedIndexedDim) {
  const PartitionResult r = CheckGather(StrCat(kSum, R"(ENTRY e {
  zero = f32[] constant(0)
  t = f32[4,20] broadcast(zero), dimensions={}, sharding={devices=[2,2]<=[4]}
  i = s32[4] parameter(0), sharding={devices=[2,2]<=[4] last_tile_dim_replicate})", kSpread, R"(
  ids3 = s32[4,1,1] reshape(ids), sharding={devices=[2,1,1,2]<=[4] last_tile_dim_replicate}
  u = f32[4,1] parameter(1), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  ROOT s = f32[4,20] scatter(t, ids3, u), update_window_dims={}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, to_apply=sum, sharding={devices=[2,2]<=[4]}
})"), 4);
  EXPECT_TRUE(KindsGather(r).empty());
}

}  // namespace
}  // namespace xs::spmd
