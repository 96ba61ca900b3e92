// Shape inference for contractions, reductions and windowed / indexed ops: dot, convolution,
// reduce, reduce-window, select-and-scatter, gather, scatter, sort, topk, map.
#include <algorithm>
#include <numeric>

#include "xshard/ir/shape_inference.h"
#include "xshard/ir/shape_inference_util.h"

namespace xs {

using shape_inference::Contains;
using shape_inference::ExpectArray;

namespace {

// XLA's MaybeUpcast: the declared (preferred) type may widen the result; an integer result may not
// narrow.
StatusOr<DType> MaybeUpcast(DType from, std::optional<DType> preferred) {
  if (!preferred || *preferred == from) return from;
  if (!IsFloating(from) && shape_inference::BitWidth(*preferred) < shape_inference::BitWidth(from)) {
    return InvalidArgument("result type ", DTypeName(*preferred), " is narrower than the ",
                           "operand type ", DTypeName(from));
  }
  return *preferred;
}

Status CheckDotSide(const Shape& s, std::string_view side, std::span<const int64_t> batch,
                    std::span<const int64_t> contracting) {
  for (int64_t d : batch) {
    if (d < 0 || d >= s.rank()) {
      return InvalidArgument(side, " batch dim ", d, " is out of range for ", ShapeText(s));
    }
  }
  for (int64_t d : contracting) {
    if (d < 0 || d >= s.rank()) {
      return InvalidArgument(side, " contracting dim ", d, " is out of range for ",
                             ShapeText(s));
    }
  }
  std::vector<int64_t> all(batch.begin(), batch.end());
  all.insert(all.end(), contracting.begin(), contracting.end());
  std::sort(all.begin(), all.end());
  if (std::adjacent_find(all.begin(), all.end()) != all.end()) {
    return InvalidArgument(side, " batch and contracting dims {", StrJoin(batch, ","), "} and {",
                           StrJoin(contracting, ","), "} repeat a dim of ", ShapeText(s));
  }
  return OkStatus();
}

}  // namespace

StatusOr<Shape> InferDotShape(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& dn,
                              std::optional<DType> preferred) {
  XS_RETURN_IF_ERROR(ExpectArray(lhs, "lhs"));
  XS_RETURN_IF_ERROR(ExpectArray(rhs, "rhs"));
  XS_RETURN_IF_ERROR(CheckDotSide(lhs, "lhs", dn.lhs_batch, dn.lhs_contracting));
  XS_RETURN_IF_ERROR(CheckDotSide(rhs, "rhs", dn.rhs_batch, dn.rhs_contracting));
  if (dn.lhs_contracting.size() != dn.rhs_contracting.size()) {
    return InvalidArgument("lhs has ", dn.lhs_contracting.size(), " contracting dims but rhs has ",
                           dn.rhs_contracting.size());
  }
  if (dn.lhs_batch.size() != dn.rhs_batch.size()) {
    return InvalidArgument("lhs has ", dn.lhs_batch.size(), " batch dims but rhs has ",
                           dn.rhs_batch.size());
  }
  for (size_t i = 0; i < dn.lhs_contracting.size(); ++i) {
    int64_t l = lhs.dim(static_cast<int>(dn.lhs_contracting[i]));
    int64_t r = rhs.dim(static_cast<int>(dn.rhs_contracting[i]));
    if (l != r) {
      return InvalidArgument("contracting dim sizes differ: lhs dim ", dn.lhs_contracting[i],
                             " of ", ShapeText(lhs), " is ", l, ", rhs dim ",
                             dn.rhs_contracting[i], " of ", ShapeText(rhs), " is ", r);
    }
  }
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i) {
    int64_t l = lhs.dim(static_cast<int>(dn.lhs_batch[i]));
    int64_t r = rhs.dim(static_cast<int>(dn.rhs_batch[i]));
    if (l != r) {
      return InvalidArgument("batch dim sizes differ: lhs dim ", dn.lhs_batch[i], " of ",
                             ShapeText(lhs), " is ", l, ", rhs dim ", dn.rhs_batch[i], " of ",
                             ShapeText(rhs), " is ", r);
    }
  }
  std::vector<int64_t> dims;
  for (int64_t d : dn.lhs_batch) dims.push_back(lhs.dim(static_cast<int>(d)));
  for (int i = 0; i < lhs.rank(); ++i) {
    if (!Contains(dn.lhs_batch, i) && !Contains(dn.lhs_contracting, i)) dims.push_back(lhs.dim(i));
  }
  for (int i = 0; i < rhs.rank(); ++i) {
    if (!Contains(dn.rhs_batch, i) && !Contains(dn.rhs_contracting, i)) dims.push_back(rhs.dim(i));
  }
  XS_ASSIGN_OR_RETURN(DType type,
                      MaybeUpcast(shape_inference::HigherPrecision(lhs.dtype(), rhs.dtype()), preferred));
  return Shape(type, std::move(dims));
}

