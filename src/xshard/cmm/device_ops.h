// What a collective-matmul algorithm does on one device (cmm internal): matmuls with f32
// accumulation, the named-axis collectives of shard_map (blocking, or asynchronous ring shifts),
// block slicing, and the per-call trace and cost bookkeeping.
#ifndef XSHARD_CMM_DEVICE_OPS_H_
#define XSHARD_CMM_DEVICE_OPS_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/cmm/cmm.h"
#include "xshard/core/array.h"
#include "xshard/shard_map/shard_map.h"

namespace xs::cmm {

// Chrome trace events of one call on every device (thread-safe).
class TraceLog {
 public:
  // pid 0: "compute and blocking collectives"; pid 1: "asynchronous transfers in flight".
  void Add(std::string name, int pid, int64_t device, double ts_us, double dur_us);
  // Writes the trace-event JSON; an error names the path.
  Status Write(const std::string& path) const;
  void Clear();

 private:
  struct Event {
    std::string name;
    int pid;
    int64_t tid;
    double ts_us, dur_us;
  };
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

// An asynchronous ring shift in flight.
struct Transfer {
  PendingCollective pending;
  std::string name;
  double start_us = 0;
  int64_t bytes = 0;
};

// One device's view of a run: wraps ShardMapContext with the mesh axes 'row' and 'col'.
class Dev {
 public:
  // `trace` and `cost` may be null (no recording).
  Dev(ShardMapContext& ctx, TraceLog* trace, CmmCost* cost)
      : ctx_(ctx), trace_(trace), cost_(cost) {}

  ShardMapContext& ctx() { return ctx_; }
  StatusOr<int64_t> Index(const char* axis) { return ctx_.AxisIndex(axis); }
  StatusOr<int64_t> Size(const char* axis) { return ctx_.AxisSize(axis); }

  // f32 result of contracting lhs dim lc with rhs dim rc (2-D operands, f32 or bf16).
  StatusOr<Array> Dot(const Array& lhs, const Array& rhs, int64_t lc = 1, int64_t rc = 0);
  // acc += Dot(lhs, rhs, lc, rc).
  Status DotAdd(Array& acc, const Array& lhs, const Array& rhs, int64_t lc = 1, int64_t rc = 0);
  // Tiled all_gather / psum_scatter / psum over one axis.
  StatusOr<Array> AllGather(const Array& x, const char* axis, int dim);
  StatusOr<Array> PsumScatter(const Array& x, const char* axis, int dim);
  StatusOr<Array> Psum(const Array& x, const char* axis);
  // Starts sending x to the next (shift = +1) or previous (-1) member along `axis`, as the
  // seed's shift_up / shift_dn ppermutes; Finish returns what this device received.
  StatusOr<Transfer> ShiftStart(Array x, const char* axis, int shift);
  // Starts a tiled all_gather over `axis` along `dim` (all-gather-start); Finish returns it.
  StatusOr<Transfer> AllGatherStart(Array x, const char* axis, int dim);
  StatusOr<Array> Finish(Transfer& t);

 private:
  double Now() const;
  void Record(const std::string& name, double t0);

  ShardMapContext& ctx_;
  TraceLog* trace_;
  CmmCost* cost_;
};

// Rows [start, start + size) / columns of a 2-D array.
Array Rows(const Array& a, int64_t start, int64_t size);
Array Cols(const Array& a, int64_t start, int64_t size);
// The same rows as a view into a's memory (no copy; a copy when the rows do not start on a
// 64-byte boundary): valid while a lives and is not moved.
Array RowsView(const Array& a, int64_t start, int64_t size);
// Concatenation of two 2-D arrays along dim (0 or 1).
Array Concat(const Array& a, const Array& b, int dim);
// acc += x (f32, same dims).
void AddInto(Array& acc, const Array& x);
// The systolic chunk `k` of dim `dim` (0 or 1) of a 2-D array: the elements whose index j has
// (j / block) % chunks == k, in order (the seed's reshape(..., P, K, B)[:, :, k]).
Array Chunk(const Array& a, int dim, int64_t k, int64_t chunks, int64_t block);
// The inverse: writes `piece` into chunk k of dim `dim` of acc.
void PutChunk(Array& acc, const Array& piece, int dim, int64_t k, int64_t chunks, int64_t block);
// Non-negative i mod n.
inline int64_t Mod(int64_t i, int64_t n) { return ((i % n) + n) % n; }

}  // namespace xs::cmm

#endif  // XSHARD_CMM_DEVICE_OPS_H_
