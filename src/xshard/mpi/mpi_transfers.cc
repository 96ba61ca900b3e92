// The process-level transfers around a run: the inputs rank 0 sends to everyone, every process's
// device outputs to every process, and each run's outcome; each one a set of non-blocking
// messages polled with a timeout.
#include <algorithm>
#include <cstring>
#include <map>

#include "xshard/mpi/mpi_internal.h"
#include "xshard/mpi/mpi_process.h"

namespace xs::mpi {
namespace {

// Serialized arrays: [status text size][status text][count] then per array
// [dtype][rank][dims...][bytes]; all int64.
void Put(std::vector<std::byte>& out, int64_t v) {
  const auto* b = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), b, b + sizeof(v));
}

std::vector<std::byte> Serialize(const std::vector<std::vector<const Array*>>& groups,
                                 const Status& status) {
  std::vector<std::byte> out;
  const std::string text = EncodeStatus(status);
  Put(out, static_cast<int64_t>(text.size()));
  const auto* t = reinterpret_cast<const std::byte*>(text.data());
  out.insert(out.end(), t, t + text.size());
  Put(out, static_cast<int64_t>(groups.size()));
  for (const auto& g : groups) {
    Put(out, static_cast<int64_t>(g.size()));
    for (const Array* a : g) {
      Put(out, static_cast<int64_t>(a->dtype()));
      Put(out, static_cast<int64_t>(a->dims().size()));
      for (int64_t d : a->dims()) Put(out, d);
      out.insert(out.end(), a->data(), a->data() + a->byte_size());
    }
  }
  return out;
}

struct Reader {
  const std::vector<std::byte>& in;
  size_t at = 0;
  int64_t Get() {
    int64_t v = 0;
    std::memcpy(&v, in.data() + at, sizeof(v));
    at += sizeof(v);
    return v;
  }
};

StatusOr<std::vector<std::vector<Array>>> Deserialize(const std::vector<std::byte>& in,
                                                      std::string_view prefix) {
  Reader r{in};
  const int64_t n = r.Get();
  std::string text(reinterpret_cast<const char*>(in.data() + r.at), static_cast<size_t>(n));
  r.at += static_cast<size_t>(n);
  XS_RETURN_IF_ERROR(DecodeStatus(text, prefix));
  std::vector<std::vector<Array>> groups(static_cast<size_t>(r.Get()));
  for (auto& g : groups) {
    const int64_t count = r.Get();
    for (int64_t i = 0; i < count; ++i) {
      const auto dtype = static_cast<DType>(r.Get());
      std::vector<int64_t> dims(static_cast<size_t>(r.Get()));
      for (int64_t& d : dims) d = r.Get();
      Array a(dtype, std::move(dims));
      std::memcpy(a.data(), in.data() + r.at, static_cast<size_t>(a.byte_size()));
      r.at += static_cast<size_t>(a.byte_size());
      g.push_back(std::move(a));
    }
  }
  return groups;
}

