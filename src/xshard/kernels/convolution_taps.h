// Convolution as GEMMs per window position (tap): for every tap and every output row (all output
// spatial dims but the last fixed), out[b, o.., run, :] += lhs[b, in(o, tap), run, :] x kernel[tap]
// over the run of last-dim positions whose input lies inside the operand. Taps that fall in the
// padding cost nothing (im2col multiplies their zeros: 5 of 9 taps of a 3x3 window dilated past
// the image) and no patch matrix is built. Internal to kernels/: Convolution picks it.
#ifndef XSHARD_KERNELS_CONVOLUTION_TAPS_H_
#define XSHARD_KERNELS_CONVOLUTION_TAPS_H_

#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/kernels/convolution.h"

namespace xs::kernels {

// True when the tap GEMMs are exact and worth it: at least one spatial dim, no lhs (base)
// dilation, no batch groups, f32 / f16 / bf16 operands, and GEMMs of at least 32 input features
// by 16 rows (narrower ones run faster as one im2col GEMM).
bool TapGemmApplies(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                    const std::vector<int64_t>& out_dims);

// The convolution in f32 (the caller rounds to f16 / bf16). Requires TapGemmApplies (XS_CHECK).
Array TapGemmConvolution(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                         const std::vector<int64_t>& out_dims);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_CONVOLUTION_TAPS_H_
