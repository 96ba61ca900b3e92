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

// Appends local rank `op`'s input (every tuple operand, in order) to `msg`.
void AppendInput(const LocalOp& op, std::vector<std::byte>& msg) {
  if (op.tuple_in.empty()) {
    msg.insert(msg.end(), op.in.data, op.in.data + op.InBytes());
    return;
  }
  for (const ConstBufferView& v : op.tuple_in) msg.insert(msg.end(), v.data, v.data + v.byte_size());
}

// A failed call's status, as is: the caller (MpiCommunicator's RunCall) marks the MPI state
// broken and tells the other processes.
Status Failed(const Status& e) { return e; }

}  // namespace

Status RunProcessCall(CommState& s, uint64_t k) {
  const int64_t num_local = static_cast<int64_t>(s.local_ranks.size());
  const LocalOp& first = s.posted[0];
  // 1. The local devices agree (as the in-process communicator's check, per process).
  for (int64_t i = 1; i < num_local; ++i) {
    const LocalOp& other = s.posted[i];
    if (SameCall(first, other)) continue;
    return Failed(InvalidArgument(
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
  const TimeoutErrorFn timeout_error = [&](const PollResult& r, std::string_view waiting_for,
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

  // 3. Signatures with every peer. Small calls (every process's inputs for one peer fit
  // options.eager_bytes) carry those inputs right after the signature: one message each way.
  const int64_t bytes = first.SendBytes();
  if (bytes > INT32_MAX) {
    return Failed(Unimplemented(label, ": ", bytes, " bytes per device do not fit one MPI "
                                 "message (at most 2^31-1); split the array"));
  }
  const int64_t eager_bytes = s.options.eager_bytes;
  const bool eager = bytes * s.options.devices_per_process <= eager_bytes;
  Signature mine;
  mine.call = k;
  mine.hash = first.Hash();
  const std::string text = first.Describe(s.options.device_ids);
  std::memcpy(mine.text, text.data(), std::min(text.size(), kTextBytes - 1));
  const size_t n_peers = peer_list.size();
  s.sig_in.resize(n_peers);
  s.sig_out.resize(n_peers);
  std::vector<MPI_Request> reqs;
  std::vector<int64_t> request_peer;
  for (size_t i = 0; i < n_peers; ++i) {
    // Room for a peer's inputs even when its call differs (it sends at most eager_bytes).
    s.sig_in[i].resize(sizeof(Signature) + static_cast<size_t>(std::max<int64_t>(0, eager_bytes)));
    reqs.emplace_back();
    request_peer.push_back(peer_list[i]);
    MPI_Irecv(s.sig_in[i].data(), static_cast<int>(s.sig_in[i].size()), MPI_BYTE,
              static_cast<int>(peer_list[i]), kSignatureTag, World(), &reqs.back());
  }
  for (size_t i = 0; i < n_peers; ++i) {
    std::vector<std::byte>& msg = s.sig_out[i];
    msg.resize(sizeof(Signature));
    std::memcpy(msg.data(), &mine, sizeof(Signature));
    if (eager && send.count(peer_list[i])) {
      for (int64_t r : send[peer_list[i]]) AppendInput(s.posted[s.local_index[r]], msg);
    }
    reqs.emplace_back();
    request_peer.push_back(peer_list[i]);
    MPI_Isend(msg.data(), static_cast<int>(msg.size()), MPI_BYTE,
              static_cast<int>(peer_list[i]), kSignatureTag, World(), &reqs.back());
  }
  PollResult pr = PollAll(lock, reqs, s.options.timeout, request_peer);
  if (pr.kind != PollResult::kDone) return Failed(timeout_error(pr, "to arrive", request_peer));
  for (size_t i = 0; i < n_peers; ++i) {
    Signature theirs;
    std::memcpy(&theirs, s.sig_in[i].data(), sizeof(Signature));
    if (theirs.call == k && theirs.hash == mine.hash) continue;
    theirs.text[kTextBytes - 1] = '\0';
    return Failed(InvalidArgument(
        "collective mismatch at call #", k, ": ", s.ProcessText(s.process), " called ", text,
        " but ", s.ProcessText(peer_list[i]), " called ", theirs.text,
        theirs.call != k ? StrCat(" as its call #", theirs.call) : std::string(),
        "; every device of a group must make the same collective calls, in the same order, "
        "with the same shapes, dtypes and groups"));
  }
  // Where each remote rank's input is now.
  std::map<int64_t, const std::byte*> remote;
  if (eager) {
    for (size_t i = 0; i < n_peers; ++i) {
      if (!recv.count(peer_list[i])) continue;
      size_t at = sizeof(Signature);
      for (int64_t r : recv[peer_list[i]]) {
        remote[r] = s.sig_in[i].data() + at;
        at += static_cast<size_t>(bytes);
      }
    }
  } else {
    // 4. MPI's own all-reduce / all-gather when it applies.
    if (std::optional<Status> done = TryMpiCollective(s, k, lock, label, timeout_error)) {
      return Failed(*done);
    }
    // 5. Inputs: one message per (rank, peer) that reads it, in ascending rank order both ways.
    reqs.clear();
    request_peer.clear();
    for (const auto& [q, ranks] : recv) {
      for (int64_t r : ranks) {
        std::vector<std::byte>& buf = s.inbox[r];
        buf.resize(static_cast<size_t>(bytes));
        remote[r] = buf.data();
        reqs.emplace_back();
        request_peer.push_back(q);
        MPI_Irecv(buf.data(), static_cast<int>(bytes), MPI_BYTE, static_cast<int>(q), kDataTag,
                  World(), &reqs.back());
      }
    }
    for (const auto& [q, ranks] : send) {
      for (int64_t r : ranks) {
        const LocalOp& op = s.posted[s.local_index[r]];
        const std::byte* data = op.in.data;
        if (!op.tuple_in.empty()) {
          // Tuple operands are separate arrays: send them as one message.
          std::vector<std::byte>& staged = s.inbox[-2 - r];
          staged.clear();
          AppendInput(op, staged);
          data = staged.data();
        }
        reqs.emplace_back();
        request_peer.push_back(q);
        MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, static_cast<int>(q), kDataTag,
                  World(), &reqs.back());
      }
    }
    pr = PollAll(lock, reqs, s.options.timeout, request_peer);
    if (pr.kind != PollResult::kDone) {
      return Failed(timeout_error(pr, "to exchange the inputs", request_peer));
    }
  }
  lock.unlock();

  // 6. Outputs, from local inputs and received ones.
  const int64_t each = first.InBytes();
  for (const LocalOp& op : s.posted) {
    ComputeOutput(op, [&](int64_t r, int64_t e) -> const std::byte* {
      if (s.process_of[r] != s.process) return remote.at(r) + e * each;
      const LocalOp& src = s.posted[s.local_index[r]];
      return src.tuple_in.empty() ? src.in.data : src.tuple_in[e].data;
    });
  }
  return OkStatus();
}

}  // namespace xs::mpi
