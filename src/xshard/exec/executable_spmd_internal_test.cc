// XLA's _SPMDInternalOp_* custom-calls on whole arrays, against values worked out by hand from
// their definitions (Enzyme-JAX's rotate / multi_rotate / wrap / multi_slice / multi_pad, which
// lower to them), the identity custom-calls, and the errors for malformed backend_configs.
#include "gtest/gtest.h"
#include "xshard/base/strings.h"
#include "xshard/exec/exec_test_util.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

using testing::Doubles;
using testing::RunText;

Array Iota10() { return Array::FromVector<float>({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}); }

std::string Module1(std::string_view result, std::string_view target, std::string_view config,
                    std::string_view operand = "f32[10]") {
  return StrCat("HloModule m\nENTRY main {\n  p = ", operand, " parameter(0)\n  ROOT c = ", result,
                " custom-call(p), custom_call_target=\"", target, "\", backend_config=\"", config, "\"\n}\n");
}

TEST(SpmdInternalOps, RotateRightMovesElementsTowardHigherIndices) {
  StatusOr<std::vector<Array>> r =
      RunText(Module1("f32[10]", "_SPMDInternalOp_RotateRight", "dimension=0,amount=3"), {Iota10()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{7, 8, 9, 0, 1, 2, 3, 4, 5, 6}));
  // amount wraps modulo the dim size; 0 is the identity.
  r = RunText(Module1("f32[10]", "_SPMDInternalOp_RotateRight", "dimension=0,amount=13"), {Iota10()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{7, 8, 9, 0, 1, 2, 3, 4, 5, 6}));
}

TEST(SpmdInternalOps, RotateRightAlongAnInnerDim) {
  Array x = Array::FromVector<int32_t>({2, 3}, {0, 1, 2, 10, 11, 12});
  StatusOr<std::vector<Array>> r = RunText(
      Module1("s32[2,3]", "_SPMDInternalOp_RotateRight", "dimension=1,amount=1", "s32[2,3]"), {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{2, 0, 1, 12, 10, 11}));
}

TEST(SpmdInternalOps, MultiRotateGivesRotationsFromLeftAmountDownToMinusRightAmount) {
  StatusOr<std::vector<Array>> r =
      RunText(Module1("(f32[10], f32[10], f32[10], f32[10])", "_SPMDInternalOp_MultiRotate",
                      "dimension=0,left_amount=2,right_amount=1,bufferize=0"),
              {Iota10()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));  // left by 2
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 0}));  // left by 1
  EXPECT_EQ(Doubles((*r)[2]), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));  // unrotated
  EXPECT_EQ(Doubles((*r)[3]), (std::vector<double>{9, 0, 1, 2, 3, 4, 5, 6, 7, 8}));  // right by 1
}

TEST(SpmdInternalOps, WrapAddsTheOtherEndsElements) {
  StatusOr<std::vector<Array>> r = RunText(
      Module1("f32[13]", "_SPMDInternalOp_Wrap", "dimension=0,left_amount=2,right_amount=1"), {Iota10()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0}));
}

TEST(SpmdInternalOps, MultiSliceShiftsTheWindowAlongTheDimension) {
  Array x = Array::FromVector<float>({2, 6}, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
  StatusOr<std::vector<Array>> r = RunText(
      Module1("(f32[2,3], f32[2,3], f32[2,3])", "_SPMDInternalOp_MultiSlice",
              "dimension=1,amount=2,start_indices=[0,1],limit_indices=[2,4],strides=[1,1],bufferize=0", "f32[2,6]"),
      {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{1, 2, 3, 11, 12, 13}));
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{2, 3, 4, 12, 13, 14}));
  EXPECT_EQ(Doubles((*r)[2]), (std::vector<double>{3, 4, 5, 13, 14, 15}));
  // Strided: [0:5:2] then [1:6:2].
  r = RunText(Module1("(f32[3], f32[3])", "_SPMDInternalOp_MultiSlice",
                      "dimension=0,amount=1,start_indices=[0],limit_indices=[5],strides=[2]"),
              {Iota10()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{0, 2, 4}));
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{1, 3, 5}));
}

