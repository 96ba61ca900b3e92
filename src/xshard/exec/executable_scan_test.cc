// scan and rng-get-and-update-state, against values worked out by hand.
#include "gtest/gtest.h"
#include "xshard/exec/exec_test_util.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

using testing::Doubles;

StatusOr<std::unique_ptr<Executable>> Compile(std::string_view text, std::unique_ptr<Module>* keep) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  if (!m.ok()) return m.status();
  *keep = std::move(*m);
  return Executable::Create(**keep);
}

StatusOr<std::vector<Array>> RunWith(const Executable& e, std::vector<Array> args) {
  return e.Run(std::span<const Array>(args), ExecuteOptions{});
}

// A running sum whose output is the carry before the add (an exclusive scan) and a second,
// non-commutative carry (c2' = 10 * c2 + x) that pins down the parameter order.
constexpr std::string_view kScan = R"(
HloModule m
body {
  x = f32[] parameter(0)
  c1 = f32[] parameter(1)
  c2 = f32[] parameter(2)
  s = f32[] add(x, c1)
  ten = f32[] constant(10)
  t = f32[] multiply(c2, ten)
  u = f32[] add(t, x)
  ROOT r = (f32[], f32[], f32[]) tuple(c1, s, u)
}
ENTRY main {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT s = (f32[4], f32[], f32[]) scan(p, z, z), dimensions={0}, num_carries=2, is_reverse=REVERSE, to_apply=body
})";

TEST(Scan, ForwardExclusiveSumAndOrderedCarry) {
  std::unique_ptr<Module> m;
  std::string text(kScan);
  text.replace(text.find("REVERSE"), 7, "false");
  StatusOr<std::unique_ptr<Executable>> e = Compile(text, &m);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  StatusOr<std::vector<Array>> r = RunWith(**e, {Array::FromVector<float>({4}, {1, 2, 3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{0, 1, 3, 6}));
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{10}));
  EXPECT_EQ(Doubles((*r)[2]), (std::vector<double>{1234}));
}

TEST(Scan, ReverseRunsFromTheEnd) {
  std::unique_ptr<Module> m;
  std::string text(kScan);
  text.replace(text.find("REVERSE"), 7, "true");
  StatusOr<std::unique_ptr<Executable>> e = Compile(text, &m);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  StatusOr<std::vector<Array>> r = RunWith(**e, {Array::FromVector<float>({4}, {1, 2, 3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{9, 7, 4, 0}));
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{10}));
  EXPECT_EQ(Doubles((*r)[2]), (std::vector<double>{4321}));
}

TEST(Scan, SlicesAlongAnInnerDimension) {
  constexpr std::string_view kText = R"(
HloModule m
body {
  x = s32[2] parameter(0)
  c = s32[2] parameter(1)
  s = s32[2] add(x, c)
  ROOT r = (s32[2], s32[2]) tuple(s, s)
}
ENTRY main {
  p = s32[2,3] parameter(0)
  z = s32[] constant(0)
  zb = s32[2] broadcast(z), dimensions={}
  ROOT s = (s32[2,3], s32[2]) scan(p, zb), dimensions={1}, num_carries=1, is_associative=true, to_apply=body
})";
  std::unique_ptr<Module> m;
  StatusOr<std::unique_ptr<Executable>> e = Compile(kText, &m);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  StatusOr<std::vector<Array>> r = RunWith(**e, {Array::FromVector<int32_t>({2, 3}, {1, 2, 3, 10, 20, 30})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{1, 3, 6, 10, 30, 60}));
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{6, 60}));
}

