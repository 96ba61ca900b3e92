// The in-process communicator's rendezvous: slots, call counters, waits with deadlines, agreement
// checks and failure propagation. The data movement itself is in inprocess_algorithms.cc.
//
// One call k on rank r is posted (Post) and then completed (Complete); a synchronous call does
// both at once, an asynchronous one (-start / -done) returns between them:
//  1. wait until the members of call k-16 (the last user of CallSlot k%16) have finished it, so
//     its descriptor and staging are free again (almost always true already: a scan of counters
//     of that call's group only, never of ranks outside it);
//  2. fill the descriptor (and stage the input when eager), publish arrived = k, ring the group;
//  3. (Complete) wait until the group has arrived, check that everyone called the same thing;
//  4. move data (peers read each other's published pointers), publish done = k, ring the group;
//  5. unless eager, wait until the group is done (they may still read this rank's buffers).
// Every wait watches members of the call's own group only, and those members ring exactly that
// group when they publish, so a rank is never left asleep waiting on a rank that will not ring it.
#include <algorithm>
#include <cstring>

#include "xshard/kernels/compute_gate.h"
#include "xshard/comm/inprocess_internal.h"

namespace xs {
namespace inprocess {

int64_t State::DeviceId(int64_t rank) const {
  return options.device_ids.empty() ? rank : options.device_ids[rank];
}

Status State::AbortStatus() {
  std::lock_guard<std::mutex> lock(mu);
  return abort_status;
}

void State::Abort(const Status& reason) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!aborted.load(std::memory_order_seq_cst)) {
      abort_status = reason.ok() ? Internal("communicator aborted without a reason") : reason;
      aborted.store(true, std::memory_order_seq_cst);
    }
  }
  RingAll();
}

void State::RingAll() {
  for (int64_t r = 0; r < options.num_ranks; ++r) slots[r].bell.Ring();
}

void State::Ring(std::span<const int64_t> ranks) {
  for (int64_t r : ranks) slots[r].bell.Ring();
}

namespace {

const std::atomic<uint64_t>& CounterOf(const Slot& s, Counter counter, uint64_t call) {
  switch (counter) {
    case Counter::kArrived:
      return s.arrived;
    case Counter::kStep:
      return s.Of(call).step;
    case Counter::kDone:
      return s.Of(call).done;
    case Counter::kDelivery:
      return s.Of(call).delivery;
  }
  return s.arrived;
}

}  // namespace

WaitResult State::Wait(int64_t waiter, std::span<const int64_t> ranks, Counter counter,
                       uint64_t call, uint64_t value, bool left_is_ready, int64_t* culprit) {
  size_t next = 0;  // counters only grow, so ranks found ready stay ready
  WaitResult result = WaitResult::kReady;
  auto ready = [&]() {
    if (aborted.load(std::memory_order_seq_cst)) {
      result = WaitResult::kAborted;
      return true;
    }
    for (; next < ranks.size(); ++next) {
      const Slot& s = slots[ranks[next]];
      const std::atomic<uint64_t>& c = CounterOf(s, counter, call);
      if (c.load(std::memory_order_seq_cst) >= value) continue;
      if (s.left.load(std::memory_order_seq_cst) == 0) return false;
      // It left; re-read in case its last update landed just before it did.
      if (c.load(std::memory_order_seq_cst) >= value || left_is_ready) continue;
      result = WaitResult::kPeerLeft;
      *culprit = ranks[next];
      return true;
    }
    result = WaitResult::kReady;
    return true;
  };
  auto deadline = SteadyClock::now() + options.timeout;
  while (!slots[waiter].bell.WaitUntil(ready, deadline, policy)) {
    if (options.compute_gate == nullptr || !options.compute_gate->Busy()) {
      *culprit = ranks[next];
      return WaitResult::kTimeout;
    }
    deadline = SteadyClock::now() + options.timeout;
  }
  return result;
}

