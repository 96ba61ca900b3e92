// Tests for PartitionSpec: JAX syntax parsing, errors with columns, and JAX's repr.
#include "xshard/sharding/partition_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace xs {
namespace {

using ::testing::HasSubstr;
using Entries = std::vector<PartitionSpec::Entry>;

Entries ParseOkSpec(std::string_view text) {
  StatusOr<PartitionSpec> spec = PartitionSpec::Parse(text);
  EXPECT_TRUE(spec.ok()) << text << ": " << spec.status().ToString();
  return spec.ok() ? spec->entries() : Entries{};
}

TEST(PartitionSpecTest, ParsesJaxForms) {
  EXPECT_EQ(ParseOkSpec("P('x', None)"), (Entries{{"x"}, {}}));
  EXPECT_EQ(ParseOkSpec("P(('x','y'), None)"), (Entries{{"x", "y"}, {}}));
  EXPECT_EQ(ParseOkSpec("P()"), Entries{});
  EXPECT_EQ(ParseOkSpec("PartitionSpec('b', 'a')"), (Entries{{"b"}, {"a"}}));
  EXPECT_EQ(ParseOkSpec("jax.sharding.PartitionSpec(\"x\")"), (Entries{{"x"}}));
  EXPECT_EQ(ParseOkSpec("  P ( None ,\t'a' , ) "), (Entries{{}, {"a"}}));
  EXPECT_EQ(ParseOkSpec("P(('x',), ())"), (Entries{{"x"}, {}}));
  EXPECT_EQ(ParseOkSpec("P(('x', 'y',),)"), (Entries{{"x", "y"}}));
  EXPECT_EQ(ParseOkSpec("P('it\\'s')"), (Entries{{"it's"}}));
}

TEST(PartitionSpecTest, PrintsAsJaxRepr) {
  // JAX prints P(...) as repr(tuple)[1:-1]: one entry keeps its trailing comma.
  EXPECT_EQ(PartitionSpec({{"b"}, {"a"}}).ToString(), "P('b', 'a')");
  EXPECT_EQ(PartitionSpec({{"x", "y"}, {}}).ToString(), "P(('x', 'y'), None)");
  EXPECT_EQ(PartitionSpec().ToString(), "P()");
  EXPECT_EQ(PartitionSpec({{"x"}}).ToString(), "P('x',)");
  EXPECT_EQ(PartitionSpec(Entries{{}}).ToString(), "P(None,)");
  EXPECT_EQ(PartitionSpec({{"it's"}}).ToString(), "P(\"it's\",)");
}

TEST(PartitionSpecTest, PrintedTextParsesBack) {
  for (const char* text : {"P('b', 'a')", "P(('x', 'y'), None)", "P()", "P('x',)",
                           "P(None, ('a', 'b', 'c'), 'd')"}) {
    EXPECT_EQ(PartitionSpec::Parse(text)->ToString(), text);
  }
}

TEST(PartitionSpecTest, ErrorsPointAtTheColumn) {
  auto message = [](std::string_view text) {
    return std::string(PartitionSpec::Parse(text).status().message());
  };
  EXPECT_THAT(message("P(x)"),
              HasSubstr("invalid PartitionSpec \"P(x)\" at column 3: expected a quoted axis "
                        "name like 'x', None or a tuple of names, found 'x'"));
  EXPECT_THAT(message("Q('x')"), HasSubstr("at column 1: expected P( or PartitionSpec("));
  EXPECT_THAT(message("P('x' 'y')"),
              HasSubstr("at column 7: expected ',' or ')' after an entry"));
  EXPECT_THAT(message("P('x'"), HasSubstr("at column 6: expected ',' or ')' after an entry, "
                                          "found the end"));
  EXPECT_THAT(message("P('x)"), HasSubstr("at column 3: unterminated axis name"));
  EXPECT_THAT(message("P(('x', None))"),
              HasSubstr("at column 9: expected a quoted axis name like 'x'"));
  EXPECT_THAT(message("P('x') extra"), HasSubstr("at column 8: unexpected text after"));
  EXPECT_THAT(message("P('')"), HasSubstr("axis names must not be empty"));
  EXPECT_THAT(message("P x"), HasSubstr("expected '(' after the name"));
  EXPECT_THAT(message("P(Nonex)"), HasSubstr("at column 3"));
}

}  // namespace
}  // namespace xs
