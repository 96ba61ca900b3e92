// SplitConstantExpressions on small modules written as HLO text.
#include "xshard/passes/constant_split.h"

#include <gtest/gtest.h>

#include "xshard/ir/verifier.h"
#include "xshard/text/parse_test_util.h"

namespace xs {
namespace {

using xs::testing::ParseOrFail;

const Instruction* Get(const Module& m, const char* name) {
  const Instruction* inst = m.entry()->GetInstruction(name);
  EXPECT_NE(inst, nullptr) << name;
  return inst;
}

bool Split(Module& m) {
  StatusOr<bool> changed = SplitConstantExpressions(m);
  EXPECT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(Verify(m).ok());
  return changed.ok() && *changed;
}

TEST(SplitConstantsTest, ASharedBroadcastOfAConstantGetsACopyPerUser) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
ENTRY e {
  x = s32[32] parameter(0)
  y = s32[32] parameter(1)
  zero = s32[] constant(0)
  z = s32[32] broadcast(zero), dimensions={}
  a = pred[32] compare(x, z), direction=GT
  b = pred[32] compare(y, z), direction=LT
  ROOT t = (pred[32], pred[32]) tuple(a, b)
})");
  ASSERT_TRUE(Split(*m));
  const Instruction* za = Get(*m, "a")->operand(1);
  const Instruction* zb = Get(*m, "b")->operand(1);
  EXPECT_NE(za, zb);
  for (const Instruction* z : {za, zb}) {
    EXPECT_EQ(z->opcode(), Opcode::kBroadcast);
    EXPECT_EQ(z->user_count(), 1);
    EXPECT_EQ(z->operand(0), Get(*m, "zero"));  // the scalar is shared
  }
  EXPECT_EQ(zb, Get(*m, "z"));                    // the last user keeps the original
  EXPECT_EQ(m->entry()->instruction_count(), 8);  // x, y, zero, two broadcasts, a, b, t
}

TEST(SplitConstantsTest, ATreeOfIotaAndConstantsIsCopiedWhole) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
ENTRY e {
  x = f32[4,8] parameter(0)
  y = f32[8] parameter(1)
  i = s32[8] iota(), iota_dimension=0
  c = s32[] constant(3)
  cb = s32[8] broadcast(c), dimensions={}
  lt = pred[8] compare(i, cb), direction=LT
  f = f32[8] convert(lt)
  r = f32[1,8] reshape(f)
  s = f32[4,8] broadcast(f), dimensions={1}
  a = f32[4,8] multiply(x, s)
  b = f32[8] add(y, f)
  ROOT t = (f32[4,8], f32[8], f32[1,8]) tuple(a, b, r)
})");
  ASSERT_TRUE(Split(*m));
  // a reads s (its own: s has one user); b and the tuple (through r) read f: each gets a copy of
  // f's whole tree (compare, iota, broadcast of c), and c stays one scalar.
  const Instruction* fb = Get(*m, "b")->operand(1);
  const Instruction* fs = Get(*m, "a")->operand(1)->operand(0);
  EXPECT_NE(fb, fs);
  EXPECT_EQ(fb->opcode(), Opcode::kConvert);
  EXPECT_NE(fb->operand(0), fs->operand(0));
  EXPECT_NE(fb->operand(0)->operand(0), fs->operand(0)->operand(0));  // the iotas
  EXPECT_EQ(fb->operand(0)->operand(0)->opcode(), Opcode::kIota);
  EXPECT_EQ(fb->operand(0)->operand(1)->operand(0), Get(*m, "c"));
  EXPECT_EQ(fs->operand(0)->operand(1)->operand(0), Get(*m, "c"));
  for (const Instruction* inst : m->entry()->instructions()) {
    if (inst->opcode() == Opcode::kIota || inst->opcode() == Opcode::kCompare) {
      EXPECT_EQ(inst->user_count(), 1) << inst->name();
    }
  }
}

TEST(SplitConstantsTest, BroadcastsOfAnyScalarAreSplitButNotScalars) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  s = f32[] parameter(2)
  n = f32[] negate(s)
  bs = f32[8] broadcast(n), dimensions={}
  a = f32[8] add(x, bs)
  b = f32[8] add(y, bs)
  c = f32[] constant(1)
  d = f32[] add(n, c)
  e = f32[] multiply(n, c)
  ROOT t = (f32[8], f32[8], f32[], f32[]) tuple(a, b, d, e)
})");
  ASSERT_TRUE(Split(*m));
  EXPECT_NE(Get(*m, "a")->operand(1), Get(*m, "b")->operand(1));
  EXPECT_EQ(Get(*m, "a")->operand(1)->operand(0), Get(*m, "n"));
  EXPECT_EQ(Get(*m, "b")->operand(1)->operand(0), Get(*m, "n"));
  EXPECT_EQ(Get(*m, "c")->user_count(), 2);  // a scalar constant stays shared
}