Status Exchange::WaitStep(int64_t j, uint64_t step) {
  const int64_t peer = mine().group[j];
  const std::span<const int64_t> one(&mine().group[j], 1);
  int64_t culprit = peer;
  const WaitResult r = state_.Wait(rank_, one, Counter::kStep, call_, StepValue(call_, step),
                                   false, &culprit);
  if (r == WaitResult::kReady) return OkStatus();
  if (r == WaitResult::kAborted) return state_.AbortStatus();
  Status e = DeadlineExceeded(Label(mine()), ": timed out after ", state_.options.timeout.count(),
                              " ms on device ", state_.DeviceId(rank_), " at ",
                              CollectiveAlgorithmName(mine().algorithm), " step ", step,
                              " waiting for device ", state_.DeviceId(peer));
  state_.Abort(e);
  return state_.AbortStatus();
}

void Exchange::PublishStep(uint64_t step) {
  state_.slots[rank_].Of(call_).step.store(StepValue(call_, step), std::memory_order_seq_cst);
  state_.Ring(mine().group);
}

}  // namespace inprocess

using inprocess::CallSlot;
using inprocess::Counter;
using inprocess::Desc;
using inprocess::kCallDepth;
using inprocess::Slot;
using inprocess::WaitResult;

StatusOr<std::unique_ptr<InProcessCommunicator>> InProcessCommunicator::Create(
    InProcessOptions options) {
  if (options.num_ranks < 1) {
    return InvalidArgument("a communicator needs at least one rank, got ", options.num_ranks);
  }
  if (!options.device_ids.empty() &&
      static_cast<int64_t>(options.device_ids.size()) != options.num_ranks) {
    return InvalidArgument("the communicator has ", options.num_ranks, " ranks but ",
                           options.device_ids.size(), " device ids; give one per rank");
  }
  if (options.timeout.count() <= 0) {
    return InvalidArgument("the collective timeout must be positive, got ",
                           options.timeout.count(), " ms");
  }
  return std::unique_ptr<InProcessCommunicator>(new InProcessCommunicator(std::move(options)));
}

InProcessCommunicator::InProcessCommunicator(InProcessOptions options)
    : options_(std::move(options)), state_(std::make_unique<inprocess::State>()) {
  state_->options = options_;
  state_->policy = options_.wait_policy.value_or(
      DefaultWaitPolicy(options_.num_ranks, AvailableCores()));
  state_->slots = std::make_unique<Slot[]>(options_.num_ranks);
  for (int64_t r = 0; r < options_.num_ranks; ++r) state_->all_ranks.push_back(r);
}

InProcessCommunicator::~InProcessCommunicator() = default;

int64_t InProcessCommunicator::num_ranks() const { return options_.num_ranks; }

void InProcessCommunicator::Abort(const Status& reason) { state_->Abort(reason); }

Status InProcessCommunicator::abort_reason() const { return state_->AbortStatus(); }

void InProcessCommunicator::Leave(int64_t rank) {
  if (rank < 0 || rank >= options_.num_ranks) return;
  state_->slots[rank].left.store(1, std::memory_order_seq_cst);
  state_->RingAll();
}

void InProcessCommunicator::Reset() {
  inprocess::State& s = *state_;
  for (int64_t r = 0; r < options_.num_ranks; ++r) {
    Slot& slot = s.slots[r];
    slot.arrived.store(0);
    for (CallSlot& c : slot.call) {
      c.step.store(0);
      c.done.store(0);
    }
    slot.left.store(0);
    slot.calls = 0;
    slot.completed_early.clear();
  }
  std::lock_guard<std::mutex> lock(s.mu);
  s.abort_status = OkStatus();
  s.aborted.store(false);
}

Status InProcessCommunicator::Run(const CollectiveCall& call, inprocess::OpSpec& spec) {
  XS_ASSIGN_OR_RETURN(const uint64_t k, Post(call, spec));
  if (call.async_handle != nullptr) {
    *call.async_handle = k;
    return OkStatus();
  }
  return Complete(call.rank, k);
}

