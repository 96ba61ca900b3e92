// Tests for HloSharding: every kind, XLA's normalizations, queries, metadata and shard groups,
// the mesh-axes form and its conversion, validation, and parse errors. Hand-derived cases come
// first; the tables at the end were produced by XLA itself
// (tests/tools/gen_named_sharding_cases.py).
#include "xshard/sharding/hlo_sharding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace xs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

HloSharding ParseOkSharding(std::string_view text) {
  StatusOr<HloSharding> s = HloSharding::Parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().ToString();
  return s.ok() ? *s : HloSharding::Unknown();
}

std::string Reprint(std::string_view text) { return ParseOkSharding(text).ToString(); }

std::string ParseError(std::string_view text) {
  StatusOr<HloSharding> s = HloSharding::Parse(text);
  EXPECT_FALSE(s.ok()) << text << " parsed as " << (s.ok() ? s->ToString() : "");
  return s.ok() ? "" : s.status().message();
}

TileAssignment Devices(std::vector<int64_t> dims, std::vector<int64_t> devices) {
  return TileAssignment::FromDevices(std::move(dims), std::move(devices)).value();
}

TEST(HloShardingTest, SimpleKindsPrint) {
  EXPECT_EQ(HloSharding::Replicate().ToString(), "{replicated}");
  EXPECT_EQ(HloSharding::Manual().ToString(), "{manual}");
  EXPECT_EQ(HloSharding::Unknown().ToString(), "{unknown}");
  EXPECT_EQ(HloSharding::Unreduced().ToString(), "{unreduced}");
  EXPECT_EQ(HloSharding::AssignDevice(3).ToString(), "{maximal device=3}");
  EXPECT_EQ(HloSharding().kind(), HloSharding::Kind::kReplicated);
}

TEST(HloShardingTest, TilePrintsInTheStoredForm) {
  EXPECT_EQ(HloSharding::Tile(Devices({2, 4}, {0, 2, 4, 6, 1, 3, 5, 7})).ToString(),
            "{devices=[2,4]0,2,4,6,1,3,5,7}");
  EXPECT_EQ(HloSharding::Tile(Devices({2, 4}, {0, 2, 4, 6, 1, 3, 5, 7}).ToIota()).ToString(),
            "{devices=[2,4]<=[4,2]T(1,0)}");
  EXPECT_EQ(HloSharding::Tile(TileAssignment::Iota({1, 8})).ToString(), "{devices=[1,8]<=[8]}");
}

TEST(HloShardingTest, TileNormalizesLikeXla) {
  // One device: replicated.
  EXPECT_TRUE(HloSharding::Tile(TileAssignment::Iota({1, 1})).IsReplicated());
  // Partial replication over every device: replicated.
  EXPECT_TRUE(HloSharding::Tile(TileAssignment::Iota({1, 4}), true).IsReplicated());
  // A size-1 replication dim is dropped.
  EXPECT_EQ(HloSharding::Tile(Devices({2, 1}, {1, 0}), true).ToString(), "{devices=[2]1,0}");
  // Each replication group is sorted.
  EXPECT_EQ(HloSharding::Tile(Devices({2, 2}, {1, 0, 3, 2}), true).ToString(),
            "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}");
  // An iota whose groups span two reshape dims is regrouped (XLA's GroupMinorIotaDimsSorted):
  // <=[2,4]T(1,0) is 0,4,1,5,2,6,3,7; its groups of 4 sorted are {0,1,4,5}, {2,3,6,7}, which
  // is <=[2,2,2]T(1,0,2).
  HloSharding regrouped = HloSharding::Tile(
      TileAssignment::FromIota({1, 2, 4}, {{2, 4}, {1, 0}}).value(), true);
  EXPECT_EQ(regrouped.ToString(), "{devices=[1,2,4]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}");
  EXPECT_THAT(regrouped.tile_assignment().devices(), ElementsAre(0, 1, 4, 5, 2, 3, 6, 7));
}

TEST(HloShardingTest, SubgroupNormalizesLikeXla) {
  // Types are merged and ordered manual, unreduced, replicated; the groups then sorted.
  // [1,1,1,4,2]0,2,1,3,4,6,5,7 {replicated, manual}: rows r of 2 manual devices each
  // -> transposed to (manual, replicated): {0,1,4,5}, {2,3,6,7}.
  HloSharding s = HloSharding::Subgroup(Devices({1, 1, 1, 4, 2}, {0, 2, 1, 3, 4, 6, 5, 7}),
                                        {SubgroupType::kReplicated, SubgroupType::kManual});
  EXPECT_EQ(s.ToString(),
            "{devices=[1,1,1,2,4]0,1,4,5,2,3,6,7 last_tile_dims={manual, replicated}}");
  // One replicated subgroup is last_tile_dim_replicate.
  EXPECT_EQ(HloSharding::Subgroup(TileAssignment::Iota({2, 2}), {SubgroupType::kReplicated})
                .ToString(),
            "{devices=[2,2]<=[4] last_tile_dim_replicate}");
  // No data tiling and one type: the plain kind.
  EXPECT_TRUE(HloSharding::Subgroup(TileAssignment::Iota({1, 4}), {SubgroupType::kManual})
                  .IsManual());
  EXPECT_TRUE(HloSharding::Subgroup(TileAssignment::Iota({1, 2, 2}),
                                    {SubgroupType::kUnreduced, SubgroupType::kUnreduced})
                  .IsUnreduced());
  // Size-1 subgroup dims drop out.
  EXPECT_EQ(HloSharding::Subgroup(TileAssignment::Iota({2, 2, 1}), {SubgroupType::kManual})
                .ToString(),
            "{devices=[2,2]<=[4]}");
  EXPECT_EQ(HloSharding::Subgroup(TileAssignment::Iota({4, 1}), {SubgroupType::kManual})
                .ToString(),
            "{devices=[4]<=[4]}");
  EXPECT_EQ(HloSharding::Subgroup(TileAssignment::Iota({2, 2}), {}).ToString(),
            "{devices=[2,2]<=[4]}");
}

TEST(HloShardingTest, QueriesOnTiledShardings) {
  HloSharding s = ParseOkSharding("{devices=[2,4,2]<=[16] last_tile_dim_replicate}");
  EXPECT_TRUE(s.IsTiled());
  EXPECT_FALSE(s.IsTileMaximal());
  EXPECT_EQ(s.TiledDataRank(), 2);
  EXPECT_THAT(s.TileCounts(), ElementsAre(2, 4));
  EXPECT_EQ(s.ReplicationFactor(), 2);
  HloSharding sub = ParseOkSharding("{devices=[2,3,2,5]<=[60] last_tile_dims={manual, replicated}}");
  EXPECT_EQ(sub.TiledDataRank(), 2);
  EXPECT_THAT(sub.TileCounts(), ElementsAre(2, 3));
  EXPECT_EQ(sub.ReplicationFactor(), 5);
  EXPECT_EQ(ParseOkSharding("{devices=[4,2]<=[8] last_tile_dims={manual}}").ReplicationFactor(), 1);
  EXPECT_EQ(HloSharding::Replicate().TiledDataRank(), 0);
  EXPECT_TRUE(HloSharding::Replicate().TileCounts().empty());
}

TEST(HloShardingTest, MaximalAndTupleQueries) {
  EXPECT_TRUE(HloSharding::AssignDevice(2).IsTileMaximal());
  EXPECT_EQ(HloSharding::AssignDevice(2).device(), 2);
  EXPECT_FALSE(HloSharding::Manual().IsTileMaximal());
  HloSharding t = ParseOkSharding("{{replicated}, {maximal device=1}}");
  EXPECT_TRUE(t.IsTuple());
  EXPECT_TRUE(t.IsTileMaximal());
  EXPECT_FALSE(t.IsReplicated());
  EXPECT_TRUE(ParseOkSharding("{{replicated}, {replicated}}").IsReplicated());
  EXPECT_EQ(t.tuple_elements().size(), 2u);
  EXPECT_EQ(ParseOkSharding("{}").ToString(), "{}");
  EXPECT_EQ(ParseOkSharding("{}").tuple_elements().size(), 0u);
}

