// Building and editing IR through the C++ API: ownership, users, names, parameters, traversal
// orders, removal, clone and structural equality.
#include "xshard/ir/module.h"

#include <gtest/gtest.h>

#include "xshard/ir/module_equal.h"

namespace xs {
namespace {

Instruction* Param(Computation* c, int n, Shape s, std::string name) {
  auto p = Instruction::Create(Opcode::kParameter, std::move(s), {}, std::move(name));
  p->mutable_attrs().parameter_number = n;
  return c->AddInstruction(std::move(p));
}

// main(x, y) = negate(add(x, y)); sum(a, b) = add(a, b) called by reduce.
std::unique_ptr<Module> MakeModule() {
  auto m = std::make_unique<Module>("m");
  Computation* sum = m->AddComputation(std::make_unique<Computation>("sum"));
  Instruction* a = Param(sum, 0, Shape(DType::kF32, {}), "a");
  Instruction* b = Param(sum, 1, Shape(DType::kF32, {}), "b");
  sum->set_root(sum->AddInstruction(Instruction::Create(Opcode::kAdd, a->shape(), {a, b}, "s")));
  Computation* main = m->AddComputation(std::make_unique<Computation>("main"), true);
  Shape v(DType::kF32, {4});
  Instruction* y = Param(main, 1, v, "y");
  Instruction* x = Param(main, 0, v, "x");
  Instruction* add = main->AddInstruction(Instruction::Create(Opcode::kAdd, v, {x, y}, "add"));
  Instruction* neg = main->AddInstruction(Instruction::Create(Opcode::kNegate, v, {add}, "neg"));
  auto zero = Instruction::Create(Opcode::kConstant, Shape(DType::kF32, {}), {}, "zero");
  zero->mutable_attrs().literal = Literal{Array::Scalar<float>(0), {}, false};
  Instruction* z = main->AddInstruction(std::move(zero));
  auto red = Instruction::Create(Opcode::kReduce, Shape(DType::kF32, {}), {neg, z}, "red");
  red->mutable_attrs().dimensions = std::vector<int64_t>{0};
  red->AddCall(CallRole::kToApply, sum);
  main->set_root(main->AddInstruction(std::move(red)));
  return m;
}

std::vector<std::string> Names(const std::vector<Instruction*>& v) {
  std::vector<std::string> out;
  for (auto* i : v) out.push_back(i->name());
  return out;
}

TEST(Module, TracksUsersParametersAndCalls) {
  auto m = MakeModule();
  Computation* main = m->entry();
  ASSERT_EQ(main->name(), "main");
  EXPECT_EQ(main->num_parameters(), 2);
  EXPECT_EQ(main->parameter(0)->name(), "x");
  EXPECT_EQ(main->parameter(1)->name(), "y");
  Instruction* add = main->GetInstruction("add");
  EXPECT_EQ(Names(add->users()), std::vector<std::string>{"neg"});
  EXPECT_EQ(Names(main->parameter(0)->users()), std::vector<std::string>{"add"});
  EXPECT_EQ(main->root()->to_apply(), m->GetComputation("sum"));
  EXPECT_TRUE(main->root()->IsRoot());
  EXPECT_TRUE(main->IsEntry());
  EXPECT_EQ(main->root()->dimensions(), std::vector<int64_t>{0});
}

TEST(Module, DuplicateNamesGetASuffixAndEmptyNamesTheOpcode) {
  auto m = MakeModule();
  Computation* main = m->entry();
  Instruction* x = main->parameter(0);
  Instruction* a2 = main->AddInstruction(Instruction::Create(Opcode::kAdd, x->shape(), {x, x}, "add"));
  EXPECT_EQ(a2->name(), "add.1");
  Instruction* anon = main->AddInstruction(Instruction::Create(Opcode::kCopy, x->shape(), {x}));
  EXPECT_EQ(anon->name(), "copy");
  EXPECT_EQ(Names(x->users()), (std::vector<std::string>{"add", "add.1", "copy"}));  // once each
  Computation* dup = m->AddComputation(std::make_unique<Computation>("sum"));
  EXPECT_EQ(dup->name(), "sum.1");
}

TEST(Module, PostOrdersPutOperandsAndCalleesFirst) {
  auto m = MakeModule();
  EXPECT_EQ(Names(m->entry()->MakeInstructionPostOrder()),
            (std::vector<std::string>{"x", "y", "add", "neg", "zero", "red"}));
  std::vector<std::string> comps;
  for (Computation* c : m->MakeComputationPostOrder()) comps.push_back(c->name());
  EXPECT_EQ(comps, (std::vector<std::string>{"sum", "main"}));
}

TEST(Module, ReplaceAllUsesWithRewiresUsersAndRoot) {
  auto m = MakeModule();
  Computation* main = m->entry();
  Instruction* add = main->GetInstruction("add");
  Instruction* x = main->parameter(0);
  add->ReplaceAllUsesWith(x);
  EXPECT_EQ(main->GetInstruction("neg")->operand(0), x);
  EXPECT_TRUE(add->users().empty());
  EXPECT_TRUE(main->RemoveInstruction(add).ok());
  EXPECT_EQ(main->GetInstruction("add"), nullptr);
  EXPECT_EQ(Names(main->parameter(1)->users()), std::vector<std::string>{});
  Instruction* red = main->root();
  Instruction* neg = main->GetInstruction("neg");
  neg->ReplaceAllUsesWith(main->GetInstruction("zero"));
  EXPECT_EQ(red->operand(0)->name(), "zero");
}

TEST(Module, RemovingAnInstructionInUseIsAnErrorNamingAUser) {
  auto m = MakeModule();
  Status s = m->entry()->RemoveInstruction(m->entry()->GetInstruction("add"));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("'add'"), std::string::npos);
  EXPECT_NE(s.message().find("'neg'"), std::string::npos);
  Status c = m->RemoveComputation(m->GetComputation("sum"));
  EXPECT_NE(c.message().find("instruction 'red' in 'main' calls it"), std::string::npos);
}

TEST(Module, ControlDependenciesAreOrderedInPostOrder) {
  auto m = MakeModule();
  Computation* main = m->entry();
  Instruction* zero = main->GetInstruction("zero");
  Instruction* x = main->parameter(0);
  zero->AddControlDependencyTo(x);  // zero must run before x
  auto order = Names(main->MakeInstructionPostOrder());
  auto pos = [&](std::string_view n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  EXPECT_LT(pos("zero"), pos("x"));
  EXPECT_EQ(Names(x->control_predecessors()), std::vector<std::string>{"zero"});
  x->DropAllControlDependencies();
  EXPECT_TRUE(zero->control_successors().empty());
}

TEST(Module, CloneIsDeepAndStructurallyEqual) {
  auto m = MakeModule();
  auto c = m->Clone();
  EXPECT_TRUE(CheckModulesEqual(*m, *c).ok());
  EXPECT_NE(c->entry(), m->entry());
  EXPECT_EQ(c->entry()->root()->to_apply(), c->GetComputation("sum"));
  c->entry()->GetInstruction("neg")->set_shape(Shape(DType::kF32, {5}));
  Status s = CheckModulesEqual(*m, *c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("computation 'main', instruction 'neg': shape f32[4] vs f32[5]"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace xs

namespace xs {
namespace {

// (x, y) -> x op y for the ops collectives reduce with; anything else is not such a reducer.
TEST(CollectiveReductionTest, OneBinaryOpOfTheTwoParameters) {
  const Shape s(DType::kF32, {});
  auto reducer = [&](Opcode op, bool same_param, bool extra_op) {
    auto c = std::make_unique<Computation>("r");
    Instruction* a = Param(c.get(), 0, s, "a");
    Instruction* b = Param(c.get(), 1, s, "b");
    Instruction* rhs = same_param ? a : b;
    if (extra_op) rhs = c->AddInstruction(Instruction::Create(Opcode::kNegate, s, {rhs}, "n"));
    c->set_root(c->AddInstruction(Instruction::Create(op, s, {a, rhs}, "root")));
    return c;
  };
  for (Opcode op : {Opcode::kAdd, Opcode::kMultiply, Opcode::kMaximum, Opcode::kMinimum, Opcode::kAnd, Opcode::kOr}) {
    EXPECT_EQ(CollectiveReduction(*reducer(op, false, false)), op) << OpcodeName(op);
  }
  EXPECT_EQ(CollectiveReduction(*reducer(Opcode::kSubtract, false, false)), std::nullopt);
  EXPECT_EQ(CollectiveReduction(*reducer(Opcode::kXor, false, false)), std::nullopt);
  EXPECT_EQ(CollectiveReduction(*reducer(Opcode::kAdd, true, false)), std::nullopt);  // x + x
  EXPECT_EQ(CollectiveReduction(*reducer(Opcode::kAdd, false, true)), std::nullopt);  // x + -y
}

}  // namespace
}  // namespace xs