Status InProcessCommunicator::Finish(int64_t rank, uint64_t handle) {
  if (handle == 0) return OkStatus();
  if (rank < 0 || rank >= options_.num_ranks) {
    return InvalidArgument("finishing a collective: rank ", rank,
                           " is out of range for a communicator of ", options_.num_ranks,
                           " ranks");
  }
  inprocess::State& s = *state_;
  if (s.aborted.load(std::memory_order_seq_cst)) return s.AbortStatus();
  Slot& me = s.slots[rank];
  if (auto it = std::find(me.completed_early.begin(), me.completed_early.end(), handle);
      it != me.completed_early.end()) {
    me.completed_early.erase(it);
    return OkStatus();
  }
  if (handle > me.calls || handle + kCallDepth <= me.calls ||
      me.Of(handle).done.load(std::memory_order_seq_cst) >= handle) {
    Status e = FailedPrecondition("device ", s.DeviceId(rank), " finishes collective #", handle,
                                  ", which it did not start, already finished, or started more "
                                  "than ", kCallDepth - 1, " calls ago");
    s.Abort(e);
    return e;
  }
  return Complete(rank, handle);
}

StatusOr<uint64_t> InProcessCommunicator::Post(const CollectiveCall& call,
                                               inprocess::OpSpec& spec) {
  inprocess::State& s = *state_;
  const std::string_view op = call.op_name.empty() ? CollectiveKindName(spec.kind)
                                                   : call.op_name;
  if (call.rank < 0 || call.rank >= options_.num_ranks) {
    return InvalidArgument(op, ": rank ", call.rank, " is out of range for a communicator of ",
                           options_.num_ranks, " ranks");
  }
  if (s.aborted.load(std::memory_order_seq_cst)) return s.AbortStatus();
  const int64_t rank = call.rank;
  Slot& me = s.slots[rank];
  std::span<const int64_t> group;
  if (spec.groups != nullptr && spec.groups->num_ranks() == options_.num_ranks) {
    group = spec.groups->GroupOf(rank);
  }
  if (Status local = inprocess::CheckLocal(spec, op, options_.num_ranks, rank, group);
      !local.ok()) {
    s.Abort(local);
    return local;
  }

  if (me.calls + 1 > kCallDepth) {
    // The call this one's CallSlot last held, if this rank has not finished it: more than
    // kCallDepth - 1 asynchronous calls are in flight. Complete that (oldest) one now, as its
    // -done would; its peers started it before any later call, so it can complete.
    const uint64_t prev = me.calls + 1 - kCallDepth;
    if (me.Of(prev).done.load(std::memory_order_seq_cst) < prev) {
      XS_RETURN_IF_ERROR(Complete(rank, prev));
      me.completed_early.push_back(prev);
    }
  }
  const uint64_t k = ++me.calls;
  CallSlot& cs = me.Of(k);
  Desc& d = cs.desc;
  int64_t culprit = -1;
  if (k > kCallDepth) {
    // The previous user of this CallSlot was call k - kCallDepth: its group (and only its group)
    // may still read the descriptor and staging.
    const uint64_t prev = k - kCallDepth;
    const WaitResult r = s.Wait(rank, d.group, Counter::kDone, prev, prev, true, &culprit);
    if (r == WaitResult::kAborted) return s.AbortStatus();
    if (r != WaitResult::kReady) {
      Status e = DeadlineExceeded(op, " (channel ", call.channel_id, "): timed out after ",
                                  options_.timeout.count(), " ms on device ", s.DeviceId(rank),
                                  " waiting for device ", s.DeviceId(culprit),
                                  " to finish collective #", prev, " of this run");
      s.Abort(e);
      return s.AbortStatus();
    }
  }

  inprocess::Fill(call, spec, call.algorithm.value_or(options_.algorithm), options_.num_ranks, d);
  const int64_t in_bytes = spec.in.byte_size();
  d.eager = d.algorithm == CollectiveAlgorithm::kDirect && spec.tuple_in.empty() &&
            in_bytes <= options_.eager_bytes;
  if (d.eager && spec.kind != CollectiveKind::kBarrier && in_bytes > 0) {
    cs.staging.Reserve(in_bytes);
    std::memcpy(cs.staging.data(), spec.in.data, static_cast<size_t>(in_bytes));
    d.in = cs.staging.data();
  }
  cs.step.store(inprocess::StepValue(k, 0), std::memory_order_seq_cst);
  cs.delivery.store(inprocess::DeliveryValue(k, inprocess::Delivery::kNone),
                    std::memory_order_seq_cst);
  me.arrived.store(k, std::memory_order_seq_cst);
  s.Ring(d.group);
  if (inprocess::UsesDelivery(d)) inprocess::PostPermute(s, rank, k);
  return k;
}