TEST(HloShardingTest, TuplesMarkEveryFifthElement) {
  std::vector<HloSharding> six(6, HloSharding::Replicate());
  EXPECT_EQ(HloSharding::Tuple(six).ToString(),
            "{{replicated}, {replicated}, {replicated}, {replicated}, {replicated}, "
            "/*index=5*/{replicated}}");
  EXPECT_EQ(Reprint("{{replicated},/*index=1*/{manual}}"), "{{replicated}, {manual}}");
}

TEST(HloShardingTest, MetadataIsKeptVerbatim) {
  HloSharding one = ParseOkSharding("{replicated metadata={op_name=\"a\"  source_line=3}}");
  EXPECT_THAT(one.metadata(), ElementsAre("op_name=\"a\" source_line=3"));
  EXPECT_EQ(one.ToString(), "{replicated metadata={op_name=\"a\" source_line=3}}");
  EXPECT_EQ(one.ToString(false), "{replicated}");
  HloSharding two = ParseOkSharding("{devices=[2]0,1 metadata={{op_name=\"b\"}, {op_name=\"c\"}}}");
  EXPECT_THAT(two.metadata(), ElementsAre("op_name=\"b\"", "op_name=\"c\""));
  EXPECT_EQ(two.ToString(), "{devices=[2]0,1 metadata={{op_name=\"b\"}, {op_name=\"c\"}}}");
  // A list of one prints in the short form; quotes may hold braces and escaped quotes.
  EXPECT_EQ(Reprint("{manual metadata={{op_name=\"x{ \\\"}\"}}}"),
            "{manual metadata={op_name=\"x{ \\\"}\"}}");
  EXPECT_EQ(Reprint("{maximal device=1 metadata={}}"), "{maximal device=1 metadata={}}");
  // Equality ignores metadata; WithoutMetadata drops it, in tuples too.
  EXPECT_EQ(one, HloSharding::Replicate());
  HloSharding tuple = ParseOkSharding("{{replicated metadata={op_name=\"d\"}}, {manual}}");
  EXPECT_EQ(tuple.WithoutMetadata().ToString(), "{{replicated}, {manual}}");
  EXPECT_EQ(HloSharding::Tuple({HloSharding::Manual()}).WithMetadata({"op_name=\"e\""})
                .ToString(),
            "{{manual metadata={op_name=\"e\"}}}");
}

TEST(HloShardingTest, ShardGroupsPrintBeforeMetadataAndCountInEquality) {
  EXPECT_EQ(Reprint("{devices=[2]0,1 metadata={op_name=\"a\"} shard_like 2}"),
            "{devices=[2]0,1 shard_like 2 metadata={op_name=\"a\"}}");
  HloSharding as = ParseOkSharding("{manual shard_as 1}");
  EXPECT_EQ(as.shard_as(), 1);
  EXPECT_FALSE(as.shard_like().has_value());
  EXPECT_FALSE(as == HloSharding::Manual());
  EXPECT_EQ(as, HloSharding::Manual().WithShardAs(1));
  EXPECT_FALSE(as == HloSharding::Manual().WithShardLike(1));
}

TEST(HloShardingTest, EqualityIgnoresTheTileTextForm) {
  EXPECT_EQ(ParseOkSharding("{devices=[2,4]0,2,4,6,1,3,5,7}"), ParseOkSharding("{devices=[2,4]<=[4,2]T(1,0)}"));
  EXPECT_FALSE(ParseOkSharding("{devices=[2,4]<=[8]}") == ParseOkSharding("{devices=[2,4]<=[4,2]T(1,0)}"));
  EXPECT_FALSE(ParseOkSharding("{devices=[2,2]<=[4] last_tile_dim_replicate}") ==
               ParseOkSharding("{devices=[2,2]<=[4]}"));
  EXPECT_FALSE(HloSharding::AssignDevice(1) == HloSharding::AssignDevice(2));
}

TEST(HloShardingTest, ParsesTheSeedShardings) {
  HloSharding v1 = ParseOkSharding("{devices=[2,4]0,2,4,6,1,3,5,7}");
  HloSharding v2 = ParseOkSharding("{devices=[2,4]<=[4,2]T(1,0)}");
  EXPECT_EQ(v1, v2);
  EXPECT_EQ(v1.tile_assignment().ToIota().ToString(), "[2,4]<=[4,2]T(1,0)");
  HloSharding partial = ParseOkSharding("{devices=[1,4,2]0,1,2,3,4,5,6,7 last_tile_dim_replicate}");
  EXPECT_TRUE(partial.ReplicateOnLastTileDim());
  EXPECT_THAT(partial.TileCounts(), ElementsAre(1, 4));
}

TEST(HloShardingTest, MeshAxesFormParsesIntoFields) {
  HloSharding s = ParseOkSharding(
      "{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{'b':(2)2}, {'d':(4)2, 'c', ?}], replicated={'a'}}");
  ASSERT_TRUE(s.IsMeshAxes());
  const MeshAxesSharding& m = s.mesh_axes();
  ASSERT_EQ(m.mesh_axes.size(), 4u);
  EXPECT_EQ(m.mesh_axes[3], (std::pair<std::string, int64_t>{"d", 8}));
  ASSERT_EQ(m.dims.size(), 2u);
  EXPECT_EQ(m.dims[0].axes, (std::vector<AxisRef>{{"b", 2, 2}}));
  EXPECT_FALSE(m.dims[0].open);
  EXPECT_EQ(m.dims[1].axes, (std::vector<AxisRef>{{"d", 4, 2}, {"c", 1, 0}}));
  EXPECT_TRUE(m.dims[1].open);
  EXPECT_EQ(m.replicated, (std::vector<AxisRef>{{"a", 1, 0}}));
  EXPECT_FALSE(m.fully_replicated);
  EXPECT_EQ(s.TiledDataRank(), 2);
  EXPECT_THAT(s.TileCounts(), ElementsAre(2, 6));
}

TEST(HloShardingTest, MeshAxesShortFormsAndDeviceIds) {
  EXPECT_TRUE(ParseOkSharding("{mesh['a'=2], replicated}").mesh_axes().fully_replicated);
  EXPECT_TRUE(ParseOkSharding("{mesh['a'=2], replicated}").IsReplicated());
  EXPECT_EQ(Reprint("{mesh['a'=2,'b'=2], [], manual={'a', 'b'}}"), "{mesh['a'=2,'b'=2], manual}");
  EXPECT_EQ(Reprint("{mesh['a'=2,'b'=2] unreduced}"), "{mesh['a'=2,'b'=2], unreduced}");
  EXPECT_EQ(Reprint("{mesh['a'=2,'b'=2], [{'0'}, {'1'}]}"), "{mesh['a'=2,'b'=2], [{'a'}, {'b'}]}");
  EXPECT_EQ(Reprint("{maximal_mesh[device_id=5], metadata={op_name=\"m\"}}"),
            "{maximal_mesh[device_id=5], metadata={{op_name=\"m\"}}}");
  EXPECT_EQ(Reprint("{mesh['it\\'s'=2], [{'it\\'s'}]}"), "{mesh['it\\'s'=2], [{'it\\'s'}]}");
  // Device ids: a list, an iota text, and the default order that XLA never prints.
  HloSharding listed = ParseOkSharding("{mesh['x'=2,'y'=2], device_ids=(0,2,1,3), [{'x'}]}");
  EXPECT_THAT(listed.mesh_axes().device_ids->devices(), ElementsAre(0, 2, 1, 3));
  EXPECT_FALSE(listed.mesh_axes().device_ids_iota_text);
  HloSharding iota = ParseOkSharding("{mesh['x'=2,'y'=2], device_ids=([2,2]T(1,0)), [{'x'}]}");
  EXPECT_TRUE(iota.mesh_axes().device_ids_iota_text);
  EXPECT_EQ(iota.ToString(), "{mesh['x'=2,'y'=2], device_ids=([2,2]T(1,0)), [{'x'}]}");
  EXPECT_EQ(Reprint("{mesh['x'=2,'y'=2], device_ids=([2,2]T(0,1)), [{'x'}]}"),
            "{mesh['x'=2,'y'=2], [{'x'}]}");
  // FromMeshAxes normalizes like the parser.
  MeshAxesSharding m;
  m.mesh_axes = {{"x", 2}};
  m.device_ids = TileAssignment::Iota({2});
  m.fully_replicated = false;
  HloSharding built = HloSharding::FromMeshAxes(m);
  EXPECT_FALSE(built.mesh_axes().device_ids.has_value());
  EXPECT_TRUE(built.mesh_axes().fully_replicated);
  EXPECT_EQ(built.ToString(), "{mesh['x'=2], replicated}");
}

