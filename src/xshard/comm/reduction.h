// Element-wise reduction kernels for all-reduce and reduce-scatter, for every dtype a reducer is
// defined on. Values combine in their own element type, as XLA:CPU's collectives do: integers wrap,
// and f16 / bf16 compute each pairwise step in f32 and round back to 16 bits (what Eigen's half and
// bfloat16 types do), so a bf16 all-reduce of n values rounds n-1 times, exactly like XLA's
// all-reduce with a bf16 reducer. A program that wants f32 accumulation converts first (XLA's
// promoted all-reduce does the same).
#ifndef XSHARD_COMM_REDUCTION_H_
#define XSHARD_COMM_REDUCTION_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "xshard/base/status.h"
#include "xshard/core/dtype.h"
#include "xshard/comm/communicator.h"

namespace xs {

// OK when `reduction` is defined on `dtype`. Floats: sum, product, min, max; complex: sum,
// product; integers: all six (and / or bitwise); pred: all six (sum = or, product = and, min =
// and, max = or); the narrow types (f8*, f4e2m1fn: as floats; s2 / s4 / u2 / u4: as integers)
// too. Others InvalidArgument. Messages start with `op_name`.
Status CheckReduction(ReductionKind reduction, DType dtype, std::string_view op_name);

// dst[i] = a[i] (op) b[i] for `count` elements; dst may alias a or b. The pair must have passed
// CheckReduction (XS_CHECK). A narrow type's result is rounded (wrapped) back to it, as an HLO op
// on it rounds.
void Combine(ReductionKind reduction, DType dtype, std::byte* dst, const std::byte* a,
             const std::byte* b, int64_t count);

// dst = srcs[0] (op) srcs[1] (op) ... left to right, in cache-sized tiles so each source is read
// once. srcs must not alias dst (except srcs[0]); srcs.size() >= 1. The narrow floats reduce in
// f16 (f8e8m0fnu: f32) and round once at the end, as XLA's CPU backend runs their collectives;
// pairwise Combine steps (ring algorithms) round after each step instead.
void ReduceMany(ReductionKind reduction, DType dtype, std::byte* dst,
                std::span<const std::byte* const> srcs, int64_t count);

}  // namespace xs

#endif  // XSHARD_COMM_REDUCTION_H_
