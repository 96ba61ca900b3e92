// Executor handlers for control flow and the ops that only move values: call, fusion (run as a
// call), while, conditional (pred and indexed), custom-call (Sharding / SPMD shape markers as
// identities) and copy-start / -done. Collectives and async pairs: executable_collectives.cc.
#include <algorithm>
#include <cstdio>

#include "xshard/exec/executable_plan.h"
#include "xshard/exec/run_monitor.h"

namespace xs {

void RegisterCollectiveHandlers(HandlerTable& table);

namespace {

Status AddCallee(const Instruction& inst, const Computation* c, Step& step, const Program& program) {
  if (c == nullptr) return InvalidArgument("missing called computation");
  const ComputationPlan* plan = program.Get(c);
  if (plan == nullptr) return Internal("computation '", c->name(), "' was not planned");
  step.callees.push_back(plan);
  (void)inst;
  return OkStatus();
}

std::vector<Slot> TakeAll(const Step& step, Frame& frame, int first = 0) {
  std::vector<Slot> args;
  for (size_t i = first; i < step.operands.size(); ++i) args.push_back(TakeOperand(step, frame, static_cast<int>(i)));
  return args;
}

Status RunCall(const Step& step, Frame& frame, RunContext& ctx) {
  XS_ASSIGN_OR_RETURN(frame.slots[step.out], RunPlan(*step.callees[0], TakeAll(step, frame), ctx));
  return OkStatus();
}

Status PrepareCall(const Instruction& inst, Step& step, const Program& program) {
  const Computation* c = inst.opcode() == Opcode::kFusion ? inst.called(CallRole::kCalls) : inst.to_apply();
  XS_RETURN_IF_ERROR(AddCallee(inst, c, step, program));
  if (c->num_parameters() != inst.operand_count()) {
    return InvalidArgument("calls '", c->name(), "' (", c->num_parameters(), " parameters) with ",
                           inst.operand_count(), " operands");
  }
  step.run = &RunCall;
  return OkStatus();
}

bool PredValue(const Slot& s) {
  return s.array != nullptr && s.array->num_elements() > 0 && s.array->data()[0] != std::byte{0};
}

Status RunWhile(const Step& step, Frame& frame, RunContext& ctx) {
  Slot state = TakeOperand(step, frame, 0);
  int64_t iterations = 0;
  // The innermost loop and its iteration for RunMonitor::Where; the outer one is restored after.
  ScopedLoopProgress loop(ctx.options.monitor ? &ctx.options.monitor->progress(ctx.options.monitor_rank) : nullptr,
                          step.inst);
  while (true) {
    loop.At(iterations);
    XS_ASSIGN_OR_RETURN(Slot cond, RunPlan(*step.callees[0], {state}, ctx));
    if (!PredValue(cond)) break;
    if (ctx.options.max_while_iterations >= 0 && iterations >= ctx.options.max_while_iterations) {
      return InvalidArgument("while loop '", step.inst->name(), "' exceeded ",
                             ctx.options.max_while_iterations, " iterations ", kWhileLimitNote)
          .WithDetail(StatusDetail::kWhileIterationLimit);
    }
    std::vector<Slot> args;
    args.push_back(std::move(state));
    XS_ASSIGN_OR_RETURN(state, RunPlan(*step.callees[1], std::move(args), ctx));
    ++iterations;
  }
  frame.slots[step.out] = std::move(state);
  return OkStatus();
}

Status PrepareWhile(const Instruction& inst, Step& step, const Program& program) {
  XS_RETURN_IF_ERROR(AddCallee(inst, inst.while_condition(), step, program));
  XS_RETURN_IF_ERROR(AddCallee(inst, inst.while_body(), step, program));
  const Shape& cond = inst.while_condition()->root()->shape();
  if (!cond.IsArray() || cond.dtype() != DType::kPred || cond.rank() != 0) {
    return InvalidArgument("while condition must return pred[], got ", cond.ToString(false));
  }
  step.run = &RunWhile;
  return OkStatus();
}

Status RunConditional(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& selector = OperandArray(step, frame, 0);
  const int branches = static_cast<int>(step.callees.size());
  int b = 0;
  if (selector.dtype() == DType::kPred) {
    b = selector.data()[0] != std::byte{0} ? 0 : 1;
  } else {
    const int64_t index = static_cast<int64_t>(selector.GetDouble(0));
    b = (index < 0 || index >= branches) ? branches - 1 : static_cast<int>(index);  // XLA: last branch
  }
  std::vector<Slot> args;
  args.push_back(TakeOperand(step, frame, 1 + b));
  XS_ASSIGN_OR_RETURN(frame.slots[step.out], RunPlan(*step.callees[b], std::move(args), ctx));
  return OkStatus();
}

Status PrepareConditional(const Instruction& inst, Step& step, const Program& program) {
  const std::vector<Computation*> branches = inst.branch_computations();
  if (branches.empty() || inst.operand_count() != static_cast<int>(branches.size()) + 1) {
    return InvalidArgument("conditional needs one operand per branch after the selector");
  }
  const Shape& sel = inst.operand(0)->shape();
  if (!sel.IsArray() || sel.rank() != 0 || (sel.dtype() != DType::kPred && sel.dtype() != DType::kS32)) {
    return InvalidArgument("conditional selector must be pred[] or s32[], got ", sel.ToString(false));
  }
  if (sel.dtype() == DType::kPred && branches.size() != 2) {
    return InvalidArgument("a pred conditional needs exactly two branches");
  }
  for (const Computation* c : branches) XS_RETURN_IF_ERROR(AddCallee(inst, c, step, program));
  step.run = &RunConditional;
  return OkStatus();
}

Status RunIdentity(const Step& step, Frame& frame, RunContext&) {
  frame.slots[step.out] = TakeOperand(step, frame, 0);
  return OkStatus();
}

Status RunNoResults(const Step& step, Frame& frame, RunContext&) {
  frame.slots[step.out] = TupleSlot({});
  return OkStatus();
}

Status PrepareCustomCall(const Instruction& inst, Step& step, const Program& program) {
  bool handled = false;
  XS_RETURN_IF_ERROR(PrepareExtraCustomCall(inst, step, program, &handled));
  if (handled) return OkStatus();
  const std::string target = inst.attrs().custom_call_target.value_or("");
  // Custom-calls that pass their operand through: sharding annotations (xla.sdy.FuncResultSharding:
  // JAX's Shardy lowering marks each result's sharding with it), the manual-region converters on
  // one device, propagation barriers, and memory-space / layout hints (host offloading, pinning),
  // which have no effect on a host run.
  static constexpr std::string_view kIdentities[] = {
      "Sharding",         "SPMDFullToShardShape", "SPMDShardToFullShape", "xla.sdy.FuncResultSharding",
      "ShardBarrierFrom", "ShardBarrierTo",       "MoveToHost",           "MoveToDevice",
      "PinToDevice",      "PinToDeviceSram",      "LayoutConstraint",     "annotate_device_placement"};
  // JAX's host callbacks (jax.debug.print / debug.callback, pure_callback, io_callback) call a
  // Python function of the process that traced them, by an address in their backend_config.
  static constexpr std::string_view kPythonCallbacks[] = {"xla_ffi_python_cpu_callback", "xla_ffi_python_gpu_callback",
                                                          "xla_ffi_partitioned_python_cpu_callback",
                                                          "xla_python_cpu_callback", "xla_python_gpu_callback"};
  if (std::find(std::begin(kPythonCallbacks), std::end(kPythonCallbacks), target) != std::end(kPythonCallbacks)) {
    if (inst.shape().IsTuple() && inst.shape().tuple_size() == 0) {
      // No results (jax.debug.print, jax.debug.callback): the program's values do not depend on
      // it, so it is skipped, with one line saying so.
      std::fprintf(stderr,
                   "xshard: note: %s (a jax.debug.print or debug.callback: a Python host callback) is skipped; "
                   "only the JAX process that traced it can call it\n",
                   inst.name().c_str());
      step.run = &RunNoResults;
      return OkStatus();
    }
    return UnsupportedInstruction(inst,
                                  StrCat("custom_call_target=\"", target,
                                         "\" is a Python host callback (jax.debug.print, jax.debug.callback, "
                                         "jax.pure_callback or io_callback), which only the JAX process that traced it "
                                         "can call: remove it from the jitted function (return the values to print or "
                                         "check instead) and export again"));
  }
  if (target == "CustomSPMDPartitioning") {
    return UnsupportedInstruction(
        inst,
        "custom_call_target=\"CustomSPMDPartitioning\" is a jax.experimental.custom_partitioning op: its "
        "lowering and partitioner are Python functions of the JAX process that traced it (backend_config "
        "holds their address), which xshard cannot call: call the op's plain JAX implementation instead "
        "and export again");
  }
  if (std::find(std::begin(kIdentities), std::end(kIdentities), target) == std::end(kIdentities)) {
    std::string known;
    for (std::string_view t : kIdentities) known += StrCat(t, ", ");
    return UnsupportedInstruction(
        inst, StrCat("custom_call_target=\"", target, "\" (supported: ", known,
                     "TopK, __op$block_scaled_dot, lapack_?potrf_ffi, lapack_?getrf_ffi, lapack_?trsm_ffi, "
                     "lapack_?geqrf_ffi, lapack_?geqp3_ffi, lapack_{s,d}orgqr_ffi, lapack_{c,z}ungqr_ffi, "
                     "lapack_{s,d}ormqr_ffi, lapack_{c,z}unmqr_ffi, lapack_{s,d}syevd_ffi, lapack_{c,z}heevd_ffi, "
                     "lapack_?gesdd_ffi, lapack_?gesvd_ffi, lapack_?geev_ffi, lapack_?gees_ffi, lapack_?gehrd_ffi, "
                     "lapack_{s,d}sytrd_ffi, lapack_{c,z}hetrd_ffi, lapack_?gtsv_ffi, "
                     "_SPMDInternalOp_RotateRight, _SPMDInternalOp_MultiRotate, _SPMDInternalOp_Wrap, "
                     "_SPMDInternalOp_MultiSlice, _SPMDInternalOp_MultiPad)"));
  }
  if (inst.operand_count() != 1 || !inst.operand(0)->shape().Compatible(inst.shape())) {
    const bool converter = target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape";
    return UnsupportedInstruction(inst, StrCat("custom-call ", target, " changes the shape from ",
                                               inst.operand_count() == 1 ? inst.operand(0)->shape().ToString(false) : "?",
                                               " to ", inst.shape().ToString(false),
                                               converter ? ", which needs more than one device"
                                                         : "; it passes one operand through unchanged"));
  }
  step.run = &RunIdentity;
  return OkStatus();
}

Status RunTupleElement0(const Step& step, Frame& frame, RunContext&) {
  const Slot& s = frame.slots[step.operands[0]];
  frame.slots[step.out] = (s.tuple && !s.tuple->empty()) ? (*s.tuple)[0] : s;
  return OkStatus();
}

Status RunCopyStart(const Step& step, Frame& frame, RunContext& ctx) {
  const Slot& v = frame.slots[step.operands[0]];
  std::vector<Slot> parts = {v, v};
  const Shape& s = step.inst->shape();
  for (int i = 2; i < s.tuple_size(); ++i) parts.push_back(ZeroSlot(s.tuple_shape(i), ctx));
  frame.slots[step.out] = TupleSlot(std::move(parts));
  return OkStatus();
}

}  // namespace

void RegisterControlHandlers(HandlerTable& t) {
  auto set = [&t](Opcode op, PrepareFn f) { t[static_cast<int>(op)] = f; };
  set(Opcode::kCall, &PrepareCall);
  set(Opcode::kFusion, &PrepareCall);
  set(Opcode::kWhile, &PrepareWhile);
  set(Opcode::kConditional, &PrepareConditional);
  set(Opcode::kCustomCall, &PrepareCustomCall);
  set(Opcode::kCopyStart, &PrepareSimple<&RunCopyStart>);
  set(Opcode::kCopyDone, &PrepareSimple<&RunTupleElement0>);
  RegisterCollectiveHandlers(t);  // executable_collectives.cc: collectives and async pairs
}

}  // namespace xs
