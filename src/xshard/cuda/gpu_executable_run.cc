// Running a loaded GpuExecutable: the walk over each computation's actions on the compute stream
// (kernels, GEMMs, device copies, collectives), host-driven while / conditional (the predicate or
// branch index copied to the host), nested frames for callees, CUDA graph capture and replay,
// and per-action timing with events when tracing.
#include <chrono>
#include <cstring>

#include "xshard/cuda/cuda_status.h"
#include "xshard/cuda/gpu_executable_internal.h"
#include "xshard/cuda/kernel_loader.h"
#include "xshard/exec/fusion_plan.h"
#include "xshard/exec/run_monitor.h"

namespace xs::cuda {
namespace {

struct Frame {
  std::byte* base = nullptr;
  std::vector<std::byte*> params;
};

class Runner {
 public:
  Runner(GpuExecutable::State& s, const GpuRunOptions& o, bool trace)
      : s_(s), o_(o), trace_(trace),
        progress_(o.monitor == nullptr ? nullptr : &o.monitor->progress(o.monitor_rank)) {}

  // Runs `c` in a frame at `base` with parameter leaves `params`; returns its root leaves.
  StatusOr<std::vector<std::byte*>> Run(const GpuComputation& c, std::byte* base, std::vector<std::byte*> params) {
    Frame f{base, std::move(params)};
    for (const Action& a : c.actions) {
      if (a.kind == ActionKind::kAlias) continue;
      if (progress_ != nullptr) {
        if (o_.monitor->stopped()) return o_.monitor->stop_reason();
        progress_->instruction.store(a.step->inst, std::memory_order_relaxed);
      }
      const size_t first_event = trace_ ? Mark() : 0;
      Status st = RunAction(a, f);
      if (!st.ok()) {
        // A collective the stop woke (its communicator aborted) fails with the stop's reason.
        if (progress_ != nullptr && o_.monitor->stopped()) return o_.monitor->stop_reason();
        if (!st.instruction().empty()) return st;
        const Instruction& inst = *a.step->inst;
        return Annotate(st, StrCat("instruction '", inst.name(), "' (", OpcodeName(inst.opcode()), ") on GPU ",
                                   s_.options.device, ": "))
            .AttributedTo(inst.name(), std::string(OpcodeName(inst.opcode())));
      }
      if (trace_) traced_.push_back({&a, first_event, Mark()});
      ++actions_run_;
    }
    std::vector<std::byte*> root;
    for (const Loc& l : c.root) root.push_back(Resolve(l, f));
    return root;
  }

  // Turns the recorded events into step times (after the stream finished).
  Status Collect(GpuRunStats& stats) {
    for (const Traced& t : traced_) {
      if (t.begin == kNoEvent || t.end == kNoEvent) continue;
      XS_ASSIGN_OR_RETURN(const float begin, Event::ElapsedMs(s_.start, s_.trace_events[t.begin]));
      XS_ASSIGN_OR_RETURN(const float end, Event::ElapsedMs(s_.start, s_.trace_events[t.end]));
      const Instruction& inst = *t.action->step->inst;
      std::string name = StrCat(ActionKindName(t.action->kind), " ", inst.name());
      if (const FusedPayload* fused = t.action->step->FindPayload<FusedPayload>()) {
        name = StrCat("fusion ", inst.name(), " (", fused->loop->members, " ops)");
      }
      stats.steps.push_back({&inst, std::move(name), begin * 1e3, (end - begin) * 1e3});
    }
    stats.actions_run += actions_run_;
    return OkStatus();
  }
  int64_t actions_run() const { return actions_run_; }

 private:
  struct Traced {
    const Action* action;
    size_t begin, end;
  };

  // Records a timing event; kNoEvent when none could be made (the action goes untimed).
  static constexpr size_t kNoEvent = SIZE_MAX;
  size_t Mark() {
    if (events_used_ == s_.trace_events.size()) {
      StatusOr<Event> e = Event::Create(s_.options.device, /*timing=*/true);
      if (!e.ok()) return kNoEvent;
      s_.trace_events.push_back(std::move(e).value());
    }
    cudaEventRecord(s_.trace_events[events_used_].get(), s_.stream);
    return events_used_++;
  }

  std::byte* Resolve(const Loc& l, const Frame& f) const {
    switch (l.kind) {
      case Loc::kParam: return l.index < static_cast<int64_t>(f.params.size()) ? f.params[l.index] : nullptr;
      case Loc::kFrame: return f.base + l.index;
      case Loc::kConstant: return s_.constants.data() + l.index;
      default: return nullptr;
    }
  }
  std::vector<std::byte*> ResolveAll(const std::vector<Loc>& v, const Frame& f, size_t begin = 0,
                                     size_t end = SIZE_MAX) const {
    std::vector<std::byte*> out;
    for (size_t i = begin; i < v.size() && i < end; ++i) out.push_back(Resolve(v[i], f));
    return out;
  }

