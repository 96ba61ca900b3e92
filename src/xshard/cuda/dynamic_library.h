// Opening the CUDA libraries on first use (internal to the cuda layer). Linked directly, cuBLASLt,
// NVRTC, NCCL and cuDNN (~800 MB of shared objects) cost every xshard process 0.3-1.7 s of
// start-up whether it uses a GPU or not; instead each API is a table of function pointers filled
// by dlopen / dlsym the first time the cuda platform needs it, with an error naming the library,
// what dlopen said and the fix when it is missing.
//
//   struct NvrtcApi { decltype(&nvrtcCreateProgram) CreateProgram; ... };
//   StatusOr<const NvrtcApi*> Nvrtc();   // in nvrtc_api.cc, through LoadApi below
#ifndef XSHARD_CUDA_DYNAMIC_LIBRARY_H_
#define XSHARD_CUDA_DYNAMIC_LIBRARY_H_

#include <initializer_list>
#include <string>
#include <string_view>

#include "xshard/base/status.h"

namespace xs::cuda {

// A shared object opened with dlopen (RTLD_NOW | RTLD_LOCAL), never closed (the process keeps it).
class DynamicLibrary {
 public:
  // Tries each name in order: as given (the loader's search path, LD_LIBRARY_PATH), then in the
  // toolkit's library folder this build was configured with, then in $CUDA_HOME/lib64 and
  // /usr/local/cuda/lib64. `what` names the library in the error ("cuBLASLt").
  static StatusOr<DynamicLibrary> Open(std::string_view what, std::initializer_list<const char*> names);
  // The address of `symbol`, or an error naming it and the library.
  StatusOr<void*> Symbol(const char* symbol) const;
  // The file that was opened.
  const std::string& path() const { return path_; }

 private:
  void* handle_ = nullptr;
  std::string what_, path_;
};

// Fills `*slot` (a function pointer) with `symbol` from `lib`.
template <typename Fn>
Status Bind(const DynamicLibrary& lib, const char* symbol, Fn* slot) {
  XS_ASSIGN_OR_RETURN(void* p, lib.Symbol(symbol));
  *slot = reinterpret_cast<Fn>(p);
  return OkStatus();
}

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_DYNAMIC_LIBRARY_H_
