// ShardedProgram end to end: global arrays in, the SPMD program on N devices, global arrays out,
// checked against values computed here by plain loops.
#include "xshard/jit/sharded_program.h"

#include <map>

#include <gtest/gtest.h>

#include "xshard/runtime/client.h"
#include "xshard/text/parse_test_util.h"
#include "xshard/testing/value_or_fail.h"

namespace xs {
namespace {

using xs::testing::ParseOrFail;

std::unique_ptr<Client> MakeClient(int64_t n) {
  ClientOptions options;
  options.num_devices = n;
  return testing::ValueOrFail(Client::Create(options));
}

// Seed 000's "inner axes" case on mesh (a=4, b=2): x[4,16] P(None,'a'), y[16,4] P('a',None).
constexpr char kInner[] = R"(
HloModule matmul, num_partitions=8
ENTRY main {
  x = f32[4,16] parameter(0), sharding={devices=[1,4,2]<=[8] last_tile_dim_replicate}
  y = f32[16,4] parameter(1), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  ROOT z = f32[4,4] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

TEST(ShardedProgramTest, InnerAxesMatmulGivesTheGlobalProduct) {
  auto module = ParseOrFail(kInner);
  StatusOr<std::unique_ptr<ShardedProgram>> program = ShardedProgram::Compile(*module, 8);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_TRUE((*program)->spmd_module().config().is_scheduled);
  EXPECT_FALSE(NeedsPartitioning((*program)->spmd_module()));
  EXPECT_TRUE(NeedsPartitioning(*module));
  ASSERT_EQ((*program)->report().collectives.size(), 1u);
  EXPECT_EQ((*program)->report().collectives[0].kind, "all-reduce");

  Array x = Array::Iota(DType::kF32, {4, 16});
  Array y = Array::Iota(DType::kF32, {16, 4});
  std::vector<float> want(16, 0.0f);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 16; ++k) want[i * 4 + j] += static_cast<float>((i * 16 + k) * (k * 4 + j));
    }
  }
  auto client = MakeClient(8);
  StatusOr<ShardedResult> r = (*program)->Run(*client, {x, y});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_TRUE(r->assembled[0]);
  EXPECT_EQ(r->outputs[0], Array::FromVector<float>({4, 4}, want));
  // Every device holds the whole (replicated) result.
  ASSERT_EQ(r->device_outputs.size(), 8u);
  EXPECT_EQ(r->device_outputs[5][0].dims(), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(r->memory.size(), 8u);
}

TEST(ShardedProgramTest, RunPlacedRunsTheDevicesOnTheirShardsAndRepeats) {
  auto module = ParseOrFail(kInner);
  StatusOr<std::unique_ptr<ShardedProgram>> program = ShardedProgram::Compile(*module, 8);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  Array x = Array::Iota(DType::kF32, {4, 16});
  Array y = Array::Iota(DType::kF32, {16, 4});
  // z[1][2] by hand: sum_k (16 + k) * (4k + 2).
  float want12 = 0.0f;
  for (int k = 0; k < 16; ++k) want12 += static_cast<float>((16 + k) * (4 * k + 2));
  StatusOr<std::vector<std::vector<Array>>> shards = (*program)->ShardArguments({x, y});
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  auto client = MakeClient(8);
  for (int repeat = 0; repeat < 3; ++repeat) {  // the same placed shards serve every call
    StatusOr<SpmdResult> r = (*program)->RunPlaced(*client, *shards);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->outputs.size(), 8u);
    for (const std::vector<Array>& device : r->outputs) {  // replicated result on every device
      ASSERT_EQ(device.size(), 1u);
      EXPECT_EQ(device[0].dims(), (std::vector<int64_t>{4, 4}));
      EXPECT_EQ(device[0].At({1, 2}), static_cast<double>(want12));
    }
  }
  auto small = MakeClient(4);
  StatusOr<SpmdResult> refused = (*program)->RunPlaced(*small, *shards);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("runs on 8 devices but the client has 4"), std::string::npos);
}

