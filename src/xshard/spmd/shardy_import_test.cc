// Tests of the sdy attribute parsing and of ImportShardyManualComputations, against shardings
// written by hand or copied from JAX 0.10's GSPMD lowering of the same programs.
#include "xshard/spmd/shardy_import.h"

#include <gtest/gtest.h>

#include "xshard/ir/computation.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

SdyMesh Mesh2x4() { return SdyMesh{{"x", "y"}, {2, 4}, {}}; }

std::string Hlo(const SdyTensorSharding& s, int rank, std::vector<std::string> manual = {}) {
  StatusOr<HloSharding> h = SdyToHloSharding(Mesh2x4(), s, rank, manual);
  if (!h.ok()) return "error: " + h.status().message();
  return h->ToString();
}

SdyTensorSharding Parse(std::string_view text) {
  StatusOr<SdyTensorSharding> s = ParseSdyTensorSharding(text);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : SdyTensorSharding{};
}

TEST(SdyParseTest, MeshesInBothQuotings) {
  auto m = ParseSdyMeshes(R"({mesh = #sdy.mesh<["x"=2, "y"=4]>, m1 = #sdy.mesh<["a"=2], device_ids=[1, 0]>})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ(m->at("mesh"), (SdyMesh{{"x", "y"}, {2, 4}, {}}));
  EXPECT_EQ(m->at("m1"), (SdyMesh{{"a"}, {2}, {1, 0}}));
  auto escaped = ParseSdyMeshes(R"({mesh = #sdy.mesh<[\"x\"=8]>})");
  ASSERT_TRUE(escaped.ok()) << escaped.status().message();
  EXPECT_EQ(escaped->at("mesh"), (SdyMesh{{"x"}, {8}, {}}));
  EXPECT_FALSE(ParseSdyMeshes(R"({mesh = #sdy.mesh<["x"=]>})").ok());
}

TEST(SdyParseTest, ShardingsWithOpenDimsSeveralAxesAndReplicated) {
  SdyTensorSharding s = Parse(R"(#sdy.sharding<@mesh, [{\"x\", ?}, {?}, {"y", "x"}, {}], replicated={"z"}>)");
  EXPECT_EQ(s.mesh, "mesh");
  ASSERT_EQ(s.dims.size(), 4u);
  EXPECT_EQ(s.dims[0], (SdyDimSharding{{"x"}, true}));
  EXPECT_EQ(s.dims[1], (SdyDimSharding{{}, true}));
  EXPECT_EQ(s.dims[2], (SdyDimSharding{{"y", "x"}, false}));
  EXPECT_EQ(s.dims[3], (SdyDimSharding{{}, false}));
  EXPECT_EQ(s.replicated, std::vector<std::string>{"z"});
  EXPECT_EQ(Parse("<@mesh, []>").dims.size(), 0u);
  auto per_value = ParseSdyShardingPerValue(R"(#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>, <@mesh, []>]>)");
  ASSERT_TRUE(per_value.ok()) << per_value.status().message();
  ASSERT_EQ(per_value->size(), 2u);
  EXPECT_EQ((*per_value)[0].dims[0].axes, std::vector<std::string>{"x"});
  EXPECT_TRUE((*per_value)[1].dims.empty());
  auto manual = ParseSdyManualAxes(R"(#sdy<manual_axes{\"x\", \"y\"}>)");
  ASSERT_TRUE(manual.ok()) << manual.status().message();
  EXPECT_EQ(*manual, (std::vector<std::string>{"x", "y"}));
}

TEST(SdyParseTest, RefusesSubAxesAndInlineMeshes) {
  auto sub = ParseSdyTensorSharding(R"(<@mesh, [{"x":(1)2}]>)");
  ASSERT_FALSE(sub.ok());
  EXPECT_NE(sub.status().message().find("jax_use_shardy_partitioner=False"), std::string::npos);
  EXPECT_FALSE(ParseSdyTensorSharding(R"(<mesh<["x"=2]>, [{"x"}]>)").ok());
}

TEST(SdyToHloShardingTest, GlobalShardingsAsJaxWritesThem) {
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{"x"}, {"y"}]>)"), 2), "{devices=[2,4]<=[8]}");
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{"x"}, {}]>)"), 2), "{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{"y"}, {}]>)"), 2),
            "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{"x", "y"}, {}]>)"), 2), "{devices=[8,1]<=[8]}");
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{"y", "x"}]>)"), 1), "{devices=[8]<=[2,4]T(1,0)}");
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{"x", ?}, {?}]>)"), 2), "{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{}, {}], replicated={"x"}>)"), 2), "{replicated}");
  EXPECT_EQ(Hlo(Parse("<@mesh, []>"), 0), "{replicated}");
}

