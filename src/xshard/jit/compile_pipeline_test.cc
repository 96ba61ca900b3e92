// The compiler pipeline: every pass named and dumped in order (the Shardy import and the async
// schedule included), propagation options reach partitioning, propagation's mesh and rules are
// handed on, one clone of the input, dumps between passes. Expected shardings and shapes are
// worked out by hand from the module text.
#include "xshard/jit/compile_pipeline.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "xshard/text/parser.h"

namespace xs {
namespace {

// x[4,16] split 2 ways on dim 0 and 4 ways on dim 1 (8 devices); the output is open.
constexpr char kOuter[] = R"(
HloModule outer, allow_spmd_sharding_propagation_to_output={true}, num_partitions=8
ENTRY main {
  x = f32[4,16] parameter(0), sharding={devices=[2,4]<=[4,2]T(1,0)}
  y = f32[16,4] parameter(1), sharding={devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}
  ROOT z = f32[4,4] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

StatusOr<CompiledModule> CompileText(const std::string& text, const CompileOptions& options) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, "test.hlo");
  if (!m.ok()) return m.status();
  return CompileModule(**m, 8, options);
}

TEST(CompilePipelineTest, PassNamesInOrder) {
  EXPECT_EQ(CompilePassNames(), (std::vector<std::string>{"shardy-import", "inline-calls", "gather-batch-dims",
                                                          "global-cse", "split-constants", "propagate", "partition",
                                                          "cse", "dce", "combine-all-reduces", "async-collectives"}));
}

// Every pass, each dumped once, in order, numbered from 1 (file names), when all are switched on.
TEST(CompilePipelineTest, DumpAfterEachShowsEveryPassInOrder) {
  std::ostringstream dump;
  CompileOptions options;
  options.dump.after_each = true;
  options.dump.stream = &dump;
  options.async_collectives = true;
  StatusOr<CompiledModule> r = CompileText(kOuter, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string text = dump.str();
  // kOuter is in GSPMD form: the import changes nothing. The dot's partial sums need an
  // all-reduce, which the schedule turns into all-reduce-start / -done.
  size_t at = 0;
  for (const char* header :
       {"// after shardy-import (unchanged):", "// after inline-calls (unchanged):",
        "// after gather-batch-dims (unchanged):", "// after global-cse (unchanged):",
        "// after split-constants (unchanged):", "// after propagate (changed):", "// after partition (changed):",
        "// after cse (unchanged):", "// after dce (unchanged):", "// after async-collectives (changed):"}) {
    const size_t found = text.find(header, at);
    ASSERT_NE(found, std::string::npos) << header << "\n" << text;
    at = found + 1;
  }
  EXPECT_NE(text.find("all-reduce-start", text.find("// after async-collectives")), std::string::npos);
  EXPECT_EQ(text.find("all-reduce-start"), text.find("all-reduce-start", text.find("// after async-collectives")));
}

// A disabled pass is not dumped but keeps its number: dce is file 08 with or without cleanup's
// neighbours, and async-collectives (off) writes nothing.
TEST(CompilePipelineTest, DumpFilesAreNumberedByPassPosition) {
  const std::string dir = ::testing::TempDir() + "/compile_pipeline_dump";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CompileOptions options;
  options.dump.after = {"shardy-import", "dce", "async-collectives"};
  options.dump.directory = dir;
  options.partition.propagate = false;
  StatusOr<CompiledModule> r = CompileText(kOuter, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"01-shardy-import.hlo", "09-dce.hlo"}));
  std::filesystem::remove_all(dir);
}

// JAX's Shardy form: the import rewrites the xla.sdy custom-calls, and its dump shows the GSPMD
// form (SPMDFullToShardShape) before propagation.
TEST(CompilePipelineTest, ShardyImportIsADumpedPass) {
  constexpr char kShardy[] = R"(
HloModule sdy, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=8]>}}
body {
  p = f32[2,3] parameter(0)
  ROOT n = f32[2,3] negate(p)
}
ENTRY main {
  a = f32[16,3] parameter(0), sharding={devices=[8,1]<=[8]}
  l = f32[2,3] custom-call(a), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>"}
  c = f32[2,3] call(l), to_apply=body
  ROOT g = f32[16,3] custom-call(c), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>"}
})";
  std::ostringstream dump;
  CompileOptions options;
  options.dump.after = {"shardy-import"};
  options.dump.stream = &dump;
  StatusOr<CompiledModule> r = CompileText(kShardy, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string text = dump.str();
  ASSERT_EQ(text.rfind("// after shardy-import (changed):", 0), 0u) << text;
  EXPECT_NE(text.find("SPMDFullToShardShape"), std::string::npos) << text;
  EXPECT_EQ(text.find("xla.sdy.GlobalToLocalShape"), std::string::npos) << text;
  EXPECT_EQ(text.find("// after propagate"), std::string::npos) << text;
}

