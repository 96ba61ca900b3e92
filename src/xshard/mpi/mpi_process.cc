// MPI start-up and shutdown, the process-wide lock and abort messages, the bounded polling wait,
// and the process-level transfers around a run (inputs from rank 0, outputs to everyone, each
// run's outcome).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>

#include "xshard/mpi/mpi_internal.h"
#include "xshard/mpi/mpi_process.h"

namespace xs::mpi {
namespace {

struct Process {
  std::mutex mu;  // every MPI call
  bool initialized = false;
  MPI_Comm world = MPI_COMM_NULL;
  int rank = 0, size = 1;
  // Abort / outcome payloads stay alive until MPI is done with them.
  std::deque<std::string> sent;
  bool abort_sent = false;
  Status remote_abort;
  Status broken;
};

Process& P() {
  static Process* p = new Process;  // never destroyed: device threads may outlive main
  return *p;
}

// Status <-> "code:message" for abort and outcome messages.
std::string Encode(const Status& s) {
  return StrCat(static_cast<int>(s.code()), ":", s.message());
}
Status Decode(const std::string& text, std::string_view prefix) {
  const size_t colon = text.find(':');
  int code = 0;
  if (colon != std::string::npos) code = std::atoi(text.substr(0, colon).c_str());
  if (code == 0) return OkStatus();
  return Status(static_cast<StatusCode>(code),
                StrCat(prefix, colon == std::string::npos ? text : text.substr(colon + 1)));
}

// Receives a pending message of `tag` from `source` (already probed) as text.
std::string ReceiveText(int source, int tag) {
  MPI_Status st;
  MPI_Probe(source, tag, P().world, &st);
  int count = 0;
  MPI_Get_count(&st, MPI_CHAR, &count);
  std::string text(static_cast<size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, source, tag, P().world, MPI_STATUS_IGNORE);
  return text;
}

// Checks for an abort message from any process; records it as the remote abort.
bool ProbeAbort() {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, P().world, &flag, &st);
  if (!flag) return false;
  const std::string text = ReceiveText(st.MPI_SOURCE, kAbortTag);
  if (P().remote_abort.ok()) {
    P().remote_abort = Decode(text, StrCat("process ", st.MPI_SOURCE, ": "));
    if (P().remote_abort.ok()) P().remote_abort = Internal("process ", st.MPI_SOURCE, " aborted");
  }
  return true;
}

}  // namespace

bool BuiltWithMpi() { return true; }

bool LaunchedByMpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    const char* e = std::getenv(v);
    if (e != nullptr && *e != '\0') return true;
  }
  return false;
}

Status Initialize() {
  Process& p = P();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.initialized) return OkStatus();
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      return Unavailable("MPI_Init_thread failed; start the program with mpirun");
    }
    if (provided < MPI_THREAD_SERIALIZED) {
      return Unavailable("the MPI library gives thread level ", provided,
                         " but xshard's device threads need MPI_THREAD_SERIALIZED (",
                         static_cast<int>(MPI_THREAD_SERIALIZED), ")");
    }
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &p.world);
  // Errors come back as codes (and become Status) instead of aborting the job.
  MPI_Comm_set_errhandler(p.world, MPI_ERRORS_RETURN);
  MPI_Comm_rank(p.world, &p.rank);
  MPI_Comm_size(p.world, &p.size);
  p.initialized = true;
  return OkStatus();
}

bool Initialized() {
  std::lock_guard<std::mutex> lock(P().mu);
  return P().initialized;
}

int64_t ProcessRank() { return P().rank; }
int64_t ProcessCount() { return P().size; }

void Finalize() {
  Process& p = P();
  std::lock_guard<std::mutex> lock(p.mu);
  if (!p.initialized || !p.broken.ok() || p.abort_sent || !p.remote_abort.ok()) return;
  MPI_Comm_free(&p.world);
  MPI_Finalize();
  p.initialized = false;
}

Status BrokenReason() {
  std::lock_guard<std::mutex> lock(P().mu);
  return P().broken;
}

void MarkBroken(const Status& reason) {
  std::lock_guard<std::mutex> lock(P().mu);
  if (P().broken.ok() && !reason.ok()) P().broken = reason;
}

MPI_Comm World() { return P().world; }
std::mutex& MpiMutex() { return P().mu; }

