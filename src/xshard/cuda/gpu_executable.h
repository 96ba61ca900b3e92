// One device's program on a GPU, from the same plan the CPU executor builds (exec/executable.h:
// steps, fused loops, arena offsets). Two phases:
//   GpuPlan::Create (no GPU needed): for every step, what runs on the device: a generated
//     kernel, a cuBLASLt GEMM, a collective, an alias, host-driven control flow, or
//     "unsupported" with the instruction and why; and where every value lives in one arena.
//   GpuExecutable::Load (on a GPU): the arena (allocated once), constants, kernels, GEMM plans;
//     then Run walks the action list on the device's compute stream without allocating.
//
//   XS_ASSIGN_OR_RETURN(auto exec, Executable::Create(*module));
//   XS_ASSIGN_OR_RETURN(auto plan, cuda::GpuPlan::Create(*exec, {}));
//   XS_ASSIGN_OR_RETURN(auto gpu, cuda::GpuExecutable::Load(std::move(plan), {.device = 0}));
//   XS_ASSIGN_OR_RETURN(std::vector<cuda::DeviceArray> out, gpu->Run(host_args));
//   XS_ASSIGN_OR_RETURN(std::vector<Array> host, gpu->CopyToHost(out));
//
// Internal to the cuda layer (includes cuda_runtime.h); runtime/ reaches it through its
// device-kind seam.
#ifndef XSHARD_CUDA_GPU_EXECUTABLE_H_
#define XSHARD_CUDA_GPU_EXECUTABLE_H_

#include <cuda_runtime.h>

#include <map>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/comm/communicator.h"
#include "xshard/core/array.h"
#include "xshard/exec/executable.h"

namespace xs {
class RunMonitor;  // exec/run_monitor.h
}  // namespace xs

namespace xs::cuda {

struct GpuPlanData;  // gpu_executable_plan.h

// How this device's collectives reach its peers. The runtime implements it over its resolved
// collectives (runtime/spmd_executor_collectives.h) and a Communicator whose calls take device
// pointers and enqueue on the stream given at its construction (cuda/*_communicator.h). All
// buffers are device memory of the executable's GPU; nothing may touch them from the host.
class GpuCollectiveRunner {
 public:
  virtual ~GpuCollectiveRunner() = default;
  // Runs collective `inst` (an all-reduce, all-gather, ..., or the collective an async-start
  // wraps) on operand leaves `in` into result leaves `out`. With `key` non-null, only starts it
  // (XLA's -start): Finish(key) completes it, and `in` stays unchanged until then.
  virtual Status Run(const Instruction& inst, std::span<const ConstBufferView> in,
                     std::span<const BufferView> out, const void* key) = 0;
  virtual Status Finish(const void* key) = 0;
  // True when the calls only enqueue device work (no host rendezvous per call), so a run may be
  // captured once into a CUDA graph and replayed.
  virtual bool CapturableInGraph() const { return false; }
};

struct GpuPlanOptions {
  int sm_major = 9, sm_minor = 0;  // the GPU's compute capability (kernels are built for it)
  bool fusion = true;              // false: exec's op-by-op plan (ExecuteOptions::fusion)
};

// What planning found: counts of actions by kind and every unsupported step.
struct GpuPlanReport {
  std::map<std::string, int64_t> actions;  // ActionKindName -> count, over every computation
  struct Unsupported {
    std::string instruction, opcode, why;
  };
  std::vector<Unsupported> unsupported;
  int64_t arena_bytes = 0;     // the entry's frame (exec's arena, side buffers, callee frames)
  int64_t constant_bytes = 0;
  int64_t kernels = 0;         // generated kernels (distinct sources)
  bool graph_capturable = false;  // no host-driven control flow (collectives checked at Load)
  std::string graph_blocker;      // why not, when not: "while loop 'w.3' (host-driven)"
};

class GpuPlan {
 public:
  // Plans `executable`'s program (which must outlive the plan). Never needs a GPU; fails only for
  // internal inconsistencies. Unsupported steps are recorded, not errors: see Supported().
  static StatusOr<std::unique_ptr<GpuPlan>> Create(const Executable& executable,
                                                   const GpuPlanOptions& options = {});
  ~GpuPlan();
  // OK when every step can run on the GPU; else the first unsupported step: "unsupported on the
  // GPU: instruction 'sort.3' (sort): <why>".
  Status Supported() const;
  const GpuPlanReport& report() const { return report_; }
  const Executable& executable() const { return executable_; }
  const GpuPlanOptions& options() const { return options_; }
  const GpuPlanData& data() const { return *data_; }

