// A cuda device's program: the runtime's per-device plan run by cuda::GpuExecutable on the
// device's GPU and stream, host arguments copied in and results copied back per call, and its
// collectives sent to the run's communicator (device pointers) through the SpmdCollectivePlan.
#include <algorithm>
#include <deque>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "xshard/platform/cuda_devices.h"

#if defined(XSHARD_WITH_CUDA)
#include <cuda_runtime.h>

#include "xshard/cuda/cuda_status.h"
#include "xshard/cuda/device_memory.h"
#include "xshard/cuda/gpu_executable.h"
#include "xshard/exec/executable_trace.h"
#include "xshard/runtime/spmd_executor_collectives.h"
#endif

namespace xs {

void CudaDevices::AddDeviceMicros(int64_t device, double us) {
  std::lock_guard<std::mutex> lock(mu_);
  if (device_us_.empty()) device_us_.assign(slots_.size(), 0.0);
  device_us_[device] += us;
}

double CudaDevices::TakeDeviceMicros() {
  std::lock_guard<std::mutex> lock(mu_);
  double most = 0;
  for (double& us : device_us_) {
    most = std::max(most, us);
    us = 0;
  }
  return most;
}

#if defined(XSHARD_WITH_CUDA)

CudaDevices::CudaDevices(std::vector<GpuSlot> slots, std::vector<cuda::DeviceInfo> gpus)
    : slots_(std::move(slots)), gpus_(std::move(gpus)), streams_(slots_.size(), nullptr) {}

CudaDevices::~CudaDevices() {
  for (size_t d = 0; d < streams_.size(); ++d) {
    if (streams_[d] == nullptr) continue;
    cuda::ScopedDevice on(static_cast<int>(GpuOf(static_cast<int64_t>(d)).ordinal));
    cudaStreamDestroy(static_cast<cudaStream_t>(streams_[d]));
  }
}

StatusOr<void*> CudaDevices::Stream(int64_t device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (streams_[device] == nullptr) {
    cuda::ScopedDevice on(GpuOf(device).ordinal);
    XS_RETURN_IF_ERROR(on.status());
    cudaStream_t s = nullptr;
    XS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    streams_[device] = s;
  }
  return streams_[device];
}

namespace {

// The runtime's collectives on device memory: the CPU runner's op -> Communicator mapping
// (spmd_executor_collectives.cc) without its host-side zero fills (the GPU communicators write
// every byte of a result, zeros included). Pointed at each run's communicator before the run.
class SpmdGpuCollectives final : public cuda::GpuCollectiveRunner {
 public:
  void Use(const DeviceCollectives& run) {
    run_ = run;
    pending_.clear();
  }

