// CommunicatorFactory: the transport a Client's collectives go through, chosen where the client is
// made: threads of this process (InProcessCommunicators(), the default, here), devices spread over
// MPI processes, virtual devices sharing one GPU, NCCL (platform/). The Client asks it for one
// Communicator per run's device list and, when its devices live in several processes, for the
// processes' agreement on how a run ended and for the other processes' results.
#ifndef XSHARD_RUNTIME_COMMUNICATOR_FACTORY_H_
#define XSHARD_RUNTIME_COMMUNICATOR_FACTORY_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/wait.h"
#include "xshard/core/array.h"

namespace xs {

class ComputeGate;

// What the Client asks for: one communicator over a run's devices.
struct CommunicatorSpec {
  std::vector<int64_t> device_ids;  // the client device of every rank
  int64_t devices_per_process = 0;  // process p hosts devices p*L .. p*L+L-1 (one process: all)
  std::chrono::milliseconds timeout{30000};  // bound of every wait
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kDirect;
  WaitPolicy wait_policy;
  int64_t eager_bytes = 64 * 1024;       // ClientOptions::eager_bytes
  const ComputeGate* compute_gate = nullptr;  // the client's; not owned
};

class CommunicatorFactory {
 public:
  virtual ~CommunicatorFactory() = default;
  // "in-process", "mpi", ...: named in messages.
  virtual std::string_view name() const = 0;
  // Whether devices may live in several processes (true under mpirun even with one process).
  virtual bool distributed() const { return false; }
  // Whether the communicators follow spec.algorithm (direct, ring, recursive doubling).
  virtual bool honours_algorithm() const { return false; }
  // Starts the transport; Client::Create calls it once, before process_count().
  virtual Status Start() { return OkStatus(); }
  // The processes the devices are spread over, and this one's index (1 and 0 unless distributed).
  virtual int64_t process_count() const { return 1; }
  virtual int64_t process_rank() const { return 0; }
  // A communicator with one rank per entry of spec.device_ids (the client keeps it per device
  // list and Reset()s it before each run).
  virtual StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorSpec& spec) = 0;
  // The first failure `comm` (made by this factory) saw since its last Reset; OK if none.
  virtual Status AbortReason(const Communicator& comm) const = 0;
  // Distributed: every process learns how the others' devices ended and returns the same status
  // (bounded by `timeout`). Otherwise `local`.
  virtual Status AgreeOnOutcome(const Status& local, std::chrono::milliseconds timeout);
  // Distributed: per_rank[r] is filled by process owner[r]; afterwards every process has all of
  // them, or with `only_to` only that process. Otherwise a no-op.
  virtual Status ShareArrays(std::span<const int64_t> owner,
                             std::vector<std::vector<Array>>& per_rank,
                             std::chrono::milliseconds timeout, std::optional<int64_t> only_to);
};

// Every device a thread of this process; collectives meet in shared memory
// (comm/inprocess_communicator.h). What a Client uses when ClientOptions::communicators is unset.
std::shared_ptr<CommunicatorFactory> InProcessCommunicators();

}  // namespace xs

#endif  // XSHARD_RUNTIME_COMMUNICATOR_FACTORY_H_
