// Device memory accounting and Buffer lifetime.
#include "xshard/runtime/device.h"

#include <cstdio>
#include <utility>

namespace xs {

std::string FormatBytes(int64_t bytes) {
  if (bytes < 1024 && bytes > -1024) return StrCat(bytes, "B");
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while ((value >= 1024.0 || value <= -1024.0) && unit + 1 < 5) {
    value /= 1024.0;
    ++unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f%s", value, kUnits[unit]);
  return buf;
}

Device::Device(int64_t id, int64_t memory_limit, std::string kind)
    : id_(id), memory_limit_(memory_limit), kind_(std::move(kind)) {}

Status Device::Reserve(int64_t bytes) {
  int64_t live = live_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (memory_limit_ > 0 && live > memory_limit_) {
    live_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    return ResourceExhausted("device ", ToString(), " is out of memory: a buffer of ",
                             FormatBytes(bytes), " on top of ", FormatBytes(live - bytes),
                             " live exceeds the device limit of ", FormatBytes(memory_limit_),
                             "; free buffers earlier, shard the data further, or raise the limit");
  }
  int64_t peak = peak_bytes_.load(std::memory_order_relaxed);
  while (live > peak &&
         !peak_bytes_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  live_buffers_.fetch_add(1, std::memory_order_relaxed);
  allocations_.fetch_add(1, std::memory_order_relaxed);
  return OkStatus();
}

void Device::Release(int64_t bytes) {
  live_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  live_buffers_.fetch_sub(1, std::memory_order_relaxed);
}

StatusOr<Buffer> Device::Allocate(const Shape& shape) {
  if (!shape.IsArray()) {
    return InvalidArgument("cannot allocate a device buffer of shape ", shape.ToString(),
                           ": buffers hold arrays; allocate one buffer per tuple element");
  }
  XS_RETURN_IF_ERROR(Reserve(shape.byte_size()));
  return Buffer(this, Array(shape.WithoutLayout()));
}

StatusOr<Buffer> Device::Adopt(Array array) {
  XS_RETURN_IF_ERROR(Reserve(array.byte_size()));
  return Buffer(this, std::move(array));
}

MemoryStats Device::memory_stats() const {
  MemoryStats s;
  s.live_bytes = live_bytes_.load(std::memory_order_relaxed);
  s.peak_bytes = peak_bytes_.load(std::memory_order_relaxed);
  s.live_buffers = live_buffers_.load(std::memory_order_relaxed);
  s.allocations = allocations_.load(std::memory_order_relaxed);
  return s;
}

void Device::ResetPeak() {
  peak_bytes_.store(live_bytes_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

std::string Device::ToString() const { return StrCat(kind_, ":", id_); }

Buffer::Buffer(Buffer&& other) noexcept
    : device_(std::exchange(other.device_, nullptr)), array_(std::move(other.array_)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    Free();
    device_ = std::exchange(other.device_, nullptr);
    array_ = std::move(other.array_);
  }
  return *this;
}

Buffer::~Buffer() { Free(); }

void Buffer::Free() {
  if (device_ != nullptr) {
    device_->Release(array_.byte_size());
    device_ = nullptr;
  }
}

Array Buffer::TakeArray() {
  Array out = std::move(array_);
  if (device_ != nullptr) {
    device_->Release(out.byte_size());
    device_ = nullptr;
  }
  return out;
}

}  // namespace xs