// Regression (fuzzer): XLA prints these in the short form, whose parse names every axis; the
// stored lists follow, so printing and parsing agree.
TEST(HloShardingTest, SizeOneAxesFoldIntoTheShortForms) {
  HloSharding s = ParseOkSharding("{mesh['x'=1,'y'=1] [], unreduced={'y'}}");
  EXPECT_EQ(s.ToString(), "{mesh['x'=1,'y'=1], unreduced}");
  EXPECT_EQ(s, ParseOkSharding(s.ToString()));
  EXPECT_EQ(s.mesh_axes().unreduced, (std::vector<AxisRef>{{"x", 1, 0}, {"y", 1, 0}}));
  HloSharding m = ParseOkSharding("{mesh['a'=4,'b'=1], [], unreduced={'b'}, manual={'a'}}");
  EXPECT_EQ(m.ToString(), "{mesh['a'=4,'b'=1], manual}");
  EXPECT_TRUE(m.mesh_axes().unreduced.empty());
  EXPECT_EQ(m, ParseOkSharding(m.ToString()));
}

TEST(HloShardingTest, ToTiledSplitsSubAxes) {
  // a whole, b cut into b:(1)2 (unused: replicated) and b:(2)2 (dim 1); devices 4a + 2b1 + b2,
  // so tile (i, j) holds {4i + j, 4i + 2 + j}.
  HloSharding s = ParseOkSharding("{mesh['a'=2,'b'=4], [{'a'}, {'b':(2)2}]}");
  HloSharding tiled = s.ToTiled().value();
  EXPECT_EQ(tiled.ToString(), "{devices=[2,2,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}");
  EXPECT_THAT(tiled.tile_assignment().devices(), ElementsAre(0, 2, 1, 3, 4, 6, 5, 7));
  EXPECT_EQ(s.ReplicationFactor(), 2);
  // Manual and unreduced axes become subgroups; a custom device order is applied.
  EXPECT_EQ(ParseOkSharding("{mesh['a'=2,'b'=2], [{'a'}], manual={'b'}}").ToTiled()->ToString(),
            "{devices=[2,2]<=[4] last_tile_dims={manual}}");
  EXPECT_EQ(ParseOkSharding("{mesh['x'=2,'y'=2], device_ids=(3,2,1,0), [{'y'}, {'x'}]}")
                .ToTiled()->ToString(),
            "{devices=[2,2]3,1,2,0}");
  EXPECT_EQ(ParseOkSharding("{maximal_mesh[device_id=4]}").ToTiled()->ToString(), "{maximal device=4}");
  EXPECT_EQ(ParseOkSharding("{mesh['a'=2], [{}]}").ToTiled()->ToString(), "{replicated}");
  EXPECT_EQ(ParseOkSharding("{{mesh['a'=2], [{'a'}]}, {manual}}").ToTiled()->ToString(),
            "{{devices=[2]<=[2]}, {manual}}");
  EXPECT_EQ(HloSharding::Manual().ToTiled()->ToString(), "{manual}");
}

TEST(HloShardingTest, ValidateChecksRankDevicesAndTuples) {
  Shape f32_4x8(DType::kF32, {4, 8});
  EXPECT_TRUE(ParseOkSharding("{devices=[2,4]<=[8]}").Validate(f32_4x8, 8).ok());
  EXPECT_TRUE(HloSharding::Replicate().Validate(f32_4x8, 8).ok());
  EXPECT_TRUE(ParseOkSharding("{devices=[2,1,4]<=[8] last_tile_dim_replicate}").Validate(f32_4x8, 8).ok());
  EXPECT_THAT(ParseOkSharding("{devices=[2,2,2]<=[8]}").Validate(f32_4x8, 8).message(),
              HasSubstr("the tile assignment splits 3 data dims but the shape has rank 2"));
  EXPECT_THAT(ParseOkSharding("{devices=[2,4]<=[8]}").Validate(f32_4x8, 16).message(),
              HasSubstr("tile_assignment should have 16 devices but has 8"));
  EXPECT_THAT(ParseOkSharding("{devices=[2,2]0,1,2,9}").Validate(f32_4x8, 4).message(),
              HasSubstr("device 9 is out of range for 4 devices (ids 0..3)"));
  EXPECT_THAT(HloSharding::AssignDevice(8).Validate(f32_4x8, 8).message(),
              HasSubstr("sharding {maximal device=8} on shape f32[4,8]: device 8 is out of range"));
  Shape tuple = Shape::Tuple({f32_4x8, Shape(DType::kS32, {2})});
  EXPECT_TRUE(ParseOkSharding("{{replicated}, {devices=[2]0,1}}").Validate(tuple, 2).ok());
  EXPECT_THAT(ParseOkSharding("{{replicated}}").Validate(tuple, 2).message(),
              HasSubstr("the tuple sharding has 1 elements but the shape has 2 leaves"));
  EXPECT_THAT(ParseOkSharding("{{replicated}, {devices=[2,1]0,1}}").Validate(tuple, 2).message(),
              HasSubstr("tuple element 1: "));
  EXPECT_THAT(HloSharding::Replicate().Validate(tuple, 2).message(),
              HasSubstr("the shape is a tuple but the sharding is not"));
  EXPECT_THAT(ParseOkSharding("{{replicated}}").Validate(f32_4x8, 2).message(),
              HasSubstr("a tuple sharding needs a tuple shape"));
  EXPECT_TRUE(ParseOkSharding("{devices=[2]0,1}").Validate(Shape::Token(), 2).ok());
  EXPECT_TRUE(ParseOkSharding("{mesh['a'=2,'b'=4], [{'a'}, {'b'}]}").Validate(f32_4x8, 8).ok());
  EXPECT_THAT(ParseOkSharding("{mesh['a'=2,'b'=4], [{'a'}]}").Validate(f32_4x8, 8).message(),
              HasSubstr("the sharding has 1 dim shardings but the shape has rank 2"));
  EXPECT_THAT(ParseOkSharding("{devices=[1]<=[1]}").Validate(Shape(DType::kF32, {4}), 1).message(),
              HasSubstr("holds a single device"));
}