 private:
  GpuPlan(const Executable& e, const GpuPlanOptions& o);
  const Executable& executable_;
  GpuPlanOptions options_;
  std::unique_ptr<GpuPlanData> data_;
  GpuPlanReport report_;
};

// An array in device memory (not owned: a view into an executable's arena or the caller's).
struct DeviceArray {
  Shape shape;
  std::byte* data = nullptr;
};

struct GpuLoadOptions {
  int device = 0;                  // GPU ordinal
  cudaStream_t stream = nullptr;   // compute stream; null: the executable creates one
  GpuCollectiveRunner* collectives = nullptr;  // not owned; null: one-participant collectives
  int64_t partition_id = 0, replica_id = 0;
};

struct GpuRunOptions {
  int64_t max_while_iterations = -1;  // as ExecuteOptions; -1: no limit
  // What partition-id / replica-id return from this run on (unset: as loaded or last set).
  std::optional<int64_t> partition_id, replica_id;
  bool trace = false;       // time every action with CUDA events (GpuRunStats::steps)
  bool use_graph = true;    // replay a CUDA graph on repeated calls where the program allows it
  // Not owned; when set, the run publishes its progress to monitor->progress(monitor_rank) (the
  // action's instruction, the innermost host-driven while loop and its iteration) and returns the
  // monitor's stop reason before its next action once RunMonitor::Stop is called (a peer device
  // failed, --timeout, Ctrl-C): a device looping on the host never outlives its run. Work already
  // enqueued on the stream still completes; a replayed graph is one action.
  RunMonitor* monitor = nullptr;
  int64_t monitor_rank = 0;
};

// One timed action of a traced run.
struct GpuStepTime {
  const Instruction* inst = nullptr;
  std::string name;  // "fusion add.3 (4 ops)", "gemm dot.1", "while w.2"
  double start_us = 0, duration_us = 0;  // from the run's first event
};

struct GpuRunStats {
  int64_t actions_run = 0;
  bool replayed_graph = false;
  double device_us = 0;  // from the first enqueued work to the last (events)
  // steady_clock microseconds (since its epoch) when the run's first event was enqueued: the
  // host time GpuStepTime::start_us counts from (the GPU may start a little later).
  double host_start_us = 0;
  std::vector<GpuStepTime> steps;  // trace only
};

// The traced steps of `stats` as Chrome trace events ("ph":"X", one per step, `pid`, `tid` the
// device, "ts" = host_start_us + start_us), each followed by ",\n", in the format of
// exec/executable_trace.cc, for the runtime to merge into its trace file.
std::string ChromeTraceEvents(const GpuRunStats& stats, int pid, int64_t tid);

// Device memory an executable holds, fixed at Load.
struct GpuMemoryReport {
  int64_t arena_bytes = 0, argument_bytes = 0, constant_bytes = 0, workspace_bytes = 0;
  int64_t total_bytes = 0;  // everything above: the device's peak for this program
};

// One executable runs one call at a time (its arena and stream are its own); several
// executables, on one GPU or several, run concurrently from their own threads.
class GpuExecutable {
 public:
  // Loads `plan` on GPU options.device: compiles and loads its kernels, creates its GEMM plans and
  // allocates its memory. Error: an unsupported step (GpuPlan::Supported), no GPU, out of memory.
  static StatusOr<std::unique_ptr<GpuExecutable>> Load(std::unique_ptr<GpuPlan> plan,
                                                       const GpuLoadOptions& options);
  ~GpuExecutable();

  // Runs with host arguments (entry parameter leaves, as Executable::Run): copied to the
  // executable's argument buffers, then the program. Results stay on the device, as views into
  // this executable's memory valid until the next Run; CopyToHost fetches them.
  StatusOr<std::vector<DeviceArray>> Run(std::span<const Array* const> args,
                                         const GpuRunOptions& options = {},
                                         GpuRunStats* stats = nullptr);
  // Same with arguments already on this GPU (read, never written).
  StatusOr<std::vector<DeviceArray>> RunOnDevice(std::span<const DeviceArray> args,
                                                 const GpuRunOptions& options = {},
                                                 GpuRunStats* stats = nullptr);
  // Host copies of `arrays` (waits for the stream).
  StatusOr<std::vector<Array>> CopyToHost(std::span<const DeviceArray> arrays) const;

  const GpuMemoryReport& memory() const;
  const GpuPlan& plan() const;
  cudaStream_t stream() const;
  // Why repeated runs cannot replay a CUDA graph (empty when they can).
  const std::string& graph_blocker() const;

  struct State;  // gpu_executable_load.cc

 private:
  explicit GpuExecutable(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// GpuPlan::Create for GPU options.device's compute capability, then Load: what a device kind's
// Compile does. An unsupported step fails here, naming it.
StatusOr<std::unique_ptr<GpuExecutable>> LoadOnGpu(const Executable& executable,
                                                   const GpuLoadOptions& options, bool fusion = true);

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_GPU_EXECUTABLE_H_