  Status Copy(std::byte* dst, const std::byte* src, int64_t bytes) {
    if (dst == src || bytes <= 0) return OkStatus();
    XS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, s_.stream));
    return OkStatus();
  }

  // Reads `bytes` (1..8) at `src` on the host, after everything enqueued so far.
  StatusOr<int64_t> ReadScalar(const std::byte* src, int64_t bytes, bool is_signed) {
    XS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(s_.host_scalar.data(), src, static_cast<size_t>(bytes),
                                            cudaMemcpyDeviceToHost, s_.stream));
    XS_RETURN_IF_ERROR(Stream::Borrow(s_.options.device, s_.stream).Synchronize());
    int64_t v = 0;
    std::memcpy(&v, s_.host_scalar.data(), static_cast<size_t>(bytes));
    if (is_signed && bytes < 8 && (v >> (bytes * 8 - 1)) & 1) v -= int64_t{1} << (bytes * 8);
    return v;
  }

  Status Launch(const PlannedKernel& k, const Action& a, const Frame& f) {
    KernelArgs args;
    for (const KernelArg& arg : k.args) {
      const Loc& l = arg.kind == KernelArg::kInput ? a.in[arg.index]
                     : arg.kind == KernelArg::kOutput ? a.out[arg.index] : a.temps[arg.index];
      args.pointers.push_back(Resolve(l, f));
    }
    const LaunchDims& d = k.kernel.launch;
    return LaunchKernel(s_.kernels.at(&k), dim3(static_cast<unsigned>(d.grid)), dim3(static_cast<unsigned>(d.block)),
                        args.get(), static_cast<size_t>(d.shared_bytes), s_.stream);
  }

  // Copies callee root leaves into `out` (the caller's buffers for the step's result).
  Status CopyOut(const std::vector<std::byte*>& root, const Action& a, const Frame& f) {
    for (size_t i = 0; i < root.size() && i < a.out.size(); ++i) {
      XS_RETURN_IF_ERROR(Copy(Resolve(a.out[i], f), root[i], a.out_bytes[i]));
    }
    return OkStatus();
  }

  Status RunAction(const Action& a, const Frame& f);
  Status RunCollective(const Action& a, const Frame& f);
  Status RunWhile(const Action& a, const Frame& f);

  GpuExecutable::State& s_;
  const GpuRunOptions& o_;
  bool trace_;
  DeviceProgress* progress_;  // o_.monitor's slot for this device, or null
  size_t events_used_ = 0;
  std::vector<Traced> traced_;
  int64_t actions_run_ = 0;
  std::unordered_set<const void*> started_;  // keys started through the runner
};

