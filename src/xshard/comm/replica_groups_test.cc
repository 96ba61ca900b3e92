// Replica group and permute pair validation, and XLA's group modes resolved to logical ids.
#include "xshard/comm/replica_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace xs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::vector<int64_t>> Groups(const DeviceGroups& g) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t i = 0; i < g.num_groups(); ++i) {
    out.emplace_back(g.group(i).begin(), g.group(i).end());
  }
  return out;
}

TEST(ReplicaGroupsTest, EmptyListMeansOneGroupOfEveryDevice) {
  auto g = DeviceGroups::Create({}, 4, "all-reduce");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->ToString(), "{{0,1,2,3}}");
  EXPECT_EQ(g->IndexInGroup(2), 2);
}

TEST(ReplicaGroupsTest, IndexesMembersByPositionWithinTheirGroup) {
  auto g = DeviceGroups::Create({{3, 1}, {0, 2}}, 4, "all-gather");
  ASSERT_TRUE(g.ok());
  EXPECT_THAT(g->GroupOf(1), ElementsAre(3, 1));
  EXPECT_EQ(g->IndexInGroup(1), 1);
  EXPECT_EQ(g->IndexInGroup(3), 0);
  EXPECT_THAT(g->GroupOf(2), ElementsAre(0, 2));
  EXPECT_EQ(g->ToString(), "{{3,1},{0,2}}");
}

TEST(ReplicaGroupsTest, RejectsDuplicateIds) {
  auto g = DeviceGroups::Create({{0, 1}, {1, 2}, {3}}, 4, "all-reduce");
  EXPECT_EQ(g.status(), InvalidArgument("all-reduce: replica groups {{0,1},{1,2},{3}} list device "
                                        "1 twice; every device must be in exactly one group"));
}

TEST(ReplicaGroupsTest, RejectsIdsOutOfRange) {
  auto g = DeviceGroups::Create({{0, 9}}, 8, "all-gather");
  EXPECT_EQ(g.status(), InvalidArgument("all-gather: replica groups {{0,9}} name device 9, out of "
                                        "range for 8 devices (ids 0..7)"));
  EXPECT_THAT(DeviceGroups::Create({{-1, 0}}, 2, "x").status().message(),
              HasSubstr("name device -1, out of range"));
}

TEST(ReplicaGroupsTest, RejectsGroupsThatDoNotCoverEveryDevice) {
  auto g = DeviceGroups::Create({{0, 1}, {2, 3}}, 8, "reduce-scatter");
  EXPECT_EQ(g.status(),
            InvalidArgument("reduce-scatter: replica groups {{0,1},{2,3}} leave out devices "
                            "4,5,6,7 of 8; every device must be in exactly one group (no groups "
                            "at all means one group of every device)"));
  // collective-broadcast may leave devices out: they receive zeros.
  auto partial = DeviceGroups::Create({{0, 1}}, 4, "collective-broadcast",
                                       DeviceGroups::Coverage::kPartial);
  ASSERT_TRUE(partial.ok());
  EXPECT_TRUE(partial->GroupOf(3).empty());
  EXPECT_EQ(partial->IndexInGroup(3), -1);
}

TEST(ReplicaGroupsTest, RejectsEmptyGroup) {
  EXPECT_THAT(DeviceGroups::Create({{0, 1}, {}}, 2, "all-reduce").status().message(),
              HasSubstr("have an empty group (number 1)"));
}

TEST(ReplicaGroupsTest, FingerprintSeparatesDifferentGroupings) {
  auto a = DeviceGroups::Create({{0, 1}, {2, 3}}, 4, "x");
  auto b = DeviceGroups::Create({{0, 2}, {1, 3}}, 4, "x");
  auto c = DeviceGroups::Create({{0, 1}, {2, 3}}, 4, "y");
  EXPECT_NE(a->fingerprint(), b->fingerprint());
  EXPECT_EQ(a->fingerprint(), c->fingerprint());
}

TEST(PermutePairsTest, MapsSourcesAndTargets) {
  auto p = PermutePairs::Create({{0, 1}, {1, 2}, {2, 0}}, 4, "collective-permute");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->SourceOf(0), 2);
  EXPECT_EQ(p->TargetOf(0), 1);
  EXPECT_EQ(p->SourceOf(3), -1);
  EXPECT_EQ(p->TargetOf(3), -1);
  EXPECT_EQ(p->ToString(), "{{0,1},{1,2},{2,0}}");
}