// Calls are inlined before propagation: the reversed half that a call returns is sharded with
// the caller's values (no call, no collective at its boundary), while a shard_map body stays a
// call (its manual region is the partitioner's to keep).
TEST(CompilePipelineTest, InlineCallsRunsBeforePropagationAndKeepsShardMapBodies) {
  constexpr char kCalls[] = R"(
HloModule calls
flip { a = f32[16,4] parameter(0)
 ROOT r = f32[16,4] reverse(a), dimensions={0} }
body { p = f32[2,4] parameter(0), sharding={manual}
 ROOT n = f32[2,4] negate(p), sharding={manual} }
ENTRY main {
  x = f32[16,4] parameter(0), sharding={devices=[8,1]<=[8]}
  f = f32[16,4] call(x), to_apply=flip
  s = f32[16,4] custom-call(f), custom_call_target="Sharding", sharding={devices=[8,1]<=[8]}
  l = f32[2,4] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  c = f32[2,4] call(l), to_apply=body, sharding={manual}
  ROOT o = f32[16,4] custom-call(c), custom_call_target="SPMDShardToFullShape", sharding={devices=[8,1]<=[8]}
})";
  std::ostringstream dump;
  CompileOptions options;
  options.dump.after = {"inline-calls"};
  options.dump.stream = &dump;
  StatusOr<CompiledModule> r = CompileText(kCalls, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string text = dump.str();
  ASSERT_EQ(text.rfind("// after inline-calls (changed):", 0), 0u) << text;
  EXPECT_EQ(r->global->GetComputation("flip"), nullptr);
  ASSERT_NE(r->global->GetComputation("body"), nullptr);
  int calls = 0;
  for (const Instruction* i : r->global->entry()->instructions()) calls += i->opcode() == Opcode::kCall;
  EXPECT_EQ(calls, 1);
  options.inline_calls = false;
  options.dump = {};
  StatusOr<CompiledModule> kept = CompileText(kCalls, options);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_NE(kept->global->GetComputation("flip"), nullptr);
}

// The device limit (base/limits.h: 8192) and replica_count are checked before any pass runs.
TEST(CompilePipelineTest, RefusesBadDeviceCountsAndReplicas) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(kOuter, "test.hlo");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(CompileModule(**m, 8193).status().message(), "the device count must be 1..8192, got 8193");
  EXPECT_EQ(CompileModule(**m, 0).status().message(), "the device count must be 1..8192, got 0");
  (*m)->mutable_config().replica_count = 2;
  EXPECT_EQ(CompileModule(**m, 8).status().code(), StatusCode::kUnimplemented);
}

TEST(CompilePipelineTest, PropagationOptionsReachPartitioning) {
  // Open output: z keeps the dot's row split (2 ways) -> each device's output is f32[2,4].
  StatusOr<CompiledModule> open = CompileText(kOuter, {});
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  EXPECT_EQ(open->partitioned.module->entry()->root()->shape().ToString(false), "f32[2,4]");
  // --to-output false: the output is closed, replicated, whole f32[4,4] on every device.
  CompileOptions closed;
  closed.partition.propagation.allow_to_output = false;
  StatusOr<CompiledModule> c = CompileText(kOuter, closed);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->partitioned.module->entry()->root()->shape().ToString(false), "f32[4,4]");
  EXPECT_TRUE(c->partitioned.output_sharding.IsReplicated());
}

TEST(CompilePipelineTest, PropagationResultDescribesTheKeptGlobalModule) {
  StatusOr<CompiledModule> r = CompileText(kOuter, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->propagation.has_value());
  // Cuts {1, 2, 8} of the two annotations: prime axes [2,2,2].
  EXPECT_EQ(r->propagation->mesh.ToString(), "[2,2,2]");
  const Instruction* z = r->global->entry()->root();
  const PropagatedValue* v = r->propagation->ValueOf(*z);
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(v->axes.size(), 1u);
  ASSERT_TRUE(v->axes[0].has_value());
  // x's tiles [2,4]<=[4,2]T(1,0): tile (i, j) is device 2j + i, so x's rows are split by device
  // stride 1 (the minor axis 2 of strides 4, 2, 1). z's rows follow x's rows; columns unsplit.
  EXPECT_EQ(v->axes[0]->dims, (std::vector<std::vector<int>>{{2}, {}}));
  ASSERT_TRUE(z->sharding().has_value());
  // Rows on stride 1, replicated over the other 4 devices: the iota form of y's annotation.
  EXPECT_EQ(z->sharding()->ToString(false), "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}");
}

TEST(CompilePipelineTest, DumpsAfterTheNamedPassesOnly) {
  std::ostringstream dump;
  CompileOptions options;
  options.dump.after = {"propagate", "dce"};
  options.dump.stream = &dump;
  StatusOr<CompiledModule> r = CompileText(kOuter, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string text = dump.str();
  const size_t propagate = text.find("// after propagate (changed):");
  const size_t dce = text.find("// after dce (");
  ASSERT_NE(propagate, std::string::npos) << text;
  ASSERT_NE(dce, std::string::npos) << text;
  EXPECT_LT(propagate, dce);
  EXPECT_EQ(text.find("// after partition"), std::string::npos);
  EXPECT_EQ(text.find("// after cse"), std::string::npos);
  // The propagate dump is the global module (f32[4,16] x); the dce dump the SPMD one (x: f32[2,4]).
  EXPECT_NE(text.substr(propagate, dce - propagate).find("f32[4,16]"), std::string::npos);
  EXPECT_NE(text.substr(dce).find("%x = f32[2,4] parameter(0)"), std::string::npos) << text.substr(dce);
}

TEST(CompilePipelineTest, UnknownDumpNameIsAnError) {
  CompileOptions options;
  options.dump.after = {"fold"};
  StatusOr<CompiledModule> r = CompileText(kOuter, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--dump-after: no pass named 'fold'; the passes are shardy-import, inline-calls, "
            "gather-batch-dims, global-cse, split-constants, propagate, partition, cse, dce, combine-all-reduces, "
            "async-collectives");
}

TEST(CompilePipelineTest, NoPropagationLeavesUnannotatedValuesReplicated) {
  CompileOptions options;
  options.partition.propagate = false;
  StatusOr<CompiledModule> r = CompileText(kOuter, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->propagation.has_value());
  EXPECT_EQ(r->partitioned.module->entry()->root()->shape().ToString(false), "f32[4,4]");
}

}  // namespace
}  // namespace xs