Status Runner::RunAction(const Action& a, const Frame& f) {
  switch (a.kind) {
    case ActionKind::kAlias:
      return OkStatus();
    case ActionKind::kKernels:
      for (const PlannedKernel& k : a.kernels) XS_RETURN_IF_ERROR(Launch(k, a, f));
      return OkStatus();
    case ActionKind::kGemm: {
      for (const PlannedKernel& k : a.kernels) XS_RETURN_IF_ERROR(Launch(k, a, f));  // permuted copies
      return s_.gemms.at(&a).Run(s_.stream, Resolve(a.gemm_operands[0], f), Resolve(a.gemm_operands[1], f),
                                 Resolve(a.out[0], f), s_.workspace.data());
    }
    case ActionKind::kCopy:
      for (size_t i = 0; i < a.out.size() && i < a.in.size(); ++i) {
        XS_RETURN_IF_ERROR(Copy(Resolve(a.out[i], f), Resolve(a.in[i], f), a.out_bytes[i]));
      }
      return OkStatus();
    case ActionKind::kZero:
      for (size_t i = 0; i < a.out.size(); ++i) {
        XS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(Resolve(a.out[i], f), 0, static_cast<size_t>(a.out_bytes[i]), s_.stream));
      }
      return OkStatus();
    case ActionKind::kCollective:
      return RunCollective(a, f);
    case ActionKind::kDone:
      if (s_.options.collectives != nullptr && started_.erase(a.collective_key) > 0) {
        return s_.options.collectives->Finish(a.collective_key);
      }
      return OkStatus();
    case ActionKind::kCall: {
      XS_ASSIGN_OR_RETURN(std::vector<std::byte*> root,
                          Run(*a.callees[0], f.base + a.callee_offset, ResolveAll(a.in, f)));
      return CopyOut(root, a, f);
    }
    case ActionKind::kWhile:
      return RunWhile(a, f);
    case ActionKind::kConditional: {
      const Shape& sel = a.step->inst->operand(0)->shape();
      XS_ASSIGN_OR_RETURN(const int64_t v, ReadScalar(Resolve(a.in[0], f), DTypeSize(sel.dtype()), sel.dtype() != DType::kPred));
      const int64_t n = static_cast<int64_t>(a.callees.size());
      const int64_t b = sel.dtype() == DType::kPred ? (v != 0 ? 0 : 1) : (v < 0 || v >= n ? n - 1 : v);  // XLA
      XS_ASSIGN_OR_RETURN(std::vector<std::byte*> root,
                          Run(*a.callees[b], f.base + a.callee_offset,
                              ResolveAll(a.in, f, a.in_begin[1 + b], a.in_begin[2 + b])));
      return CopyOut(root, a, f);
    }
    case ActionKind::kConv: {
      for (const PlannedKernel& k : a.kernels) XS_RETURN_IF_ERROR(Launch(k, a, f));  // permuted kernel
      return s_.convs.at(&a).Run(s_.stream, Resolve(a.gemm_operands[0], f), Resolve(a.gemm_operands[1], f),
                                 Resolve(a.out[0], f), s_.workspace.data());
    }
    case ActionKind::kUnsupported:
      break;
  }
  return Unimplemented("unsupported on the GPU: ", a.why);
}

Status Runner::RunWhile(const Action& a, const Frame& f) {
  const std::vector<std::byte*> carry = ResolveAll(a.out, f);
  for (size_t i = 0; i < carry.size(); ++i) XS_RETURN_IF_ERROR(Copy(carry[i], Resolve(a.in[i], f), a.out_bytes[i]));
  const GpuComputation& body = *a.callees[1];
  std::byte* region = f.base + a.callee_offset;
  // The innermost loop and its iteration for the monitor, the outer loop's restored on exit.
  ScopedLoopProgress loop(progress_, a.step->inst);
  for (int64_t iteration = 0;; ++iteration) {
    if (progress_ != nullptr && o_.monitor->stopped()) return o_.monitor->stop_reason();
    loop.At(iteration);
    XS_ASSIGN_OR_RETURN(std::vector<std::byte*> pred, Run(*a.callees[0], region, carry));
    XS_ASSIGN_OR_RETURN(const int64_t go, ReadScalar(pred.at(0), 1, false));
    if (go == 0) return OkStatus();
    if (o_.max_while_iterations >= 0 && iteration >= o_.max_while_iterations) {
      return InvalidArgument("while loop '", a.step->inst->name(), "' exceeded ", o_.max_while_iterations,
                             " iterations ", kWhileLimitNote)
          .WithDetail(StatusDetail::kWhileIterationLimit);
    }
    XS_ASSIGN_OR_RETURN(std::vector<std::byte*> root, Run(body, region, carry));
    // Carries the body passes to another position go through the temporary, so none is
    // overwritten before it is read.
    std::byte* swap = a.temps.empty() ? nullptr : Resolve(a.temps[0], f);
    std::vector<std::pair<size_t, std::byte*>> swapped;
    for (size_t i = 0; i < root.size(); ++i) {
      const Loc& r = body.root[i];
      if (r.kind == Loc::kParam && r.index != static_cast<int64_t>(i) && swap != nullptr) {
        XS_RETURN_IF_ERROR(Copy(swap, root[i], a.out_bytes[i]));
        swapped.push_back({i, swap});
        swap += a.out_bytes[i];
      }
    }
    for (size_t i = 0; i < root.size(); ++i) {
      const Loc& r = body.root[i];
      if (!(r.kind == Loc::kParam && r.index != static_cast<int64_t>(i))) {
        XS_RETURN_IF_ERROR(Copy(carry[i], root[i], a.out_bytes[i]));
      }
    }
    for (const auto& [i, from] : swapped) XS_RETURN_IF_ERROR(Copy(carry[i], from, a.out_bytes[i]));
  }
}

