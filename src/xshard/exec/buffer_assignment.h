// Buffer assignment: places buffers with known live ranges (in step numbers) at offsets of one
// arena so that two buffers alive at the same step never share memory. A greedy best-fit over
// the buffers in order of their first step; 64-byte aligned offsets.
#ifndef XSHARD_EXEC_BUFFER_ASSIGNMENT_H_
#define XSHARD_EXEC_BUFFER_ASSIGNMENT_H_

#include <cstdint>
#include <span>
#include <vector>

namespace xs {

inline constexpr int64_t kBufferAlignment = 64;

// `bytes` rounded up to kBufferAlignment.
inline int64_t AlignedBufferBytes(int64_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

struct BufferInterval {
  int64_t bytes = 0;  // >= 0
  int first = 0;      // the step that writes it
  int last = 0;       // the last step that reads it (inclusive, >= first)
  // An earlier interval whose memory this one may take over at `first` (an elementwise result
  // written over its dying operand): honoured when that interval's last == this first, it has
  // the same aligned size and nothing else took it over; otherwise ignored. -1: none.
  int reuse = -1;
};

struct BufferAssignment {
  std::vector<int64_t> offsets;  // per interval, a multiple of kBufferAlignment
  std::vector<char> reused;      // per interval: it took over its `reuse` interval's memory
  int64_t arena_bytes = 0;       // the end of the highest buffer (the peak)
};

// Offsets for `intervals`. Never fails; the arena is at most the sum of the aligned sizes.
BufferAssignment AssignBuffers(std::span<const BufferInterval> intervals);

// True when every two intervals alive at a common step occupy disjoint bytes, except a pair
// joined by an honoured `reuse` (which share memory by design). For tests and debug checks.
bool BufferAssignmentIsValid(std::span<const BufferInterval> intervals, const BufferAssignment& a);

}  // namespace xs

#endif  // XSHARD_EXEC_BUFFER_ASSIGNMENT_H_
