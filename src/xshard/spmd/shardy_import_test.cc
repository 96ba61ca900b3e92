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

TEST(SdyParseTest, RefusesSubAxes) {
  auto sub = ParseSdyTensorSharding(R"(<@mesh, [{"x":(1)2}]>)");
  ASSERT_FALSE(sub.ok());
  EXPECT_NE(sub.status().message().find("jax_use_shardy_partitioner=False"), std::string::npos);
  EXPECT_FALSE(ParseSdyTensorSharding(R"(<mesh, [{"x"}]>)").ok());
}

// Shardy's inline mesh (`<mesh<[...]>, [...]>`, as XLA's shardy_xla_pass_test writes it): the
// mesh is read in place and named by its text.
TEST(SdyParseTest, InlineMeshes) {
  SdyTensorSharding s = Parse(R"(<mesh<[\"a\"=4, \"b\"=2]>, [{\"a\"}, {}], replicated={\"b\"}>)");
  ASSERT_TRUE(s.inline_mesh.has_value());
  EXPECT_EQ(*s.inline_mesh, (SdyMesh{{"a", "b"}, {4, 2}, {}}));
  EXPECT_EQ(s.mesh, R"(mesh<["a"=4, "b"=2]>)");
  EXPECT_EQ(s.dims[0].axes, std::vector<std::string>{"a"});
  EXPECT_EQ(s.replicated, std::vector<std::string>{"b"});
  SdyTensorSharding ids = Parse(R"(#sdy.sharding<mesh<["x"=2], device_ids=[1, 0]>, [{"x"}]>)");
  ASSERT_TRUE(ids.inline_mesh.has_value());
  EXPECT_EQ(*ids.inline_mesh, (SdyMesh{{"x"}, {2}, {1, 0}}));
  EXPECT_EQ(ids.mesh, R"(mesh<["x"=2], device_ids=[1,0]>)");
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

// The boundaries' shardings name their mesh inline and the module has no xla.sdy.meshes: the
// import reads the inline mesh (a=4, b=2), and it gives the device count.
TEST(ImportShardyTest, InlineMeshesNeedNoModuleMeshes) {
  std::string text(kPsum);
  text.replace(0, text.find('\n'), "HloModule m");
  for (size_t at; (at = text.find("<@mesh,")) != std::string::npos;) {
    text.replace(at, 7, R"(<mesh<[\"x\"=2, \"y\"=4]>,)");
  }
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ(ShardyMeshDevices(**module), 8);
  Status s = ImportShardyManualComputations(**module);
  ASSERT_TRUE(s.ok()) << s.message();
  const Instruction* root = (*module)->entry()->root();
  ASSERT_EQ(*root->attrs().custom_call_target, "SPMDShardToFullShape");
  const Instruction* to_shard = root->operand(0)->operand(0)->operand(0);
  ASSERT_EQ(*to_shard->attrs().custom_call_target, "SPMDFullToShardShape");
  EXPECT_EQ(to_shard->operand(0)->sharding()->ToString(), "{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
}

TEST(ImportShardyTest, RefusesOtherSdyTargetsAndLeavesGspmdModulesAlone) {
  auto module = ParseHloModule(R"(HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  ROOT b = f32[8] custom-call(a), custom_call_target="xla.sdy.PropagationBarrier"
}
)");
  ASSERT_TRUE(module.ok());
  Status s = ImportShardyManualComputations(**module);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("xla.sdy.PropagationBarrier"), std::string::npos);
  EXPECT_NE(s.message().find("jax_use_shardy_partitioner=False"), std::string::npos);
  auto plain = ParseHloModule("HloModule m\nENTRY main {\n  ROOT a = f32[8] parameter(0)\n}\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(ImportShardyManualComputations(**plain).ok());
}

// jax.experimental.shard_alike(a, b) as JAX 0.10 lowers it by default (copied): a `()`
// xla.sdy.ShardingGroup custom-call per value. Rewritten into the form JAX's GSPMD lowering of the
// same program writes: the users read a Sharding custom-call of each value, {unknown shard_as 0}.
TEST(ImportShardyTest, ShardingGroupsBecomeShardAsAnnotations) {
  constexpr std::string_view kText =
      R"(HloModule jit_f, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}
ENTRY main.1 {
  x.1 = f32[16,16]{1,0} parameter(0), sharding={replicated}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{}, {}]>"}
  sin.1 = f32[16,16]{1,0} sine(x.1)
  sharding_constraint.1 = f32[16,16]{1,0} custom-call(sin.1), custom_call_target="Sharding", sharding={devices=[2,4]<=[8]}, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {\"y\"}]>]>"}
  shard_alike.2 = () custom-call(sharding_constraint.1), custom_call_target="xla.sdy.ShardingGroup", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding_group_id="0 : i64"}
  y.1 = f32[16,16]{1,0} parameter(1), sharding={replicated}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{}, {}]>"}
  cos.1 = f32[16,16]{1,0} cosine(y.1)
  shard_alike.3 = () custom-call(cos.1), custom_call_target="xla.sdy.ShardingGroup", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding_group_id="0 : i64"}
  add.1 = f32[16,16]{1,0} add(sharding_constraint.1, cos.1)
  ROOT tuple.1 = (f32[16,16]{1,0}, f32[16,16]{1,0}) tuple(add.1, cos.1)
}
)";
  auto module = ParseHloModule(kText);
  ASSERT_TRUE(module.ok()) << module.status().message();
  Status s = ImportShardyManualComputations(**module);
  ASSERT_TRUE(s.ok()) << s.message();
  const Instruction* root = (*module)->entry()->root();
  ASSERT_EQ(root->opcode(), Opcode::kTuple);
  const Instruction* add = root->operand(0);
  ASSERT_EQ(add->operand_count(), 2);
  for (const Instruction* alike : {add->operand(0), add->operand(1), root->operand(1)}) {
    ASSERT_EQ(*alike->attrs().custom_call_target, "Sharding") << alike->name();
    EXPECT_EQ(alike->sharding()->ToString(), "{unknown shard_as 0}") << alike->name();
  }
  EXPECT_EQ(add->operand(0)->operand(0)->name(), "sharding_constraint.1");
  EXPECT_EQ(add->operand(1)->operand(0)->name(), "cos.1");
  EXPECT_EQ(root->operand(1), add->operand(1));
  for (const Instruction* inst : (*module)->entry()->instructions()) {
    EXPECT_NE(inst->attrs().custom_call_target.value_or(""), "xla.sdy.ShardingGroup") << inst->name();
  }
}

