// All-reduces MPI does itself: when each process holds exactly one group's share and MPI has the
// reducer for the dtype, the process reduces its devices' inputs locally (in group order) and
// MPI_Iallreduce combines the processes' partial results over a cached group communicator.
#include <algorithm>
#include <cstring>

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

}  // namespace

std::optional<Status> TryMpiAllReduce(CommState& s, uint64_t k, std::unique_lock<std::mutex>& lock,
                                      const std::string& label, const TimeoutErrorFn& timeout_error) {
  const int64_t num_local = static_cast<int64_t>(s.local_ranks.size());
  const LocalOp& first = s.posted[0];
  std::vector<MPI_Request> reqs;
  std::vector<int64_t> request_peer;
  PollResult pr;
  // Eligible for MPI's all-reduce with a datatype and op that give our results.
  MPI_Datatype type;
  MPI_Op mpi_op;
  if (first.kind == CollectiveKind::kAllReduce && s.options.use_mpi_reductions &&
      MpiReduction(first.in.dtype, first.reduction, &type, &mpi_op)) {
    // Eligible when all local devices share one group whose processes host nothing else.
    const auto g0 = first.groups->GroupOf(first.rank);
    bool one_group = true;
    for (const LocalOp& op : s.posted) {
      one_group = one_group && first.groups->GroupOf(op.rank).data() == g0.data();
    }
    std::vector<int64_t> procs;
    for (int64_t m : g0) {
      if (procs.empty() || procs.back() != s.process_of[m]) procs.push_back(s.process_of[m]);
    }
    std::vector<int64_t> sorted = procs;
    std::sort(sorted.begin(), sorted.end());
    one_group = one_group && std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end() &&
                static_cast<int64_t>(g0.size()) ==
                    static_cast<int64_t>(procs.size()) * num_local;
    for (int64_t q : procs) {
      one_group = one_group && static_cast<int64_t>(s.devices_of_process[q].size()) == num_local;
    }
    if (one_group) {
      auto it = s.group_comms.find(sorted);
      if (it == s.group_comms.end()) {
        MPI_Group world_group, group;
        MPI_Comm_group(World(), &world_group);
        std::vector<int> ranks(sorted.begin(), sorted.end());
        MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &group);
        MPI_Comm comm = MPI_COMM_NULL;
        // Collective over the group's processes only; all of them just passed the signature
        // exchange, so they are here.
        Bounded(StrCat(label, ": creating the group's MPI communicator"), s.options.timeout,
                [&] { MPI_Comm_create_group(World(), group, kDataTag, &comm); });
        MPI_Group_free(&group);
        MPI_Group_free(&world_group);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        it = s.group_comms.emplace(sorted, comm).first;
      }
      // One local device sends its input as it is; several are reduced first.
      const int64_t count = first.in.num_elements();
      const std::byte* send = first.in.data;
      if (num_local > 1) {
        std::vector<const std::byte*> ptrs;
        for (const LocalOp& op : s.posted) ptrs.push_back(op.in.data);
        std::vector<std::byte>& partial = s.inbox[-1];
        partial.resize(static_cast<size_t>(first.InBytes()));
        ReduceMany(first.reduction, first.in.dtype, partial.data(), ptrs, count);
        send = partial.data();
      }
      std::byte* out0 = s.posted[0].out.data;
      reqs.assign(1, MPI_REQUEST_NULL);
      if (count > INT32_MAX) return Unimplemented(label, ": more than 2^31-1 elements");
      // An in-place all-reduce (input == output) goes as MPI_IN_PLACE.
      MPI_Iallreduce(send == out0 ? MPI_IN_PLACE : send, out0, static_cast<int>(count), type,
                     mpi_op, it->second, &reqs[0]);
      pr = PollAll(lock, reqs, s.options.timeout, {});
      if (pr.kind == PollResult::kTimeout) {
        // MPI does not say who is missing: every waiting process sends a roll call to the others
        // and names those that do not answer within a second (they time out at about the same
        // moment, so the calls cross).
        uint64_t call = k;
        std::vector<uint64_t> answers(sorted.size());
        reqs.clear();
        request_peer.clear();
        for (size_t i = 0; i < sorted.size(); ++i) {
          if (sorted[i] == s.process) continue;
          reqs.emplace_back();
          request_peer.push_back(sorted[i]);
          MPI_Irecv(&answers[i], 1, MPI_UINT64_T, static_cast<int>(sorted[i]), kRollCallTag,
                    World(), &reqs.back());
        }
        const size_t receives = reqs.size();
        for (int64_t q : sorted) {
          if (q == s.process) continue;
          MPI_Request r;
          MPI_Isend(&call, 1, MPI_UINT64_T, static_cast<int>(q), kRollCallTag, World(), &r);
          MPI_Request_free(&r);
        }
        const auto wait = std::min(s.options.timeout, std::chrono::milliseconds(1000));
        PollResult roll = PollAll(lock, reqs, wait, {});
        if (roll.kind == PollResult::kAborted) return roll.abort;
        pr.pending.clear();
        for (int i : roll.pending) {
          if (static_cast<size_t>(i) < receives) pr.pending.push_back(i);
        }
        return timeout_error(pr, "inside MPI_Iallreduce (they did not answer a roll call)",
                             request_peer);
      }
      if (pr.kind != PollResult::kDone) return timeout_error(pr, "", request_peer);
      for (int64_t i = 1; i < num_local; ++i) {
        std::memcpy(s.posted[i].out.data, out0, static_cast<size_t>(first.InBytes()));
      }
      return OkStatus();
    }
  }
  return std::nullopt;
}

}  // namespace xs::mpi
