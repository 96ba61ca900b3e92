// Executor handlers for collectives: the synchronous ones (one participant, or through
// ExecuteOptions::collectives), XLA's -start / -done pairs (all-gather, all-reduce,
// collective-permute) and async-start / -update / -done. When the runner is an
// AsyncCollectiveRunner a -start only starts the communication and its -done finishes it, so the
// device runs the instructions scheduled in between meanwhile; an async-start whose wrapped
// computation is one collective of its parameters (XLA's form of an asynchronous reduce-scatter
// or all-to-all) does the same. Other wrapped computations run at the async-start.
#include <algorithm>
#include <cstring>
#include <functional>

#include "xshard/exec/async_collectives.h"
#include "xshard/exec/executable_plan.h"

namespace xs {

void WrapHandlersForTrace(HandlerTable& table);  // executable_trace.cc

namespace {

bool IsStart(Opcode op) {
  return op == Opcode::kAllGatherStart || op == Opcode::kAllReduceStart ||
         op == Opcode::kCollectivePermuteStart;
}

// The shape of the collective's data result (the -start forms wrap it in a tuple).
const Shape& CoreShape(const Instruction& inst) {
  const Shape& s = inst.shape();
  if ((inst.opcode() == Opcode::kAllGatherStart || inst.opcode() == Opcode::kCollectivePermuteStart) &&
      s.IsTuple() && s.tuple_size() >= 2) {
    return s.tuple_shape(1);
  }
  return s;
}

void FlattenShapeLeaves(const Shape& s, std::vector<Shape>& out) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes()) FlattenShapeLeaves(e, out);
  } else if (s.IsArray()) {
    out.push_back(s);
  }
}

void CollectLeafPointers(const Slot& s, std::vector<std::shared_ptr<Array>>& out) {
  if (s.array) out.push_back(s.array);
  if (s.tuple) {
    for (const Slot& e : *s.tuple) CollectLeafPointers(e, out);
  }
}

AsyncCollectiveRunner* AsyncRunner(const RunContext& ctx) {
  return dynamic_cast<AsyncCollectiveRunner*>(ctx.options.collectives);
}

bool IsCollectiveOpcode(Opcode op) {
  return op == Opcode::kAllGather || op == Opcode::kAllReduce || op == Opcode::kReduceScatter ||
         op == Opcode::kAllToAll || op == Opcode::kCollectivePermute;
}

// The collective an async-start runs asynchronously: its wrapped computation's root, when that is
// a collective whose operands are the computation's parameters in order. Null otherwise.
const Instruction* WrappedCollective(const Instruction& start) {
  const Computation* c = start.async_wrapped_computation();
  if (c == nullptr || c->root() == nullptr) return nullptr;
  const Instruction* root = c->root();
  if (!IsCollectiveOpcode(root->opcode()) || root->operand_count() != c->num_parameters()) {
    return nullptr;
  }
  for (int i = 0; i < root->operand_count(); ++i) {
    const Instruction* p = root->operand(i);
    if (p->opcode() != Opcode::kParameter || p->parameter_number() != i) return nullptr;
  }
  return root;
}

// Starts `inst` through the async runner, or runs it at once through the plain one.
// `into`: the step's planned result buffer (a run at once of an array-shaped op), or null.
StatusOr<std::vector<std::shared_ptr<Array>>> RunOrStart(const Instruction& inst, const void* key,
                                                         const std::vector<const Array*>& inputs,
                                                         std::vector<std::shared_ptr<Array>> keep,
                                                         bool start, std::shared_ptr<Array> into,
                                                         RunContext& ctx) {
  std::vector<Array> outs;
  AsyncCollectiveRunner* async = start ? AsyncRunner(ctx) : nullptr;
  if (async != nullptr) {
    std::vector<std::shared_ptr<const void>> hold(keep.begin(), keep.end());
    XS_ASSIGN_OR_RETURN(outs, async->Start(inst, key, inputs, std::move(hold)));
  } else {
    Array* given[] = {into.get()};
    XS_ASSIGN_OR_RETURN(outs, ctx.options.collectives->RunCollective(
                                  inst, inputs, std::span<Array* const>(given, into ? 1 : 0)));
  }
  std::vector<std::shared_ptr<Array>> leaves;
  for (Array& a : outs) {
    const bool in_place = into != nullptr && outs.size() == 1 && a.data() == into->data() && a.dims() == into->dims();
    leaves.push_back(in_place ? into : AdoptArray(std::move(a), ctx));
  }
  return leaves;
}

