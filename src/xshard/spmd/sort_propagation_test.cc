// Propagation and partitioning of sorts together: a sort along a sharded dim keeps its operand's
// sharding (as GSPMD's propagation), so the sort handler moves the split with all-to-alls instead
// of gathering the sorted dim. Checked against the one-device run; the collectives are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

// Sorts keys with their positions (stable: equal keys keep their order).
const char* kLtPair =
    "lt2 { a = f32[] parameter(0)\n b = f32[] parameter(1)\n c = s32[] parameter(2)\n"
    " d = s32[] parameter(3)\n ROOT r = pred[] compare(a, b), direction=LT }\n";

// jnp.argsort(x, axis=1) with x P(None, 'x') over 8 and nothing else annotated: keys and positions
// come out P(None, 'x') like x, the keys' split moves to dim 0 (one all-to-all; the replicated
// positions iota is sliced locally) and both results move back (two all-to-alls), 84 KiB received
// per device where gathering the keys' dim 1 would receive 224 KiB.
TEST(SortPropagationTest, ArgsortAlongTheShardedDimKeepsItsShardingAndMovesTheSplit) {
  const PartitionResult r = testing::PartitionAndCompare(StrCat(kLtPair, R"(ENTRY e {
  x = f32[64,1024] parameter(0), sharding={devices=[1,8]<=[8]}
  i = s32[64,1024] iota(), iota_dimension=1
  ROOT s = (f32[64,1024], s32[64,1024]) sort(x, i), dimensions={1}, is_stable=true, to_apply=lt2
})"), 8);
  EXPECT_EQ(r.output_sharding.ToString(), "{{devices=[1,8]<=[8]}, {devices=[1,8]<=[8]}}");
  EXPECT_EQ(testing::CollectiveKinds(r),
            (std::vector<std::string>{"all-to-all", "all-to-all", "all-to-all"}));
}

// A sorted dim its axes split unevenly (100 over 8) is left replicated in the sort's result (the
// other dims' axes pass on), so the sort gathers its keys once and the result needs no move back.
TEST(SortPropagationTest, UnevenSortedDimStaysReplicatedInTheResult) {
  const PartitionResult r = testing::PartitionAndCompare(StrCat(kLtPair, R"(ENTRY e {
  x = f32[8,100] parameter(0), sharding={devices=[1,8]<=[8]}
  i = s32[8,100] iota(), iota_dimension=1
  ROOT s = (f32[8,100], s32[8,100]) sort(x, i), dimensions={1}, is_stable=true, to_apply=lt2
})"), 8);
  EXPECT_EQ(r.output_sharding.ToString(), "{{replicated}, {replicated}}");
  EXPECT_EQ(testing::CollectiveKinds(r), (std::vector<std::string>{"all-gather"}));
}

// A rank-1 sort has no other dim to move the split to (GSPMD's IsSortOperandShardingMovable is
// false): the result stays replicated and the keys are gathered once.
TEST(SortPropagationTest, RankOneSortHasNoDimToMoveToAndStaysReplicated) {
  const PartitionResult r = testing::PartitionAndCompare(StrCat(kLtPair, R"(ENTRY e {
  x = f32[64] parameter(0), sharding={devices=[8]<=[8]}
  i = s32[64] iota(), iota_dimension=0
  ROOT s = (f32[64], s32[64]) sort(x, i), dimensions={0}, is_stable=true, to_apply=lt2
})"), 8);
  EXPECT_EQ(r.output_sharding.ToString(), "{{replicated}, {replicated}}");
  EXPECT_EQ(testing::CollectiveKinds(r), (std::vector<std::string>{"all-gather"}));
}

}  // namespace
}  // namespace xs::spmd
