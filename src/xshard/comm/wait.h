// Waiting without thrashing when devices outnumber cores: a Doorbell a thread sleeps on (a futex
// word) and WaitUntil, which checks briefly, yields for a bounded time, then sleeps until a
// deadline.
// Measured on the 2-core target with 8 device threads: a condition-variable wake-up costs ~30 us,
// pure spinning ~16 ms per barrier (spinners eat the time slices the last arriver needs),
// sched_yield ~5 us, a futex ~7 us. So the hot path yields for a few tens of microseconds (long
// enough to catch a peer that is about to arrive) and then parks on the futex; it never spins
// without yielding when threads outnumber cores.
#ifndef XSHARD_COMM_WAIT_H_
#define XSHARD_COMM_WAIT_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace xs {

using SteadyClock = std::chrono::steady_clock;

// How a waiting thread spends its time before it sleeps.
struct WaitPolicy {
  // Busy checks (with a pause instruction) before the first yield; 0 when threads outnumber cores.
  int spin_checks = 0;
  // How long to keep yielding before parking on the futex.
  std::chrono::microseconds yield_for{50};
};

// The policy for `threads` busy threads on `cores` cores: spinning only when each thread has its
// own core.
WaitPolicy DefaultWaitPolicy(int64_t threads, int64_t cores);

// The number of cores this process may run on (sched_getaffinity; at least 1).
int64_t AvailableCores();

// A futex word owned by one waiting thread. Others call Ring() after publishing progress the owner
// may be waiting for; Ring() costs one load unless the owner sleeps.
class Doorbell {
 public:
  Doorbell() = default;
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  // Wakes the owner if it is parked. The progress must be published with a seq_cst store before
  // the call.
  void Ring();

  // Returns true as soon as done() is true, false when `deadline` passes first. done() must read
  // the progress it waits for with seq_cst loads (the publisher stores it with seq_cst before
  // Ring()), which is what makes the sleep / wake hand-off safe; it is called many times.
  template <typename Done>
  bool WaitUntil(Done done, SteadyClock::time_point deadline, const WaitPolicy& policy);

  // Process-wide count of parks of waits with a deadline (not time_point::max(), which idle
  // threads use) that ended because their time ran out (at most 1 s each) rather than by a Ring().
  // Waits for peers that are merely busy end by a ring, so in a run whose steps are short a
  // growing count means a waiter was never rung: tests assert on it.
  static int64_t TimedOutParks();

 private:
  // Parks until rung or `deadline`, unless the word no longer equals `seen`.
  void Park(uint32_t seen, SteadyClock::time_point deadline);

  std::atomic<uint32_t> word_{0};
  std::atomic<uint32_t> sleeping_{0};
};

// Pause instruction for short busy waits.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void YieldThread();

template <typename Done>
bool Doorbell::WaitUntil(Done done, SteadyClock::time_point deadline, const WaitPolicy& policy) {
  for (int i = 0; i < policy.spin_checks; ++i) {
    if (done()) return true;
    CpuRelax();
  }
  if (done()) return true;
  const auto yield_until = SteadyClock::now() + policy.yield_for;
  for (;;) {
    if (done()) return true;
    const auto now = SteadyClock::now();
    if (now >= deadline) return false;
    if (now < yield_until) {
      YieldThread();
      continue;
    }
    // Dekker-style hand-off with Ring(): either the ringer sees sleeping_ == 1 and bumps the word,
    // or this re-check of done() sees the progress (both sides use seq_cst operations).
    const uint32_t seen = word_.load(std::memory_order_seq_cst);
    sleeping_.store(1, std::memory_order_seq_cst);
    if (done()) {
      sleeping_.store(0, std::memory_order_relaxed);
      return true;
    }
    Park(seen, deadline);
    sleeping_.store(0, std::memory_order_relaxed);
  }
}

}  // namespace xs

#endif  // XSHARD_COMM_WAIT_H_
