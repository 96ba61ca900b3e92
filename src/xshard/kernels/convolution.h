// convolution (XLA ConvGeneralDilated): dim_labels in any order, window strides, low / high
// padding (negative crops), lhs (base) and rhs (window) dilation, window reversal,
// feature_group_count and batch_group_count. Operands convert to the result's compute type first,
// as XLA's evaluator does. f32 convolutions go to oneDNN's JIT convolution where it has one
// (onednn_conv.h). The other fast paths lower f32 / f64 convolutions (and f16 / bf16 through
// f32) without batch groups to GEMMs: per window tap and output row when features and rows are
// wide (convolution_taps.h), else per feature group over im2col patches; the rest runs the direct
// loop, which is also the reference.
#ifndef XSHARD_KERNELS_CONVOLUTION_H_
#define XSHARD_KERNELS_CONVOLUTION_H_

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"

namespace xs::kernels {

struct ConvolutionParams {
  Window window;  // one WindowDim per spatial dim, in dim_labels' spatial order
  ConvolutionDimensionNumbers dims;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
};

// Result dims XLA infers for the convolution; error names the mismatching sizes.
StatusOr<std::vector<int64_t>> ConvolutionResultDims(const std::vector<int64_t>& lhs,
                                                     const std::vector<int64_t>& rhs,
                                                     const ConvolutionParams& p);

StatusOr<Array> Convolution(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                            DType result);
// Direct loop over output elements and window positions (XLA evaluator order).
StatusOr<Array> ConvolutionReference(const Array& lhs, const Array& rhs,
                                     const ConvolutionParams& p, DType result);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_CONVOLUTION_H_
