// MpiCommunicator's public calls and its in-process half: the device threads of this process meet
// per call (the last to arrive drives the cross-process part, mpi_exchange.cc), local failures and
// departures, and aborts that reach the other processes.
#include "xshard/mpi/mpi_communicator.h"

#include <algorithm>
#include <set>

#include "xshard/comm/collective_shapes.h"
#include "xshard/comm/reduction.h"
#include "xshard/mpi/mpi_internal.h"
#include "xshard/mpi/mpi_process.h"

namespace xs {

using mpi::CommState;
using mpi::LocalOp;

StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(MpiCommunicatorOptions options) {
  if (!mpi::Initialized()) {
    return FailedPrecondition("the MPI communicator needs MPI started first (mpi::Initialize(), "
                              "which Client::Create does in MPI mode)");
  }
  if (options.devices_per_process < 1) {
    return InvalidArgument("--devices-per-process must be at least 1, got ",
                           options.devices_per_process);
  }
  if (options.timeout.count() <= 0) {
    return InvalidArgument("the collective timeout must be positive, got ",
                           options.timeout.count(), " ms");
  }
  const int64_t total = mpi::ProcessCount() * options.devices_per_process;
  std::set<int64_t> seen;
  for (int64_t id : options.device_ids) {
    if (id < 0 || id >= total) {
      return InvalidArgument("device ", id, " does not exist: ", mpi::ProcessCount(),
                             " processes x ", options.devices_per_process,
                             " devices per process give devices 0..", total - 1,
                             "; start more processes (mpirun -np) or pass --devices-per-process");
    }
    if (!seen.insert(id).second) {
      return InvalidArgument("device ", id, " appears twice in the run's device list [",
                             StrJoin(options.device_ids, ","), "]");
    }
  }
  if (options.device_ids.empty()) {
    return InvalidArgument("a communicator needs at least one rank");
  }
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(options)));
}

MpiCommunicator::MpiCommunicator(MpiCommunicatorOptions options)
    : state_(std::make_unique<CommState>()) {
  CommState& s = *state_;
  s.options = std::move(options);
  s.process = mpi::ProcessRank();
  s.num_processes = mpi::ProcessCount();
  s.devices_of_process.resize(s.num_processes);
  const int64_t n = static_cast<int64_t>(s.options.device_ids.size());
  s.local_index.assign(n, -1);
  for (int64_t r = 0; r < n; ++r) {
    const int64_t id = s.options.device_ids[r];
    const int64_t p = id / s.options.devices_per_process;
    s.process_of.push_back(p);
    s.devices_of_process[p].push_back(id);
    if (p == s.process) {
      s.local_index[r] = static_cast<int64_t>(s.local_ranks.size());
      s.local_ranks.push_back(r);
    }
  }
  s.posted.resize(s.local_ranks.size());
  s.calls.assign(s.local_ranks.size(), 0);
  s.left.assign(s.local_ranks.size(), false);
}

MpiCommunicator::~MpiCommunicator() = default;

int64_t MpiCommunicator::num_ranks() const {
  return static_cast<int64_t>(state_->options.device_ids.size());
}
const std::vector<int64_t>& MpiCommunicator::local_ranks() const { return state_->local_ranks; }
const std::vector<int64_t>& MpiCommunicator::process_of() const { return state_->process_of; }

namespace {

std::string LocalDevices(const CommState& s, bool arrived, uint64_t k) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < s.local_ranks.size(); ++i) {
    if ((s.calls[i] >= k) == arrived) out.push_back(s.options.device_ids[s.local_ranks[i]]);
  }
  return StrJoin(out, ",");
}

