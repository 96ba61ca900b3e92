// The reshard routes one by one (reshard_routes.h) on a scratch emitter over 8 devices (mesh
// [2,2,2]): each returns the resharded value where it applies, "does not apply" as a value (not an
// error) where it does not, and an error only for real failures; and Reshard's errors when no
// route applies.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "xshard/spmd/reshard_routes.h"

namespace xs::spmd::internal {
namespace {

HloSharding S(const std::string& text) {
  StatusOr<HloSharding> s = HloSharding::Parse(text);
  XS_CHECK(s.ok(), s.status().ToString());
  return *s;
}

// A module state and a scratch emitter over 8 devices, the mesh split into prime axes.
class RoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_.num_partitions = 8;
    state_.mesh = TileMesh(8);
    em_ = Emitter::Scratch(&state_);
  }

  // A value of f32[dims] held with `sharding`: a scratch parameter of the local shape.
  PartitionedValue Value(std::vector<int64_t> dims, const std::string& sharding) {
    const Shape global(DType::kF32, std::move(dims));
    const HloSharding s = S(sharding);
    StatusOr<Shape> local = LocalShape(global, s, state_.num_partitions);
    XS_CHECK(local.ok(), local.status().ToString());
    return PartitionedValue(em_->ScratchParameter(*local), global, s, em_.get());
  }

  // The opcodes of the collectives in the scratch computation, in order.
  std::vector<Opcode> Collectives() const {
    std::vector<Opcode> out;
    for (const Instruction* inst : em_->computation()->instructions()) {
      switch (inst->opcode()) {
        case Opcode::kAllGather:
        case Opcode::kAllReduce:
        case Opcode::kAllToAll:
        case Opcode::kCollectivePermute:
        case Opcode::kReduceScatter:
          out.push_back(inst->opcode());
          break;
        default:
          break;
      }
    }
    return out;
  }

  ModuleState state_;
  std::unique_ptr<Emitter> em_;
};

// Checks that `r` is a value with sharding `want` and the local shape that sharding gives.
void ExpectApplies(const StatusOr<RouteResult>& r, const std::string& want, const std::vector<int64_t>& local) {
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->applies()) << r->reason();
  EXPECT_EQ(r->value().sharding(), S(want));
  EXPECT_EQ(r->value().hlo()->shape().dims(), local);
  EXPECT_TRUE(r->reason().empty());
}

// Checks that `r` says "does not apply" with a reason, without an error.
void ExpectNotApplicable(const StatusOr<RouteResult>& r) {
  ASSERT_TRUE(r.ok()) << "an error where the route should only not apply: " << r.status().ToString();
  EXPECT_FALSE(r->applies());
  EXPECT_FALSE(r->reason().empty());
}

TEST_F(RoutesTest, LocalSliceAppliesFromReplicatedAndNotToReplicated) {
  ExpectApplies(LocalSliceRoute(Value({8, 16}, "{replicated}"), S("{devices=[2,4]<=[8]}")),
                "{devices=[2,4]<=[8]}", {4, 4});
  // A finer tiling along the same axes is a local slice too.
  ExpectApplies(LocalSliceRoute(Value({8, 16}, "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"),
                                S("{devices=[2,4]<=[8]}")),
                "{devices=[2,4]<=[8]}", {4, 4});
  EXPECT_TRUE(Collectives().empty());
  ExpectNotApplicable(LocalSliceRoute(Value({8, 16}, "{devices=[8,1]<=[8]}"), S("{replicated}")));
  ExpectNotApplicable(LocalSliceRoute(Value({8, 16}, "{devices=[8,1]<=[8]}"), S("{devices=[1,8]<=[8]}")));
}

// A target that does not fit the value is an error, not "does not apply": no other route can
// take it either, and the message names the sharding.
TEST_F(RoutesTest, ATargetThatDoesNotFitIsAnError) {
  const PartitionedValue v = Value({8, 16}, "{devices=[8,1]<=[8]}");
  for (const StatusOr<RouteResult>& r :
       {LocalSliceRoute(v, S("{devices=[4,1]<=[4]}")), PermuteRoute(v, S("{devices=[4,1]<=[4]}"), "")}) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("{devices=[4,1]<=[4]}"), std::string::npos) << r.status().message();
  }
}