Status Runner::RunCollective(const Action& a, const Frame& f) {
  const Instruction& inst = *a.collective;
  std::vector<Shape> in_shapes, out_shapes;
  for (const Instruction* o : inst.operands()) FlattenArrayShapes(o->shape(), in_shapes);
  const Shape& s = inst.shape();
  FlattenArrayShapes((inst.opcode() == Opcode::kAllGatherStart || inst.opcode() == Opcode::kCollectivePermuteStart) &&
                             s.IsTuple() && s.tuple_size() >= 2
                         ? s.tuple_shape(1)
                         : s,
                     out_shapes);
  if (in_shapes.size() != a.in.size() || out_shapes.size() != a.out.size()) {
    return Internal("collective '", inst.name(), "': ", a.in.size(), " operand and ", a.out.size(),
                    " result leaves planned for ", in_shapes.size(), " and ", out_shapes.size());
  }
  if (GpuCollectiveRunner* runner = s_.options.collectives) {
    std::vector<ConstBufferView> in;
    std::vector<BufferView> out;
    for (size_t i = 0; i < in_shapes.size(); ++i) in.push_back({Resolve(a.in[i], f), in_shapes[i].dtype(), in_shapes[i].dims()});
    for (size_t i = 0; i < out_shapes.size(); ++i) out.push_back({Resolve(a.out[i], f), out_shapes[i].dtype(), out_shapes[i].dims()});
    XS_RETURN_IF_ERROR(runner->Run(inst, in, out, a.start ? a.collective_key : nullptr));
    if (a.start) started_.insert(a.collective_key);
    return OkStatus();
  }
  // One participant (XLA: a group of one is the identity): the operand, or zeros on a
  // collective-permute device nobody sends to.
  if (inst.attrs().replica_groups) {
    for (const auto& g : inst.attrs().replica_groups->Groups()) {
      if (g.size() > 1) {
        return UnsupportedInstruction(inst, StrCat("its replica groups have ", g.size(),
                                                   " participants and this run has no collective runner"));
      }
    }
  }
  bool receives = true;
  if (inst.opcode() == Opcode::kCollectivePermute || inst.opcode() == Opcode::kCollectivePermuteStart) {
    receives = false;
    for (const auto& [src, dst] : inst.attrs().source_target_pairs.value_or(std::vector<std::pair<int64_t, int64_t>>{})) {
      if (dst != s_.partition_id) continue;
      if (src != dst) return UnsupportedInstruction(inst, StrCat("device ", dst, " receives from device ", src, " and this run has one device"));
      receives = true;
    }
  }
  for (size_t i = 0; i < out_shapes.size(); ++i) {
    if (!in_shapes[i].Compatible(out_shapes[i])) {
      return UnsupportedInstruction(inst, "its result shape differs from its operand's, so it needs more than one participant");
    }
    if (receives) {
      XS_RETURN_IF_ERROR(Copy(Resolve(a.out[i], f), Resolve(a.in[i], f), a.out_bytes[i]));
    } else {
      XS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(Resolve(a.out[i], f), 0, static_cast<size_t>(a.out_bytes[i]), s_.stream));
    }
  }
  return OkStatus();
}

// Writes new partition / replica ids into the constant region (stream-ordered before the run,
// so a captured graph, which reads the region, sees them too).
Status SetIds(GpuExecutable::State& s, const GpuRunOptions& o) {
  const int64_t partition = o.partition_id.value_or(s.partition_id);
  const int64_t replica = o.replica_id.value_or(s.replica_id);
  if (partition == s.partition_id && replica == s.replica_id) return OkStatus();
  for (const auto& [offset, op] : s.data->id_constants) {
    const uint32_t id = static_cast<uint32_t>(op == Opcode::kPartitionId ? partition : replica);
    // From pageable memory: the call returns once `id` is staged.
    XS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(s.constants.data() + offset, &id, sizeof(id), cudaMemcpyHostToDevice, s.stream));
  }
  s.partition_id = partition;
  s.replica_id = replica;
  return OkStatus();
}