TEST(SpmdInternalOps, MultiPadPadsLowThenHigh) {
  constexpr std::string_view kText = R"(
HloModule m
ENTRY main {
  p = f64[2,2] parameter(0)
  v = f64[] constant(-1)
  ROOT c = (f64[3,2], f64[3,2]) custom-call(p, v), custom_call_target="_SPMDInternalOp_MultiPad",
    backend_config="dimension=0,amt=1,bufferize=0"
})";
  StatusOr<std::vector<Array>> r = RunText(kText, {Array::FromVector<double>({2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{-1, -1, 1, 2, 3, 4}));
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{1, 2, 3, 4, -1, -1}));
}

TEST(SpmdInternalOps, IdentityCustomCallsPassTheirOperandThrough) {
  for (std::string_view target : {"ShardBarrierFrom", "ShardBarrierTo", "MoveToHost", "MoveToDevice", "PinToDevice",
                                  "LayoutConstraint", "annotate_device_placement"}) {
    const std::string text = StrCat("HloModule m\nENTRY main {\n  p = f32[10] parameter(0)\n  c = f32[10] custom-call(p), ",
                                    "custom_call_target=\"", target, "\"\n  ROOT n = f32[10] negate(c)\n}\n");
    StatusOr<std::vector<Array>> r = RunText(text, {Iota10()});
    ASSERT_TRUE(r.ok()) << target << ": " << r.status().ToString();
    EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{-0.0, -1, -2, -3, -4, -5, -6, -7, -8, -9})) << target;
  }
}

// Each malformed form is an error naming the instruction, the problem and what is expected.
TEST(SpmdInternalOps, MalformedConfigsAreClearErrors) {
  struct Case {
    std::string text;
    std::string expect;
  };
  const Case cases[] = {
      {Module1("f32[10]", "_SPMDInternalOp_RotateRight", "amount=3"), "needs an integer dimension=N"},
      {Module1("f32[10]", "_SPMDInternalOp_RotateRight", "dimension=1,amount=3"), "dimension=1 is outside the operand's rank 1"},
      {Module1("f32[10]", "_SPMDInternalOp_RotateRight", "dimension=0,amount=-2"), "amount=-2 must be >= 0"},
      {Module1("f32[10]", "_SPMDInternalOp_RotateRight", "dimension=0,amount=x"), "'amount=x' is not an integer"},
      {Module1("f32[10]", "_SPMDInternalOp_RotateRight", "dimension=0,amount"), "is not key=value,...: 'amount' has no '='"},
      {Module1("f32[20]", "_SPMDInternalOp_Wrap", "dimension=0,left_amount=1,right_amount=1"),
       "the result must be f32[12] for this operand and backend_config, got f32[20]"},
      {Module1("f32[10]", "_SPMDInternalOp_Wrap", "dimension=0,left_amount=11,right_amount=0"), "must be in [0, 10]"},
      {Module1("(f32[10], f32[10])", "_SPMDInternalOp_MultiRotate", "dimension=0,left_amount=1,right_amount=1"),
       "the result must be (f32[10], f32[10], f32[10])"},
      {Module1("(f32[3], f32[3])", "_SPMDInternalOp_MultiSlice",
               "dimension=0,amount=1,start_indices=[6],limit_indices=[10],strides=[1]"),
       "shifted by up to 1 is out of bounds"},
      {Module1("(f32[3], f32[3])", "_SPMDInternalOp_MultiSlice", "dimension=0,amount=1,start_indices=[0,0]"),
       "start_indices=[...] with one entry per operand dim (1)"},
      {Module1("f32[10]", "_SPMDInternalOp_MultiSlice", "dimension=0,amount=1,start_indices=[0"), "has no ']'"},
  };
  for (const Case& c : cases) {
    StatusOr<std::vector<Array>> r = RunText(c.text, {Iota10()});
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("custom-call 'c'"), std::string::npos) << r.status().ToString();
  }
}

}  // namespace
}  // namespace xs
