// Helpers the executor's tests share: run HLO text on arguments, read an array's values.
#ifndef XSHARD_EXEC_EXEC_TEST_UTIL_H_
#define XSHARD_EXEC_EXEC_TEST_UTIL_H_

#include <memory>
#include <string_view>
#include <vector>

#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"

namespace xs::testing {

// Parses `text` and runs it once on `args` (one device).
inline StatusOr<std::vector<Array>> RunText(std::string_view text, std::vector<Array> args) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  if (!m.ok()) return m.status();
  return Execute(**m, args);
}

// The elements of `a` in row-major order, as doubles.
inline std::vector<double> Doubles(const Array& a) {
  std::vector<double> v;
  for (int64_t i = 0; i < a.num_elements(); ++i) v.push_back(a.GetDouble(i));
  return v;
}

}  // namespace xs::testing

#endif  // XSHARD_EXEC_EXEC_TEST_UTIL_H_
