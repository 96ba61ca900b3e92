// Element closeness (CompareElement) and the walker over two arrays' boxes; CompareNumerics: one
// pass over GOT and WANT (both converted to f64) gathering the allclose verdict, difference
// statistics, error rows / columns and per-block statistics; and its printer.
#include "xshard/core/numerics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "xshard/base/strings.h"
#include "xshard/core/shape.h"

namespace xs {
namespace {

bool Comparable(DType t) { return IsFloating(t) || IsInteger(t) || t == DType::kPred; }

std::vector<int64_t> Unravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    index[d] = linear % dims[d];
    linear /= dims[d];
  }
  return index;
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string Value(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

std::string Percent(int64_t part, int64_t whole) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f%%", whole ? 100.0 * part / whole : 0.0);
  return buf;
}

std::string IndexText(const std::vector<int64_t>& index) {
  return StrCat("[", StrJoin(index, ", "), "]");
}

Status CheckTolerance(double v, std::string_view name) {
  if (!std::isfinite(v) || v < 0) {
    return InvalidArgument(name, " must be a finite number >= 0, got ", v);
  }
  return OkStatus();
}

// One part's error: 0 for NaN in both or equal values, inf for NaN on one side or an infinity
// against another value.
double PartError(double got, double want) {
  if (std::isnan(got) && std::isnan(want)) return 0;
  if (std::isnan(got) || std::isnan(want)) return std::numeric_limits<double>::infinity();
  if (got == want) return 0;
  if (std::isinf(got) || std::isinf(want)) return std::numeric_limits<double>::infinity();
  return std::fabs(got - want);
}

std::complex<double> ElementAt(const Array& a, int64_t i) {
  if (a.dtype() == DType::kC64) return std::complex<double>(a.values<std::complex<float>>()[i]);
  if (a.dtype() == DType::kC128) return a.values<std::complex<double>>()[i];
  return {a.GetDouble(i), 0.0};
}

Status CheckBox(std::string_view which, const Array& a, const std::vector<int64_t>& start,
                const std::vector<int64_t>& sizes) {
  if (a.dtype() == DType::kToken) return InvalidArgument(which, " is a token: it has no elements");
  if (static_cast<int>(start.size()) != a.rank() || static_cast<int>(sizes.size()) != a.rank()) {
    return InvalidArgument(which, " ", a.shape().ToString(false), " has rank ", a.rank(),
                           " but the box is [", JoinDims(start), "] + [", JoinDims(sizes),
                           "]; give one start and size per dim");
  }
  for (int d = 0; d < a.rank(); ++d) {
    if (start[d] < 0 || sizes[d] < 0 || start[d] + sizes[d] > a.dims()[d]) {
      return InvalidArgument("the box [", JoinDims(start), "] + [", JoinDims(sizes), "] is outside ",
                             which, " ", a.shape().ToString(false), "; give a box inside its dims");
    }
  }
  return OkStatus();
}

}  // namespace

ElementComparison CompareElement(std::complex<double> got, std::complex<double> want,
                                 const ElementBound& bound) {
  ElementComparison c;
  const bool nan_re = std::isnan(got.real()) != std::isnan(want.real());
  const bool nan_im = std::isnan(got.imag()) != std::isnan(want.imag());
  const bool both_nan = (std::isnan(got.real()) && std::isnan(want.real())) ||
                        (std::isnan(got.imag()) && std::isnan(want.imag()));
  c.nan = nan_re || nan_im || both_nan;
  if (nan_re || nan_im || (both_nan && !bound.equal_nan)) {
    c.abs_error = std::numeric_limits<double>::infinity();
    c.verdict = Closeness::kNotClose;
    return c;
  }
  c.abs_error = std::max(PartError(got.real(), want.real()), PartError(got.imag(), want.imag()));
  const double magnitude = std::abs(want);
  const double limit = bound.atol + bound.rtol * (std::isfinite(magnitude) ? magnitude : 0);
  c.verdict = c.abs_error <= limit                 ? Closeness::kClose
              : c.abs_error <= limit + bound.extra ? Closeness::kCloseByExtra
                                                   : Closeness::kNotClose;
  return c;
}

