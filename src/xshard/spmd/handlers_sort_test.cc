// sort along a sharded dim (handlers_sort.cc): the split moves to another dim by all-to-all,
// rows are sorted whole, and the result moves back. Checked against the one-device run with
// garbage in the inputs' padding; the collectives are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs::spmd {
namespace {

std::vector<std::string> KindsSort(const PartitionResult& r) { return testing::CollectiveKinds(r); }

PartitionResult CheckSort(const std::string& body, int64_t n) {
  return testing::PartitionAndCompare(body, n, {1, 2});
}

const char* kLt = "lt { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = pred[] compare(a, b), direction=LT }\n";
// Sorts keys with their positions (stable: equal keys keep their order).
const char* kLtPair = "lt2 { a = f32[] parameter(0)\n b = f32[] parameter(1)\n c = s32[] parameter(2)\n d = s32[] parameter(3)\n ROOT r = pred[] compare(a, b), direction=LT }\n";

// jnp.sort(a, axis=0) with a P('x', None): XLA and xshard move the split to dim 1 and back, two
// all-to-alls of 3.5 KiB (gathering dim 0 received 28 KiB).
TEST(SortHandlerTest, SortedDimShardedMovesItsSplitToAnotherDim) {
  const PartitionResult r = CheckSort(StrCat(kLt, R"(ENTRY e {
  a = f32[64,128] parameter(0), sharding={devices=[8,1]<=[8]}
  ROOT s = f32[64,128] sort(a), dimensions={0}, to_apply=lt, sharding={devices=[8,1]<=[8]}
})"), 8);
  EXPECT_EQ(KindsSort(r), (std::vector<std::string>{"all-to-all", "all-to-all"}));
}

// Both dims sharded (a P('x', 'y') on 4 x 2): the sorted dim's 'x' joins 'y' on dim 1 (16 columns,
// 2 per device), two all-to-alls of 384 B each per device, where gathering dim 0 over 'x' would
// receive 1.5 KiB.
TEST(SortHandlerTest, SortedDimsAxesJoinAnAlreadyShardedDim) {
  const PartitionResult r = CheckSort(StrCat(kLt, R"(ENTRY e {
  a = f32[64,16] parameter(0), sharding={devices=[4,2]<=[8]}
  ROOT s = f32[64,16] sort(a), dimensions={0}, to_apply=lt, sharding={devices=[4,2]<=[8]}
})"), 8);
  EXPECT_EQ(KindsSort(r), (std::vector<std::string>{"all-to-all", "all-to-all"}));
}

TEST(SortHandlerTest, KeysWithPositionsAndUnevenRows) {
  CheckSort(StrCat(kLtPair, R"(ENTRY e {
  a = f32[16,6] parameter(0), sharding={devices=[4,1]<=[4]}
  i = s32[16,6] iota(), iota_dimension=0, sharding={devices=[4,1]<=[4]}
  ROOT s = (f32[16,6], s32[16,6]) sort(a, i), dimensions={0}, is_stable=true, to_apply=lt2, sharding={{devices=[4,1]<=[4]}, {devices=[4,1]<=[4]}}
})"), 4);
  CheckSort(StrCat(kLt, R"(ENTRY e {
  a = f32[7,5] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT s = f32[7,5] sort(a), dimensions={0}, to_apply=lt, sharding={devices=[4,1]<=[4]}
})"), 4);
}

// A median of 13 columns over 8 (uneven) with a replicated result: the sorted rows stay split
// over the devices and only the middle column is gathered (56 B), not the sorted array (728 B).
TEST(SortHandlerTest, AReplicatedSortTargetLeavesTheRowsSplitForItsUsers) {
  const PartitionResult r = CheckSort(StrCat(kLt, R"(ENTRY e {
  a = f32[16,13] parameter(0), sharding={devices=[1,8]<=[8]}
  s = f32[16,13] sort(a), dimensions={1}, to_apply=lt, sharding={replicated}
  m = f32[16,1] slice(s), slice={[0:16], [6:7]}, sharding={replicated}
  ROOT r = f32[16] reshape(m), sharding={replicated}
})"),
                                      8);
  ASSERT_EQ(KindsSort(r), (std::vector<std::string>{"all-to-all", "all-gather"}));
  EXPECT_EQ(r.report.collectives[1].bytes, 56);
}

}  // namespace
}  // namespace xs::spmd
