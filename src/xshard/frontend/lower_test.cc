// LowerJaxpr / LowerPmap: the emitted module against seed 002's jit(sigmoid) HLO (the notebook's
// instructions in its order, with our instruction ids), parameter and root shardings, and the
// manual region pmap builds (JAX's shard_map boundary custom-calls).
#include "xshard/frontend/lower.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "xshard/frontend/jit.h"
#include "xshard/text/printer.h"

namespace xs::fe {
namespace {

using ::testing::HasSubstr;

// Seed 002, In [18]: one constant 1, broadcast once, used by both the add and the divide.
TEST(LowerTest, SigmoidIsTheNotebooksModule) {
  StatusOr<Jaxpr> j = MakeJaxpr([](Tensor x) { return 1 / (1 + Exp(-x)); })(Ones({10}));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  LowerOptions options;
  options.name = "sigmoid";
  StatusOr<std::unique_ptr<Module>> m = LowerJaxpr(*j, options);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(PrintHloModule(**m, PrintOptions::Short()),
            "HloModule jit_sigmoid\n\n"
            "ENTRY main {\n"
            "  Arg_0 = f32[10]{0} parameter(0)\n"
            "  negate.2 = f32[10]{0} negate(Arg_0)\n"
            "  exponential.3 = f32[10]{0} exponential(negate.2)\n"
            "  constant.4 = f32[] constant(1)\n"
            "  broadcast.5 = f32[10]{0} broadcast(constant.4), dimensions={}\n"
            "  add.6 = f32[10]{0} add(exponential.3, broadcast.5)\n"
            "  ROOT divide.7 = f32[10]{0} divide(broadcast.5, add.6)\n"
            "}\n");
}

TEST(LowerTest, ShardingsGoOnParametersAndATupleRoot) {
  Jaxpr j;
  JaxprBuilder b(&j);
  Var x = b.NewVar(AVal{DType::kF32, {8}});
  Var y = b.NewVar(AVal{DType::kF32, {8}});
  j.invars = {x, y};
  j.outvars = {*b.Bind1("add", {Atom::OfVar(x), Atom::OfVar(y)}), Atom::OfVar(x)};
  HloSharding tiled = *HloSharding::Parse("{devices=[8]<=[8]}");
  LowerOptions options;
  options.name = "two";
  options.num_partitions = 8;
  options.in_shardings = {tiled, std::nullopt};
  options.out_shardings = {tiled, std::nullopt};
  StatusOr<std::unique_ptr<Module>> m = LowerJaxpr(j, options);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::string text = PrintHloModule(**m, PrintOptions::Short());
  EXPECT_THAT(text, HasSubstr("HloModule jit_two, num_partitions=8"));
  EXPECT_THAT(text, HasSubstr("Arg_0 = f32[8]{0} parameter(0), sharding={devices=[8]<=[8]}"));
  EXPECT_THAT(text, HasSubstr("Arg_1 = f32[8]{0} parameter(1)\n"));
  EXPECT_THAT(text, HasSubstr("sharding={{devices=[8]<=[8]}, {replicated}}"));
  options.in_shardings = {tiled};
  StatusOr<std::unique_ptr<Module>> bad = LowerJaxpr(j, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("1 input shardings for 2 inputs"));
}

TEST(LowerTest, UnknownPrimitiveIsNamed) {
  Jaxpr j;
  Var x{0, AVal{DType::kF32, {2}}};
  Var y{1, AVal{DType::kF32, {2}}};
  j.invars = {x};
  j.eqns.push_back(Eqn{"cumlogsumexp", {Atom::OfVar(x)}, {y}, {}});
  j.outvars = {Atom::OfVar(y)};
  StatusOr<std::unique_ptr<Module>> m = LowerJaxpr(j, {});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("primitive 'cumlogsumexp' has no HLO lowering rule"));
}

// The region between SPMDFullToShardShape and SPMDShardToFullShape is manual; the stacked input
// is tiled over the 8 devices along dim 0.
TEST(LowerTest, PmapBuildsAManualRegion) {
  StatusOr<Jaxpr> j = MakeJaxpr([](Tensor x) { return Sum(x); })(Ones({4}));
  ASSERT_TRUE(j.ok());
  StatusOr<std::unique_ptr<Module>> m = LowerPmap(*j, 8, {true}, "sum");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::string text = PrintHloModule(**m, PrintOptions::Short());
  EXPECT_THAT(text, HasSubstr("f32[8,4]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}"));
  EXPECT_THAT(text, HasSubstr("f32[1,4]{1,0} custom-call(custom-call.2), "
                              "custom_call_target=\"SPMDFullToShardShape\", sharding={manual}"));
  EXPECT_THAT(text, HasSubstr("to_apply=region_0, sharding={manual}"));
  EXPECT_THAT(text, HasSubstr("ROOT custom-call.12 = f32[8]{0} custom-call(custom-call.11), "
                              "custom_call_target=\"SPMDShardToFullShape\", "
                              "sharding={devices=[8]<=[8]}"));
}

}  // namespace
}  // namespace xs::fe
