// Shape inference for data movement: broadcast, reshape, transpose, slices, concatenate, pad,
// reverse, iota and tuples. See shape_inference.h.
#include <algorithm>

#include "xshard/ir/shape_inference.h"
#include "xshard/ir/shape_inference_util.h"

namespace xs {

using shape_inference::ExpectArray;

StatusOr<Shape> InferBroadcastShape(const Shape& operand, std::span<const int64_t> output_dims,
                                    std::span<const int64_t> dims) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of broadcast"));
  Shape out(operand.dtype(), std::vector<int64_t>(output_dims.begin(), output_dims.end()));
  if (static_cast<int64_t>(dims.size()) != operand.rank()) {
    return InvalidArgument("broadcast dimensions={", StrJoin(dims, ","), "} must list one output ",
                           "dim per operand dim of ", ShapeText(operand));
  }
  XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(dims, out.rank(), "broadcast dimension", out, true));
  for (int i = 0; i < operand.rank(); ++i) {
    if (operand.dim(i) != out.dim(dims[i])) {
      return InvalidArgument("broadcast maps operand dim ", i, " (size ", operand.dim(i),
                             ") of ", ShapeText(operand), " to output dim ", dims[i],
                             " (size ", out.dim(dims[i]), ") of ", ShapeText(out),
                             "; sizes must be equal (reshape away size-1 dims first)");
    }
    if (operand.is_dynamic_dim(i)) out.set_dynamic_dim(dims[i], true);
  }
  return out;
}

StatusOr<Shape> InferReshapeShape(const Shape& operand, std::span<const int64_t> new_dims) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of reshape"));
  Shape out(operand.dtype(), std::vector<int64_t>(new_dims.begin(), new_dims.end()));
  if (!HasUnboundedDim(operand) && !HasUnboundedDim(out) &&
      out.num_elements() != operand.num_elements()) {
    return InvalidArgument("reshape from ", ShapeText(operand), " (", operand.num_elements(),
                           " elements) to ", ShapeText(out), " (", out.num_elements(),
                           " elements) changes the element count");
  }
  return out;
}

StatusOr<Shape> InferTransposeShape(const Shape& operand, std::span<const int64_t> perm) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of transpose"));
  if (!shape_inference::IsPermutation(perm, operand.rank())) {
    return InvalidArgument("transpose dimensions={", StrJoin(perm, ","),
                           "} is not a permutation of the dims of ", ShapeText(operand));
  }
  std::vector<int64_t> dims(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) dims[i] = operand.dim(static_cast<int>(perm[i]));
  Shape out(operand.dtype(), std::move(dims));
  for (size_t i = 0; i < perm.size(); ++i) {
    if (operand.is_dynamic_dim(static_cast<int>(perm[i]))) out.set_dynamic_dim(i, true);
  }
  return out;
}

StatusOr<Shape> InferSliceShape(const Shape& operand, std::span<const SliceDim> slice) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of slice"));
  if (static_cast<int64_t>(slice.size()) != operand.rank()) {
    return InvalidArgument("slice has ", slice.size(), " ranges for ", ShapeText(operand),
                           " of rank ", operand.rank(), "; give one [start:limit:stride] per dim");
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < operand.rank(); ++i) {
    const SliceDim& s = slice[i];
    if (s.start < 0 || s.start > s.limit || s.limit > operand.dim(i) || s.stride < 1) {
      return InvalidArgument("slice dim ", i, " [", s.start, ":", s.limit, ":", s.stride,
                             "] is invalid for size ", operand.dim(i), " of ", ShapeText(operand),
                             "; need 0 <= start <= limit <= size and stride >= 1");
    }
    dims.push_back((s.limit - s.start + s.stride - 1) / s.stride);
  }
  return Shape(operand.dtype(), std::move(dims));
}

