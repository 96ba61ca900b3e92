// Numerics report: how far an array GOT is from a reference WANT of the same shape (allclose
// verdict, abs / rel difference statistics, where the errors are, per-block statistics), and a
// printer for it. Seed 004's numerics check as an API.
#ifndef XSHARD_CORE_NUMERICS_H_
#define XSHARD_CORE_NUMERICS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

namespace xs {

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
