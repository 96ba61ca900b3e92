// Generated CUDA kernels: their source, compiled with NVRTC for the GPU's architecture (cached in
// memory and on disk) and loaded once per device. Compiling needs no GPU, so CI compiles every
// kernel the backend generates; loading and launching need one.
//
// Kernel conventions shared by every generator (kernel_codegen.h, collectives, ...): the source
// is one translation unit with no host headers; its entry point is `extern "C" __global__ void
// <name>(...)`; launch geometry is chosen by whoever generated it (kernel_codegen.h's
// GeneratedKernel::launch for the generated kernels) and passed to cudaLaunchKernel with the
// kernel's parameters (kernel_loader.h).
#ifndef XSHARD_CUDA_KERNEL_SOURCE_H_
#define XSHARD_CUDA_KERNEL_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "xshard/base/status.h"

namespace xs::cuda {

struct KernelSource {
  std::string name;  // the extern "C" __global__ entry point
  std::string code;  // a complete translation unit
};

// NVRTC's CUBIN of `src` for compute capability major.minor (e.g. 9, 0 -> sm_90), compiled with
// the backend's fixed options (-std=c++17, --use_fast_math off, -default-device). Cached in
// memory, and on disk under $XSHARD_CACHE_DIR (default $XDG_CACHE_HOME/xshard or
// ~/.cache/xshard; XSHARD_CACHE_DIR=off disables it) keyed by a hash of the code, the name, the
// architecture, the options and NVRTC's version. A compile error names the kernel and quotes
// NVRTC's log (an internal bug: the generators must only emit valid code).
// Options beyond those: --fmad=false (a * b + c rounds twice, as the CPU executor and XLA's
// elementwise semantics do), -I<the toolkit's include folder> (XSHARD_CUDA_INCLUDE_DIR, else
// $CUDA_HOME/include) so sources may include cuda_fp16.h / cuda_bf16.h. Cache files are
// written atomically (a temporary file renamed into place); one that is unreadable, truncated
// or fails its checksum is ignored and rewritten. Thread-safe.
StatusOr<std::shared_ptr<const std::string>> CompileToCubin(const KernelSource& src, int major,
                                                             int minor);

// Counters of CompileToCubin since the process started (for tests and reports).
struct CompileCacheStats {
  int64_t memory_hits = 0;    // found in the in-memory cache
  int64_t disk_hits = 0;      // read back from a cache file
  int64_t compiles = 0;       // NVRTC ran
  int64_t disk_writes = 0;    // cache files written
  int64_t corrupt_files = 0;  // cache files ignored (bad header, size or checksum)
  double compile_seconds = 0; // time spent in NVRTC
};
CompileCacheStats GetCompileCacheStats();
// Empties the in-memory cache (tests: the next compile of a source must come from disk).
void ClearCompileMemoryCache();
// The disk cache folder CompileToCubin uses now ("" when XSHARD_CACHE_DIR=off or no home).
std::string CompileCacheDir();
// The file `src` compiled for major.minor is cached in (under CompileCacheDir(); "" when off).
StatusOr<std::string> CompileCachePath(const KernelSource& src, int major, int minor);

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_KERNEL_SOURCE_H_
