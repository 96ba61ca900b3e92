// ValueOrFail: how a test helper stops one test on a bad Status. It throws; GoogleTest reports an
// exception thrown from a test body as that test's failure (with the message) and runs the next
// test, where XS_CHECK would abort the whole test binary.
#ifndef XSHARD_TESTING_VALUE_OR_FAIL_H_
#define XSHARD_TESTING_VALUE_OR_FAIL_H_

#include <stdexcept>
#include <string_view>
#include <utility>

#include "xshard/base/status.h"
#include "xshard/base/strings.h"

namespace xs::testing {

// The error a failed ValueOrFail throws: the status text, then `context` when given.
class StatusFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The value of `v`; throws StatusFailure (failing the running test) when `v` holds an error.
// Example: std::unique_ptr<Module> m = ValueOrFail(ParseHloModule(text), text);
template <typename T>
T ValueOrFail(StatusOr<T> v, std::string_view context = "") {
  if (!v.ok()) throw StatusFailure(StrCat(v.status().ToString(), context.empty() ? "" : "\n", context));
  return std::move(v).value();
}

}  // namespace xs::testing

#endif  // XSHARD_TESTING_VALUE_OR_FAIL_H_