// The one-participant result of an array collective in its planned buffer: the operand's
// values, or zeros on a collective-permute device nobody sends to.
StatusOr<std::vector<std::shared_ptr<Array>>> OneDeviceCopy(const Step& step, const Instruction& inst,
                                                            const Array& operand, std::shared_ptr<Array> out,
                                                            RunContext& ctx) {
  bool receives = true;
  if (inst.opcode() == Opcode::kCollectivePermute) {
    receives = false;
    const int64_t me = ctx.options.partition_id;
    for (const auto& [src, dst] : inst.attrs().source_target_pairs.value_or(
             std::vector<std::pair<int64_t, int64_t>>{})) {
      if (dst != me) continue;
      if (src != me) {
        return UnsupportedInstruction(inst, StrCat("device ", me, " receives from device ", src,
                                                   " and this run has one device"));
      }
      receives = true;
    }
  }
  if (!receives) {
    std::memset(out->data(), 0, static_cast<size_t>(out->byte_size()));
  } else {
    XS_CHECK(operand.byte_size() == out->byte_size(), "one-device collective ", step.inst->name());
    std::memcpy(out->data(), operand.data(), static_cast<size_t>(out->byte_size()));
  }
  return std::vector<std::shared_ptr<Array>>{std::move(out)};
}

Status RunCollective(const Step& step, Frame& frame, RunContext& ctx) {
  const Instruction& inst = *step.inst;
  std::vector<const Array*> inputs;
  std::vector<std::shared_ptr<Array>> operand_leaves;
  for (size_t i = 0; i < step.operands.size(); ++i) {
    FlattenSlot(frame.slots[step.operands[i]], inputs);
    CollectLeafPointers(frame.slots[step.operands[i]], operand_leaves);
  }
  const Shape& core = CoreShape(inst);
  std::vector<std::shared_ptr<Array>> leaves;
  // A collective run at once into an array result writes its planned buffer (Prepare sets
  // writes_result_buffer); the one-device path then copies rather than aliasing the operand.
  std::shared_ptr<Array> planned = step.writes_result_buffer ? NewArray(core, ctx) : nullptr;
  if (ctx.options.collectives != nullptr) {
    XS_ASSIGN_OR_RETURN(leaves, RunOrStart(inst, &inst, inputs, operand_leaves,
                                           IsStart(inst.opcode()), planned, ctx));
  } else if (planned != nullptr) {
    XS_ASSIGN_OR_RETURN(leaves, OneDeviceCopy(step, inst, *inputs[0], std::move(planned), ctx));
  } else {
    const bool permute = inst.opcode() == Opcode::kCollectivePermute ||
                         inst.opcode() == Opcode::kCollectivePermuteStart;
    bool receives = !permute;
    if (permute) {
      const int64_t me = ctx.options.partition_id;
      for (const auto& [src, dst] : inst.attrs().source_target_pairs.value_or(
               std::vector<std::pair<int64_t, int64_t>>{})) {
        if (dst != me) continue;
        if (src != me) {
          return UnsupportedInstruction(inst, StrCat("device ", me, " receives from device ", src,
                                                     " and this run has one device"));
        }
        receives = true;
      }
    }
    std::vector<Shape> want;
    FlattenShapeLeaves(core, want);
    for (size_t i = 0; i < want.size(); ++i) {
      if (!receives) {
        leaves.push_back(NewArray(want[i], ctx));  // a device nobody sends to gets zeros
      } else {
        leaves.push_back(operand_leaves[i]);
      }
    }
  }
  size_t pos = 0;
  Slot result = UnflattenSlot(core, leaves, &pos);
  // Buffers aliased from operands must not be overwritten later: mark them shared.
  if (ctx.options.collectives == nullptr) {
    std::function<void(Slot&)> unmark = [&](Slot& s) {
      s.donatable = false;
      if (s.tuple) {
        auto copy = std::make_shared<std::vector<Slot>>(*s.tuple);
        for (Slot& e : *copy) unmark(e);
        s.tuple = copy;
      }
    };
    unmark(result);
  }
  if (IsStart(inst.opcode()) && inst.shape().IsTuple() && &core != &inst.shape()) {
    std::vector<Slot> parts;
    if (step.operands.size() == 1) {
      parts.push_back(frame.slots[step.operands[0]]);
    } else {  // a combined start: ((operands...), (results...), ...)
      std::vector<Slot> ins;
      for (size_t i = 0; i < step.operands.size(); ++i) ins.push_back(frame.slots[step.operands[i]]);
      parts.push_back(TupleSlot(std::move(ins)));
    }
    parts.push_back(std::move(result));
    for (int i = 2; i < inst.shape().tuple_size(); ++i) parts.push_back(ZeroSlot(inst.shape().tuple_shape(i), ctx));
    result = TupleSlot(std::move(parts));
  }
  frame.slots[step.out] = std::move(result);
  return OkStatus();
}

