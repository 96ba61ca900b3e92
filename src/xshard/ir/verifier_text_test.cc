// Verifier rules written as HLO text: each case is a small module with one mistake and the message
// the verifier must give (after the text parser accepted it).
#include <gtest/gtest.h>

#include "xshard/ir/verifier.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

struct Case {
  const char* name;
  const char* hlo;
  const char* message;  // "" when the module is valid
};

const Case kCases[] = {
    {"ValidReduceScatterWithGroups",
     R"(HloModule m
sum { a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT s = f32[] add(a, b) }
ENTRY e { x = f32[8,2] parameter(0)
  ROOT rs = f32[4,2] reduce-scatter(x), replica_groups={{0,1},{2,3}}, dimensions={0},
      to_apply=sum })",
     ""},
    {"ReduceScatterIndivisible",
     R"(HloModule m
sum { a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT s = f32[] add(a, b) }
ENTRY e { x = f32[6,2] parameter(0)
  ROOT rs = f32[1,2] reduce-scatter(x), replica_groups={{0,1,2,3}}, dimensions={0},
      to_apply=sum })",
     "instruction 'rs' (reduce-scatter): reduce-scatter dim 0 of f32[6,2] (size 6) does not "
     "divide by the group size 4"},
    {"AllReduceReducerOfWrongType",
     R"(HloModule m
sum { a = s32[] parameter(0)
      b = s32[] parameter(1)
      ROOT s = s32[] add(a, b) }
ENTRY e { x = f32[8] parameter(0)
  ROOT ar = f32[8] all-reduce(x), replica_groups={}, to_apply=sum })",
     "instruction 'ar' (all-reduce): reducer accumulator s32[] differs from the init value f32[]"},
    {"UnevenReplicaGroups",
     R"(HloModule m
ENTRY e { x = f32[8] parameter(0)
  ROOT ag = f32[16] all-gather(x), replica_groups={{0,1},{2}}, dimensions={0} })",
     "instruction 'ag' (all-gather): replica_groups must all have the same size, got 2 and 1"},
    {"AllGatherUsesNumPartitionsWithChannel",
     R"(HloModule m, num_partitions=4
ENTRY e { x = f32[8] parameter(0)
  ROOT ag = f32[16] all-gather(x), channel_id=1, dimensions={0} })",
     "instruction 'ag' (all-gather): declared shape f32[16] differs from the inferred shape "
     "f32[32] (operands: f32[8] x)"},
    {"AllToAllTupleFormCountsOperands",
     R"(HloModule m
ENTRY e { x = f32[8] parameter(0)
  ROOT a2a = (f32[8], f32[8]) all-to-all(x, x), replica_groups={{0,1,2}} })",
     "instruction 'a2a' (all-to-all): tuple all-to-all over groups of 3 takes 3 operands, got 2"},
    {"WhileBodyChangesTheState",
     R"(HloModule m
cond { s = f32[4] parameter(0)
       ROOT t = pred[] constant(true) }
body { s = f32[4] parameter(0)
       ROOT r = f32[2] slice(s), slice={[0:2]} }
ENTRY e { x = f32[4] parameter(0)
  ROOT w = f32[4] while(x), condition=cond, body=body })",
     "instruction 'w' (while): while state f32[4] must equal the body parameter f32[4], the body "
     "result f32[2] and the condition parameter f32[4]"},
    {"ConditionalPredNeedsTrueAndFalse",
     R"(HloModule m
b0 { p = f32[4] parameter(0)
     ROOT c = f32[4] ceil(p) }
b1 { p = f32[4] parameter(0)
     ROOT f = f32[4] floor(p) }
ENTRY e { x = f32[4] parameter(0)
  i = pred[] parameter(1)
  ROOT c = f32[4] conditional(i, x, x), branch_computations={b0, b1} })",
     "instruction 'c' (conditional): a conditional with a pred[] index needs true_computation= "
     "and false_computation=, not branch_computations="},
    {"CallArgumentMismatch",
     R"(HloModule m
f { p = f32[4] parameter(0)
    ROOT n = f32[4] negate(p) }
ENTRY e { x = f32[5] parameter(0)
  ROOT c = f32[4] call(x), to_apply=f })",
     "instruction 'c' (call): argument 0 f32[5] does not match parameter 0 f32[4] of the called "
     "computation"},
    {"SortComparatorMustReturnPred",
     R"(HloModule m
cmp { a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT m = f32[] maximum(a, b) }
ENTRY e { x = f32[4] parameter(0)
  ROOT s = f32[4] sort(x), dimensions={0}, to_apply=cmp })",
     "instruction 's' (sort): the comparator (f32[], f32[]) -> f32[] must take 2 scalars and "
     "return pred[]"},
    {"ScatterWindowTooLarge",
     R"(HloModule m
sum { a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT s = f32[] add(a, b) }
ENTRY e { x = f32[5,8] parameter(0)
  i = s32[3] parameter(1)
  u = f32[3,9] parameter(2)
  ROOT s = f32[5,8] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sum })",
     "instruction 's' (scatter): updates window dim 1 of f32[3,9] exceeds the operand bound 8"},
    {"ConvolutionFeatureMismatch",
     R"(HloModule m
ENTRY e { x = f32[1,5,5,3] parameter(0)
  k = f32[3,3,2,8] parameter(1)
  ROOT c = f32[1,3,3,8] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f })",
     "instruction 'c' (convolution): lhs feature size 3 / feature_group_count 1 must equal the "
     "kernel input feature size 2 (lhs f32[1,5,5,3], rhs f32[3,3,2,8])"},
    {"GetTupleElementOutOfRange",
     R"(HloModule m
ENTRY e { t = (f32[], s32[]) parameter(0)
  ROOT g = f32[] get-tuple-element(t), index=2 })",
     "instruction 'g' (get-tuple-element): tuple index 2 is out of range for (f32[], s32[]) (2 "
     "elements)"},
    {"CustomCallLayoutConstraintCount",
     R"(HloModule m
ENTRY e { a = f32[2] parameter(0)
  b = f32[3] parameter(1)
  ROOT c = f32[4] custom-call(a, b), custom_call_target="x",
      operand_layout_constraints={f32[2]{0}} })",
     "instruction 'c' (custom-call): operand_layout_constraints lists 1 shapes for 2 operands"},
    {"AsyncComputationWrappedTwice",
     R"(HloModule m
w { p = f32[4] parameter(0)
    ROOT c = f32[8] custom-call(p), custom_call_target="foo" }
ENTRY e { x = f32[4] parameter(0)
  s0 = ((f32[4]), f32[8], s32[]) async-start(x), calls=w
  d0 = f32[8] async-done(s0), calls=w
  s1 = ((f32[4]), f32[8], s32[]) async-start(x), calls=w
  ROOT d1 = f32[8] async-done(s1), calls=w })",
     "instruction 's1' (async-start): computation 'w' is already wrapped by 's0'; give each "
     "async-start its own computation"},
    {"AsyncUpdateOnAnotherThread",
     R"(HloModule m
ENTRY e { x = f32[4] parameter(0)
  s = ((f32[4]), f32[8], s32[]) custom-call-start(x), custom_call_target="foo"
  u = ((f32[4]), f32[8], s32[]) custom-call-update(s), async_execution_thread="other"
  ROOT d = f32[8] custom-call-done(u) })",
     "instruction 'u' (async-update): async_execution_thread \"other\" differs from the chain's "
     "thread \"main\""},
    {"AsyncStartDeclaresWrongShape",
     R"(HloModule m
w { p = f32[4] parameter(0)
    ROOT n = f32[4] negate(p) }
ENTRY e { x = f32[4] parameter(0)
  s = (f32[4], f32[4], s32[]) async-start(x), calls=w
  ROOT d = f32[4] async-done(s), calls=w })",
     "instruction 's' (async-start): async-start must return ((f32[4]), f32[4], context...) for "
     "its wrapped computation, declares (f32[4], f32[4], s32[])"},
};

class VerifierTextTest : public ::testing::TestWithParam<Case> {};

TEST_P(VerifierTextTest, GivesThePinnedMessage) {
  const Case& c = GetParam();
  auto module = ParseHloModule(c.hlo, c.name);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Status st = Verify(**module);
  EXPECT_EQ(st.message(), c.message);
}

INSTANTIATE_TEST_SUITE_P(Rules, VerifierTextTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace xs