// Sends blobs[i] to process to[i] and receives one blob from every process in `from`
// (size first, then bytes), bounded by `timeout`. `what` names the transfer in errors.
StatusOr<std::map<int64_t, std::vector<std::byte>>> ExchangeBlobs(
    const std::vector<const std::vector<std::byte>*>& blobs, const std::vector<int64_t>& to,
    const std::vector<int64_t>& from, std::chrono::milliseconds timeout, std::string_view what) {
  std::unique_lock<std::mutex> lock(MpiMutex());
  XS_RETURN_IF_ERROR(BrokenLocked());
  std::vector<int64_t> out_sizes;
  for (const auto* blob : blobs) {
    out_sizes.push_back(static_cast<int64_t>(blob->size()));
    if (out_sizes.back() > INT32_MAX) {
      return Unimplemented(what, ": ", out_sizes.back(),
                           " bytes do not fit one MPI message (at most 2^31-1)");
    }
  }
  std::vector<int64_t> sizes(from.size(), -1);
  std::vector<MPI_Request> reqs;
  for (size_t i = 0; i < from.size(); ++i) {
    reqs.emplace_back();
    MPI_Irecv(&sizes[i], 1, MPI_INT64_T, static_cast<int>(from[i]), kSizeTag, World(),
              &reqs.back());
  }
  for (size_t i = 0; i < to.size(); ++i) {
    reqs.emplace_back();
    MPI_Isend(&out_sizes[i], 1, MPI_INT64_T, static_cast<int>(to[i]), kSizeTag, World(),
              &reqs.back());
  }
  auto fail = [&](const PollResult& r) -> Status {
    if (r.kind == PollResult::kAborted) return r.abort;
    std::vector<int64_t> missing;
    for (int i : r.pending) {
      if (i < static_cast<int>(from.size())) missing.push_back(from[i]);
    }
    Status e = DeadlineExceeded(what, ": timed out after ", timeout.count(), " ms on process ",
                                ProcessRank(), " waiting for process(es) ", StrJoin(missing, ","),
                                " (did it die or stop early? see mpirun's messages)");
    MarkBrokenLocked(e);
    return e;
  };
  PollResult r = PollAll(lock, reqs, timeout, {});
  if (r.kind != PollResult::kDone) return fail(r);
  std::map<int64_t, std::vector<std::byte>> got;
  reqs.clear();
  for (size_t i = 0; i < from.size(); ++i) {
    auto& buf = got[from[i]];
    buf.resize(static_cast<size_t>(sizes[i]));
    reqs.emplace_back();
    MPI_Irecv(buf.data(), static_cast<int>(sizes[i]), MPI_BYTE, static_cast<int>(from[i]),
              kBlobTag, World(), &reqs.back());
  }
  for (size_t i = 0; i < to.size(); ++i) {
    reqs.emplace_back();
    MPI_Isend(blobs[i]->data(), static_cast<int>(out_sizes[i]), MPI_BYTE,
              static_cast<int>(to[i]), kBlobTag, World(), &reqs.back());
  }
  r = PollAll(lock, reqs, timeout, {});
  if (r.kind != PollResult::kDone) return fail(r);
  return got;
}

std::vector<int64_t> Others() {
  std::vector<int64_t> out;
  for (int64_t q = 0; q < ProcessCount(); ++q) {
    if (q != ProcessRank()) out.push_back(q);
  }
  return out;
}

}  // namespace

Status BroadcastArrays(std::vector<Array>& arrays, const Status& root_status, int64_t root,
                       std::chrono::milliseconds timeout) {
  XS_RETURN_IF_ERROR(Initialize());
  const bool is_root = ProcessRank() == root;
  std::vector<std::byte> blob;
  if (is_root) {
    std::vector<std::vector<const Array*>> one(1);
    for (const Array& a : arrays) one[0].push_back(&a);
    blob = Serialize(one, root_status);
  }
  const std::vector<int64_t> to = is_root ? Others() : std::vector<int64_t>{};
  const std::vector<int64_t> from = is_root ? std::vector<int64_t>{} : std::vector<int64_t>{root};
  const std::vector<const std::vector<std::byte>*> blobs(to.size(), &blob);
  XS_ASSIGN_OR_RETURN(auto got, ExchangeBlobs(blobs, to, from, timeout,
                                              StrCat("the inputs from process ", root)));
  if (is_root) return root_status;
  XS_ASSIGN_OR_RETURN(auto groups, Deserialize(got[root], StrCat("process ", root, ": ")));
  arrays = std::move(groups[0]);
  return OkStatus();
}

Status ScatterArrays(const std::vector<int64_t>& owner, std::vector<std::vector<Array>>& per_rank,
                     const Status& root_status, int64_t root, std::chrono::milliseconds timeout) {
  XS_RETURN_IF_ERROR(Initialize());
  const bool is_root = ProcessRank() == root;
  std::vector<std::vector<std::byte>> blobs;
  std::vector<int64_t> to;
  if (is_root) {
    for (int64_t q : Others()) {
      std::vector<std::vector<const Array*>> theirs;
      for (size_t r = 0; r < owner.size(); ++r) {
        if (owner[r] != q) continue;
        theirs.emplace_back();
        if (root_status.ok()) {
          for (const Array& a : per_rank[r]) theirs.back().push_back(&a);
        }
      }
      blobs.push_back(Serialize(theirs, root_status));
      to.push_back(q);
    }
  }
  std::vector<const std::vector<std::byte>*> pointers;
  for (const auto& b : blobs) pointers.push_back(&b);
  const std::vector<int64_t> from = is_root ? std::vector<int64_t>{} : std::vector<int64_t>{root};
  XS_ASSIGN_OR_RETURN(auto got, ExchangeBlobs(pointers, to, from, timeout,
                                              StrCat("the input shards from process ", root)));
  if (is_root) {
    XS_RETURN_IF_ERROR(root_status);
    // Only this process's own shards stay.
    for (size_t r = 0; r < owner.size(); ++r) {
      if (owner[r] != root) per_rank[r].clear();
    }
    return OkStatus();
  }
  XS_ASSIGN_OR_RETURN(auto groups, Deserialize(got[root], StrCat("process ", root, ": ")));
  size_t next = 0;
  for (size_t r = 0; r < owner.size(); ++r) {
    if (owner[r] == ProcessRank() && next < groups.size()) per_rank[r] = std::move(groups[next++]);
  }
  return OkStatus();
}

