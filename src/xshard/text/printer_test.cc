// Printer behaviour: the exact canonical text for small modules (written by hand in XLA's style),
// the short form, ordering rules, and the printing of literals.
#include "xshard/text/printer.h"

#include <gtest/gtest.h>

#include "xshard/ir/module_equal.h"
#include "xshard/ir/verifier.h"
#include "xshard/text/parse_test_util.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

using xs::testing::ParseOrFail;

constexpr std::string_view kSumModule = R"(HloModule m, num_partitions=2
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p = f32[8]{0} parameter(0), sharding={devices=[2]<=[2]}
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=sum
})";

TEST(Printer, DefaultFormIsXlaToStringStyle) {
  auto m = ParseOrFail(kSumModule);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintHloModule(*m), R"(HloModule m, num_partitions=2

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[8]) -> f32[] {
  %p = f32[8]{0} parameter(0), sharding={devices=[2]<=[2]}
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[8]{0} %p, f32[] %z), dimensions={0}, to_apply=%sum
}
)");
}

TEST(Printer, ShortFormHasNoPercentOperandShapesOrSignatures) {
  auto m = ParseOrFail(kSumModule);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintHloModule(*m, PrintOptions::Short()), R"(HloModule m, num_partitions=2

sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p = f32[8]{0} parameter(0), sharding={devices=[2]<=[2]}
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=sum
}
)");
}

TEST(Printer, UsesPostOrderWhenTheTextUsesNamesBeforeDefiningThem) {
  auto m = ParseOrFail("ENTRY e {\n  ROOT n = f32[] negate(c)\n  c = f32[] constant(2)\n}\n");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintComputation(*m->entry(), PrintOptions::Short()),
            "ENTRY e {\n  c = f32[] constant(2)\n  ROOT n = f32[] negate(c)\n}");
}

TEST(Printer, WritesAttributesCanonically) {
  auto m = ParseOrFail(R"(ENTRY e {
  p = f32[4,6] parameter(0)
  z = f32[] constant(0)
  s = f32[4,3] slice(p), slice={[0:4:1], [0:6:2]}
  pd = f32[5,8] pad(p, z), padding=0_1x1_1
  pi = f32[7,8] pad(p, z), padding=0_0_1x1_1
  a = f32[8,6] all-gather(p), channel_id=1, replica_groups=[1,2]<=[2], dimensions={0}
  ROOT c = pred[4,6] compare(p, p), direction=LT, type=TOTALORDER
})");
  ASSERT_NE(m, nullptr);
  const Computation* e = m->entry();
  PrintOptions o = PrintOptions::Short();
  EXPECT_EQ(PrintInstruction(*e->GetInstruction("s"), o),
            "s = f32[4,3] slice(p), slice={[0:4], [0:6:2]}");
  EXPECT_EQ(PrintInstruction(*e->GetInstruction("pd"), o),
            "pd = f32[5,8] pad(p, z), padding=0_1x1_1");
  EXPECT_EQ(PrintInstruction(*e->GetInstruction("pi"), o),
            "pi = f32[7,8] pad(p, z), padding=0_0_1x1_1_0");
  EXPECT_EQ(PrintInstruction(*e->GetInstruction("a"), o),
            "a = f32[8,6] all-gather(p), dimensions={0}, channel_id=1, replica_groups=[1,2]<=[2]");
  EXPECT_EQ(PrintInstruction(*e->GetInstruction("c"), o),
            "c = pred[4,6] compare(p, p), direction=LT, type=TOTALORDER");
}

TEST(Printer, WritesConstantsLikeXla) {
  auto m = ParseOrFail(R"(ENTRY e {
  a = f32[2,3] constant({ { 1, 2.5, -0 }, { inf, -nan, 1e+30 } })
  b = bf16[] constant(500)
  c = pred[] constant(true)
  d = c64[2] constant({(1, -2), (0.5, nan)})
  f = f32[3] constant({0.1, 3.40282347e+38, nan(0x1)})
  big = s32[64] constant(3)
  ROOT t = (f32[], pred[2]) constant((1, {1, 0}))
})");
  ASSERT_NE(m, nullptr);
  auto line = [&](std::string_view n) {
    return PrintInstruction(*m->entry()->GetInstruction(n), PrintOptions::Short());
  };
  EXPECT_EQ(line("a"), "a = f32[2,3] constant({ { 1, 2.5, -0 }, { inf, -nan, 1e+30 } })");
  EXPECT_EQ(line("b"), "b = bf16[] constant(500)");
  EXPECT_EQ(line("c"), "c = pred[] constant(true)");
  EXPECT_EQ(line("d"), "d = c64[2] constant({(1, -2), (0.5, nan)})");
  // At least 6 significant digits, more only until the value round-trips (FLT_MAX needs 8).
  EXPECT_EQ(line("f"), "f = f32[3] constant({0.1, 3.4028235e+38, nan(0x1)})");
  EXPECT_EQ(line("big"), "big = s32[64] constant(3)");
  EXPECT_EQ(line("t"), "t = (f32[], pred[2]) constant((1, {1, 0}))");
}