TEST_F(RoutesTest, PermuteAppliesToAnotherDeviceOrder) {
  ExpectApplies(PermuteRoute(Value({8, 16}, "{devices=[8,1]<=[8]}"), S("{devices=[8,1]3,1,0,2,7,5,4,6}"), "test"),
                "{devices=[8,1]3,1,0,2,7,5,4,6}", {1, 16});
  EXPECT_EQ(Collectives(), std::vector<Opcode>{Opcode::kCollectivePermute});
  // Rows to columns: every target piece spans several source pieces.
  ExpectNotApplicable(PermuteRoute(Value({8, 16}, "{devices=[8,1]<=[8]}"), S("{devices=[1,8]<=[8]}"), ""));
}

TEST_F(RoutesTest, AxesRouteMovesASplitAndSaysWhenAShardingIsOffTheMesh) {
  ExpectApplies(AxesRoute(Value({8, 16}, "{devices=[8,1]<=[8]}"), S("{devices=[1,8]<=[8]}"), ""),
                "{devices=[1,8]<=[8]}", {8, 2});
  EXPECT_EQ(Collectives(), std::vector<Opcode>{Opcode::kAllToAll});
  // An explicit device list without an iota form is not on the mesh.
  ExpectNotApplicable(AxesRoute(Value({8, 16}, "{devices=[8,1]<=[8]}"), S("{devices=[1,8]0,3,5,6,1,2,4,7}"), ""));
}

// Manual over different mesh axes: a user error that no route can fix, so an error, not
// "does not apply".
TEST_F(RoutesTest, AxesRouteRejectsDifferentManualAxes) {
  StatusOr<RouteResult> r =
      AxesRoute(Value({8, 16}, "{devices=[2,1,4]<=[8] last_tile_dims={manual}}"),
                S("{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dims={manual}}"), "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("manual over different mesh axes"), std::string::npos)
      << r.status().message();
}

// P('y','x') -> P('x','y') on (x=4, y=2): an all-to-all and a permute; the halo variant does not
// apply where the dims are even, nor either variant where no dim changes its tile count.
TEST_F(RoutesTest, AllToAllPermuteAppliesWhenDimsTradeAxes) {
  ExpectApplies(AllToAllPermuteRoute(Value({64, 64}, "{devices=[2,4]<=[4,2]T(1,0)}"), S("{devices=[4,2]<=[8]}"), ""),
                "{devices=[4,2]<=[8]}", {16, 32});
  EXPECT_EQ(Collectives(), (std::vector<Opcode>{Opcode::kAllToAll, Opcode::kCollectivePermute}));
  ExpectNotApplicable(
      AllToAllHaloPermuteRoute(Value({64, 64}, "{devices=[2,4]<=[4,2]T(1,0)}"), S("{devices=[4,2]<=[8]}"), ""));
  ExpectNotApplicable(
      AllToAllPermuteRoute(Value({64, 64}, "{devices=[8,1]<=[8]}"), S("{devices=[8,1]3,1,0,2,7,5,4,6}"), ""));
}

// Uneven rows (f32[1002,704] P('a','b') -> P('b','a')): the halo variant applies with an
// all-to-all and two permutes (reshard_swap_test pins the bytes).
TEST_F(RoutesTest, AllToAllHaloPermuteAppliesToUnevenMergedBlocks) {
  ExpectApplies(
      AllToAllHaloPermuteRoute(Value({1002, 704}, "{devices=[4,2]<=[8]}"), S("{devices=[2,4]<=[4,2]T(1,0)}"), ""),
      "{devices=[2,4]<=[4,2]T(1,0)}", {501, 176});
  EXPECT_EQ(Collectives(),
            (std::vector<Opcode>{Opcode::kAllToAll, Opcode::kCollectivePermute, Opcode::kCollectivePermute}));
}

TEST_F(RoutesTest, FullRouteAppliesWithoutManualSubgroupsOnly) {
  ExpectApplies(FullRoute(Value({8, 16}, "{devices=[2,4]<=[8]}"), S("{devices=[1,8]<=[8]}"), ""),
                "{devices=[1,8]<=[8]}", {8, 2});
  EXPECT_EQ(Collectives(), (std::vector<Opcode>{Opcode::kAllGather, Opcode::kAllGather}));
  ExpectNotApplicable(FullRoute(Value({8, 16}, "{devices=[2,1,4]<=[8] last_tile_dims={manual}}"),
                                S("{devices=[1,2,4]<=[8] last_tile_dims={manual}}"), ""));
}

// To replication from any device order with every element on one device; on the mesh's axes
// also from a partly replicated source, and to a target that keeps some dims' axes (the
// all-reduce runs over the dropped axes only). Not when a dim takes other axes.
TEST_F(RoutesTest, MaskedAllReduceGathersDimsWhoseAxesTheTargetDrops) {
  ExpectApplies(MaskedAllReduceRoute(Value({1, 8}, "{devices=[8,1]<=[8]}"), S("{replicated}"), ""), "{replicated}",
                {1, 8});
  EXPECT_EQ(Collectives(), std::vector<Opcode>{Opcode::kAllReduce});
  ExpectNotApplicable(MaskedAllReduceRoute(Value({8, 8}, "{devices=[8,1]<=[8]}"), S("{devices=[1,8]<=[8]}"), ""));
  ExpectApplies(
      MaskedAllReduceRoute(Value({8, 8}, "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"), S("{replicated}"), ""),
      "{replicated}", {8, 8});
  // f32[4,1] split [2,4] to P('x', None): dim 1 (one column over 4 devices) is summed over y.
  ExpectApplies(MaskedAllReduceRoute(Value({4, 1}, "{devices=[2,4]<=[8]}"),
                                     S("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"), ""),
                "{devices=[2,1,4]<=[8] last_tile_dim_replicate}", {2, 1});
  ExpectNotApplicable(MaskedAllReduceRoute(Value({8, 8}, "{devices=[2,4]<=[8]}"),
                                           S("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"), ""));
}

// Reshard between two partially manual shardings off the mesh: neither the local slice nor the
// axes route applies, so Reshard returns Unimplemented naming both shardings and why each route
// does not apply (it used to pass on the axes route's bare "not on the mesh").
TEST_F(RoutesTest, ReshardSaysWhyNoRouteAppliesToPartiallyManualValues) {
  const std::string from = "{devices=[2,1,4]0,3,5,6,1,2,4,7 last_tile_dims={manual}}";
  const std::string to = "{devices=[1,2,4]0,3,5,6,1,2,4,7 last_tile_dims={manual}}";
  StatusOr<PartitionedValue> r = Value({8, 16}, from).Reshard(S(to), "the test's use");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find(S(from).ToString()), std::string::npos) << m;
  EXPECT_NE(m.find(S(to).ToString()), std::string::npos) << m;
  EXPECT_NE(m.find("the test's use"), std::string::npos) << m;
  EXPECT_NE(m.find("not expressible on the module's mesh"), std::string::npos) << m;
}

