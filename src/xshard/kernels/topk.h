// topk (XLA's `topk` op and the `TopK` custom-call that jax.lax.top_k lowers to): the k largest
// (or smallest) entries of every row along the last dim, sorted, with their s32 indices.
#ifndef XSHARD_KERNELS_TOPK_H_
#define XSHARD_KERNELS_TOPK_H_

#include <utility>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

namespace xs::kernels {

// Returns (values [..., k], indices s32[..., k]). Order: descending for largest (ascending
// otherwise) in XLA's total order for floats (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN,
// NaNs by their bits), ties broken by the lower index first. Error when k is negative or above
// the last dim. Rows are spread over up to `threads` threads.
StatusOr<std::pair<Array, Array>> TopK(const Array& in, int64_t k, bool largest, int threads = 1);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_TOPK_H_
