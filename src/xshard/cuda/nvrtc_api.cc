// Loading NVRTC's entry points with dlopen / dlsym (dynamic_library.h).
#include "xshard/cuda/nvrtc_api.h"

#include <memory>
#include <string>

#include "xshard/cuda/dynamic_library.h"

namespace xs::cuda {
namespace {

StatusOr<std::unique_ptr<NvrtcApi>> LoadNvrtc() {
  XS_ASSIGN_OR_RETURN(DynamicLibrary lib,
                      DynamicLibrary::Open("NVRTC", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}));
  auto api = std::make_unique<NvrtcApi>();
  XS_RETURN_IF_ERROR(Bind(lib, "nvrtcGetErrorString", &api->GetErrorString));
  XS_RETURN_IF_ERROR(Bind(lib, "nvrtcVersion", &api->Version));
  XS_RETURN_IF_ERROR(Bind(lib, "nvrtcCreateProgram", &api->CreateProgram));
  XS_RETURN_IF_ERROR(Bind(lib, "nvrtcDestroyProgram", &api->DestroyProgram));
  XS_RETURN_IF_ERROR(Bind(lib, "nvrtcCompileProgram", &api->CompileProgram));
  XS_RETURN_IF_ERROR(Bind(lib, "nvrtcGetCUBINSize", &api->GetCUBINSize));
  XS_RETURN_IF_ERROR(Bind(lib, "nvrtcGetCUBIN", &api->GetCUBIN));
  XS_RETURN_IF_ERROR(Bind(lib, "nvrtcGetProgramLogSize", &api->GetProgramLogSize));
  XS_RETURN_IF_ERROR(Bind(lib, "nvrtcGetProgramLog", &api->GetProgramLog));
  api->path = lib.path();
  const nvrtcResult r = api->Version(&api->major, &api->minor);
  if (r != NVRTC_SUCCESS) {
    return Unavailable("NVRTC (" + api->path + ") failed to report its version: " +
                       api->GetErrorString(r));
  }
  return api;
}

}  // namespace

StatusOr<const NvrtcApi*> Nvrtc() {
  // Loaded once; a failure is remembered too (the library will not appear during the run).
  static const StatusOr<std::unique_ptr<NvrtcApi>>* const loaded =
      new StatusOr<std::unique_ptr<NvrtcApi>>(LoadNvrtc());
  if (!loaded->ok()) return loaded->status();
  return loaded->value().get();
}

Status NvrtcStatus(const NvrtcApi& api, nvrtcResult result, std::string_view call) {
  if (result == NVRTC_SUCCESS) return OkStatus();
  return Internal(std::string(call) + " failed: " + api.GetErrorString(result));
}

}  // namespace xs::cuda
