// DeviceKind: what a Client's devices are (host CPU threads, GPUs), how they print in reports
// ("cpu:3", "cuda:3"), their default memory limit, and how an SPMD program's executor plan becomes
// one device's program. The CPU kind is defined here; other kinds live above the runtime
// (platform/) and reach the Client through ClientOptions::device_kind, so the runtime names none.
#ifndef XSHARD_RUNTIME_DEVICE_KIND_H_
#define XSHARD_RUNTIME_DEVICE_KIND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/comm/communicator.h"
#include "xshard/core/array.h"
#include "xshard/exec/executable.h"

namespace xs {

// One device's compiled program. Run is called once per run and device (never per instruction),
// possibly from several device threads at once for different programs.
class SpmdCollectivePlan;  // spmd_executor_collectives.h

// A run's collectives for one rank, for programs that issue them on device memory themselves
// (a GPU kind) instead of through ExecuteOptions::collectives (which works on host arrays).
struct DeviceCollectives {
  const SpmdCollectivePlan* plan = nullptr;  // the module's resolved collectives
  Communicator* comm = nullptr;              // the run's, from the client's CommunicatorFactory
  int64_t rank = 0;                          // this device's rank in `comm`
};

class DeviceProgram {
 public:
  virtual ~DeviceProgram() = default;
  // Runs the program on the device's entry parameter leaves (already checked against the
  // module's parameter shapes), with Executable::Run's options and statistics; returns the root's
  // leaves as host arrays.
  virtual StatusOr<std::vector<Array>> Run(std::span<const Array* const> args,
                                           const ExecuteOptions& options,
                                           ExecuteStats* stats) const = 0;
  // What the SPMD executor calls: Run, with the run's collectives also given as `collectives`
  // (valid for this call only). The default ignores them (options.collectives reaches them).
  virtual StatusOr<std::vector<Array>> RunSpmd(std::span<const Array* const> args,
                                               const ExecuteOptions& options, ExecuteStats* stats,
                                               const DeviceCollectives& collectives) const {
    (void)collectives;
    return Run(args, options, stats);
  }
};

class DeviceKind {
 public:
  virtual ~DeviceKind() = default;
  // "cpu" or "cuda": devices print as "<name>:<id>".
  virtual std::string_view name() const = 0;
  // Device `device` (the client's numbering) for reports: "cpu:3";
  // a GPU kind adds where it lives, e.g. "cuda:3 (GPU 0, virtual 3 of 4)".
  virtual std::string Describe(int64_t device) const;
  // Bytes device `device` may hold when ClientOptions::device_memory_limit is 0; 0: unlimited.
  virtual int64_t DefaultMemoryLimit(int64_t device) const;
  // Compiles `plan` (the SPMD module's executor plan, shared by all devices; it outlives the
  // result) for client device `device`. The SPMD executor calls it once per (executable, kind,
  // device) and keeps the result for later runs. Errors name the device and what is missing.
  virtual StatusOr<std::unique_ptr<DeviceProgram>> Compile(const Executable& plan,
                                                           int64_t device) const = 0;
  // Device time (microseconds) the kind's programs spent since the last call: the largest sum
  // over its devices of each one's run times, so a benchmark divides it by its calls (`bench
  // run`'s device_ms_per_call). nullopt for kinds that do not measure it (the CPU: its device
  // time is the host's).
  virtual std::optional<double> TakeDeviceMicros() const { return std::nullopt; }
};

// The host CPU: every device a thread of this process, programs run exec's Executable on host
// arrays (the program is a direct call of Executable::Run). One immutable process-wide object.
std::shared_ptr<const DeviceKind> CpuDeviceKind();

}  // namespace xs

#endif  // XSHARD_RUNTIME_DEVICE_KIND_H_