Status AccumulateElementDiffs(const Array& got, const std::vector<int64_t>& got_start,
                              const Array& want, const std::vector<int64_t>& want_start,
                              const std::vector<int64_t>& sizes, const ElementBound& bound,
                              ElementDiffs* diffs) {
  XS_RETURN_IF_ERROR(CheckBox("got", got, got_start, sizes));
  XS_RETURN_IF_ERROR(CheckBox("want", want, want_start, sizes));
  if (Product(sizes) == 0) return OkStatus();
  const std::vector<int64_t> got_strides = RowMajorStrides(got.dims());
  const std::vector<int64_t> want_strides = RowMajorStrides(want.dims());
  const int rank = static_cast<int>(sizes.size());
  // Row by row: `at` indexes the box (its last entry 0); each row is contiguous in both arrays.
  std::vector<int64_t> at(rank, 0);
  const int64_t row = rank == 0 ? 1 : sizes[rank - 1];
  bool failed = false;  // this box's first failure is recorded
  for (;;) {
    int64_t g0 = 0, w0 = 0;
    for (int d = 0; d < rank; ++d) {
      g0 += (got_start[d] + at[d]) * got_strides[d];
      w0 += (want_start[d] + at[d]) * want_strides[d];
    }
    for (int64_t j = 0; j < row; ++j) {
      const std::complex<double> x = ElementAt(got, g0 + j), y = ElementAt(want, w0 + j);
      const ElementComparison c = CompareElement(x, y, bound);
      ++diffs->elements;
      diffs->max_abs_error = std::max(diffs->max_abs_error, c.abs_error);
      const double magnitude = std::abs(y);
      if (magnitude > 0 && std::isfinite(magnitude)) {
        diffs->max_rel_error = std::max(diffs->max_rel_error, c.abs_error / magnitude);
      }
      if (c.verdict == Closeness::kCloseByExtra) ++diffs->close_by_extra;
      if (c.close()) continue;
      ++diffs->not_close;
      if (c.nan) ++diffs->nan_mismatches;
      // Row-major order within the box is WANT's order restricted to it: the box's first failure
      // competes with earlier calls' first failure.
      if (failed) continue;
      failed = true;
      std::vector<int64_t> where(rank);
      for (int d = 0; d < rank; ++d) where[d] = want_start[d] + at[d] + (d == rank - 1 ? j : 0);
      if (diffs->not_close == 1 || where < diffs->first_failure) {
        diffs->first_failure = std::move(where);
        diffs->first_got = x.real();
        diffs->first_want = y.real();
      }
    }
    int d = rank - 2;
    while (d >= 0 && ++at[d] == sizes[d]) at[d--] = 0;
    if (d < 0) break;
  }
  return OkStatus();
}

StatusOr<ElementDiffs> CompareElements(const Array& got, const Array& want,
                                       const ElementBound& bound) {
  if (got.dims() != want.dims()) {
    return InvalidArgument("got ", got.shape().ToString(false), " but want ",
                           want.shape().ToString(false), "; compare arrays of the same dims");
  }
  ElementDiffs diffs;
  const std::vector<int64_t> zero(got.rank(), 0);
  XS_RETURN_IF_ERROR(AccumulateElementDiffs(got, zero, want, zero, got.dims(), bound, &diffs));
  return diffs;
}