TEST(ShardedProgramTest, UnevenShardsArePaddedAndTheGlobalOutputHasNoPadding) {
  // 5 rows on 4 devices: shards of 2, 2, 1, 0 rows.
  auto module = ParseOrFail(R"(
HloModule uneven, num_partitions=4
ENTRY main {
  p = s32[5,3] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT n = s32[5,3] negate(p), sharding={devices=[4,1]<=[4]}
})");
  StatusOr<std::unique_ptr<ShardedProgram>> program = ShardedProgram::Compile(*module, 4);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  Array x = Array::Iota(DType::kS32, {5, 3});
  StatusOr<std::vector<std::vector<Array>>> shards = (*program)->ShardArguments({x});
  ASSERT_TRUE(shards.ok());
  EXPECT_EQ((*shards)[2][0], Array::FromVector<int32_t>({2, 3}, {12, 13, 14, 0, 0, 0}));
  EXPECT_EQ((*shards)[3][0], Array::FromVector<int32_t>({2, 3}, {0, 0, 0, 0, 0, 0}));
  auto client = MakeClient(4);
  StatusOr<ShardedResult> r = (*program)->Run(*client, {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<int32_t> want(15);
  for (int i = 0; i < 15; ++i) want[i] = -i;
  EXPECT_EQ(r->outputs[0], Array::FromVector<int32_t>({5, 3}, want));
}

TEST(ShardedProgramTest, ColumnShardedOutputIsReassembledInTileOrder) {
  // Device order reversed: device 3 holds columns 0-1, device 0 columns 6-7.
  auto module = ParseOrFail(R"(
HloModule cols, num_partitions=4
ENTRY main {
  p = f32[2,8] parameter(0), sharding={replicated}
  ROOT a = f32[2,8] add(p, p), sharding={devices=[1,4]3,2,1,0}
})");
  StatusOr<std::unique_ptr<ShardedProgram>> program = ShardedProgram::Compile(*module, 4);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  auto client = MakeClient(4);
  Array x = Array::Iota(DType::kF32, {2, 8});
  StatusOr<ShardedResult> r = (*program)->Run(*client, {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<float> want(16);
  for (int i = 0; i < 16; ++i) want[i] = 2.0f * i;
  EXPECT_EQ(r->outputs[0], Array::FromVector<float>({2, 8}, want));
  EXPECT_EQ(r->device_outputs[3][0], Array::FromVector<float>({2, 2}, {0, 2, 16, 18}));
}

TEST(ShardedProgramTest, RunWithoutGatherLeavesTheOutputsOnTheDevicesUntilOneIsAssembled) {
  // 5 rows on 4 devices (shards of 2, 2, 1, 0 rows, padded to 2) and a replicated output.
  auto module = ParseOrFail(R"(
HloModule two_outputs, num_partitions=4
ENTRY main {
  p = s32[5,3] parameter(0), sharding={devices=[4,1]<=[4]}
  n = s32[5,3] negate(p), sharding={devices=[4,1]<=[4]}
  r = s32[5,3] copy(p), sharding={replicated}
  ROOT t = (s32[5,3], s32[5,3]) tuple(n, r), sharding={{devices=[4,1]<=[4]}, {replicated}}
})");
  StatusOr<std::unique_ptr<ShardedProgram>> program = ShardedProgram::Compile(*module, 4);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  auto client = MakeClient(4);
  Array x = Array::Iota(DType::kS32, {5, 3});
  StatusOr<SpmdResult> ran = (*program)->RunWithoutGather(*client, {x});
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  ASSERT_EQ(ran->outputs.size(), 4u);
  EXPECT_EQ(ran->outputs[2][0], Array::FromVector<int32_t>({2, 3}, {-12, -13, -14, 0, 0, 0}));
  EXPECT_FALSE((*program)->OutputHasPerDeviceValues(0));
  StatusOr<std::vector<OutputBlock>> blocks = (*program)->OutputBlocks(0, ran->outputs);
  ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
  ASSERT_EQ(blocks->size(), 3u);  // device 3 holds no rows
  EXPECT_EQ((*blocks)[2].start, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ((*blocks)[2].sizes, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ((*blocks)[2].held, &ran->outputs[2][0]);
  std::vector<int32_t> negated(15), same(15);
  for (int i = 0; i < 15; ++i) negated[i] = -i, same[i] = i;
  StatusOr<Array> out0 = (*program)->AssembleOutput(0, ran->outputs);
  ASSERT_TRUE(out0.ok()) << out0.status().ToString();
  EXPECT_EQ(*out0, Array::FromVector<int32_t>({5, 3}, negated));
  StatusOr<Array> out1 = (*program)->AssembleOutput(1, ran->outputs);
  ASSERT_TRUE(out1.ok()) << out1.status().ToString();
  EXPECT_EQ(*out1, Array::FromVector<int32_t>({5, 3}, same));
  EXPECT_FALSE((*program)->AssembleOutput(2, ran->outputs).ok());
  ran->outputs[1][0] = Array::Iota(DType::kS32, {3, 3});
  StatusOr<Array> wrong = (*program)->AssembleOutput(0, ran->outputs);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "device 1 output 0 is s32[3,3]; its shard of s32[5,3] under "
                                      "{devices=[4,1]<=[4]} is s32[2,3]");
}

TEST(ShardedProgramTest, MaximalArgumentLivesOnItsDevice) {
  auto module = ParseOrFail(R"(
HloModule maximal, num_partitions=2
ENTRY main {
  p = f32[3] parameter(0), sharding={maximal device=1}
  ROOT n = f32[3] negate(p), sharding={replicated}
})");
  StatusOr<std::unique_ptr<ShardedProgram>> program = ShardedProgram::Compile(*module, 2);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  Array x = Array::FromVector<float>({3}, {1, 2, 3});
  StatusOr<std::vector<std::vector<Array>>> shards = (*program)->ShardArguments({x});
  ASSERT_TRUE(shards.ok());
  EXPECT_EQ((*shards)[1][0], x);
  EXPECT_EQ((*shards)[0][0], Array::FromVector<float>({3}, {0, 0, 0}));
  auto client = MakeClient(2);
  StatusOr<ShardedResult> r = (*program)->Run(*client, {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outputs[0], Array::FromVector<float>({3}, {-1, -2, -3}));
}

TEST(ShardedProgramTest, WrongArgumentsAreNamed) {
  auto module = ParseOrFail(kInner);
  StatusOr<std::unique_ptr<ShardedProgram>> program = ShardedProgram::Compile(*module, 8);
  ASSERT_TRUE(program.ok());
  StatusOr<std::vector<std::vector<Array>>> few = (*program)->ShardArguments({Array::Iota(DType::kF32, {4, 16})});
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.status().message(), "'main' takes 2 argument(s) (f32[4,16], f32[16,4]) but 1 were given");
  StatusOr<std::vector<std::vector<Array>>> wrong =
      (*program)->ShardArguments({Array::Iota(DType::kF32, {4, 16}), Array::Iota(DType::kF32, {4, 16})});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "argument 1 of 'main' is f32[16,4] but f32[4,16] was given");
  auto small = MakeClient(4);
  StatusOr<ShardedResult> r = (*program)->Run(*small, {Array::Iota(DType::kF32, {4, 16}), Array::Iota(DType::kF32, {16, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the program runs on 8 devices but the client has 4");
}

TEST(ShardedProgramTest, BadDeviceCountsAndReplicasAreRefused) {
  auto module = ParseOrFail(kInner);
  StatusOr<std::unique_ptr<ShardedProgram>> zero = ShardedProgram::Compile(*module, 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), "the device count must be 1..8192, got 0");
  auto replicas = ParseOrFail(R"(
HloModule r, replica_count=2
ENTRY main {
  p = f32[4] parameter(0), sharding={replicated}
  ROOT n = f32[4] negate(p)
})");
  StatusOr<std::unique_ptr<ShardedProgram>> r = ShardedProgram::Compile(*replicas, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("replica_count=2"), std::string::npos) << r.status().message();
}

// Token parameters and results (JAX's ordered effects thread one through main) carry no data:
// the program's arguments and outputs are the array leaves only, as for a one-device run. A
// tuple sharding has an element for the token leaf, which is skipped with it.
TEST(ShardedProgramTest, TokenParametersAndResultsAreNotArguments) {
  auto module = ParseOrFail(R"(
HloModule tok, num_partitions=2
ENTRY main {
  t = token[] parameter(0)
  p = f32[4] parameter(1), sharding={devices=[2]<=[2]}
  n = f32[4] negate(p), sharding={devices=[2]<=[2]}
  ROOT r = (token[], f32[4]) tuple(t, n), sharding={{maximal device=0}, {devices=[2]<=[2]}}
})");
  StatusOr<std::unique_ptr<ShardedProgram>> program = ShardedProgram::Compile(*module, 2);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  ASSERT_EQ((*program)->argument_shapes().size(), 1u);
  EXPECT_EQ((*program)->argument_shapes()[0].ToString(false), "f32[4]");
  auto client = MakeClient(2);
  StatusOr<ShardedResult> r = (*program)->Run(*client, {Array::FromVector<float>({4}, {1, -2, 3, -4})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0], Array::FromVector<float>({4}, {-1, 2, -3, 4}));
}

TEST(ShardedProgramTest, ModulesWithoutShardingsOrAlreadyScheduledNeedNoPartitioning) {
  EXPECT_FALSE(NeedsPartitioning(*ParseOrFail("HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}")));
  EXPECT_FALSE(NeedsPartitioning(*ParseOrFail(
      "HloModule m, is_scheduled=true, num_partitions=2\nENTRY e {\n  ROOT p = f32[2] parameter(0), "
      "sharding={devices=[2]<=[2]}\n}")));
  // A shard_map in Shardy's form with no value annotated: its boundaries hold the shardings.
  EXPECT_TRUE(NeedsPartitioning(*ParseOrFail(R"(HloModule m
body {
  ROOT x = f32[1] parameter(0)
}
ENTRY e {
  p = f32[2] parameter(0)
  g = (f32[1]) custom-call(p), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<mesh<[\"x\"=2]>, [{\"x\"}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>"}
  g0 = f32[1] get-tuple-element(g), index=0
  c = f32[1] call(g0), to_apply=body
  ROOT l = f32[2] custom-call(c), custom_call_target="xla.sdy.LocalToGlobalShape", frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<mesh<[\"x\"=2]>, [{\"x\"}]>]>"}
})")));
}

TEST(ShardedProgramTest, ReplicatedReferenceKeepsOnlyTheManualBoundaries) {
  auto module = ParseOrFail(R"(
HloModule manual_region, num_partitions=4
ENTRY main {
  x = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  s = f32[8,4] custom-call(x), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  m = f32[2,4] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  n = f32[2,4] negate(m), sharding={manual}
  f = f32[8,4] custom-call(n), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1]<=[4]}
  ROOT e = f32[8,4] multiply(f, f), sharding={devices=[1,4]<=[4]}
})");
  std::optional<std::string> why = PerDeviceSemantics(*module);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "'m' (custom-call) enters or leaves a manual (per-device) region");
  std::unique_ptr<Module> reference = ReplicatedReference(*module);
  std::map<std::string, std::string> shardings;
  for (const Instruction* inst : reference->entry()->instructions()) {
    shardings[inst->name()] = inst->sharding() ? inst->sharding()->ToString() : "";
  }
  EXPECT_EQ(shardings["x"], "{replicated}");
  EXPECT_EQ(shardings["s"], "{devices=[4,1]<=[4]}");
  EXPECT_EQ(shardings["m"], "{manual}");
  EXPECT_EQ(shardings["n"], "{manual}");
  EXPECT_EQ(shardings["f"], "{devices=[4,1]<=[4]}");
  EXPECT_EQ(shardings["e"], "{replicated}");
  EXPECT_FALSE(PerDeviceSemantics(*ParseOrFail(kInner)).has_value());
}

}  // namespace
}  // namespace xs
