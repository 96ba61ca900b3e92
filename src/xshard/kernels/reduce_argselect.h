// Reduce's typed loop for the argmax / argmin reducer (kernels::ArgSelect, scalar_fn.h): the
// (value, index) fold JAX emits, bit for bit with its reducer computation. Internal to kernels/.
#ifndef XSHARD_KERNELS_REDUCE_ARGSELECT_H_
#define XSHARD_KERNELS_REDUCE_ARGSELECT_H_

#include <cstddef>
#include <vector>

#include "xshard/core/dtype.h"
#include "xshard/kernels/scalar_fn.h"

namespace xs::kernels {

// Folds values `val` and indices `idx` of an array of `dims` into the outputs `oval` / `oidx`
// (filled with the inits), element x going to sum_d idx[d] * ostride[d] (0 for a reduced dim), in
// row-major order, on up to `threads` threads (whole output rows each).
using ArgReduceFn = void (*)(const std::byte* val, const std::byte* idx, std::byte* oval, std::byte* oidx,
                             const std::vector<int64_t>& dims, const std::vector<int64_t>& ostride, int threads);

// The typed loop for values of `vt` (real or integer) and s32 / s64 indices with a kGt (argmax)
// or kLt (argmin) direction, ties to the lower index and (floats) the NaN test; null otherwise
// (forms JAX does not emit run the reducer's scalar plan).
ArgReduceFn FindArgReduce(const ArgSelect& s, DType vt, DType it);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_REDUCE_ARGSELECT_H_