Status InProcessCommunicator::Complete(int64_t rank, uint64_t k) {
  inprocess::State& s = *state_;
  Slot& me = s.slots[rank];
  Desc& d = me.Of(k).desc;
  int64_t culprit = -1;
  WaitResult r = s.Wait(rank, d.group, Counter::kArrived, k, k, false, &culprit);
  if (r == WaitResult::kAborted) return s.AbortStatus();
  if (r != WaitResult::kReady) {
    std::vector<int64_t> arrived, missing;
    for (int64_t m : d.group) {
      (s.slots[m].arrived.load() >= k ? arrived : missing).push_back(s.DeviceId(m));
    }
    const std::string who = StrCat("; arrived: ", StrJoin(arrived, ","),
                                   "; missing: ", StrJoin(missing, ","));
    Status e = r == WaitResult::kTimeout
                   ? DeadlineExceeded(inprocess::Label(d), ": timed out after ",
                                      options_.timeout.count(), " ms on device ",
                                      s.DeviceId(rank), " waiting for its group to arrive", who,
                                      ". Every device of a group must call the same "
                                      "collectives in the same order")
                   : FailedPrecondition(inprocess::Label(d), ": device ", s.DeviceId(culprit),
                                        " finished its program without joining", who);
    s.Abort(e);
    return s.AbortStatus();
  }
  for (int64_t m : d.group) {
    const Desc& other = s.slots[m].Of(k).desc;
    if (m == rank || inprocess::SameCall(d, other)) continue;
    Status e = InvalidArgument("collective mismatch at call #", k, ": device ", s.DeviceId(rank),
                               " called ", inprocess::Describe(s, d), " but device ",
                               s.DeviceId(m), " called ", inprocess::Describe(s, other),
                               "; every device of a group must make the same collective calls, "
                               "in the same order, with the same shapes, dtypes and groups");
    s.Abort(e);
    return s.AbortStatus();
  }
  if (d.algorithm != CollectiveAlgorithm::kDirect && d.kind != CollectiveKind::kAllGather) {
    // Reserved here, not when posting: another call posted in between may have grown it. Peers
    // read it only after this rank publishes a step of this call.
    me.scratch.Reserve(static_cast<int64_t>(inprocess::InBytes(d)));
    d.scratch = me.scratch.data();
  }

  if (inprocess::UsesDelivery(d)) return inprocess::CompletePermute(s, rank, k);

  inprocess::Exchange x(s, rank, k);
  const auto pos = std::find(d.group.begin(), d.group.end(), rank);
  x.set_me(pos == d.group.end() ? -1 : pos - d.group.begin());
  if (Status st = inprocess::RunAlgorithm(x); !st.ok()) {
    s.Abort(st);
    return s.AbortStatus();
  }
  me.Of(k).done.store(k, std::memory_order_seq_cst);
  s.Ring(d.group);
  if (!d.eager) {
    r = s.Wait(rank, d.group, Counter::kDone, k, k, false, &culprit);
    if (r == WaitResult::kAborted) return s.AbortStatus();
    if (r != WaitResult::kReady) {
      Status e = DeadlineExceeded(inprocess::Label(d), ": timed out after ",
                                  options_.timeout.count(), " ms on device ", s.DeviceId(rank),
                                  " waiting for device ", s.DeviceId(culprit),
                                  " to finish reading its buffers");
      s.Abort(e);
      return s.AbortStatus();
    }
  }
  return OkStatus();
}

}  // namespace xs
