// DeviceThreads: one persistent thread per device for the life of a Client, so running a program
// on N devices costs N doorbell rings, not N thread creations. Idle threads yield briefly and then
// sleep on a futex (see wait.h), so they cost nothing between runs.
#ifndef XSHARD_RUNTIME_DEVICE_THREADS_H_
#define XSHARD_RUNTIME_DEVICE_THREADS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "xshard/comm/wait.h"

namespace xs {

class DeviceThreads {
 public:
  DeviceThreads(int64_t num_threads, WaitPolicy policy);
  DeviceThreads(const DeviceThreads&) = delete;
  DeviceThreads& operator=(const DeviceThreads&) = delete;
  // Joins every thread (after the run in progress, if any).
  ~DeviceThreads();

  int64_t size() const { return num_threads_; }

  // Runs task(i) on thread threads[i] for every i at once and returns when all have returned.
  // Thread ids must be distinct and < size() (XS_CHECK). Calls from several host threads are
  // served one after another.
  void Run(std::span<const int64_t> threads, const std::function<void(int64_t)>& task);

 private:
  struct alignas(64) Worker {
    std::atomic<uint64_t> posted{0};
    const std::function<void(int64_t)>* task = nullptr;
    int64_t index = 0;
    Doorbell bell;
    std::thread thread;
  };
  void Loop(Worker& w);

  const int64_t num_threads_;
  const WaitPolicy policy_;
  std::unique_ptr<Worker[]> workers_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> pending_{0};
  Doorbell caller_bell_;
  std::mutex run_mu_;
};

}  // namespace xs

#endif  // XSHARD_RUNTIME_DEVICE_THREADS_H_