Status PrepareCollective(const Instruction& inst, Step& step, const Program&) {
  const auto& groups = inst.attrs().replica_groups;
  if (groups) {
    for (const auto& g : groups->Groups()) {
      if (g.size() > 1) {
        // Only a multi-device runtime can run it; it passes ExecuteOptions::collectives, and the
        // check below is repeated at run time only when that is absent.
        step.count = -static_cast<int64_t>(g.size());
      }
    }
  }
  step.run = &RunCollective;
  // Run at once with one array operand and an array result: the result gets a planned buffer.
  step.writes_result_buffer = !IsStart(inst.opcode()) && inst.operand_count() == 1 &&
                              inst.operand(0)->shape().IsArray() && CoreShape(inst).IsArray();
  return OkStatus();
}

Status RunCollectiveChecked(const Step& step, Frame& frame, RunContext& ctx) {
  if (step.count < 0 && ctx.options.collectives == nullptr) {
    return UnsupportedInstruction(*step.inst, StrCat("its replica groups have ", -step.count,
                                                     " participants and this run has one device"));
  }
  std::vector<Shape> have, want;
  for (const Instruction* op : step.inst->operands()) FlattenShapeLeaves(op->shape(), have);
  FlattenShapeLeaves(CoreShape(*step.inst), want);
  if (ctx.options.collectives == nullptr) {
    bool same = have.size() == want.size();
    for (size_t i = 0; same && i < have.size(); ++i) same = have[i].Compatible(want[i]);
    if (!same) {
      return UnsupportedInstruction(*step.inst, "its result shape differs from its operand's, so it "
                                                "needs more than one participant");
    }
  }
  return RunCollective(step, frame, ctx);
}

Status PrepareCollectiveChecked(const Instruction& inst, Step& step, const Program& program) {
  XS_RETURN_IF_ERROR(PrepareCollective(inst, step, program));
  step.run = &RunCollectiveChecked;
  return OkStatus();
}

// ---- -done, async-start / -update / -done ----

// Finishes the start that `done` (a -done or async-done) completes, when it was started
// asynchronously.
Status FinishStarted(const Step& step, RunContext& ctx) {
  AsyncCollectiveRunner* async = ctx.options.collectives ? AsyncRunner(ctx) : nullptr;
  if (async == nullptr) return OkStatus();
  const Instruction* start = step.inst->operand(0);
  while (start->opcode() == Opcode::kAsyncUpdate) start = start->operand(0);
  if (start->opcode() == Opcode::kAsyncStart && WrappedCollective(*start) == nullptr) {
    return OkStatus();
  }
  return async->Finish(start);
}

Status RunDoneIdentity(const Step& step, Frame& frame, RunContext& ctx) {
  XS_RETURN_IF_ERROR(FinishStarted(step, ctx));
  frame.slots[step.out] = TakeOperand(step, frame, 0);
  return OkStatus();
}