// The attributes the compiler reads (fft, topk, linear algebra, batch norm, ragged-dot, async
// threads) are typed: parsed into fields, printed back in XLA's spelling, and equal after a
// second parse.
TEST(Printer, TypedOpAttributesRoundTrip) {
  auto m = ParseOrFail(R"(ENTRY e {
  x = f32[4,8] parameter(0)
  c = c64[4,8] parameter(1)
  a = f32[3,3] parameter(2)
  b = f32[3,2] parameter(3)
  f = f32[8] parameter(4)
  g = s32[2] parameter(5)
  w = f32[2,8,5] parameter(6)
  r = c64[4,5] fft(x), fft_type=RFFT, fft_length={8}
  i = c64[4,8] fft(c), fft_length={4,8}, fft_type=IFFT
  t = (f32[4,2], s32[4,2]) topk(x), k=2, largest=false
  l = f32[3,3] cholesky(a), lower=true
  s = f32[3,2] triangular-solve(a, b), left_side=true, lower=false, unit_diagonal=true, transpose_a=ADJOINT
  n = (f32[4,8], f32[8], f32[8]) batch-norm-training(x, f, f), epsilon=0.001, feature_index=1
  d = f32[4,5] ragged-dot(x, w, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
  as = ((f32[3,3]), f32[3,3], u32[]) negate-start(a), async_execution_thread="side"
  ROOT ad = f32[3,3] negate-done(as)
})");
  ASSERT_NE(m, nullptr);
  const Computation* e = m->entry();
  const Attributes& r = e->GetInstruction("r")->attrs();
  EXPECT_EQ(r.fft_type, FftType::kRfft);
  EXPECT_EQ(r.fft_length, std::vector<int64_t>{8});
  EXPECT_EQ(e->GetInstruction("t")->attrs().k, 2);
  EXPECT_EQ(e->GetInstruction("t")->attrs().largest, false);
  EXPECT_EQ(e->GetInstruction("s")->attrs().transpose_a, TransposeKind::kAdjoint);
  EXPECT_EQ(e->GetInstruction("n")->attrs().epsilon, 0.001);
  EXPECT_EQ(e->GetInstruction("n")->attrs().feature_index, 1);
  EXPECT_EQ(e->GetInstruction("as")->attrs().async_execution_thread, "side");
  for (const char* name : {"r", "i", "t", "l", "s", "n", "d", "as"})
    EXPECT_TRUE(e->GetInstruction(name)->attrs().other.empty()) << name << " kept text verbatim";
  PrintOptions o = PrintOptions::Short();
  auto print = [&](const char* name) { return PrintInstruction(*e->GetInstruction(name), o); };
  EXPECT_EQ(print("r"), "r = c64[4,5] fft(x), fft_type=RFFT, fft_length={8}");
  EXPECT_EQ(print("i"), "i = c64[4,8] fft(c), fft_type=IFFT, fft_length={4,8}");
  EXPECT_EQ(print("t"), "t = (f32[4,2], s32[4,2]) topk(x), k=2, largest=false");
  EXPECT_EQ(print("l"), "l = f32[3,3] cholesky(a), lower=true");
  EXPECT_EQ(print("s"), "s = f32[3,2] triangular-solve(a, b), left_side=true, lower=false, "
                        "unit_diagonal=true, transpose_a=ADJOINT");
  EXPECT_EQ(print("n"), "n = (f32[4,8], f32[8], f32[8]) batch-norm-training(x, f, f), "
                        "epsilon=0.001, feature_index=1");
  EXPECT_EQ(print("d"), "d = f32[4,5] ragged-dot(x, w, g), lhs_contracting_dims={1}, "
                        "rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}");
  EXPECT_EQ(print("as"), "as = ((f32[3,3]), f32[3,3], u32[]) negate-start(a), "
                         "async_execution_thread=\"side\"");
  auto again = ParseOrFail(PrintHloModule(*m));
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(CheckModulesEqual(*m, *again).ok()) << CheckModulesEqual(*m, *again).message();
}

