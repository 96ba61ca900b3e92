// A reshape merging dims whose minor one is sharded (transpose(x, (1,0,2,3)).reshape, then a
// sum whose result is sharded P(('y','x'), 'z')): the operand's minor axis moves onto the major
// dim by one all-to-all and the merged dim keeps both axes (handlers_shape.cc), instead of
// gathering the operand and reduce-scattering the sum. Checked against the one-device run; the
// collectives and their bytes are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

// Mesh x, y, z = 2, 2, 2 (device = 4x + 2y + z). x: f32[8(a),8(b),16(c),8(d)] (by default in
// P('x','y',-,'z')), transposed to [b,a,c,d], reshaped to [64,16,8] (the target keeps only 'y' on
// the merged dim), summed over d into `sum_sharding`. The shardings are propagation's.
std::string Module(const std::string& sum_sharding, const std::string& x = "{devices=[2,2,1,2]<=[8]}",
                   const std::string& t = "{devices=[2,2,1,2]<=[2,2,2]T(1,0,2)}",
                   const std::string& r = "{devices=[2,1,2,2]<=[2,4]T(1,0) last_tile_dim_replicate}") {
  return StrCat(R"(add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,8,16,8] parameter(0), sharding=)", x, R"(
  t = f32[8,8,16,8] transpose(x), dimensions={1,0,2,3}, sharding=)", t, R"(
  r = f32[64,16,8] reshape(t), sharding=)", r, R"(
  c = f32[] constant(0)
  ROOT s = f32[64,16] reduce(r, c), dimensions={2}, to_apply=add, sharding=)",
                sum_sharding, "\n}\n");
}

// One all-to-all of half the f32[4,4,16,4] operand piece (2 KiB) and a reduce-scatter of the
// f32[16,16] partial sums over z (512 B); gathering the operand over x moved 4 KiB and the
// reduce-scatter of the unsliced sums 1 KiB.
TEST(ReshapeMergeTest, MinorAxisMovesToTheMajorDimByOneAllToAll) {
  const PartitionResult r = testing::PartitionAndCompare(Module("{devices=[4,2]<=[2,2,2]T(1,0,2)}"), 8);
  ASSERT_EQ(testing::CollectiveKinds(r), (std::vector<std::string>{"all-to-all", "reduce-scatter"}));
  EXPECT_EQ(r.report.collectives[0].bytes, 2048);
  EXPECT_EQ(r.report.collectives[1].bytes, 512);
}

// A user that wants only 'y' on the merged dim (the sum in P('y','z') with x replicated): the
// target's sharding stays, and nothing is moved by an all-to-all.
TEST(ReshapeMergeTest, UsersWithoutTheMinorAxisKeepTheTarget) {
  const PartitionResult r =
      testing::PartitionAndCompare(Module("{devices=[2,2,2]<=[2,4]T(1,0) last_tile_dim_replicate}"), 8);
  for (const std::string& kind : testing::CollectiveKinds(r)) EXPECT_NE(kind, "all-to-all");
}

// x in P('x', -, -, 'z'): the merged dim gets the users' ('y','x'): a local slice for y (unused
// by the operand), then the all-to-all of x (2 KiB of the f32[4,8,16,4] piece) and the
// reduce-scatter (512 B), where gathering the operand over x received 8 KiB.
TEST(ReshapeMergeTest, UsersAxesTheOperandDoesNotUseAreSlicedFirst) {
  const PartitionResult r = testing::PartitionAndCompare(
      Module("{devices=[4,2]<=[2,2,2]T(1,0,2)}", "{devices=[2,1,1,2,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}",
             "{devices=[1,2,1,2,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}",
             "{devices=[1,1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}"),
      8);
  ASSERT_EQ(testing::CollectiveKinds(r), (std::vector<std::string>{"all-to-all", "reduce-scatter"}));
  EXPECT_EQ(r.report.collectives[0].bytes, 2048);
  EXPECT_EQ(r.report.collectives[1].bytes, 512);
}

// x in P('x','y',-,-) with the reshape already in P(('y','x'), 'z', -): the reshard of the
// operand slices c by z before the all-to-all moves x (2 KiB; after it, 4 KiB).
TEST(ReshapeMergeTest, AllToAllMovesTheSlicedPiece) {
  const PartitionResult r = testing::PartitionAndCompare(
      Module("{devices=[4,2]<=[2,2,2]T(1,0,2)}", "{devices=[2,2,1,1,2]<=[8] last_tile_dim_replicate}",
             "{devices=[2,2,1,1,2]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}", "{devices=[4,2,1]<=[2,2,2]T(1,0,2)}"),
      8);
  ASSERT_EQ(testing::CollectiveKinds(r), std::vector<std::string>{"all-to-all"});
  EXPECT_EQ(r.report.collectives[0].bytes, 2048);
}

}  // namespace
}  // namespace xs::spmd
