// Greedy best-fit placement of live intervals in one arena (see buffer_assignment.h).
#include "xshard/exec/buffer_assignment.h"

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

// Placement in order of first use, best fit among the live buffers.
BufferAssignment AssignByFirstUse(std::span<const BufferInterval> intervals) {
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

// Placement by size, biggest first (as XLA's heap simulator does): in-place chains are joined
// into one block first; each block goes into the lowest gap between the blocks already placed
// that overlap it in time. Packs programs with big short-lived temporaries tighter than first-use
// order does.
BufferAssignment AssignBySize(std::span<const BufferInterval> intervals) {
  const int n = static_cast<int>(intervals.size());
  BufferAssignment out;
  out.offsets.assign(n, 0);
  out.reused.assign(n, 0);
  // Join each interval to the one it takes over, under the same rule AssignByFirstUse applies.
  std::vector<int> head(n);
  std::iota(head.begin(), head.end(), 0);
  std::vector<char> taken_over(n, 0);
  std::vector<int> by_first(n);
  std::iota(by_first.begin(), by_first.end(), 0);
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](int a, int b) { return intervals[a].first < intervals[b].first; });
  for (int i : by_first) {
    const int r = intervals[i].reuse;
    if (r >= 0 && r < n && r != i && !taken_over[r] && intervals[r].last == intervals[i].first &&
        AlignedBufferBytes(intervals[r].bytes) == AlignedBufferBytes(intervals[i].bytes)) {
      taken_over[r] = 1;
      out.reused[i] = 1;
      head[i] = r;
    }
  }
  // Each chain's block is its earliest member (bounded walk: a malformed cycle stops anywhere).
  for (int i = 0; i < n; ++i) {
    int h = i;
    for (int steps = 0; head[h] != h && steps < n; ++steps) h = head[h];
    head[i] = h;
  }
  for (int i = 0; i < n; ++i) {
    if (head[head[i]] != head[i]) {  // a cycle: no joining at all
      std::iota(head.begin(), head.end(), 0);
      std::fill(out.reused.begin(), out.reused.end(), 0);
      break;
    }
  }
  struct Block {
    int64_t size = 0;
    int first = 0, last = 0;
    int64_t offset = -1;
  };
  std::vector<Block> blocks(n);
  for (int i = 0; i < n; ++i) blocks[i] = {AlignedBufferBytes(intervals[i].bytes), intervals[i].first, intervals[i].last};
  for (int i = 0; i < n; ++i) {
    if (head[i] == i) continue;
    Block& b = blocks[head[i]];
    b.first = std::min(b.first, intervals[i].first);
    b.last = std::max(b.last, intervals[i].last);
  }
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    if (head[i] == i && blocks[i].size > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (blocks[a].size != blocks[b].size) return blocks[a].size > blocks[b].size;
    return blocks[a].first < blocks[b].first;
  });
  std::vector<int> placed;
  for (int i : order) {
    Block& b = blocks[i];
    std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of placed blocks live with b
    for (int j : placed) {
      if (blocks[j].first <= b.last && b.first <= blocks[j].last) busy.push_back({blocks[j].offset, blocks[j].offset + blocks[j].size});
    }
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo - at >= b.size) break;
      at = std::max(at, hi);
    }
    b.offset = at;
    placed.push_back(i);
    out.arena_bytes = std::max(out.arena_bytes, at + b.size);
  }
  for (int i = 0; i < n; ++i) out.offsets[i] = blocks[head[i]].size > 0 ? std::max<int64_t>(blocks[head[i]].offset, 0) : 0;
  return out;
}

}  // namespace

BufferAssignment AssignBuffers(std::span<const BufferInterval> intervals) {
  BufferAssignment a = AssignByFirstUse(intervals);
  BufferAssignment b = AssignBySize(intervals);
  return b.arena_bytes < a.arena_bytes ? b : a;
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
