// One test per verifier rule: each builds a module with exactly one mistake through the raw IR API
// (the builder would refuse it) and pins the message.
#include "xshard/ir/verifier.h"

#include <gtest/gtest.h>

namespace xs {
namespace {

Shape F32Verifier(std::vector<int64_t> dims) { return Shape(DType::kF32, std::move(dims)); }

// Builds modules instruction by instruction with whatever shapes the test declares.
class Maker {
 public:
  explicit Maker(std::string name = "m") : module_(std::make_unique<Module>(std::move(name))) {}

  Computation* Comp(std::string name, bool entry = false) {
    return module_->AddComputation(std::make_unique<Computation>(std::move(name)), entry);
  }
  Instruction* Param(Computation* c, int64_t n, Shape s, std::string name) {
    auto i = Instruction::Create(Opcode::kParameter, std::move(s), {}, std::move(name));
    i->mutable_attrs().parameter_number = n;
    return c->AddInstruction(std::move(i));
  }
  Instruction* Add(Computation* c, Opcode op, Shape s, std::vector<Instruction*> ops,
                   std::string name, Attributes attrs = {}) {
    auto i = Instruction::Create(op, std::move(s), std::move(ops), std::move(name));
    i->mutable_attrs() = std::move(attrs);
    return c->AddInstruction(std::move(i));
  }
  // A scalar f32 add computation (x, y) -> x + y.
  Computation* Adder(std::string name = "sum") {
    Computation* c = Comp(std::move(name));
    Instruction* x = Param(c, 0, F32Verifier({}), "x");
    Instruction* y = Param(c, 1, F32Verifier({}), "y");
    c->set_root(Add(c, Opcode::kAdd, F32Verifier({}), {x, y}, "r"));
    return c;
  }
  Module& module() { return *module_; }
  std::string Message() { return Verify(*module_).message(); }