TEST(HloShardingTest, ParseErrorsNameTheColumnAndTheRule) {
  EXPECT_THAT(ParseError("{devices=[2,2]0,1,2}"),
              HasSubstr("invalid sharding \"{devices=[2,2]0,1,2}\" at column 2: tile "
                        "assignment [2,2] needs 4 device ids"));
  EXPECT_THAT(ParseError("{devices=[2,2]<=[8]}"),
              HasSubstr("iota tile assignment size 8 does not match the tile assignment "
                        "dimensions product 4"));
  EXPECT_THAT(ParseError("{devices=[4]<=[2,2]}"),
              HasSubstr("at column 20: expected 'T(' to start sharding devices "
                        "iota_transpose_perm"));
  EXPECT_THAT(ParseError("{replicated devices=[2]0,1}"),
              HasSubstr("replicated shardings should not have any devices assigned"));
  EXPECT_THAT(ParseError("{maximal}"), HasSubstr("maximal shardings should have exactly one"));
  // Found by hlo_sharding_fuzz: a negative id parsed, and its tiled form did not.
  EXPECT_THAT(ParseError("{maximal_mesh[device_id=-5]}"),
              HasSubstr("device_id=-5 is not a device id: give a whole number >= 0"));
  EXPECT_THAT(ParseError("{devices=[2]0}"),
              HasSubstr("non-maximal shardings must have more than one device assigned"));
  EXPECT_THAT(ParseError("{foo}"), HasSubstr("at column 2: unexpected token in sharding "
                                             "(found 'foo}')"));
  EXPECT_THAT(ParseError("{color=red}"), HasSubstr("unknown attribute in sharding"));
  EXPECT_THAT(ParseError("{devices=[2]0,1 last_tile_dims={foo}}"),
              HasSubstr("expected a subgroup type: replicated, manual or unreduced"));
  EXPECT_THAT(ParseError("{devices=[2]0,1 last_tile_dims={manual, manual}}"),
              HasSubstr("last_tile_dims names 2 subgroup dims but the tile assignment has only 1"));
  EXPECT_THAT(ParseError("{devices=[2,2]<=[4] last_tile_dim_replicate last_tile_dims={manual}}"),
              HasSubstr("use either last_tile_dim_replicate or last_tile_dims"));
  EXPECT_THAT(ParseError("{replicated} x"), HasSubstr("unexpected text after the sharding"));
  EXPECT_THAT(ParseError("{devices=[99999999999999999999]0}"), HasSubstr("expected an integer"));
  // The device limit (base/limits.h) is 8192, the largest count in XLA's own test modules.
  EXPECT_EQ(ParseOkSharding("{devices=[8,1,1,1024]<=[8192] last_tile_dim_replicate}").tile_assignment().num_devices(), 8192);
  EXPECT_THAT(ParseError("{devices=[8193]<=[8193]}"), HasSubstr("at most 8192"));
  EXPECT_THAT(ParseError("{mesh['a'=2], [{'b'}]}"),
              HasSubstr("axis 'b' is not a valid axis name or index in mesh ['a']"));
  EXPECT_THAT(ParseError("{mesh['a'=2], [{'a'}, {'a'}]}"),
              HasSubstr("axes 'a' and 'a' overlap or cannot coexist"));
  EXPECT_THAT(ParseError("{mesh['a'=4], [{'a':(1)2, 'a':(2)2}]}"),
              HasSubstr("adjacent axes in dimension sharding can be merged: 'a':(1)2, 'a':(2)2"));
  EXPECT_THAT(ParseError("{mesh['a'=2,'b'=2], [], manual={'b', 'a'}}"),
              HasSubstr("manual axes must be sorted by mesh axis index"));
  EXPECT_THAT(ParseError("{mesh['a'=4], [{'a':(2)4}]}"),
              HasSubstr("sub-axis 'a':(2)4 does not fit axis size 4"));
  EXPECT_THAT(ParseError("{mesh['a'=2,'a'=2], replicated}"),
              HasSubstr("mesh axis 'a' appears twice"));
  EXPECT_THAT(ParseError("{mesh['a'=2,'b'=2], device_ids=(0,1,2,3), [{'a'}]}"),
              HasSubstr("device_ids=(0,1,2,...) is the default order; omit it"));
  EXPECT_THAT(ParseError("{mesh['a'=2,'b'=2], device_ids=(0,1,2), [{'a'}]}"),
              HasSubstr("expected 4 device_ids based on mesh axes, but got 3"));
  EXPECT_THAT(ParseError("{mesh['a'=2], [{?, 'a'}]}"), HasSubstr("saw an axis ref after '?'"));
  // Regression (fuzzer): {{x}} in a list would print as the list {x}.
  EXPECT_THAT(ParseError("{replicated metadata={{{x}}}}"),
              HasSubstr("at column 24: metadata entries look like op_name=\"a\""));
}