StatusOr<Shape> InferWindowOutputShape(const Shape& base, const Window& window, DType dtype) {
  if (static_cast<int64_t>(window.dims.size()) != base.rank()) {
    return InvalidArgument("window has ", window.dims.size(), " dims but the base ",
                           ShapeText(base), " has rank ", base.rank());
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < base.rank(); ++i) {
    const WindowDim& w = window.dims[i];
    if (w.size <= 0 || w.stride <= 0 || w.lhs_dilation < 1 || w.rhs_dilation < 1) {
      return InvalidArgument("window dim ", i, " needs size, stride and dilations >= 1 (size ",
                             w.size, ", stride ", w.stride, ", lhs_dilate ", w.lhs_dilation,
                             ", rhs_dilate ", w.rhs_dilation, ")");
    }
    auto dilated = [](int64_t n, int64_t k) { return n == 0 ? 0 : (n - 1) * k + 1; };
    int64_t padded = w.pad_low + dilated(base.dim(i), w.lhs_dilation) + w.pad_high;
    int64_t win = dilated(w.size, w.rhs_dilation);
    dims.push_back(padded < win ? 0 : (padded - win) / w.stride + 1);
  }
  return Shape(dtype, std::move(dims));
}

StatusOr<Shape> InferConvolutionShape(const Shape& lhs, const Shape& rhs, int64_t fgc,
                                      int64_t bgc, const Window& window,
                                      const ConvolutionDimensionNumbers& dn,
                                      std::optional<DType> preferred) {
  XS_RETURN_IF_ERROR(ExpectArray(lhs, "lhs"));
  XS_RETURN_IF_ERROR(ExpectArray(rhs, "rhs"));
  if (fgc <= 0 || bgc <= 0 || (fgc > 1 && bgc > 1)) {
    return InvalidArgument("feature_group_count ", fgc, " and batch_group_count ", bgc,
                           " must be positive and not both above 1");
  }
  const size_t ns = dn.input_spatial.size();
  if (dn.kernel_spatial.size() != ns || dn.output_spatial.size() != ns ||
      window.dims.size() != ns) {
    return InvalidArgument("dim_labels and window disagree on the spatial dim count (input ", ns,
                           ", kernel ", dn.kernel_spatial.size(), ", output ",
                           dn.output_spatial.size(), ", window ", window.dims.size(), ")");
  }
  const int64_t nd = static_cast<int64_t>(ns) + 2;
  if (lhs.rank() != nd || rhs.rank() != nd) {
    return InvalidArgument("convolution with ", ns, " spatial dims needs rank-", nd,
                           " operands, got lhs ", ShapeText(lhs), " and rhs ", ShapeText(rhs));
  }
  auto is_perm = [nd](int64_t a, int64_t b, const std::vector<int64_t>& s) {
    std::vector<int64_t> all = {a, b};
    all.insert(all.end(), s.begin(), s.end());
    return shape_inference::IsPermutation(all, nd);
  };
  if (!is_perm(dn.input_batch, dn.input_feature, dn.input_spatial) ||
      !is_perm(dn.kernel_input_feature, dn.kernel_output_feature, dn.kernel_spatial) ||
      !is_perm(dn.output_batch, dn.output_feature, dn.output_spatial)) {
    return InvalidArgument("dim_labels must name each of the ", nd, " dims exactly once");
  }
  const int64_t in_features = lhs.dim(dn.input_feature), batch = lhs.dim(dn.input_batch);
  const int64_t k_in = rhs.dim(dn.kernel_input_feature), k_out = rhs.dim(dn.kernel_output_feature);
  if (in_features % fgc != 0 || in_features / fgc != k_in) {
    return InvalidArgument("lhs feature size ", in_features, " / feature_group_count ", fgc,
                           " must equal the kernel input feature size ", k_in, " (lhs ",
                           ShapeText(lhs), ", rhs ", ShapeText(rhs), ")");
  }
  if (k_out % fgc != 0 || k_out % bgc != 0) {
    return InvalidArgument("kernel output feature size ", k_out, " must divide by ",
                           "feature_group_count ", fgc, " and batch_group_count ", bgc);
  }
  if (batch % bgc != 0) {
    return InvalidArgument("lhs batch size ", batch, " must divide by batch_group_count ", bgc);
  }
  std::vector<int64_t> base_dims;
  for (size_t i = 0; i < ns; ++i) {
    base_dims.push_back(lhs.dim(dn.input_spatial[i]));
    if (rhs.dim(dn.kernel_spatial[i]) != window.dims[i].size) {
      return InvalidArgument("window size ", window.dims[i].size, " of spatial dim ", i,
                             " differs from the kernel size ", rhs.dim(dn.kernel_spatial[i]),
                             " in ", ShapeText(rhs));
    }
  }
  XS_ASSIGN_OR_RETURN(Shape spatial, InferWindowOutputShape(Shape(lhs.dtype(), base_dims),
                                                            window, lhs.dtype()));
  std::vector<int64_t> dims(nd);
  dims[dn.output_batch] = batch / bgc;
  dims[dn.output_feature] = k_out;
  for (size_t i = 0; i < ns; ++i) dims[dn.output_spatial[i]] = spatial.dim(static_cast<int>(i));
  XS_ASSIGN_OR_RETURN(DType type,
                      MaybeUpcast(shape_inference::HigherPrecision(lhs.dtype(), rhs.dtype()), preferred));
  return Shape(type, std::move(dims));
}

