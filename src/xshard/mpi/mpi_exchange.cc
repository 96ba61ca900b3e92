// The cross-process half of one MpiCommunicator call, run by the thread of the last local device
// to arrive: agree locally, exchange signatures with the processes that share a group with this
// one, move the inputs each process needs (or MPI_Iallreduce over a cached group communicator),
// and compute every local device's output.
#include <algorithm>
#include <cstring>
#include <set>

#include "xshard/comm/reduction.h"
#include "xshard/mpi/mpi_internal.h"

namespace xs::mpi {
namespace {

constexpr size_t kTextBytes = 240;

// What a process says about its call: the call number, a hash of what was called, and the text
// for error messages.
struct Signature {
  uint64_t call = 0;
  uint64_t hash = 0;
  char text[kTextBytes] = {};
};

// Whether local ops `a` and `b` are the same call (what the in-process communicator compares).
bool SameCall(const LocalOp& a, const LocalOp& b) { return a.Hash() == b.Hash(); }

// The ranks whose input `op` (a local rank's call) reads.
std::vector<int64_t> Reads(const LocalOp& op) {
  std::vector<int64_t> out;
  switch (op.kind) {
    case CollectiveKind::kBarrier:
      break;
    case CollectiveKind::kCollectivePermute:
      if (op.pairs->SourceOf(op.rank) >= 0) out.push_back(op.pairs->SourceOf(op.rank));
      break;
    case CollectiveKind::kCollectiveBroadcast: {
      const auto g = op.groups->GroupOf(op.rank);
      if (!g.empty()) out.push_back(g[0]);
      break;
    }
    default: {
      const auto g = op.groups->GroupOf(op.rank);
      out.assign(g.begin(), g.end());
    }
  }
  return out;
}

// The ranks that read local rank `r`'s input (the same relation, seen from the sender).
std::vector<int64_t> ReadBy(const LocalOp& op) {
  std::vector<int64_t> out;
  switch (op.kind) {
    case CollectiveKind::kBarrier:
      break;
    case CollectiveKind::kCollectivePermute:
      if (op.pairs->TargetOf(op.rank) >= 0) out.push_back(op.pairs->TargetOf(op.rank));
      break;
    case CollectiveKind::kCollectiveBroadcast: {
      const auto g = op.groups->GroupOf(op.rank);
      if (!g.empty() && g[0] == op.rank) out.assign(g.begin(), g.end());
      break;
    }
    default: {
      const auto g = op.groups->GroupOf(op.rank);
      out.assign(g.begin(), g.end());
    }
  }
  return out;
}

std::string GroupText(const LocalOp& op, const CommState& s) {
  if (op.kind == CollectiveKind::kBarrier) return "every device";
  std::vector<int64_t> ids;
  if (op.pairs != nullptr) {
    std::string out = "source_target_pairs {";
    for (size_t i = 0; i < op.pairs->pairs().size(); ++i) {
      const auto [a, b] = op.pairs->pairs()[i];
      StrAppend(&out, i ? "," : "", "{", s.options.device_ids[a], ",", s.options.device_ids[b],
                "}");
    }
    return out + "} (device ids)";
  }
  for (int64_t r : op.groups->GroupOf(op.rank)) ids.push_back(s.options.device_ids[r]);
  return StrCat("group {", StrJoin(ids, ","), "} (device ids)");
}

// The caller (MpiCommunicator) marks the MPI state broken and tells the other processes.
Status Fail(CommState& s, const Status& e) {
  (void)s;
  return e;
}

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

Status RunProcessCall(CommState& s, uint64_t k) {
  const int64_t num_local = static_cast<int64_t>(s.local_ranks.size());
  const LocalOp& first = s.posted[0];
  // 1. The local devices agree (as the in-process communicator's check, per process).
  for (int64_t i = 1; i < num_local; ++i) {
    const LocalOp& other = s.posted[i];
    if (SameCall(first, other)) continue;
    return Fail(s, InvalidArgument(
        "collective mismatch at call #", k, ": device ", s.options.device_ids[first.rank],
        " called ", first.Describe(s.options.device_ids), " but device ",
        s.options.device_ids[other.rank], " called ", other.Describe(s.options.device_ids),
        "; every device of a group must make the same collective calls, in the same order, with "
        "the same shapes, dtypes and groups"));
  }
  // 2. Who sends what to whom: ranks each peer process reads from this one, and the reverse.
  std::map<int64_t, std::set<int64_t>> send, recv;  // process -> local / remote ranks
  std::set<int64_t> peers;
  for (const LocalOp& op : s.posted) {
    for (int64_t r : Reads(op)) {
      if (s.process_of[r] != s.process) recv[s.process_of[r]].insert(r);
    }
    for (int64_t r : ReadBy(op)) {
      if (s.process_of[r] != s.process) send[s.process_of[r]].insert(op.rank);
    }
    if (op.kind == CollectiveKind::kBarrier) {
      for (int64_t q = 0; q < s.num_processes; ++q) {
        if (q != s.process && !s.devices_of_process[q].empty()) peers.insert(q);
      }
    } else {
      // Every process hosting a member of this rank's group (or its permute partners).
      const std::vector<int64_t> members =
          op.pairs != nullptr ? std::vector<int64_t>{op.pairs->SourceOf(op.rank),
                                                     op.pairs->TargetOf(op.rank)}
                              : std::vector<int64_t>(op.groups->GroupOf(op.rank).begin(),
                                                     op.groups->GroupOf(op.rank).end());
      for (int64_t m : members) {
        if (m >= 0 && s.process_of[m] != s.process) peers.insert(s.process_of[m]);
      }
    }
  }
  const std::vector<int64_t> peer_list(peers.begin(), peers.end());
  if (peer_list.empty()) {
    // 4'. Everything is local.
    for (const LocalOp& op : s.posted) {
      ComputeOutput(op, [&](int64_t r, int64_t e) -> const std::byte* {
        const LocalOp& src = s.posted[s.local_index[r]];
        return src.tuple_in.empty() ? src.in.data : src.tuple_in[e].data;
      });
    }
    return OkStatus();
  }

  std::unique_lock<std::mutex> lock(MpiMutex());
  const std::string label = StrCat(first.Label(), " over ", GroupText(first, s));
  auto timeout_error = [&](const PollResult& r, std::string_view waiting_for,
                           const std::vector<int64_t>& request_peer) -> Status {
    if (r.kind == PollResult::kAborted) return r.abort;
    std::set<int64_t> missing;
    for (int i : r.pending) missing.insert(request_peer[i]);
    std::vector<std::string> names;
    for (int64_t q : missing) names.push_back(s.ProcessText(q));
    if (r.kind == PollResult::kLeft) {
      return FailedPrecondition(label, ": ", s.ProcessText(r.left_process),
                                " finished its program without joining call #", k,
                                " (waiting on ", s.ProcessText(s.process), ")");
    }
    return DeadlineExceeded(label, ": timed out after ", s.options.timeout.count(), " ms on ",
                            s.ProcessText(s.process), " waiting for ", StrJoin(names, ", "),
                            " ", waiting_for, ". Every process must make the same collective "
                            "calls in the same order; a process that died or hangs shows in "
                            "mpirun's messages");
  };

  // 3. Signatures with every peer.
  Signature mine;
  mine.call = k;
  mine.hash = first.Hash();
  const std::string text = first.Describe(s.options.device_ids);
  std::memcpy(mine.text, text.data(), std::min(text.size(), kTextBytes - 1));
  std::vector<Signature> theirs(peer_list.size());
  std::vector<MPI_Request> reqs;
  std::vector<int64_t> request_peer;
  for (size_t i = 0; i < peer_list.size(); ++i) {
    reqs.emplace_back();
    request_peer.push_back(peer_list[i]);
    MPI_Irecv(&theirs[i], sizeof(Signature), MPI_BYTE, static_cast<int>(peer_list[i]),
              kSignatureTag, World(), &reqs.back());
  }
  for (int64_t q : peer_list) {
    reqs.emplace_back();
    request_peer.push_back(q);
    MPI_Isend(&mine, sizeof(Signature), MPI_BYTE, static_cast<int>(q), kSignatureTag, World(),
              &reqs.back());
  }
  PollResult pr = PollAll(lock, reqs, s.options.timeout, request_peer);
  if (pr.kind != PollResult::kDone) return Fail(s, timeout_error(pr, "to arrive", request_peer));
  for (size_t i = 0; i < peer_list.size(); ++i) {
    if (theirs[i].call == k && theirs[i].hash == mine.hash) continue;
    theirs[i].text[kTextBytes - 1] = '\0';
    return Fail(s, InvalidArgument(
        "collective mismatch at call #", k, ": ", s.ProcessText(s.process), " called ", text,
        " but ", s.ProcessText(peer_list[i]), " called ", theirs[i].text,
        theirs[i].call != k ? StrCat(" as its call #", theirs[i].call) : std::string(),
        "; every device of a group must make the same collective calls, in the same order, "
        "with the same shapes, dtypes and groups"));
  }

  // 4. MPI's own all-reduce when each process holds one whole group's share: reduce locally in
  // group order, then MPI_Iallreduce over the group's processes.
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
      if (count > INT32_MAX) return Fail(s, Unimplemented(label, ": more than 2^31-1 elements"));
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
        if (roll.kind == PollResult::kAborted) return Fail(s, roll.abort);
        pr.pending.clear();
        for (int i : roll.pending) {
          if (static_cast<size_t>(i) < receives) pr.pending.push_back(i);
        }
        return Fail(s, timeout_error(pr, "inside MPI_Iallreduce (they did not answer a roll call)",
                                     request_peer));
      }
      if (pr.kind != PollResult::kDone) return Fail(s, timeout_error(pr, "", request_peer));
      for (int64_t i = 1; i < num_local; ++i) {
        std::memcpy(s.posted[i].out.data, out0, static_cast<size_t>(first.InBytes()));
      }
      return OkStatus();
    }
  }

  // 5. Inputs: one message per (rank, peer) that reads it, in ascending rank order both ways.
  reqs.clear();
  request_peer.clear();
  const int64_t bytes = first.SendBytes();
  if (bytes > INT32_MAX) {
    return Fail(s, Unimplemented(label, ": ", bytes, " bytes per device do not fit one MPI "
                                 "message (at most 2^31-1); split the array"));
  }
  for (const auto& [q, ranks] : recv) {
    for (int64_t r : ranks) {
      std::vector<std::byte>& buf = s.inbox[r];
      buf.resize(static_cast<size_t>(bytes));
      reqs.emplace_back();
      request_peer.push_back(q);
      MPI_Irecv(buf.data(), static_cast<int>(bytes), MPI_BYTE, static_cast<int>(q), kDataTag,
                World(), &reqs.back());
    }
  }
  for (const auto& [q, ranks] : send) {
    for (int64_t r : ranks) {
      const LocalOp& op = s.posted[s.local_index[r]];
      if (op.tuple_in.empty()) {
        reqs.emplace_back();
        request_peer.push_back(q);
        MPI_Isend(op.in.data, static_cast<int>(bytes), MPI_BYTE, static_cast<int>(q), kDataTag,
                  World(), &reqs.back());
        continue;
      }
      // Tuple operands are separate arrays: send them as one message.
      std::vector<std::byte>& staged = s.inbox[-2 - r];
      staged.resize(static_cast<size_t>(bytes));
      const int64_t each = op.InBytes();
      for (size_t e = 0; e < op.tuple_in.size(); ++e) {
        std::memcpy(staged.data() + e * each, op.tuple_in[e].data, static_cast<size_t>(each));
      }
      reqs.emplace_back();
      request_peer.push_back(q);
      MPI_Isend(staged.data(), static_cast<int>(bytes), MPI_BYTE, static_cast<int>(q), kDataTag,
                World(), &reqs.back());
    }
  }
  pr = PollAll(lock, reqs, s.options.timeout, request_peer);
  if (pr.kind != PollResult::kDone) {
    return Fail(s, timeout_error(pr, "to exchange the inputs", request_peer));
  }
  lock.unlock();

  // 6. Outputs, from local inputs and received ones.
  const int64_t each = first.InBytes();
  for (const LocalOp& op : s.posted) {
    ComputeOutput(op, [&](int64_t r, int64_t e) -> const std::byte* {
      if (s.process_of[r] != s.process) return s.inbox[r].data() + e * each;
      const LocalOp& src = s.posted[s.local_index[r]];
      return src.tuple_in.empty() ? src.in.data : src.tuple_in[e].data;
    });
  }
  return OkStatus();
}

}  // namespace xs::mpi
