// RunMonitor: the stop flag, the waker of devices blocked in collectives, and the "where is each
// device" text.
#include "xshard/exec/run_monitor.h"

#include "xshard/base/strings.h"
#include "xshard/ir/opcode.h"

namespace xs {

RunMonitor::RunMonitor(int64_t num_devices) {
  for (int64_t d = 0; d < std::max<int64_t>(1, num_devices); ++d) {
    progress_.push_back(std::make_unique<DeviceProgress>());
  }
}

bool RunMonitor::Stop(const Status& reason) {
  std::function<void(const Status&)> waker;
  Status stop;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_.load(std::memory_order_relaxed)) return false;
    reason_ = reason.ok() ? Cancelled("stopped") : reason;
    stop = reason_;
    stopped_.store(true, std::memory_order_seq_cst);
    waker = waker_;
  }
  if (waker) waker(stop);
  return true;
}

Status RunMonitor::stop_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

void RunMonitor::SetWaker(std::function<void(const Status&)> waker) {
  std::unique_lock<std::mutex> lock(mu_);
  waker_ = std::move(waker);
  if (stopped_.load(std::memory_order_relaxed) && waker_) {
    std::function<void(const Status&)> w = waker_;
    const Status reason = reason_;
    lock.unlock();
    w(reason);
  }
}

void RunMonitor::ClearWaker() {
  std::lock_guard<std::mutex> lock(mu_);
  waker_ = nullptr;
}

void RunMonitor::Reset() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_.store(false, std::memory_order_seq_cst);
    reason_ = OkStatus();
  }
  for (auto& p : progress_) {
    p->instruction.store(nullptr, std::memory_order_relaxed);
    p->loop.store(nullptr, std::memory_order_relaxed);
    p->iteration.store(0, std::memory_order_relaxed);
    p->finished.store(false, std::memory_order_relaxed);
    p->elsewhere.store(false, std::memory_order_relaxed);
  }
}

namespace {

std::string Describe(const DeviceProgress& p) {
  if (p.finished.load(std::memory_order_relaxed)) return "finished";
  if (p.elsewhere.load(std::memory_order_relaxed)) return "in another process";
  const Instruction* inst = p.instruction.load(std::memory_order_relaxed);
  if (inst == nullptr) return "not started";
  std::string out;
  if (IsCollective(inst->opcode())) {
    out = StrCat("waits at ", OpcodeName(inst->opcode()), " '", inst->name(), "'");
  } else {
    out = StrCat("at '", inst->name(), "' (", OpcodeName(inst->opcode()), ")");
  }
  if (const Instruction* loop = p.loop.load(std::memory_order_relaxed)) {
    StrAppend(&out, " in while loop '", loop->name(), "' iteration ", p.iteration.load(std::memory_order_relaxed));
  }
  return out;
}

}  // namespace

std::string RunMonitor::Where(const std::vector<int64_t>& device_ids) const {
  const int64_t n = num_devices();
  auto id = [&](int64_t r) { return r < static_cast<int64_t>(device_ids.size()) ? device_ids[r] : r; };
  if (n == 1) return Describe(*progress_[0]);
  std::vector<std::string> clauses;
  int64_t start = 0;
  std::string what = Describe(*progress_[0]);
  auto flush = [&](int64_t end) {  // ranks [start, end) do `what`
    const std::string who = end - start == 1 ? StrCat("device ", id(start))
                            : end - start == 2 ? StrCat("devices ", id(start), ",", id(start + 1))
                                               : StrCat("devices ", id(start), "-", id(end - 1));
    // "devices 1-3 wait at ...", "device 1 waits at ...".
    const bool plural_verb = end - start > 1 && what.starts_with("waits ");
    clauses.push_back(StrCat(who, " ", plural_verb ? StrCat("wait ", what.substr(6)) : what));
  };
  for (int64_t r = 1; r < n; ++r) {
    std::string here = Describe(*progress_[r]);
    if (here == what && id(r) == id(r - 1) + 1) continue;
    flush(r);
    start = r;
    what = std::move(here);
  }
  flush(n);
  return StrJoin(clauses, "; ");
}

}  // namespace xs
