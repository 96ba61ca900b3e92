// Turning CUDA's error codes into Status (internal to the cuda layer: includes cuda_runtime.h).
// Every message names the call that failed, CUDA's text and the error's name, e.g.
// "cudaMalloc(1.00GiB) failed: out of memory (cudaErrorMemoryAllocation)".
#ifndef XSHARD_CUDA_CUDA_STATUS_H_
#define XSHARD_CUDA_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include <string_view>

#include "xshard/base/status.h"

namespace xs::cuda {

// OK for cudaSuccess; otherwise an error (ResourceExhausted for out-of-memory, Unavailable for a
// missing driver or device, Internal for the rest) "<call> failed: <text> (<name>)".
Status CudaStatus(cudaError_t error, std::string_view call);

}  // namespace xs::cuda

// Returns from the enclosing function when the CUDA runtime call `expr` fails, naming it.
#define XS_CUDA_RETURN_IF_ERROR(expr)                                          \
  do {                                                                        \
    const cudaError_t xs_cuda_error_ = (expr);                                \
    if (xs_cuda_error_ != cudaSuccess) return ::xs::cuda::CudaStatus(xs_cuda_error_, #expr); \
  } while (false)

#endif  // XSHARD_CUDA_CUDA_STATUS_H_