// Checks one device's own arguments, as the in-process communicator does before publishing.
Status CheckLocal(const LocalOp& op, int64_t num_ranks) {
  const std::string label = op.Label();
  if (op.rank < 0 || op.rank >= num_ranks) {
    return InvalidArgument(label, ": rank ", op.rank, " is not in the communicator's 0..",
                           num_ranks - 1);
  }
  if (op.groups != nullptr && op.groups->num_ranks() != num_ranks) {
    return InvalidArgument(label, ": replica groups ", op.groups->ToString(), " were built for ",
                           op.groups->num_ranks(), " devices but the communicator has ",
                           num_ranks);
  }
  if (op.pairs != nullptr && op.pairs->num_ranks() != num_ranks) {
    return InvalidArgument(label, ": source_target_pairs ", op.pairs->ToString(),
                           " were built for ", op.pairs->num_ranks(),
                           " devices but the communicator has ", num_ranks);
  }
  const int64_t n =
      op.groups != nullptr ? static_cast<int64_t>(op.groups->GroupOf(op.rank).size()) : 1;
  std::vector<int64_t> expected(op.in.dims.begin(), op.in.dims.end());
  switch (op.kind) {
    case CollectiveKind::kAllGather: {
      XS_ASSIGN_OR_RETURN(expected, AllGatherDims(label, op.in.dims, op.dim0, n));
      break;
    }
    case CollectiveKind::kReduceScatter: {
      XS_RETURN_IF_ERROR(CheckReduction(op.reduction, op.in.dtype, label));
      XS_ASSIGN_OR_RETURN(expected, ReduceScatterDims(label, op.in.dims, op.dim0, n));
      break;
    }
    case CollectiveKind::kAllReduce:
      XS_RETURN_IF_ERROR(CheckReduction(op.reduction, op.in.dtype, label));
      break;
    case CollectiveKind::kAllToAll: {
      if (op.groups != nullptr && (!op.tuple_in.empty() || !op.tuple_out.empty())) {
        if (static_cast<int64_t>(op.tuple_in.size()) != n ||
            static_cast<int64_t>(op.tuple_out.size()) != n) {
          return InvalidArgument(label, ": the tuple all-to-all of rank ", op.rank, " has ",
                                 op.tuple_in.size(), " operands and ", op.tuple_out.size(),
                                 " results but its group has ", n,
                                 " members; pass one operand per member");
        }
        for (int64_t j = 0; j < n; ++j) {
          const ConstBufferView& a = op.tuple_in[j];
          if (a.dtype != op.tuple_in[0].dtype ||
              !std::ranges::equal(a.dims, op.tuple_in[0].dims)) {
            return InvalidArgument(label, ": tuple operand ", j, " is ", a.ShapeString(),
                                   " but operand 0 is ", op.tuple_in[0].ShapeString(),
                                   "; every operand of a tuple all-to-all has the same shape");
          }
          XS_RETURN_IF_ERROR(CheckOutput(label, a, op.tuple_out[j], a.dims));
        }
        return OkStatus();
      }
      XS_ASSIGN_OR_RETURN(expected, AllToAllDims(label, op.in.dims, op.dim0, op.dim1, n));
      break;
    }
    case CollectiveKind::kBarrier:
      return OkStatus();
    case CollectiveKind::kCollectivePermute:
    case CollectiveKind::kCollectiveBroadcast:
      break;
  }
  return CheckOutput(label, op.in, op.out, expected);
}

// One device's call: check it, post it, and either drive the call (last local arrival) or wait
// for the driver.
Status RunCall(CommState& s, LocalOp op) {
  const int64_t n = static_cast<int64_t>(s.options.device_ids.size());
  if (op.rank < 0 || op.rank >= n || s.local_index[op.rank] < 0) {
    return InvalidArgument(op.Label(), ": rank ", op.rank, " (device ",
                           op.rank >= 0 && op.rank < n ? s.options.device_ids[op.rank] : -1,
                           ") does not live in process ", s.process);
  }
  if (Status st = CheckLocal(op, n); !st.ok()) return st;
  const int64_t i = s.local_index[op.rank];
  const int64_t num_local = static_cast<int64_t>(s.local_ranks.size());
  std::unique_lock<std::mutex> lock(s.mu);
  if (s.aborted) return s.abort_status;
  const uint64_t k = ++s.calls[i];
  s.posted[i] = std::move(op);
  if (++s.arrived == num_local) {
    s.arrived = 0;
    lock.unlock();
    Status st = mpi::BrokenReason();
    if (st.ok()) st = mpi::RunProcessCall(s, k);
    lock.lock();
    if (!st.ok() && !s.aborted) {
      s.aborted = true;
      s.abort_status = st;
      lock.unlock();
      mpi::SendAbortToAll(st);
      lock.lock();
    }
    s.completed = k;
    s.last_result = st;
    s.cv.notify_all();
    return s.aborted ? s.abort_status : st;
  }
  auto deadline = std::chrono::steady_clock::now() + s.options.timeout;
  for (;;) {
    if (s.completed >= k) return s.aborted ? s.abort_status : s.last_result;
    if (s.aborted) return s.abort_status;
    // A local device that left or never arrives ends the call; a driver at work is bounded by its
    // own waits, so only the local arrival has a deadline here.
    for (int64_t j = 0; j < num_local; ++j) {
      if (s.calls[j] < k && s.left[j]) {
        Status e = FailedPrecondition(s.posted[i].Label(), ": device ",
                                      s.options.device_ids[s.local_ranks[j]],
                                      " finished its program without joining; arrived: ",
                                      LocalDevices(s, true, k), "; missing: ",
                                      LocalDevices(s, false, k));
        s.aborted = true;
        s.abort_status = e;
        s.cv.notify_all();
        lock.unlock();
        mpi::SendAbortToAll(e);
        return e;
      }
    }
    const bool all_arrived = std::all_of(s.calls.begin(), s.calls.end(),
                                         [k](uint64_t c) { return c >= k; });
    if (all_arrived) {
      s.cv.wait(lock);
      continue;
    }
    if (s.cv.wait_until(lock, deadline) == std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= deadline &&
        !std::all_of(s.calls.begin(), s.calls.end(), [k](uint64_t c) { return c >= k; })) {
      Status e = DeadlineExceeded(
          s.posted[i].Label(), ": timed out after ", s.options.timeout.count(), " ms on device ",
          s.options.device_ids[s.local_ranks[i]],
          " waiting for the devices of process ", s.process, " to arrive; arrived: ",
          LocalDevices(s, true, k), "; missing: ", LocalDevices(s, false, k),
          ". Every device of a group must call the same collectives in the same order");
      s.aborted = true;
      s.abort_status = e;
      s.cv.notify_all();
      lock.unlock();
      mpi::SendAbortToAll(e);
      return e;
    }
  }
}