TEST(SdyToHloShardingTest, ManualShardingsAsJaxsGspmdLoweringWritesThem) {
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{"x", ?}, {?}]>)"), 2, {"x"}),
            "{devices=[1,1,2,4]<=[8] last_tile_dims={manual, replicated}}");
  EXPECT_EQ(Hlo(Parse("<@mesh, []>"), 0, {"x"}), "{devices=[2,4]<=[8] last_tile_dims={manual, replicated}}");
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{"x", "y"}, {}]>)"), 2, {"x", "y"}), "{manual}");
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{}, {}]>)"), 2, {"x", "y"}), "{manual}");
  // Manual over y only: the manual group is y (devices 0..3 in x-row 0 differ), x replicates.
  EXPECT_EQ(Hlo(Parse(R"(<@mesh, [{"y"}]>)"), 1, {"y"}),
            "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}");
}

TEST(SdyToHloShardingTest, MeshDeviceIdsOrderTheTiles) {
  // Mesh (a=2, b=2) over devices 3,2,1,0: a's tile 0 is devices {3,2}.
  SdyMesh mesh{{"a", "b"}, {2, 2}, {3, 2, 1, 0}};
  StatusOr<HloSharding> h = SdyToHloSharding(mesh, Parse(R"(<@m, [{"a"}]>)"), 1);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->tile_assignment().devices(), (std::vector<int64_t>{2, 3, 0, 1}));  // groups sorted
  EXPECT_TRUE(h->ReplicateOnLastTileDim());
  StatusOr<HloSharding> m = SdyToHloSharding(mesh, Parse(R"(<@m, [{"b"}]>)"), 1, {"a"});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->tile_assignment().devices(), (std::vector<int64_t>{3, 1, 2, 0}));  // [b=2][a=2]
}

TEST(SdyToHloShardingTest, Errors) {
  EXPECT_NE(Hlo(Parse(R"(<@mesh, [{"z"}]>)"), 1).find("does not have"), std::string::npos);
  EXPECT_NE(Hlo(Parse(R"(<@mesh, [{"x"}]>)"), 2).find("rank 2"), std::string::npos);
  EXPECT_NE(Hlo(Parse(R"(<@mesh, [{}], unreduced={"x"}>)"), 1).find("unsupported"), std::string::npos);
  EXPECT_NE(Hlo(Parse(R"(<@mesh, [{"y", "x"}]>)"), 1, {"x"}).find("unsupported"), std::string::npos);
}

constexpr std::string_view kPsum = R"(HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] add(a, b)
  ROOT c = f32[] custom-call(s), custom_call_target="Sharding", sharding={replicated}
}

body {
  p = f32[4,8] parameter(0)
  ROOT r = f32[4,8] all-reduce(p), channel_id=1, replica_groups={{0,4},{1,5},{2,6},{3,7}}, use_global_device_ids=true, to_apply=add
}

ENTRY main {
  a = f32[8,8] parameter(0), sharding={devices=[2,4]<=[8]}
  g = (f32[4,8]) custom-call(a), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\", ?}, {?}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>"}
  g0 = f32[4,8] get-tuple-element(g), index=0
  c = f32[4,8] call(g0), to_apply=body
  ROOT l = f32[4,8] custom-call(c), custom_call_target="xla.sdy.LocalToGlobalShape", frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{?}, {?}]>]>"}
}
)";

TEST(ImportShardyTest, RewritesBoundariesAndTheBodyIntoTheGspmdForm) {
  auto module = ParseHloModule(kPsum);
  ASSERT_TRUE(module.ok()) << module.status().message();
  ASSERT_TRUE(ImportShardyManualComputations(**module).ok());
  const Instruction* root = (*module)->entry()->root();
  ASSERT_EQ(*root->attrs().custom_call_target, "SPMDShardToFullShape");
  EXPECT_EQ(root->sharding()->ToString(), "{replicated}");
  const Instruction* local = root->operand(0);
  EXPECT_EQ(*local->attrs().custom_call_target, "Sharding");
  EXPECT_EQ(local->sharding()->ToString(), "{devices=[1,1,2,4]<=[8] last_tile_dims={manual, replicated}}");
  const Instruction* call = local->operand(0);
  ASSERT_EQ(call->opcode(), Opcode::kCall);
  const Instruction* to_shard = call->operand(0);
  EXPECT_EQ(*to_shard->attrs().custom_call_target, "SPMDFullToShardShape");
  EXPECT_EQ(to_shard->shape().ToString(false), "f32[4,8]");
  EXPECT_EQ(to_shard->operand(0)->sharding()->ToString(), "{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(to_shard->operand(0)->operand(0)->name(), "a");
  const Instruction* in_add = (*module)->GetComputation("add")->root();
  EXPECT_EQ(in_add->opcode(), Opcode::kAdd);  // the reducer's Sharding custom-call is dropped
  EXPECT_FALSE(in_add->has_sharding());
}

// A free axis after the manual one in a dim: the boundary reshards to the manual axes only
// (the partitioner gets no tiled + manual sharding), the local value is cut by 'x' alone.
TEST(ImportShardyTest, FreeAxesAtABoundaryAreDropped) {
  std::string text(kPsum);
  const std::string from = R"([{\"x\", ?}, {?}])";
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), R"([{\"x\", \"y\"}, {}])");
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status().message();
  ASSERT_TRUE(ImportShardyManualComputations(**module).ok());
  const Instruction* to_shard = (*module)->entry()->root()->operand(0)->operand(0)->operand(0);
  ASSERT_EQ(*to_shard->attrs().custom_call_target, "SPMDFullToShardShape");
  EXPECT_EQ(to_shard->sharding()->ToString(), "{devices=[1,1,2,4]<=[8] last_tile_dims={manual, replicated}}");
  EXPECT_EQ(to_shard->operand(0)->sharding()->ToString(), "{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
}

