// Streams and events over the CUDA runtime.
#include "xshard/cuda/stream.h"

#include <utility>

#include "xshard/cuda/cuda_status.h"
#include "xshard/cuda/device_memory.h"

namespace xs::cuda {

StatusOr<Stream> Stream::Create(int device) {
  ScopedDevice scope(device);
  XS_RETURN_IF_ERROR(scope.status());
  Stream s;
  XS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s.stream_, cudaStreamNonBlocking));
  s.device_ = device;
  s.owned_ = true;
  return s;
}

Stream Stream::Borrow(int device, cudaStream_t stream) {
  Stream s;
  s.stream_ = stream;
  s.device_ = device;
  return s;
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Destroy();
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = std::exchange(other.device_, -1);
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

Stream::~Stream() { Destroy(); }

void Stream::Destroy() {
  if (owned_ && stream_ != nullptr) {
    ScopedDevice scope(device_);
    cudaStreamDestroy(stream_);
  }
  stream_ = nullptr;
  owned_ = false;
}

Status Stream::Synchronize() const {
  const cudaError_t e = cudaStreamSynchronize(stream_);
  return CudaStatus(e, StrCat("cudaStreamSynchronize on GPU ", device_));
}

Status Stream::WaitFor(const Event& event) const {
  XS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, event.get(), 0));
  return OkStatus();
}

StatusOr<Event> Event::Create(int device, bool timing) {
  ScopedDevice scope(device);
  XS_RETURN_IF_ERROR(scope.status());
  Event ev;
  XS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&ev.event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  ev.device_ = device;
  return ev;
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Destroy();
    event_ = std::exchange(other.event_, nullptr);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

Event::~Event() { Destroy(); }

void Event::Destroy() {
  if (event_ != nullptr) {
    ScopedDevice scope(device_);
    cudaEventDestroy(event_);
  }
  event_ = nullptr;
}

Status Event::Record(const Stream& stream) const {
  XS_CUDA_RETURN_IF_ERROR(cudaEventRecord(event_, stream.get()));
  return OkStatus();
}

Status Event::Synchronize() const {
  XS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_));
  return OkStatus();
}

StatusOr<float> Event::ElapsedMs(const Event& start, const Event& end) {
  float ms = 0;
  XS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return ms;
}

}  // namespace xs::cuda
