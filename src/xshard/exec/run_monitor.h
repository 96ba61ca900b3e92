// RunMonitor: stops a run from another thread (Ctrl-C, a timeout) and tells where each device
// is. Devices publish their running instruction and innermost while loop iteration with relaxed
// atomic stores (one per step); a watcher reads them for progress lines and the stop message.
#ifndef XSHARD_EXEC_RUN_MONITOR_H_
#define XSHARD_EXEC_RUN_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/ir/instruction.h"

namespace xs {

// What one device is doing, written only by its own thread.
struct DeviceProgress {
  std::atomic<const Instruction*> instruction{nullptr};  // the step running now
  std::atomic<const Instruction*> loop{nullptr};         // the innermost while loop
  std::atomic<int64_t> iteration{0};                     // of `loop`, from 0
  std::atomic<bool> finished{false};
  std::atomic<bool> elsewhere{false};  // runs in another MPI process (nothing to report here)
};

// A while loop's progress on its device for RunMonitor::Where while the loop runs: At(i) marks
// iteration i of `loop` as the innermost; the destructor restores the outer loop and its
// iteration. A null `progress` (no monitor) makes it do nothing.
class ScopedLoopProgress {
 public:
  ScopedLoopProgress(DeviceProgress* progress, const Instruction* loop)
      : p_(progress), loop_(loop),
        outer_loop_(p_ ? p_->loop.load(std::memory_order_relaxed) : nullptr),
        outer_iteration_(p_ ? p_->iteration.load(std::memory_order_relaxed) : 0) {}
  ScopedLoopProgress(const ScopedLoopProgress&) = delete;
  ScopedLoopProgress& operator=(const ScopedLoopProgress&) = delete;
  ~ScopedLoopProgress() {
    if (p_ == nullptr) return;
    p_->loop.store(outer_loop_, std::memory_order_relaxed);
    p_->iteration.store(outer_iteration_, std::memory_order_relaxed);
  }
  void At(int64_t iteration) {
    if (p_ == nullptr) return;
    p_->loop.store(loop_, std::memory_order_relaxed);
    p_->iteration.store(iteration, std::memory_order_relaxed);
  }

 private:
  DeviceProgress* p_;
  const Instruction* loop_;
  const Instruction* outer_loop_;
  int64_t outer_iteration_;
};

class RunMonitor {
 public:
  // Slots for `num_devices` devices (ranks 0..n-1; 1 for a one-device run).
  explicit RunMonitor(int64_t num_devices);
  RunMonitor(const RunMonitor&) = delete;
  RunMonitor& operator=(const RunMonitor&) = delete;

  // Asks every device to stop: each returns `reason` at its next step, and devices waiting at a
  // collective are woken through the waker. The first reason wins: returns whether this call's
  // did (false when the run was stopped already). Thread-safe (not async-signal-safe: call it
  // from a thread, not a signal handler). The SPMD executor stops the run this way when one
  // device fails, so that a device that never reaches a collective its peers gave up on stops
  // too.
  bool Stop(const Status& reason);
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }
  // The flag stopped() reads, for kernels::ScopedInterrupt (long kernels poll it mid-way).
  const std::atomic<bool>* stop_flag() const { return &stopped_; }
  // The first Stop's reason (OK while not stopped).
  Status stop_reason() const;

  // How a stop reaches devices blocked in a collective (the SPMD executor passes its
  // communicator's Abort). Called at once when the run is already stopped. Thread-safe.
  void SetWaker(std::function<void(const Status&)> waker);
  void ClearWaker();

  int64_t num_devices() const { return static_cast<int64_t>(progress_.size()); }
  DeviceProgress& progress(int64_t rank) { return *progress_[rank]; }
  // Clears every device's progress and any stop for a new run (not while one runs). A watcher
  // that stopped the previous run (a signal, a timeout) stops the new one again when it looks.
  void Reset();

  // Where each device is, one clause per device joined by "; " (devices doing the same thing are
  // grouped): "device 0 at 'add.3' in while loop 'w' iteration 41; devices 1-3 wait at
  // all-reduce 'ar.1'". Devices in `device_ids` order when given, else ranks.
  std::string Where(const std::vector<int64_t>& device_ids = {}) const;

 private:
  std::vector<std::unique_ptr<DeviceProgress>> progress_;
  std::atomic<bool> stopped_{false};
  mutable std::mutex mu_;
  Status reason_;
  std::function<void(const Status&)> waker_;
};

}  // namespace xs

#endif  // XSHARD_EXEC_RUN_MONITOR_H_
