// Collectives MPI does itself: when each process holds exactly one group's share (its devices
// consecutive in the group), an all-reduce MPI has the reducer for is a local reduction (in group
// order) and MPI_Iallreduce, and an all-gather is MPI_Iallgather of each process's devices'
// inputs, over a group communicator created once per process list (MPI_Comm_create_group).
#include <algorithm>
#include <cstring>

#include "xshard/comm/chunking.h"
#include "xshard/comm/reduction.h"
#include "xshard/mpi/mpi_internal.h"

namespace xs::mpi {
namespace {

// The MPI datatype / op for an all-reduce MPI can do itself with the same result as ours (min /
// max of floats excluded: HLO's propagate NaN, MPI_MIN / MPI_MAX need not).
bool MpiReduction(DType dtype, ReductionKind red, MPI_Datatype* type, MPI_Op* op) {
  struct Row {
    DType dtype;
    MPI_Datatype type;
    bool is_float;
  };
  static const Row kRows[] = {
      {DType::kF32, MPI_FLOAT, true},        {DType::kF64, MPI_DOUBLE, true},
      {DType::kS8, MPI_INT8_T, false},       {DType::kS16, MPI_INT16_T, false},
      {DType::kS32, MPI_INT32_T, false},     {DType::kS64, MPI_INT64_T, false},
      {DType::kU8, MPI_UINT8_T, false},      {DType::kU16, MPI_UINT16_T, false},
      {DType::kU32, MPI_UINT32_T, false},    {DType::kU64, MPI_UINT64_T, false},
  };
  for (const Row& row : kRows) {
    if (row.dtype != dtype) continue;
    *type = row.type;
    switch (red) {
      case ReductionKind::kSum: *op = MPI_SUM; return true;
      case ReductionKind::kProduct: *op = MPI_PROD; return true;
      case ReductionKind::kMin: *op = MPI_MIN; return !row.is_float;
      case ReductionKind::kMax: *op = MPI_MAX; return !row.is_float;
      case ReductionKind::kAnd: *op = MPI_BAND; return !row.is_float;
      case ReductionKind::kOr: *op = MPI_BOR; return !row.is_float;
    }
  }
  return false;
}

// The group's processes in group order when the local devices are all in one group that holds
// whole processes (each process's devices consecutive, L of them); empty otherwise.
std::vector<int64_t> WholeProcessGroup(const CommState& s) {
  const int64_t num_local = static_cast<int64_t>(s.local_ranks.size());
  const LocalOp& first = s.posted[0];
  const auto g0 = first.groups->GroupOf(first.rank);
  for (const LocalOp& op : s.posted) {
    if (first.groups->GroupOf(op.rank).data() != g0.data()) return {};
  }
  std::vector<int64_t> procs;
  for (int64_t m : g0) {
    if (procs.empty() || procs.back() != s.process_of[m]) procs.push_back(s.process_of[m]);
  }
  std::vector<int64_t> sorted = procs;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() ||
      static_cast<int64_t>(g0.size()) != static_cast<int64_t>(procs.size()) * num_local) {
    return {};
  }
  for (int64_t q : procs) {
    if (static_cast<int64_t>(s.devices_of_process[q].size()) != num_local) return {};
  }
  return procs;
}

// The communicator over `procs`, ranked in that order, created on first use.
MPI_Comm GroupComm(CommState& s, const std::vector<int64_t>& procs, const std::string& label) {
  auto it = s.group_comms.find(procs);
  if (it != s.group_comms.end()) return it->second;
  MPI_Group world_group, group;
  MPI_Comm_group(World(), &world_group);
  std::vector<int> ranks(procs.begin(), procs.end());
  MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &group);
  MPI_Comm comm = MPI_COMM_NULL;
  // Collective over the group's processes only; all of them just passed the signature exchange,
  // so they are here.
  Bounded(StrCat(label, ": creating the group's MPI communicator"), s.options.timeout,
          [&] { MPI_Comm_create_group(World(), group, kDataTag, &comm); });
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  s.group_comms.emplace(procs, comm);
  return comm;
}

// Polls the one request of a collective MPI call; on a timeout the waiting processes roll-call
// each other (they time out at about the same moment, so the calls cross) and name those that do
// not answer within a second, since MPI does not say who is missing.
Status WaitCollective(CommState& s, uint64_t k, std::unique_lock<std::mutex>& lock,
                      MPI_Request request, const std::vector<int64_t>& procs,
                      std::string_view what, const TimeoutErrorFn& timeout_error) {
  std::vector<MPI_Request> reqs(1, request);
  PollResult pr = PollAll(lock, reqs, s.options.timeout, {});
  if (pr.kind == PollResult::kDone) return OkStatus();
  if (pr.kind != PollResult::kTimeout) return timeout_error(pr, "", {});
  uint64_t call = k;
  std::vector<uint64_t> answers(procs.size());
  std::vector<int64_t> request_peer;
  reqs.clear();
  for (size_t i = 0; i < procs.size(); ++i) {
    if (procs[i] == s.process) continue;
    reqs.emplace_back();
    request_peer.push_back(procs[i]);
    MPI_Irecv(&answers[i], 1, MPI_UINT64_T, static_cast<int>(procs[i]), kRollCallTag, World(),
              &reqs.back());
  }
  for (int64_t q : procs) {
    if (q == s.process) continue;
    MPI_Request r;
    MPI_Isend(&call, 1, MPI_UINT64_T, static_cast<int>(q), kRollCallTag, World(), &r);
    MPI_Request_free(&r);
  }
  PollResult roll = PollAll(lock, reqs, std::min(s.options.timeout,
                                                 std::chrono::milliseconds(1000)), {});
  if (roll.kind == PollResult::kAborted) return roll.abort;
  pr.pending = roll.pending;
  return timeout_error(pr, StrCat("inside ", what, " (they did not answer a roll call)"),
                       request_peer);
}

}  // namespace

