// Tests for the Status macros and helpers.
#include "xshard/base/status.h"

#include <gtest/gtest.h>

#include <cmath>

namespace xs {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("value ", x, " is odd; pass an even number");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  XS_ASSIGN_OR_RETURN(int h, Half(x));
  XS_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  XS_RETURN_IF_ERROR(Half(x).status());
  return OkStatus();
}

TEST(StatusTest, AssignOrReturnPropagatesFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  StatusOr<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "value 3 is odd; pass an even number");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(StatusTest, ReturnIfErrorStopsOnError) {
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(5).ok());
}

TEST(StatusTest, AnnotatePrefixesMessageAndKeepsCode) {
  Status s = Annotate(NotFound("no file x.hlo"), "while loading: ");
  EXPECT_EQ(s.message(), "while loading: no file x.hlo");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_TRUE(Annotate(OkStatus(), "x").ok());
}

TEST(StatusTest, UnsupportedIsUnimplementedWithThePrefixAddedOnce) {
  Status s = Unsupported("fft of ", "c64");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "unsupported: fft of c64");
  EXPECT_EQ(UnsupportedWhat(s), "fft of c64");
  // An Unimplemented built without the builder is restated whole.
  EXPECT_EQ(UnsupportedWhat(Unimplemented("no GEMM plan")), "no GEMM plan");
}

TEST(StatusTest, AttributionAndDetailSurviveAnnotateAndWithMessage) {
  Status s = InvalidArgument("loop stopped").AttributedTo("w.1", "while").WithDetail(
      StatusDetail::kWhileIterationLimit);
  EXPECT_EQ(s.message(), "loop stopped");  // the fields do not change the text
  Status a = Annotate(s, "device 3 failed: ");
  EXPECT_EQ(a.message(), "device 3 failed: loop stopped");
  EXPECT_EQ(a.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.instruction(), "w.1");
  EXPECT_EQ(a.opcode(), "while");
  EXPECT_EQ(a.detail(), StatusDetail::kWhileIterationLimit);
  Status m = s.WithMessage("other");
  EXPECT_EQ(m.message(), "other");
  EXPECT_EQ(m.detail(), StatusDetail::kWhileIterationLimit);
  EXPECT_TRUE(InvalidArgument("x").instruction().empty());
  EXPECT_EQ(InvalidArgument("x").detail(), StatusDetail::kNone);
  EXPECT_NE(s, InvalidArgument("loop stopped"));  // equality sees the fields
}

TEST(StatusDeathTest, CheckAbortsWithMessage) {
  EXPECT_DEATH(XS_CHECK(1 == 2, "math is broken: ", 42), "math is broken: 42");
}

}  // namespace
}  // namespace xs

namespace xs {
namespace {

TEST(StringsTest, StrCatFormatsNumbersAndViews) {
  std::string_view v = "axis";
  EXPECT_EQ(StrCat(v, " ", 4, " ", int64_t{-3}, " ", 0.5, " ", 'c', " ", true), "axis 4 -3 0.5 c true");
  EXPECT_EQ(StrJoin(std::vector<int>{1, 2, 3}, ","), "1,2,3");
  EXPECT_EQ(StrJoin(std::vector<std::string>{}, ","), "");
}

TEST(StringsTest, SplitKeepsEmptyPieces) {
  auto parts = StrSplit("a,,b", ',');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(parts[2], "b");
}

TEST(StringsTest, ParseNumbersRejectJunk) {
  int64_t i = 0;
  EXPECT_TRUE(ParseInt64("-42", &i));
  EXPECT_EQ(i, -42);
  EXPECT_FALSE(ParseInt64("4x", &i));
  EXPECT_FALSE(ParseInt64("", &i));
  EXPECT_FALSE(ParseInt64("99999999999999999999", &i));
  double d = 0;
  EXPECT_TRUE(ParseDouble("1.5e3", &d));
  EXPECT_EQ(d, 1500.0);
  EXPECT_TRUE(ParseDouble("-inf", &d));
  EXPECT_TRUE(std::isinf(d) && d < 0);
  EXPECT_FALSE(ParseDouble("1.5.", &d));
}

TEST(StringsTest, CEscapeQuotesSpecials) {
  EXPECT_EQ(CEscape("a\"b\n"), "\"a\\\"b\\n\"");
}

}  // namespace
}  // namespace xs
