// Tests of the C++ module builder: inferred shapes, XlaBuilder-style names, error recording, build
// order and verification. (Round trips through HLO text are in builder_seed_test.cc.)
#include "xshard/ir/builder.h"

#include <gtest/gtest.h>

#include <functional>

namespace xs {
namespace {

Shape F32Builder(std::vector<int64_t> dims) { return Shape(DType::kF32, std::move(dims)); }

// The usage example of builder.h, verbatim.
TEST(BuilderTest, HeaderExampleBuildsAVerifiedModule) {
  ModuleBuilder mb("jit_f");
  ComputationBuilder& add = mb.AddComputation("add");
  add.Add(add.Parameter(0, Shape(DType::kF32, {}), "x"),
          add.Parameter(1, Shape(DType::kF32, {}), "y"));
  ComputationBuilder& main = mb.AddEntry("main");
  Op a = main.Parameter(0, Shape(DType::kF32, {4, 16}), "a");
  Op b = main.Parameter(1, Shape(DType::kF32, {16, 8}), "b");
  Op d = main.Dot(a, b);                                   // f32[4,8]
  main.Reduce(d, main.Scalar(0.0f), add, {1});             // f32[4], the root
  StatusOr<std::unique_ptr<Module>> m = mb.Build();        // verified
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(d.shape().ToString(), "f32[4,8]{1,0}");
  Module& module = **m;
  ASSERT_EQ(module.computation_count(), 2);
  EXPECT_EQ(module.computations()[0]->name(), "add");  // callees first
  EXPECT_EQ(module.entry()->name(), "main");
  const Instruction* root = module.entry()->root();
  EXPECT_EQ(root->opcode(), Opcode::kReduce);
  EXPECT_EQ(root->shape().ToString(), "f32[4]{0}");
  EXPECT_EQ(root->to_apply(), module.computations()[0]);
  // Ids count every instruction of the module: x.1, y.2, add.3, a.4, b.5, dot.6, constant.7, ...
  EXPECT_EQ(d.instruction()->name(), "dot.6");
  EXPECT_EQ(root->name(), "reduce.8");
  EXPECT_EQ(module.entry()->parameter(0)->name(), "a");
}

TEST(BuilderTest, SeedSigmoidHasXlaShapesAndNames) {
  // jit(sigmoid) on f32[10] from seed 002, written in the seed's instruction order.
  ModuleBuilder mb("jit_sigmoid.2");
  ComputationBuilder& b = mb.AddEntry("main.8");
  Op one = b.WithName("constant.2").Scalar(1.0f);
  Op ones = b.WithName("broadcast.3").BroadcastInDim(one, {10}, {});
  Op x = b.Parameter(0, F32Builder({10}), "Arg_0.1");
  Op e = b.WithName("exponential.5").Exp(b.WithName("negate.4").Neg(x));
  Op sum = b.WithName("add.6").Add(e, ones);
  Op out = b.WithName("divide.7").Div(ones, sum);
  auto m = mb.Build();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(one.shape().ToString(), "f32[]");
  EXPECT_EQ(ones.shape().ToString(), "f32[10]{0}");
  EXPECT_EQ((*m)->entry()->root(), out.instruction());
  std::vector<std::string> names;
  for (Instruction* i : (*m)->entry()->instructions()) names.push_back(i->name());
  EXPECT_EQ(names, (std::vector<std::string>{"constant.2", "broadcast.3", "Arg_0.1", "negate.4",
                                             "exponential.5", "add.6", "divide.7"}));
}

TEST(BuilderTest, SelectAndScatterTakesBothComputationsAndTheWindow) {
  // max_pool's gradient over 2x2 windows of f32[4,4]: one source element per window.
  ModuleBuilder mb("sas");
  ComputationBuilder& ge = mb.AddComputation("ge");
  ge.Compare(ge.Parameter(0, F32Builder({}), "a"), ge.Parameter(1, F32Builder({}), "b"),
             ComparisonDirection::kGe);
  ComputationBuilder& add = mb.AddComputation("add");
  add.Add(add.Parameter(0, F32Builder({}), "x"), add.Parameter(1, F32Builder({}), "y"));
  ComputationBuilder& main = mb.AddEntry("main");
  Op operand = main.Parameter(0, F32Builder({4, 4}), "operand");
  Op source = main.Parameter(1, F32Builder({2, 2}), "source");
  Window w;
  w.dims = {WindowDim{2, 2, 0, 0, 1, 1, false}, WindowDim{2, 2, 0, 0, 1, 1, false}};
  Op s = main.SelectAndScatter(operand, ge, w, source, main.Scalar(0.0f), add);
  auto m = mb.Build();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(s.instruction()->opcode(), Opcode::kSelectAndScatter);
  EXPECT_EQ(s.shape().ToString(), "f32[4,4]{1,0}");
  ASSERT_EQ(s.instruction()->called_computations().size(), 2u);
  // A source that does not match the window count is an error naming the op.
  ModuleBuilder bad("bad");
  ComputationBuilder& ge2 = bad.AddComputation("ge");
  ge2.Compare(ge2.Parameter(0, F32Builder({}), "a"), ge2.Parameter(1, F32Builder({}), "b"),
              ComparisonDirection::kGe);
  ComputationBuilder& add2 = bad.AddComputation("add");
  add2.Add(add2.Parameter(0, F32Builder({}), "x"), add2.Parameter(1, F32Builder({}), "y"));
  ComputationBuilder& main2 = bad.AddEntry("main");
  main2.SelectAndScatter(main2.Parameter(0, F32Builder({4, 4}), "o"), ge2, w,
                         main2.Parameter(1, F32Builder({3, 2}), "s"), main2.Scalar(0.0f), add2);
  auto err = bad.Build();
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("SelectAndScatter"), std::string::npos)
      << err.status().message();
}

TEST(BuilderTest, FirstErrorNamesTheOpAndLaterOpsAreNoOps) {
  ModuleBuilder mb("m");
  ComputationBuilder& b = mb.AddEntry("main");
  Op a = b.Parameter(0, F32Builder({4, 16}), "a");
  Op c = b.Parameter(1, F32Builder({8, 8}), "c");
  Op bad = b.Dot(a, c);
  EXPECT_FALSE(bad.valid());
  Op later = b.Neg(a);  // ignored: the first error stays
  EXPECT_FALSE(later.valid());
  b.Reshape(a, {3});
  auto m = mb.Build();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "Dot: instruction 'dot.3' (dot) in computation 'main': contracting dim sizes differ: "
            "lhs dim 1 of f32[4,16] is 16, rhs dim 0 of f32[8,8] is 8");
}

