// cuBLASLt's entry points, bound with dlsym on first use.
#include "xshard/cuda/cublaslt_api.h"

#include <string>

#include "xshard/cuda/dynamic_library.h"

namespace xs::cuda {
namespace {

StatusOr<CublasLtApi> LoadCublasLt() {
  XS_ASSIGN_OR_RETURN(DynamicLibrary lib,
                      DynamicLibrary::Open("cuBLASLt", {"libcublasLt.so.13", "libcublasLt.so.12"}));
  CublasLtApi api{};
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtCreate", &api.Create));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtDestroy", &api.Destroy));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtGetVersion", &api.GetVersion));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtGetStatusName", &api.GetStatusName));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtGetStatusString", &api.GetStatusString));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtMatmulDescCreate", &api.MatmulDescCreate));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtMatmulDescDestroy", &api.MatmulDescDestroy));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtMatmulDescSetAttribute", &api.MatmulDescSetAttribute));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtMatrixLayoutCreate", &api.MatrixLayoutCreate));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtMatrixLayoutDestroy", &api.MatrixLayoutDestroy));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtMatrixLayoutSetAttribute", &api.MatrixLayoutSetAttribute));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtMatmulPreferenceCreate", &api.MatmulPreferenceCreate));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtMatmulPreferenceDestroy", &api.MatmulPreferenceDestroy));
  XS_RETURN_IF_ERROR(
      Bind(lib, "cublasLtMatmulPreferenceSetAttribute", &api.MatmulPreferenceSetAttribute));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtMatmulAlgoGetHeuristic", &api.MatmulAlgoGetHeuristic));
  XS_RETURN_IF_ERROR(
      Bind(lib, "cublasLtMatmulAlgoConfigGetAttribute", &api.MatmulAlgoConfigGetAttribute));
  XS_RETURN_IF_ERROR(Bind(lib, "cublasLtMatmul", &api.Matmul));
  return api;
}

}  // namespace

StatusOr<const CublasLtApi*> CublasLt() {
  static const StatusOr<CublasLtApi>* const loaded = new StatusOr<CublasLtApi>(LoadCublasLt());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

Status CublasStatus(const CublasLtApi& api, cublasStatus_t status, std::string_view call) {
  if (status == CUBLAS_STATUS_SUCCESS) return OkStatus();
  const std::string message = std::string(call) + " failed: " + api.GetStatusString(status) +
                              " (" + api.GetStatusName(status) + ")";
  switch (status) {
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return Unimplemented(message);
    case CUBLAS_STATUS_ALLOC_FAILED:
      return ResourceExhausted(message);
    default:
      return Internal(message);
  }
}

}  // namespace xs::cuda
