// Autoshard end to end on small modules whose best plan is known by hand: data parallelism for
// elementwise work, a memory budget that forces the weight to be split, kept annotations,
// forbidden axes, manual regions refused, and determinism.
#include "xshard/autoshard/autoshard.h"

#include <gtest/gtest.h>

#include "xshard/text/parse_test_util.h"
#include "xshard/text/printer.h"

namespace xs::autoshard {
namespace {

AutoshardOptions Options(const char* mesh) {
  AutoshardOptions o;
  o.mesh = *Mesh::Parse(mesh);
  o.cost.dot = [](DType, double flops) { return flops * 1e-10; };
  o.cost.memory = [](double bytes) { return bytes * 1e-10; };
  o.cost.collective = [](std::string_view, int64_t, double bytes) { return 20e-6 + bytes * 1e-9; };
  o.evaluate = [](const Module&, const spmd::PartitionReport& r) { return r.EstimatedSeconds(); };
  return o;
}

using xs::testing::ParseOrFail;

const char* kElementwise = R"(
HloModule m
ENTRY e {
  x = f32[64,1024] parameter(0), metadata={op_name="x"}
  t = f32[64,1024] tanh(x)
  ROOT y = f32[64,1024] multiply(t, t)
})";

TEST(AutoshardTest, ElementwiseWorkSplitsOverEveryDevice) {
  auto m = ParseOrFail(kElementwise);
  auto r = Autoshard(*m, Options("a=4,b=2"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->plan.parameters.size(), 1u);
  EXPECT_EQ(r->plan.parameters[0].name, "x");
  // Every device holds an eighth, and nothing moves.
  EXPECT_EQ(r->plan.report.collectives.size(), 0u);
  EXPECT_EQ(r->plan.peak_bytes * 8, r->plan.report.before.peak_bytes);
  EXPECT_EQ(r->plan.parameters[0].spec, r->plan.outputs[0].spec);
  EXPECT_NE(r->plan.parameters[0].spec, "P()");
  EXPECT_EQ(r->annotated->config().num_partitions, 8);
}

TEST(AutoshardTest, Deterministic) {
  auto m = ParseOrFail(kElementwise);
  auto a = Autoshard(*m, Options("a=4,b=2"));
  auto b = Autoshard(*m, Options("a=4,b=2"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(PrintHloModule(*a->annotated), PrintHloModule(*b->annotated));
}

const char* kMatvec = R"(
HloModule m
ENTRY e {
  x = f32[8,1024] parameter(0), sharding={replicated}
  w = f32[1024,1024] parameter(1), sharding={replicated}
  ROOT d = f32[8,1024] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

TEST(AutoshardTest, MemoryBudgetSplitsTheWeight) {
  auto m = ParseOrFail(kMatvec);
  AutoshardOptions o = Options("x=4");
  o.memory_per_device = 2 << 20;  // w alone is 4 MiB
  auto r = Autoshard(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->plan.parameters[1].spec, "P()");
  EXPECT_LE(r->plan.peak_bytes, o.memory_per_device);
}

TEST(AutoshardTest, NoPlanFitsIsOneClearError) {
  auto m = ParseOrFail(kMatvec);
  AutoshardOptions o = Options("x=4");
  o.memory_per_device = 1000;
  auto r = Autoshard(*m, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("no plan fits"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("--memory-per-device"), std::string::npos);
}

TEST(AutoshardTest, KeptAnnotationsAreKept) {
  auto m = ParseOrFail(kMatvec);
  AutoshardOptions o = Options("x=4");
  o.keep_annotations = true;
  auto r = Autoshard(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->plan.parameters[0].spec, "P()");
  EXPECT_EQ(r->plan.parameters[1].spec, "P()");
}

TEST(AutoshardTest, ForbiddenAxesAreAvoided) {
  auto m = ParseOrFail(kMatvec);
  AutoshardOptions o = Options("x=4");
  o.memory_per_device = 2 << 20;
  o.forbid = {{"w", 0, "x"}};
  auto r = Autoshard(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->plan.parameters[1].spec, "P(None, 'x')");
  o.forbid = {{"nope", 0, "x"}};
  auto bad = Autoshard(*m, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'nope'"), std::string::npos);
  o.forbid = {{"w", 0, "q"}};
  EXPECT_FALSE(Autoshard(*m, o).ok());
}

TEST(AutoshardTest, ManualRegionsAreRefused) {
  auto m = ParseOrFail(R"(
HloModule m
ENTRY e {
  x = f32[8] parameter(0), sharding={devices=[2]<=[2]}
  ROOT c = f32[4] custom-call(x), custom_call_target="SPMDFullToShardShape", sharding={manual}
})");
  auto r = Autoshard(*m, Options("x=2"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("shard_map"), std::string::npos);
}

}  // namespace
}  // namespace xs::autoshard