  Status Run(const Instruction& inst, std::span<const ConstBufferView> in,
             std::span<const BufferView> out, const void* key) override {
    if (run_.plan == nullptr || run_.comm == nullptr) {
      return FailedPrecondition("collective '", inst.name(), "' on a cuda device needs the run's "
                                "communicator; run the program through a Client (SpmdExecutable)");
    }
    const PlannedCollective* op = run_.plan->Find(&inst);
    if (op == nullptr) return Internal("collective '", inst.name(), "' was not planned");
    if (op->ragged) {
      return Unimplemented(op->name, ": ragged-all-to-all reads its sizes on the host, which the "
                           "GPU executor does not do yet; use --platform cpu");
    }
    if (!op->tuple_all_to_all && (in.size() != out.size() || out.size() != op->results.size())) {
      return Internal(op->name, " got ", in.size(), " operand and ", out.size(),
                      " result leaves for ", op->results.size(), " results");
    }
    std::vector<uint64_t> handles;
    Communicator& comm = *run_.comm;
    // One communicator call; when starting, it gets its own handle.
    auto leaf = [&](const std::function<Status(const CollectiveCall&)>& fn) -> Status {
      CollectiveCall call(run_.rank, op->call_name, op->channel_id);
      uint64_t handle = 0;
      if (key != nullptr) call.async_handle = &handle;
      Status st = fn(call);
      if (handle != 0) handles.push_back(handle);
      return st;
    };
    Status st = OkStatus();
    if (op->kind == CollectiveKind::kAllToAll && op->tuple_all_to_all) {
      st = leaf([&](const CollectiveCall& c) {
        return comm.AllToAllTuple(c, *op->groups, in, out);
      });
    }
    for (size_t i = 0; st.ok() && !op->tuple_all_to_all && i < in.size(); ++i) {
      st = leaf([&](const CollectiveCall& c) -> Status {
        switch (op->kind) {
          case CollectiveKind::kAllGather:
            return comm.AllGather(c, *op->groups, in[i], out[i], op->dim);
          case CollectiveKind::kAllReduce:
            return comm.AllReduce(c, *op->groups, in[i], out[i], op->reduction);
          case CollectiveKind::kReduceScatter:
            return comm.ReduceScatter(c, *op->groups, in[i], out[i], op->dim, op->reduction);
          case CollectiveKind::kAllToAll:
            return comm.AllToAll(c, *op->groups, in[i], out[i], op->dim, op->dim);
          case CollectiveKind::kCollectivePermute:
            return comm.CollectivePermute(c, *op->pairs, in[i], out[i]);
          case CollectiveKind::kCollectiveBroadcast:
            return comm.CollectiveBroadcast(c, *op->groups, in[i], out[i]);
          case CollectiveKind::kBarrier:
            break;
        }
        return Internal(op->name, " has no runner");
      });
    }
    if (key != nullptr) pending_[key].push_back(std::move(handles));
    return st;
  }

  Status Finish(const void* key) override {
    auto it = pending_.find(key);
    if (it == pending_.end() || it->second.empty()) {
      return Internal("a collective -done on device rank ", run_.rank, " has no matching -start");
    }
    std::vector<uint64_t> handles = std::move(it->second.front());
    it->second.pop_front();
    Status first = OkStatus();
    for (uint64_t h : handles) {
      Status st = run_.comm->Finish(run_.rank, h);
      if (first.ok() && !st.ok()) first = st;
    }
    return first;
  }

  // The communicators rendezvous on the host per call, so a run cannot be one CUDA graph.
  bool CapturableInGraph() const override { return false; }

 private:
  DeviceCollectives run_;
  std::unordered_map<const void*, std::deque<std::vector<uint64_t>>> pending_;
};

class CudaProgram final : public DeviceProgram {
 public:
  CudaProgram(std::shared_ptr<CudaDevices> devices, int64_t device,
              std::unique_ptr<SpmdGpuCollectives> collectives)
      : devices_(std::move(devices)), device_(device), collectives_(std::move(collectives)) {}
  ~CudaProgram() override {
    // The executable synchronizes its (borrowed) stream: on its GPU, before the collectives go.
    cuda::ScopedDevice on(devices_->GpuOf(device_).ordinal);
    exec_.reset();
  }
  void set_executable(std::unique_ptr<cuda::GpuExecutable> exec) { exec_ = std::move(exec); }

  StatusOr<std::vector<Array>> Run(std::span<const Array* const> args,
                                   const ExecuteOptions& options,
                                   ExecuteStats* stats) const override {
    return RunSpmd(args, options, stats, {});
  }

