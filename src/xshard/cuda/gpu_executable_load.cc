// Phase 2 of the GPU executor: loading a GpuPlan on one GPU (memory allocated once: the entry's
// frame, argument buffers, constants, GEMM workspace; kernels compiled and loaded; cuBLASLt plans
// chosen) and copying results back to the host.
#include <cstring>

#include "xshard/cuda/cuda_status.h"
#include "xshard/cuda/gpu_executable_internal.h"
#include "xshard/cuda/kernel_loader.h"
#include "xshard/exec/buffer_assignment.h"

namespace xs::cuda {

GpuExecutable::GpuExecutable(std::unique_ptr<State> state) : state_(std::move(state)) {}

GpuExecutable::~GpuExecutable() {
  if (state_ == nullptr) return;
  ScopedDevice scope(state_->options.device);
  if (state_->graph_exec != nullptr) cudaGraphExecDestroy(state_->graph_exec);
  if (state_->stream != nullptr) cudaStreamSynchronize(state_->stream);  // nothing may outlive us
}

const GpuMemoryReport& GpuExecutable::memory() const { return state_->memory; }
const GpuPlan& GpuExecutable::plan() const { return *state_->plan; }
cudaStream_t GpuExecutable::stream() const { return state_->stream; }
const std::string& GpuExecutable::graph_blocker() const { return state_->graph_blocker; }

namespace {

// Every action of every computation, callees included.
template <typename Fn>
void ForEachAction(const GpuPlanData& data, Fn fn) {
  for (const auto& [exec, c] : data.computations) {
    for (const Action& a : c->actions) fn(a);
  }
}

}  // namespace

StatusOr<std::unique_ptr<GpuExecutable>> GpuExecutable::Load(std::unique_ptr<GpuPlan> plan,
                                                             const GpuLoadOptions& options) {
  XS_RETURN_IF_ERROR(plan->Supported());
  auto s = std::make_unique<State>();
  s->options = options;
  s->data = &plan->data();
  const int device = options.device;
  XS_ASSIGN_OR_RETURN(const DeviceInfo info, GetDeviceInfo(device));
  if (info.major != plan->options().sm_major || info.minor != plan->options().sm_minor) {
    return InvalidArgument("the plan was made for sm_", plan->options().sm_major, plan->options().sm_minor,
                           " but GPU ", device, " is ", info.ToString(),
                           ": plan with GpuPlanOptions{", info.major, ", ", info.minor, "}");
  }
  ScopedDevice scope(device);
  XS_RETURN_IF_ERROR(scope.status());
  s->stream = options.stream;
  if (s->stream == nullptr) {
    XS_ASSIGN_OR_RETURN(s->owned_stream, Stream::Create(device));
    s->stream = s->owned_stream.get();
  }
  const GpuPlanData& data = *s->data;
  const std::string name = plan->executable().module().entry()->name();

  // Kernels, GEMM and convolution plans first: they fail for reasons memory does not fix.
  Status status = OkStatus();
  ForEachAction(data, [&](const Action& a) {
    for (const PlannedKernel& k : a.kernels) {
      if (!status.ok()) return;
      StatusOr<cudaKernel_t> loaded = LoadKernel(k.kernel.source, device);
      if (!loaded.ok()) {
        status = Annotate(loaded.status(), StrCat("instruction '", a.step->inst->name(), "': "));
        return;
      }
      s->kernels[&k] = *loaded;
    }
    if (a.kind == ActionKind::kGemm && status.ok()) {
      StatusOr<GemmPlan> gemm = GemmPlan::Create(*a.step->inst, info);
      if (!gemm.ok()) {
        status = Annotate(gemm.status(), StrCat("instruction '", a.step->inst->name(), "': "));
        return;
      }
      s->memory.workspace_bytes = std::max(s->memory.workspace_bytes, gemm->workspace_bytes());
      s->gemms.emplace(&a, std::move(gemm).value());
    }
    if (a.kind == ActionKind::kConv && status.ok()) {
      StatusOr<ConvPlan> conv = ConvPlan::Create(*a.step->inst, info);
      if (!conv.ok()) {
        status = Annotate(conv.status(), StrCat("instruction '", a.step->inst->name(), "': "));
        return;
      }
      s->memory.workspace_bytes = std::max(s->memory.workspace_bytes, conv->workspace_bytes());
      s->convs.emplace(&a, std::move(conv).value());
    }
  });
  XS_RETURN_IF_ERROR(status);

  // Memory, once: the entry's frame (callees' frames inside it), arguments, constants, workspace.
  s->memory.arena_bytes = data.entry->frame_bytes;
  XS_ASSIGN_OR_RETURN(s->arena, DeviceBuffer::Allocate(device, s->memory.arena_bytes,
                                                       StrCat("the arena of '", name, "'")));
  for (const Shape& a : data.argument_shapes) {
    s->argument_offsets.push_back(s->memory.argument_bytes);
    s->memory.argument_bytes += AlignedBufferBytes(std::max<int64_t>(a.byte_size(), 1));
  }
  XS_ASSIGN_OR_RETURN(s->arguments, DeviceBuffer::Allocate(device, s->memory.argument_bytes,
                                                           StrCat("the arguments of '", name, "'")));
  std::vector<std::byte> constants = data.constants;
  s->partition_id = options.partition_id;
  s->replica_id = options.replica_id;
  for (const auto& [offset, op] : data.id_constants) {
    const uint32_t id = static_cast<uint32_t>(op == Opcode::kPartitionId ? options.partition_id : options.replica_id);
    std::memcpy(constants.data() + offset, &id, sizeof(id));
  }
  s->memory.constant_bytes = static_cast<int64_t>(constants.size());
  XS_ASSIGN_OR_RETURN(s->constants, DeviceBuffer::Allocate(device, s->memory.constant_bytes,
                                                           StrCat("the constants of '", name, "'")));
  if (!constants.empty()) {
    XS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(s->constants.data(), constants.data(), constants.size(),
                                            cudaMemcpyHostToDevice, s->stream));
  }
  XS_ASSIGN_OR_RETURN(s->workspace, DeviceBuffer::Allocate(device, s->memory.workspace_bytes,
                                                           StrCat("the GEMM workspace of '", name, "'")));
  XS_ASSIGN_OR_RETURN(s->host_scalar, PinnedHostBuffer::Allocate(16, "control-flow predicates"));
  s->memory.total_bytes = s->memory.arena_bytes + s->memory.argument_bytes + s->memory.constant_bytes +
                          s->memory.workspace_bytes;
  XS_ASSIGN_OR_RETURN(s->start, Event::Create(device, /*timing=*/true));
  XS_ASSIGN_OR_RETURN(s->end, Event::Create(device, /*timing=*/true));

