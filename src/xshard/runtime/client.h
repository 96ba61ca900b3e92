// Client: N devices of one kind (ClientOptions::device_kind: host CPU threads by default, or GPUs;
// default 8; --devices N on the CLI, or the XSHARD_DEVICES environment variable), each with a
// persistent thread and exact memory accounting, and a communicator per run from the client's
// CommunicatorFactory (in-process by default; MPI, GPU transports: platform/). Run() executes one
// program per rank at once and turns any rank's failure into an error for every rank (no rank
// waits forever for a failed peer).
//
//   ClientOptions options;
//   options.num_devices = 4;
//   XS_ASSIGN_OR_RETURN(auto client, Client::Create(options));
//   XS_RETURN_IF_ERROR(client->RunOnAllDevices([&](int64_t rank, Communicator& comm) {
//     return comm.Barrier(CollectiveCall(rank, "hello"));
//   }));
#ifndef XSHARD_RUNTIME_CLIENT_H_
#define XSHARD_RUNTIME_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/comm/communicator.h"
#include "xshard/runtime/communicator_factory.h"
#include "xshard/runtime/device.h"
#include "xshard/runtime/device_kind.h"
#include "xshard/runtime/device_assignment.h"
#include "xshard/comm/wait.h"

namespace xs {

class ComputeGate;
class DeviceThreads;

// The device count when none is given: $XSHARD_DEVICES when set (an error unless it is a
// positive integer, naming the value), else 8.
StatusOr<int64_t> DefaultDeviceCount();

struct ClientOptions {
  int64_t num_devices = 0;  // 0: DefaultDeviceCount()
  // How long a device waits for its peers inside a collective before every device fails.
  std::chrono::milliseconds collective_timeout{30000};
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kDirect;
  int64_t device_memory_limit = 0;  // bytes per device; 0: the device kind's default
  int64_t num_cores = 0;            // 0: the cores this process may use, or XSHARD_NUM_THREADS
  std::optional<WaitPolicy> wait_policy;  // default: DefaultWaitPolicy(devices, cores)
  int64_t eager_bytes = 64 * 1024;        // see InProcessOptions::eager_bytes
  // What the devices are; null: CpuDeviceKind(). platform/platform.h picks one by name.
  std::shared_ptr<const DeviceKind> device_kind;
  // The transport of collectives; null: InProcessCommunicators(). With a distributed factory
  // (MPI: platform/platform.h's CreateMpiClient) devices are spread over processes: process p
  // hosts devices p*L .. p*L+L-1 with L = devices_per_process (0: num_devices / processes, which
  // must divide; num_devices 0: processes * L, with L = 1 when both are 0), and each process runs
  // only its own devices.
  std::shared_ptr<CommunicatorFactory> communicators;
  int64_t devices_per_process = 0;
};

class Client {
 public:
  // Validates the options (device count 1..kMaxDevices of base/limits.h, positive timeout) and starts one thread per
  // device (per device of this process when distributed, which starts the transport first).
  // Every process of a distributed client calls it with the same options.
  static StatusOr<std::unique_ptr<Client>> Create(ClientOptions options = {});
  ~Client();

  int64_t num_devices() const { return static_cast<int64_t>(devices_.size()); }
  // Devices live in several processes (an MPI client).
  bool distributed() const { return distributed_; }
  // This process's index (0 unless distributed) and the process hosting `device`.
  int64_t process_rank() const { return process_rank_; }
  int64_t ProcessOf(int64_t device) const {
    return distributed_ ? device / options_.devices_per_process : 0;
  }
  // What the devices are ("cpu", "cuda") and the transport of their collectives.
  const DeviceKind& device_kind() const { return *options_.device_kind; }
  const std::shared_ptr<const DeviceKind>& shared_device_kind() const {
    return options_.device_kind;
  }
  CommunicatorFactory& communicators() const { return *options_.communicators; }
  // Whether `device` runs in this process (always, unless distributed).
  bool IsLocal(int64_t device) const { return ProcessOf(device) == process_rank_; }
  const ClientOptions& options() const { return options_; }
  int64_t num_cores() const { return num_cores_; }
  // XS_CHECK: 0 <= id < num_devices().
  Device& device(int64_t id) const { return *devices_[id]; }
  // The device, or an error naming the id, the device count and the fix.
  StatusOr<Device*> LookupDevice(int64_t id) const;

