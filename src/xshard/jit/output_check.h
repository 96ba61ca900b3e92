// Comparing a program's outputs with reference outputs (a one-device run of the global module):
// per output, the largest absolute and relative error and whether every element is within
// numpy.allclose's bound |got - want| <= atol + rtol * |want| for the element type's tolerance.
#ifndef XSHARD_JIT_OUTPUT_CHECK_H_
#define XSHARD_JIT_OUTPUT_CHECK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

namespace xs {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// The bound a partitioned result is held to against the one-device result. Sums run in another
// order on N devices, so floating results may differ in the last bits (scaled by the element
// type's precision); integers and pred must match exactly.
// (atol / rtol): f64 1e-10 / 1e-10, f32 1e-4 / 1e-4, f16 1e-2 / 1e-2, bf16 5e-2 / 5e-2,
// fp8 0.25 / 0.25, complex like its component type, integers and pred 0 / 0 (exact).
Tolerance DefaultTolerance(DType dtype);

// How one output compares.
struct OutputDiff {
  int64_t output = 0;            // output leaf index
  Tolerance tolerance;           // the bound applied
  double max_abs_error = 0;      // over all elements (NaN in both places counts as equal)
  double max_rel_error = 0;      // |got - want| / |want| (elements with want == 0 excluded)
  int64_t mismatches = 0;        // elements beyond the bound
  std::vector<int64_t> first_mismatch;  // its index; empty when mismatches == 0
  double got = 0, want = 0;      // the values there (real part for complex)
  bool ok() const { return mismatches == 0; }
  // "out0 f32[8,4]: max abs error 1.2e-07, max rel error 3.1e-07 (atol 1e-05, rtol 0.0001): ok"
  // or "...: 3 of 32 elements differ, first at [1,2]: got 5, want 4". `label` replaces "out0".
  std::string ToString(const std::vector<int64_t>& dims, DType dtype, std::string_view label = "") const;
};

// Compares output leaves elementwise. Error when the counts, dtypes or dims differ (naming the
// output). `tolerance` overrides DefaultTolerance for every output.
StatusOr<std::vector<OutputDiff>> CompareOutputs(const std::vector<Array>& got,
                                                 const std::vector<Array>& want,
                                                 std::optional<Tolerance> tolerance = std::nullopt);

}  // namespace xs

#endif  // XSHARD_JIT_OUTPUT_CHECK_H_
