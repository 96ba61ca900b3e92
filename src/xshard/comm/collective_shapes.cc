// Output-shape rules of the collectives.
#include "xshard/comm/collective_shapes.h"

#include <algorithm>
#include <functional>

namespace xs {
namespace {

std::string DimsText(std::span<const int64_t> dims) { return StrCat("[", StrJoin(dims, ","), "]"); }

Status CheckDim(std::string_view op, std::string_view what, std::span<const int64_t> dims,
                int dim) {
  if (dim < 0 || dim >= static_cast<int>(dims.size())) {
    return InvalidArgument(op, ": ", what, " ", dim, " is out of range for an operand of rank ",
                           dims.size(), " (dims ", DimsText(dims), "); use a dim in 0..",
                           static_cast<int64_t>(dims.size()) - 1);
  }
  return OkStatus();
}

Status CheckGroupSize(std::string_view op, int64_t group_size) {
  if (group_size < 1) {
    return InvalidArgument(op, ": the calling device is in no replica group");
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<int64_t>> AllGatherDims(std::string_view op, std::span<const int64_t> dims,
                                             int dim, int64_t group_size) {
  XS_RETURN_IF_ERROR(CheckGroupSize(op, group_size));
  XS_RETURN_IF_ERROR(CheckDim(op, "all_gather_dimension", dims, dim));
  std::vector<int64_t> out(dims.begin(), dims.end());
  out[dim] *= group_size;
  return out;
}

StatusOr<std::vector<int64_t>> ReduceScatterDims(std::string_view op,
                                                 std::span<const int64_t> dims, int dim,
                                                 int64_t group_size) {
  XS_RETURN_IF_ERROR(CheckGroupSize(op, group_size));
  XS_RETURN_IF_ERROR(CheckDim(op, "scatter_dimension", dims, dim));
  if (dims[dim] % group_size != 0) {
    return InvalidArgument(op, ": scatter dimension ", dim, " of the operand ", DimsText(dims),
                           " has size ", dims[dim], ", which does not divide into ", group_size,
                           " equal pieces (one per group member); pad the operand or use a "
                           "group size that divides it");
  }
  std::vector<int64_t> out(dims.begin(), dims.end());
  out[dim] /= group_size;
  return out;
}

StatusOr<std::vector<int64_t>> AllToAllDims(std::string_view op, std::span<const int64_t> dims,
                                            int split_dim, int concat_dim, int64_t group_size) {
  XS_RETURN_IF_ERROR(CheckGroupSize(op, group_size));
  XS_RETURN_IF_ERROR(CheckDim(op, "split_dimension", dims, split_dim));
  XS_RETURN_IF_ERROR(CheckDim(op, "concat_dimension", dims, concat_dim));
  if (dims[split_dim] % group_size != 0) {
    return InvalidArgument(op, ": split dimension ", split_dim, " of the operand ",
                           DimsText(dims), " has size ", dims[split_dim],
                           ", which does not divide into ", group_size,
                           " equal pieces (one per group member)");
  }
  std::vector<int64_t> out(dims.begin(), dims.end());
  out[split_dim] /= group_size;
  out[concat_dim] *= group_size;
  return out;
}

Status CheckOutput(std::string_view op, ConstBufferView in, BufferView out,
                   std::span<const int64_t> expected) {
  if (out.dtype != in.dtype) {
    return InvalidArgument(op, ": the output buffer has dtype ", DTypeName(out.dtype),
                           " but the operand is ", DTypeName(in.dtype),
                           "; collectives keep the element type");
  }
  if (!std::equal(out.dims.begin(), out.dims.end(), expected.begin(), expected.end())) {
    return InvalidArgument(op, ": the output buffer is ", out.AsConst().ShapeString(),
                           " but the operand ", in.ShapeString(), " gives ", DTypeName(in.dtype),
                           DimsText(expected));
  }
  const auto* ib = in.data;
  const auto* ob = out.data;
  const int64_t isz = in.byte_size(), osz = out.byte_size();
  if (isz > 0 && osz > 0 && std::less<const std::byte*>()(ib, ob + osz) &&
      std::less<const std::byte*>()(ob, ib + isz)) {
    return InvalidArgument(op, ": the output buffer overlaps the operand; collectives need a "
                           "separate output buffer");
  }
  return OkStatus();
}

}  // namespace xs
