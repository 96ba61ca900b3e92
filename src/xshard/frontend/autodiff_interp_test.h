// Test support for autodiff_numeric_test.cc: a small host interpreter of Jaxprs in double
// precision (every dtype computed as f64, pred as 0/1), written independently of the front end's
// evaluation so gradients can be checked against central finite differences. Covers the
// primitives autodiff differentiates and the ones it emits (add_any, select_and_scatter_add).
#ifndef XSHARD_FRONTEND_AUTODIFF_INTERP_TEST_H_
#define XSHARD_FRONTEND_AUTODIFF_INTERP_TEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/frontend/jaxpr.h"

namespace xs::fe::testing {

struct HostValue {
  std::vector<int64_t> dims;
  std::vector<double> v;
};

// Evaluates `j` on `args` (one per invar); an unknown primitive is an Unimplemented error.
StatusOr<std::vector<HostValue>> Interpret(const Jaxpr& j, const std::vector<HostValue>& args);

}  // namespace xs::fe::testing

#endif  // XSHARD_FRONTEND_AUTODIFF_INTERP_TEST_H_