Status VerifyReducerShape(const ProgramShape& reducer, std::span<const Shape> init_values,
                          std::span<const DType> input_types) {
  const size_t n = input_types.size();
  if (reducer.parameters.size() != 2 * n) {
    return InvalidArgument("the reducer ", reducer.ToString(), " must take ", 2 * n,
                           " parameters (accumulators then inputs) for ", n, " input(s)");
  }
  std::vector<Shape> acc;
  if (reducer.result.IsTuple()) {
    acc = reducer.result.tuple_shapes();
  } else {
    acc.push_back(reducer.result);
  }
  if (acc.size() != n || (n > 1 && !reducer.result.IsTuple())) {
    return InvalidArgument("the reducer ", reducer.ToString(), " must return ",
                           n == 1 ? "a scalar" : StrCat("a tuple of ", n, " scalars"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (!acc[i].IsArray() || acc[i].rank() != 0) {
      return InvalidArgument("the reducer ", reducer.ToString(), " must return scalars");
    }
    if (!reducer.parameters[i].Compatible(acc[i])) {
      return InvalidArgument("reducer parameter ", i, " ", ShapeText(reducer.parameters[i]),
                             " differs from its result ", ShapeText(acc[i]));
    }
    if (!CompatibleIgnoringFpPrecision(acc[i], init_values[i])) {
      return InvalidArgument("reducer accumulator ", ShapeText(acc[i]),
                             " differs from the init value ", ShapeText(init_values[i]));
    }
    Shape elem(input_types[i], {});
    if (!CompatibleIgnoringFpPrecision(elem, reducer.parameters[n + i]) ||
        !CompatibleIgnoringFpPrecision(acc[i], reducer.parameters[n + i])) {
      return InvalidArgument("reducer parameter ", n + i, " ",
                             ShapeText(reducer.parameters[n + i]),
                             " must match the input element type ", DTypeName(input_types[i]),
                             " and the accumulator ", ShapeText(acc[i]));
    }
  }
  return OkStatus();
}

namespace {

// Splits reduce-style operands into N inputs of equal dims and N inits; returns N.
StatusOr<size_t> SplitInputsAndInits(std::span<const Shape> operands, std::string_view op) {
  if (operands.empty() || operands.size() % 2 != 0) {
    return InvalidArgument(op, " needs inputs followed by as many init values, got ",
                           operands.size(), " operands");
  }
  const size_t n = operands.size() / 2;
  for (size_t i = 0; i < n; ++i) {
    XS_RETURN_IF_ERROR(ExpectArray(operands[i], StrCat("input ", i)));
    if (operands[i].dims() != operands[0].dims()) {
      return InvalidArgument("input ", i, " ", ShapeText(operands[i]),
                             " must have the dims of input 0 ", ShapeText(operands[0]));
    }
  }
  return n;
}

}  // namespace

StatusOr<Shape> InferReduceShape(std::span<const Shape> operands, std::span<const int64_t> dims,
                                 const ProgramShape& reducer) {
  XS_ASSIGN_OR_RETURN(size_t n, SplitInputsAndInits(operands, "reduce"));
  const Shape& arg = operands[0];
  XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(dims, arg.rank(), "reduce dimension", arg, true));
  std::vector<DType> types;
  for (size_t i = 0; i < n; ++i) types.push_back(operands[i].dtype());
  XS_RETURN_IF_ERROR(VerifyReducerShape(reducer, operands.subspan(n), types));
  std::vector<int64_t> kept;
  for (int i = 0; i < arg.rank(); ++i) {
    if (!Contains(dims, i)) kept.push_back(arg.dim(i));
  }
  if (!reducer.result.IsTuple()) return Shape(reducer.result.dtype(), kept);
  std::vector<Shape> outs;
  for (const Shape& s : reducer.result.tuple_shapes()) outs.emplace_back(s.dtype(), kept);
  return Shape::Tuple(std::move(outs));
}

StatusOr<Shape> InferReduceWindowShape(std::span<const Shape> operands, const Window& window,
                                       const ProgramShape& reducer) {
  XS_ASSIGN_OR_RETURN(size_t n, SplitInputsAndInits(operands, "reduce-window"));
  std::vector<DType> types;
  for (size_t i = 0; i < n; ++i) types.push_back(operands[i].dtype());
  XS_RETURN_IF_ERROR(VerifyReducerShape(reducer, operands.subspan(n), types));
  std::vector<Shape> outs;
  for (size_t i = 0; i < n; ++i) {
    XS_ASSIGN_OR_RETURN(Shape s,
                        InferWindowOutputShape(operands[i], window, operands[n + i].dtype()));
    outs.push_back(std::move(s));
  }
  if (n == 1) return outs[0];
  return Shape::Tuple(std::move(outs));
}

StatusOr<Shape> InferSelectAndScatterShape(const Shape& operand, const ProgramShape& select,
                                           const Window& window, const Shape& source,
                                           const Shape& init_value, const ProgramShape& scatter) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of select-and-scatter"));
  Shape elem(operand.dtype(), {});
  if (select.parameters.size() != 2 || !select.result.Compatible(Shape(DType::kPred, {})) ||
      !CompatibleIgnoringFpPrecision(elem, select.parameters[0]) ||
      !CompatibleIgnoringFpPrecision(elem, select.parameters[1])) {
    return InvalidArgument("the select computation ", select.ToString(), " must be (",
                           ShapeText(elem), ", ", ShapeText(elem), ") -> pred[]");
  }
  DType source_type = source.IsArray() ? source.dtype() : operand.dtype();
  XS_RETURN_IF_ERROR(VerifyReducerShape(scatter, std::span<const Shape>(&init_value, 1),
                                        std::span<const DType>(&source_type, 1)));
  XS_ASSIGN_OR_RETURN(Shape windowed, InferWindowOutputShape(operand, window, operand.dtype()));
  if (!CompatibleIgnoringFpPrecision(source, windowed)) {
    return InvalidArgument("source ", ShapeText(source), " must have the windowed operand's ",
                           "shape ", ShapeText(windowed));
  }
  return operand.WithoutLayout();
}

