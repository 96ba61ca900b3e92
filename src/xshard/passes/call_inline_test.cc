// InlineCalls on small modules written as HLO text: what is inlined, what stays a call, and that
// the result is a valid module computing through the same operations.
#include "xshard/passes/call_inline.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "xshard/ir/verifier.h"
#include "xshard/testing/value_or_fail.h"
#include "xshard/text/parse_test_util.h"
#include "xshard/text/printer.h"

namespace xs {
namespace {

using xs::testing::ParseOrFail;

int CountOps(const Computation& c, Opcode op) {
  int n = 0;
  for (const Instruction* i : c.instructions()) n += i->opcode() == op;
  return n;
}

TEST(InlineCallsTest, InlinesNestedAndSharedCalleesAndDropsThem) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
inner { a = f32[4] parameter(0)
 ROOT n = f32[4] negate(a) }
outer { x = f32[4] parameter(0)
 y = f32[4] parameter(1)
 c = f32[4] call(x), to_apply=inner
 ROOT s = f32[4] add(c, y) }
ENTRY e {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  r1 = f32[4] call(p, q), to_apply=outer
  r2 = f32[4] call(q, p), to_apply=outer
  ROOT t = (f32[4], f32[4]) tuple(r1, r2)
})");
  StatusOr<bool> changed = InlineCalls(*m);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(*m).ok()) << Verify(*m).ToString() << PrintHloModule(*m);
  const Computation& e = *m->entry();
  EXPECT_EQ(CountOps(e, Opcode::kCall), 0);
  EXPECT_EQ(CountOps(e, Opcode::kNegate), 2);
  EXPECT_EQ(CountOps(e, Opcode::kAdd), 2);
  EXPECT_EQ(m->GetComputation("outer"), nullptr);
  EXPECT_EQ(m->GetComputation("inner"), nullptr);
  // r2 = negate(q) + p: the second copy reads the second call's operands in their order.
  const Instruction* second = e.root()->operand(1);
  ASSERT_EQ(second->opcode(), Opcode::kAdd);
  EXPECT_EQ(second->operand(0)->opcode(), Opcode::kNegate);
  EXPECT_EQ(second->operand(0)->operand(0)->name(), "q");
  EXPECT_EQ(second->operand(1)->name(), "p");
  EXPECT_FALSE(*InlineCalls(*m));
}

TEST(InlineCallsTest, TheCallsShardingMovesToTheRootAndACallAtTheRootIsReplaced) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
f { a = f32[8] parameter(0)
 ROOT n = f32[8] negate(a) }
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[8] call(p), to_apply=f, sharding={devices=[2]<=[2]}
})");
  ASSERT_TRUE(*InlineCalls(*m));
  const Instruction* root = m->entry()->root();
  EXPECT_EQ(root->opcode(), Opcode::kNegate);
  ASSERT_TRUE(root->has_sharding());
  EXPECT_EQ(*root->sharding(), testing::ValueOrFail(HloSharding::Parse("{devices=[2]<=[2]}")));
}

TEST(InlineCallsTest, ACalleeThatReturnsAParameterForwardsTheOperand) {
  std::unique_ptr<Module> v = ParseOrFail(R"(HloModule m
id { a = f32[4] parameter(0)
 ROOT b = f32[4] parameter(1) }
ENTRY e {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  c = f32[4] call(p, q), to_apply=id
  ROOT n = f32[4] negate(c)
})");
  ASSERT_TRUE(*InlineCalls(*v));
  EXPECT_EQ(v->entry()->root()->operand(0)->name(), "q");
  EXPECT_EQ(CountOps(*v->entry(), Opcode::kCall), 0);
}

TEST(InlineCallsTest, ManualRegionsControlEdgesAndShardedParameterRootsStayCalls) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
body { a = f32[2] parameter(0), sharding={manual}
 ROOT n = f32[2] negate(a), sharding={manual} }
f { a = f32[8] parameter(0)
 ROOT n = f32[8] negate(a) }
