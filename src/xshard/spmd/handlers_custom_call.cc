// custom-calls the partitioner understands: "Sharding" (an annotation: the operand is resharded
// to it, no instruction remains), and the manual-region boundaries "SPMDFullToShardShape" (the
// tiled value's local piece becomes the manual value) and "SPMDShardToFullShape" (the manual
// piece becomes the local piece of the tiled value). The identities -- propagation barriers
// (ShardBarrierFrom / ShardBarrierTo) and memory-space / layout hints (MoveToHost, MoveToDevice,
// PinToDevice, PinToDeviceSram, LayoutConstraint), which have no effect on host memory -- pass
// their operand on in its own sharding, resharded only if the propagated target differs.
// Batch-partitionable calls (frontend attribute num_batch_dims, on JAX's linear algebra) run on
// each device's batch rows through their rule. Other targets run on replicated operands.
#include "xshard/rules/rule_registry.h"
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

// The operand sharding whose pieces are the boundary's pieces, from the operand's (`o`) and the
// boundary's (`t`) axes: each dim keeps the operand's axes that are manual on the region side
// (they lead the dim) followed by the target's free axes (FullToShard), or takes the target's
// axes other than the region's manual ones (ShardToFull). nullopt when the operand already has it.
std::optional<HloSharding> MatchingOperandSharding(const AxesSharding& o, const AxesSharding& t, bool to_shard,
                                                   const TileMesh& mesh) {
  AxesSharding want = o;
  const uint64_t region_manual = to_shard ? t.manual : o.manual;
  for (int d = 0; d < o.rank(); ++d) {
    std::vector<int> axes;
    if (to_shard) {
      for (int a : o.dims[d]) {
        if (region_manual >> a & 1) axes.push_back(a);
      }
      axes.insert(axes.end(), t.dims[d].begin(), t.dims[d].end());
    } else {
      for (int a : t.dims[d]) {
        if (!(region_manual >> a & 1)) axes.push_back(a);
      }
    }
    want.dims[d] = std::move(axes);
  }
  if (want == o) return std::nullopt;
  return mesh.ToHloSharding(want);
}

Status Boundary(const Instruction& inst, Context& ctx) {
  Emitter& em = ctx.em();
  PartitionedValue x = ctx.Get(inst.operand(0));
  if (!inst.shape().IsArray() || x.hlo()->shape().rank() != inst.shape().rank()) {
    return Unimplemented("manual-region boundary on a tuple or with a rank change");
  }
  const HloSharding target = ctx.TargetOf(inst);
  const bool to_shard = inst.attrs().custom_call_target.value_or("") == "SPMDFullToShardShape";
  const TileMesh& mesh = ctx.state().mesh;
  const std::optional<AxesSharding> o = mesh.ToAxes(x.sharding(), inst.shape().rank());
  const std::optional<AxesSharding> t = mesh.ToAxes(target, inst.shape().rank());
  if (o && t) {
    // A region's boundary adds manual axes going in and drops them coming out: the region side's
    // manual axes include the other side's (else no operand sharding has each axis once).
    const uint64_t region = to_shard ? t->manual : o->manual;
    const uint64_t outside = to_shard ? o->manual : t->manual;
    if ((outside & ~region) != 0) {
      return InvalidArgument(
          *inst.attrs().custom_call_target, "'s ", to_shard ? "operand" : "result", " is manual over mesh axes its ",
          to_shard ? "result (sharding " : "operand (sharding ", (to_shard ? target : x.sharding()).ToString(false),
          ") is not manual over: ", to_shard ? "SPMDFullToShardShape enters" : "SPMDShardToFullShape leaves",
          " a manual region, so the region side must be manual over every axis the other side is; "
          "use ",
          to_shard ? "SPMDShardToFullShape to leave the region" : "SPMDFullToShardShape to enter it",
          ", or fix the shardings");
    }
    // Propagation refines a boundary's open dims as it refines its operand's; should they still
    // differ, the operand moves to the pieces the boundary needs.
    if (std::optional<HloSharding> matching = MatchingOperandSharding(*o, *t, to_shard, mesh); matching) {
      StatusOr<PartitionedValue> moved = x.Reshard(*matching, "manual-region boundary");
      if (moved.ok()) x = *std::move(moved);
    }
  }
  XS_ASSIGN_OR_RETURN(Shape local, LocalShape(inst.shape(), target, em.num_partitions()));
  // Each device's piece on one side is its piece on the other: a piece smaller than the other
  // side's (an operand tiled along dims the region keeps whole) would be padded with zeros.
  // XLA requires the shapes to match; so does xshard, instead of a wrong result.
  const std::vector<int64_t>& have = x.hlo()->shape().dims();
  for (size_t d = 0; d < have.size(); ++d) {
    if (have[d] >= local.dims()[d]) continue;
    return Unsupported(
        "'", inst.name(), "' (", *inst.attrs().custom_call_target, ", sharding ", target.ToString(false),
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
  static constexpr std::string_view kIdentities[] = {
      "ShardBarrierFrom", "ShardBarrierTo",  "MoveToHost",       "MoveToDevice",
      "PinToDevice",      "PinToDeviceSram", "LayoutConstraint", "annotate_device_placement"};
  if (std::find(std::begin(kIdentities), std::end(kIdentities), target) != std::end(kIdentities) &&
      inst.operand_count() == 1 && inst.operand(0)->shape().Compatible(inst.shape())) {
    return ctx.Finish(inst, ctx.Get(inst.operand(0)), StrCat(target, " (an identity)"));
  }
  if ((target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape") && inst.operand_count() == 1) {
    return Boundary(inst, ctx);
  }
  // JAX's linear algebra (LAPACK / cuSOLVER calls): each device runs the call on its batch rows.
  if (BatchPartitionableDims(inst)) return PartitionByRule(inst, ctx, RuleConfig{});
  return HandleReplicated(inst, ctx);
}

}  // namespace xs::spmd::internal