namespace {

Status CheckStartIndices(const Shape& operand, std::span<const Shape> indices) {
  if (indices.size() == 1 && indices[0].IsArray() && indices[0].rank() == 1) {  // legacy vector
    if (!IsInteger(indices[0].dtype()) || indices[0].dim(0) != operand.rank()) {
      return InvalidArgument("start index vector ", ShapeText(indices[0]), " must be an integer ",
                             "vector with one entry per dim of ", ShapeText(operand));
    }
    return OkStatus();
  }
  if (static_cast<int64_t>(indices.size()) != operand.rank()) {
    return InvalidArgument("got ", indices.size(), " start indices for ", ShapeText(operand),
                           "; give one integer scalar per dim");
  }
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i].IsArray() || indices[i].rank() != 0 || !IsInteger(indices[i].dtype())) {
      return InvalidArgument("start index ", i, " must be an integer scalar, got ",
                             ShapeText(indices[i]));
    }
    if (indices[i].dtype() != indices[0].dtype()) {
      return InvalidArgument("start indices must share one type, got ", ShapeText(indices[0]),
                             " and ", ShapeText(indices[i]));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<Shape> InferDynamicSliceShape(const Shape& operand, std::span<const Shape> indices,
                                       std::span<const int64_t> sizes) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of dynamic-slice"));
  XS_RETURN_IF_ERROR(CheckStartIndices(operand, indices));
  if (static_cast<int64_t>(sizes.size()) != operand.rank()) {
    return InvalidArgument("dynamic_slice_sizes={", StrJoin(sizes, ","), "} must have one size ",
                           "per dim of ", ShapeText(operand));
  }
  for (int i = 0; i < operand.rank(); ++i) {
    if (sizes[i] < 0 || (operand.dim(i) >= 0 && sizes[i] > operand.dim(i))) {
      return InvalidArgument("dynamic slice size ", sizes[i], " of dim ", i,
                             " exceeds the size of ", ShapeText(operand));
    }
  }
  return Shape(operand.dtype(), std::vector<int64_t>(sizes.begin(), sizes.end()));
}

StatusOr<Shape> InferDynamicUpdateSliceShape(const Shape& operand, const Shape& update,
                                             std::span<const Shape> indices) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of dynamic-update-slice"));
  XS_RETURN_IF_ERROR(ExpectArray(update, "the update of dynamic-update-slice"));
  XS_RETURN_IF_ERROR(CheckStartIndices(operand, indices));
  if (update.rank() != operand.rank() ||
      !SameElementTypeIgnoringFpPrecision(update.dtype(), operand.dtype())) {
    return InvalidArgument("update ", ShapeText(update), " must have the rank and element type ",
                           "of the operand ", ShapeText(operand));
  }
  for (int i = 0; i < operand.rank(); ++i) {
    if (operand.dim(i) >= 0 && update.dim(i) > operand.dim(i)) {
      return InvalidArgument("update ", ShapeText(update), " is larger than the operand ",
                             ShapeText(operand), " in dim ", i);
    }
  }
  return operand.WithoutLayout();
}

StatusOr<Shape> InferConcatenateShape(std::span<const Shape> operands, int64_t dim) {
  if (operands.empty()) return InvalidArgument("concatenate needs at least one operand");
  for (const Shape& s : operands) XS_RETURN_IF_ERROR(ExpectArray(s, "each operand"));
  const Shape& first = operands[0];
  if (dim < 0 || dim >= first.rank()) {
    return InvalidArgument("concatenate dimension ", dim, " is out of range for ",
                           ShapeText(first));
  }
  std::vector<int64_t> dims = first.dims();
  DType dtype = first.dtype();
  for (size_t i = 1; i < operands.size(); ++i) {
    const Shape& s = operands[i];
    bool dims_ok = s.rank() == first.rank();
    for (int d = 0; dims_ok && d < s.rank(); ++d) dims_ok = d == dim || s.dim(d) == first.dim(d);
    if (!dims_ok || !SameElementTypeIgnoringFpPrecision(s.dtype(), dtype)) {
      return InvalidArgument("operand ", i, " ", ShapeText(s), " does not match operand 0 ",
                             ShapeText(first), " in element type or in dims other than ", dim);
    }
    const int64_t add = s.dim(static_cast<int>(dim));
    dims[dim] = dims[dim] < 0 || add < 0 ? -1 : dims[dim] + add;  // '?' (-1) stays unbounded
    dtype = shape_inference::HigherPrecision(dtype, s.dtype());
  }
  return Shape(dtype, std::move(dims));
}

