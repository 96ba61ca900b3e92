// MPI start-up and shutdown, the process-wide lock and abort messages, and the bounded polling
// wait. The transfers around a run are in mpi_transfers.cc.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
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

}  // namespace

namespace {

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
    P().remote_abort = DecodeStatus(text, StrCat("process ", st.MPI_SOURCE, ": "));
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
  Bounded("MPI start-up (MPI_Comm_dup of MPI_COMM_WORLD)", std::chrono::milliseconds(60000),
          [&] { MPI_Comm_dup(MPI_COMM_WORLD, &p.world); });
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
  Bounded("MPI_Finalize", std::chrono::milliseconds(60000), [&] {
    MPI_Comm_free(&p.world);
    MPI_Finalize();
  });
  p.initialized = false;
}

Status BrokenReason() {
  std::lock_guard<std::mutex> lock(P().mu);
  return P().broken;
}

void MarkBroken(const Status& reason) {
  std::lock_guard<std::mutex> lock(P().mu);
  MarkBrokenLocked(reason);
}

void MarkBrokenLocked(const Status& reason) {
  if (P().broken.ok() && !reason.ok()) P().broken = reason;
}

Status BrokenLocked() { return P().broken; }

void Bounded(std::string_view what, std::chrono::milliseconds timeout,
             const std::function<void()>& fn) {
  struct Watch {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto watch = std::make_shared<Watch>();
  const std::string text(what);
  const int rank = P().rank;
  std::thread dog([watch, text, timeout, rank] {
    std::unique_lock<std::mutex> lock(watch->mu);
    if (watch->cv.wait_for(lock, timeout, [&] { return watch->done; })) return;
    std::fprintf(stderr,
                 "xshard (process %d): error: %s did not finish within %lld ms (did a process "
                 "die? see mpirun's messages); exiting\n",
                 rank, text.c_str(), static_cast<long long>(timeout.count()));
    std::fflush(stderr);
    std::_Exit(1);
  });
  fn();
  {
    std::lock_guard<std::mutex> lock(watch->mu);
    watch->done = true;
  }
  watch->cv.notify_all();
  dog.join();
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
  // A failure that follows a peer's abort need not travel: that peer told every process already,
  // and passed on it would reach them as "process P: process Q: ...".
  if (!p.remote_abort.ok()) return;
  p.sent.push_back(EncodeStatus(reason));
  const std::string& text = p.sent.back();
  for (int q = 0; q < p.size; ++q) {
    if (q == p.rank) continue;
    MPI_Request r;
    MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, q, kAbortTag, p.world, &r);
    MPI_Request_free(&r);
  }
}

Status PollRemoteAbort() {
  std::lock_guard<std::mutex> lock(P().mu);
  if (!P().initialized) return OkStatus();
  if (P().remote_abort.ok()) ProbeAbort();
  return P().remote_abort;
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
    if (P().abort_sent) {  // this process aborted meanwhile (a device failed, Ctrl-C, --timeout)
      result.kind = PollResult::kAborted;
      result.abort = P().broken;
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

}  // namespace xs::mpi
