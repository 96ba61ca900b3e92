// f32 convolutions through oneDNN's JIT convolution primitives: one primitive per shape, made on
// first use and kept for the process (per OpenMP thread count). Internal to kernels/:
// Convolution tries it first and falls back to its own GEMM paths when it refuses.
#ifndef XSHARD_KERNELS_ONEDNN_CONV_H_
#define XSHARD_KERNELS_ONEDNN_CONV_H_

#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/kernels/convolution.h"

namespace xs::kernels {

// The f32 convolution of f32 operands on `threads` threads, or kUnimplemented when oneDNN cannot
// compute it or has only its slow reference implementation for it: lhs (base) dilation, batch
// groups, window reversal, negative padding, no spatial dims or more than three. dim_labels may
// put the dims in any order (the operands and the result are described to oneDNN by their
// strides).
StatusOr<Array> OneDnnConvolution(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                                  const std::vector<int64_t>& out_dims, int threads);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_ONEDNN_CONV_H_