TEST(BuilderTest, ShapeErrorsOfEachKindAreReported) {
  struct Case {
    std::function<void(ComputationBuilder&, Op)> build;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](ComputationBuilder& b, Op x) { b.Reshape(x, {5}); },
       "Reshape: instruction 'reshape.2' (reshape) in computation 'main': reshape from f32[2,3] "
       "(6 elements) to f32[5] (5 elements) changes the element count"},
      {[](ComputationBuilder& b, Op x) { b.Transpose(x, {1, 1}); },
       "Transpose: instruction 'transpose.2' (transpose) in computation 'main': transpose "
       "dimensions={1,1} is not a permutation of the dims of f32[2,3]"},
      {[](ComputationBuilder& b, Op x) { b.Slice(x, {0, 0}, {2, 4}); },
       "Slice: instruction 'slice.2' (slice) in computation 'main': slice dim 1 [0:4:1] is "
       "invalid for size 3 of f32[2,3]; need 0 <= start <= limit <= size and stride >= 1"},
      {[](ComputationBuilder& b, Op x) { b.Select(x, x, x); },
       "Select: instruction 'select.2' (select) in computation 'main': the predicate must have "
       "element type pred, got f32[2,3]"},
      {[](ComputationBuilder& b, Op x) { b.GetTupleElement(x, 0); },
       "GetTupleElement: instruction 'get-tuple-element.2' (get-tuple-element) in computation "
       "'main': get-tuple-element needs a tuple operand, got f32[2,3]"},
      {[](ComputationBuilder& b, Op x) { b.AllGather(x, 0); },
       "AllGather: give replica_groups or set the module's num_partitions; without them the "
       "group size of AllGather is unknown"},
      {[](ComputationBuilder& b, Op x) { b.Unary(Opcode::kAdd, x); },
       "Unary: add is not a unary elementwise op; use Raw()"},
  };
  for (const Case& c : cases) {
    ModuleBuilder mb("m");
    ComputationBuilder& b = mb.AddEntry("main");
    c.build(b, b.Parameter(0, F32Builder({2, 3}), "x"));
    EXPECT_EQ(mb.status().message(), c.message);
  }
}

