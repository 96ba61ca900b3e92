// Persistent device threads and their job hand-off.
#include "xshard/runtime/device_threads.h"

#include <system_error>
#include <vector>

#include "xshard/base/status.h"

namespace xs {

DeviceThreads::DeviceThreads(int64_t num_threads, WaitPolicy policy)
    : num_threads_(num_threads), policy_(policy),
      workers_(std::make_unique<Worker[]>(num_threads)) {
  for (int64_t i = 0; i < num_threads_; ++i) {
    try {
      workers_[i].thread = std::thread([this, i] { Loop(workers_[i]); });
    } catch (const std::system_error&) {
      // Stop and join the threads already started (a joinable std::thread destroyed by the
      // unwinding would terminate the process), then let the caller report the failure.
      stop_.store(true, std::memory_order_seq_cst);
      for (int64_t k = 0; k < i; ++k) workers_[k].bell.Ring();
      for (int64_t k = 0; k < i; ++k) workers_[k].thread.join();
      throw;
    }
  }
}

DeviceThreads::~DeviceThreads() {
  std::lock_guard<std::mutex> lock(run_mu_);
  stop_.store(true, std::memory_order_seq_cst);
  for (int64_t i = 0; i < num_threads_; ++i) workers_[i].bell.Ring();
  for (int64_t i = 0; i < num_threads_; ++i) workers_[i].thread.join();
}

void DeviceThreads::Loop(Worker& w) {
  uint64_t seen = 0;
  for (;;) {
    w.bell.WaitUntil(
        [&] {
          return w.posted.load(std::memory_order_seq_cst) > seen ||
                 stop_.load(std::memory_order_seq_cst);
        },
        SteadyClock::time_point::max(), policy_);
    if (w.posted.load(std::memory_order_seq_cst) == seen) return;  // stop requested, no job
    ++seen;
    (*w.task)(w.index);
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1) caller_bell_.Ring();
  }
}

void DeviceThreads::Run(std::span<const int64_t> threads,
                        const std::function<void(int64_t)>& task) {
  if (threads.empty()) return;
  std::lock_guard<std::mutex> lock(run_mu_);
  std::vector<bool> used(num_threads_, false);
  for (int64_t t : threads) {
    XS_CHECK(t >= 0 && t < num_threads_ && !used[t], "DeviceThreads::Run: bad thread id ", t);
    used[t] = true;
  }
  pending_.store(static_cast<int64_t>(threads.size()), std::memory_order_seq_cst);
  for (size_t i = 0; i < threads.size(); ++i) {
    Worker& w = workers_[threads[i]];
    w.task = &task;
    w.index = static_cast<int64_t>(i);
    w.posted.fetch_add(1, std::memory_order_seq_cst);
    w.bell.Ring();
  }
  caller_bell_.WaitUntil([&] { return pending_.load(std::memory_order_seq_cst) == 0; },
                         SteadyClock::time_point::max(), policy_);
}

}  // namespace xs