TEST(ImportShardyTest, RefusesOtherSdyTargetsAndLeavesGspmdModulesAlone) {
  auto module = ParseHloModule(R"(HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  ROOT b = f32[8] custom-call(a), custom_call_target="xla.sdy.ShardingGroup"
}
)");
  ASSERT_TRUE(module.ok());
  Status s = ImportShardyManualComputations(**module);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("xla.sdy.ShardingGroup"), std::string::npos);
  EXPECT_NE(s.message().find("jax_use_shardy_partitioner=False"), std::string::npos);
  auto plain = ParseHloModule("HloModule m\nENTRY main {\n  ROOT a = f32[8] parameter(0)\n}\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(ImportShardyManualComputations(**plain).ok());
}

// XLA's Shardy round-trip form: the sharding only in an xla.sdy.sharding frontend attribute
// (the corpus's shardy_xla_pass_test/Scan*.hlo); the module's mesh gives the device count.
TEST(ImportShardyTest, FrontendAttributeShardingsOutsideShardMaps) {
  constexpr std::string_view kText = R"(HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["a"=2, "b"=4]>}}
ENTRY main {
  p = f32[16,32] parameter(0), frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"a\", ?}, {\"b\", ?}]>"}
  q = f32[16,32] parameter(1), frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{}, {\"a\"}]>"}
  ROOT r = f32[16,32] add(p, q)
}
)";
  auto module = ParseHloModule(kText);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ(ShardyMeshDevices(**module), 8);
  ASSERT_TRUE(ImportShardyManualComputations(**module).ok());
  const Instruction* root = (*module)->entry()->root();
  EXPECT_EQ(root->operand(0)->sharding()->ToString(), "{devices=[2,4]<=[8]}");
  // Dim 1 over 'a' (the major axis: devices 0-3 | 4-7), replicated over 'b'.
  EXPECT_EQ(root->operand(1)->sharding()->ToString(), "{devices=[1,2,4]<=[8] last_tile_dim_replicate}");
  EXPECT_FALSE(root->has_sharding());
  // A mesh the module does not define is an error naming the instruction.
  std::string bad(kText);
  bad.replace(bad.find("@mesh, [{}"), 5, "@other");
  auto other = ParseHloModule(bad);
  ASSERT_TRUE(other.ok()) << other.status().message();
  Status s = ImportShardyManualComputations(**other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'q'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("names mesh 'other'"), std::string::npos) << s.message();
}

// with_sharding_constraint with P.UNCONSTRAINED dims, as JAX 0.10 lowers it by default: a
// Sharding custom-call with the closed GSPMD sharding and the Shardy one whose open dims ({?})
// JAX's GSPMD lowering of the same program writes as unspecified_dims (copied from it).
TEST(ImportShardyTest, ConstraintOpenDimsBecomeUnspecifiedDims) {
  auto module =
      ParseHloModule(R"(HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["data"=4, "model"=2]>}}
ENTRY main {
  x = f32[16,32] parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"data\"}, {}]>"}
  a = f32[16,32] custom-call(x), custom_call_target="Sharding", sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\"data\"}, {?}]>]>"}
  t = f32[32,16] transpose(a), dimensions={1,0}
  b = f32[32,16] custom-call(t), custom_call_target="Sharding", sharding={devices=[1,4,2]<=[8] last_tile_dim_replicate}, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{?}, {\"data\"}]>]>"}
  c = f32[32,16] custom-call(b), custom_call_target="Sharding", sharding={replicated}, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{?}, {?}]>]>"}
  ROOT d = f32[32,16] custom-call(c), custom_call_target="Sharding", sharding={replicated}, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{}, {}]>]>"}
}
)");
  ASSERT_TRUE(module.ok()) << module.status().message();
  ASSERT_TRUE(ImportShardyManualComputations(**module).ok());
  auto config = [&](std::string_view name) -> std::string {
    for (const Instruction* inst : (*module)->entry()->instructions()) {
      if (inst->name() == name) return inst->attrs().backend_config.value_or("none");
    }
    return "missing";
  };
  EXPECT_EQ(config("a"), "\"unspecified_dims=[1]\"");
  EXPECT_EQ(config("b"), "\"unspecified_dims=[0]\"");
  EXPECT_EQ(config("c"), "\"unspecified_dims=[0,1]\"");
  EXPECT_EQ(config("d"), "none");
  EXPECT_EQ(config("x"), "none");
  EXPECT_EQ((*module)->entry()->root()->operand(0)->sharding()->ToString(), "{replicated}");
}

}  // namespace
}  // namespace xs