StatusOr<NumericsReport> CompareNumerics(const Array& got, const Array& want,
                                         const NumericsOptions& options) {
  const std::string shapes = StrCat("got ", got.shape().ToString(), ", want ", want.shape().ToString());
  if (got.dims() != want.dims()) {
    return InvalidArgument("shapes differ (", shapes,
                           "); compare arrays of the same dims");
  }
  for (DType t : {got.dtype(), want.dtype()}) {
    if (!Comparable(t)) {
      return InvalidArgument(DTypeName(t), " is not supported (", shapes,
                             "); give real arrays (float, integer or pred)");
    }
  }
  if (got.dtype() != want.dtype() && !(IsFloating(got.dtype()) && IsFloating(want.dtype()))) {
    return InvalidArgument("dtypes differ (", shapes,
                           "); only two floating dtypes may differ (compared in f64): convert "
                           "one array to the other's dtype");
  }
  XS_RETURN_IF_ERROR(CheckTolerance(options.atol, "atol"));
  XS_RETURN_IF_ERROR(CheckTolerance(options.rtol, "rtol"));
  if (options.threshold) XS_RETURN_IF_ERROR(CheckTolerance(*options.threshold, "threshold"));
  const std::vector<int64_t>& dims = got.dims();
  const int rank = static_cast<int>(dims.size());
  const int grid_rank = static_cast<int>(options.blocks.size());
  if (grid_rank > rank) {
    return InvalidArgument("a block grid of ", grid_rank, " dims (",
                           StrJoin(options.blocks, ","), ") for arrays of rank ", rank,
                           "; give at most ", rank, " block counts");
  }
  for (int g = 0; g < grid_rank; ++g) {
    const int64_t size = dims[rank - grid_rank + g], b = options.blocks[g];
    if (b < 1 || (b > size && size > 0)) {
      return InvalidArgument("block count ", b, " for dim ", rank - grid_rank + g,
                             " of size ", size, " (", shapes, "); give 1 to ", std::max<int64_t>(size, 1),
                             " blocks");
    }
  }

  NumericsReport r;
  r.got_shape = got.shape();
  r.want_shape = want.shape();
  r.options = options;
  r.elements = got.num_elements();
  r.row_count = rank >= 2 ? dims[rank - 2] : 0;
  r.column_count = rank >= 1 ? dims[rank - 1] : 0;
  const Array g64 = got.Convert(DType::kF64), w64 = want.Convert(DType::kF64);
  const std::span<const double> gv = g64.values<double>(), wv = w64.values<double>();

  // Block bookkeeping: for gridded dim g, block_of[g][i] is the block of index i (array_split).
  std::vector<std::vector<int64_t>> block_of(grid_rank);
  std::vector<int64_t> strides(rank, 1);
  for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  int64_t num_blocks = 1;
  for (int g = 0; g < grid_rank; ++g) {
    const int64_t size = dims[rank - grid_rank + g], b = options.blocks[g];
    const int64_t base = size / b, extra = size % b;
    for (int64_t k = 0; k < b; ++k) {
      const int64_t len = base + (k < extra ? 1 : 0);
      for (int64_t i = 0; i < len; ++i) block_of[g].push_back(k);
    }
    num_blocks *= b;
  }
  std::vector<double> block_sum(grid_rank ? num_blocks : 0, 0.0);
  std::vector<int64_t> block_n(grid_rank ? num_blocks : 0, 0);  // elements without NaN
  if (grid_rank) {
    r.blocks.resize(num_blocks);
    for (int64_t k = 0; k < num_blocks; ++k) {
      BlockNumerics& bn = r.blocks[k];
      bn.index = Unravel(k, options.blocks);
      for (int g = 0; g < grid_rank; ++g) {
        const int64_t size = dims[rank - grid_rank + g], b = options.blocks[g];
        const int64_t base = size / b, extra = size % b, c = bn.index[g];
        bn.start.push_back(c * base + std::min(c, extra));
        bn.limit.push_back(bn.start.back() + base + (c < extra ? 1 : 0));
      }
    }
  }

  const ElementBound bound{options.atol, options.rtol, 0, options.equal_nan};
  std::vector<char> row_bad(r.row_count, 0), col_bad(r.column_count, 0);
  std::vector<double> diffs;
  diffs.reserve(r.elements);
  double sum = 0;
  int64_t worst = -1;
  for (int64_t i = 0; i < r.elements; ++i) {
    const double a = gv[i], b = wv[i];
    const ElementComparison c = CompareElement(a, b, bound);
    const bool close = c.close();
    bool error;
    double diff = 0;
    if (c.nan) {
      error = !close;
      if (error) {
        if (r.nan_mismatches++ == 0) r.first_nan_mismatch = Unravel(i, dims);
      }
    } else {
      diff = c.abs_error;
      error = options.threshold ? diff > *options.threshold : !close;
      diffs.push_back(diff);
      sum += diff;
      if (worst < 0 || diff > r.max_abs_diff) {
        worst = i;
        r.max_abs_diff = diff;
      }
      if (b != 0 && std::isfinite(b)) r.max_rel_diff = std::max(r.max_rel_diff, diff / std::fabs(b));
      else if (b != 0 && diff != 0) r.max_rel_diff = std::numeric_limits<double>::infinity();
    }
    if (!close) ++r.not_close;
    if (error) {
      ++r.errors;
      if (rank >= 1) col_bad[i % r.column_count] = 1;
      if (rank >= 2) row_bad[(i / r.column_count) % r.row_count] = 1;
    }
    if (grid_rank) {
      int64_t k = 0;
      for (int g = 0; g < grid_rank; ++g) {
        const int d = rank - grid_rank + g;
        k = k * options.blocks[g] + block_of[g][(i / strides[d]) % dims[d]];
      }
      BlockNumerics& bn = r.blocks[k];
      ++bn.elements;
      if (!c.nan) {
        block_sum[k] += diff;
        ++block_n[k];
        bn.max_abs_diff = std::max(bn.max_abs_diff, diff);
      }
      if (error) ++bn.errors;
    }
  }
  r.allclose = r.not_close == 0;
  if (!diffs.empty()) {
    const size_t n = diffs.size(), mid = n / 2;
    r.mean_abs_diff = sum / static_cast<double>(n);
    std::nth_element(diffs.begin(), diffs.begin() + mid, diffs.end());
    double median = diffs[mid];
    if (n % 2 == 0) median = (median + *std::max_element(diffs.begin(), diffs.begin() + mid)) / 2;
    r.median_abs_diff = median;
  }
  if (worst >= 0) {
    r.worst_index = Unravel(worst, dims);
    r.worst_got = gv[worst];
    r.worst_want = wv[worst];
  }
  for (int64_t k = 0; k < static_cast<int64_t>(r.blocks.size()); ++k) {
    r.blocks[k].mean_abs_diff = block_n[k] ? block_sum[k] / static_cast<double>(block_n[k]) : 0.0;
  }
  for (int64_t i = 0; i < r.row_count; ++i) if (row_bad[i]) r.error_rows.push_back(i);
  for (int64_t i = 0; i < r.column_count; ++i) if (col_bad[i]) r.error_columns.push_back(i);
  return r;
}

