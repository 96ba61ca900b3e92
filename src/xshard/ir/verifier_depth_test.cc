// The verifier bounds how deep computations nest (kMaxCallDepth), so no pass that descends into
// callees recursively can overflow the stack: a chain one level too deep is refused with a
// message naming the depth and the outermost computations; the deepest allowed chain passes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/ir/verifier.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

using ::testing::HasSubstr;

// An entry calling c<n-2>, which calls c<n-3>, ..., down to c0: `levels` computations in all.
std::string NestedCalls(int64_t levels) {
  std::string text = "HloModule nested\n\nc0 {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] negate(p)\n}\n";
  for (int64_t i = 1; i < levels - 1; ++i) {
    StrAppend(&text, "\nc", i, " {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=c", i - 1, "\n}\n");
  }
  StrAppend(&text, "\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=c", levels - 2, "\n}\n");
  return text;
}

TEST(VerifierDepth, DeepestAllowedNestingPasses) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(NestedCalls(kMaxCallDepth));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(Verify(**m).ok()) << Verify(**m).ToString();
}

TEST(VerifierDepth, OneLevelDeeperIsRefusedWithAMessage) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(NestedCalls(kMaxCallDepth + 1));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Status s = Verify(**m);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("computations nest more than 256 deep ('e' calls 'c255' calls 'c254'"));
  EXPECT_THAT(s.message(), HasSubstr("inline some of the calls"));
}

TEST(VerifierDepth, TwoThousandLevelsFailCleanly) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(NestedCalls(2000));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_THAT(Verify(**m).message(), HasSubstr("computations nest more than 256 deep"));
}

}  // namespace
}  // namespace xs
