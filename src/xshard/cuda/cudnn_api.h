// cuDNN 9 opened on first use (dynamic_library.h): the function-pointer table ConvPlan calls (the
// legacy convolution descriptors, which cuDNN 9 keeps in libcudnn_cnn behind libcudnn.so.9), and
// cudnnStatus_t as Status (internal to the cuda layer: includes cudnn.h).
#ifndef XSHARD_CUDA_CUDNN_API_H_
#define XSHARD_CUDA_CUDNN_API_H_

#include <cudnn.h>

#include <string_view>

#include "xshard/base/status.h"

namespace xs::cuda {

struct CudnnApi {
  decltype(&cudnnGetVersion) GetVersion;
  decltype(&cudnnGetErrorString) GetErrorString;
  decltype(&cudnnCreate) Create;
  decltype(&cudnnSetStream) SetStream;
  decltype(&cudnnCreateTensorDescriptor) CreateTensorDescriptor;
  decltype(&cudnnSetTensorNdDescriptor) SetTensorNdDescriptor;
  decltype(&cudnnDestroyTensorDescriptor) DestroyTensorDescriptor;
  decltype(&cudnnCreateFilterDescriptor) CreateFilterDescriptor;
  decltype(&cudnnSetFilterNdDescriptor) SetFilterNdDescriptor;
  decltype(&cudnnDestroyFilterDescriptor) DestroyFilterDescriptor;
  decltype(&cudnnCreateConvolutionDescriptor) CreateConvolutionDescriptor;
  decltype(&cudnnSetConvolutionNdDescriptor) SetConvolutionNdDescriptor;
  decltype(&cudnnSetConvolutionGroupCount) SetConvolutionGroupCount;
  decltype(&cudnnSetConvolutionMathType) SetConvolutionMathType;
  decltype(&cudnnDestroyConvolutionDescriptor) DestroyConvolutionDescriptor;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) GetConvolutionForwardAlgorithm_v7;
  decltype(&cudnnConvolutionForward) ConvolutionForward;
};

// The table, loaded once per process from libcudnn.so.9; the error names the library and the fix.
StatusOr<const CudnnApi*> Cudnn();

// OK for CUDNN_STATUS_SUCCESS; otherwise "<call> failed: <cuDNN's text>" (Unimplemented for
// NOT_SUPPORTED, ResourceExhausted for ALLOC_FAILED, Internal otherwise).
Status CudnnStatus(const CudnnApi& api, cudnnStatus_t status, std::string_view call);

}  // namespace xs::cuda

// Returns from the enclosing function when the cuDNN call `expr` fails; `api` is the table.
#define XS_CUDNN_RETURN_IF_ERROR(api, expr)                                   \
  do {                                                                       \
    const cudnnStatus_t xs_cudnn_status_ = (expr);                           \
    if (xs_cudnn_status_ != CUDNN_STATUS_SUCCESS)                            \
      return ::xs::cuda::CudnnStatus((api), xs_cudnn_status_, #expr);        \
  } while (false)

#endif  // XSHARD_CUDA_CUDNN_API_H_