// vmap(lambda v: (v @ w, v @ w @ w.T)) broadcasts w to the batch twice; global CSE makes the two
// one, whose users want it split differently (the dot along its rows, the transpose along its
// columns). Each user gets its own broadcast again, as JAX wrote them: propagation splits each
// as its user needs (w itself, not the 8 times larger broadcast, is resharded if anything is),
// and the cse after partitioning merges copies that end up alike.
TEST(SplitConstantsTest, ABroadcastOfAnArrayGetsACopyPerUser) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
ENTRY e {
  x = f32[8,12] parameter(0)
  w = f32[12,12] parameter(1)
  bw = f32[8,12,12] broadcast(w), dimensions={1,2}
  d = f32[8,12] dot(x, bw), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  t = f32[8,12,12] transpose(bw), dimensions={0,2,1}
  d2 = f32[8,12] dot(d, t), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT r = (f32[8,12], f32[8,12]) tuple(d, d2)
})");
  ASSERT_TRUE(Split(*m));
  const Instruction* bd = Get(*m, "d")->operand(1);
  const Instruction* bt = Get(*m, "t")->operand(0);
  EXPECT_NE(bd, bt);
  for (const Instruction* b : {bd, bt}) {
    EXPECT_EQ(b->opcode(), Opcode::kBroadcast);
    EXPECT_EQ(b->user_count(), 1);
    EXPECT_EQ(b->operand(0), Get(*m, "w"));  // the broadcast value is shared, not copied
  }
}

TEST(SplitConstantsTest, ValuesWithOneUserEachAndOtherOpsStayAsTheyAre) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  c = f32[] constant(2)
  b = f32[8] broadcast(c), dimensions={}
  e = f32[8] exponential(b)
  a = f32[8] add(x, e)
  t = f32[8] transpose(x), dimensions={0}
  u = f32[8] negate(t)
  v = f32[8] abs(t)
  ROOT r = (f32[8], f32[8], f32[8]) tuple(a, u, v)
})");
  EXPECT_FALSE(Split(*m));  // e has one user; t is not a constant expression
  EXPECT_EQ(Get(*m, "a")->operand(1), Get(*m, "e"));
  EXPECT_EQ(Get(*m, "u")->operand(0), Get(*m, "v")->operand(0));
}

TEST(SplitConstantsTest, TheRootAndSideEffectsKeepTheOriginal) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  c = f32[] constant(2)
  b = f32[8] broadcast(c), dimensions={}
  o = f32[8] custom-call(b), custom_call_target="log", custom_call_has_side_effect=true
  a = f32[8] add(x, b)
  ROOT r = f32[8] multiply(a, b)
})");
  ASSERT_TRUE(Split(*m));
  const Instruction* bo = Get(*m, "o")->operand(0);
  const Instruction* ba = Get(*m, "a")->operand(1);
  const Instruction* br = Get(*m, "r")->operand(1);
  EXPECT_NE(bo, ba);
  EXPECT_NE(ba, br);
  EXPECT_NE(bo, br);
  EXPECT_EQ(Get(*m, "b")->user_count(), 1);
}

// A literal over 1 MiB is read by every copy of what is computed from it, never copied itself.
TEST(SplitConstantsTest, ALargeLiteralIsSharedByTheCopies) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
ENTRY e {
  x = f32[600,600] parameter(0)
  w = f32[600,600] constant({...})
  s = f32[600,600] constant({...})
  n = f32[600,600] negate(w)
  a = f32[600,600] add(x, n)
  b = f32[600,600] multiply(x, n)
  c = f32[600,600] add(x, w)
  d = f32[600,600] subtract(x, w)
  ROOT t = (f32[600,600], f32[600,600], f32[600,600], f32[600,600], f32[600,600]) tuple(a, b, c, d, s)
})");
  ASSERT_TRUE(Split(*m));
  const Instruction* na = Get(*m, "a")->operand(1);
  const Instruction* nb = Get(*m, "b")->operand(1);
  EXPECT_NE(na, nb);                        // the negate is copied per use ...
  EXPECT_EQ(na->operand(0), Get(*m, "w"));  // ... reading the one 1.4 MB literal
  EXPECT_EQ(nb->operand(0), Get(*m, "w"));
  EXPECT_EQ(Get(*m, "c")->operand(1), Get(*m, "w"));
  EXPECT_EQ(Get(*m, "d")->operand(1), Get(*m, "w"));
  int constants = 0;
  for (const Instruction* inst : m->entry()->instructions()) constants += inst->opcode() == Opcode::kConstant;
  EXPECT_EQ(constants, 2);
}

}  // namespace
}  // namespace xs
