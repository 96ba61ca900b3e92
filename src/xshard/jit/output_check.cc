// Elementwise comparison of output leaves with allclose bounds per element type (the element rule
// and the statistics are core/numerics' AccumulateElementDiffs).
#include "xshard/jit/output_check.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>

#include "xshard/base/strings.h"
#include "xshard/core/numerics.h"
#include "xshard/core/shape.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"

namespace xs {
namespace {

// Element i as (real, imaginary).
std::complex<double> Element(const Array& a, int64_t i) {
  if (a.dtype() == DType::kC64) return std::complex<double>(a.values<std::complex<float>>()[i]);
  if (a.dtype() == DType::kC128) return a.values<std::complex<double>>()[i];
  return {a.GetDouble(i), 0.0};
}

// Errors to 3 significant digits ("1.2e-07", "0.667"); values with full precision.
std::string Short(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", x);
  return buf;
}

}  // namespace

Tolerance DefaultTolerance(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kC128:
      return {1e-10, 1e-10, std::ldexp(1.0, -50)};
    case DType::kF32:
    case DType::kC64:
      return {1e-4, 1e-4, std::ldexp(1.0, -21)};
    case DType::kF16:
      return {1e-2, 1e-2, std::ldexp(1.0, -8)};
    case DType::kBF16:
      return {5e-2, 5e-2, std::ldexp(1.0, -5)};
    default:
      // The narrow floats (f8*, f4e2m1fn) keep at most 4 significant bits.
      if (IsNarrowFloat(dtype)) return {0.25, 0.25, 0};
      return {0, 0, 0};
  }
}

std::string OutputDiff::ToString(const std::vector<int64_t>& dims, DType dtype, std::string_view label) const {
  std::string s = StrCat(label.empty() ? StrCat("out", output) : std::string(label), " ", DTypeName(dtype), "[", JoinDims(dims), "]: max abs error ",
                         Short(max_abs_error), ", max rel error ", Short(max_rel_error), " (atol ", Short(tolerance.atol),
                         ", rtol ", Short(tolerance.rtol));
  if (within_scale > 0) {
    StrAppend(&s, "; ", within_scale, within_scale == 1 ? " element" : " elements", " within ",
              Short(tolerance.scale_tol * scale_growth), " x largest |want| ", Short(largest));
  }
  s += "): ";
  if (ok()) return s + "ok";
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  StrAppend(&s, mismatches, " of ", count, " elements differ, first at [", JoinDims(first_mismatch),
            "]: got ", got, ", want ", want);
  return s;
}

int64_t LongestSum(const Module& module) {
  int64_t longest = 1;
  auto product = [](const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
    int64_t n = 1;
    for (int64_t d : which) {
      if (d >= 0 && d < static_cast<int64_t>(dims.size())) n *= std::max<int64_t>(dims[d], 1);
    }
    return n;
  };
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      const Attributes& a = inst->attrs();
      int64_t terms = 1;
      if (inst->opcode() == Opcode::kDot && a.dot && inst->operand_count() > 0 &&
          inst->operand(0)->shape().IsArray()) {
        terms = product(inst->operand(0)->shape().dims(), a.dot->lhs_contracting);
      } else if (inst->opcode() == Opcode::kConvolution && a.conv_dims && inst->operand_count() > 1 &&
                 inst->operand(1)->shape().IsArray()) {
        std::vector<int64_t> summed = a.conv_dims->kernel_spatial;
        summed.push_back(a.conv_dims->kernel_input_feature);
        terms = product(inst->operand(1)->shape().dims(), summed);
      } else if (inst->opcode() == Opcode::kReduce && a.dimensions && inst->operand_count() > 0 &&
                 inst->operand(0)->shape().IsArray()) {
        terms = product(inst->operand(0)->shape().dims(), *a.dimensions);
      } else if (inst->opcode() == Opcode::kReduceWindow && a.window) {
        for (const WindowDim& d : a.window->dims) terms *= std::max<int64_t>(d.size, 1);
      }
      longest = std::max(longest, terms);
    }
  }
  return longest;
}

