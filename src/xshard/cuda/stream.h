// CUDA streams and events of the backend (internal to cuda/: includes cuda_runtime.h), owned
// RAII-style and bound to the GPU they were created on. Events time kernels (Event::Create with
// timing) and order work across streams (Stream::WaitFor).
#ifndef XSHARD_CUDA_STREAM_H_
#define XSHARD_CUDA_STREAM_H_

#include <cuda_runtime.h>

#include "xshard/base/status.h"

namespace xs::cuda {

class Event;

// A non-blocking stream (it does not synchronize with the legacy default stream).
class Stream {
 public:
  static StatusOr<Stream> Create(int device);
  // Wraps a stream someone else owns (not destroyed here).
  static Stream Borrow(int device, cudaStream_t stream);
  Stream() = default;
  Stream(Stream&& other) noexcept { *this = std::move(other); }
  Stream& operator=(Stream&& other) noexcept;
  ~Stream();

  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }
  // Waits for everything enqueued so far; an error names the stream's GPU and what failed
  // (a kernel's fault surfaces here).
  Status Synchronize() const;
  // Later work on this stream waits for `event`'s last record.
  Status WaitFor(const Event& event) const;

 private:
  void Destroy();
  cudaStream_t stream_ = nullptr;
  int device_ = -1;
  bool owned_ = false;
};

class Event {
 public:
  // `timing`: the event records a timestamp (for ElapsedMs); otherwise it only orders work and
  // is cheaper (cudaEventDisableTiming).
  static StatusOr<Event> Create(int device, bool timing);
  Event() = default;
  Event(Event&& other) noexcept { *this = std::move(other); }
  Event& operator=(Event&& other) noexcept;
  ~Event();

  cudaEvent_t get() const { return event_; }
  Status Record(const Stream& stream) const;
  Status Synchronize() const;
  // Milliseconds from `start` to `end` (both recorded with timing and complete).
  static StatusOr<float> ElapsedMs(const Event& start, const Event& end);

 private:
  void Destroy();
  cudaEvent_t event_ = nullptr;
  int device_ = -1;
};

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_STREAM_H_
