// RunWatch: signal handlers that only set a flag, and a thread that turns the flag, the
// deadline and the progress period into RunMonitor calls and stderr lines.
#include "xshard/tools/run_watch.h"

#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "xshard/base/strings.h"
#include "xshard/mpi/mpi_process.h"

namespace xs::tools {
namespace {

std::atomic<int> g_signal{0};
std::atomic<bool> g_signaled{false};
std::atomic<int> g_scopes{0};
std::mutex g_scope_mu;

extern "C" void OnStopSignal(int sig) {
  if (g_scopes.load(std::memory_order_relaxed) == 0) {
    // No command listens (the last scope is ending): act as if no handler were installed.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  int none = 0;
  g_signal.compare_exchange_strong(none, sig, std::memory_order_relaxed);
  g_signaled.store(true, std::memory_order_relaxed);
}

struct sigaction g_old_int, g_old_term;

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s < 10 ? "%.1f" : "%.0f", s);
  return buf;
}

// $XSHARD_PROGRESS_SECONDS (a number > 0) replaces the default period, so tests need not wait
// 10 s; commands without progress lines (period 0) keep none.
std::chrono::milliseconds ProgressPeriod(std::chrono::milliseconds period) {
  const char* env = std::getenv("XSHARD_PROGRESS_SECONDS");
  double seconds = 0;
  if (period.count() == 0 || env == nullptr || !ParseDouble(env, &seconds) || !(seconds > 0) || seconds > 1e6) {
    return period;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

StopSignalScope::StopSignalScope() {
  std::lock_guard<std::mutex> lock(g_scope_mu);
  if (g_scopes.load() == 0) {
    g_signal.store(0);
    g_signaled.store(false);
    g_scopes.store(1);
    struct sigaction sa {};
    sa.sa_handler = &OnStopSignal;
    sa.sa_flags = SA_RESTART;  // reads and writes in progress go on; the flag is polled
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &g_old_int);
    sigaction(SIGTERM, &sa, &g_old_term);
  } else {
    g_scopes.fetch_add(1);
  }
}

StopSignalScope::~StopSignalScope() {
  std::lock_guard<std::mutex> lock(g_scope_mu);
  if (g_scopes.load() == 1) {
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGTERM, &g_old_term, nullptr);
  }
  g_scopes.fetch_sub(1);
}

int ReceivedStopSignal() { return g_signal.load(std::memory_order_relaxed); }

const std::atomic<bool>* StopSignalFlag() { return &g_signaled; }

std::string StopSignalName(int sig) { return sig == SIGINT ? "SIGINT (Ctrl-C)" : "SIGTERM"; }

int StopExitCode() {
  const int sig = ReceivedStopSignal();
  return 128 + (sig != 0 ? sig : SIGINT);
}

RunWatch::RunWatch(RunMonitor& monitor, std::string command, std::optional<double> timeout_seconds,
                   std::chrono::milliseconds progress_every)
    : monitor_(monitor),
      command_(std::move(command)),
      timeout_seconds_(timeout_seconds),
      progress_every_(ProgressPeriod(progress_every)),
      start_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] { Loop(); });
}

RunWatch::~RunWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void RunWatch::set_device_ids(std::vector<int64_t> ids) {
  std::lock_guard<std::mutex> lock(mu_);
  device_ids_ = std::move(ids);
}

void RunWatch::Loop() {
  using namespace std::chrono;
  auto next_progress = start_ + progress_every_;
  std::unique_lock<std::mutex> lock(mu_);
  while (!done_) {
    cv_.wait_for(lock, milliseconds(50));
    if (done_) break;
    const auto now = steady_clock::now();
    const double elapsed = duration<double>(now - start_).count();
    if (monitor_.stopped()) continue;
    // Under mpirun, a peer process that failed (its collective timed out waiting for a device of
    // this process that never came) says so; this process's devices, which may never reach
    // another MPI call (one stuck in a loop), stop with its error.
    if (Status peer = mpi::PollRemoteAbort(); !peer.ok()) {
      const std::string where = monitor_.Where(device_ids_);
      if (monitor_.Stop(peer)) {
        where_at_stop_ = where;
        stopped_by_peer_ = true;
      }
      continue;
    }
    Status stop;
    if (const int sig = ReceivedStopSignal(); sig != 0) {
      stop = Cancelled("interrupted by ", StopSignalName(sig), " after ", Seconds(elapsed), " s");
    } else if (timeout_seconds_ && elapsed >= *timeout_seconds_) {
      stop = DeadlineExceeded("--timeout ", Seconds(*timeout_seconds_), " s passed before the run finished");
    }
    if (!stop.ok()) {
      const std::string where = monitor_.Where(device_ids_);
      if (monitor_.Stop(stop)) {
        where_at_stop_ = where;
        stopped_here_ = true;
      }
      continue;
    }
    if (progress_every_.count() > 0 && now >= next_progress) {
      next_progress += progress_every_;
      std::cerr << "xshard " << command_ << ": still running after " << Seconds(elapsed)
                << " s: " << monitor_.Where(device_ids_) << std::endl;
    }
  }
}

Status RunWatch::Finish(const Status& result) {
  {
    // A stop that came from a device's own failure (the executor stops the others) is that
    // failure, which `result` already says.
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_by_peer_ && !result.ok()) {
      // The peer's error (naming the op and the devices), then where this process's devices were.
      const Status peer = monitor_.stop_reason();
      return Status(peer.code(), StrCat(peer.message(), "; stopped here: ", where_at_stop_));
    }
    if (!stopped_here_) return result;
  }
  const Status reason = monitor_.stop_reason();
  std::string where;
  {
    std::lock_guard<std::mutex> lock(mu_);
    where = where_at_stop_.empty() ? monitor_.Where(device_ids_) : where_at_stop_;
  }
  return Status(reason.code(), StrCat(reason.message(), "; stopped: ", where));
}

}  // namespace xs::tools