TEST(PermutePairsTest, RejectsRepeatedSourcesTargetsAndBadIds) {
  EXPECT_EQ(PermutePairs::Create({{0, 1}, {0, 2}}, 4, "collective-permute").status(),
            InvalidArgument("collective-permute: source_target_pairs {{0,1},{0,2}} send from "
                            "device 0 twice; each device sends to at most one target"));
  EXPECT_EQ(PermutePairs::Create({{0, 2}, {1, 2}}, 4, "cp").status(),
            InvalidArgument("cp: source_target_pairs {{0,2},{1,2}} send to device 2 twice; each "
                            "device receives from at most one source"));
  EXPECT_THAT(PermutePairs::Create({{0, 4}}, 4, "cp").status().message(),
              HasSubstr("name device 4, out of range for 4 devices"));
}

// The expected groups below follow XLA's GetParticipatingFlattenedIdGroups, with 2 replicas x 4
// partitions (logical id = replica * 4 + partition).
TEST(GroupModeTest, CrossReplicaMakesOneGroupPerPartition) {
  auto g = ResolveGroupMode(GroupMode::kCrossReplica, {{0, 1}}, 2, 4, "all-reduce");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(Groups(*g), (std::vector<std::vector<int64_t>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(GroupModeTest, CrossPartitionMakesOneGroupPerReplica) {
  auto g = ResolveGroupMode(GroupMode::kCrossPartition, {{0, 1}, {2, 3}}, 2, 4, "all-gather");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(Groups(*g),
            (std::vector<std::vector<int64_t>>{{0, 1}, {4, 5}, {2, 3}, {6, 7}}));
  auto all = ResolveGroupMode(GroupMode::kCrossPartition, {}, 2, 4, "all-gather");
  EXPECT_EQ(Groups(*all), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(GroupModeTest, CrossReplicaAndPartitionTakesEveryPartitionOfTheReplicas) {
  auto g = ResolveGroupMode(GroupMode::kCrossReplicaAndPartition, {{0}, {1}}, 2, 4, "ar");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(Groups(*g), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(GroupModeTest, FlattenedIdsAreUsedAsGivenAndMustBeExplicit) {
  auto g = ResolveGroupMode(GroupMode::kFlattenedId, {{0, 2, 4, 6}, {1, 3, 5, 7}}, 2, 4, "ar");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->ToString(), "{{0,2,4,6},{1,3,5,7}}");
  EXPECT_THAT(ResolveGroupMode(GroupMode::kFlattenedId, {}, 2, 4, "ar").status().message(),
              HasSubstr("cannot be empty with use_global_device_ids=true"));
}

TEST(GroupModeTest, RejectsIdsPastTheReplicaOrPartitionCount) {
  EXPECT_EQ(ResolveGroupMode(GroupMode::kCrossReplica, {{0, 2}}, 2, 4, "ar").status(),
            InvalidArgument("ar: replica groups {{0,2}} (cross_replica) name replica 2, but there "
                            "are 2; ids run 0..1"));
}

TEST(GroupModeTest, ModeFollowsChannelAndUseGlobalDeviceIds) {
  EXPECT_EQ(*GroupModeFor(false, std::nullopt), GroupMode::kCrossReplica);
  EXPECT_EQ(*GroupModeFor(true, std::nullopt), GroupMode::kCrossPartition);
  EXPECT_EQ(*GroupModeFor(true, false), GroupMode::kCrossReplicaAndPartition);
  EXPECT_EQ(*GroupModeFor(true, true), GroupMode::kFlattenedId);
  EXPECT_FALSE(GroupModeFor(false, true).ok());
}

TEST(GroupModeTest, PermutePairsApplyWithinEveryReplicaOrPartition) {
  auto p = ResolvePermutePairs(/*cross_partition=*/true, {{0, 1}, {1, 0}}, 2, 2, "cp");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ToString(), "{{0,1},{1,0},{2,3},{3,2}}");
  auto r = ResolvePermutePairs(/*cross_partition=*/false, {{0, 1}}, 2, 2, "cp");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ToString(), "{{0,2},{1,3}}");
}

}  // namespace
}  // namespace xs
