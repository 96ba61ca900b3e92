// Element closeness (the one rule every comparison of computed with reference arrays uses: the
// numerics report, jit output checks, the SPMD test harness) and its array walker; the numerics
// report (allclose verdict, abs / rel statistics, error rows / columns, blocks) and its printer.
#ifndef XSHARD_CORE_NUMERICS_H_
#define XSHARD_CORE_NUMERICS_H_

#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

namespace xs {

// The bound one element is held to: close when |got - want| <= atol + rtol * |want|, or within
// `extra` more (an absolute term a caller computes, e.g. from the output's scale).
struct ElementBound {
  double atol = 0;
  double rtol = 0;
  double extra = 0;
  // NaN in both GOT and WANT at an element counts as close (numpy's equal_nan).
  bool equal_nan = true;
};

enum class Closeness { kClose, kCloseByExtra, kNotClose };

// How one element compares.
struct ElementComparison {
  // max over the real and imaginary parts of: 0 for NaN in both or for equal values (equal
  // infinities included); inf for NaN on one side or an infinity against another value;
  // else |got - want|.
  double abs_error = 0;
  bool nan = false;  // a NaN on either side (in either part)
  // abs_error <= atol + rtol * |want| (|want| the complex magnitude; an infinite or NaN |want|
  // adds nothing): kClose; else abs_error <= that + extra: kCloseByExtra; else kNotClose. NaN in
  // both is kClose when equal_nan, kNotClose when not; NaN on one side is kNotClose.
  Closeness verdict = Closeness::kClose;
  bool close() const { return verdict != Closeness::kNotClose; }
};
ElementComparison CompareElement(std::complex<double> got, std::complex<double> want,
                                 const ElementBound& bound);

// What comparing elements of GOT with elements of WANT found (accumulates over several calls).
struct ElementDiffs {
  int64_t elements = 0;
  // max abs_error over the elements (inf when one has a NaN mismatch or an unequal infinity).
  double max_abs_error = 0;
  // max abs_error / |want| over the elements whose |want| is finite and > 0.
  double max_rel_error = 0;
  int64_t not_close = 0;
  int64_t close_by_extra = 0;  // elements close only by ElementBound::extra
  int64_t nan_mismatches = 0;  // elements not close because of a NaN
  // The not-close element first in row-major order, as an index of WANT (over all calls: the
  // smallest), and both values there (real parts); empty when not_close == 0.
  std::vector<int64_t> first_failure;
  double first_got = 0, first_want = 0;
  bool ok() const { return not_close == 0; }
};

// Compares the box [got_start, got_start + sizes) of GOT elementwise with the box
// [want_start, want_start + sizes) of WANT (the arrays may have other dims, e.g. a padded shard
// against the global array), adding to *diffs. Elements are read in place as f64 (complex as two
// f64 parts, integers as f64: s64 / u64 beyond 2^53 round). Errors (InvalidArgument): a token
// dtype, a rank that differs from sizes', a box outside its array.
Status AccumulateElementDiffs(const Array& got, const std::vector<int64_t>& got_start,
                              const Array& want, const std::vector<int64_t>& want_start,
                              const std::vector<int64_t>& sizes, const ElementBound& bound,
                              ElementDiffs* diffs);
// GOT against WANT of the same dims (any dtypes AccumulateElementDiffs takes); error when the
// dims differ.
StatusOr<ElementDiffs> CompareElements(const Array& got, const Array& want,
                                       const ElementBound& bound);

struct NumericsOptions {
  // numpy.allclose's tolerances and defaults: an element is close when
  // |got - want| <= atol + rtol * |want| (asymmetric: the tolerance scales with WANT).
  double atol = 1e-8;
  double rtol = 1e-5;
  // numpy's equal_nan: when true, NaN in both GOT and WANT at an element counts as close.
  bool equal_nan = false;
  // Which elements count as errors for the error count, the rows / columns and the blocks:
  // |got - want| > threshold when given (seed 004 uses 0.1), else the elements that are not close.
  std::optional<double> threshold = std::nullopt;
  // Block grid over the last blocks.size() dims (e.g. {2, 2}: seed 004's quadrants); empty: no
  // per-block statistics. A dim of size n split in b blocks is split like numpy.array_split: the
  // first n % b blocks get one element more.
  std::vector<int64_t> blocks = {};
};

// Statistics of one block of the grid.
struct BlockNumerics {
  std::vector<int64_t> index;              // block coordinates in the grid
  std::vector<int64_t> start, limit;       // element range [start, limit) per gridded dim
  int64_t elements = 0;
  double mean_abs_diff = 0, max_abs_diff = 0;
  int64_t errors = 0;                      // elements counted as errors (see threshold)
};

struct NumericsReport {
  Shape got_shape, want_shape;
  NumericsOptions options;
  int64_t elements = 0;
  // numpy.allclose(got, want, rtol, atol, equal_nan): every element close (true for 0 elements).
  bool allclose = true;
  int64_t not_close = 0;
  // NaN: an element with NaN in GOT or WANT (not both when equal_nan) is not close, counts as an
  // error, and is left out of the diff statistics below (counted in nan_mismatches). Infinities:
  // equal infinities differ by 0; any other pair with an infinity differs by inf.
  int64_t nan_mismatches = 0;
  std::optional<std::vector<int64_t>> first_nan_mismatch;
  // Over the elements without NaN (0 when there are none). median: numpy.median (the mean of the
  // two middle values for an even count).
  double max_abs_diff = 0, mean_abs_diff = 0, median_abs_diff = 0;
  // max |got - want| / |want| over the elements with want != 0 (0 when there are none).
  double max_rel_diff = 0;
  // Elements counted as errors (see NumericsOptions::threshold).
  int64_t errors = 0;
  // Indices along dim rank-2 ("rows") and rank-1 ("columns") holding at least one error, over
  // all leading dims; rows is empty for rank < 2, both are empty for scalars. row_count /
  // column_count: the sizes of those dims (0 when missing).
  std::vector<int64_t> error_rows, error_columns;
  int64_t row_count = 0, column_count = 0;
  // The element with the largest |got - want| (the first one on ties, like numpy.argmax), with
  // both values; absent when every element has a NaN.
  std::optional<std::vector<int64_t>> worst_index;
  double worst_got = 0, worst_want = 0;
  std::vector<BlockNumerics> blocks;

  double error_percent() const { return elements ? 100.0 * errors / elements : 0.0; }
};

// Compares GOT with WANT. Errors (InvalidArgument naming both shapes / dtypes): different dims;
// complex or token dtypes; dtypes that differ, unless both are floating (bf16 against f32 is
// compared in f64, as numpy promotes); negative or non-finite atol / rtol / threshold; a block
// grid with more dims than the arrays, or a block count < 1 or larger than its dim.
// Values are compared as f64 (s64 / u64 beyond 2^53 round).
StatusOr<NumericsReport> CompareNumerics(const Array& got, const Array& want,
                                         const NumericsOptions& options = {});

// A readable table of the report (several lines, each ending in '\n'), e.g.
//   allclose (atol 0.01, rtol 0.01): no, 3 of 16 elements (18.75%) not close
//   max abs diff       0.5
//   ...
std::string FormatNumericsReport(const NumericsReport& report);

// "0-3, 7, 9-10": sorted indices as ranges; after `max_ranges` ranges, ", ... (N more)".
std::string FormatIndexRanges(const std::vector<int64_t>& indices, int max_ranges = 8);

}  // namespace xs

#endif  // XSHARD_CORE_NUMERICS_H_
