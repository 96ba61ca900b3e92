// The process's one thread pool for intra-op parallelism: ParallelFor(n, threads, fn) runs fn(i)
// for every i in [0, n) on the caller plus up to threads - 1 pooled workers. Workers are created
// lazily, park on a condition variable when idle (never spin, so pools never thrash when devices
// outnumber cores), and nested calls cannot deadlock (the caller always works on its own loop).
#ifndef XSHARD_KERNELS_PARALLEL_H_
#define XSHARD_KERNELS_PARALLEL_H_

#include <atomic>
#include <cstdint>
#include <functional>

#include "xshard/base/status.h"

namespace xs::kernels {

// The process's thread budget: the cores it may run on (sched_getaffinity), or
// XSHARD_NUM_THREADS when that is set to a whole number from 1 to 4096. Every executor splits this
// among the devices that compute at once (devices x threads each <= the budget).
int CoreCount();
// OK when XSHARD_NUM_THREADS is unset or a whole number from 1 to 4096; else an error naming the
// value and the fix (CoreCount ignores such a value).
Status CheckThreadBudgetEnv();

// The threads the device computing on this thread may use inside one op, and whether other
// devices compute at the same time. The SPMD executor sets it on each device's thread for a run;
// kernels that call a library with its own threads read it: with `concurrent` set, OpenBLAS runs
// single-threaded (its pthread build serves every caller from one shared thread server, so
// concurrent multi-threaded callers queue behind each other) and a big GEMM is split into
// `threads` blocks on this pool instead; oneDNN gets `threads` OpenMP threads of the device's
// own team. Pool workers running a loop see the caller's share.
struct DeviceThreadShare {
  int threads = 0;  // 0: none set (the process-wide BLAS thread count applies)
  bool concurrent = false;
};
class ScopedDeviceThreadShare {
 public:
  explicit ScopedDeviceThreadShare(DeviceThreadShare share);
  ~ScopedDeviceThreadShare();
  ScopedDeviceThreadShare(const ScopedDeviceThreadShare&) = delete;
  ScopedDeviceThreadShare& operator=(const ScopedDeviceThreadShare&) = delete;

 private:
  DeviceThreadShare saved_;
};
// The calling thread's share (threads 0 when none is set).
DeviceThreadShare CurrentDeviceThreadShare();

// Calls fn(i) exactly once for each i in [0, n), on up to `threads` threads (the caller counts as
// one; threads <= 1 or n <= 1 runs inline in order). Returns when every call has finished. An
// exception thrown by fn stops further calls from starting and is rethrown here (the first one).
void ParallelFor(int64_t n, int threads, const std::function<void(int64_t)>& fn);

// Same with a Status: the first non-OK status stops further calls from starting and is returned.
Status ParallelForStatus(int64_t n, int threads, const std::function<Status(int64_t)>& fn);

// Stopping long kernels mid-way. The executor points each device thread at its run's stop flag
// with a ScopedInterrupt; once the flag is set, ParallelFor starts no more calls (on the pool's
// workers too) and serial kernel loops see Interrupted() between blocks of work and return early.
// An interrupted kernel's output is unfinished: the caller sees the stop and discards it.
class ScopedInterrupt {
 public:
  // Installs `flag` (not owned; may be null) as this thread's stop flag until destruction.
  explicit ScopedInterrupt(const std::atomic<bool>* flag);
  ~ScopedInterrupt();
  ScopedInterrupt(const ScopedInterrupt&) = delete;
  ScopedInterrupt& operator=(const ScopedInterrupt&) = delete;

 private:
  const std::atomic<bool>* saved_;
};
// True once the calling thread's stop flag is set (false without one). Cheap: one relaxed load.
bool Interrupted();

// Workers the pool has started so far (for tests; grows to the helpers that concurrent callers
// want at once: the sum of their `threads` - 1).
int PoolWorkerCount();

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_PARALLEL_H_
