// The process thread pool behind ParallelFor: a queue of loops, workers parked on a condition
// variable, indices claimed with one atomic counter per loop.
#include "xshard/kernels/parallel.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace xs::kernels {
namespace {

thread_local const std::atomic<bool>* t_interrupt = nullptr;
thread_local DeviceThreadShare t_share;

constexpr int kMaxWorkers = 1024;

bool IsSet(const std::atomic<bool>* flag) { return flag != nullptr && flag->load(std::memory_order_relaxed); }

struct Loop {
  const std::function<void(int64_t)>* fn = nullptr;
  int64_t n = 0;
  const std::atomic<bool>* interrupt = nullptr;  // the caller's stop flag, seen by every worker
  DeviceThreadShare share;                         // the caller's, seen by every worker
  std::atomic<int64_t> next{0};
  int wanted = 0;  // workers still to join (guarded by the pool mutex)
  int active = 0;  // workers inside Work (guarded by the pool mutex)
  std::mutex error_mu;
  std::exception_ptr error;
};

void Work(Loop& loop) {
  const std::atomic<bool>* saved = t_interrupt;
  const DeviceThreadShare saved_share = t_share;
  t_interrupt = loop.interrupt;  // kernels nested in fn poll the caller's flag
  t_share = loop.share;
  for (;;) {
    const int64_t i = loop.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= loop.n || IsSet(loop.interrupt)) break;
    try {
      (*loop.fn)(i);
    } catch (...) {
      std::lock_guard<std::mutex> l(loop.error_mu);
      if (!loop.error) loop.error = std::current_exception();
      loop.next.store(loop.n, std::memory_order_relaxed);  // start no more calls
    }
  }
  t_interrupt = saved;
  t_share = saved_share;
}

class Pool {
 public:
  // Runs `loop` with up to `helpers` workers besides the calling thread. Concurrent callers (the
  // devices of one run) each get their own helpers: the pool grows until its idle workers cover
  // every queued loop's wanted helpers.
  void Run(Loop& loop, int helpers) {
    {
      std::unique_lock<std::mutex> l(mu_);
      int wanted = helpers;
      for (const Loop* q : queue_) wanted += q->wanted;
      while (static_cast<int>(workers_.size()) - busy_ < wanted &&
             static_cast<int>(workers_.size()) < kMaxWorkers) {
        try {
          workers_.emplace_back([this] { WorkerMain(); });
        } catch (const std::system_error&) {
          // No thread to be had (ulimit -v / -u, a cgroup's pids limit): run with the workers
          // there are; the calling thread alone finishes the loop if there are none.
          helpers = std::min(helpers, static_cast<int>(workers_.size()));
          break;
        }
      }
      loop.wanted = helpers;
      queue_.push_back(&loop);
    }
    for (int i = 0; i < helpers; ++i) work_cv_.notify_one();
    Work(loop);
    std::unique_lock<std::mutex> l(mu_);
    auto it = std::find(queue_.begin(), queue_.end(), &loop);
    if (it != queue_.end()) queue_.erase(it);  // every index is claimed: no one else may join
    done_cv_.wait(l, [&] { return loop.active == 0; });
  }

  int worker_count() {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(workers_.size());
  }

 private:
  void WorkerMain() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      work_cv_.wait(l, [&] { return !queue_.empty(); });
      Loop* loop = queue_.front();
      ++loop->active;
      ++busy_;
      if (--loop->wanted <= 0) queue_.pop_front();
      l.unlock();
      Work(*loop);
      l.lock();
      --busy_;
      if (--loop->active == 0) done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Loop*> queue_;
  int busy_ = 0;  // workers inside a loop
  std::vector<std::thread> workers_;  // never joined: the pool lives as long as the process
};

Pool& ThePool() {
  static Pool* pool = new Pool();  // leaked on purpose: workers may be parked at exit
  return *pool;
}

constexpr int kMaxThreads = 256;

}  // namespace

namespace {

constexpr int64_t kMaxBudget = 4096;

// XSHARD_NUM_THREADS: 0 when unset, -1 when not a whole number from 1 to kMaxBudget.
int64_t BudgetFromEnv(const char** text) {
  const char* v = std::getenv("XSHARD_NUM_THREADS");
  *text = v;
  if (v == nullptr || *v == 0) return 0;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return *end == 0 && n >= 1 && n <= kMaxBudget ? n : -1;
}

}  // namespace

int CoreCount() {
  static const int cores = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    int n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    if (sched_getaffinity(0, sizeof(set), &set) == 0) n = std::max(1, CPU_COUNT(&set));
    const char* text = nullptr;
    const int64_t budget = BudgetFromEnv(&text);
    return budget > 0 ? static_cast<int>(budget) : n;
  }();
  return cores;
}

Status CheckThreadBudgetEnv() {
  const char* text = nullptr;
  if (BudgetFromEnv(&text) >= 0) return OkStatus();
  return InvalidArgument("XSHARD_NUM_THREADS='", text, "' is not a thread count: set a whole number from 1 to ",
                         kMaxBudget, ", or unset it to use every core");
}

ScopedDeviceThreadShare::ScopedDeviceThreadShare(DeviceThreadShare share) : saved_(t_share) { t_share = share; }

ScopedDeviceThreadShare::~ScopedDeviceThreadShare() { t_share = saved_; }

DeviceThreadShare CurrentDeviceThreadShare() { return t_share; }

void ParallelFor(int64_t n, int threads, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  threads = static_cast<int>(std::min<int64_t>({threads, n, kMaxThreads}));
  if (threads <= 1) {
    for (int64_t i = 0; i < n && !IsSet(t_interrupt); ++i) fn(i);
    return;
  }
  Loop loop;
  loop.fn = &fn;
  loop.n = n;
  loop.interrupt = t_interrupt;
  loop.share = t_share;
  ThePool().Run(loop, threads - 1);
  if (loop.error) std::rethrow_exception(loop.error);
}

Status ParallelForStatus(int64_t n, int threads, const std::function<Status(int64_t)>& fn) {
  std::mutex mu;
  Status first = OkStatus();
  std::atomic<bool> failed{false};
  ParallelFor(n, threads, [&](int64_t i) {
    if (failed.load(std::memory_order_relaxed)) return;
    Status s = fn(i);
    if (!s.ok()) {
      std::lock_guard<std::mutex> l(mu);
      if (first.ok()) first = std::move(s);
      failed.store(true, std::memory_order_relaxed);
    }
  });
  return first;
}

ScopedInterrupt::ScopedInterrupt(const std::atomic<bool>* flag) : saved_(t_interrupt) { t_interrupt = flag; }

ScopedInterrupt::~ScopedInterrupt() { t_interrupt = saved_; }

bool Interrupted() { return IsSet(t_interrupt); }

int PoolWorkerCount() { return ThePool().worker_count(); }

}  // namespace xs::kernels
