// Device: one device of a Client (a virtual CPU device, or a GPU's), with exact memory accounting (live and peak bytes,
// buffer counts) and an optional memory limit, so a program's per-device footprint can be shown
// (`Client::MemoryReport()`) and checked.
#ifndef XSHARD_RUNTIME_DEVICE_H_
#define XSHARD_RUNTIME_DEVICE_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/runtime/buffer.h"

namespace xs {

// A snapshot of one device's memory use.
struct MemoryStats {
  int64_t live_bytes = 0;    // bytes held by buffers alive now
  int64_t peak_bytes = 0;    // most live bytes at any time since creation or ResetPeak()
  int64_t live_buffers = 0;  // buffers alive now
  int64_t allocations = 0;   // buffers ever made on the device
};

// Bytes as XLA prints them: 512 -> "512B", 1536 -> "1.50KiB", 268435456 -> "256.00MiB".
std::string FormatBytes(int64_t bytes);

class Device {
 public:
  // `memory_limit` 0 means unlimited; `kind` is the device kind's name ("cpu", "cuda").
  Device(int64_t id, int64_t memory_limit, std::string kind = "cpu");
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int64_t id() const { return id_; }
  int64_t memory_limit() const { return memory_limit_; }

  // A zero-filled buffer of an array shape. ResourceExhausted, naming the device, the sizes and
  // the limit, when it would take the live bytes past the limit; InvalidArgument for a tuple or
  // token shape.
  StatusOr<Buffer> Allocate(const Shape& shape);
  // Takes `array` onto the device without copying (same limit check as Allocate).
  StatusOr<Buffer> Adopt(Array array);

  MemoryStats memory_stats() const;
  // Starts a new peak measurement from the current live bytes.
  void ResetPeak();

  // "cpu:3" (the kind's name and the id).
  std::string ToString() const;

 private:
  friend class Buffer;
  Status Reserve(int64_t bytes);
  void Release(int64_t bytes);

  const int64_t id_;
  const int64_t memory_limit_;
  const std::string kind_;
  std::atomic<int64_t> live_bytes_{0};
  std::atomic<int64_t> peak_bytes_{0};
  std::atomic<int64_t> live_buffers_{0};
  std::atomic<int64_t> allocations_{0};
};

}  // namespace xs

#endif  // XSHARD_RUNTIME_DEVICE_H_