std::string ProcessName(int64_t process, const std::vector<int64_t>& devices) {
  return StrCat("process ", process, " (device", devices.size() == 1 ? " " : "s ",
                StrJoin(devices, ","), ")");
}

void SendAbortToAll(const Status& reason) {
  Process& p = P();
  std::lock_guard<std::mutex> lock(p.mu);
  if (!p.initialized || p.abort_sent) return;
  p.abort_sent = true;
  if (p.broken.ok()) p.broken = reason;
  // A peer that sent the abort we are reacting to need not hear it back, but it does no harm.
  p.sent.push_back(Encode(reason));
  const std::string& text = p.sent.back();
  for (int q = 0; q < p.size; ++q) {
    if (q == p.rank) continue;
    MPI_Request r;
    MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, q, kAbortTag, p.world, &r);
    MPI_Request_free(&r);
  }
}

Status RemoteAbort() {
  std::lock_guard<std::mutex> lock(P().mu);
  return P().remote_abort;
}

PollResult PollAll(std::unique_lock<std::mutex>& mpi_lock, std::vector<MPI_Request>& requests,
                   std::chrono::milliseconds timeout, const std::vector<int64_t>& peers) {
  PollResult result;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  auto pending = [&]() {
    std::vector<int> out;
    for (size_t i = 0; i < requests.size(); ++i) {
      int flag = 1;
      if (requests[i] != MPI_REQUEST_NULL) MPI_Test(&requests[i], &flag, MPI_STATUS_IGNORE);
      if (!flag) out.push_back(static_cast<int>(i));
    }
    return out;
  };
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return result;
    if (!P().remote_abort.ok() || ProbeAbort()) {
      result.kind = PollResult::kAborted;
      result.abort = P().remote_abort;
      return result;
    }
    // A peer we still wait for that has sent its run outcome will not join this call. Its earlier
    // messages travel ahead of the outcome, so test once more before concluding.
    for (size_t i = 0; i < peers.size() && i < requests.size(); ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      int flag = 0;
      MPI_Iprobe(static_cast<int>(peers[i]), kOutcomeTag, P().world, &flag, MPI_STATUS_IGNORE);
      if (!flag) continue;
      MPI_Test(&requests[i], &flag, MPI_STATUS_IGNORE);
      if (flag) continue;
      result.kind = PollResult::kLeft;
      result.left_process = peers[i];
      result.pending = pending();
      return result;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      result.kind = PollResult::kTimeout;
      result.pending = pending();
      return result;
    }
    // Large messages move in fragments that advance only inside MPI calls, so poll with a yield
    // for the first 5 ms (measured: sleeping 20 us between polls made a 1 MiB all-reduce on 2
    // processes 6x slower than MPI_Allreduce), then sleep 50 us, and after 100 ms 500 us, so that
    // waiting processes leave the cores to the ones computing.
    mpi_lock.unlock();
    const auto waited = now - start;
    if (waited < std::chrono::milliseconds(5)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(
          std::chrono::microseconds(waited < std::chrono::milliseconds(100) ? 50 : 500));
    }
    mpi_lock.lock();
  }
}

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
  const std::string text = Encode(status);
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
  XS_RETURN_IF_ERROR(Decode(text, prefix));
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

// Sends `blob` to every process in `to` and receives one blob from every process in `from`
// (size first, then bytes), bounded by `timeout`. `what` names the transfer in errors.
StatusOr<std::map<int64_t, std::vector<std::byte>>> ExchangeBlobs(
    const std::vector<std::byte>& blob, const std::vector<int64_t>& to,
    const std::vector<int64_t>& from, std::chrono::milliseconds timeout, std::string_view what) {
  std::unique_lock<std::mutex> lock(P().mu);
  XS_RETURN_IF_ERROR(P().broken);
  const int64_t size = static_cast<int64_t>(blob.size());
  if (size > INT32_MAX) {
    return Unimplemented(what, ": ", size, " bytes do not fit one MPI message (at most 2^31-1)");
  }
  std::vector<int64_t> sizes(from.size(), -1);
  std::vector<MPI_Request> reqs;
  for (size_t i = 0; i < from.size(); ++i) {
    reqs.emplace_back();
    MPI_Irecv(&sizes[i], 1, MPI_INT64_T, static_cast<int>(from[i]), kSizeTag, P().world,
              &reqs.back());
  }
  for (int64_t q : to) {
    reqs.emplace_back();
    MPI_Isend(&size, 1, MPI_INT64_T, static_cast<int>(q), kSizeTag, P().world, &reqs.back());
  }
  auto fail = [&](const PollResult& r) -> Status {
    if (r.kind == PollResult::kAborted) return r.abort;
    std::vector<int64_t> missing;
    for (int i : r.pending) {
      if (i < static_cast<int>(from.size())) missing.push_back(from[i]);
    }
    Status e = DeadlineExceeded(what, ": timed out after ", timeout.count(), " ms on process ",
                                P().rank, " waiting for process(es) ", StrJoin(missing, ","),
                                " (did it die or stop early? see mpirun's messages)");
    if (P().broken.ok()) P().broken = e;
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
              kBlobTag, P().world, &reqs.back());
  }
  for (int64_t q : to) {
    reqs.emplace_back();
    MPI_Isend(blob.data(), static_cast<int>(size), MPI_BYTE, static_cast<int>(q), kBlobTag,
              P().world, &reqs.back());
  }
  r = PollAll(lock, reqs, timeout, {});
  if (r.kind != PollResult::kDone) return fail(r);
  return got;
}