LocalOp MakeOp(const CollectiveCall& call, CollectiveKind kind, ConstBufferView in,
               BufferView out) {
  LocalOp op;
  op.kind = kind;
  op.in = in;
  op.out = out;
  op.rank = call.rank;
  op.op_name.assign(call.op_name.begin(), call.op_name.end());
  op.channel_id = call.channel_id;
  return op;
}

Status Synchronous(const CollectiveCall& call, Status st) {
  if (call.async_handle != nullptr) *call.async_handle = 0;
  return st;
}

}  // namespace

Status MpiCommunicator::AllGather(const CollectiveCall& call, const DeviceGroups& groups,
                                  ConstBufferView in, BufferView out, int dim) {
  LocalOp op = MakeOp(call, CollectiveKind::kAllGather, in, out);
  op.groups = &groups;
  op.dim0 = dim;
  return Synchronous(call, RunCall(*state_, std::move(op)));
}

Status MpiCommunicator::AllReduce(const CollectiveCall& call, const DeviceGroups& groups,
                                  ConstBufferView in, BufferView out, ReductionKind reduction) {
  LocalOp op = MakeOp(call, CollectiveKind::kAllReduce, in, out);
  op.groups = &groups;
  op.reduction = reduction;
  return Synchronous(call, RunCall(*state_, std::move(op)));
}

Status MpiCommunicator::ReduceScatter(const CollectiveCall& call, const DeviceGroups& groups,
                                      ConstBufferView in, BufferView out, int dim,
                                      ReductionKind reduction) {
  LocalOp op = MakeOp(call, CollectiveKind::kReduceScatter, in, out);
  op.groups = &groups;
  op.dim0 = dim;
  op.reduction = reduction;
  return Synchronous(call, RunCall(*state_, std::move(op)));
}

Status MpiCommunicator::AllToAll(const CollectiveCall& call, const DeviceGroups& groups,
                                 ConstBufferView in, BufferView out, int split_dim,
                                 int concat_dim) {
  LocalOp op = MakeOp(call, CollectiveKind::kAllToAll, in, out);
  op.groups = &groups;
  op.dim0 = split_dim;
  op.dim1 = concat_dim;
  return Synchronous(call, RunCall(*state_, std::move(op)));
}

Status MpiCommunicator::AllToAllTuple(const CollectiveCall& call, const DeviceGroups& groups,
                                      std::span<const ConstBufferView> ins,
                                      std::span<const BufferView> outs) {
  LocalOp op = MakeOp(call, CollectiveKind::kAllToAll, {}, {});
  op.groups = &groups;
  op.tuple_in.assign(ins.begin(), ins.end());
  op.tuple_out.assign(outs.begin(), outs.end());
  if (!op.tuple_in.empty()) op.in = op.tuple_in[0];
  return Synchronous(call, RunCall(*state_, std::move(op)));
}

Status MpiCommunicator::CollectivePermute(const CollectiveCall& call, const PermutePairs& pairs,
                                          ConstBufferView in, BufferView out) {
  LocalOp op = MakeOp(call, CollectiveKind::kCollectivePermute, in, out);
  op.pairs = &pairs;
  return Synchronous(call, RunCall(*state_, std::move(op)));
}

Status MpiCommunicator::CollectiveBroadcast(const CollectiveCall& call,
                                            const DeviceGroups& groups, ConstBufferView in,
                                            BufferView out) {
  LocalOp op = MakeOp(call, CollectiveKind::kCollectiveBroadcast, in, out);
  op.groups = &groups;
  return Synchronous(call, RunCall(*state_, std::move(op)));
}

Status MpiCommunicator::Barrier(const CollectiveCall& call) {
  return Synchronous(call, RunCall(*state_, MakeOp(call, CollectiveKind::kBarrier, {}, {})));
}

void MpiCommunicator::Abort(const Status& reason) {
  CommState& s = *state_;
  Status sent;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.aborted) return;
    s.aborted = true;
    s.abort_status = reason.ok() ? Internal("communicator aborted without a reason") : reason;
    sent = s.abort_status;
    s.cv.notify_all();
  }
  mpi::SendAbortToAll(sent);
}

Status MpiCommunicator::abort_reason() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->abort_status;
}

void MpiCommunicator::Leave(int64_t rank) {
  CommState& s = *state_;
  if (rank < 0 || rank >= num_ranks() || s.local_index[rank] < 0) return;
  std::lock_guard<std::mutex> lock(s.mu);
  s.left[s.local_index[rank]] = true;
  s.cv.notify_all();
}

void MpiCommunicator::Reset() {
  CommState& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  std::fill(s.calls.begin(), s.calls.end(), 0);
  std::fill(s.left.begin(), s.left.end(), false);
  s.arrived = 0;
  s.completed = 0;
  s.last_result = OkStatus();
  s.aborted = false;
  s.abort_status = OkStatus();
}

}  // namespace xs
