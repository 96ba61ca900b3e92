// Doorbell parking through the Linux futex syscall (std::atomic::wait has no timeout, and every
// wait here needs one so that a missing participant turns into an error instead of a hang).
#include "xshard/comm/wait.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <ctime>

namespace xs {

WaitPolicy DefaultWaitPolicy(int64_t threads, int64_t cores) {
  WaitPolicy policy;
  policy.spin_checks = threads <= cores ? 2000 : 0;
  policy.yield_for = std::chrono::microseconds(50);
  return policy;
}

int64_t AvailableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

void YieldThread() { sched_yield(); }

namespace {
std::atomic<int64_t> timed_out_parks{0};
}  // namespace

int64_t Doorbell::TimedOutParks() { return timed_out_parks.load(std::memory_order_relaxed); }

void Doorbell::Ring() {
  if (sleeping_.load(std::memory_order_seq_cst) == 0) return;
  word_.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

void Doorbell::Park(uint32_t seen, SteadyClock::time_point deadline) {
  // Sleep at most a second at a time so that far-away deadlines cannot overflow the timespec.
  const auto now = SteadyClock::now();
  const auto left = std::min<SteadyClock::duration>(deadline - now, std::chrono::seconds(1));
  if (left <= SteadyClock::duration::zero()) return;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1000000000);
  ts.tv_nsec = static_cast<long>(ns % 1000000000);
  if (syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAIT_PRIVATE, seen, &ts,
              nullptr, 0) != 0 &&
      errno == ETIMEDOUT && deadline != SteadyClock::time_point::max()) {
    timed_out_parks.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace xs
