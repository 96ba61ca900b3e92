// Convolution plans: an XLA convolution on row-major device buffers as one cuDNN 9 forward
// convolution (the legacy descriptor API of libcudnn_cnn). ConvLayoutFor is the data-independent
// mapping (no GPU needed, tested on CPU machines); ConvPlan adds cuDNN's descriptors and the
// algorithm chosen for one GPU.
#ifndef XSHARD_CUDA_CONV_H_
#define XSHARD_CUDA_CONV_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/dtype.h"
#include "xshard/cuda/platform.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {

// How a convolution maps onto cuDNN. Tensors are described as [batch, feature, spatial...] with
// the strides of the row-major buffers, so any XLA dim_labels order of the input and the output
// is read in place; cuDNN's filters take no strides, only [out, in, spatial...] (KCRS) or
// [out, spatial..., in] (KRSC), so other kernel orders ask the caller for a transpose first.
// cuDNN needs at least two spatial dims: a 1-D (or 0-D) convolution gets trailing unit dims.
// Example (JAX's default NHWC / HWIO): convolution(f32[8,32,32,3] x, f32[3,3,3,16] k),
// window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f ->
//   x_dims=[8,3,32,32] x_strides=[3072,1,96,3], filter KRSC [16,3,3,3] after
//   kernel_permutation={3,0,1,2}, y_dims=[8,16,32,32] y_strides=[16384,1,512,16].
struct ConvLayout {
  std::vector<int64_t> x_dims, x_strides;  // input [n, c, spatial...]
  std::vector<int64_t> w_dims;             // filter [k, c / groups, spatial...] (logical order)
  bool w_channels_last = false;            // filter memory KRSC (else KCRS)
  std::vector<int64_t> y_dims, y_strides;  // output [n, k, spatial...]
  std::vector<int64_t> pad, stride, dilation;  // per spatial dim
  int64_t groups = 1;                      // feature_group_count
  DType dtype = DType::kF32;
  bool allow_tf32 = true;                  // f32 only: false for precision HIGHEST
  // Transpose (XLA transpose semantics) the caller applies to the kernel before Run; empty when
  // it is read in place.
  std::vector<int64_t> kernel_permutation;

  std::string ToString() const;  // one line with every field, for messages and tests
};

// The cuDNN mapping of `conv` (opcode convolution, dense row-major operands). Unimplemented,
// naming the form, for what this plan does not take (the executor falls back): lhs dilation
// (transposed convolution), window reversal, asymmetric or negative padding, batch_group_count
// != 1, more than 3 spatial dims, types other than f16 / bf16 / f32 / f64 or a result type
// other than the operands'.
StatusOr<ConvLayout> ConvLayoutFor(const Instruction& conv);

// A convolution ready to run on one GPU. Create needs the GPU (cuDNN's heuristics query it).
class ConvPlan {
 public:
  // `max_workspace_bytes` caps the cuDNN workspace; the algorithm is cuDNN's first heuristic
  // choice that fits. Errors: ConvLayoutFor's; cuDNN missing (Unavailable); no algorithm
  // (Unimplemented naming the layout).
  static StatusOr<ConvPlan> Create(const Instruction& conv, const DeviceInfo& gpu,
                                   int64_t max_workspace_bytes = int64_t{32} << 20);

  const ConvLayout& layout() const;
  int64_t workspace_bytes() const;
  const std::vector<int64_t>& kernel_permutation() const { return layout().kernel_permutation; }
  std::string AlgorithmString() const;  // "cuDNN fwd algo 1 (implicit precomp gemm), 0 B"

  // out = convolution(input, kernel) on `stream` (the plan's GPU current on this thread).
  // `workspace` holds workspace_bytes() bytes.
  Status Run(cudaStream_t stream, const void* input, const void* kernel, void* out,
             void* workspace) const;

  struct State;  // cuDNN descriptors and the chosen algorithm (conv.cc)

 private:
  std::shared_ptr<const State> state_;
};

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_CONV_H_
