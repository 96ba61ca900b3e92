// RunWatch: for the length of one command, Ctrl-C (SIGINT) and SIGTERM stop the run's devices
// instead of killing the process, --timeout SECONDS stops them when it passes, and a run still
// going after 10 s prints where every device is to stderr every 10 s ($XSHARD_PROGRESS_SECONDS
// changes the period).
#ifndef XSHARD_TOOLS_RUN_WATCH_H_
#define XSHARD_TOOLS_RUN_WATCH_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/exec/run_monitor.h"

namespace xs::tools {

class RunWatch {
 public:
  // Watches `monitor` from a thread of its own. `timeout_seconds`: stop after that long (nullopt:
  // never); `progress_every`: the progress line's period (0: none). `command` names the command
  // in the lines ("run"). Installs the SIGINT / SIGTERM handlers (a second signal kills as usual).
  RunWatch(RunMonitor& monitor, std::string command, std::optional<double> timeout_seconds,
           std::chrono::milliseconds progress_every = std::chrono::seconds(10));
  // Stops the thread and restores the signal handlers.
  ~RunWatch();
  RunWatch(const RunWatch&) = delete;
  RunWatch& operator=(const RunWatch&) = delete;

  // Device ids for the messages (rank r is device ids[r]); default: ranks.
  void set_device_ids(std::vector<int64_t> ids);

  // The command's result: when the monitor was stopped, the stop's own one-line error (Cancelled
  // for a signal: exit 130; DeadlineExceeded for --timeout: exit 1) naming where each device
  // was, instead of whatever the devices returned on the way out; else `result` unchanged.
  Status Finish(const Status& result);

 private:
  void Loop();

  RunMonitor& monitor_;
  const std::string command_;
  const std::optional<double> timeout_seconds_;
  const std::chrono::milliseconds progress_every_;
  const std::chrono::steady_clock::time_point start_;
  std::vector<int64_t> device_ids_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string where_at_stop_;  // Where() when the stop was requested
  std::thread thread_;
};

}  // namespace xs::tools

#endif  // XSHARD_TOOLS_RUN_WATCH_H_