TEST(Printer, WritesAsyncSugarBackAsSugar) {
  auto m = ParseOrFail(R"(ENTRY e {
  a = f32[4] parameter(0)
  s = ((f32[4]), f32[4], u32[]) custom-call-start(a), custom_call_target="foo"
  ROOT d = f32[4] custom-call-done(s)
})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintHloModule(*m, PrintOptions::Short()), R"(HloModule e

ENTRY e {
  a = f32[4] parameter(0)
  s = ((f32[4]), f32[4], u32[]) custom-call-start(a), custom_call_target="foo"
  ROOT d = f32[4] custom-call-done(s)
}
)");
}

TEST(Printer, ClonedModulePrintsTheSameAndIsStructurallyEqual) {
  auto m = ParseOrFail(kSumModule);
  ASSERT_NE(m, nullptr);
  auto c = m->Clone();
  EXPECT_TRUE(CheckModulesEqual(*m, *c).ok());
  EXPECT_EQ(PrintHloModule(*m), PrintHloModule(*c));
}

// Regression (fuzzer): header attributes written after others still round-trip equal.
TEST(Printer, HeaderAttributesInAnyOrderRoundTrip) {
  auto m = ParseOrFail("HloModule m, frontend_attributes={a=\"b\"}, input_output_alias={ {}: (0, {}, "
                 "may-alias) }\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n");
  ASSERT_NE(m, nullptr);
  std::string text = PrintHloModule(*m);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "HloModule m, input_output_alias={ {}: (0, {}, may-alias) }, "
            "frontend_attributes={a=\"b\"}");
  auto again = ParseOrFail(text);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(CheckModulesEqual(*m, *again).ok()) << CheckModulesEqual(*m, *again).message();
}

// Regression (fuzzer timeout): a 5M-element splat must fill and print in linear memcpy time.
TEST(Printer, LargeSplatConstantPrintsAsOneValue) {
  auto m = ParseOrFail("ENTRY e {\n  ROOT c = f32[5,1024,1024] constant(1)\n}\n");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintInstruction(*m->entry()->root(), PrintOptions::Short()),
            "c = f32[5,1024,1024] constant(1)");
  EXPECT_EQ(m->entry()->root()->literal().GetDouble(5 * 1024 * 1024 - 1), 1.0);
}

// operand_layout_constraints is parsed into shapes (text/), not kept as text for shape inference to
// split: printed back with its layouts, reparsed equal, and checked against the operands.
TEST(Printer, OperandLayoutConstraintsAreShapes) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
ENTRY e {
  a = f32[4,4]{0,1} parameter(0)
  b = f32[4,1]{0,1} parameter(1)
  ROOT c = f32[4,1]{0,1} custom-call(a, b), custom_call_target="lapack_strsm_ffi", operand_layout_constraints={f32[4,4]{0,1}, f32[4,1]{0,1}}, api_version=API_VERSION_TYPED_FFI
})");
  ASSERT_NE(m, nullptr);
  const Attributes& c = m->entry()->GetInstruction("c")->attrs();
  ASSERT_TRUE(c.operand_layout_constraints.has_value());
  ASSERT_EQ(c.operand_layout_constraints->size(), 2u);
  EXPECT_EQ((*c.operand_layout_constraints)[0].ToString(), "f32[4,4]{0,1}");
  EXPECT_EQ((*c.operand_layout_constraints)[1].ToString(), "f32[4,1]{0,1}");
  EXPECT_TRUE(c.other.empty());
  const std::string printed = PrintHloModule(*m);
  EXPECT_NE(printed.find("operand_layout_constraints={f32[4,4]{0,1}, f32[4,1]{0,1}}"), std::string::npos)
      << printed;
  std::unique_ptr<Module> again = ParseOrFail(printed);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(CheckModulesEqual(*m, *again).ok()) << printed;
  // An empty list parses; a shape that differs from its operand is an error naming both.
  StatusOr<std::unique_ptr<Module>> empty = ParseHloModule(R"(HloModule m
ENTRY e { ROOT c = f32[2] custom-call(), custom_call_target="x", operand_layout_constraints={} })");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ((*empty)->entry()->GetInstruction("c")->attrs().operand_layout_constraints->size(), 0u);
  std::unique_ptr<Module> bad = ParseOrFail(R"(HloModule m
ENTRY e { a = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(a), custom_call_target="x", operand_layout_constraints={f32[3]{0}} })");
  ASSERT_NE(bad, nullptr);
  const Status verified = Verify(*bad);
  ASSERT_FALSE(verified.ok());
  EXPECT_NE(verified.message().find("operand_layout_constraints shape f32[3]"), std::string::npos)
      << verified.message();
  EXPECT_NE(verified.message().find("does not match operand 0 f32[2]"), std::string::npos)
      << verified.message();
}

}  // namespace
}  // namespace xs
