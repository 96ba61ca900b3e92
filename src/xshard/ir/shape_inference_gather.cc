// Shape inference for gather and scatter, including the batching dims
// (operand_batching_dims / start_indices_batching_dims, input_batching_dims /
// scatter_indices_batching_dims).
#include <algorithm>

#include "xshard/ir/shape_inference.h"
#include "xshard/ir/shape_inference_util.h"

namespace xs {

using shape_inference::Contains;
using shape_inference::ExpectArray;

namespace {

// Indices dims with a trailing 1 appended when index_vector_dim == rank (XLA's implicit vector).
StatusOr<std::vector<int64_t>> ExpandedIndices(const Shape& indices, int64_t index_vector_dim) {
  XS_RETURN_IF_ERROR(ExpectArray(indices, "the indices"));
  if (!IsInteger(indices.dtype())) {
    return InvalidArgument("indices must have an integer type, got ", ShapeText(indices));
  }
  if (index_vector_dim < 0 || index_vector_dim > indices.rank()) {
    return InvalidArgument("index_vector_dim ", index_vector_dim, " must be in [0, ",
                           indices.rank(), "] for indices ", ShapeText(indices));
  }
  std::vector<int64_t> dims = indices.dims();
  if (index_vector_dim == indices.rank()) dims.push_back(1);
  return dims;
}

// Checks the batching-dim pairs shared by gather and scatter: operand-side dims sorted, unique, in
// range and disjoint from `collapsed` and `index_map`; indices-side dims unique, in range, not the
// index vector dim; same count and equal sizes.
Status CheckBatchingDims(const Shape& operand, std::span<const int64_t> operand_batching,
                         std::span<const int64_t> collapsed, std::span<const int64_t> index_map,
                         const Shape& indices, std::span<const int64_t> indices_batching,
                         int64_t index_vector_dim, std::string_view names) {
  XS_RETURN_IF_ERROR(shape_inference::CheckSortedUnique(operand_batching, "operand batching dims"));
  XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(operand_batching, operand.rank(),
                                          "operand batching dim", operand, true));
  for (int64_t d : operand_batching) {
    if (Contains(collapsed, d) || Contains(index_map, d)) {
      return InvalidArgument("operand batching dim ", d, " must not also be collapsed / ",
                             "inserted or in the index map (", names, ")");
    }
  }
  XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(indices_batching, indices.rank(),
                                          "indices batching dim", indices, true));
  if (Contains(indices_batching, index_vector_dim)) {
    return InvalidArgument("indices batching dims must not contain index_vector_dim ",
                           index_vector_dim);
  }
  if (operand_batching.size() != indices_batching.size()) {
    return InvalidArgument(names, " must have the same length, got ", operand_batching.size(),
                           " and ", indices_batching.size());
  }
  for (size_t i = 0; i < operand_batching.size(); ++i) {
    int64_t a = operand.dim(static_cast<int>(operand_batching[i]));
    int64_t b = indices.dim(static_cast<int>(indices_batching[i]));
    if (a != b) {
      return InvalidArgument("batching dim sizes differ: operand dim ", operand_batching[i],
                             " is ", a, ", indices dim ", indices_batching[i], " is ", b);
    }
  }
  return OkStatus();
}

Status CheckIndexMap(std::span<const int64_t> map, int64_t index_vector_size,
                     const Shape& operand, std::string_view name) {
  if (static_cast<int64_t>(map.size()) != index_vector_size) {
    return InvalidArgument(name, " has ", map.size(), " entries but the index vector has ",
                           index_vector_size);
  }
  return shape_inference::CheckDimsInRange(map, operand.rank(), StrCat(name, " entry"), operand, true);
}

}  // namespace

