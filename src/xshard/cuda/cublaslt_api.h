// cuBLASLt opened on first use (dynamic_library.h): the function-pointer table GemmPlan calls,
// and cublasStatus_t as Status (internal to the cuda layer: includes cublasLt.h).
#ifndef XSHARD_CUDA_CUBLASLT_API_H_
#define XSHARD_CUDA_CUBLASLT_API_H_

#include <cublasLt.h>

#include <string_view>

#include "xshard/base/status.h"

namespace xs::cuda {

struct CublasLtApi {
  decltype(&cublasLtCreate) Create;
  decltype(&cublasLtDestroy) Destroy;
  decltype(&cublasLtGetVersion) GetVersion;
  decltype(&cublasLtGetStatusName) GetStatusName;
  decltype(&cublasLtGetStatusString) GetStatusString;
  decltype(&cublasLtMatmulDescCreate) MatmulDescCreate;
  decltype(&cublasLtMatmulDescDestroy) MatmulDescDestroy;
  decltype(&cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
  decltype(&cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
  decltype(&cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute;
  decltype(&cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
  decltype(&cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
  decltype(&cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
  decltype(&cublasLtMatmulAlgoConfigGetAttribute) MatmulAlgoConfigGetAttribute;
  decltype(&cublasLtMatmul) Matmul;
};

// The table, loaded once per process from libcublasLt.so.13 (else .so.12); the error (every
// later call returns the same one) names the library and the fix.
StatusOr<const CublasLtApi*> CublasLt();

// OK for CUBLAS_STATUS_SUCCESS; otherwise "<call> failed: <text> (<name>)" (Unimplemented for
// CUBLAS_STATUS_NOT_SUPPORTED, ResourceExhausted for ALLOC_FAILED, Internal otherwise).
Status CublasStatus(const CublasLtApi& api, cublasStatus_t status, std::string_view call);

}  // namespace xs::cuda

// Returns from the enclosing function when the cuBLASLt call `expr` fails; `api` is the table.
#define XS_CUBLAS_RETURN_IF_ERROR(api, expr)                                      \
  do {                                                                           \
    const cublasStatus_t xs_cublas_status_ = (expr);                             \
    if (xs_cublas_status_ != CUBLAS_STATUS_SUCCESS)                              \
      return ::xs::cuda::CublasStatus((api), xs_cublas_status_, #expr);          \
  } while (false)

#endif  // XSHARD_CUDA_CUBLASLT_API_H_
