// ParseByteCount: the sizes flags and $XSHARD_HOST_MEMORY take.
#include "xshard/base/strings.h"

#include <gtest/gtest.h>

namespace xs {
namespace {

TEST(ParseByteCountTest, NumbersAndBinarySuffixes) {
  int64_t v = 0;
  ASSERT_TRUE(ParseByteCount("4096", &v));
  EXPECT_EQ(v, 4096);
  ASSERT_TRUE(ParseByteCount("8G", &v));
  EXPECT_EQ(v, int64_t{8} << 30);
  ASSERT_TRUE(ParseByteCount("512MiB", &v));
  EXPECT_EQ(v, int64_t{512} << 20);
  ASSERT_TRUE(ParseByteCount("2kb", &v));
  EXPECT_EQ(v, 2048);
  ASSERT_TRUE(ParseByteCount("1.5g", &v));
  EXPECT_EQ(v, int64_t{3} << 29);
  ASSERT_TRUE(ParseByteCount("100B", &v));
  EXPECT_EQ(v, 100);
}

TEST(ParseByteCountTest, JunkIsRefused) {
  int64_t v = 7;
  for (const char* bad : {"", "G", "lots", "0", "-1", "8X", "8 G", "1e3", "inf", "nan", "99999999T", "0.1"}) {
    EXPECT_FALSE(ParseByteCount(bad, &v)) << bad;
  }
  EXPECT_EQ(v, 7);
}

}  // namespace
}  // namespace xs
