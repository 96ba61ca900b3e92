// CombineAllReduces on small SPMD modules written as HLO text: which all-reduces combine (same
// groups, reduction and element type, independent, within the byte cap) and the result's form.
// Expected groups are worked out by hand from the modules' dependences.
#include "xshard/passes/all_reduce_combine.h"

#include <gtest/gtest.h>

#include <map>

#include "xshard/ir/verifier.h"
#include "xshard/text/parse_test_util.h"
#include "xshard/text/printer.h"

namespace xs {
namespace {

using xs::testing::ParseOrFail;

constexpr const char* kReducers = R"(HloModule m, num_partitions=4
add { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT s = f32[] add(a, b) }
add2 { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT s = f32[] add(b, a) }
max { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT s = f32[] maximum(a, b) }
addi { a = s32[] parameter(0)
 b = s32[] parameter(1)
 ROOT s = s32[] add(a, b) }
)";

std::unique_ptr<Module> Parse(const std::string& entry) { return ParseOrFail(std::string(kReducers) + entry); }

std::vector<std::vector<std::string>> Members(const std::vector<CombinedAllReduce>& r) {
  std::vector<std::vector<std::string>> out;
  for (const CombinedAllReduce& c : r) out.push_back(c.members);
  return out;
}

int Count(const Computation& c, Opcode op) {
  int n = 0;
  for (const Instruction* i : c.instructions()) n += i->opcode() == op;
  return n;
}

TEST(AllReduceCombineTest, IndependentAllReducesOfOneKindBecomeOneTupleAllReduce) {
  std::unique_ptr<Module> m = Parse(R"(ENTRY e {
  x = f32[4] parameter(0)
  y = f32[2,3] parameter(1)
  i = s32[8] parameter(2)
  a = f32[4] all-reduce(x), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add
  b = f32[2,3] all-reduce(y), channel_id=2, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add2
  c = s32[8] all-reduce(i), channel_id=3, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=addi
  d = f32[4] all-reduce(x), channel_id=4, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=add
  e = f32[4] all-reduce(x), channel_id=5, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=max
  ab = f32[4] add(a, d)
  ROOT t = (f32[4], f32[2,3], s32[8], f32[4]) tuple(ab, b, c, e)
})");
  StatusOr<std::vector<CombinedAllReduce>> r = CombineAllReduces(*m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Only a and b agree on groups, reduction (add, whichever operand order) and type.
  EXPECT_EQ(Members(*r), (std::vector<std::vector<std::string>>{{"a", "b"}}));
  ASSERT_TRUE(Verify(*m).ok()) << PrintHloModule(*m);
  const Instruction* combined = m->entry()->GetInstruction((*r)[0].name);
  ASSERT_NE(combined, nullptr);
  EXPECT_EQ(combined->shape().ToString(false), "(f32[4], f32[2,3])");
  EXPECT_EQ(combined->operand(0)->name(), "x");
  EXPECT_EQ(combined->operand(1)->name(), "y");
  // What read a and b reads the elements, named as they were.
  const Instruction* a = m->entry()->GetInstruction("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->opcode(), Opcode::kGetTupleElement);
  EXPECT_EQ(a->attrs().tuple_index, 0);
  EXPECT_EQ(m->entry()->GetInstruction("b")->attrs().tuple_index, 1);
  EXPECT_EQ(Count(*m->entry(), Opcode::kAllReduce), 4);
}

TEST(AllReduceCombineTest, AnAllReduceOfAnotherOnesResultStaysApart) {
  std::unique_ptr<Module> m = Parse(R"(ENTRY e {
  x = f32[4] parameter(0)
  a = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  n = f32[4] negate(a)
  b = f32[4] all-reduce(n), replica_groups={}, to_apply=add
  c = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  ROOT t = (f32[4], f32[4]) tuple(b, c)
})");
  StatusOr<std::vector<CombinedAllReduce>> r = CombineAllReduces(*m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // b depends on a, which closes a's group; c joins b's.
  EXPECT_EQ(Members(*r), (std::vector<std::vector<std::string>>{{"b", "c"}}));
  EXPECT_TRUE(Verify(*m).ok()) << PrintHloModule(*m);
}

// Two kinds interleaved so that greedy groups without closing would form a cycle: x1 depends on
// y0 and y1 on x0; {x0, x1} and {y0, y1} combined would each wait for the other.
TEST(AllReduceCombineTest, GroupsNeverWaitForEachOther) {
  std::unique_ptr<Module> m = Parse(R"(ENTRY e {
  p = f32[4] parameter(0)
  q = s32[4] parameter(1)
  x0 = f32[4] all-reduce(p), replica_groups={}, to_apply=add
  y0 = s32[4] all-reduce(q), replica_groups={}, to_apply=addi
  cy = f32[4] convert(y0)
  x1 = f32[4] all-reduce(cy), replica_groups={}, to_apply=add
  cx = s32[4] convert(x0)
  y1 = s32[4] all-reduce(cx), replica_groups={}, to_apply=addi
  ROOT t = (f32[4], s32[4]) tuple(x1, y1)
})");
  StatusOr<std::vector<CombinedAllReduce>> r = CombineAllReduces(*m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(Verify(*m).ok()) << PrintHloModule(*m);
  // Post order puts them x0, y0, x1, y1 (or y0 before x0): whichever pair forms, the module
  // must stay acyclic, which MakeInstructionPostOrder reaching every instruction shows.
  EXPECT_EQ(m->entry()->MakeInstructionPostOrder().size(), static_cast<size_t>(m->entry()->instruction_count()));
  for (const CombinedAllReduce& c : *r) EXPECT_EQ(c.members.size(), 2u);
  EXPECT_LE(r->size(), 1u);
}

TEST(AllReduceCombineTest, TheByteCapKeepsLargeAllReducesAlone) {
  std::unique_ptr<Module> m = Parse(R"(ENTRY e {
  x = f32[4] parameter(0)
  big = f32[1024] parameter(1)
  a = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  b = f32[1024] all-reduce(big), replica_groups={}, to_apply=add
  c = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  d = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  ROOT t = (f32[4], f32[1024], f32[4], f32[4]) tuple(a, b, c, d)
})");
  // 4 KiB of b is over the cap; a and c (32 bytes) fit, d would make 48 > 40.
  StatusOr<std::vector<CombinedAllReduce>> r = CombineAllReduces(*m, 40);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Members(*r), (std::vector<std::vector<std::string>>{{"a", "c"}}));
  EXPECT_TRUE(Verify(*m).ok()) << PrintHloModule(*m);
  // A cap of 0 changes nothing.
  std::unique_ptr<Module> m2 = Parse(R"(ENTRY e {
  x = f32[4] parameter(0)
  a = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  c = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  ROOT t = (f32[4], f32[4]) tuple(a, c)
})");
  StatusOr<std::vector<CombinedAllReduce>> none = CombineAllReduces(*m2, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(AllReduceCombineTest, CombinesInsideLoopBodiesAndKeepsTheRootAnElement) {
  std::unique_ptr<Module> m = Parse(R"(body {
  s = (f32[4], f32[4]) parameter(0)
  u = f32[4] get-tuple-element(s), index=0
  v = f32[4] get-tuple-element(s), index=1
  au = f32[4] all-reduce(u), replica_groups={}, to_apply=add
  av = f32[4] all-reduce(v), replica_groups={}, to_apply=add
  ROOT r = (f32[4], f32[4]) tuple(au, av)
}
cond {
  s = (f32[4], f32[4]) parameter(0)
  ROOT f = pred[] constant(false)
}
ENTRY e {
  x = f32[4] parameter(0)
  init = (f32[4], f32[4]) tuple(x, x)
  w = (f32[4], f32[4]) while(init), condition=cond, body=body
  g = f32[4] get-tuple-element(w), index=0
  a = f32[4] all-reduce(g), replica_groups={}, to_apply=add
  ROOT b = f32[4] all-reduce(x), replica_groups={}, to_apply=add
})");
  StatusOr<std::vector<CombinedAllReduce>> r = CombineAllReduces(*m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(Verify(*m).ok()) << PrintHloModule(*m);
  std::map<std::string, std::vector<std::string>> by_computation;
  for (const CombinedAllReduce& c : *r) by_computation[c.computation] = c.members;
  // The body's two; the entry's a (after the loop) and b (the root) are independent too.
  EXPECT_EQ(by_computation,
            (std::map<std::string, std::vector<std::string>>{{"body", {"au", "av"}}, {"e", {"a", "b"}}}));
  EXPECT_EQ(m->entry()->root()->opcode(), Opcode::kGetTupleElement);
  EXPECT_EQ(m->entry()->root()->name(), "b");
}

}  // namespace
}  // namespace xs
