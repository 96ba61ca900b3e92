// LoadKernel / LaunchKernel through the CUDA runtime's library API (context-independent loading).
#include "xshard/cuda/kernel_loader.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "xshard/cuda/cuda_status.h"

namespace xs::cuda {
namespace {

struct Loaded {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
};

struct LoaderCache {
  std::mutex mu;
  // (name + '\0' + code, device) -> loaded kernel; libraries stay loaded for the process.
  std::map<std::pair<std::string, int>, Loaded> entries;
};
LoaderCache& TheLoaderCache() {
  static LoaderCache* cache = new LoaderCache;
  return *cache;
}

}  // namespace

StatusOr<cudaKernel_t> LoadKernel(const KernelSource& src, int device) {
  LoaderCache& cache = TheLoaderCache();
  std::pair<std::string, int> key(src.name + '\0' + src.code, device);
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) return it->second.kernel;
  }
  int major = 0, minor = 0;
  XS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  XS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  XS_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> cubin, CompileToCubin(src, major, minor));
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.entries.find(key);  // another thread may have loaded it meanwhile
  if (it != cache.entries.end()) return it->second.kernel;
  Loaded loaded;
  XS_RETURN_IF_ERROR(Annotate(CudaStatus(cudaLibraryLoadData(&loaded.library, cubin->data(), nullptr,
                                                             nullptr, 0, nullptr, nullptr, 0),
                                         "cudaLibraryLoadData"),
                              "loading kernel '" + src.name + "': "));
  const cudaError_t e = cudaLibraryGetKernel(&loaded.kernel, loaded.library, src.name.c_str());
  if (e != cudaSuccess) {
    cudaLibraryUnload(loaded.library);
    return Annotate(CudaStatus(e, "cudaLibraryGetKernel(" + src.name + ")"),
                    "loading kernel '" + src.name + "': ");
  }
  cache.entries.emplace(std::move(key), loaded);
  return loaded.kernel;
}

// Dynamic shared memory above the default 48 KiB needs the kernel's opt-in on each device, once
// (sort kernels take up to 227 KiB on Hopper).
static Status AllowSharedMemory(cudaKernel_t kernel, size_t bytes) {
  constexpr size_t kDefault = 48 << 10;
  if (bytes <= kDefault) return OkStatus();
  int device = 0;
  XS_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  static std::mutex mu;
  static auto* allowed = new std::map<std::pair<cudaKernel_t, int>, size_t>();
  std::lock_guard<std::mutex> lock(mu);
  size_t& have = (*allowed)[{kernel, device}];
  if (have >= bytes) return OkStatus();
  XS_RETURN_IF_ERROR(CudaStatus(cudaKernelSetAttributeForDevice(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                                static_cast<int>(bytes), device),
                                "cudaKernelSetAttributeForDevice(MaxDynamicSharedMemorySize)"));
  have = bytes;
  return OkStatus();
}

Status LaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                    cudaStream_t stream) {
  XS_RETURN_IF_ERROR(AllowSharedMemory(kernel, shared_bytes));
  return CudaStatus(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args,
                                     shared_bytes, stream),
                    "cudaLaunchKernel");
}

}  // namespace xs::cuda
