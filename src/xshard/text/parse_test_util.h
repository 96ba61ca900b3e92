// ParseOrFail: the one way a test turns HLO text into a Module. Header-only and included only by
// test files, so no library links the testing layer.
#ifndef XSHARD_TEXT_PARSE_TEST_UTIL_H_
#define XSHARD_TEXT_PARSE_TEST_UTIL_H_

#include <memory>
#include <string_view>

#include "xshard/ir/module.h"
#include "xshard/testing/value_or_fail.h"
#include "xshard/text/parser.h"

namespace xs::testing {

// The module `text` parses to; never nullptr. On a parse error it throws StatusFailure (see
// ValueOrFail), which fails the running test with the parser's message ("name:line:col: error:
// ...", the source line and a caret) and goes on to the next test instead of crashing the
// binary. `name` labels the error messages.
// Example: std::unique_ptr<Module> m = ParseOrFail("ENTRY e {\n ROOT p = f32[] parameter(0)\n}");
inline std::unique_ptr<Module> ParseOrFail(std::string_view text, std::string_view name = "test.hlo") {
  return ValueOrFail(ParseHloModule(text, name));
}

}  // namespace xs::testing

#endif  // XSHARD_TEXT_PARSE_TEST_UTIL_H_
