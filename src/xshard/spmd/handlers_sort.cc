// sort along a sharded dim without gathering it (XLA's strategy): the sorted dim's mesh axes move
// to another dim of the same operands (all-to-all; after that dim's own axes when it has some and
// still divides evenly), every partition sorts its whole
// rows, and the result moves back to its target (all-to-all). Chosen when that costs less than
// the rule handler's plan, which gathers the sorted dim; sorts along unsharded dims are the rule
// handler's (the other dims stay sharded).
#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {
namespace {

// The axes view to move: the first operand's whose sorted dim `d` is split (operands may differ
// elsewhere, e.g. argsort's positions iota is replicated along the keys' split dims: each is
// resharded to the moved view and costed), or nullopt when an operand is partial, off the mesh or
// manual, or none splits `d`.
std::optional<AxesSharding> SortedDimAxes(const Instruction& inst, Context& ctx, int d) {
  std::optional<AxesSharding> found;
  for (const Instruction* operand : inst.operands()) {
    const PartitionedValue& v = ctx.Get(operand);
    if (v.partial()) return std::nullopt;
    std::optional<AxesSharding> a = ctx.state().mesh.ToAxes(v.sharding(), v.global_shape().rank());
    if (!a || a->manual != 0) return std::nullopt;
    if (!found && !a->dims[d].empty()) found = a;
  }
  return found;
}

StatusOr<bool> TrySortByMovingTheAxes(const Instruction& inst, Context& ctx) {
  if (inst.operand_count() == 0 || !inst.attrs().dimensions || inst.attrs().dimensions->size() != 1) return false;
  const int d = static_cast<int>((*inst.attrs().dimensions)[0]);
  std::optional<AxesSharding> axes = SortedDimAxes(inst, ctx, d);
  if (!axes) return false;
  const TileMesh& mesh = ctx.state().mesh;
  ModuleState& state = ctx.state();
  const Shape& shape = inst.operand(0)->shape();
  const HloSharding target = ctx.TargetOf(inst);
  const int64_t rule_cost = RulePlanCost(inst, ctx, RuleConfig{});
  for (int j = 0; j < shape.rank(); ++j) {
    if (j == d) continue;
    // Dim j takes the sorted dim's axes after its own (XLA does the same when every dim is
    // sharded), as long as it still divides evenly.
    AxesSharding moved = *axes;
    moved.dims[j].insert(moved.dims[j].end(), moved.dims[d].begin(), moved.dims[d].end());
    moved.dims[d].clear();
    int64_t pieces = 1;
    for (int a : moved.dims[j]) pieces *= mesh.axis_size(a);
    if (!axes->dims[j].empty() && shape.dims()[j] % pieces != 0) continue;
    const HloSharding s = mesh.ToHloSharding(moved);
    int64_t cost = 0;
    for (int64_t i = 0; i < inst.operand_count(); ++i) {
      const PartitionedValue& v = ctx.Get(inst.operand(i));
      cost += ReshardCost(state, v.global_shape(), v.sharding(), std::nullopt, s);
      const Shape& leaf = inst.shape().IsTuple() ? inst.shape().tuple_shape(static_cast<int>(i)) : inst.shape();
      const HloSharding leaf_target = inst.shape().IsTuple() ? SubSharding(inst.shape(), target, static_cast<int>(i)) : target;
      cost += ReshardCost(state, leaf, s, std::nullopt, leaf_target);
    }
    if (cost >= std::min(rule_cost, kImpossibleCost)) continue;
    Emitter& em = ctx.em();
    std::vector<Instruction*> locals;
    std::vector<Shape> local_shapes;
    for (int64_t i = 0; i < inst.operand_count(); ++i) {
      XS_ASSIGN_OR_RETURN(PartitionedValue v,
                          ctx.Get(inst.operand(i)).Reshard(s, "move the sorted dim's split to another dim"));
      locals.push_back(v.hlo());
      local_shapes.push_back(v.hlo()->shape());
    }
    std::unique_ptr<Instruction> clone = inst.CloneWithNewOperands(locals);
    clone->set_shape(inst.shape().IsTuple() ? Shape::Tuple(local_shapes) : local_shapes[0]);
    clone->set_sharding(std::nullopt);
    clone->set_calls({{inst.calls()[0].role, state.Clone(*inst.calls()[0].computation)}});
    Instruction* local = em.AddInstruction(std::move(clone));
    const HloSharding result =
        inst.shape().IsTuple() ? JoinTuple(inst.shape(), std::vector<HloSharding>(inst.operand_count(), s)) : s;
    PartitionedValue sorted(local, inst.shape(), result, &em);
    // A replicated target: the rows stay split and each user gathers what it reads (a median
    // reads one column of the sorted rows, not all of them).
    bool replicated = true;
    if (target.IsTuple()) {
      for (const HloSharding& leaf : target.tuple_elements()) replicated = replicated && leaf.IsReplicated();
    } else {
      replicated = target.IsReplicated();
    }
    if (replicated) {
      ctx.Set(&inst, std::move(sorted));
      return true;
    }
    XS_RETURN_IF_ERROR(ctx.Finish(inst, sorted, "sorted rows"));
    return true;
  }
  return false;
}

}  // namespace

Status HandleSort(const Instruction& inst, Context& ctx) {
  XS_ASSIGN_OR_RETURN(bool done, TrySortByMovingTheAxes(inst, ctx));
  return done ? OkStatus() : PartitionByRule(inst, ctx, RuleConfig{});
}

}  // namespace xs::spmd::internal