 private:
  std::unique_ptr<Module> module_;
};

TEST(VerifierTest, AcceptsAWellFormedModule) {
  Maker m;
  Computation* sum = m.Adder();
  Computation* e = m.Comp("main", true);
  Instruction* a = m.Param(e, 0, F32Verifier({4, 16}), "a");
  Instruction* z = m.Add(e, Opcode::kConstant, F32Verifier({}), {}, "zero",
                         [] { Attributes at; at.literal = Literal{Array::Scalar(0.0f), {}};
                              return at; }());
  Attributes dims;
  dims.dimensions = std::vector<int64_t>{1};
  Instruction* r = m.Add(e, Opcode::kReduce, F32Verifier({4}), {a, z}, "r", dims);
  r->AddCall(CallRole::kToApply, sum);
  e->set_root(r);
  EXPECT_TRUE(Verify(m.module()).ok()) << m.Message();
}

TEST(VerifierTest, RejectsDeclaredShapeThatDiffersFromInferred) {
  Maker m;
  Computation* e = m.Comp("main", true);
  Instruction* x = m.Param(e, 0, F32Verifier({4}), "x");
  Instruction* y = m.Param(e, 1, F32Verifier({4}), "y");
  e->set_root(m.Add(e, Opcode::kAdd, F32Verifier({8}), {x, y}, "add.1"));
  EXPECT_EQ(m.Message(),
            "instruction 'add.1' (add): declared shape f32[8] differs from the inferred shape "
            "f32[4] (operands: f32[4] x, f32[4] y)");
}

TEST(VerifierTest, RejectsWrongElementType) {
  Maker m;
  Computation* e = m.Comp("main", true);
  Instruction* x = m.Param(e, 0, F32Verifier({4}), "x");
  e->set_root(m.Add(e, Opcode::kNegate, Shape(DType::kS32, {4}), {x}, "neg"));
  EXPECT_EQ(m.Message(), "instruction 'neg' (negate): declared shape s32[4] differs from the "
                         "inferred shape f32[4] (operands: f32[4] x)");
}

TEST(VerifierTest, RejectsWrongOperandCount) {
  Maker m;
  Computation* e = m.Comp("main", true);
  Instruction* x = m.Param(e, 0, F32Verifier({4}), "x");
  e->set_root(m.Add(e, Opcode::kNegate, F32Verifier({4}), {x, x}, "neg"));
  EXPECT_EQ(m.Message(), "instruction 'neg' (negate): negate takes 1 operand(s), got 2");
}

TEST(VerifierTest, RejectsOutOfRangeDotDimension) {
  Maker m;
  Computation* e = m.Comp("main", true);
  Instruction* a = m.Param(e, 0, F32Verifier({4, 16}), "a");
  Instruction* b = m.Param(e, 1, F32Verifier({16, 8}), "b");
  Attributes at;
  at.dot = DotDimensionNumbers{{}, {}, {2}, {0}};
  e->set_root(m.Add(e, Opcode::kDot, F32Verifier({4, 8}), {a, b}, "dot.3", at));
  EXPECT_EQ(m.Message(),
            "instruction 'dot.3' (dot): lhs contracting dim 2 is out of range for f32[4,16]");
}

TEST(VerifierTest, RejectsRepeatedDimension) {
  Maker m;
  Computation* e = m.Comp("main", true);
  Instruction* a = m.Param(e, 0, F32Verifier({4, 4}), "a");
  Attributes at;
  at.dimensions = std::vector<int64_t>{0, 0};
  e->set_root(m.Add(e, Opcode::kTranspose, F32Verifier({4, 4}), {a}, "t", at));
  EXPECT_EQ(m.Message(), "instruction 't' (transpose): transpose dimensions={0,0} is not a "
                         "permutation of the dims of f32[4,4]");
}

TEST(VerifierTest, RejectsReducerWithWrongArity) {
  Maker m;
  Computation* bad = m.Comp("bad");
  Instruction* x = m.Param(bad, 0, F32Verifier({}), "x");
  bad->set_root(m.Add(bad, Opcode::kNegate, F32Verifier({}), {x}, "n"));
  Computation* e = m.Comp("main", true);
  Instruction* a = m.Param(e, 0, F32Verifier({4}), "a");
  Instruction* init = m.Param(e, 1, F32Verifier({}), "init");
  Attributes at;
  at.dimensions = std::vector<int64_t>{0};
  Instruction* r = m.Add(e, Opcode::kReduce, F32Verifier({}), {a, init}, "r", at);
  r->AddCall(CallRole::kToApply, bad);
  e->set_root(r);
  EXPECT_EQ(m.Message(), "instruction 'r' (reduce): the reducer (f32[]) -> f32[] must take 2 "
                         "parameters (accumulators then inputs) for 1 input(s)");
}

TEST(VerifierTest, RejectsWhileConditionThatIsNotPred) {
  Maker m;
  Computation* cond = m.Comp("cond");
  cond->set_root(m.Param(cond, 0, F32Verifier({}), "s"));
  Computation* body = m.Comp("body");
  body->set_root(m.Param(body, 0, F32Verifier({}), "s"));
  Computation* e = m.Comp("main", true);
  Instruction* init = m.Param(e, 0, F32Verifier({}), "init");
  Instruction* w = m.Add(e, Opcode::kWhile, F32Verifier({}), {init}, "w");
  w->AddCall(CallRole::kCondition, cond);
  w->AddCall(CallRole::kBody, body);
  e->set_root(w);
  EXPECT_EQ(m.Message(), "instruction 'w' (while): while condition must return pred[], returns "
                         "f32[]");
}

TEST(VerifierTest, RejectsParameterGapsAndDuplicates) {
  Maker gap;
  Computation* e = gap.Comp("main", true);
  e->set_root(gap.Param(e, 1, F32Verifier({}), "p1"));
  EXPECT_EQ(gap.Message(), "computation 'main' has parameter(1) but no parameter(0); number "
                           "parameters 0, 1, 2, ... without gaps");
  Maker dup;
  Computation* d = dup.Comp("main", true);
  d->set_root(dup.Param(d, 0, F32Verifier({}), "a"));
  dup.Param(d, 0, F32Verifier({}), "b");
  EXPECT_EQ(dup.Message(), "computation 'main' has parameter(0) twice: 'a' and 'b'; number "
                           "parameters 0, 1, 2, ... once each");
}

TEST(VerifierTest, RejectsModuleWithoutEntry) {
  Maker m("lonely");
  m.Adder();
  EXPECT_EQ(m.Message(), "module 'lonely' has no ENTRY computation");
}

TEST(VerifierTest, RejectsCycles) {
  Maker m;
  Computation* e = m.Comp("main", true);
  Instruction* x = m.Param(e, 0, F32Verifier({}), "x");
  Instruction* a = m.Add(e, Opcode::kAdd, F32Verifier({}), {x, x}, "a");
  Instruction* b = m.Add(e, Opcode::kNegate, F32Verifier({}), {a}, "b");
  a->ReplaceOperandWith(1, b);
  e->set_root(b);
  EXPECT_EQ(m.Message(), "computation 'main' has a cycle through 'a' (an instruction depends on "
                         "itself)");
}

TEST(VerifierTest, RejectsCallsOfTheEntryAndRecursion) {
  Maker m;
  Computation* e = m.Comp("main", true);
  Instruction* x = m.Param(e, 0, F32Verifier({}), "x");
  Instruction* c = m.Add(e, Opcode::kCall, F32Verifier({}), {x}, "c");
  c->AddCall(CallRole::kToApply, e);
  e->set_root(c);
  EXPECT_EQ(m.Message(), "computation 'main' calls itself (through 'main'); HLO has no recursion");
}

TEST(VerifierTest, RejectsShardingThatDoesNotFitTheShape) {
  Maker m;
  m.module().mutable_config().num_partitions = 4;
  Computation* e = m.Comp("main", true);
  Instruction* x = m.Param(e, 0, F32Verifier({8}), "x");
  x->set_sharding(HloSharding::Parse("{devices=[2,2]0,1,2,3}").value());
  e->set_root(x);
  EXPECT_EQ(m.Message(),
            "instruction 'x' (parameter): sharding {devices=[2,2]0,1,2,3} on shape f32[8]: the "
            "tile assignment splits 2 data dims but the shape has rank 1; give one tile count per "
            "array dim (subgroup dims come after)");
}

TEST(VerifierTest, RejectsShardingForTheWrongPartitionCount) {
  Maker m;
  m.module().mutable_config().num_partitions = 8;
  Computation* e = m.Comp("main", true);
  Instruction* x = m.Param(e, 0, F32Verifier({8}), "x");
  x->set_sharding(HloSharding::Parse("{devices=[4]0,1,2,3}").value());
  e->set_root(x);
  EXPECT_EQ(m.Message(),
            "instruction 'x' (parameter): sharding {devices=[4]0,1,2,3} on shape f32[8]: "
            "tile_assignment should have 8 devices but has 4; a tiled sharding places a tile on "
            "every device");
}

TEST(VerifierTest, RejectsAllGatherThatDisagreesWithItsGroups) {
  Maker m;
  Computation* e = m.Comp("main", true);
  Instruction* x = m.Param(e, 0, F32Verifier({2, 4}), "x");
  Attributes at;
  at.dimensions = std::vector<int64_t>{0};
  at.replica_groups.emplace();
  at.replica_groups->groups = {{0, 1, 2, 3}};
  e->set_root(m.Add(e, Opcode::kAllGather, F32Verifier({4, 4}), {x}, "ag", at));
  EXPECT_EQ(m.Message(), "instruction 'ag' (all-gather): declared shape f32[4,4] differs from "
                         "the inferred shape f32[8,4] (operands: f32[2,4] x)");
}

TEST(VerifierTest, RejectsConditionalBranchesWithDifferentResults) {
  Maker m;
  Computation* t = m.Comp("t");
  t->set_root(m.Param(t, 0, F32Verifier({}), "a"));
  Computation* f = m.Comp("f");
  Instruction* b = m.Param(f, 0, F32Verifier({}), "b");
  f->set_root(m.Add(f, Opcode::kConvert, Shape(DType::kS32, {}), {b}, "cv"));
  Computation* e = m.Comp("main", true);
  Instruction* p = m.Param(e, 0, Shape(DType::kPred, {}), "p");
  Instruction* x = m.Param(e, 1, F32Verifier({}), "x");
  Instruction* c = m.Add(e, Opcode::kConditional, F32Verifier({}), {p, x, x}, "c");
  c->AddCall(CallRole::kTrueComputation, t);
  c->AddCall(CallRole::kFalseComputation, f);
  e->set_root(c);
  EXPECT_EQ(m.Message(), "instruction 'c' (conditional): branch 1 returns s32[] but branch 0 "
                         "returns f32[]");
}

TEST(VerifierTest, RejectsLayoutWithWrongDims) {
  Maker m;
  Computation* e = m.Comp("main", true);
  Shape s = F32Verifier({2, 3});
  s.set_layout(Layout{{0, 0}, ""});
  e->set_root(m.Param(e, 0, s, "x"));
  EXPECT_EQ(m.Message(), "instruction 'x' (parameter): layout {0,0} of f32[2,3]{0,0} must list "
                         "each of the 2 dims once");
}

TEST(VerifierTest, NamesTheComputationOfNonEntryInstructions) {
  Maker m;
  Computation* c = m.Comp("helper");
  Instruction* x = m.Param(c, 0, F32Verifier({2}), "x");
  c->set_root(m.Add(c, Opcode::kExp, Shape(DType::kS32, {2}), {x}, "e"));
  Computation* e = m.Comp("main", true);
  Instruction* p = m.Param(e, 0, F32Verifier({2}), "p");
  Instruction* call = m.Add(e, Opcode::kCall, Shape(DType::kS32, {2}), {p}, "call");
  call->AddCall(CallRole::kToApply, c);
  e->set_root(call);
  EXPECT_EQ(m.Message(), "instruction 'e' (exponential) in computation 'helper': declared shape "
                         "s32[2] differs from the inferred shape f32[2] (operands: f32[2] x)");
}

}  // namespace
}  // namespace xs