g { ROOT a = f32[8] parameter(0) }
ENTRY e {
  p = f32[8] parameter(0), sharding={devices=[4]<=[4]}
  s = f32[8] custom-call(p), custom_call_target="Sharding", sharding={devices=[4]<=[4]}
  l = f32[2] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  c = f32[2] call(l), to_apply=body, sharding={manual}
  o = f32[8] custom-call(c), custom_call_target="SPMDShardToFullShape", sharding={devices=[4]<=[4]}
  k = f32[8] call(p), to_apply=f, control-predecessors={o}
  h = f32[8] call(k), to_apply=g, sharding={replicated}
  ROOT t = (f32[8], f32[8]) tuple(o, h)
})");
  EXPECT_FALSE(*InlineCalls(*m));
  EXPECT_EQ(CountOps(*m->entry(), Opcode::kCall), 3);
  EXPECT_NE(m->GetComputation("body"), nullptr);
}

// A call inside a shard_map body (here in a loop of the body, as ring attention's fori_loop lowers)
// stays: the body's values are manual because of where they are, not by annotation.
TEST(InlineCallsTest, CallsInsideAManualRegionStay) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
step { a = f32[2] parameter(0)
 ROOT n = f32[2] negate(a) }
cond { s = (s32[], f32[2]) parameter(0)
 i = s32[] get-tuple-element(s), index=0
 k = s32[] constant(3)
 ROOT lt = pred[] compare(i, k), direction=LT }
loop { s = (s32[], f32[2]) parameter(0)
 i = s32[] get-tuple-element(s), index=0
 v = f32[2] get-tuple-element(s), index=1
 w = f32[2] call(v), to_apply=step
 one = s32[] constant(1)
 j = s32[] add(i, one)
 ROOT t = (s32[], f32[2]) tuple(j, w) }
body { a = f32[2] parameter(0)
 z = s32[] constant(0)
 t = (s32[], f32[2]) tuple(z, a)
 w = (s32[], f32[2]) while(t), condition=cond, body=loop
 ROOT r = f32[2] get-tuple-element(w), index=1 }
ENTRY e {
  p = f32[8] parameter(0), sharding={devices=[4]<=[4]}
  s = f32[8] custom-call(p), custom_call_target="Sharding", sharding={devices=[4]<=[4]}
  l = f32[2] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  c = f32[2] call(l), to_apply=body
  ROOT o = f32[8] custom-call(c), custom_call_target="SPMDShardToFullShape", sharding={devices=[4]<=[4]}
})");
  EXPECT_FALSE(*InlineCalls(*m));
  EXPECT_NE(m->GetComputation("step"), nullptr);
  EXPECT_EQ(CountOps(*m->GetComputation("loop"), Opcode::kCall), 1);
}

TEST(InlineCallsTest, ACalleeAlsoUsedAsAReducerStaysAndControlEdgesInsideAreCopied) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
sum { a = f32[] parameter(0)
 b = f32[] parameter(1)
 x = f32[] negate(a)
 ROOT s = f32[] add(a, b), control-predecessors={x} }
ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  r = f32[] reduce(p, z), dimensions={0}, to_apply=sum
  ROOT c = f32[] call(r, z), to_apply=sum
})");
  ASSERT_TRUE(*InlineCalls(*m));
  ASSERT_TRUE(Verify(*m).ok()) << Verify(*m).ToString();
  EXPECT_NE(m->GetComputation("sum"), nullptr);
  const Instruction* root = m->entry()->root();
  ASSERT_EQ(root->opcode(), Opcode::kAdd);
  ASSERT_EQ(root->control_predecessors().size(), 1u);
  EXPECT_EQ(root->control_predecessors()[0]->opcode(), Opcode::kNegate);
  EXPECT_EQ(root->control_predecessors()[0]->parent(), m->entry());
}

// Two loops running one body and condition, a conditional with one computation for both
// branches, and a nested loop in the shared body: each call site gets its own computation (the
// copies' own loops too); the shared reducer stays one computation.
TEST(FlattenCallGraphTest, EachLoopAndBranchGetsItsOwnComputation) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
sum { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT s = f32[] add(a, b) }
ib { p = (s32[], f32[4]) parameter(0)
 i = s32[] get-tuple-element(p), index=0
 one = s32[] constant(1)
 j = s32[] add(i, one)
 v = f32[4] get-tuple-element(p), index=1
 n = f32[4] negate(v)
 ROOT t = (s32[], f32[4]) tuple(j, n) }
cnd { p = (s32[], f32[4]) parameter(0)
 i = s32[] get-tuple-element(p), index=0
 k = s32[] constant(3)
 ROOT lt = pred[] compare(i, k), direction=LT }
