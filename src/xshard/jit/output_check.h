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
#include "xshard/ir/module.h"

namespace xs {

// An element passes when |got - want| <= atol + rtol * |want| + scale_tol * L * G, where L is
// the largest finite |want| of the whole output and G = max(1, sqrt(K) / 8) grows with K, the
// most terms one sum of the program adds (CompareOutputs' `summed_terms`).
struct Tolerance {
  double atol = 0;
  double rtol = 0;
  // Why the last term: a sum computed in partial sums (a dot or reduce whose contracting dim is
  // split over devices) rounds each partial sum and each step of the all-reduce to the element
  // type, so an element that comes out small by cancellation still carries the rounding error of
  // the large partial sums it came from: ulps of the magnitudes summed, not of its own value.
  // Those partial sums reach the output's scale L, and two summation orders of K terms drift
  // apart like a random walk of K roundings, sqrt(K) ulps (G; K up to 64 keeps G = 1).
  double scale_tol = 0;
};

// The most terms one element of any sum in `module` adds (all computations): a dot's
// contracting size, a convolution's kernel size over its input features and window, a reduce's
// reduced dims, a reduce-window's window; 1 when the module sums nothing. For CompareOutputs.
int64_t LongestSum(const Module& module);

// The bound a partitioned result is held to against the one-device result. Sums run in another
// order on N devices, so floating results may differ in the last bits (scaled by the element
// type's precision); integers and pred must match exactly.
// (atol / rtol / scale_tol): f64 1e-10 / 1e-10 / 2^-50, f32 1e-4 / 1e-4 / 2^-21,
// f16 1e-2 / 1e-2 / 2^-8, bf16 5e-2 / 5e-2 / 2^-5 (scale_tol: 4 ulps of the largest value),
// fp8 0.25 / 0.25 / 0, complex like its component type, integers and pred 0 / 0 / 0 (exact).
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
  double largest = 0;            // the largest finite |want| (L of the bound)
  int64_t within_scale = 0;      // elements that pass only by the scale_tol * L * G term
  double scale_growth = 1;       // G
  bool ok() const { return mismatches == 0; }
  // "out0 f32[8,4]: max abs error 1.2e-07, max rel error 3.1e-07 (atol 1e-05, rtol 0.0001): ok"
  // or "...: 3 of 32 elements differ, first at [1,2]: got 5, want 4". When elements needed the
  // scale term, the bound says so: "(atol 0.05, rtol 0.05; 2 elements within 0.0312 x largest
  // |want| 26.8): ok". `label` replaces "out0".
  std::string ToString(const std::vector<int64_t>& dims, DType dtype, std::string_view label = "") const;
};

// Compares output leaves elementwise. Error when the counts, dtypes or dims differ (naming the
// output). `tolerance` overrides DefaultTolerance for every output; `summed_terms` is K above.
StatusOr<std::vector<OutputDiff>> CompareOutputs(const std::vector<Array>& got,
                                                 const std::vector<Array>& want,
                                                 std::optional<Tolerance> tolerance = std::nullopt,
                                                 int64_t summed_terms = 1);
// One output (`index` names it in the result): reads both arrays in place, block by block, with
// no copy of either.
StatusOr<OutputDiff> CompareOutput(const Array& got, const Array& want, int64_t index = 0,
                                   std::optional<Tolerance> tolerance = std::nullopt,
                                   int64_t summed_terms = 1);

// A block of a global array that another array holds: elements [start, start + sizes) of the
// global array are elements [0, sizes) of *held (a device's padded shard, which may be larger).
struct OutputBlock {
  const Array* held = nullptr;
  std::vector<int64_t> start, sizes;
};
// CompareOutput for an output given as blocks that tile it (each element in exactly one block, as
// ShardedProgram::OutputBlocks gives a sharded output's pieces), each read where it is held: no
// global copy of `got` is made. The result is CompareOutput's on the assembled array (the first
// mismatch is the first in row-major order of the global array). Errors: a block of another
// dtype or rank than `want`, a block outside want's or its holder's dims, blocks whose sizes do
// not add up to want's element count.
StatusOr<OutputDiff> CompareOutputBlocks(const std::vector<OutputBlock>& got, const Array& want,
                                         int64_t index = 0,
                                         std::optional<Tolerance> tolerance = std::nullopt,
                                         int64_t summed_terms = 1);

}  // namespace xs

#endif  // XSHARD_JIT_OUTPUT_CHECK_H_
