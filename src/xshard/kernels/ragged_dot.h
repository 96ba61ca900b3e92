// ragged-dot (XLA / StableHLO): a dot whose lhs is split into groups along one dim
// (lhs_ragged_dims={d}) by `group_sizes`. Three modes, by what the ragged dim is:
//   non-contracting: rhs has a group dim (rhs_group_dims={g}); row i of the ragged dim uses
//                    rhs's group that row falls in; rows past the last group give zeros;
//   contracting:     the result gains a leading dim of one entry per group, each summing only
//                    its group's part of the contraction;
//   batch:           a plain dot.
// Computed in f64 (integers in int64) and rounded once to the result type.
#ifndef XSHARD_KERNELS_RAGGED_DOT_H_
#define XSHARD_KERNELS_RAGGED_DOT_H_

#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"

namespace xs::kernels {

struct RaggedDotDims {
  DotDimensionNumbers dot;
  int64_t lhs_ragged = 0;
  std::vector<int64_t> rhs_group;  // empty unless the ragged dim is a non-contracting one
};

// `group_sizes` is [g] or [batch..., g] (leading dims index the lhs batch dims in order).
// `out_shape` is the instruction's result shape (checked against the operands).
StatusOr<Array> RaggedDot(const Array& lhs, const Array& rhs, const Array& group_sizes, const RaggedDotDims& dims,
                          const Shape& out_shape);

// XLA's `__op$block_scaled_dot` custom-call (microscaling formats such as MXFP8): lhs [B?, M, K]
// and rhs [B?, N, K] contract their last dims; each is first multiplied by its scale, whose every
// dim divides the operand's and which repeats over blocks (usually [B?, M or N, K / block]).
// A missing scale (nullptr) is 1. Accumulates in f64; the result is [B?, M, N] of `out_shape`.
StatusOr<Array> BlockScaledDot(const Array& lhs, const Array& rhs, const Array* lhs_scale, const Array* rhs_scale,
                               const Shape& out_shape);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_RAGGED_DOT_H_
