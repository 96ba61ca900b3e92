// custom-calls the partitioner understands: "Sharding" (an annotation: the operand is resharded
// to it, no instruction remains), and the manual-region boundaries "SPMDFullToShardShape" (the
// tiled value's local piece becomes the manual value) and "SPMDShardToFullShape" (the manual
// piece becomes the local piece of the tiled value). Other targets run on replicated operands.
#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {
namespace {

// `x` cut or padded (high end) to `dims`: uneven shards are padded buffers, manual values are not.
Instruction* Fit(Emitter& em, Instruction* x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> cut = x->shape().dims(), padded = dims;
  for (size_t d = 0; d < dims.size(); ++d) cut[d] = std::min(cut[d], dims[d]);
  x = em.Slice(x, cut);
  return em.PadHigh(x, em.ZeroOf(x->shape().dtype()), padded);
}

Status Boundary(const Instruction& inst, Context& ctx) {
  Emitter& em = ctx.em();
  const PartitionedValue& x = ctx.Get(inst.operand(0));
  if (!inst.shape().IsArray() || x.hlo()->shape().rank() != inst.shape().rank()) {
    return Unimplemented("manual-region boundary on a tuple or with a rank change");
  }
  const HloSharding target = ctx.TargetOf(inst);
  XS_ASSIGN_OR_RETURN(Shape local, LocalShape(inst.shape(), target, em.num_partitions()));
  // Each device's piece on one side is its piece on the other: a piece smaller than the other
  // side's (an operand tiled along dims the region keeps whole) would be padded with zeros.
  // XLA requires the shapes to match; so does xshard, instead of a wrong result.
  const std::vector<int64_t>& have = x.hlo()->shape().dims();
  for (size_t d = 0; d < have.size(); ++d) {
    if (have[d] >= local.dims()[d]) continue;
    return InvalidArgument(
        "unsupported: '", inst.name(), "' (", *inst.attrs().custom_call_target, ", sharding ", target.ToString(false),
        ") needs a ", local.ToString(false), " piece per device but its operand '", inst.operand(0)->name(),
        "' is sharded ", x.sharding().ToString(false), " (", x.hlo()->shape().ToString(false),
        " per device): shard the operand as the region's boundary needs (a Sharding custom-call "
        "before it, as JAX writes), or change the boundary's sharding");
  }
  ctx.Set(&inst, PartitionedValue(Fit(em, x.hlo(), local.dims()), inst.shape(), target, &em));
  return OkStatus();
}

}  // namespace

Status HandleCustomCall(const Instruction& inst, Context& ctx) {
  const std::string target = inst.attrs().custom_call_target.value_or("");
  // JAX's Shardy lowering ends every result with an xla.sdy.FuncResultSharding marker: an identity
  // whose sharding is the result's (propagated to it like a Sharding annotation's).
  if ((target == "Sharding" || target == "xla.sdy.FuncResultSharding") && inst.operand_count() == 1) {
    const PartitionedValue& x = ctx.Get(inst.operand(0));
    if (x.sharding().IsManual() && ctx.TargetOf(inst).IsManual()) {
      ctx.Set(&inst, x);
      return OkStatus();
    }
    return ctx.Finish(inst, x, "Sharding annotation");
  }
  if ((target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape") && inst.operand_count() == 1) {
    return Boundary(inst, ctx);
  }
  return HandleReplicated(inst, ctx);
}

}  // namespace xs::spmd::internal
