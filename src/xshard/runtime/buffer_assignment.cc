// Greedy best-fit placement of live intervals in one arena (see buffer_assignment.h).
#include "xshard/runtime/buffer_assignment.h"

#include <algorithm>
#include <numeric>

namespace xs {
namespace {

struct Placed {
  int64_t offset;
  int64_t size;
  int last;
  int index;
};

}  // namespace

BufferAssignment AssignBuffers(std::span<const BufferInterval> intervals) {
  const int n = static_cast<int>(intervals.size());
  BufferAssignment out;
  out.offsets.assign(n, 0);
  out.reused.assign(n, 0);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  // By first step; at one step the bigger buffers first (they fragment least when placed early).
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (intervals[a].first != intervals[b].first) return intervals[a].first < intervals[b].first;
    return intervals[a].bytes > intervals[b].bytes;
  });
  std::vector<char> taken_over(n, 0);
  std::vector<Placed> active;  // sorted by offset
  for (int i : order) {
    const BufferInterval& iv = intervals[i];
    const int64_t size = AlignedBufferBytes(iv.bytes);
    // Buffers dead before this one starts free their memory.
    std::erase_if(active, [&](const Placed& p) { return p.last < iv.first; });
    const int r = iv.reuse;
    if (r >= 0 && r < n && r != i && !taken_over[r] && intervals[r].last == iv.first &&
        AlignedBufferBytes(intervals[r].bytes) == size) {
      auto it = std::find_if(active.begin(), active.end(), [&](const Placed& p) { return p.index == r; });
      if (it != active.end()) {
        taken_over[r] = 1;
        out.reused[i] = 1;
        out.offsets[i] = it->offset;
        it->last = std::max(iv.last, it->last);
        it->index = i;
        continue;
      }
    }
    if (size == 0) {
      out.offsets[i] = 0;
      continue;
    }
    // Best fit: the smallest gap between live buffers that holds it, else above them all.
    int64_t best = -1, best_gap = 0, cursor = 0;
    size_t best_pos = active.size();
    for (size_t k = 0; k <= active.size(); ++k) {
      const int64_t end = k < active.size() ? active[k].offset : INT64_MAX;
      const int64_t gap = end - cursor;
      if (gap >= size && (best < 0 || gap < best_gap)) {
        best = cursor;
        best_gap = gap;
        best_pos = k;
      }
      if (k < active.size()) cursor = std::max(cursor, active[k].offset + active[k].size);
    }
    out.offsets[i] = best;
    active.insert(active.begin() + static_cast<std::ptrdiff_t>(best_pos), Placed{best, size, iv.last, i});
    out.arena_bytes = std::max(out.arena_bytes, best + size);
  }
  return out;
}

bool BufferAssignmentIsValid(std::span<const BufferInterval> intervals, const BufferAssignment& a) {
  const int n = static_cast<int>(intervals.size());
  if (static_cast<int>(a.offsets.size()) != n) return false;
  for (int i = 0; i < n; ++i) {
    const int64_t si = AlignedBufferBytes(intervals[i].bytes);
    if (a.offsets[i] % kBufferAlignment != 0 || a.offsets[i] < 0) return false;
    if (si > 0 && a.offsets[i] + si > a.arena_bytes) return false;
    for (int j = i + 1; j < n; ++j) {
      const int64_t sj = AlignedBufferBytes(intervals[j].bytes);
      if (si == 0 || sj == 0) continue;
      const bool same_time = intervals[i].first <= intervals[j].last && intervals[j].first <= intervals[i].last;
      const bool same_bytes = a.offsets[i] < a.offsets[j] + sj && a.offsets[j] < a.offsets[i] + si;
      if (!same_time || !same_bytes) continue;
      const bool joined = (a.reused[j] && intervals[j].reuse == i) || (a.reused[i] && intervals[i].reuse == j);
      if (!joined) return false;
    }
  }
  return true;
}

}  // namespace xs
