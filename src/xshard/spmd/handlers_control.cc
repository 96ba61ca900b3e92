// Tuples and control flow. tuple / get-tuple-element route element values; while, conditional
// and call partition their called computations with the shardings the call site gives their
// parameters (while: the loop state's sharding for the body's parameter and root, so every
// iteration sees the same layout; the condition's predicate is replicated).
#include "xshard/base/strings.h"
#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {
namespace {

// The sharding a called computation's parameter takes: its own annotation, else the argument's.
HloSharding CalleeParameterSharding(const Computation& callee, int i, const PartitionedValue& arg) {
  const Instruction* p = i < callee.num_parameters() ? callee.parameter(i) : nullptr;
  if (p != nullptr && p->sharding()) {
    StatusOr<HloSharding> s = CanonicalSharding(*p->sharding());
    if (s.ok()) return *s;
  }
  return arg.sharding();
}

// Runs `fn` with the report's cause restored afterwards (a callee changes it).
template <typename Fn>
auto KeepingCause(ModuleState& state, Fn fn) {
  const Instruction* cause = state.cause;
  auto result = fn();
  state.cause = cause;
  return result;
}

}  // namespace

Status HandleTuple(const Instruction& inst, Context& ctx) {
  const HloSharding target = ctx.TargetOf(inst);
  std::vector<Instruction*> elements;
  std::vector<HloSharding> shardings;
  for (int i = 0; i < inst.operand_count(); ++i) {
    XS_ASSIGN_OR_RETURN(PartitionedValue v,
                        ctx.Get(inst.operand(i)).Reshard(SubSharding(inst.shape(), target, i),
                                                         StrCat("tuple element ", i)));
    elements.push_back(v.hlo());
    shardings.push_back(v.sharding());
  }
  ctx.Set(&inst, PartitionedValue(ctx.em().Tuple(std::move(elements)), inst.shape(),
                                  JoinTuple(inst.shape(), shardings), &ctx.em()));
  return OkStatus();
}

// opt-barrier (jax.checkpoint's remat boundary): the value passes through leaf by leaf, each in
// the sharding propagation gave it (its operand's, unless a user asked for another).
Status HandleOptimizationBarrier(const Instruction& inst, Context& ctx) {
  XS_ASSIGN_OR_RETURN(PartitionedValue x,
                      ctx.Get(inst.operand(0)).Reshard(ctx.TargetOf(inst), "optimization barrier operand"));
  Instruction* barrier = ctx.em().Add(Opcode::kOptimizationBarrier, x.hlo()->shape(), {x.hlo()});
  ctx.Set(&inst, PartitionedValue(barrier, inst.shape(), x.sharding(), &ctx.em()));
  return OkStatus();
}

Status HandleGetTupleElement(const Instruction& inst, Context& ctx) {
  return ctx.Finish(inst, ctx.Get(inst.operand(0)).TupleElement(static_cast<int>(inst.tuple_index())));
}

Status HandleWhile(const Instruction& inst, Context& ctx) {
  ModuleState& state = ctx.state();
  Emitter& em = ctx.em();
  const HloSharding w = ctx.TargetOf(inst);
  XS_ASSIGN_OR_RETURN(PartitionedValue init, ctx.Get(inst.operand(0)).Reshard(w, "while loop state"));
  XS_ASSIGN_OR_RETURN(Computation* cond, KeepingCause(state, [&] {
    return PartitionCalledComputation(state, *inst.while_condition(), {w}, HloSharding::Replicate());
  }));
  XS_ASSIGN_OR_RETURN(Computation* body, KeepingCause(state, [&] {
    return PartitionCalledComputation(state, *inst.while_body(), {w}, w);
  }));
  XS_ASSIGN_OR_RETURN(Shape local, LocalShape(inst.shape(), w, em.num_partitions()));
  Instruction* loop = em.Add(Opcode::kWhile, std::move(local), {init.hlo()}, inst.attrs(),
                             {{CallRole::kCondition, cond}, {CallRole::kBody, body}}, inst.name());
  ctx.Set(&inst, PartitionedValue(loop, inst.shape(), w, &em));
  return OkStatus();
}

Status HandleConditional(const Instruction& inst, Context& ctx) {
  ModuleState& state = ctx.state();
  Emitter& em = ctx.em();
  const HloSharding out = ctx.TargetOf(inst);
  XS_ASSIGN_OR_RETURN(PartitionedValue index, ctx.Get(inst.operand(0)).Replicate("branch index"));
  std::vector<Instruction*> operands = {index.hlo()};
  std::vector<CalledComputation> calls;
  const std::vector<Computation*> branches = inst.branch_computations();
  for (size_t j = 0; j < branches.size(); ++j) {
    const PartitionedValue& arg = ctx.Get(inst.operand(static_cast<int>(j) + 1));
    const HloSharding param = CalleeParameterSharding(*branches[j], 0, arg);
    XS_ASSIGN_OR_RETURN(PartitionedValue a, arg.Reshard(param, StrCat("branch ", j, " argument")));
    operands.push_back(a.hlo());
    XS_ASSIGN_OR_RETURN(Computation* c, KeepingCause(state, [&] {
      return PartitionCalledComputation(state, *branches[j], {param}, out);
    }));
    calls.push_back({inst.calls()[j].role, c});
  }
  XS_ASSIGN_OR_RETURN(Shape local, LocalShape(inst.shape(), out, em.num_partitions()));
  Instruction* c = em.Add(Opcode::kConditional, std::move(local), std::move(operands), inst.attrs(),
                          std::move(calls), inst.name());
  ctx.Set(&inst, PartitionedValue(c, inst.shape(), out, &em));
  return OkStatus();
}

Status HandleCall(const Instruction& inst, Context& ctx) {
  ModuleState& state = ctx.state();
  Emitter& em = ctx.em();
  const HloSharding out = ctx.TargetOf(inst);
  const Computation& callee = *inst.to_apply();
  std::vector<Instruction*> operands;
  std::vector<HloSharding> params;
  for (int i = 0; i < inst.operand_count(); ++i) {
    const PartitionedValue& arg = ctx.Get(inst.operand(i));
    params.push_back(CalleeParameterSharding(callee, i, arg));
    XS_ASSIGN_OR_RETURN(PartitionedValue a, arg.Reshard(params.back(), StrCat("call argument ", i)));
    operands.push_back(a.hlo());
  }
  XS_ASSIGN_OR_RETURN(Computation* c, KeepingCause(state, [&] {
    return PartitionCalledComputation(state, callee, params, out);
  }));
  XS_ASSIGN_OR_RETURN(Shape local, LocalShape(inst.shape(), out, em.num_partitions()));
  Instruction* call = em.Add(Opcode::kCall, std::move(local), std::move(operands), inst.attrs(),
                             {{CallRole::kToApply, c}}, inst.name());
  ctx.Set(&inst, PartitionedValue(call, inst.shape(), out, &em));
  return OkStatus();
}

}  // namespace xs::spmd::internal