// One value as both the scanned input and the initial carry (its last use is the carry).
TEST(Scan, OneValueAsInputAndCarry) {
  constexpr std::string_view kText = R"(
HloModule m
body {
  x = f32[2] parameter(0)
  c = f32[2,2] parameter(1)
  b = f32[2,2] broadcast(x), dimensions={1}
  s = f32[2,2] add(c, b)
  ROOT r = (f32[2], f32[2,2]) tuple(x, s)
}
ENTRY main {
  p = f32[2,2] parameter(0)
  ROOT s = (f32[2,2], f32[2,2]) scan(p, p), dimensions={0}, num_carries=1, to_apply=body
})";
  std::unique_ptr<Module> m;
  StatusOr<std::unique_ptr<Executable>> e = Compile(kText, &m);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  StatusOr<std::vector<Array>> r = RunWith(**e, {Array::FromVector<float>({2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{1, 2, 3, 4}));
  // carry = p + row 0 + row 1 broadcast along rows: [[1+1+3, 2+2+4], [3+1+3, 4+2+4]].
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{5, 8, 7, 10}));
}

TEST(Scan, MalformedScansAreClearErrors) {
  constexpr std::string_view kWrongBody = R"(
HloModule m
body {
  x = f32[] parameter(0)
  c = f32[] parameter(1)
  ROOT r = (f32[2], f32[]) tuple(x, c)
}
ENTRY main {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT s = (f32[4], f32[]) scan(p, z), dimensions={0}, num_carries=1, to_apply=body
})";
  std::unique_ptr<Module> m;
  StatusOr<std::unique_ptr<Executable>> e = Compile(kWrongBody, &m);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("must return each output's slice"), std::string::npos) << e.status().ToString();
  std::string no_carries(kWrongBody);
  no_carries.replace(no_carries.find(", num_carries=1"), 15, "");
  e = Compile(no_carries, &m);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("needs num_carries=N"), std::string::npos) << e.status().ToString();
  // A negative scan dimension with no inputs (only carries and outputs) used to index out of bounds.
  constexpr std::string_view kNegative = R"(
HloModule m
body {
  c = f32[] parameter(0)
  ROOT r = (f32[], f32[]) tuple(c, c)
}
ENTRY main {
  z = f32[] constant(1)
  ROOT s = (f32[4], f32[]) scan(z), dimensions={-1}, num_carries=1, to_apply=body
})";
  e = Compile(kNegative, &m);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("dimensions={-1} must name a dim"), std::string::npos) << e.status().ToString();
  // The body's parameters must take the slices and carries the scan passes (a f32[1] slice
  // handed to a f32[32] parameter used to read past the slice).
  constexpr std::string_view kWideParameter = R"(
HloModule m
body {
  x = f32[32] parameter(0)
  c = f32[32] parameter(1)
  a = f32[32] add(x, c)
  ROOT r = (f32[32], f32[32]) tuple(a, a)
}
ENTRY main {
  p = f32[16,1] parameter(0)
  z = f32[] constant(0)
  i = f32[32] broadcast(z), dimensions={}
  ROOT s = (f32[16,32], f32[32]) scan(p, i), dimensions={0}, num_carries=1, to_apply=body
})";
  e = Compile(kWideParameter, &m);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("parameter 0 is f32[32] but the scan passes input 0's slice f32[1]"),
            std::string::npos)
      << e.status().ToString();
}

TEST(RngGetAndUpdateState, ReturnsTheStateThenAdvancesItByDelta) {
  constexpr std::string_view kText = R"(
HloModule m
ENTRY main {
  a = u64[2] rng-get-and-update-state(), delta=4096
  b = u64[2] rng-get-and-update-state(), delta=1
  ROOT t = (u64[2], u64[2]) tuple(a, b)
})";
  std::unique_ptr<Module> m;
  StatusOr<std::unique_ptr<Executable>> e = Compile(kText, &m);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  StatusOr<std::vector<Array>> r = RunWith(**e, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Each instruction keeps its own state, starting at 0; a second run continues it.
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{0, 0}));
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{0, 0}));
  r = RunWith(**e, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0]), (std::vector<double>{4096, 0}));
  EXPECT_EQ(Doubles((*r)[1]), (std::vector<double>{1, 0}));
}

}  // namespace
}  // namespace xs