StatusOr<OutputDiff> CompareOutput(const Array& g, const Array& w, int64_t index,
                                   std::optional<Tolerance> tolerance, int64_t summed_terms) {
  if (g.dtype() != w.dtype() || g.dims() != w.dims()) {
    return InvalidArgument("output ", index, " is ", g.shape().ToString(false), " but the reference's is ",
                           w.shape().ToString(false));
  }
  return CompareOutputBlocks({OutputBlock{&g, std::vector<int64_t>(g.dims().size(), 0), g.dims()}}, w, index,
                             tolerance, summed_terms);
}

namespace {

Status CheckBlock(const OutputBlock& b, const Array& w, int64_t index) {
  if (b.held == nullptr || b.held->dtype() != w.dtype() || b.held->rank() != w.rank() ||
      b.start.size() != w.dims().size() || b.sizes.size() != w.dims().size()) {
    return InvalidArgument("output ", index, ": a block of ",
                           b.held == nullptr ? std::string("nothing") : b.held->shape().ToString(false),
                           " does not match the reference's ", w.shape().ToString(false));
  }
  for (size_t d = 0; d < w.dims().size(); ++d) {
    if (b.start[d] < 0 || b.sizes[d] < 0 || b.start[d] + b.sizes[d] > w.dims()[d] || b.sizes[d] > b.held->dims()[d]) {
      return InvalidArgument("output ", index, ": the block [", JoinDims(b.start), "] + [", JoinDims(b.sizes),
                             "] held in ", b.held->shape().ToString(false), " is outside the reference's ",
                             w.shape().ToString(false));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<OutputDiff> CompareOutputBlocks(const std::vector<OutputBlock>& got, const Array& w, int64_t index,
                                         std::optional<Tolerance> tolerance, int64_t summed_terms) {
  int64_t covered = 0;
  for (const OutputBlock& b : got) {
    XS_RETURN_IF_ERROR(CheckBlock(b, w, index));
    covered += Product(b.sizes);
  }
  if (covered != w.num_elements()) {
    return InvalidArgument("output ", index, ": its blocks hold ", covered, " elements but the reference ",
                           w.shape().ToString(false), " has ", w.num_elements());
  }
  OutputDiff diff;
  diff.output = index;
  diff.tolerance = tolerance.value_or(DefaultTolerance(w.dtype()));
  // Element by element through the arrays' own storage: no widened or global copies.
  for (int64_t i = 0; i < w.num_elements(); ++i) {
    const double magnitude = std::abs(Element(w, i));
    if (std::isfinite(magnitude)) diff.largest = std::max(diff.largest, magnitude);
  }
  const double growth = std::max(1.0, std::sqrt(static_cast<double>(std::max<int64_t>(summed_terms, 1))) / 8);
  const double scale_term = diff.tolerance.scale_tol * diff.largest * growth;
  diff.scale_growth = growth;
  // Element closeness and the statistics are core/numerics' (NaN in both places is equal).
  const ElementBound bound{diff.tolerance.atol, diff.tolerance.rtol, scale_term, true};
  ElementDiffs found;
  for (const OutputBlock& b : got) {
    XS_RETURN_IF_ERROR(AccumulateElementDiffs(*b.held, std::vector<int64_t>(b.sizes.size(), 0), w,
                                              b.start, b.sizes, bound, &found));
  }
  diff.max_abs_error = found.max_abs_error;
  diff.max_rel_error = found.max_rel_error;
  diff.mismatches = found.not_close;
  diff.within_scale = found.close_by_extra;
  diff.first_mismatch = std::move(found.first_failure);
  diff.got = found.first_got;
  diff.want = found.first_want;
  return diff;
}

StatusOr<std::vector<OutputDiff>> CompareOutputs(const std::vector<Array>& got,
                                                 const std::vector<Array>& want,
                                                 std::optional<Tolerance> tolerance, int64_t summed_terms) {
  if (got.size() != want.size()) {
    return InvalidArgument("got ", got.size(), " outputs but the reference has ", want.size());
  }
  std::vector<OutputDiff> diffs;
  for (size_t o = 0; o < got.size(); ++o) {
    XS_ASSIGN_OR_RETURN(OutputDiff d, CompareOutput(got[o], want[o], static_cast<int64_t>(o), tolerance, summed_terms));
    diffs.push_back(std::move(d));
  }
  return diffs;
}

}  // namespace xs