StatusOr<Shape> InferGatherShape(const Shape& operand, const Shape& indices,
                                 const GatherDimensionNumbers& dn,
                                 std::span<const int64_t> slice_sizes) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of gather"));
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> expanded,
                      ExpandedIndices(indices, dn.index_vector_dim));
  const int64_t out_rank =
      static_cast<int64_t>(dn.offset_dims.size() + expanded.size()) - 1;
  XS_RETURN_IF_ERROR(shape_inference::CheckSortedUnique(dn.offset_dims, "offset_dims"));
  for (int64_t d : dn.offset_dims) {
    if (d < 0 || d >= out_rank) {
      return InvalidArgument("offset dim ", d, " is out of range for the output rank ", out_rank);
    }
  }
  XS_RETURN_IF_ERROR(CheckIndexMap(dn.start_index_map, expanded[dn.index_vector_dim], operand,
                                   "start_index_map"));
  XS_RETURN_IF_ERROR(shape_inference::CheckSortedUnique(dn.collapsed_slice_dims, "collapsed_slice_dims"));
  XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(dn.collapsed_slice_dims, operand.rank(),
                                          "collapsed slice dim", operand, true));
  Shape expanded_indices(indices.dtype(), expanded);
  XS_RETURN_IF_ERROR(CheckBatchingDims(operand, dn.operand_batching_dims, dn.collapsed_slice_dims,
                                       dn.start_index_map, expanded_indices,
                                       dn.start_indices_batching_dims, dn.index_vector_dim,
                                       "operand_batching_dims and start_indices_batching_dims"));
  if (static_cast<int64_t>(slice_sizes.size()) != operand.rank()) {
    return InvalidArgument("slice_sizes={", StrJoin(slice_sizes, ","), "} must have one size per ",
                           "dim of ", ShapeText(operand));
  }
  if (dn.offset_dims.size() + dn.collapsed_slice_dims.size() + dn.operand_batching_dims.size() !=
      slice_sizes.size()) {
    return InvalidArgument("offset_dims (", dn.offset_dims.size(), ") + collapsed_slice_dims (",
                           dn.collapsed_slice_dims.size(), ") + operand_batching_dims (",
                           dn.operand_batching_dims.size(), ") must equal the operand rank ",
                           operand.rank());
  }
  for (int i = 0; i < operand.rank(); ++i) {
    if (slice_sizes[i] < 0 || slice_sizes[i] > operand.dim(i)) {
      return InvalidArgument("slice size ", slice_sizes[i], " of dim ", i, " is out of range ",
                             "for ", ShapeText(operand));
    }
    bool must_be_one = Contains(dn.collapsed_slice_dims, i) ||
                       Contains(dn.operand_batching_dims, i);
    if (must_be_one && slice_sizes[i] > 1) {
      return InvalidArgument("collapsed or batching dim ", i, " must have slice size <= 1, got ",
                             slice_sizes[i]);
    }
  }
  std::vector<int64_t> dims;
  int operand_dim = 0, index_dim = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (Contains(dn.offset_dims, i)) {
      while (Contains(dn.collapsed_slice_dims, operand_dim) ||
             Contains(dn.operand_batching_dims, operand_dim)) {
        ++operand_dim;
      }
      dims.push_back(slice_sizes[operand_dim++]);
    } else {
      if (index_dim == dn.index_vector_dim) ++index_dim;
      dims.push_back(expanded[index_dim++]);
    }
  }
  Shape result(operand.dtype(), std::move(dims));
  // XLA lets a collapsed or batching dim have slice size 0, but then the slice is empty and no
  // element of a non-empty result has anything to read (an executor would read out of bounds).
  for (int i = 0; i < operand.rank(); ++i) {
    if (slice_sizes[i] == 0 && result.num_elements() > 0 &&
        (Contains(dn.collapsed_slice_dims, i) || Contains(dn.operand_batching_dims, i))) {
      return InvalidArgument("collapsed or batching dim ", i, " has slice size 0, so the result's ",
                             result.num_elements(), " elements have nothing to read; give it slice size 1");
    }
  }
  return result;
}

