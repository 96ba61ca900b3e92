// Loading generated kernels on a GPU: the CUBIN of a KernelSource (CompileToCubin for the
// device's compute capability) becomes a cudaLibrary_t and its entry point a cudaKernel_t,
// once per (kernel, device); and the launch of such a kernel. Needs a GPU (and its driver).
// Internal to the cuda layer (includes cuda_runtime.h).
#ifndef XSHARD_CUDA_KERNEL_LOADER_H_
#define XSHARD_CUDA_KERNEL_LOADER_H_

#include <cuda_runtime.h>

#include "xshard/base/status.h"
#include "xshard/cuda/kernel_source.h"

namespace xs::cuda {

// The entry point `src.name` of `src` compiled for GPU `device` and loaded (cudaLibraryLoadData
// + cudaLibraryGetKernel, CUDA 12+ runtime calls: no libcuda link). Cached per (source, device)
// for the life of the process; thread-safe. Errors: no such device (Unavailable / Internal from
// CUDA, naming the call), a compile error (Internal with NVRTC's log).
StatusOr<cudaKernel_t> LoadKernel(const KernelSource& src, int device);

// Launches `kernel` on `stream` (cudaLaunchKernel accepts a cudaKernel_t in place of a
// function's address since CUDA 12). `args[i]` points at the kernel's i-th parameter (for the
// generators of kernel_codegen.h: one pointer to a KernelArgs block). `shared_bytes` above 48 KiB
// first opts the kernel in on the current device (once). The error names the launch.
Status LaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                    cudaStream_t stream);

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_KERNEL_LOADER_H_
