// Device memory of the CUDA backend (internal to cuda/: includes cuda_runtime.h): RAII device
// buffers (cudaMalloc / cudaFree on the GPU they belong to) and pinned host staging buffers
// (cudaMallocHost) for fast host <-> device copies. Out of memory is ResourceExhausted naming the
// bytes asked for, what they were for, the GPU and how much of it is free.
#ifndef XSHARD_CUDA_DEVICE_MEMORY_H_
#define XSHARD_CUDA_DEVICE_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "xshard/base/status.h"

namespace xs::cuda {

// "1.50 GiB", "64.0 KiB", "12 B": bytes for messages.
std::string BytesText(int64_t bytes);

// Makes `device` current for the enclosing scope and restores the previous one after.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  // Whether switching succeeded (a bad ordinal or no driver: the error).
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_;
};

struct DeviceMemoryInfo {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};
// cudaMemGetInfo of `device`.
StatusOr<DeviceMemoryInfo> GetDeviceMemoryInfo(int device);

// Device memory owned by this object (move-only); freed on the GPU it came from.
class DeviceBuffer {
 public:
  // `bytes` (>= 0; 0 gives an empty buffer without calling CUDA) on GPU `device`. `what` names
  // the use in errors: "cudaMalloc(2.00 GiB) on GPU 0 for the arena of 'main.7' failed: out of
  // memory; 1.10 GiB of 139.8 GiB free" (ResourceExhausted).
  static StatusOr<DeviceBuffer> Allocate(int device, int64_t bytes, std::string_view what);
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();

  std::byte* data() const { return data_; }
  int64_t bytes() const { return bytes_; }
  int device() const { return device_; }

 private:
  void Free();
  std::byte* data_ = nullptr;
  int64_t bytes_ = 0;
  int device_ = -1;
};

// Page-locked host memory (cudaMallocHost), so that asynchronous copies really overlap.
class PinnedHostBuffer {
 public:
  static StatusOr<PinnedHostBuffer> Allocate(int64_t bytes, std::string_view what);
  PinnedHostBuffer() = default;
  PinnedHostBuffer(PinnedHostBuffer&& other) noexcept { *this = std::move(other); }
  PinnedHostBuffer& operator=(PinnedHostBuffer&& other) noexcept;
  ~PinnedHostBuffer();

  std::byte* data() const { return data_; }
  int64_t bytes() const { return bytes_; }

 private:
  void Free();
  std::byte* data_ = nullptr;
  int64_t bytes_ = 0;
};

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_DEVICE_MEMORY_H_