// jit(f, out_shardings=(NamedSharding(mesh, P("y", "x")), NamedSharding(mesh, P()), None)) as
// JAX 0.10 lowers it by default (copied): the specified results read FuncResultSharding
// custom-calls, the None one does not, and the root's sharding says {replicated} for it. XLA
// compiles it with propagation to that output allowed (its program returns f32[16,8] pieces of
// the transpose on the 2 x 4 mesh): it becomes {unknown}; P() stays replicated.
TEST(ImportShardyTest, ResultsWithoutFuncResultShardingAreOpen) {
  constexpr std::string_view kText =
      R"(HloModule jit_f, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}
region_0.1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main.0 {
  x.1 = f32[16,16]{1,0} parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"x\"}, {}]>"}
  tanh.2 = f32[16,16]{1,0} tanh(x.1)
  tanh.3 = f32[16,16]{1,0} custom-call(tanh.2), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\"y\"}, {\"x\"}]>]>"}
  constant.1 = f32[] constant(0)
  reduce_sum.8 = f32[16]{0} reduce(x.1, constant.1), dimensions={0}, to_apply=region_0.1
  reduce_sum.9 = f32[16]{0} custom-call(reduce_sum.8), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{}]>]>"}
  transpose.1 = f32[16,16]{0,1} transpose(x.1), dimensions={1,0}
  reshape.6 = f32[16,16]{1,0} reshape(transpose.1)
  ROOT tuple.1 = (f32[16,16]{1,0}, f32[16]{0}, f32[16,16]{1,0}) tuple(tanh.3, reduce_sum.9, reshape.6), sharding={{devices=[4,2]<=[2,4]T(1,0)}, {replicated}, {replicated}}
}
)";
  auto module = ParseHloModule(kText);
  ASSERT_TRUE(module.ok()) << module.status().message();
  Status s = ImportShardyManualComputations(**module);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ((*module)->entry()->root()->sharding()->ToString(),
            "{{devices=[4,2]<=[2,4]T(1,0)}, {replicated}, {unknown}}");
  // Without any FuncResultSharding (a GSPMD-form module) the root's sharding is the contract.
  std::string gspmd(kText);
  gspmd.replace(gspmd.find("tuple(tanh.3, reduce_sum.9"), 26, "tuple(tanh.2, reduce_sum.8");
  auto plain = ParseHloModule(gspmd);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ASSERT_TRUE(ImportShardyManualComputations(**plain).ok());
  EXPECT_EQ((*plain)->entry()->root()->sharding()->ToString(),
            "{{devices=[4,2]<=[2,4]T(1,0)}, {replicated}, {replicated}}");
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