Status RunDoneElement1(const Step& step, Frame& frame, RunContext& ctx) {
  XS_RETURN_IF_ERROR(FinishStarted(step, ctx));
  const Slot& s = frame.slots[step.operands[0]];
  frame.slots[step.out] = (s.tuple && s.tuple->size() >= 2) ? (*s.tuple)[1] : s;
  return OkStatus();
}

Status RunAsyncUpdate(const Step& step, Frame& frame, RunContext&) {
  frame.slots[step.out] = TakeOperand(step, frame, 0);
  return OkStatus();
}

Status RunAsyncStart(const Step& step, Frame& frame, RunContext& ctx) {
  std::vector<Slot> operands;
  for (size_t i = 0; i < step.operands.size(); ++i) operands.push_back(frame.slots[step.operands[i]]);
  const Instruction* collective = WrappedCollective(*step.inst);
  Slot result;
  if (collective != nullptr && ctx.options.collectives != nullptr) {
    std::vector<const Array*> inputs;
    std::vector<std::shared_ptr<Array>> keep;
    for (const Slot& s : operands) {
      FlattenSlot(s, inputs);
      CollectLeafPointers(s, keep);
    }
    XS_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Array>> leaves,
                        RunOrStart(*collective, step.inst, inputs, std::move(keep), true, nullptr, ctx));
    size_t pos = 0;
    result = UnflattenSlot(collective->shape(), leaves, &pos);
  } else {
    XS_ASSIGN_OR_RETURN(result, RunPlan(*step.callees[0], operands, ctx));
  }
  const Shape& s = step.inst->shape();
  std::vector<Slot> parts;
  parts.push_back(TupleSlot(std::move(operands)));
  parts.push_back(std::move(result));
  for (int i = 2; i < s.tuple_size(); ++i) parts.push_back(ZeroSlot(s.tuple_shape(i), ctx));
  frame.slots[step.out] = TupleSlot(std::move(parts));
  return OkStatus();
}

Status PrepareAsyncStart(const Instruction& inst, Step& step, const Program& program) {
  const Computation* c = inst.async_wrapped_computation();
  if (c == nullptr) return InvalidArgument("missing called computation");
  const ComputationPlan* plan = program.Get(c);
  if (plan == nullptr) return Internal("computation '", c->name(), "' was not planned");
  step.callees.push_back(plan);
  if (!inst.shape().IsTuple() || inst.shape().tuple_size() < 2) {
    return InvalidArgument("async-start must return a tuple ((operands), result, ...)");
  }
  step.run = &RunAsyncStart;
  return OkStatus();
}

}  // namespace

void RegisterCollectiveHandlers(HandlerTable& t) {
  auto set = [&t](Opcode op, PrepareFn f) { t[static_cast<int>(op)] = f; };
  for (Opcode op : {Opcode::kAllReduce, Opcode::kAllGather, Opcode::kReduceScatter, Opcode::kAllToAll,
                    Opcode::kRaggedAllToAll,
                    Opcode::kCollectivePermute, Opcode::kCollectiveBroadcast, Opcode::kAllReduceStart,
                    Opcode::kAllGatherStart, Opcode::kCollectivePermuteStart}) {
    set(op, &PrepareCollectiveChecked);
  }
  set(Opcode::kAllReduceDone, &PrepareSimple<&RunDoneIdentity>);
  set(Opcode::kAllGatherDone, &PrepareSimple<&RunDoneElement1>);
  set(Opcode::kCollectivePermuteDone, &PrepareSimple<&RunDoneElement1>);
  set(Opcode::kAsyncStart, &PrepareAsyncStart);
  set(Opcode::kAsyncUpdate, &PrepareSimple<&RunAsyncUpdate>);
  set(Opcode::kAsyncDone, &PrepareSimple<&RunDoneElement1>);
  WrapHandlersForTrace(t);  // XSHARD_TRACE=FILE; the table is complete once this runs
}

}  // namespace xs
