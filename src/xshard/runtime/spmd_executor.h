// SpmdExecutable: runs one already-partitioned SPMD module (one program for every device, keyed by
// partition-id / replica-id, talking through collectives) on num_partitions x replica_count
// devices of a Client at once. The module is planned once; the client's device kind turns the plan
// into each device's program on first use (device_kind.h; on the CPU a direct call of the plan),
// each device runs its program on its own thread, and every collective goes through the Client's Communicator with XLA's semantics
// (group modes from channel_id / use_global_device_ids, explicit and iota replica_groups).
//
//   HloModule spmd, num_partitions=2
//   ENTRY main { p = f32[1,2] parameter(0)
//                ROOT ag = f32[2,2] all-gather(p), channel_id=1, replica_groups={{0,1}},
//                    dimensions={0}, use_global_device_ids=true }
//
//   XS_ASSIGN_OR_RETURN(auto spmd, SpmdExecutable::Create(*module));
//   XS_ASSIGN_OR_RETURN(SpmdResult r, spmd->Run(*client, {{x0}, {x1}}));  // r.outputs[d][0]
//
// Sharding annotations in the module are ignored: the module is taken as already partitioned.
#ifndef XSHARD_RUNTIME_SPMD_EXECUTOR_H_
#define XSHARD_RUNTIME_SPMD_EXECUTOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/runtime/device_assignment.h"

namespace xs {

class RunMonitor;

// Declared elsewhere; this header stays free of the IR and communicator headers so that any file
// can include it.
class Client;
class DeviceKind;
class DeviceProgram;
class Executable;
class Module;
class SpmdCollectivePlan;

struct SpmdRunOptions {
  // Which device runs each (replica, partition); default DeviceAssignment::Default (XLA's
  // placement: partition p of replica r on device p * replicas + r).
  std::optional<DeviceAssignment> device_assignment;
  // OpenBLAS threads for the run's GEMMs (a process-wide setting made before the devices start);
  // 0: Client::IntraOpThreads(devices in the run), i.e. 1 when devices >= cores.
  int blas_threads = 0;
  // A while loop running more iterations than this fails on its device (and so the run); -1: none.
  int64_t max_while_iterations = -1;
  // Not owned; when set (with a slot per rank), every device publishes its progress to it and
  // stops when it is stopped, devices blocked in a collective included (run_monitor.h).
  RunMonitor* monitor = nullptr;
  // Under mpirun: the process that receives every device's outputs; the others keep only their
  // own devices' outputs (the other entries stay empty). Unset: every process receives them all.
  std::optional<int64_t> outputs_to_process;
};

// One device's memory over a run, in bytes.
struct SpmdDeviceMemory {
  int64_t device = 0;          // the Client device id
  int64_t argument_bytes = 0;  // its inputs, alive for the whole run
  // The executor's arena for temporaries, planned before the run (Executable::arena_bytes).
  int64_t arena_bytes = 0;
  // inputs + arena + the most other executor-allocated bytes (kernel results, outputs) alive
  // at once.
  int64_t peak_bytes = 0;
  int64_t live_bytes = 0;      // its outputs, still held after the run
  std::string kind = "cpu";    // the device kind's name, for reports ("cuda:0")
};

struct SpmdResult {
  // outputs[i]: the root's leaves on logical device i = replica * num_partitions + partition.
  std::vector<std::vector<Array>> outputs;
  std::vector<SpmdDeviceMemory> memory;  // per logical device
  std::vector<int64_t> devices;          // Client device of each logical device
};

class SpmdExecutable {
 public:
  // Plans `module` (which must outlive the executable) for its num_partitions x replica_count
  // devices and resolves every collective's participants. Errors name the instruction: an
  // unsupported op or reducer, replica groups that repeat an id, name one out of range or leave
  // a device out, and result shapes that do not match the groups (e.g. an all-gather over groups
  // of 4 whose result is not 4x its operand along the gathered dim).
  static StatusOr<std::unique_ptr<SpmdExecutable>> Create(const Module& module);
  ~SpmdExecutable();
  SpmdExecutable(const SpmdExecutable&) = delete;
  SpmdExecutable& operator=(const SpmdExecutable&) = delete;

  int64_t num_partitions() const { return num_partitions_; }
  int64_t replica_count() const { return replica_count_; }
  // num_partitions * replica_count.
  int64_t num_devices() const { return num_partitions_ * replica_count_; }
  const Executable& executable() const { return *executable_; }

  // Runs the module on every logical device at once. args[i] are logical device i's entry
  // parameter leaves (each device's own shard). Errors before anything runs: the number of
  // devices' inputs, their shapes (naming the device), a device assignment that does not fit the
  // client. A device that fails (bad input value, a collective that does not match its peers',
  // a peer that never arrives) aborts the run: every device stops within the client's collective
  // timeout and the first failure comes back. The first run on a client's device compiles the
  // plan for it (DeviceKind::Compile; kept for later runs): a kind that cannot fails the run
  // before any device starts, naming the device and what is missing. With `device_status`, it receives one status per
  // logical device: its own failure, or Aborted naming the device that failed first.
  StatusOr<SpmdResult> Run(Client& client, const std::vector<std::vector<Array>>& args,
                           const SpmdRunOptions& options = {},
                           std::vector<Status>* device_status = nullptr) const;
  // Same, with each device's arguments held by the caller anywhere: devices may share one array
  // (a replicated input need not be copied N times; arguments are only read).
  StatusOr<SpmdResult> Run(Client& client, const std::vector<std::vector<const Array*>>& args,
                           const SpmdRunOptions& options = {},
                           std::vector<Status>* device_status = nullptr) const;

 private:
  SpmdExecutable(const Module& module, std::unique_ptr<Executable> executable,
                 std::unique_ptr<SpmdCollectivePlan> plan);
  // Each rank's program on `devices` (null for a rank of another process), compiled on first use.
  StatusOr<std::vector<const DeviceProgram*>> ProgramsFor(
      const Client& client, const std::vector<int64_t>& devices) const;

  const Module& module_;
  std::unique_ptr<Executable> executable_;
  std::unique_ptr<SpmdCollectivePlan> plan_;
  int64_t num_partitions_ = 1;
  int64_t replica_count_ = 1;
  // Compiled programs by (device kind, client device); the kinds are held so that their addresses
  // stay unique while they key the map.
  mutable std::mutex programs_mu_;
  mutable std::map<std::pair<const DeviceKind*, int64_t>, std::unique_ptr<DeviceProgram>> programs_;
  mutable std::vector<std::shared_ptr<const DeviceKind>> kinds_;
};

// Per-device memory as a table, one row per device plus the total:
//   device  arguments  arena  peak  live
//   cpu:0   16B        0B     48B   16B
std::string FormatSpmdMemory(const std::vector<SpmdDeviceMemory>& memory);

}  // namespace xs

#endif  // XSHARD_RUNTIME_SPMD_EXECUTOR_H_