StatusOr<Shape> InferSortShape(std::span<const Shape> operands, int64_t dim,
                               const ProgramShape& comparator) {
  if (operands.empty()) return InvalidArgument("sort needs at least one operand");
  for (size_t i = 0; i < operands.size(); ++i) {
    XS_RETURN_IF_ERROR(ExpectArray(operands[i], StrCat("operand ", i)));
    if (operands[i].dims() != operands[0].dims()) {
      return InvalidArgument("sort operand ", i, " ", ShapeText(operands[i]),
                             " must have the dims of operand 0 ", ShapeText(operands[0]));
    }
  }
  if (dim < 0 || dim >= operands[0].rank()) {
    return InvalidArgument("sort dimension ", dim, " is out of range for ",
                           ShapeText(operands[0]));
  }
  if (!comparator.result.Compatible(Shape(DType::kPred, {})) ||
      comparator.parameters.size() != 2 * operands.size()) {
    return InvalidArgument("the comparator ", comparator.ToString(), " must take ",
                           2 * operands.size(), " scalars and return pred[]");
  }
  for (size_t p = 0; p < comparator.parameters.size(); ++p) {
    Shape want(operands[p / 2].dtype(), {});
    if (!CompatibleIgnoringFpPrecision(want, comparator.parameters[p])) {
      return InvalidArgument("comparator parameter ", p, " ",
                             ShapeText(comparator.parameters[p]), " must be ", ShapeText(want));
    }
  }
  if (operands.size() == 1) return operands[0].WithoutLayout();
  return InferTupleShape(operands);
}

