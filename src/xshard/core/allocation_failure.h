// Host buffers: AllocateBuffer (arrays and the executor's arenas; huge pages for large ones) and
// AllocationFailure, what Array's constructors throw when the host cannot give them memory. The
// CLI's command runner and the SPMD executor's device threads turn it into a ResourceExhausted
// Status (exit 1 with one line), so memory the up-front estimate missed still never aborts.
#ifndef XSHARD_CORE_ALLOCATION_FAILURE_H_
#define XSHARD_CORE_ALLOCATION_FAILURE_H_

#include <cstdint>
#include <new>
#include <string>

namespace xs {

class AllocationFailure : public std::bad_alloc {
 public:
  // `what`: the thing being allocated, e.g. "f32[100000,100000]".
  AllocationFailure(int64_t bytes, std::string what)
      : bytes_(bytes),
        message_("allocating " + std::to_string(bytes) + " bytes of host memory for " + what +
                 " failed: the machine has less available; use smaller shapes or fewer devices") {}
  const char* what() const noexcept override { return message_.c_str(); }
  int64_t bytes() const { return bytes_; }

 private:
  int64_t bytes_;
  std::string message_;
};

// Host memory for a buffer of `bytes` (> 0), freed with std::free; nullptr when the host has
// none. 64-byte aligned; buffers of kHugeBufferBytes or more are 2 MiB aligned and advised to
// use transparent huge pages (streamed loops then miss the TLB far less), rounded up to 2 MiB.
inline constexpr size_t kHugeBufferBytes = size_t{4} << 20;
void* AllocateBuffer(size_t bytes);
// The size AllocateBuffer really takes for `bytes` (what a cache of freed buffers keys on).
size_t BufferCapacity(size_t bytes);

}  // namespace xs

#endif  // XSHARD_CORE_ALLOCATION_FAILURE_H_
