// NVRTC, the runtime CUDA C++ compiler, opened with dlopen on first use (dynamic_library.h):
// the table of the entry points the backend calls. Internal to the cuda layer (includes nvrtc.h).
#ifndef XSHARD_CUDA_NVRTC_API_H_
#define XSHARD_CUDA_NVRTC_API_H_

#include <nvrtc.h>

#include <string_view>

#include "xshard/base/status.h"

namespace xs::cuda {

struct NvrtcApi {
  decltype(&nvrtcGetErrorString) GetErrorString;
  decltype(&nvrtcVersion) Version;
  decltype(&nvrtcCreateProgram) CreateProgram;
  decltype(&nvrtcDestroyProgram) DestroyProgram;
  decltype(&nvrtcCompileProgram) CompileProgram;
  decltype(&nvrtcGetCUBINSize) GetCUBINSize;
  decltype(&nvrtcGetCUBIN) GetCUBIN;
  decltype(&nvrtcGetProgramLogSize) GetProgramLogSize;
  decltype(&nvrtcGetProgramLog) GetProgramLog;
  int major = 0, minor = 0;  // NVRTC's version (nvrtcVersion)
  std::string path;          // the shared object that was opened
};

// The table, loaded once per process from libnvrtc.so.13 (libnvrtc.so.12, libnvrtc.so as
// fallbacks); thread-safe. A missing library or symbol is Unavailable naming it and the fix.
StatusOr<const NvrtcApi*> Nvrtc();

// OK for NVRTC_SUCCESS, else Internal "<call> failed: <NVRTC's text>".
Status NvrtcStatus(const NvrtcApi& api, nvrtcResult result, std::string_view call);

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_NVRTC_API_H_
