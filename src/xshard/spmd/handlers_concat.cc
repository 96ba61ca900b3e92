// concatenate along a sharded dim without gathering it: when every operand and the result share
// one tiling, each partition fetches, from each operand, the window of it that its result piece
// covers (FarWindow: a collective-permute per source tile a window spans, halo.h) and selects per position which
// operand's window holds it. Chosen when its permutes receive fewer bytes than the rule
// handler's plan with the fewest bytes (which gathers the dim, or moves its axes to another dim
// and back); other tilings go through the rule handler.
#include <algorithm>

#include "xshard/spmd/halo.h"
#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {
namespace {

bool SameTiling(const HloSharding& a, const HloSharding& b) {
  return a.IsTiled() && b.IsTiled() && a.tile_assignment() == b.tile_assignment() &&
         a.ReplicateOnLastTileDim() == b.ReplicateOnLastTileDim() && a.subgroup_types().empty() &&
         b.subgroup_types().empty();
}

// Result tile k covers result positions [k*len, (k+1)*len), which are positions
// [k*len - offset, ...) of an operand placed at `offset`.
DimWindow OperandWindow(int d, int64_t tiles, int64_t len, int64_t out_size, int64_t offset) {
  DimWindow w;
  w.dim = d;
  w.size = len;
  for (int64_t k = 0; k < tiles; ++k) {
    w.lo.push_back(k * len - offset);
    w.needed.push_back(std::clamp<int64_t>(out_size - k * len, 0, len));
  }
  return w;
}

}  // namespace

Status HandleConcatenate(const Instruction& inst, Context& ctx) {
  const HloSharding target = ctx.TargetOf(inst);
  const int d = static_cast<int>((*inst.attrs().dimensions)[0]);
  XS_ASSIGN_OR_RETURN(bool rotated, TryRotation(inst, ctx));
  if (rotated) return OkStatus();
  for (const Instruction* operand : inst.operands()) {
    const PartitionedValue& v = ctx.Get(operand);
    if (!SameTiling(v.sharding(), target) || v.partial()) return HandleShapeOp(inst, ctx);
  }
  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(ShardLayout out, ShardLayout::Create(target, inst.shape().dims(), em.num_partitions()));
  const int64_t tiles = out.tiles()[d], len = out.shard_dims()[d];
  if (tiles == 1) return HandleShapeOp(inst, ctx);
  // The rule handler's plans weighed by bytes, as the windows are: along a sharded concatenated
  // dim it gathers the dim, or moves its axes to another dim and back (all-to-alls, as XLA does).
  RuleConfig by_bytes;
  by_bytes.fewest_bytes = true;
  // Dry run: the bytes the windows receive, against the rule handler's plan.
  std::vector<DimWindow> windows;
  int64_t offset = 0, cost = 0;
  {
    std::unique_ptr<Emitter> scratch = Emitter::Scratch(&ctx.state());
    for (const Instruction* operand : inst.operands()) {
      const PartitionedValue& v = ctx.Get(operand);
      windows.push_back(OperandWindow(d, tiles, len, inst.shape().dim(d), offset));
      offset += operand->shape().dim(d);
      PartitionedValue dry(scratch->ScratchParameter(v.hlo()->shape()), v.global_shape(), v.sharding(),
                           scratch.get());
      if (!FarWindow(dry, windows.back(), "").ok()) return PartitionByRule(inst, ctx, by_bytes);
    }
    cost = scratch->cost();
  }
  if (cost >= RulePlanCost(inst, ctx, by_bytes)) return PartitionByRule(inst, ctx, by_bytes);
  // Global result position of every local element along d, and each operand's window chosen
  // where the position falls inside it.
  Instruction* result = nullptr;
  Instruction* pos = nullptr;
  offset = 0;
  for (int64_t i = 0; i < inst.operand_count(); ++i) {
    const PartitionedValue& v = ctx.Get(inst.operand(i));
    XS_ASSIGN_OR_RETURN(Instruction* window, FarWindow(v, windows[i], "concatenate"));
    const int64_t size = inst.operand(i)->shape().dim(d);
    if (result == nullptr) {
      const Shape s32 = window->shape().WithDType(DType::kS32);
      pos = em.Binary(Opcode::kAdd, em.Iota(DType::kS32, s32.dims(), d),
                      em.Broadcast(em.TileStart(out, d), s32, {}));
      result = window;
    } else {
      auto bound = [&](int64_t x) { return em.Broadcast(em.Scalar(DType::kS32, static_cast<double>(x)), pos->shape(), {}); };
      Instruction* inside = em.Binary(Opcode::kAnd, em.Compare(pos, bound(offset), ComparisonDirection::kGe),
                                      em.Compare(pos, bound(offset + size), ComparisonDirection::kLt));
      result = em.Select(inside, window, result);
    }
    offset += size;
  }
  ctx.Set(&inst, PartitionedValue(result, inst.shape(), target, &em));
  return OkStatus();
}

}  // namespace xs::spmd::internal