std::vector<int64_t> Others() {
  std::vector<int64_t> out;
  for (int64_t q = 0; q < P().size; ++q) {
    if (q != P().rank) out.push_back(q);
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
  XS_ASSIGN_OR_RETURN(auto got, ExchangeBlobs(blob, to, from, timeout,
                                              StrCat("the inputs from process ", root)));
  if (is_root) return root_status;
  XS_ASSIGN_OR_RETURN(auto groups, Deserialize(got[root], StrCat("process ", root, ": ")));
  arrays = std::move(groups[0]);
  return OkStatus();
}

Status ShareArrays(const std::vector<int64_t>& owner, std::vector<std::vector<Array>>& per_rank,
                   std::chrono::milliseconds timeout) {
  XS_RETURN_IF_ERROR(Initialize());
  std::vector<std::vector<const Array*>> mine;
  std::vector<int64_t> peers_set;
  for (size_t r = 0; r < owner.size(); ++r) {
    if (owner[r] != ProcessRank()) continue;
    mine.emplace_back();
    for (const Array& a : per_rank[r]) mine.back().push_back(&a);
  }
  std::vector<int64_t> peers;
  for (int64_t q : Others()) {
    if (std::find(owner.begin(), owner.end(), q) != owner.end()) peers.push_back(q);
  }
  const std::vector<std::byte> blob = Serialize(mine, OkStatus());
  XS_ASSIGN_OR_RETURN(auto got, ExchangeBlobs(blob, Others(), peers, timeout,
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
  const std::string text = Encode(local);
  const std::vector<int64_t> others = Others();
  std::unique_lock<std::mutex> lock(P().mu);
  std::vector<std::string> got(others.size(), std::string(4096, '\0'));
  std::vector<MPI_Request> reqs;
  for (size_t i = 0; i < others.size(); ++i) {
    reqs.emplace_back();
    MPI_Irecv(got[i].data(), 4096, MPI_CHAR, static_cast<int>(others[i]), kOutcomeTag,
              P().world, &reqs.back());
  }
  const std::string clipped = text.substr(0, 4095);
  for (int64_t q : others) {
    reqs.emplace_back();
    MPI_Isend(clipped.data(), static_cast<int>(clipped.size()), MPI_CHAR, static_cast<int>(q),
              kOutcomeTag, P().world, &reqs.back());
  }
  const PollResult r = PollAll(lock, reqs, timeout, {});
  if (r.kind == PollResult::kAborted) return local.ok() ? r.abort : local;
  if (r.kind != PollResult::kDone) {
    std::vector<int64_t> missing;
    for (int i : r.pending) {
      if (i < static_cast<int>(others.size())) missing.push_back(others[i]);
    }
    Status e = DeadlineExceeded("the end of the run: timed out after ", timeout.count(),
                                " ms on process ", P().rank, " waiting for process(es) ",
                                StrJoin(missing, ","), " to finish (did it die or hang? see "
                                "mpirun's messages)");
    if (P().broken.ok()) P().broken = e;
    return local.ok() ? e : local;
  }
  if (!local.ok()) return local;
  for (size_t i = 0; i < others.size(); ++i) {
    Status s = Decode(got[i].c_str(), StrCat("process ", others[i], ": "));
    if (!s.ok()) return s;
  }
  return OkStatus();
}

}  // namespace xs::mpi