std::string FormatIndexRanges(const std::vector<int64_t>& indices, int max_ranges) {
  std::vector<std::string> parts;
  size_t i = 0;
  int ranges = 0;
  while (i < indices.size()) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (ranges == max_ranges) {
      parts.push_back(StrCat("... (", indices.size() - i, " more)"));
      break;
    }
    parts.push_back(j == i ? StrCat(indices[i]) : StrCat(indices[i], "-", indices[j]));
    ++ranges;
    i = j + 1;
  }
  return StrJoin(parts, ", ");
}

std::string FormatNumericsReport(const NumericsReport& r) {
  const NumericsOptions& o = r.options;
  std::string out = StrCat("got ", r.got_shape.ToString(), ", want ", r.want_shape.ToString(), ": ",
                           r.elements, " elements\n");
  StrAppend(&out, "allclose (atol ", Num(o.atol), ", rtol ", Num(o.rtol),
            o.equal_nan ? ", equal_nan" : "", "): ",
            r.allclose ? "yes" : StrCat("no, ", r.not_close, " of ", r.elements, " elements (",
                                         Percent(r.not_close, r.elements), ") not close"),
            "\n");
  auto line = [&out](std::string_view label, const std::string& value) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%-20s", std::string(label).c_str());
    StrAppend(&out, buf, value, "\n");
  };
  line("max abs diff", Num(r.max_abs_diff));
  line("mean abs diff", Num(r.mean_abs_diff));
  line("median abs diff", Num(r.median_abs_diff));
  line("max rel diff", Num(r.max_rel_diff));
  if (r.nan_mismatches) {
    line("NaN mismatches", StrCat(r.nan_mismatches, ", first at ", IndexText(*r.first_nan_mismatch)));
  }
  const std::string error_label = o.threshold ? StrCat("errors (> ", Num(*o.threshold), ")")
                                              : std::string("errors (not close)");
  line(error_label, StrCat(r.errors, " of ", r.elements, " (", Percent(r.errors, r.elements), ")"));
  auto where = [&](std::string_view label, const std::vector<int64_t>& idx, int64_t count) {
    line(label, StrCat(idx.size(), " of ", count, idx.empty() ? "" : ": ", FormatIndexRanges(idx)));
  };
  if (r.row_count || r.got_shape.rank() >= 2) where("rows with errors", r.error_rows, r.row_count);
  if (r.got_shape.rank() >= 1) where("cols with errors", r.error_columns, r.column_count);
  if (r.worst_index) {
    line("worst", StrCat("at ", IndexText(*r.worst_index), ": got ", Value(r.worst_got), ", want ",
                         Value(r.worst_want), " (diff ", Num(r.max_abs_diff), ")"));
  }
  if (!r.blocks.empty()) {
    const int rank = r.got_shape.rank(), grid = static_cast<int>(o.blocks.size());
    std::vector<int64_t> gridded;
    for (int d = rank - grid; d < rank; ++d) gridded.push_back(d);
    StrAppend(&out, "blocks ", StrJoin(o.blocks, "x"), " over dims ", StrJoin(gridded, ", "), ":\n");
    std::vector<std::string> ranges;
    size_t width = 5;
    for (const BlockNumerics& b : r.blocks) {
      std::vector<std::string> pieces;
      for (size_t g = 0; g < b.start.size(); ++g) pieces.push_back(StrCat(b.start[g], ":", b.limit[g]));
      ranges.push_back(StrCat("[", StrJoin(pieces, ", "), "]"));
      width = std::max(width, ranges.back().size());
    }
    char buf[256];
    std::snprintf(buf, sizeof(buf), "  %-*s  %-12s %-12s %s\n", static_cast<int>(width), "range",
                  "mean abs", "max abs", "errors");
    out += buf;
    for (size_t k = 0; k < r.blocks.size(); ++k) {
      const BlockNumerics& b = r.blocks[k];
      std::snprintf(buf, sizeof(buf), "  %-*s  %-12s %-12s %s (%s)\n", static_cast<int>(width),
                    ranges[k].c_str(), Num(b.mean_abs_diff).c_str(), Num(b.max_abs_diff).c_str(),
                    StrCat(b.errors).c_str(), Percent(b.errors, b.elements).c_str());
      out += buf;
    }
  }
  return out;
}

}  // namespace xs