  StatusOr<std::vector<Array>> RunSpmd(std::span<const Array* const> args,
                                       const ExecuteOptions& options, ExecuteStats* stats,
                                       const DeviceCollectives& collectives) const override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda::ScopedDevice on(devices_->GpuOf(device_).ordinal);  // this device thread's GPU
    XS_RETURN_IF_ERROR(on.status());
    collectives_->Use(collectives);
    cuda::GpuRunOptions run;
    run.max_while_iterations = options.max_while_iterations;
    run.monitor = options.monitor;  // a peer's failure, --timeout or Ctrl-C stops this device too
    run.monitor_rank = options.monitor_rank;
    run.partition_id = options.partition_id;
    run.replica_id = options.replica_id;
    // --trace: every action timed with events, into the trace's device-time process, one
    // thread per device as the executor's steps (replica * 100000 + partition).
    run.trace = ExecutorTraceEnabled();
    cuda::GpuRunStats gpu_stats;
    StatusOr<std::vector<cuda::DeviceArray>> out = exec_->Run(args, run, &gpu_stats);
    collectives_->Use({});
    if (!out.ok()) {
      return Annotate(out.status(), StrCat(devices_->GpuOf(device_).name, ": "));
    }
    // A fault of an earlier kernel surfaces here (the first wait on the stream): name the GPU.
    StatusOr<std::vector<Array>> fetched = exec_->CopyToHost(*out);
    if (!fetched.ok()) return Annotate(fetched.status(), StrCat(devices_->GpuOf(device_).name, ": "));
    std::vector<Array> host = std::move(fetched).value();
    devices_->AddDeviceMicros(device_, gpu_stats.device_us);
    if (run.trace) {
      const int64_t tid = options.replica_id * 100000 + options.partition_id;
      AddExecutorTraceEvents(cuda::ChromeTraceEvents(gpu_stats, kDeviceTracePid, tid));
    }
    if (stats != nullptr) {
      stats->instructions_run = gpu_stats.actions_run;
      // Device memory fixed at Load, less the argument buffers (the executor counts those).
      const cuda::GpuMemoryReport& m = exec_->memory();
      stats->peak_bytes = m.total_bytes - m.argument_bytes;
    }
    return host;
  }

 private:
  std::shared_ptr<CudaDevices> devices_;
  int64_t device_;
  std::unique_ptr<SpmdGpuCollectives> collectives_;
  std::unique_ptr<cuda::GpuExecutable> exec_;
  mutable std::mutex mu_;  // one call at a time (the executable's arena is its own)
};

}  // namespace

StatusOr<std::unique_ptr<DeviceProgram>> CompileCudaProgram(
    const Executable& plan, int64_t device, std::shared_ptr<CudaDevices> devices) {
  const int gpu = devices->GpuOf(device).ordinal;
  XS_ASSIGN_OR_RETURN(void* stream, devices->Stream(device));
  auto collectives = std::make_unique<SpmdGpuCollectives>();
  cuda::GpuLoadOptions load;
  load.device = gpu;
  load.stream = static_cast<cudaStream_t>(stream);
  load.collectives = collectives.get();
  auto program = std::make_unique<CudaProgram>(devices, device, std::move(collectives));
  cuda::ScopedDevice on(gpu);
  XS_RETURN_IF_ERROR(on.status());
  StatusOr<std::unique_ptr<cuda::GpuExecutable>> exec = cuda::LoadOnGpu(plan, load);
  if (!exec.ok()) {
    return Annotate(exec.status(),
                    StrCat("cuda:", device, " (", devices->slots()[device].ToString(), ", ",
                           devices->GpuOf(device).ToString(), "): "));
  }
  program->set_executable(std::move(exec).value());
  return std::unique_ptr<DeviceProgram>(std::move(program));
}

#else  // !XSHARD_WITH_CUDA

CudaDevices::CudaDevices(std::vector<GpuSlot> slots, std::vector<cuda::DeviceInfo> gpus)
    : slots_(std::move(slots)), gpus_(std::move(gpus)), streams_(slots_.size(), nullptr) {}
CudaDevices::~CudaDevices() = default;
StatusOr<void*> CudaDevices::Stream(int64_t) { return cuda::DeviceCount().status(); }

StatusOr<std::unique_ptr<DeviceProgram>> CompileCudaProgram(const Executable&, int64_t,
                                                            std::shared_ptr<CudaDevices>) {
  return cuda::DeviceCount().status();
}

#endif  // XSHARD_WITH_CUDA

}  // namespace xs