// Input text -> XLA's printing of XLA's parse.
struct PrintCase {
  const char* text;
  const char* xla;
};
const PrintCase kXlaPrintCases[] = {
    // BEGIN GENERATED kXlaPrintCases by tests/tools/gen_named_sharding_cases.py; do not edit.
    {"{replicated}", "{replicated}"},
    {"{manual}", "{manual}"},
    {"{unknown}", "{unknown}"},
    {"{unreduced}", "{unreduced}"},
    {"{maximal device=3}", "{maximal device=3}"},
    {"{ replicated }", "{replicated}"},
    {"{maximal  device=3}", "{maximal device=3}"},
    {"{devices=[2,2]0,1,2,3}", "{devices=[2,2]0,1,2,3}"},
    {"{devices=[2, 2] 0, 1, 2, 3}", "{devices=[2,2]0,1,2,3}"},
    {"{devices=[2,2]<=[4]}", "{devices=[2,2]<=[4]}"},
    {"{devices=[2,4]<=[4,2]T(1,0)}", "{devices=[2,4]<=[4,2]T(1,0)}"},
    {"{devices=[2,2,2]<=[2,2,2]T(2,1,0)}", "{devices=[2,2,2]<=[2,2,2]T(2,1,0)}"},
    {"{devices=[2,4]<=[2,4]T(0,1)}", "{devices=[2,4]<=[8]}"},
    {"{devices=[8]<=[2,2,2]T(0,1,2)}", "{devices=[8]<=[8]}"},
    {"{devices=[4,2]<=[2,1,4]T(2,1,0)}", "{devices=[4,2]<=[2,4]T(1,0)}"},
    {"{devices=[3,4]<=[2,2,3]T(2,1,0)}", "{devices=[3,4]<=[2,2,3]T(2,1,0)}"},
    {"{devices=[4,2]<=[2,2,2]T(1,2,0)}", "{devices=[4,2]<=[2,4]T(1,0)}"},
    {"{devices=[2,1,4]<=[2,2,2]T(2,0,1)}", "{devices=[2,1,4]<=[4,2]T(1,0)}"},
    {"{devices=[2,2]0,1,2,3 last_tile_dim_replicate}", "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}"},
    {"{devices=[2,2]1,0,3,2 last_tile_dim_replicate}", "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}"},
    {"{devices=[2,4]3,1,2,0,7,5,6,4 last_tile_dim_replicate}", "{devices=[2,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}"},
    {"{devices=[4]0,1,2,3 last_tile_dim_replicate}", "{replicated}"},
    {"{devices=[2,1]0,1 last_tile_dim_replicate}", "{devices=[2]0,1}"},
    {"{devices=[1,4]<=[4] last_tile_dim_replicate}", "{replicated}"},
    {"{devices=[2,4]<=[2,4]T(1,0) last_tile_dim_replicate}", "{devices=[2,4]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}"},
    {"{devices=[1,1,2,4]<=[2,4]T(1,0) last_tile_dim_replicate}", "{devices=[1,1,2,4]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}"},
    {"{devices=[2,2,2]<=[2,2,2]T(1,2,0) last_tile_dim_replicate}", "{devices=[2,2,2]<=[2,4]T(1,0) last_tile_dim_replicate}"},
    {"{devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}", "{devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}"},
    {"{devices=[2,2,2]<=[8] last_tile_dims={replicated, manual}}", "{devices=[2,2,2]<=[2,2,2]T(0,2,1) last_tile_dims={manual, replicated}}"},
    {"{devices=[2,2,2]0,1,2,3,4,5,6,7 last_tile_dims={replicated, manual}}", "{devices=[2,2,2]0,2,1,3,4,6,5,7 last_tile_dims={manual, replicated}}"},
    {"{devices=[2,2,2,2]<=[16] last_tile_dims={replicated, manual, replicated}}", "{devices=[2,2,4]<=[2,2,2,2]T(0,2,1,3) last_tile_dims={manual, replicated}}"},
    {"{devices=[2,1,2]<=[4] last_tile_dims={manual, replicated}}", "{devices=[2,2]<=[4] last_tile_dim_replicate}"},
    {"{devices=[1,2,2]<=[4] last_tile_dims={manual, manual}}", "{manual}"},
    {"{devices=[1,4]<=[4] last_tile_dims={manual}}", "{manual}"},
    {"{devices=[1,4]<=[4] last_tile_dims={unreduced}}", "{unreduced}"},
    {"{devices=[2,2]<=[4] last_tile_dims={unreduced}}", "{devices=[2,2]<=[4] last_tile_dims={unreduced}}"},
    {"{devices=[2,2,2]<=[8] last_tile_dims={unreduced, manual}}", "{devices=[2,2,2]<=[2,2,2]T(0,2,1) last_tile_dims={manual, unreduced}}"},
    {"{devices=[2,2,1]<=[4] last_tile_dims={manual}}", "{devices=[2,2]<=[4]}"},
    {"{devices=[2,2]<=[4] last_tile_dims={}}", "{devices=[2,2]<=[4]}"},
    {"{replicated shard_as 3}", "{replicated shard_as 3}"},
    {"{devices=[2]0,1 shard_like 2}", "{devices=[2]0,1 shard_like 2}"},
    {"{unknown shard_as 0}", "{unknown shard_as 0}"},
    {"{}", "{}"},
    {"{{replicated}}", "{{replicated}}"},
    {"{{replicated},{manual}}", "{{replicated}, {manual}}"},
    {"{{replicated}, {replicated}, {replicated}, {replicated}, {replicated}, {replicated}, {replicated}, {replicated}, {replicated}, {replicated}, {replicated}}", "{{replicated}, {replicated}, {replicated}, {replicated}, {replicated}, /*index=5*/{replicated}, {replicated}, {replicated}, {replicated}, {replicated}, /*index=10*/{replicated}}"},
    {"{{replicated}, {replicated}, {replicated}, {replicated}, /*index=4*/{replicated}, {maximal device=1}}", "{{replicated}, {replicated}, {replicated}, {replicated}, {replicated}, /*index=5*/{maximal device=1}}"},
    {"{mesh['a'=2,'b'=4], [{'a'}, {'b'}]}", "{mesh['a'=2,'b'=4], [{'a'}, {'b'}]}"},
    {"{mesh['a'=2,'b'=4] [{'b', 'a'}]}", "{mesh['a'=2,'b'=4], [{'b', 'a'}]}"},
    {"{mesh['a'=2, 'b'=4], [{'a', ?}, {?}]}", "{mesh['a'=2,'b'=4], [{'a', ?}, {?}]}"},
    {"{mesh[\"a\"=2,\"b\"=4], [{\"b\"}]}", "{mesh['a'=2,'b'=4], [{'b'}]}"},
    {"{mesh['a'=2,'b'=4], [{'0'}, {'1'}]}", "{mesh['a'=2,'b'=4], [{'a'}, {'b'}]}"},
    {"{mesh['a'=2,'b'=4], [{}, {}]}", "{mesh['a'=2,'b'=4], [{}, {}]}"},
    {"{mesh['a'=2,'b'=4], [], replicated={'a'}}", "{mesh['a'=2,'b'=4], [], replicated={'a'}}"},
    {"{mesh['a'=2,'b'=4], [{'a'}], manual={'b'}}", "{mesh['a'=2,'b'=4], [{'a'}], manual={'b'}}"},
    {"{mesh['a'=2,'b'=4], [], manual={'a', 'b'}}", "{mesh['a'=2,'b'=4], manual}"},
    {"{mesh['a'=2,'b'=4], [], unreduced={'a', 'b'}}", "{mesh['a'=2,'b'=4], unreduced}"},
    {"{mesh['a'=2,'b'=4], [{'b':(1)2}], unreduced={'b':(2)2}}", "{mesh['a'=2,'b'=4], [{'b':(1)2}], unreduced={'b':(2)2}}"},
    {"{mesh['a'=2,'b'=4], device_ids=(7,6,5,4,3,2,1,0), [{'a'}]}", "{mesh['a'=2,'b'=4], device_ids=(7,6,5,4,3,2,1,0), [{'a'}]}"},
    {"{mesh['a'=2,'b'=4], device_ids=([2,4]T(1,0)), [{'a'}]}", "{mesh['a'=2,'b'=4], device_ids=([2,4]T(1,0)), [{'a'}]}"},
    {"{mesh['a'=2,'b'=4], device_ids=([4,2]T(0,1)), [{'a'}]}", "{mesh['a'=2,'b'=4], [{'a'}]}"},
    {"{mesh['a'=1,'b'=2], [], unreduced={'b'}, manual={'a'}}", "{mesh['a'=1,'b'=2], unreduced}"},
    {"{mesh['a'=4,'b'=1], [], manual={'a'}}", "{mesh['a'=4,'b'=1], manual}"},
    {"{mesh['x'=1,'y'=1] [], unreduced={'y'}}", "{mesh['x'=1,'y'=1], unreduced}"},
    {"{mesh['a'=4,'b'=1], [], unreduced={'b'}, manual={'a'}}", "{mesh['a'=4,'b'=1], manual}"},
    {"{maximal_mesh[device_id=3]}", "{maximal_mesh[device_id=3]}"},
    {"{{maximal_mesh[device_id=3]}, {mesh['x'=2], [{'x'}]}}", "{{maximal_mesh[device_id=3]}, {mesh['x'=2], [{'x'}]}}"},
    {"{devices=[8,1]3,2,6,0,1,4,5,7 last_tile_dims={manual}}", "{devices=[8]3,2,6,0,1,4,5,7}"},
    {"{devices=[2,1,2,1]3,0,2,1}", "{devices=[2,1,2,1]3,0,2,1}"},
    {"{devices=[2,2,3]1,4,6,0,9,2,10,8,3,11,5,7}", "{devices=[2,2,3]1,4,6,0,9,2,10,8,3,11,5,7}"},
    {"{devices=[8,1]0,3,4,7,6,2,5,1}", "{devices=[8,1]0,3,4,7,6,2,5,1}"},
    {"{devices=[1,1,2]<=[2] last_tile_dim_replicate}", "{replicated}"},
    {"{devices=[2,2,2,1,2]<=[1,2,1,8]T(3,1,0,2)}", "{devices=[2,2,2,1,2]<=[2,8]T(1,0)}"},
    {"{devices=[2,3]2,4,1,3,5,0 last_tile_dim_replicate}", "{devices=[2,3]1,2,4,0,3,5 last_tile_dim_replicate}"},
    {"{devices=[1,1,4,4]<=[1,4,2,1,2]T(2,0,3,4,1) last_tile_dims={manual, replicated}}", "{devices=[1,1,4,4]<=[4,4]T(1,0) last_tile_dims={manual, replicated}}"},
    {"{devices=[2]<=[1,2]T(1,0) last_tile_dims={unreduced}}", "{unreduced}"},
    {"{devices=[1,1,2]<=[1,1,2]T(1,2,0) last_tile_dims={unreduced, replicated}}", "{replicated}"},
    {"{devices=[1,1,2,3]5,0,2,4,3,1}", "{devices=[1,1,2,3]5,0,2,4,3,1}"},
    {"{devices=[2,2,2]1,0,5,2,6,7,3,4 last_tile_dims={manual, unreduced}}", "{devices=[2,2,2]1,0,5,2,6,7,3,4 last_tile_dims={manual, unreduced}}"},
    {"{devices=[2,2,2,2,1,1]<=[4,2,2,1]T(1,2,0,3) last_tile_dim_replicate}", "{devices=[2,2,2,2,1]<=[4,4]T(1,0)}"},
    {"{devices=[2,1]<=[1,2]T(1,0) last_tile_dims={manual}}", "{devices=[2]<=[2]}"},
    {"{devices=[2,1]<=[1,2]T(0,1)}", "{devices=[2,1]<=[2]}"},
    {"{devices=[2,3]3,0,4,2,1,5 last_tile_dims={unreduced, manual}}", "{devices=[3,2]3,2,0,1,4,5 last_tile_dims={manual, unreduced}}"},
    {"{devices=[16]<=[2,4,2,1,1]T(1,3,2,0,4)}", "{devices=[16]<=[2,8]T(1,0)}"},
    {"{devices=[1,1,2]0,1}", "{devices=[1,1,2]0,1}"},
    {"{devices=[16,1]<=[1,2,4,2]T(3,0,2,1)}", "{devices=[16,1]<=[2,4,2]T(2,1,0)}"},
    {"{devices=[8,1,1]<=[2,2,2,1]T(2,1,0,3)}", "{devices=[8,1,1]<=[2,2,2]T(2,1,0)}"},
    {"{devices=[1,8]<=[1,8]T(1,0) last_tile_dims={manual}}", "{manual}"},
    {"{devices=[1,4]1,3,0,2}", "{devices=[1,4]1,3,0,2}"},
    {"{devices=[4,2]<=[8,1]T(0,1)}", "{devices=[4,2]<=[8]}"},
    {"{devices=[2,3,1]1,0,3,5,2,4 last_tile_dim_replicate}", "{devices=[2,3]1,0,3,5,2,4}"},
    {"{devices=[1,4,4]8,3,6,11,13,4,5,9,15,1,10,0,14,2,12,7 last_tile_dim_replicate}", "{devices=[1,4,4]3,6,8,11,4,5,9,13,0,1,10,15,2,7,12,14 last_tile_dim_replicate}"},
    {"{devices=[1,4]1,2,3,0}", "{devices=[1,4]1,2,3,0}"},
    {"{devices=[3,2,1]<=[1,6]T(0,1)}", "{devices=[3,2,1]<=[6]}"},
    {"{devices=[2,2,1,1,2]4,2,5,0,3,6,7,1 last_tile_dims={manual}}", "{devices=[2,2,1,1,2]4,2,5,0,3,6,7,1 last_tile_dims={manual}}"},
    {"{devices=[6]<=[6,1]T(0,1) last_tile_dims={manual}}", "{manual}"},
    {"{devices=[2]1,0 last_tile_dims={manual}}", "{manual}"},
    {"{devices=[2,4,1]<=[2,4,1,1]T(0,3,2,1)}", "{devices=[2,4,1]<=[8]}"},
    {"{devices=[1,6]2,0,5,1,3,4 last_tile_dims={unreduced}}", "{unreduced}"},
    {"{devices=[1,2,6]4,2,6,3,0,11,5,10,7,1,9,8 last_tile_dims={unreduced}}", "{devices=[1,2,6]4,2,6,3,0,11,5,10,7,1,9,8 last_tile_dims={unreduced}}"},
    {"{devices=[1,2,3]<=[1,3,2]T(1,0,2) last_tile_dims={unreduced, replicated}}", "{devices=[1,2,3]<=[6] last_tile_dims={unreduced, replicated}}"},
    {"{devices=[2]0,1 last_tile_dim_replicate}", "{replicated}"},
    {"{devices=[1,8,1,2]<=[4,4]T(0,1) last_tile_dims={manual, unreduced, unreduced}}", "{devices=[1,8,2]<=[16] last_tile_dims={manual, unreduced}}"},
    {"{devices=[1,16,1]15,12,0,7,4,10,1,5,13,2,11,9,14,3,8,6 last_tile_dim_replicate}", "{devices=[1,16]15,12,0,7,4,10,1,5,13,2,11,9,14,3,8,6}"},
    {"{devices=[2,2]<=[4] last_tile_dim_replicate}", "{devices=[2,2]<=[4] last_tile_dim_replicate}"},
    {"{devices=[4,2]<=[8,1]T(1,0) last_tile_dims={manual}}", "{devices=[4,2]<=[8] last_tile_dims={manual}}"},
    {"{devices=[8,2]8,11,10,6,7,0,5,4,9,12,13,1,14,3,2,15 last_tile_dims={manual}}", "{devices=[8,2]8,11,10,6,7,0,5,4,9,12,13,1,14,3,2,15 last_tile_dims={manual}}"},
    {"{devices=[2,1]1,0 last_tile_dims={replicated, manual}}", "{replicated}"},
    {"{devices=[2,2,1,2,2]<=[1,4,1,2,2]T(1,4,2,3,0)}", "{devices=[2,2,1,2,2]<=[4,2,2]T(0,2,1)}"},
    {"{devices=[12,1]<=[3,4]T(0,1) last_tile_dim_replicate}", "{devices=[12]<=[12]}"},
    {"{devices=[4,3]6,2,3,9,8,11,10,5,0,1,7,4 last_tile_dims={manual}}", "{devices=[4,3]6,2,3,9,8,11,10,5,0,1,7,4 last_tile_dims={manual}}"},
    {"{devices=[1,1,2,3]1,2,5,0,4,3 last_tile_dims={unreduced, manual}}", "{devices=[1,1,3,2]1,0,2,4,5,3 last_tile_dims={manual, unreduced}}"},
    {"{devices=[4,1,4]<=[2,4,1,2]T(1,0,2,3) last_tile_dims={unreduced}}", "{devices=[4,1,4]<=[2,4,2]T(1,0,2) last_tile_dims={unreduced}}"},
    {"{devices=[1,16,1]10,1,4,15,12,11,3,14,0,9,8,13,2,7,6,5 last_tile_dims={replicated}}", "{devices=[1,16]10,1,4,15,12,11,3,14,0,9,8,13,2,7,6,5}"},
    {"{devices=[6,1]1,4,3,0,5,2}", "{devices=[6,1]1,4,3,0,5,2}"},
    {"{devices=[2,6]8,4,11,2,6,10,7,3,1,5,9,0 last_tile_dims={manual, replicated}}", "{devices=[2,6]2,4,6,8,10,11,0,1,3,5,7,9 last_tile_dims={manual, replicated}}"},
    {"{devices=[1,2,6]5,4,3,2,8,10,11,7,6,0,1,9}", "{devices=[1,2,6]5,4,3,2,8,10,11,7,6,0,1,9}"},
    {"{devices=[1,2]<=[2,1,1]T(1,0,2)}", "{devices=[1,2]<=[2]}"},
    {"{devices=[6]<=[3,1,2]T(1,0,2) last_tile_dim_replicate}", "{replicated}"},
    {"{devices=[8,2]1,2,15,5,7,9,3,8,4,11,12,13,0,10,14,6}", "{devices=[8,2]1,2,15,5,7,9,3,8,4,11,12,13,0,10,14,6}"},
    {"{devices=[4,3]<=[3,1,4]T(2,0,1)}", "{devices=[4,3]<=[3,4]T(1,0)}"},
    {"{devices=[1,1,3,2]<=[6]}", "{devices=[1,1,3,2]<=[6]}"},
    {"{devices=[1,4,2]6,4,1,0,7,5,3,2 last_tile_dims={unreduced, replicated, replicated}}", "{replicated}"},
    {"{devices=[2,1]<=[2]}", "{devices=[2,1]<=[2]}"},
    {"{devices=[2,1,3,1]0,5,3,4,1,2}", "{devices=[2,1,3,1]0,5,3,4,1,2}"},
    {"{devices=[2,1,1,3]<=[1,1,6]T(0,2,1) last_tile_dims={replicated, replicated}}", "{devices=[2,1,3]<=[6] last_tile_dim_replicate}"},
    {"{devices=[2,1,1]0,1 last_tile_dims={unreduced}}", "{devices=[2,1]0,1}"},
    {"{devices=[3,2,2]9,5,7,2,6,1,11,10,8,3,0,4}", "{devices=[3,2,2]9,5,7,2,6,1,11,10,8,3,0,4}"},
    {"{devices=[1,1,2]0,1 last_tile_dim_replicate}", "{replicated}"},
    {"{devices=[1,1,2]1,0}", "{devices=[1,1,2]1,0}"},
    {"{devices=[4,1,4,1]<=[1,16,1]T(1,0,2) last_tile_dims={replicated, unreduced}}", "{devices=[4,1,4]<=[16] last_tile_dim_replicate}"},
    {"{devices=[1,8]1,6,3,2,0,5,4,7}", "{devices=[1,8]1,6,3,2,0,5,4,7}"},
    {"{devices=[1,2]<=[1,1,2]T(2,1,0) last_tile_dim_replicate}", "{replicated}"},
    {"{devices=[8,1]<=[4,2,1]T(1,2,0)}", "{devices=[8,1]<=[4,2]T(1,0)}"},
    {"{devices=[2]<=[1,2]T(1,0) last_tile_dims={replicated}}", "{replicated}"},
    {"{devices=[1,6,2]<=[4,1,3]T(0,2,1)}", "{devices=[1,6,2]<=[12]}"},
    {"{devices=[1,2,4,2]<=[1,16,1]T(1,0,2) last_tile_dim_replicate}", "{devices=[1,2,4,2]<=[16] last_tile_dim_replicate}"},
    {"{devices=[2,1]1,0}", "{devices=[2,1]1,0}"},
    {"{devices=[2,4]1,0,3,7,4,6,5,2 last_tile_dim_replicate}", "{devices=[2,4]0,1,3,7,2,4,5,6 last_tile_dim_replicate}"},
    {"{devices=[2,2]2,3,0,1}", "{devices=[2,2]2,3,0,1}"},
    {"{devices=[1,1,6]<=[1,6,1]T(2,1,0)}", "{devices=[1,1,6]<=[6]}"},
    {"{devices=[2,2]<=[4] last_tile_dim_replicate}", "{devices=[2,2]<=[4] last_tile_dim_replicate}"},
    {"{devices=[1,3,2]<=[2,3]T(0,1) last_tile_dims={unreduced, unreduced}}", "{unreduced}"},
    {"{devices=[1,16,1]<=[1,8,2]T(1,0,2) last_tile_dims={unreduced, unreduced}}", "{unreduced}"},
    {"{devices=[3,1,1,4]11,5,6,2,0,7,9,3,4,1,10,8}", "{devices=[3,1,1,4]11,5,6,2,0,7,9,3,4,1,10,8}"},
    {"{devices=[6,1,2]<=[2,2,3]T(2,1,0) last_tile_dim_replicate}", "{devices=[6,1,2]<=[2,2,3]T(2,1,0) last_tile_dim_replicate}"},
    {"{devices=[1,1,2]<=[2,1]T(1,0) last_tile_dim_replicate}", "{replicated}"},
    {"{devices=[1,1,3,2]<=[1,3,2,1]T(1,3,0,2)}", "{devices=[1,1,3,2]<=[6]}"},
    {"{devices=[3,1,2]<=[3,1,1,2]T(1,3,2,0)}", "{devices=[3,1,2]<=[3,2]T(1,0)}"},
    {"{devices=[1,6]5,3,2,0,1,4 last_tile_dims={unreduced}}", "{unreduced}"},
    {"{devices=[2]<=[2,1]T(0,1) last_tile_dims={unreduced}}", "{unreduced}"},
    {"{devices=[1,1,2]1,0}", "{devices=[1,1,2]1,0}"},
    {"{devices=[4,1,1,3]2,8,11,0,7,1,6,9,3,5,10,4 last_tile_dim_replicate}", "{devices=[4,1,1,3]2,8,11,0,1,7,3,6,9,4,5,10 last_tile_dim_replicate}"},
    {"{devices=[2,2,2,1,1]<=[4,2]T(0,1) last_tile_dims={manual}}", "{devices=[2,2,2,1]<=[8]}"},
    {"{devices=[2]<=[2] last_tile_dims={replicated}}", "{replicated}"},
    {"{devices=[1,2,8,1]1,2,0,8,10,14,3,7,4,13,12,11,9,6,5,15}", "{devices=[1,2,8,1]1,2,0,8,10,14,3,7,4,13,12,11,9,6,5,15}"},
    {"{devices=[1,4,3]2,3,10,8,1,0,7,4,5,9,11,6 last_tile_dims={replicated}}", "{devices=[1,4,3]2,3,10,0,1,8,4,5,7,6,9,11 last_tile_dim_replicate}"},
    // END GENERATED kXlaPrintCases
};

