// dynamic-update-slice into a base sharded along the updated dims, without gathering the base:
// the (replicated) update is written locally by every partition where it overlaps its own shard
// (XLA's masked local update): the update, padded by a shard on both sides, is dynamic-sliced at
// the shard's offset from the clamped start and selected in where the positions fall inside it.
// Dims the update spans whole (a decode step's batch) may be sharded in the base too: the update
// is then sharded like the base along them and replicated along the others.
#include <algorithm>

#include "xshard/spmd/handlers.h"
#include "xshard/spmd/reshard_routes.h"

namespace xs::spmd::internal {

Status HandleDynamicUpdateSlice(const Instruction& inst, Context& ctx) {
  const PartitionedValue& base = ctx.Get(inst.operand(0));
  const PartitionedValue& update = ctx.Get(inst.operand(1));
  const HloSharding& s = base.sharding();
  const Shape& global = inst.shape();
  const Shape& ushape = update.global_shape();
  if (!s.IsTiled() || !s.subgroup_types().empty() || base.partial()) return HandlePositional(inst, ctx);
  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(ShardLayout layout, base.Layout());
  // Only for bases tiled along at least one updated (not whole) dim; the update follows the
  // base's tiling along the whole dims (where the start is always 0) and is replicated along the
  // updated ones.
  std::vector<int> tiled;
  bool whole_tiled = false;
  for (int d = 0; d < global.rank(); ++d) {
    if (layout.tiles()[d] == 1) continue;
    if (ushape.dim(d) == global.dim(d)) {
      whole_tiled = true;
    } else {
      tiled.push_back(d);
    }
  }
  if (tiled.empty()) return HandlePositional(inst, ctx);
  HloSharding usharding = HloSharding::Replicate();
  if (whole_tiled) {
    usharding = s;
    for (int d : tiled) {
      XS_ASSIGN_OR_RETURN(usharding, ReplicateDim(usharding, d, global.rank()));
    }
  }
  const HloSharding target = ctx.TargetOf(inst);
  ModuleState& state = ctx.state();
  const int64_t mine = ReshardCost(state, ushape, update.sharding(), update.partial(), usharding) +
                       ReshardCost(state, global, s, std::nullopt, target);
  if (mine >= kImpossibleCost || mine > RulePlanCost(inst, ctx, PositionalConfig(inst))) {
    return HandlePositional(inst, ctx);
  }
  XS_ASSIGN_OR_RETURN(PartitionedValue u, update.Reshard(usharding, "dynamic-update-slice update"));
  Instruction* x = base.hlo();
  const Shape& local = x->shape();
  const Shape s32 = local.WithDType(DType::kS32);
  // Clamped global starts (dynamic-update-slice's semantics).
  std::vector<Instruction*> starts;
  for (int d = 0; d < global.rank(); ++d) {
    XS_ASSIGN_OR_RETURN(PartitionedValue i, ctx.Get(inst.operand(2 + d)).Replicate("dynamic-update-slice index"));
    Instruction* c = em.Convert(i.hlo(), DType::kS32);
    c = em.Binary(Opcode::kMaximum, c, em.ZeroOf(DType::kS32));
    starts.push_back(
        em.Binary(Opcode::kMinimum, c, em.Scalar(DType::kS32, static_cast<double>(global.dim(d) - ushape.dim(d)))));
  }
  // The update's piece over this shard: pad by a shard on both sides of each tiled dim, slice
  // at (shard offset - start + shard); windows that miss the update are masked out below.
  std::vector<PaddingDim> padding(global.rank());
  std::vector<Instruction*> window_starts(global.rank(), em.ZeroOf(DType::kS32));
  // The whole dims stay at the local update's (= the base's) shard size, at offset 0.
  std::vector<int64_t> sizes = u.hlo()->shape().dims();
  std::vector<Instruction*> local_starts = starts;
  Instruction* inside = nullptr;
  for (int d : tiled) {
    const int64_t len = layout.shard_dims()[d];
    padding[d] = PaddingDim{len, len, 0};
    Instruction* offset = em.TileStart(layout, d);
    window_starts[d] = em.Binary(Opcode::kAdd, em.Binary(Opcode::kSubtract, offset, starts[d]),
                                 em.Scalar(DType::kS32, static_cast<double>(len)));
    sizes[d] = len;
    local_starts[d] = em.ZeroOf(DType::kS32);
    Instruction* pos = em.Binary(Opcode::kAdd, em.Iota(DType::kS32, local.dims(), d), em.Broadcast(offset, s32, {}));
    Instruction* lo = em.Broadcast(starts[d], s32, {});
    Instruction* hi = em.Broadcast(
        em.Binary(Opcode::kAdd, starts[d], em.Scalar(DType::kS32, static_cast<double>(ushape.dim(d)))), s32, {});
    Instruction* in_d = em.Binary(Opcode::kAnd, em.Compare(pos, lo, ComparisonDirection::kGe),
                                  em.Compare(pos, hi, ComparisonDirection::kLt));
    inside = inside == nullptr ? in_d : em.Binary(Opcode::kAnd, inside, in_d);
  }
  Instruction* piece = em.DynamicSlice(em.Pad(u.hlo(), em.ZeroOf(ushape.dtype()), padding), window_starts, sizes);
  std::vector<Instruction*> operands = {x, piece};
  operands.insert(operands.end(), local_starts.begin(), local_starts.end());
  Instruction* written = em.Add(Opcode::kDynamicUpdateSlice, local, std::move(operands));
  Instruction* result = em.Select(inside, written, x);
  return ctx.Finish(inst, PartitionedValue(result, global, s, &em), "dynamic-update-slice");
}

}  // namespace xs::spmd::internal
