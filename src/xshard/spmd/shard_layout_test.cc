// ShardLayout geometry and the mesh-axis replica groups, with values worked out by hand.
#include "xshard/spmd/shard_layout.h"

#include <gtest/gtest.h>

namespace xs::spmd {
namespace {

HloSharding Parse(const char* text) { return *HloSharding::Parse(text); }

TEST(ShardLayoutTest, CeilDivisionLeavesPaddingOnTrailingShards) {
  // f32[5] on 4 devices: shards of 2; device 2 covers [4,6) (5 is padding), device 3 [6,8).
  StatusOr<ShardLayout> l = ShardLayout::Create(Parse("{devices=[4]<=[4]}"), {5}, 4);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->shard_dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(l->start(2, 0), 4);
  EXPECT_EQ(l->real_limit(2, 0), 5);
  EXPECT_TRUE(l->RealEmpty(3));
  EXPECT_TRUE(l->HasPadding(0));
}

TEST(ShardLayoutTest, TransposedDeviceOrderAndReplication) {
  // [2,1,2]<=[2,2]T(1,0): devices 0,2 hold rows [0,3), devices 1,3 rows [3,6).
  StatusOr<ShardLayout> l =
      ShardLayout::Create(Parse("{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}"), {6, 4}, 4);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->shard_dims(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(l->start(0, 0), 0);
  EXPECT_EQ(l->start(2, 0), 0);
  EXPECT_EQ(l->start(1, 0), 3);
  EXPECT_EQ(l->start(3, 0), 3);
  EXPECT_FALSE(l->HasPadding());
}

TEST(ShardLayoutTest, RankMismatchIsAnError) {
  StatusOr<ShardLayout> l = ShardLayout::Create(Parse("{devices=[2,2]<=[4]}"), {8}, 4);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("tiles 2 dims but the value has rank 1"), std::string::npos);
}

TEST(MeshGroupsTest, GroupsOverTheMajorAxisOfA4x2Mesh) {
  // Mesh [2,2,2] from P('b','a') on (a=4, b=2): axes 0 and 1 are `a`, axis 2 is `b`.
  TileMesh::Builder b(8);
  ASSERT_TRUE(b.Add(Parse("{devices=[2,4]<=[4,2]T(1,0)}")));
  const TileMesh mesh = b.Build();
  ReplicaGroups over_a = GroupsOverAxes(mesh, {0, 1});
  EXPECT_EQ(over_a.Groups(), (std::vector<std::vector<int64_t>>{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_TRUE(over_a.iota);
  EXPECT_EQ(over_a.reshape_dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(over_a.transpose_perm, (std::vector<int64_t>{1, 0}));
  ReplicaGroups over_b = GroupsOverAxes(mesh, {2});
  EXPECT_EQ(over_b.Groups(), (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(IndexAlongAxes(mesh, 6, {0, 1}), 3);
}

TEST(MeshGroupsTest, GroupsOfAPermutedMeshHoldItsDevices) {
  // Mesh (data=4, model=2) over devices 7,5,3,1,6,4,2,0, as torch_xla's Mesh(device_ids=...)
  // annotates it (replicated groups sorted): groups over `model` are the mesh's rows in column
  // order, groups over `data` its columns, each ordered by its smallest device.
  const std::vector<HloSharding> hints = {Parse("{devices=[4,1,2]5,7,1,3,4,6,0,2 last_tile_dim_replicate}"),
                                          Parse("{devices=[2,1,4]2,3,6,7,0,1,4,5 last_tile_dim_replicate}")};
  TileMesh::Builder b(8, hints);
  for (const HloSharding& h : hints) ASSERT_TRUE(b.Add(h));
  const TileMesh mesh = b.Build();
  ASSERT_TRUE(mesh.permuted());
  const std::vector<int> data = mesh.ToAxes(hints[0], 2)->dims[0], model = mesh.ToAxes(hints[1], 2)->dims[0];
  EXPECT_EQ(GroupsOverAxes(mesh, model).Groups(), (std::vector<std::vector<int64_t>>{{2, 0}, {3, 1}, {6, 4}, {7, 5}}));
  EXPECT_EQ(GroupsOverAxes(mesh, data).Groups(), (std::vector<std::vector<int64_t>>{{5, 1, 4, 0}, {7, 3, 6, 2}}));
  EXPECT_FALSE(GroupsOverAxes(mesh, data).iota);
  EXPECT_EQ(IndexAlongAxes(mesh, 6, data), 2);
  EXPECT_EQ(IndexAlongAxes(mesh, 6, model), 0);
  EXPECT_EQ(IndexAlongAxes(mesh, 0, model), 1);
}

TEST(MeshGroupsTest, ExplicitGroupsWithoutAnIotaFormStayExplicit) {
  ReplicaGroups g = MakeReplicaGroups({{3, 1}, {0, 2}});
  EXPECT_FALSE(g.iota);
  EXPECT_EQ(g.Groups(), (std::vector<std::vector<int64_t>>{{3, 1}, {0, 2}}));
}

TEST(ShardLayoutTest, StartsOfAnExplicitListFollowTheList) {
  // [4]2,0,3,1 on f32[8]: device 2 holds [0,2), device 0 [2,4), device 3 [4,6), device 1 [6,8).
  StatusOr<ShardLayout> l = ShardLayout::Create(Parse("{devices=[4]2,0,3,1}"), {8}, 4);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->start(2, 0), 0);
  EXPECT_EQ(l->start(0, 0), 2);
  EXPECT_EQ(l->start(3, 0), 4);
  EXPECT_EQ(l->start(1, 0), 6);
}

TEST(PartitionExprTest, TransposedIotaTileIndicesAreDigitsOfThePartitionId) {
  // [2,4]<=[4,2]T(1,0) = [[0,2,4,6],[1,3,5,7]]: device p sits in row p % 2, column p / 2.
  StatusOr<ShardLayout> l = ShardLayout::Create(Parse("{devices=[2,4]<=[4,2]T(1,0)}"), {6, 8}, 8);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  std::optional<PartitionExpr> row = TileIndexExpr(*l, 0), col = TileIndexExpr(*l, 1);
  ASSERT_TRUE(row && col);
  EXPECT_EQ(row->ToString(), "(p % 2)");
  EXPECT_EQ(col->ToString(), "(p / 2 % 4)");
  for (int64_t p = 0; p < 8; ++p) {
    EXPECT_EQ(row->Eval(p), p % 2) << p;
    EXPECT_EQ(col->Eval(p), p / 2) << p;
  }
  // Start along dim 0 (shards of 3) minus start along dim 1 (shards of 2).
  PartitionExpr diff = *row * 3 - *col * 2;
  EXPECT_EQ(diff.Eval(5), 3 * 1 - 2 * 2);
  EXPECT_TRUE((*row - *row).IsConstant());
}

TEST(PartitionExprTest, PartialReplicationSkipsTheReplicaDigit) {
  // [4,1,2]<=[8] last_tile_dim_replicate: devices 2k and 2k+1 hold row block k; f32[12,5] rows
  // start at 3 * (p / 2).
  StatusOr<ShardLayout> l =
      ShardLayout::Create(Parse("{devices=[4,1,2]<=[8] last_tile_dim_replicate}"), {12, 5}, 8);
  ASSERT_TRUE(l.ok());
  std::optional<PartitionExpr> row = TileIndexExpr(*l, 0);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ((*row * l->shard_dims()[0]).ToString(), "3 * (p / 2 % 4)");
  std::optional<PartitionExpr> col = TileIndexExpr(*l, 1);
  ASSERT_TRUE(col.has_value());
  EXPECT_TRUE(col->IsConstant());
}

TEST(PartitionExprTest, AdjacentDigitsMergeIntoOne) {
  // (p / 4 % 2) * 4 + (p / 1 % 4) is p % 8.
  PartitionExpr a{0, {{4, 2, 4}}}, b{0, {{1, 4, 1}}};
  EXPECT_EQ((a + b).ToString(), "(p % 8)");
}

TEST(PartitionExprTest, NoExpressionWithoutASplitAtTheDimBoundaries) {
  // [3,2]<=[3,2]T(1,0) = [[0,2],[4,1],[3,5]]: the row of device p is not a digit of p.
  StatusOr<ShardLayout> l = ShardLayout::Create(Parse("{devices=[3,2]<=[3,2]T(1,0)}"), {3, 2}, 6);
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE(TileIndexExpr(*l, 0).has_value());
  StatusOr<ShardLayout> v1 = ShardLayout::Create(Parse("{devices=[4]2,0,3,1}"), {8}, 4);
  ASSERT_TRUE(v1.ok());
  EXPECT_FALSE(TileIndexExpr(*v1, 0).has_value());
}

TEST(PartitionExprTest, AffineOverMeshFindsLinearValues) {
  const TileMesh mesh(8);  // axes [2,2,2], strides 4, 2, 1
  // 5 * (p % 2) + (p / 4) + 7.
  std::vector<int64_t> values;
  for (int64_t p = 0; p < 8; ++p) values.push_back(5 * (p % 2) + p / 4 + 7);
  std::optional<PartitionExpr> e = AffineOverMesh(mesh, values);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->ToString(), "(p / 4 % 2) + 5 * (p % 2) + 7");
  EXPECT_FALSE(AffineOverMesh(mesh, {0, 1, 1, 0, 0, 1, 1, 0}).has_value());
}

}  // namespace
}  // namespace xs::spmd
