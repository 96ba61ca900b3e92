// reduce. Kept dims pass through; reduced dims are reduction factors: when one is sharded, each
// device reduces its piece (its padding first filled with the init value, which XLA requires to
// be the reducer's identity) and the partial results are combined with the same reducer: by an
// all-reduce (or reduce-scatter) over the mesh axes of the sharded reduced dims when the reducer
// is one a collective can run, otherwise (variadic argmax-style reduces, custom reducers) by an
// all-gather of the partial results, one per device along each sharded reduced dim, and a second
// local reduce of them (XLA's strategy): only the partials move, never the operands.
#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/spmd/handlers.h"
#include "xshard/spmd/rule_plan.h"
#include "xshard/spmd/shard_layout.h"

namespace xs::spmd::internal {

// True when `c` is (x, y) -> x op y for an op all-reduce can combine with.
bool IsCollectiveReducer(const Computation& c) { return CollectiveReduction(c).has_value(); }

namespace {

// The reduce cloned onto local operands with local result leaves `results`.
StatusOr<Instruction*> LocalReduce(const Instruction& inst, Context& ctx, std::vector<Instruction*> operands,
                                   const std::vector<Shape>& results) {
  std::unique_ptr<Instruction> clone = inst.CloneWithNewOperands(std::move(operands));
  clone->set_shape(inst.shape().IsTuple() ? Shape::Tuple(results) : results[0]);
  clone->set_sharding(std::nullopt);
  std::vector<CalledComputation> calls;
  for (const CalledComputation& c : inst.calls()) calls.push_back({c.role, ctx.state().Clone(*c.computation)});
  clone->set_calls(std::move(calls));
  XS_RETURN_IF_ERROR(Localize(*clone, inst));
  return ctx.em().AddInstruction(std::move(clone));
}

// A reduce whose reducer no collective runs, with reduced dims sharded in its first input: every
// input takes the first input's sharding; each device reduces its pieces (padding filled with
// the init values), keeps its partial results as a size-1 dim in place of each reduced dim (a
// value whose reduced dims have one element per tile, sharded like the input), all-gathers them
// along the sharded reduced dims and reduces them again. Returns false (emitting nothing) when
// the first input's sharding is not such a tiled sharding on the mesh.
StatusOr<bool> ReduceByGatheringPartials(const Instruction& inst, Context& ctx) {
  const int n = static_cast<int>(inst.operand_count()) / 2;
  const Shape& in_shape = inst.operand(0)->shape();
  const int rank = static_cast<int>(in_shape.dims().size());
  const HloSharding& s0 = ctx.Get(inst.operand(0)).sharding();
  ModuleState& state = ctx.state();
  if (!s0.IsTiled()) return false;
  std::optional<AxesSharding> axes = state.mesh.ToAxes(s0, rank);
  if (!axes || axes->manual != 0) return false;
  const std::vector<int64_t>& reduced = inst.dimensions();
  auto is_reduced = [&](int d) { return std::find(reduced.begin(), reduced.end(), d) != reduced.end(); };
  std::vector<int> sharded_reduced;
  for (int d = 0; d < rank; ++d) {
    if (is_reduced(d) && !axes->dims[d].empty()) sharded_reduced.push_back(d);
  }
  if (sharded_reduced.empty()) return false;
  for (int i = 0; i < n; ++i) {
    if (inst.operand(i)->shape().dims() != in_shape.dims()) return false;
  }

  // Sharding of the partials once gathered, and of the result (the kept dims' axes).
  AxesSharding gathered = *axes;
  AxesSharding kept;
  for (int d = 0; d < rank; ++d) {
    if (is_reduced(d)) {
      gathered.dims[d].clear();
    } else {
      kept.dims.push_back(axes->dims[d]);
    }
  }
  const HloSharding gathered_sharding = state.mesh.ToHloSharding(gathered);
  const HloSharding result_sharding = state.mesh.ToHloSharding(kept);

  std::vector<Instruction*> inits;
  for (int i = 0; i < n; ++i) {
    XS_ASSIGN_OR_RETURN(PartitionedValue init, ctx.Get(inst.operand(n + i)).Replicate("init value"));
    inits.push_back(init.hlo());
  }
  std::vector<Instruction*> locals;
  for (int i = 0; i < n; ++i) {
    XS_ASSIGN_OR_RETURN(PartitionedValue v, ctx.Get(inst.operand(i)).Reshard(s0, StrCat("operand ", i)));
    XS_ASSIGN_OR_RETURN(Instruction * local, v.PadWithValue(inits[i], sharded_reduced));
    locals.push_back(local);
  }
  std::vector<Shape> leaves =
      inst.shape().IsTuple() ? inst.shape().tuple_shapes() : std::vector<Shape>{inst.shape()};
  std::vector<Shape> local_leaves;
  for (const Shape& leaf : leaves) {
    XS_ASSIGN_OR_RETURN(Shape local, LocalShape(leaf, result_sharding, state.num_partitions));
    local_leaves.push_back(std::move(local));
  }
  std::vector<Instruction*> operands = locals;
  operands.insert(operands.end(), inits.begin(), inits.end());
  XS_ASSIGN_OR_RETURN(Instruction * partial, LocalReduce(inst, ctx, operands, local_leaves));

  Emitter& em = ctx.em();
  std::vector<Instruction*> all;
  for (int i = 0; i < n; ++i) {
    Instruction* leaf = inst.shape().IsTuple() ? em.GetTupleElement(partial, i) : partial;
    // Global partials: kept dims as the input's, each reduced dim one element per tile.
    std::vector<int64_t> global_dims, local_dims;
    size_t k = 0;
    for (int d = 0; d < rank; ++d) {
      if (is_reduced(d)) {
        global_dims.push_back(AxesSize(state.mesh, axes->dims[d]));
        local_dims.push_back(1);
      } else {
        global_dims.push_back(in_shape.dims()[d]);
        local_dims.push_back(local_leaves[i].dims()[k++]);
      }
    }
    PartitionedValue partials(em.Reshape(leaf, local_dims), Shape(leaves[i].dtype(), global_dims), s0, &em);
    XS_ASSIGN_OR_RETURN(PartitionedValue g,
                        partials.Reshard(gathered_sharding, "gather the partial results of the sharded "
                                                            "reduced dims"));
    all.push_back(g.hlo());
  }
  all.insert(all.end(), inits.begin(), inits.end());
  XS_ASSIGN_OR_RETURN(Instruction * combined, LocalReduce(inst, ctx, all, local_leaves));
  if (!inst.shape().IsTuple()) {
    XS_RETURN_IF_ERROR(ctx.Finish(inst, PartitionedValue(combined, inst.shape(), result_sharding, &em)));
    return true;
  }
  const HloSharding target = ctx.TargetOf(inst);
  std::vector<Instruction*> elements;
  std::vector<HloSharding> shardings;
  for (int i = 0; i < n; ++i) {
    PartitionedValue e(em.GetTupleElement(combined, i), leaves[i], result_sharding, &em);
    XS_ASSIGN_OR_RETURN(PartitionedValue r, e.Reshard(SubSharding(inst.shape(), target, i)));
    elements.push_back(r.hlo());
    shardings.push_back(r.sharding());
  }
  ctx.Set(&inst, PartitionedValue(em.Tuple(std::move(elements)), inst.shape(),
                                  HloSharding::Tuple(std::move(shardings)), &em));
  return true;
}

}  // namespace

Status HandleReduce(const Instruction& inst, Context& ctx) {
  RuleConfig config;
  const Computation* reducer = inst.to_apply();
  if (inst.operand_count() == 2 && reducer != nullptr && IsCollectiveReducer(*reducer)) {
    XS_ASSIGN_OR_RETURN(PartitionedValue init, ctx.Get(inst.operand(1)).Replicate("init value"));
    config.identities = {init.hlo(), nullptr};
    ModuleState* state = &ctx.state();
    config.reducer = [state, reducer] { return state->Clone(*reducer); };
  } else if (reducer != nullptr) {
    XS_ASSIGN_OR_RETURN(bool done, ReduceByGatheringPartials(inst, ctx));
    if (done) return OkStatus();
  }
  return PartitionByRule(inst, ctx, config);
}

}  // namespace xs::spmd::internal