StatusOr<Shape> InferScatterShape(std::span<const Shape> args, const ProgramShape& reducer,
                                  const ScatterDimensionNumbers& dn) {
  const size_t n = args.size() / 2;
  if (args.size() < 3 || args.size() != 2 * n + 1) {
    return InvalidArgument("scatter needs N operands, the indices and N updates, got ",
                           args.size(), " operands");
  }
  const Shape& indices = args[n];
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> expanded,
                      ExpandedIndices(indices, dn.index_vector_dim));
  XS_RETURN_IF_ERROR(shape_inference::CheckSortedUnique(dn.update_window_dims, "update_window_dims"));
  XS_RETURN_IF_ERROR(shape_inference::CheckSortedUnique(dn.inserted_window_dims, "inserted_window_dims"));
  for (size_t k = 0; k < n; ++k) {
    const Shape& operand = args[k];
    const Shape& updates = args[n + 1 + k];
    XS_RETURN_IF_ERROR(ExpectArray(operand, StrCat("operand ", k)));
    XS_RETURN_IF_ERROR(ExpectArray(updates, StrCat("updates ", k)));
    if (operand.dims() != args[0].dims() || updates.dims() != args[n + 1].dims()) {
      return InvalidArgument("scatter operand ", k, " ", ShapeText(operand), " and updates ",
                             ShapeText(updates), " must match operand 0 and updates 0");
    }
    if (updates.dtype() != operand.dtype()) {  // the kernels combine them element by element
      return InvalidArgument("scatter updates ", k, " ", ShapeText(updates), " must have the element type of operand ",
                             k, " ", ShapeText(operand), "; convert the updates first");
    }
    XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(dn.update_window_dims, updates.rank(),
                                            "update window dim", updates, true));
    XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(dn.inserted_window_dims, operand.rank(),
                                            "inserted window dim", operand, true));
    Shape expanded_indices(indices.dtype(), expanded);
    XS_RETURN_IF_ERROR(CheckBatchingDims(operand, dn.input_batching_dims, dn.inserted_window_dims,
                                         dn.scatter_dims_to_operand_dims, expanded_indices,
                                         dn.scatter_indices_batching_dims, dn.index_vector_dim,
                                         "input_batching_dims and scatter_indices_batching_dims"));
    if (static_cast<int64_t>(dn.update_window_dims.size() + dn.inserted_window_dims.size() +
                             dn.input_batching_dims.size()) != operand.rank()) {
      return InvalidArgument("update_window_dims + inserted_window_dims + input_batching_dims ",
                             "must count the operand rank ", operand.rank(), " of ",
                             ShapeText(operand));
    }
    XS_RETURN_IF_ERROR(CheckIndexMap(dn.scatter_dims_to_operand_dims,
                                     expanded[dn.index_vector_dim], operand,
                                     "scatter_dims_to_operand_dims"));
    const int64_t want_rank =
        static_cast<int64_t>(expanded.size() - 1 + dn.update_window_dims.size());
    if (updates.rank() != want_rank) {
      return InvalidArgument("updates ", ShapeText(updates), " must have rank ", want_rank);
    }
    std::vector<int64_t> window_bounds;
    for (int i = 0; i < operand.rank(); ++i) {
      if (!Contains(dn.inserted_window_dims, i) && !Contains(dn.input_batching_dims, i)) {
        window_bounds.push_back(operand.dim(i));
      }
    }
    int64_t window_i = 0, index_dim = 0;
    for (int i = 0; i < updates.rank(); ++i) {
      if (Contains(dn.update_window_dims, i)) {
        if (updates.dim(i) > window_bounds[window_i]) {
          return InvalidArgument("updates window dim ", i, " of ", ShapeText(updates),
                                 " exceeds the operand bound ", window_bounds[window_i]);
        }
        ++window_i;
        continue;
      }
      if (index_dim == dn.index_vector_dim) ++index_dim;
      if (updates.dim(i) != expanded[index_dim]) {
        return InvalidArgument("updates scatter dim ", i, " of ", ShapeText(updates),
                               " must equal the indices bound ", expanded[index_dim]);
      }
      ++index_dim;
    }
  }
  std::vector<Shape> inits;
  std::vector<DType> update_types;
  for (size_t k = 0; k < n; ++k) {
    inits.emplace_back(args[k].dtype(), std::vector<int64_t>{});
    update_types.push_back(args[n + 1 + k].dtype());
  }
  XS_RETURN_IF_ERROR(VerifyReducerShape(reducer, inits, update_types));
  if (n == 1) return args[0].WithoutLayout();
  return InferTupleShape(args.subspan(0, n));
}

}  // namespace xs
