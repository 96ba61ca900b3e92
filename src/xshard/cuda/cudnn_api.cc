// cuDNN's entry points, bound with dlsym on first use.
#include "xshard/cuda/cudnn_api.h"

#include <string>

#include "xshard/cuda/dynamic_library.h"

namespace xs::cuda {
namespace {

StatusOr<CudnnApi> LoadCudnn() {
  XS_ASSIGN_OR_RETURN(DynamicLibrary lib, DynamicLibrary::Open("cuDNN 9", {"libcudnn.so.9"}));
  CudnnApi api{};
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnGetVersion", &api.GetVersion));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnGetErrorString", &api.GetErrorString));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnCreate", &api.Create));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnSetStream", &api.SetStream));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnCreateTensorDescriptor", &api.CreateTensorDescriptor));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnSetTensorNdDescriptor", &api.SetTensorNdDescriptor));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnDestroyTensorDescriptor", &api.DestroyTensorDescriptor));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnCreateFilterDescriptor", &api.CreateFilterDescriptor));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnSetFilterNdDescriptor", &api.SetFilterNdDescriptor));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnDestroyFilterDescriptor", &api.DestroyFilterDescriptor));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnCreateConvolutionDescriptor", &api.CreateConvolutionDescriptor));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnSetConvolutionNdDescriptor", &api.SetConvolutionNdDescriptor));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnSetConvolutionGroupCount", &api.SetConvolutionGroupCount));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnSetConvolutionMathType", &api.SetConvolutionMathType));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnDestroyConvolutionDescriptor", &api.DestroyConvolutionDescriptor));
  XS_RETURN_IF_ERROR(
      Bind(lib, "cudnnGetConvolutionForwardAlgorithm_v7", &api.GetConvolutionForwardAlgorithm_v7));
  XS_RETURN_IF_ERROR(Bind(lib, "cudnnConvolutionForward", &api.ConvolutionForward));
  return api;
}

}  // namespace

StatusOr<const CudnnApi*> Cudnn() {
  static const StatusOr<CudnnApi>* const loaded = new StatusOr<CudnnApi>(LoadCudnn());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

Status CudnnStatus(const CudnnApi& api, cudnnStatus_t status, std::string_view call) {
  if (status == CUDNN_STATUS_SUCCESS) return OkStatus();
  const std::string message = std::string(call) + " failed: " + api.GetErrorString(status);
  switch (status) {
    case CUDNN_STATUS_NOT_SUPPORTED:
      return Unimplemented(message);
    case CUDNN_STATUS_ALLOC_FAILED:
      return ResourceExhausted(message);
    default:
      return Internal(message);
  }
}

}  // namespace xs::cuda