std::optional<Status> TryMpiCollective(CommState& s, uint64_t k,
                                       std::unique_lock<std::mutex>& lock,
                                       const std::string& label,
                                       const TimeoutErrorFn& timeout_error) {
  const LocalOp& first = s.posted[0];
  if (!s.options.use_mpi_reductions) return std::nullopt;
  MPI_Datatype type = MPI_BYTE;
  MPI_Op mpi_op = MPI_SUM;
  const bool reduce = first.kind == CollectiveKind::kAllReduce &&
                      MpiReduction(first.in.dtype, first.reduction, &type, &mpi_op);
  const bool gather = first.kind == CollectiveKind::kAllGather;
  if (!reduce && !gather) return std::nullopt;
  const std::vector<int64_t> procs = WholeProcessGroup(s);
  if (procs.empty()) return std::nullopt;
  const int64_t num_local = static_cast<int64_t>(s.local_ranks.size());
  const int64_t bytes = first.InBytes();
  MPI_Request request = MPI_REQUEST_NULL;
  if (reduce) {
    std::vector<int64_t> sorted = procs;
    std::sort(sorted.begin(), sorted.end());
    const MPI_Comm comm = GroupComm(s, sorted, label);
    // One local device sends its input as it is; several are reduced first.
    const int64_t count = first.in.num_elements();
    if (count > INT32_MAX) return Unimplemented(label, ": more than 2^31-1 elements");
    const std::byte* send = first.in.data;
    if (num_local > 1) {
      std::vector<const std::byte*> ptrs;
      for (const LocalOp& op : s.posted) ptrs.push_back(op.in.data);
      std::vector<std::byte>& partial = s.inbox[-1];
      partial.resize(static_cast<size_t>(bytes));
      ReduceMany(first.reduction, first.in.dtype, partial.data(), ptrs, count);
      send = partial.data();
    }
    std::byte* out0 = s.posted[0].out.data;
    // An in-place all-reduce (input == output) goes as MPI_IN_PLACE.
    MPI_Iallreduce(send == out0 ? MPI_IN_PLACE : send, out0, static_cast<int>(count), type,
                   mpi_op, comm, &request);
    XS_RETURN_IF_ERROR(
        WaitCollective(s, k, lock, request, sorted, "MPI_Iallreduce", timeout_error));
    for (int64_t i = 1; i < num_local; ++i) {
      std::memcpy(s.posted[i].out.data, out0, static_cast<size_t>(bytes));
    }
    return OkStatus();
  }
  // All-gather: the processes' blocks arrive in group order (the communicator's rank order);
  // each holds its devices' inputs in group order.
  const int64_t block = bytes * num_local;
  if (block > INT32_MAX) return std::nullopt;
  const MPI_Comm comm = GroupComm(s, procs, label);
  const auto g0 = first.groups->GroupOf(first.rank);
  const std::byte* send = first.in.data;
  if (num_local > 1) {
    std::vector<std::byte>& mine = s.inbox[-1];
    mine.resize(static_cast<size_t>(block));
    for (size_t j = 0, at = 0; j < g0.size(); ++j) {
      if (s.process_of[g0[j]] != s.process) continue;
      std::memcpy(mine.data() + at, s.posted[s.local_index[g0[j]]].in.data,
                  static_cast<size_t>(bytes));
      at += static_cast<size_t>(bytes);
    }
    send = mine.data();
  }
  // Gathering along the outermost non-trivial dim, the output is the blocks in order: MPI writes
  // it directly (into the first local device's output); otherwise into a buffer, then rearranged.
  const Chunking ch = Chunking::AlongDim(first.out.dims, first.dim0,
                                         static_cast<int64_t>(g0.size()),
                                         DTypeSize(first.in.dtype));
  std::vector<std::byte>& buffer = s.inbox[-3];
  std::byte* all = first.out.data;
  if (ch.outer != 1) {
    buffer.resize(static_cast<size_t>(bytes) * g0.size());
    all = buffer.data();
  }
  MPI_Iallgather(send, static_cast<int>(block), MPI_BYTE, all, static_cast<int>(block),
                 MPI_BYTE, comm, &request);
  XS_RETURN_IF_ERROR(WaitCollective(s, k, lock, request, procs, "MPI_Iallgather", timeout_error));
  if (ch.outer == 1) {
    for (int64_t i = 1; i < num_local; ++i) {
      std::memcpy(s.posted[i].out.data, all, static_cast<size_t>(bytes) * g0.size());
    }
    return OkStatus();
  }
  lock.unlock();
  for (const LocalOp& op : s.posted) {
    ComputeOutput(op, [&](int64_t r, int64_t) -> const std::byte* {
      return all + first.groups->IndexInGroup(r) * bytes;
    });
  }
  lock.lock();
  return OkStatus();
}

}  // namespace xs::mpi