StatusOr<Shape> InferTopKShape(const Shape& operand, int64_t k) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of topk"));
  if (operand.rank() == 0 || k < 0 || k > operand.dims().back()) {
    return InvalidArgument("topk k=", k, " needs 0 <= k <= the last dim of ", ShapeText(operand));
  }
  std::vector<int64_t> dims = operand.dims();
  dims.back() = k;
  return Shape::Tuple({Shape(operand.dtype(), dims), Shape(DType::kS32, dims)});
}

StatusOr<Shape> InferMapShape(std::span<const Shape> operands, const ProgramShape& fn) {
  if (operands.empty()) return InvalidArgument("map needs at least one operand");
  for (size_t i = 0; i < operands.size(); ++i) {
    XS_RETURN_IF_ERROR(ExpectArray(operands[i], StrCat("operand ", i)));
    if (operands[i].dims() != operands[0].dims()) {
      return InvalidArgument("map operand ", i, " ", ShapeText(operands[i]),
                             " must have the dims of operand 0 ", ShapeText(operands[0]));
    }
  }
  if (fn.parameters.size() != operands.size() || !fn.result.IsArray() || fn.result.rank() != 0) {
    return InvalidArgument("the mapped computation ", fn.ToString(), " must take ",
                           operands.size(), " scalars and return a scalar");
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    const Shape& p = fn.parameters[i];
    if (!p.IsArray() || p.rank() != 0 ||
        !SameElementTypeIgnoringFpPrecision(p.dtype(), operands[i].dtype())) {
      return InvalidArgument("mapped computation parameter ", i, " ", ShapeText(p),
                             " must be a scalar of the type of ", ShapeText(operands[i]));
    }
  }
  return Shape(fn.result.dtype(), operands[0].dims());
}

}  // namespace xs