  // At most kGateSlotsPerCore x num_cores() devices of a run inside a big kernel at once
  // (compute_gate.h); SPMD runs with more devices than that use it.
  ComputeGate& compute_gate() const { return *gate_; }
  // Two per core: while one device waits for the slot a peer frees (a futex wake) or at a
  // collective, another one already inside keeps the core busy. Measured on this repository's
  // 2-core machine, 8 devices, medians of 5 calls, 3-4 alternating rounds: the transformer block
  // of bench/jax_compare 102-113 ms against 106-119 ms with one slot per core (and 105-113 ungated),
  // the MLP train step 149-155 against 153-176, seed 000 inner 216-226 against 237-263.
  static constexpr int64_t kGateSlotsPerCore = 2;

  // Threads each device may use inside one op when `devices_running` devices compute at once:
  // max(1, cores / devices_running). 8 devices on 2 cores get 1 each; 1 device gets both.
  int64_t IntraOpThreads(int64_t devices_running) const;

  // A per-rank program: `rank` indexes the run's device list; `comm` has one rank per device.
  using RankFn = std::function<Status(int64_t rank, Communicator& comm)>;

  struct RunResult {
    std::vector<Status> per_rank;  // what each rank's program returned
    Status status;                 // OK, or the root cause: the first failure of the run
  };
  // Runs fn(rank) on device device_ids[rank] for every rank at once (distributed: every rank of
  // this process; the processes then agree on the outcome, so every process returns the same
  // status, naming the process that failed first). When a rank fails, the
  // communicator is aborted with "device D failed: ..." so that its peers' collectives fail at
  // once; a rank that returns OK leaves the run, and peers still waiting for it fail at once
  // too. Errors in device_ids (out of range, repeated) come back as the outer status.
  StatusOr<RunResult> RunPerRank(std::span<const int64_t> device_ids, const RankFn& fn);
  // RunPerRank(...).status.
  Status Run(std::span<const int64_t> device_ids, const RankFn& fn);
  Status RunOnAllDevices(const RankFn& fn);
  // The ranks of `assignment` in logical-id order.
  Status Run(const DeviceAssignment& assignment, const RankFn& fn);

  // Distributed: per_rank[r] (results of rank r of a run over `device_ids`) is filled by the process
  // of device_ids[r]; afterwards every process has all of them, or with `only_to` only that
  // process (the others keep their own ranks' results). A no-op otherwise.
  Status ShareRankResults(std::span<const int64_t> device_ids,
                          std::vector<std::vector<Array>>& per_rank,
                          std::optional<int64_t> only_to = std::nullopt);

  std::vector<MemoryStats> memory_stats() const;
  // Per-device live / peak bytes and buffer counts, one row per device plus a total:
  //   device  live       peak       buffers
  //   cpu:0   8.00MiB    24.00MiB   2
  std::string MemoryReport() const;
  void ResetPeakMemory();

 private:
  explicit Client(ClientOptions options, int64_t num_cores);
  StatusOr<Communicator*> CommunicatorFor(std::span<const int64_t> device_ids);

  ClientOptions options_;
  int64_t num_cores_;
  bool distributed_ = false;
  int64_t process_rank_ = 0;
  std::vector<std::unique_ptr<Device>> devices_;
  std::unique_ptr<DeviceThreads> threads_;
  std::unique_ptr<ComputeGate> gate_;
  std::mutex run_mu_;  // one run at a time: the device threads are shared
  std::map<std::vector<int64_t>, std::unique_ptr<Communicator>> communicators_;
};

}  // namespace xs

#endif  // XSHARD_RUNTIME_CLIENT_H_