// A tiled value whose sharding keeps a subgroup that no route handles (an unreduced subgroup the
// partitioner would have made replicated): Unimplemented, listing every route with its reason.
TEST_F(RoutesTest, ReshardListsEachRouteWhenNoneApplies) {
  StatusOr<PartitionedValue> r = Value({8, 16}, "{devices=[2,1,4]<=[8] last_tile_dims={unreduced}}")
                                     .Reshard(S("{devices=[1,2,4]<=[8] last_tile_dim_replicate}"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  const std::string& m = r.status().message();
  for (const char* part : {"no route applies", "local slice: ", "; axes: ", "; permute: ", "; all-to-all + permute: ",
                           "; all-to-all + halo + permute: ", "; full: the sharding has subgroups",
                           "; masked all-reduce: "}) {
    EXPECT_NE(m.find(part), std::string::npos) << part << " in " << m;
  }
}

// Reshard of a tiled value still picks the cheapest applying route (here the all-to-all, not the
// full route that also applies).
TEST_F(RoutesTest, ReshardEmitsTheCheapestApplyingRoute) {
  StatusOr<PartitionedValue> r = Value({8, 16}, "{devices=[8,1]<=[8]}").Reshard(S("{devices=[1,8]<=[8]}"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->sharding(), S("{devices=[1,8]<=[8]}"));
  EXPECT_EQ(Collectives(), std::vector<Opcode>{Opcode::kAllToAll});
}

}  // namespace
}  // namespace xs::spmd::internal