TEST(HloShardingTest, PrintsWhatXlaPrints) {
  for (const PrintCase& c : kXlaPrintCases) {
    EXPECT_EQ(Reprint(c.text), c.xla) << "input: " << c.text;
    // The canonical text is a fixed point.
    EXPECT_EQ(Reprint(c.xla), c.xla);
  }
}

const char* const kXlaRejectedTexts[] = {
    // BEGIN GENERATED kXlaRejectedTexts by tests/tools/gen_named_sharding_cases.py; do not edit.
    "",
    "{",
    "replicated",
    "{replicated",
    "{replicated}}",
    "{foo}",
    "{devices=[2]0}",
    "{devices=[]0,1}",
    "{devices=[4]<=[2,2]}",
    "{devices=[4]<=[2,2]T(0,2)}",
    "{maximal}",
    "{maximal device=}",
    "{replicated devices=[2]0,1}",
    "{manual device=1}",
    "{devices=2}",
    "{device=1}",
    "{devices=[2,2]0,1,2,3 last_tile_dims={foo}}",
    "{devices=[2]0,1 metadata=}",
    "{{replicated}, {{manual}}}",
    "{mesh['a'=2], [{'a'}], foo={'a'}}",
    "{mesh['a'=2], [{?, 'a'}]}",
    "{maximal_mesh[device=1]}",
    "{mesh['a'=2] replicated={'a'}}",
    // END GENERATED kXlaRejectedTexts
};