  // What keeps repeated runs from replaying one CUDA graph.
  s->graph_blocker = plan->report().graph_blocker;
  // (One-participant collectives are device copies, which a graph holds.)
  if (s->graph_blocker.empty() && data.entry->communicates && options.collectives != nullptr &&
      !options.collectives->CapturableInGraph()) {
    s->graph_blocker = "collectives whose communicator meets its peers on the host each call";
  }
  XS_RETURN_IF_ERROR(Stream::Borrow(device, s->stream).Synchronize());
  s->plan = std::move(plan);
  return std::unique_ptr<GpuExecutable>(new GpuExecutable(std::move(s)));
}

StatusOr<std::unique_ptr<GpuExecutable>> LoadOnGpu(const Executable& executable, const GpuLoadOptions& options,
                                                   bool fusion) {
  XS_ASSIGN_OR_RETURN(const DeviceInfo info, GetDeviceInfo(options.device));
  GpuPlanOptions o;
  o.sm_major = info.major;
  o.sm_minor = info.minor;
  o.fusion = fusion;
  XS_ASSIGN_OR_RETURN(std::unique_ptr<GpuPlan> plan, GpuPlan::Create(executable, o));
  return GpuExecutable::Load(std::move(plan), options);
}

StatusOr<std::vector<Array>> GpuExecutable::CopyToHost(std::span<const DeviceArray> arrays) const {
  ScopedDevice scope(state_->options.device);
  XS_RETURN_IF_ERROR(scope.status());
  std::vector<Array> out;
  for (const DeviceArray& d : arrays) {
    Array a = Array::Uninitialized(d.shape.WithoutLayout());
    if (a.byte_size() > 0) {
      XS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(a.data(), d.data, static_cast<size_t>(a.byte_size()),
                                              cudaMemcpyDeviceToHost, state_->stream));
    }
    out.push_back(std::move(a));
  }
  XS_RETURN_IF_ERROR(Stream::Borrow(state_->options.device, state_->stream).Synchronize());
  return out;
}

}  // namespace xs::cuda