TEST(BuilderTest, CollectivesTakeTheGroupSize) {
  ModuleBuilder mb("m");
  mb.mutable_config().num_partitions = 4;
  ComputationBuilder& sum = mb.AddComputation("sum");
  sum.Add(sum.Parameter(0, F32Builder({}), "p"), sum.Parameter(1, F32Builder({}), "q"));
  ComputationBuilder& b = mb.AddEntry("main");
  Op x = b.Parameter(0, F32Builder({8, 6}), "x");
  Op gathered = b.AllGather(x, 1, {.replica_groups = {{0, 1}, {2, 3}}});
  Op everywhere = b.AllGather(x, 0, {.channel_id = 1});  // num_partitions = 4
  Op scattered = b.ReduceScatter(x, sum, 0, {.channel_id = 2});
  Op reduced = b.AllReduce(x, sum);
  Op a2a = b.AllToAll(x, 0, {.replica_groups = {{0, 1, 2, 3}}});
  Op permuted = b.CollectivePermute(x, {{0, 1}, {1, 0}});
  b.Tuple({gathered, everywhere, scattered, reduced, a2a, permuted, b.PartitionId()});
  auto m = mb.Build();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(gathered.shape().ToString(false), "f32[8,12]");
  EXPECT_EQ(everywhere.shape().ToString(false), "f32[32,6]");
  EXPECT_EQ(scattered.shape().ToString(false), "f32[2,6]");
  EXPECT_EQ(reduced.shape().ToString(false), "f32[8,6]");
  EXPECT_EQ(a2a.shape().ToString(false), "f32[8,6]");
  EXPECT_EQ(permuted.shape().ToString(false), "f32[8,6]");
}

TEST(BuilderTest, ControlFlowAndShardings) {
  ModuleBuilder mb("loop");
  mb.mutable_config().num_partitions = 2;
  Shape state = Shape::Tuple({Shape(DType::kS32, {}), F32Builder({4})});
  ComputationBuilder& cond = mb.AddComputation("cond");
  Op s = cond.Parameter(0, state, "s");
  cond.Compare(cond.GetTupleElement(s, 0), cond.Scalar<int32_t>(10), ComparisonDirection::kLt);
  ComputationBuilder& body = mb.AddComputation("body");
  Op t = body.Parameter(0, state, "t");
  Op i = body.GetTupleElement(t, 0);
  Op v = body.GetTupleElement(t, 1);
  body.Tuple({body.Add(i, body.Scalar<int32_t>(1)), body.Mul(v, v)});
  ComputationBuilder& main = mb.AddEntry("main");
  HloSharding split = HloSharding::Parse("{devices=[2]0,1}").value();
  Op x = main.WithSharding(split).Parameter(0, F32Builder({4}), "x");
  Op w = main.While(cond, body, main.Tuple({main.Scalar<int32_t>(0), x}));
  main.SetSharding(main.GetTupleElement(w, 1), split);
  auto m = mb.Build();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(w.shape().ToString(false), "(s32[], f32[4])");
  EXPECT_EQ(x.instruction()->sharding()->ToString(), "{devices=[2]0,1}");
  EXPECT_EQ((*m)->entry()->root()->sharding()->ToString(), "{devices=[2]0,1}");
  // Callees come before the entry, in creation order.
  EXPECT_EQ((*m)->computations()[0]->name(), "cond");
  EXPECT_EQ((*m)->computations()[1]->name(), "body");
}