TEST(HloShardingTest, RejectsWhatXlaRejects) {
  for (const char* text : kXlaRejectedTexts) ParseError(text);
}

// Mesh-axes text -> XLA's v3_to_v2_sharding().
const PrintCase kXlaToTiledCases[] = {
    // BEGIN GENERATED kXlaToTiledCases by tests/tools/gen_named_sharding_cases.py; do not edit.
    {"{mesh['a'=3,'b'=2], [{'a'}], unreduced={'b'}}", "{devices=[3,2]<=[6] last_tile_dims={unreduced}}"},
    {"{mesh['a'=2,'b'=3,'c'=1], [{}, {'a'}], manual={'b', 'c'}}", "{devices=[1,2,3]<=[6] last_tile_dims={manual}}"},
    {"{mesh['a'=4,'b'=2,'c'=3], [{}, {}, {'a':(1)2}], unreduced={'b'}, manual={'c'}}", "{devices=[1,1,2,3,2,2]<=[2,2,2,3]T(0,3,2,1) last_tile_dims={manual, unreduced, replicated}}"},
    {"{mesh['a'=8,'b'=2,'c'=4], [{'c':(1)2, 'a':(2)4, 'b'}, {'a':(1)2}], unreduced={'c':(2)2}}", "{devices=[16,2,2]<=[2,8,2,2]T(2,1,0,3) last_tile_dims={unreduced}}"},
    {"{mesh['a'=1], [{}, {}, {}]}", "{replicated}"},
    {"{mesh['a'=1,'b'=4], [{}, {'b':(2)2}, {'a'}], manual={'b':(1)2}}", "{devices=[1,2,1,2]<=[2,2]T(1,0) last_tile_dims={manual}}"},
    {"{mesh['a'=2,'b'=3], [{}, {}, {}], unreduced={'a', 'b'}}", "{unreduced}"},
    {"{mesh['a'=8], device_ids=(3,1,7,6,5,4,2,0), [{'a':(2)4}]}", "{devices=[4,2]3,5,1,4,2,7,0,6 last_tile_dim_replicate}"},
    {"{mesh['a'=1,'b'=8], device_ids=(1,6,5,7,2,3,0,4), [{'a', 'b'}]}", "{devices=[8]1,6,5,7,2,3,0,4}"},
    {"{mesh['a'=2], [{'a'}]}", "{devices=[2]<=[2]}"},
    {"{mesh['a'=2,'b'=3,'c'=4], [{'a'}, {'c', 'b'}, {}]}", "{devices=[2,12,1]<=[2,3,4]T(0,2,1)}"},
    {"{mesh['a'=1,'b'=3], [{'a'}], manual={'b'}}", "{manual}"},
    {"{mesh['a'=3,'b'=2,'c'=4], [{'c', 'a', 'b'}, {}]}", "{devices=[24,1]<=[6,4]T(1,0)}"},
    {"{mesh['a'=3], [{}, {'a'}]}", "{devices=[1,3]<=[3]}"},
    {"{mesh['a'=1], [{}, {'a'}]}", "{replicated}"},
    {"{mesh['a'=3], [{}]}", "{replicated}"},
    {"{mesh['a'=3], device_ids=(1,0,2), [{}], manual={'a'}}", "{manual}"},
    {"{mesh['a'=2,'b'=1,'c'=4], [{}, {'c':(1)2, 'a'}, {}], unreduced={'b'}, manual={'c':(2)2}}", "{devices=[1,4,1,2]<=[2,2,2]T(1,0,2) last_tile_dims={manual}}"},
    {"{mesh['a'=1,'b'=1,'c'=8], device_ids=(0,7,6,1,2,3,4,5), [{}, {}, {'b'}], unreduced={'c':(1)4}, manual={'c':(4)2}}", "{devices=[1,1,1,2,4]0,6,2,4,7,1,3,5 last_tile_dims={manual, unreduced}}"},
    {"{mesh['a'=4,'b'=2,'c'=8], [{'b', 'c', 'a'}]}", "{devices=[64]<=[4,16]T(1,0)}"},
    {"{mesh['a'=3,'b'=1], [{'a'}, {}]}", "{devices=[3,1]<=[3]}"},
    {"{mesh['a'=4,'b'=2], [{}, {'a', 'b'}]}", "{devices=[1,8]<=[8]}"},
    {"{mesh['a'=4], [{'a'}]}", "{devices=[4]<=[4]}"},
    {"{mesh['a'=8,'b'=2], device_ids=(6,12,13,10,3,5,11,15,8,14,7,1,4,2,9,0), [{'a'}, {}], manual={'b'}}", "{devices=[8,1,2]6,12,13,10,3,5,11,15,8,14,7,1,4,2,9,0 last_tile_dims={manual}}"},
    {"{mesh['a'=8,'b'=4,'c'=3], device_ids=(37,10,72,42,85,25,86,23,61,91,5,19,63,79,58,8,50,51,78,27,56,75,14,48,0,55,60,15,69,95,87,35,20,13,7,53,21,89,33,84,4,26,52,71,92,62,80,24,22,68,49,76,82,74,39,9,41,34,3,81,38,66,46,16,70,32,11,36,29,44,17,45,59,18,47,93,88,65,30,54,90,6,94,28,83,43,57,73,1,64,67,40,31,12,77,2), [{'c', 'a'}, {}, {}]}", "{devices=[24,1,1,4]37,42,86,91,8,63,75,78,0,13,15,87,21,52,62,84,22,34,39,76,11,16,38,44,6,30,59,93,12,67,73,83,5,10,23,85,14,27,50,79,7,35,55,69,4,71,80,89,3,9,68,82,17,36,66,70,18,54,88,94,1,40,43,77,19,25,61,72,48,51,56,58,20,53,60,95,24,26,33,92,41,49,74,81,29,32,45,46,28,47,65,90,2,31,57,64 last_tile_dim_replicate}"},
    {"{mesh['a'=1], [{}, {}, {}]}", "{replicated}"},
    {"{mesh['a'=4], [{'a'}, {}, {}]}", "{devices=[4,1,1]<=[4]}"},
    {"{mesh['a'=8,'b'=1], [{'a'}], unreduced={'b'}}", "{devices=[8]<=[8]}"},
    {"{mesh['a'=2,'b'=3], [{'a', 'b'}, {}]}", "{devices=[6,1]<=[6]}"},
    {"{mesh['a'=1], [{'a'}, {}]}", "{replicated}"},
    {"{mesh['a'=3,'b'=1,'c'=1], [{'a', 'c'}], unreduced={'b'}}", "{devices=[3]<=[3]}"},
    {"{mesh['a'=4], [{}], unreduced={'a':(1)2}, manual={'a':(2)2}}", "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, unreduced}}"},
    {"{mesh['a'=4,'b'=1], [{'a':(2)2, 'b'}]}", "{devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}"},
    {"{mesh['a'=3,'b'=2], device_ids=(0,3,2,4,1,5), [{'b'}, {}, {'a'}]}", "{devices=[2,1,3]0,2,1,3,4,5}"},
    {"{mesh['a'=2], [{}, {}], manual={'a'}}", "{manual}"},
    {"{mesh['a'=4,'b'=3], [{'a':(2)2}, {'b'}], manual={'a':(1)2}}", "{devices=[2,3,2]<=[2,6]T(1,0) last_tile_dims={manual}}"},
    {"{mesh['a'=2,'b'=8,'c'=1], [{'c'}, {'b':(1)2, 'a'}], manual={'b':(2)4}}", "{devices=[1,4,4]<=[2,2,4]T(1,0,2) last_tile_dims={manual}}"},
    {"{mesh['a'=2,'b'=4], [{'b':(1)2}, {'a'}, {}], unreduced={'b':(2)2}}", "{devices=[2,2,1,2]<=[2,2,2]T(1,0,2) last_tile_dims={unreduced}}"},
    {"{mesh['a'=1,'b'=4,'c'=8], [{'b'}, {'c':(1)2, 'a'}], unreduced={'c':(2)4}}", "{devices=[4,2,4]<=[32] last_tile_dims={unreduced}}"},
    {"{mesh['a'=1], [{}, {}, {}]}", "{replicated}"},
    {"{mesh['a'=4], [{'a':(1)2}, {}], unreduced={'a':(2)2}}", "{devices=[2,1,2]<=[4] last_tile_dims={unreduced}}"},
    {"{mesh['a'=2], [{}, {}, {}]}", "{replicated}"},
    {"{mesh['a'=8], device_ids=(4,7,0,6,1,3,5,2), [{'a':(1)2}, {'a':(2)4}, {}]}", "{devices=[2,4,1]4,7,0,6,1,3,5,2}"},
    {"{mesh['a'=8], [{}, {}], unreduced={'a'}}", "{unreduced}"},
    {"{mesh['a'=4,'b'=3,'c'=2], [{'b', 'c', 'a'}]}", "{devices=[24]<=[4,6]T(1,0)}"},
    {"{mesh['a'=8,'b'=3], device_ids=(1,14,11,7,18,23,13,2,20,12,6,4,16,17,8,5,21,15,9,0,10,22,19,3), [{'a', 'b'}]}", "{devices=[24]1,14,11,7,18,23,13,2,20,12,6,4,16,17,8,5,21,15,9,0,10,22,19,3}"},
    {"{mesh['a'=2,'b'=1], [{}, {}, {}], manual={'a', 'b'}}", "{manual}"},
    {"{mesh['a'=3,'b'=1,'c'=1], [{'c', 'b'}], manual={'a'}}", "{manual}"},
    {"{mesh['a'=3,'b'=3], [{}, {'a'}, {'b'}]}", "{devices=[1,3,3]<=[9]}"},
    {"{mesh['a'=4], [{'a':(2)2}, {}]}", "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}"},
    {"{mesh['a'=4,'b'=2], device_ids=(7,4,1,3,2,6,0,5), [{}, {'a':(1)2}, {'a':(2)2}], manual={'b'}}", "{devices=[1,2,2,2]7,4,1,3,2,6,0,5 last_tile_dims={manual}}"},
    {"{mesh['a'=8], device_ids=(3,7,6,0,4,5,2,1), [{'a':(1)4}]}", "{devices=[4,2]3,7,0,6,4,5,1,2 last_tile_dim_replicate}"},
    {"{mesh['a'=4,'b'=8,'c'=1], [{}, {'c', 'a':(1)2}, {}], manual={'a':(2)2, 'b':(1)2}}", "{devices=[1,2,1,4,4]<=[32] last_tile_dims={manual, replicated}}"},
    {"{mesh['a'=3,'b'=3], [{'a'}], manual={'b'}}", "{devices=[3,3]<=[9] last_tile_dims={manual}}"},
    {"{mesh['a'=3], [{}, {'a'}, {}]}", "{devices=[1,3,1]<=[3]}"},
    {"{mesh['a'=2], [{}, {'a'}]}", "{devices=[1,2]<=[2]}"},
    {"{mesh['a'=1], [{}]}", "{replicated}"},
    {"{mesh['a'=1], [{'a'}, {}]}", "{replicated}"},
    {"{mesh['a'=2,'b'=3], device_ids=(2,1,5,0,4,3), [{'a', 'b'}]}", "{devices=[6]2,1,5,0,4,3}"},
    {"{mesh['a'=2,'b'=1], [{}, {'b'}], unreduced={'a'}}", "{unreduced}"},
    // END GENERATED kXlaToTiledCases
};

TEST(HloShardingTest, ToTiledMatchesXla) {
  for (const PrintCase& c : kXlaToTiledCases) {
    StatusOr<HloSharding> tiled = ParseOkSharding(c.text).ToTiled();
    ASSERT_TRUE(tiled.ok()) << c.text << ": " << tiled.status().ToString();
    EXPECT_EQ(tiled->ToString(), c.xla) << "input: " << c.text;
  }
}

}  // namespace
}  // namespace xs
