// Data-movement kernels: transpose, broadcast, slice, dynamic-slice, dynamic-update-slice,
// concatenate, pad, reverse, iota, and the strided box copy they are built on. They move bytes
// and work for every dtype (pred, s4 stored as bytes, fp8, ...). Semantics are XLA's: dynamic
// start indices are clamped so the box fits; pad takes negative (cropping) and interior padding.
#ifndef XSHARD_KERNELS_SHAPE_OPS_H_
#define XSHARD_KERNELS_SHAPE_OPS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"

namespace xs::kernels {

// Copies a box of `dims` elements of `elem_size` bytes: element at multi-index i goes from
// src + sum(i[d] * src_strides[d]) to dst + sum(i[d] * dst_strides[d]) (strides in ELEMENTS, may
// be 0 or negative). Rank 0 copies one element. The innermost dim becomes a memcpy when both
// strides are 1; a box whose destination inner dim is strided in the source while another dim
// is contiguous there (a transpose) is copied in cache-sized tiles.
void StridedCopy(const std::byte* src, std::byte* dst, int64_t elem_size,
                 const std::vector<int64_t>& dims, const std::vector<int64_t>& src_strides,
                 const std::vector<int64_t>& dst_strides);

// Transpose of the row-major `dims` buffer at `src` into `dst` (see Transpose). Copies that
// transpose the two inner-most moving dims run in cache tiles.
void TransposeInto(const std::byte* src, std::byte* dst, int64_t elem_size,
                   const std::vector<int64_t>& dims, const std::vector<int64_t>& permutation);
// The kernels below return their result in a new array, or, when `into` is given with the
// result's dtype and dims (contents unspecified, e.g. an executor's arena buffer), write every
// element of it and return a view of it (a different `into` is ignored).
// out[i_0, ..., i_{r-1}] = in[index with in dim permutation[k] = i_k]  (XLA transpose:
// result dim k is operand dim permutation[k]).
Array Transpose(const Array& in, const std::vector<int64_t>& permutation, Array* into = nullptr);
// XLA broadcast: operand dim i becomes result dim `dimensions[i]`; other result dims repeat.
Array Broadcast(const Array& in, const std::vector<int64_t>& result_dims,
                const std::vector<int64_t>& dimensions, Array* into = nullptr);
Array Slice(const Array& in, const std::vector<SliceDim>& slice, Array* into = nullptr);
Array Reverse(const Array& in, const std::vector<int64_t>& dimensions, Array* into = nullptr);
Array Concatenate(std::span<const Array* const> inputs, int64_t dimension, Array* into = nullptr);
// pad with a scalar `value` (same dtype).
Array Pad(const Array& in, const Array& value, const std::vector<PaddingDim>& padding,
          Array* into = nullptr);
// iota along `dimension` of `dims` in `dtype` (0, 1, 2, ... converted to the dtype).
StatusOr<Array> Iota(DType dtype, const std::vector<int64_t>& dims, int64_t dimension,
                     Array* into = nullptr);

// Start indices (one scalar integer array per dim, or XLA's legacy single rank-1 array of all
// starts) read as int64 and clamped to [0, operand_dim - size] per dim.
std::vector<int64_t> ClampedStarts(std::span<const Array* const> starts,
                                   const std::vector<int64_t>& operand_dims,
                                   const std::vector<int64_t>& sizes);
Array DynamicSlice(const Array& in, std::span<const Array* const> starts,
                   const std::vector<int64_t>& sizes, Array* into = nullptr);
// Writes `update` into `operand` in place at the clamped starts.
void DynamicUpdateSliceInPlace(Array& operand, const Array& update,
                               std::span<const Array* const> starts);

// First element of an integer (or pred) array as int64; 0 for other dtypes.
int64_t ScalarAsInt64(const Array& a);

// Naive reference: out[idx] = in[f(idx)] through multi-index arithmetic, element by element.
Array TransposeReference(const Array& in, const std::vector<int64_t>& permutation);
Array PadReference(const Array& in, const Array& value, const std::vector<PaddingDim>& padding);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_SHAPE_OPS_H_