body { p = (s32[], f32[4]) parameter(0)
 w = (s32[], f32[4]) while(p), condition=cnd, body=ib
 i = s32[] get-tuple-element(w), index=0
 one = s32[] constant(1)
 j = s32[] add(i, one)
 v = f32[4] get-tuple-element(w), index=1
 z = f32[] constant(0)
 r = f32[] reduce(v, z), dimensions={0}, to_apply=sum
 b = f32[4] broadcast(r), dimensions={}
 ROOT t = (s32[], f32[4]) tuple(j, b) }
br { x = f32[4] parameter(0)
 ROOT e = f32[4] exponential(x) }
ENTRY e {
  zero = s32[] constant(0)
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  a = (s32[], f32[4]) tuple(zero, x)
  b = (s32[], f32[4]) tuple(zero, y)
  w1 = (s32[], f32[4]) while(a), condition=cnd, body=body
  w2 = (s32[], f32[4]) while(b), condition=cnd, body=body
  v1 = f32[4] get-tuple-element(w1), index=1
  v2 = f32[4] get-tuple-element(w2), index=1
  k = s32[] parameter(2)
  c = f32[4] conditional(k, v1, v2), branch_computations={br, br}
  z = f32[] constant(0)
  r = f32[] reduce(c, z), dimensions={0}, to_apply=sum
  ROOT t = (f32[4], f32[4], f32[]) tuple(v1, c, r)
})");
  StatusOr<bool> changed = FlattenCallGraph(*m);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(*m).ok()) << Verify(*m).ToString() << PrintHloModule(*m);
  // Every control-flow computation is called from one place; the reducer from three.
  std::map<const Computation*, int> sites;
  for (const Computation* c : m->computations()) {
    for (const Instruction* inst : c->instructions()) {
      for (const CalledComputation& call : inst->calls()) ++sites[call.computation];
    }
  }
  const Computation* sum = m->GetComputation("sum");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sites[sum], 3);
  int control = 0;
  for (const auto& [comp, n] : sites) {
    if (comp == sum) continue;
    EXPECT_EQ(n, 1) << comp->name();
    ++control;
  }
  // Two outer loops (body + condition each), two inner loops (ib + cnd each), two branches.
  EXPECT_EQ(control, 10);
  const Instruction* w1 = m->entry()->GetInstruction("w1");
  const Instruction* w2 = m->entry()->GetInstruction("w2");
  EXPECT_EQ(w1->while_body()->name(), "body");
  EXPECT_NE(w2->while_body(), w1->while_body());
  EXPECT_EQ(CountOps(*w2->while_body(), Opcode::kReduce), 1);
  EXPECT_FALSE(*FlattenCallGraph(*m));
}

// Thirty levels of bodies that each run two loops of the next (2^30 call sites if every one were
// copied, as a fuzzed or generated module can nest them): copying stops at its budget, leaving
// the rest shared, and the module stays valid.
TEST(FlattenCallGraphTest, NestedSharedLoopsStopAtTheCopyBudget) {
  std::string text =
      "HloModule m\ncond { p = s32[] parameter(0)\n c = s32[] constant(3)\n"
      " ROOT lt = pred[] compare(p, c), direction=LT }\n"
      "L30 { p = s32[] parameter(0)\n one = s32[] constant(1)\n ROOT a = s32[] add(p, one) }\n";
  for (int i = 29; i >= 0; --i) {
    const std::string next = "L" + std::to_string(i + 1);
    text += (i == 0 ? std::string("ENTRY e") : "L" + std::to_string(i)) + " { p = s32[] parameter(0)\n" +
            " w1 = s32[] while(p), condition=cond, body=" + next + "\n" +
            " ROOT w2 = s32[] while(w1), condition=cond, body=" + next + " }\n";
  }
  std::unique_ptr<Module> m = ParseOrFail(text);
  const int before = m->computation_count();
  StatusOr<bool> changed = FlattenCallGraph(*m);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(*m).ok()) << Verify(*m).ToString();
  int64_t instructions = 0;
  for (const Computation* c : m->computations()) instructions += c->instruction_count();
  EXPECT_GT(m->computation_count(), before);
  EXPECT_LT(instructions, 50000);
  EXPECT_LE(m->computation_count(), before + 1000);
}

}  // namespace
}  // namespace xs
