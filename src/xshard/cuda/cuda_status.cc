// CUDA runtime errors as Status.
#include "xshard/cuda/cuda_status.h"

#include <string>

namespace xs::cuda {

Status CudaStatus(cudaError_t error, std::string_view call) {
  if (error == cudaSuccess) return OkStatus();
  std::string message = std::string(call) + " failed: " + cudaGetErrorString(error) + " (" +
                        cudaGetErrorName(error) + ")";
  switch (error) {
    case cudaErrorMemoryAllocation:
      return ResourceExhausted(message);
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInvalidDevice:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorStubLibrary:
      return Unavailable(message);
    default:
      return Internal(message);
  }
}

}  // namespace xs::cuda
