// The all-to-all + collective-permute route (reshard_swap.cc): dims that trade mesh axes move
// their pieces with an all-to-all and a permute instead of gathering. Numbers are checked against
// the global array; the collectives and bytes are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

using testing::CollectiveKinds;

// Partitions the module `text` for n partitions and checks the numbers on TestInputs(11).
PartitionResult Check(const std::string& text, int64_t n) { return testing::PartitionAndCompare(text, n, {11}); }

int64_t TotalBytes(const PartitionResult& r) {
  int64_t total = 0;
  for (const CollectiveRecord& c : r.report.collectives) total += c.bytes;
  return total;
}

// Mesh (x=4, y=2): P('y','x') -> P('x','y'). Each device holds f32[32,16] (2 KiB). The all-to-all
// over the minor half of x gives dim 0 four tiles and dim 1 two (1 KiB received), the permute
// moves the 2 KiB pieces to their devices: 3 KiB, where gathering both dims would receive 14 KiB
// (XLA: the same all-to-all and permute).
TEST(ReshardSwapTest, AxesTradingDimsMoveByAllToAllAndPermute) {
  const PartitionResult r = Check(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[64,64] parameter(0), sharding={devices=[2,4]<=[4,2]T(1,0)}
  ROOT c = f32[64,64] copy(p), sharding={devices=[4,2]<=[8]}
})", 8);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-to-all", "collective-permute"}));
  EXPECT_EQ(TotalBytes(r), 3 * 1024);
}

// P(('x','y','z')) -> P(None, ('z','y','x')) on a 2x2x2 mesh: the axes move to dim 1 in another
// order. The chunks of dim 1 are sent in the order of the devices that need them, so one
// all-to-all lands every piece: each device receives 7 of its 8 f32[8,8] chunks (1,792 B). XLA
// moves the axes in their own order and permutes after (1,792 + 2,048 B); gathering receives
// 14 KiB.
TEST(ReshardSwapTest, AxesMovingInAnotherOrderNeedOneAllToAll) {
  const PartitionResult r = Check(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[64,64] parameter(0), sharding={devices=[8,1]<=[8]}
  ROOT c = f32[64,64] copy(p), sharding={devices=[1,8]<=[2,2,2]T(2,1,0)}
})", 8);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-to-all"}));
  EXPECT_EQ(TotalBytes(r), 7 * 8 * 8 * 4);
  // Mesh (x=2, y=4): P(('x','y'), None, None) -> P(None, ('y','x'), None) with uneven rows (30
  // over 8 tiles of 4, the last one padding): still one all-to-all.
  const PartitionResult uneven = Check(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[30,24,2] parameter(0), sharding={devices=[8,1,1]<=[8]}
  ROOT c = f32[30,24,2] copy(p), sharding={devices=[1,8,1]<=[2,4]T(1,0)}
})", 8);
  EXPECT_EQ(CollectiveKinds(uneven), (std::vector<std::string>{"all-to-all"}));
}

// A transpose of both sharded dims whose result keeps the operand's spec: the rule moves the
// sharding with the dims, and the result is resharded by the same route.
TEST(ReshardSwapTest, TransposeOfShardedDimsKeepingTheSpec) {
  const PartitionResult r = Check(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[64,32] parameter(0), sharding={devices=[4,2]<=[8]}
  ROOT t = f32[32,64] transpose(p), dimensions={1,0}, sharding={devices=[4,2]<=[8]}
})", 8);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-to-all", "collective-permute"}));
}

// Uneven dims: the moved dim must split evenly, else the route does not apply and the result is
// still right.
TEST(ReshardSwapTest, UnevenDimsStayCorrect) {
  Check(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[6,10] parameter(0), sharding={devices=[2,4]<=[4,2]T(1,0)}
  ROOT c = f32[6,10] copy(p), sharding={devices=[4,2]<=[8]}
})", 8);
  Check(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[12,8,4] parameter(0), sharding={devices=[2,1,4]<=[4,2]T(1,0)}
  ROOT c = f32[12,8,4] copy(p), sharding={devices=[1,4,2]<=[8]}
})", 8);
}

// Uneven dims whose all-to-all merges tiles into blocks longer than the new shard. Mesh (a=4,
// b=2) as (a0=2, a1=2, b=2), f32[1002,704] P('a','b') -> P('b','a'): each device holds
// f32[251,352] (rows padded to 1004). The all-to-all over a1 moves a1 from dim 0 to dim 1 (operand
// 353,408 B, half of it received: 176,704 B) and leaves rows in blocks of 502 where P('a0', ..)
// has shards of 501: the a0 = 1 devices lack row 501, which a collective-permute of f32[1,176]
// brings (704 B); the permute to the target's devices then moves f32[501,176] (352,704 B).
// 530,112 B, as XLA (all-to-all, permute, permute); without the halo the route needs two
// all-to-alls (over a: 265,056 B, over a1: 176,352 B) and the permute: 794,112 B.
TEST(ReshardSwapTest, UnevenMergedBlocksRebalanceByHalo) {
  const PartitionResult r = Check(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[1002,704] parameter(0), sharding={devices=[4,2]<=[8]}
  ROOT c = f32[1002,704] copy(p), sharding={devices=[2,4]<=[4,2]T(1,0)}
})", 8);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-to-all", "collective-permute", "collective-permute"}));
  ASSERT_EQ(r.report.collectives.size(), 3u);
  EXPECT_EQ(r.report.collectives[0].bytes, 176704);
  EXPECT_EQ(r.report.collectives[1].bytes, 704);
  EXPECT_EQ(r.report.collectives[2].bytes, 352704);
}

// The same with the uneven dim second: f32[704,1002] P('b','a') -> P('a','b') moves a1 from dim
// 1 to dim 0, columns come in blocks of 502 where the shards are 501 (column 501 moves by a
// f32[176,1] permute): the same 176,704 + 704 + 352,704 B.
TEST(ReshardSwapTest, UnevenMergedBlocksRebalanceByHaloSecondDim) {
  const PartitionResult r = Check(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[704,1002] parameter(0), sharding={devices=[2,4]<=[4,2]T(1,0)}
  ROOT c = f32[704,1002] copy(p), sharding={devices=[4,2]<=[8]}
})", 8);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-to-all", "collective-permute", "collective-permute"}));
  EXPECT_EQ(TotalBytes(r), 176704 + 704 + 352704);
}

}  // namespace
}  // namespace xs::spmd