// Captures the entry's actions into s.graph_exec for arguments `params` (nothing runs).
Status Capture(GpuExecutable::State& s, Runner& runner, const std::vector<std::byte*>& params) {
  if (s.graph_exec != nullptr) cudaGraphExecDestroy(s.graph_exec);
  s.graph_exec = nullptr;
  s.graph_args.clear();
  XS_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal));
  StatusOr<std::vector<std::byte*>> r = runner.Run(*s.data->entry, s.arena.data(), params);
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(s.stream, &g);
  struct DestroyGraph {
    cudaGraph_t g;
    ~DestroyGraph() {
      if (g != nullptr) cudaGraphDestroy(g);
    }
  } destroy{g};
  XS_RETURN_IF_ERROR(r.status());
  XS_CUDA_RETURN_IF_ERROR(e);
  XS_CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&s.graph_exec, g, 0));
  s.graph_args = params;
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<DeviceArray>> GpuExecutable::Run(std::span<const Array* const> args, const GpuRunOptions& options,
                                                      GpuRunStats* stats) {
  State& s = *state_;
  const std::vector<Shape>& want = s.data->argument_shapes;
  if (args.size() != want.size()) {
    return InvalidArgument("'", s.plan->executable().module().entry()->name(), "' takes ", want.size(),
                           " argument(s) but ", args.size(), " were given");
  }
  ScopedDevice scope(s.options.device);
  XS_RETURN_IF_ERROR(scope.status());
  std::vector<DeviceArray> placed;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i]->dtype() != want[i].dtype() || args[i]->dims() != want[i].dims()) {
      return InvalidArgument("argument ", i, " has shape ", args[i]->shape().ToString(false), " but the program takes ",
                             want[i].ToString(false));
    }
    std::byte* dst = s.arguments.data() + s.argument_offsets[i];
    if (args[i]->byte_size() > 0) {
      XS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, args[i]->data(), static_cast<size_t>(args[i]->byte_size()),
                                              cudaMemcpyHostToDevice, s.stream));
    }
    placed.push_back({want[i], dst});
  }
  return RunOnDevice(placed, options, stats);
}

StatusOr<std::vector<DeviceArray>> GpuExecutable::RunOnDevice(std::span<const DeviceArray> args,
                                                              const GpuRunOptions& options, GpuRunStats* stats) {
  State& s = *state_;
  const std::vector<Shape>& want = s.data->argument_shapes;
  if (args.size() != want.size()) return InvalidArgument("the program takes ", want.size(), " argument(s) but ", args.size(), " were given");
  std::vector<std::byte*> params;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].shape.dtype() != want[i].dtype() || args[i].shape.dims() != want[i].dims()) {
      return InvalidArgument("argument ", i, " has shape ", args[i].shape.ToString(false), " but the program takes ",
                             want[i].ToString(false));
    }
    params.push_back(args[i].data);
  }
  ScopedDevice scope(s.options.device);
  XS_RETURN_IF_ERROR(scope.status());
  XS_RETURN_IF_ERROR(SetIds(s, options));
  if (options.monitor != nullptr && options.monitor->stopped()) return options.monitor->stop_reason();
  const bool trace = options.trace;
  const bool graph = options.use_graph && s.graph_blocker.empty() && !trace && s.runs > 0;
  Runner runner(s, options, trace);
  const double host_start_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
  XS_RETURN_IF_ERROR(s.start.Record(Stream::Borrow(s.options.device, s.stream)));
  std::vector<std::byte*> root;
  bool replayed = false;
  if (graph && (s.graph_exec == nullptr || s.graph_args != params)) {
    Status captured = Capture(s, runner, params);
    // A program that cannot be captured (a library call that refuses capture) runs eagerly
    // from now on, saying why.
    if (!captured.ok()) {
      cudaGetLastError();  // clear a capture error so the eager run starts clean
      // A stop during the capture says nothing about the program: the next run captures again.
      if (options.monitor != nullptr && options.monitor->stopped()) return options.monitor->stop_reason();
      s.graph_blocker = StrCat("capture failed: ", captured.message());
    }
  }
  if (graph && s.graph_exec != nullptr && s.graph_args == params) {
    for (const Loc& l : s.data->entry->root) {
      root.push_back(l.kind == Loc::kParam      ? params[l.index]
                     : l.kind == Loc::kFrame    ? s.arena.data() + l.index
                     : l.kind == Loc::kConstant ? s.constants.data() + l.index
                                                : nullptr);
    }
    XS_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(s.graph_exec, s.stream));
    replayed = true;
  } else {
    XS_ASSIGN_OR_RETURN(root, runner.Run(*s.data->entry, s.arena.data(), params));
  }
  ++s.runs;
  XS_RETURN_IF_ERROR(s.end.Record(Stream::Borrow(s.options.device, s.stream)));
  if (stats != nullptr || trace) {
    XS_RETURN_IF_ERROR(s.end.Synchronize());
    if (stats != nullptr) {
      XS_ASSIGN_OR_RETURN(const float ms, Event::ElapsedMs(s.start, s.end));
      stats->device_us = ms * 1e3;
      stats->host_start_us = host_start_us;
      stats->replayed_graph = replayed;
      XS_RETURN_IF_ERROR(runner.Collect(*stats));
    }
  }
  std::vector<DeviceArray> out;
  for (size_t i = 0; i < root.size(); ++i) out.push_back({s.data->result_shapes[i], root[i]});
  return out;
}

}  // namespace xs::cuda