Status ShareArrays(const std::vector<int64_t>& owner, std::vector<std::vector<Array>>& per_rank,
                   std::chrono::milliseconds timeout, std::optional<int64_t> only_to) {
  XS_RETURN_IF_ERROR(Initialize());
  std::vector<std::vector<const Array*>> mine;
  for (size_t r = 0; r < owner.size(); ++r) {
    if (owner[r] != ProcessRank()) continue;
    mine.emplace_back();
    for (const Array& a : per_rank[r]) mine.back().push_back(&a);
  }
  const bool receives = !only_to || *only_to == ProcessRank();
  std::vector<int64_t> peers;
  for (int64_t q : Others()) {
    if (receives && std::find(owner.begin(), owner.end(), q) != owner.end()) peers.push_back(q);
  }
  std::vector<int64_t> to;
  // A process without devices in the run sends nothing (nobody waits for it).
  if (!mine.empty()) {
    for (int64_t q : Others()) {
      if (!only_to || *only_to == q) to.push_back(q);
    }
  }
  const std::vector<std::byte> blob = to.empty() ? std::vector<std::byte>{} : Serialize(mine, OkStatus());
  const std::vector<const std::vector<std::byte>*> blobs(to.size(), &blob);
  XS_ASSIGN_OR_RETURN(auto got, ExchangeBlobs(blobs, to, peers, timeout,
                                              "sharing the devices' outputs"));
  for (int64_t q : peers) {
    XS_ASSIGN_OR_RETURN(auto groups, Deserialize(got[q], StrCat("process ", q, ": ")));
    size_t next = 0;
    for (size_t r = 0; r < owner.size(); ++r) {
      if (owner[r] == q && next < groups.size()) per_rank[r] = std::move(groups[next++]);
    }
  }
  return OkStatus();
}

Status AgreeOnOutcome(const Status& local, std::chrono::milliseconds timeout) {
  XS_RETURN_IF_ERROR(Initialize());
  const std::string text = EncodeStatus(local);
  const std::vector<int64_t> others = Others();
  std::unique_lock<std::mutex> lock(MpiMutex());
  std::vector<std::string> got(others.size(), std::string(4096, '\0'));
  std::vector<MPI_Request> reqs;
  for (size_t i = 0; i < others.size(); ++i) {
    reqs.emplace_back();
    MPI_Irecv(got[i].data(), 4096, MPI_CHAR, static_cast<int>(others[i]), kOutcomeTag,
              World(), &reqs.back());
  }
  const std::string clipped = text.substr(0, 4095);
  for (int64_t q : others) {
    reqs.emplace_back();
    MPI_Isend(clipped.data(), static_cast<int>(clipped.size()), MPI_CHAR, static_cast<int>(q),
              kOutcomeTag, World(), &reqs.back());
  }
  const PollResult r = PollAll(lock, reqs, timeout, {});
  if (r.kind == PollResult::kAborted) return local.ok() ? r.abort : local;
  if (r.kind != PollResult::kDone) {
    std::vector<int64_t> missing;
    for (int i : r.pending) {
      if (i < static_cast<int>(others.size())) missing.push_back(others[i]);
    }
    Status e = DeadlineExceeded("the end of the run: timed out after ", timeout.count(),
                                " ms on process ", ProcessRank(), " waiting for process(es) ",
                                StrJoin(missing, ","), " to finish (did it die or hang? see "
                                "mpirun's messages)");
    MarkBrokenLocked(e);
    return local.ok() ? e : local;
  }
  if (!local.ok()) return local;
  for (size_t i = 0; i < others.size(); ++i) {
    Status s = DecodeStatus(got[i].c_str(), StrCat("process ", others[i], ": "));
    if (!s.ok()) return s;
  }
  return OkStatus();
}

}  // namespace xs::mpi
