// RunWatch: for the length of one command, Ctrl-C (SIGINT) and SIGTERM stop the run's devices
// instead of killing the process, --timeout SECONDS stops them when it passes, under mpirun a
// peer process's failure stops them (polled every 50 ms), and a run still
// going after 10 s prints where every device is to stderr every 10 s ($XSHARD_PROGRESS_SECONDS
// changes the period). StopSignalScope: the signal handling alone, for saving files.
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

// While one is alive, SIGINT and SIGTERM only record the signal (every one of them, a second
// SIGTERM such as `timeout` sends included) instead of ending the process; the command polls
// StopSignalFlag() and stops itself. Scopes nest; the outermost one clears the record when it
// begins and puts the previous handlers back when it ends. Outside every scope the signals act
// as usual (a handler still installed then re-raises the signal with its default action).
class StopSignalScope {
 public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
};
// The first SIGINT / SIGTERM received since the outermost scope began; 0 when none was.
int ReceivedStopSignal();
// Becomes true with the first signal (writers check it between blocks).
const std::atomic<bool>* StopSignalFlag();
// "SIGINT (Ctrl-C)" or "SIGTERM".
std::string StopSignalName(int sig);
// The exit code of a command that a signal stopped, as a shell reports a process killed by it:
// 128 + the signal (130 for SIGINT, 143 for SIGTERM); 130 when no signal was received.
int StopExitCode();

class RunWatch {
 public:
  // Watches `monitor` from a thread of its own. `timeout_seconds`: stop after that long (nullopt:
  // never); `progress_every`: the progress line's period (0: none). `command` names the command
  // in the lines ("run"). Holds a StopSignalScope: signals stop the run until it has stopped.
  RunWatch(RunMonitor& monitor, std::string command, std::optional<double> timeout_seconds,
           std::chrono::milliseconds progress_every = std::chrono::seconds(10));
  // Stops the thread and restores the signal handlers.
  ~RunWatch();
  RunWatch(const RunWatch&) = delete;
  RunWatch& operator=(const RunWatch&) = delete;

  // Whether this watch stopped the run (a signal, --timeout), as opposed to a failing device.
  bool stopped() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stopped_here_;
  }

  // Device ids for the messages (rank r is device ids[r]); default: ranks.
  void set_device_ids(std::vector<int64_t> ids);

  // The command's result: when this watch stopped the run, the stop's own one-line error
  // (Cancelled for a signal: exit 130 / 143; DeadlineExceeded for --timeout: exit 1) naming where
  // each device was, instead of whatever the devices returned on the way out; when a peer
  // process's failure stopped it (under mpirun) and `result` failed, that failure ("process P:
  // ...", naming its op and devices) and where this process's devices were; else `result`
  // unchanged (a run a failing device stopped ends with that device's error).
  Status Finish(const Status& result);

 private:
  void Loop();

  RunMonitor& monitor_;
  const std::string command_;
  const std::optional<double> timeout_seconds_;
  const std::chrono::milliseconds progress_every_;
  const std::chrono::steady_clock::time_point start_;
  std::vector<int64_t> device_ids_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string where_at_stop_;  // Where() when the stop was requested
  bool stopped_here_ = false;  // the stop was this watch's (a signal, --timeout)
  bool stopped_by_peer_ = false;  // a peer process's abort stopped the run (mpi::PollRemoteAbort)
  StopSignalScope signals_;
  std::thread thread_;
};

}  // namespace xs::tools

#endif  // XSHARD_TOOLS_RUN_WATCH_H_
