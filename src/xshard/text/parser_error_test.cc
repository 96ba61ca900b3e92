// One small module per user mistake; each pins the position and the key part of the message.
#include <gtest/gtest.h>

#include "xshard/text/parser.h"

namespace xs {
namespace {

struct ErrorCase {
  const char* name;
  const char* text;
  const char* location;  // "line:col"
  const char* message;   // a substring of the message after "error: "
};

const ErrorCase kCases[] = {
    {"UnknownOpcode", "ENTRY e {\n  ROOT x = f32[] ad(f32[] parameter(0))\n}\n", "2:18",
     "unknown opcode 'ad'"},
    {"UndefinedOperand", "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(q)\n}\n",
     "3:25", "use of undefined instruction 'q' as an operand in computation 'e'"},
    {"UnknownElementType", "ENTRY e {\n  ROOT p = g32[2] parameter(0)\n}\n", "2:12",
     "unknown element type 'g32'"},
    {"NegativeDim", "ENTRY e {\n  ROOT p = f32[-2] parameter(0)\n}\n", "2:16",
     "expected a dim size"},
    {"UnterminatedComputation", "ENTRY e {\n  ROOT p = f32[] parameter(0)\n", "1:7",
     "computation 'e' is not closed: add '}'"},
    {"UnterminatedComment", "ENTRY e {\n  /* no end\n  ROOT p = f32[] parameter(0)\n}\n", "2:3",
     "unterminated comment"},
    {"BadAttributeValue",
     "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT t = f32[2] transpose(p), dimensions={0,x}\n}\n",
     "3:47", "expected an integer in dimensions"},
    {"AttributeGivenTwice",
     "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] reverse(p), dimensions={0}, dimensions={0}\n}\n",
     "3:47", "attribute 'dimensions' is given twice on 'r'; keep one"},
    {"GatherAttributeOnAnotherOp",  // found by the parser fuzzer: printed back, it did not re-parse
     "ENTRY e {\n  p = s32[2,3] parameter(0), index_vector_dim=2\n}\n",
     "2:47", "attribute 'index_vector_dim' belongs to gather and scatter, not to parameter 'p'; remove it"},
    {"ScatterAttributeOnGather",
     "ENTRY e {\n  p = f32[4,2] parameter(0)\n  i = s32[1] parameter(1)\n  ROOT g = f32[1,2] gather(p, i), "
     "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}, "
     "scatter_dims_to_operand_dims={0}\n}\n",
     "4:167", "attribute 'scatter_dims_to_operand_dims' belongs to scatter, not to gather 'g'; remove it"},
    {"BadFftType",
     "ENTRY e {\n  p = c64[8] parameter(0)\n  ROOT f = c64[8] fft(p), fft_type=DCT, fft_length={8}\n}\n",
     "3:36", "bad value for attribute 'fft_type': 'DCT' is not one of FFT, IFFT, RFFT, IRFFT"},
    {"BadTransposeA",
     "ENTRY e {\n  a = f32[2,2] parameter(0)\n  ROOT s = f32[2,2] triangular-solve(a, a), "
     "transpose_a=YES\n}\n",
     "3:57", "bad value for attribute 'transpose_a': 'YES' is not one of NO_TRANSPOSE"},
    {"BadEpsilon",
     "ENTRY e {\n  x = f32[2,2] parameter(0)\n  s = f32[2] parameter(1)\n  ROOT n = f32[2,2] "
     "batch-norm-inference(x, s, s, s, s), epsilon=tiny, feature_index=1\n}\n",
     "4:66", "bad value for attribute 'epsilon': expected a number, got 'tiny'"},
    {"BadLargest",
     "ENTRY e {\n  x = f32[4] parameter(0)\n  ROOT t = (f32[2], s32[2]) topk(x), k=2, largest=maybe\n}\n",
     "3:51", "expected true or false for largest, got 'maybe'"},
    {"BadTopKK",
     "ENTRY e {\n  x = f32[4] parameter(0)\n  ROOT t = (f32[2], s32[2]) topk(x), k=two\n}\n",
     "3:40", "expected an integer for k"},
    {"UnknownAttribute",
     "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT t = f32[2] transpose(p), dimension={0}\n}\n",
     "3:33", "unknown attribute 'dimension' on transpose"},
    {"DuplicateInstructionName",
     "ENTRY e {\n  p = f32[] parameter(0)\n  p = f32[] parameter(1)\n  ROOT a = f32[] add(p, p)\n}\n",
     "3:3", "instruction name 'p' is used twice in computation 'e' (first at line 2)"},
    {"DuplicateParameterNumber",
     "ENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] parameter(0)\n  ROOT s = f32[] add(a, b)\n}\n",
     "3:13", "parameter number 0 is used twice"},
    {"MissingEntry", "HloModule m\n", "2:1", "the module has no computations"},
    // A control byte is named, not echoed raw (found by the CLI mutation campaign: \x1e split
    // the one-line message for tools that treat it as a line break).
    {"ControlByteAfterName", "ENTRY e {\n  so\x1e = f32[] parameter(0)\n}\n", "2:5",
     "expected '=' after instruction name 'so', found byte 0x1e"},
    {"TwoEntries",
     "ENTRY a {\n  ROOT p = f32[] parameter(0)\n}\nENTRY b {\n  ROOT p = f32[] parameter(0)\n}\n",
     "4:7", "second ENTRY computation 'b'"},
    {"TwoRoots", "ENTRY e {\n  ROOT a = f32[] parameter(0)\n  ROOT b = f32[] negate(a)\n}\n",
     "3:8", "second ROOT 'b'"},
    {"DuplicateComputation",
     "c {\n  ROOT p = f32[] parameter(0)\n}\nc {\n  ROOT p = f32[] parameter(0)\n}\n", "4:1",
     "computation 'c' is defined twice (first at line 1)"},
    {"UnknownComputation",
     "ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
     "  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=sum\n}\n",
     "4:57", "unknown computation 'sum' in to_apply="},
    {"ConstantOutOfRange", "ENTRY e {\n  ROOT c = s8[] constant(300)\n}\n", "2:26",
     "constant value 300 is out of range for s8"},
    {"ConstantOverflowsHalf", "ENTRY e {\n  ROOT c = f16[] constant(70000)\n}\n", "2:27",
     "not representable as f16: out of range"},
    {"ConstantWrongCount", "ENTRY e {\n  ROOT c = f32[3] constant({1, 2})\n}\n", "2:28",
     "dim 0 of the constant has 2 element(s) but the shape f32[3] needs 3"},
    {"OperandShapeMismatch",
     "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(f32[3] p)\n}\n", "3:33",
     "operand 'p' is written with shape f32[3] but defined with shape f32[2]"},
    {"WrongArity", "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT n = f32[] add(p)\n}\n", "3:8",
     "add takes 2 operand(s), got 1"},
    {"BadSharding", "ENTRY e {\n  ROOT p = f32[2] parameter(0), sharding={devices=[2}\n}\n",
     "2:42", "bad sharding"},
    {"BadComparisonDirection",
     "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = pred[] compare(p, p), direction=XX\n}\n",
     "3:44", "unknown comparison direction 'XX'"},
    {"ShapeNeeded", "ENTRY e {\n  ROOT p = parameter(0)\n}\n", "2:8",
     "write the shape of 'p': it cannot be inferred for parameter"},
    {"BadDimLabels",
     "ENTRY e {\n  a = f32[1,2,2,1] parameter(0)\n  k = f32[1,1,1,1] parameter(1)\n"
     "  ROOT c = f32[1,2,2,1] convolution(a, k), window={size=1x1}, dim_labels=b01f_01io->b0f\n}\n",
     "4:74", "input, kernel and output have different numbers of spatial dims"},
    {"BadIotaReplicaGroups",
     "ENTRY e {\n  p = f32[4] parameter(0)\n"
     "  ROOT a = f32[8] all-gather(p), dimensions={0}, replica_groups=[2,2]<=[8]\n}\n",
     "3:65", "must hold as many devices as the reshape dims (8)"},
    {"AsyncDoneWrongOperand",
     "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT d = f32[] add-done(p)\n}\n", "3:18",
     "the operand of async-done must be an async-start or async-update, got parameter"},
    {"SignatureResultMismatch", "ENTRY e () -> f32[2] {\n  ROOT c = f32[] constant(1)\n}\n",
     "1:9", "gives the result as f32[2] but the body has f32[]"},
    {"UnknownApiVersion",
     "ENTRY e {\n  ROOT c = f32[] custom-call(), custom_call_target=\"x\", api_version=V9\n}\n",
     "2:69", "unknown api_version 'V9'"},
    {"UnknownModuleAttribute", "HloModule m, num_partition=2\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n",
     "1:14", "unknown module attribute 'num_partition'"},
    {"UnterminatedString",
     "ENTRY e {\n  ROOT c = f32[] custom-call(), custom_call_target=\"x\n}\n", "2:52",
     "unterminated string"},
};

class ParserErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParserErrorTest, ReportsPositionAndMessage) {
  const ErrorCase& c = GetParam();
  auto m = ParseHloModule(c.text, "bad.hlo");
  ASSERT_FALSE(m.ok()) << c.name << " parsed";
  const std::string& msg = m.status().message();
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(msg.find(StrCat("bad.hlo:", c.location, ": error: ")), std::string::npos) << msg;
  EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(Cases, ParserErrorTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ParserErrorFormat, PrintsSourceLineAndCaretUnderTheColumn) {
  auto m = ParseHloModule("ENTRY e {\n  ROOT x = f32[] ad(f32[] parameter(0))\n}\n", "f.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "f.hlo:2:18: error: unknown opcode 'ad'\n"
            "  ROOT x = f32[] ad(f32[] parameter(0))\n"
            "                 ^");
}

TEST(ParserErrorFormat, EmptyInputIsAnErrorNotACrash) {
  auto m = ParseHloModule("", "empty.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("empty.hlo:1:1: error: the module has no computations"),
            std::string::npos);
}

// XLA's lexer refuses the byte order mark (0xEF starts no token); the error names it.
TEST(ParserErrorFormat, ByteOrderMarkIsNamed) {
  auto m = ParseHloModule("\xEF\xBB\xBFHloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n", "bom.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("bom.hlo:1:1: error: the text starts with a UTF-8 byte order mark"),
            std::string::npos)
      << m.status().message();
}

// StableHLO text (what jax.jit(f).lower(x).as_text() prints by default) is named as MLIR, with
// the way to get HLO text, at its first token; words that merely start like it are HLO errors.
TEST(ParserErrorFormat, MlirTextIsNamedWithTheWayToGetHlo) {
  for (const char* text :
       {"module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n  func.func public @main() {\n  }\n}\n",
        "\n  module {\n}\n", "module attributes {} {\n}\n", "func.func @main() {\n}\n",
        "#loc = loc(unknown)\nmodule @m {\n}\n"}) {
    auto m = ParseHloModule(text, "f.mlir");
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find("error: the text is MLIR (StableHLO or MHLO"), std::string::npos)
        << m.status().message();
    EXPECT_NE(m.status().message().find("as_text(dialect='hlo')"), std::string::npos);
  }
  auto m = ParseHloModule("\n  module {\n}\n", "f.mlir");
  EXPECT_NE(m.status().message().find("f.mlir:2:3: error"), std::string::npos) << m.status().message();
  for (const char* text : {"modules m\n", "HloModule module\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n"}) {
    auto h = ParseHloModule(text, "h.hlo");
    EXPECT_EQ(h.status().message().find("MLIR"), std::string::npos) << h.status().message();
  }
}

TEST(ParserErrorFormat, DeepNestingIsRejectedWithoutRecursingForever) {
  std::string shape(200, '(');
  shape += std::string(200, ')');
  auto m = ParseHloModule(StrCat("ENTRY e {\n  ROOT p = ", shape, " parameter(0)\n}\n"), "d.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("nests too deeply"), std::string::npos);
}

}  // namespace
}  // namespace xs
