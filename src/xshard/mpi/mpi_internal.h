// Private to the MPI layer: the process-wide MPI state (xshard's communicator, the lock every MPI
// call holds, the abort messages), the bounded polling wait, and the per-communicator state of
// MpiCommunicator (the local rendezvous and what each local device posted).
#ifndef XSHARD_MPI_MPI_INTERNAL_H_
#define XSHARD_MPI_MPI_INTERNAL_H_

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "xshard/comm/communicator.h"
#include "xshard/mpi/mpi_communicator.h"
#include "xshard/mpi/status_encoding.h"

namespace xs::mpi {

// Message tags of xshard's traffic on its duplicate of MPI_COMM_WORLD.
enum Tag : int {
  kSignatureTag = 11,  // a call's signature (who called what)
  kDataTag = 12,       // a device's input for a call
  kAbortTag = 13,      // a process failed: the reason as text
  kOutcomeTag = 14,    // how a process's part of a run ended
  kSizeTag = 15,       // byte count of the blob that follows (BroadcastArrays / ShareArrays)
  kBlobTag = 16,       // serialized arrays
  kRollCallTag = 17,   // "I am still in call k", after a collective MPI call timed out
};

// Process-wide state: xshard's communicator and the lock every MPI call is made under.
MPI_Comm World();
std::mutex& MpiMutex();

// Runs `fn`, a blocking MPI call that has no non-blocking form (communicator creation, MPI_Init's
// duplicate of MPI_COMM_WORLD, MPI_Finalize), under a watchdog: if it has not returned after
// `timeout`, the process prints "xshard (process P): error: <what> did not finish within T ms
// ..." to stderr and exits 1 (mpirun then ends the others), so that a peer that died at the
// wrong moment cannot hang it.
void Bounded(std::string_view what, std::chrono::milliseconds timeout,
             const std::function<void()>& fn);

// EncodeStatus / DecodeStatus: status_encoding.h.

// MarkBroken / BrokenReason for a caller that holds MpiMutex().
void MarkBrokenLocked(const Status& reason);
Status BrokenLocked();

// "process 1 (devices 2,3)" for a communicator's rank layout.
std::string ProcessName(int64_t process, const std::vector<int64_t>& devices);

// Polls `requests` (MPI_REQUEST_NULL entries count as done) until all complete, the timeout
// passes, an abort message arrives from another process, or the peer of a pending request
// (`peers[i]` for request i, when given) has sent its run outcome (it finished its run without
// joining). The caller holds MpiMutex(); it is released between polls.
struct PollResult {
  enum Kind { kDone, kTimeout, kAborted, kLeft } kind = kDone;
  std::vector<int> pending;  // indices of unfinished requests (kTimeout / kLeft)
  int64_t left_process = -1;
  Status abort;              // kAborted: "process P: <reason>"
};
PollResult PollAll(std::unique_lock<std::mutex>& mpi_lock, std::vector<MPI_Request>& requests,
                   std::chrono::milliseconds timeout, const std::vector<int64_t>& peers);

// Tells every other process that this one failed (once per process; later calls do nothing).
void SendAbortToAll(const Status& reason);
// The abort a peer sent (OK if none yet).
Status RemoteAbort();

// One local device's call.
struct LocalOp {
  CollectiveKind kind = CollectiveKind::kBarrier;
  const DeviceGroups* groups = nullptr;
  const PermutePairs* pairs = nullptr;
  ReductionKind reduction = ReductionKind::kSum;
  int dim0 = 0, dim1 = 0;
  ConstBufferView in;
  BufferView out;
  std::vector<ConstBufferView> tuple_in;
  std::vector<BufferView> tuple_out;
  std::string op_name;
  int64_t channel_id = 0;
  int64_t rank = 0;

  int64_t InBytes() const;     // one input array (each element of a tuple)
  int64_t SendBytes() const;   // everything this rank sends to a peer: n * InBytes for tuples
  uint64_t Hash() const;       // kind, channel, participants, dtype, dims, reducer, tuple size
  std::string Label() const;   // "psum (all-reduce, channel 3)"
  std::string Describe(const std::vector<int64_t>& device_ids) const;  // with shape and groups
};

struct CommState {
  MpiCommunicatorOptions options;
  int64_t process = 0;                 // this process's MPI rank
  int64_t num_processes = 1;
  std::vector<int64_t> process_of;     // per rank
  std::vector<int64_t> local_ranks;    // ascending
  std::vector<int64_t> local_index;    // per rank: index into local_ranks, or -1
  std::vector<std::vector<int64_t>> devices_of_process;  // the run's devices on each process

  std::mutex mu;
  std::condition_variable cv;
  std::vector<LocalOp> posted;         // per local index, the current call
  std::vector<uint64_t> calls;         // per local index, calls made
  std::vector<bool> left;
  int64_t arrived = 0;
  uint64_t completed = 0;              // process-level calls completed
  Status last_result;                  // of call `completed`
  bool aborted = false;
  Status abort_status;

  // Receive buffers per remote rank, reused across calls.
  std::map<int64_t, std::vector<std::byte>> inbox;
  // Per peer (by position in the call's peer list): the signature messages in and out, with the
  // inputs of small calls after the signature.
  std::vector<std::vector<std::byte>> sig_in, sig_out;
  // Group communicators (MPI_Comm_create_group) by the ascending process list.
  std::map<std::vector<int64_t>, MPI_Comm> group_comms;

  std::string ProcessText(int64_t process) const {
    return ProcessName(process, devices_of_process[process]);
  }
};

// The cross-process part of call `k` once every local device has posted (the driver thread).
Status RunProcessCall(CommState& s, uint64_t k);

// The error of a failed poll: `waiting_for` says what for, request_peer[i] is request i's process.
using TimeoutErrorFn = std::function<Status(const PollResult& r, std::string_view waiting_for,
                                            const std::vector<int64_t>& request_peer)>;
// Call k as one collective MPI call (mpi_native.cc) when each process holds one whole share of
// the local devices' group: an all-reduce MPI has the reducer for (MPI_Iallreduce) or an
// all-gather (MPI_Iallgather). nullopt when it does not apply. The caller holds `lock`
// (MpiMutex) and has exchanged signatures with the group's processes.
std::optional<Status> TryMpiCollective(CommState& s, uint64_t k, std::unique_lock<std::mutex>& lock,
                                       const std::string& label,
                                       const TimeoutErrorFn& timeout_error);

// Computes local rank `op.rank`'s output from every member's input: `input(r)` is rank r's input
// (element `elem` of its operands for a tuple all-to-all, else elem 0).
void ComputeOutput(const LocalOp& op,
                   const std::function<const std::byte*(int64_t rank, int64_t elem)>& input);

}  // namespace xs::mpi

#endif  // XSHARD_MPI_MPI_INTERNAL_H_