TEST(BuilderTest, RejectsInvalidShardingAndForeignOperands) {
  ModuleBuilder mb("m");
  mb.mutable_config().num_partitions = 2;
  ComputationBuilder& other = mb.AddComputation("other");
  Op y = other.Parameter(0, F32Builder({}), "y");
  ComputationBuilder& main = mb.AddEntry("main");
  Op x = main.Parameter(0, F32Builder({4}), "x");
  main.SetSharding(x, HloSharding::Parse("{devices=[1,2]0,1}").value());
  EXPECT_EQ(mb.status().message(),
            "SetSharding: instruction 'x' (parameter) in computation 'main': sharding "
            "{devices=[1,2]0,1} on shape f32[4]{0}: the tile assignment splits 2 data dims but "
            "the shape has rank 1; give one tile count per array dim (subgroup dims come after)");
  ModuleBuilder mb2("m2");
  ComputationBuilder& a = mb2.AddComputation("a");
  Op p = a.Parameter(0, F32Builder({}), "p");
  ComputationBuilder& e = mb2.AddEntry("e");
  e.Neg(p);
  EXPECT_EQ(mb2.status().message(),
            "negate: operand 0 'p' belongs to another computation than 'e'");
  (void)y;
}

TEST(BuilderTest, BuildTwiceAndMissingEntryAreErrors) {
  ModuleBuilder none("none");
  none.AddComputation("c").Parameter(0, F32Builder({}), "p");
  EXPECT_EQ(none.Build().status().message(),
            "Build: module 'none' has no entry; call AddEntry(name)");
  ModuleBuilder twice("twice");
  twice.AddEntry("main").Parameter(0, F32Builder({}), "p");
  EXPECT_TRUE(twice.Build().ok());
  EXPECT_EQ(twice.Build().status().message(), "Build: module 'twice' was already built");
}

TEST(BuilderTest, DataMovementOps) {
  ModuleBuilder mb("m");
  ComputationBuilder& b = mb.AddEntry("main");
  Op x = b.Parameter(0, F32Builder({2, 3}), "x");
  Op i = b.Parameter(1, Shape(DType::kS32, {}), "i");
  EXPECT_EQ(b.Broadcast(x, {5}).shape().ToString(false), "f32[5,2,3]");
  EXPECT_EQ(b.Transpose(x, {1, 0}).shape().ToString(false), "f32[3,2]");
  EXPECT_EQ(b.Concatenate({x, x}, 1).shape().ToString(false), "f32[2,6]");
  EXPECT_EQ(b.Pad(x, b.Scalar(0.0f), {{1, 1, 0}, {0, 0, 1}}).shape().ToString(false),
            "f32[4,5]");
  EXPECT_EQ(b.DynamicSlice(x, {i, i}, {1, 3}).shape().ToString(false), "f32[1,3]");
  EXPECT_EQ(b.Convert(x, DType::kBF16).shape().ToString(false), "bf16[2,3]");
  EXPECT_EQ(b.Iota(Shape(DType::kS32, {4, 2}), 0).shape().ToString(false), "s32[4,2]");
  EXPECT_EQ(b.Compare(x, x, ComparisonDirection::kGt).shape().ToString(false), "pred[2,3]");
  EXPECT_EQ(b.Reverse(x, {0}).shape().ToString(false), "f32[2,3]");
  EXPECT_EQ(b.CustomCall("Sharding", {x}, F32Builder({2, 3})).shape().ToString(false), "f32[2,3]");
  EXPECT_TRUE(mb.Build().ok()) << mb.status().ToString();
}

}  // namespace
}  // namespace xs