StatusOr<Shape> InferPadShape(const Shape& operand, const Shape& pad_value,
                              std::span<const PaddingDim> padding) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of pad"));
  if (!pad_value.IsArray() || pad_value.rank() != 0) {
    return InvalidArgument("the padding value must be a scalar, got ", ShapeText(pad_value));
  }
  if (!SameElementTypeIgnoringFpPrecision(pad_value.dtype(), operand.dtype())) {
    return InvalidArgument("padding value ", ShapeText(pad_value),
                           " must have the element type of ", ShapeText(operand));
  }
  if (static_cast<int64_t>(padding.size()) != operand.rank()) {
    return InvalidArgument("padding has ", padding.size(), " dims for ", ShapeText(operand));
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < operand.rank(); ++i) {
    const PaddingDim& p = padding[i];
    if (p.interior < 0) {
      return InvalidArgument("interior padding ", p.interior, " of dim ", i, " is negative");
    }
    int64_t d = operand.dim(i);
    int64_t size = d + p.low + p.high + std::max<int64_t>(d - 1, 0) * p.interior;
    if (size < 0) {
      return InvalidArgument("padding ", p.low, "_", p.high, "_", p.interior, " of dim ", i,
                             " of ", ShapeText(operand), " gives a negative size ", size);
    }
    dims.push_back(size);
  }
  return Shape(shape_inference::HigherPrecision(operand.dtype(), pad_value.dtype()), std::move(dims));
}

StatusOr<Shape> InferReverseShape(const Shape& operand, std::span<const int64_t> dims) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of reverse"));
  XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(dims, operand.rank(), "reverse dimension", operand,
                                          true));
  return operand.WithoutLayout();
}

StatusOr<Shape> InferIotaShape(const Shape& shape, int64_t iota_dim) {
  XS_RETURN_IF_ERROR(ExpectArray(shape, "the result of iota"));
  if (shape.rank() == 0) return InvalidArgument("iota needs rank >= 1, got ", ShapeText(shape));
  if (iota_dim < 0 || iota_dim >= shape.rank()) {
    return InvalidArgument("iota_dimension ", iota_dim, " is out of range for ",
                           ShapeText(shape));
  }
  if (!IsInteger(shape.dtype()) && !IsFloating(shape.dtype()) && !IsComplex(shape.dtype())) {
    return InvalidArgument("iota needs a numeric element type, got ", ShapeText(shape));
  }
  return shape.WithoutLayout();
}

StatusOr<Shape> InferTupleShape(std::span<const Shape> elements) {
  std::vector<Shape> out;
  for (const Shape& s : elements) out.push_back(s.WithoutLayout());
  return Shape::Tuple(std::move(out));
}

StatusOr<Shape> InferGetTupleElementShape(const Shape& tuple, int64_t index) {
  if (!tuple.IsTuple()) {
    return InvalidArgument("get-tuple-element needs a tuple operand, got ", ShapeText(tuple));
  }
  if (index < 0 || index >= tuple.tuple_size()) {
    return InvalidArgument("tuple index ", index, " is out of range for ", ShapeText(tuple),
                           " (", tuple.tuple_size(), " elements)");
  }
  return tuple.tuple_shape(static_cast<int>(index)).WithoutLayout();
}

}  // namespace xs
