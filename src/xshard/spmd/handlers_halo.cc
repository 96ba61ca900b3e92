// slice, pad and reverse along sharded dims without gathering them: when the result keeps the
// operand's tiling, each partition builds its slice / pad piece from its own shard and halos of
// its neighbours' (halo.h), strided slices a window of every stride-th position, interior
// padding pads each tile's input window locally; reverse permutes whole pieces. Other result
// tilings, windows that cost more than gathering and uneven reversed dims fall back to the rule
// handler, which gathers the moved dims.
#include "xshard/base/strings.h"
#include "xshard/spmd/halo.h"
#include "xshard/spmd/handlers.h"
#include "xshard/spmd/window_halo.h"

namespace xs::spmd::internal {
namespace {

// The result keeps the operand's tiling (same devices per tile, same rank).
bool SameTiling(const HloSharding& a, const HloSharding& b) {
  return a.IsTiled() && b.IsTiled() && a.tile_assignment() == b.tile_assignment() &&
         a.ReplicateOnLastTileDim() == b.ReplicateOnLastTileDim() && a.subgroup_types() == b.subgroup_types();
}

// Output tile k along d of a result dim of `out_size` holds [k*len, (k+1)*len) with `len` its
// shard; the window starts at input position k*len - shift (shift = low padding, or -start).
DimWindow Window(int d, int64_t tiles, int64_t len, int64_t out_size, int64_t shift) {
  DimWindow w;
  w.dim = d;
  w.size = len;
  for (int64_t k = 0; k < tiles; ++k) {
    w.lo.push_back(k * len - shift);
    w.needed.push_back(std::clamp<int64_t>(out_size - k * len, 0, len));
  }
  return w;
}

}  // namespace

Status HandleSlice(const Instruction& inst, Context& ctx) {
  const PartitionedValue& x = ctx.Get(inst.operand(0));
  const HloSharding target = ctx.TargetOf(inst);
  const std::vector<SliceDim>& slice = *inst.attrs().slice;
  if (!SameTiling(x.sharding(), target)) return HandleShapeOp(inst, ctx);
  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(ShardLayout in, x.Layout());
  XS_ASSIGN_OR_RETURN(ShardLayout out, ShardLayout::Create(target, inst.shape().dims(), em.num_partitions()));
  Instruction* local = x.hlo();
  std::vector<SliceDim> rest = slice;
  for (int d = 0; d < inst.shape().rank(); ++d) {
    if (in.tiles()[d] == 1) continue;
    rest[d] = SliceDim{0, out.shard_dims()[d], 1};
    if (slice[d].start == 0 && slice[d].limit == in.dims()[d] && slice[d].stride == 1) continue;
    DimWindow w = Window(d, in.tiles()[d], out.shard_dims()[d], inst.shape().dim(d), -slice[d].start);
    if (slice[d].stride != 1) {
      // Result tile k reads every stride-th input position from start + k * len * stride: the
      // window spans (len - 1) * stride + 1 positions, strided locally.
      const int64_t stride = slice[d].stride, len = out.shard_dims()[d];
      w.size = (len - 1) * stride + 1;
      for (int64_t k = 0; k < in.tiles()[d]; ++k) {
        w.lo[k] = slice[d].start + k * len * stride;
        w.needed[k] = w.needed[k] > 0 ? (w.needed[k] - 1) * stride + 1 : 0;
      }
      rest[d] = SliceDim{0, w.size, stride};
    }
    StatusOr<Instruction*> windowed =
        HaloWindow(PartitionedValue(local, x.global_shape(), x.sharding(), &em), w, "slice");
    if (!windowed.ok()) {
      // Far windows (the tail of a dim, as jnp.roll slices it): whole source tiles, when their
      // permutes receive less than the rule handler's gather.
      std::unique_ptr<Emitter> scratch = Emitter::Scratch(&ctx.state());
      PartitionedValue dry(scratch->ScratchParameter(local->shape()), x.global_shape(), x.sharding(), scratch.get());
      if (!FarWindow(dry, w, "").ok() || scratch->cost() >= RulePlanCost(inst, ctx, RuleConfig{})) {
        return HandleShapeOp(inst, ctx);
      }
      windowed = FarWindow(PartitionedValue(local, x.global_shape(), x.sharding(), &em), w, "slice");
    }
    if (!windowed.ok()) return HandleShapeOp(inst, ctx);
    local = *windowed;
  }
  std::vector<int64_t> dims;
  for (const SliceDim& s : rest) dims.push_back((s.limit - s.start + s.stride - 1) / s.stride);
  Attributes attrs;
  attrs.slice = rest;
  Instruction* result = em.Add(Opcode::kSlice, Shape(inst.shape().dtype(), dims), {local}, std::move(attrs));
  ctx.Set(&inst, PartitionedValue(result, inst.shape(), target, &em));
  return OkStatus();
}

namespace {

// Dim d of the pad, sharded on both sides with interior padding: output tile k (shards of L)
// holds output positions [k*L, (k+1)*L); the first input element landing there is
// lo[k] = ceil((k*L - low) / (I+1)), at local position off[k] = low + lo[k]*(I+1) - k*L (in
// [0, I]). Each tile takes the input window [lo[k], lo[k] + W) (halo exchange, positions outside
// the input reading the pad value), pads it locally with interior I and slices L positions from
// max(off) - off[k].
StatusOr<Instruction*> InteriorPadDim(const PartitionedValue& x, int d, const PaddingDim& p, int64_t out_size,
                                      int64_t out_len, Instruction* value) {
  Emitter& em = x.emitter();
  XS_ASSIGN_OR_RETURN(ShardLayout in, x.Layout());
  const int64_t t = in.tiles()[d], step = p.interior + 1, L = out_len;
  DimWindow w;
  w.dim = d;
  std::vector<int64_t> off(t);
  int64_t max_off = 0;
  for (int64_t k = 0; k < t; ++k) {
    const int64_t lo = -FloorDiv(p.low - k * L, step);
    off[k] = p.low + lo * step - k * L;
    const int64_t limit = std::clamp<int64_t>(out_size - k * L, 0, L);
    const int64_t count = limit > off[k] ? (limit - off[k] + step - 1) / step : 0;
    w.lo.push_back(lo);
    w.needed.push_back(count);
    w.size = std::max(w.size, count);
    max_off = std::max(max_off, off[k]);
  }
  w.size = std::max<int64_t>(w.size, 1);
  XS_ASSIGN_OR_RETURN(Instruction* window, MaskedWindow(x, w, value, "pad"));
  // Element j of the window lands at max_off + j*step of the padded buffer; tile k's output
  // starts at max_off - off[k].
  int64_t high = 0;
  const int64_t padded = max_off + (w.size - 1) * step + 1;
  for (int64_t k = 0; k < t; ++k) high = std::max(high, max_off - off[k] + L - padded);
  std::vector<PaddingDim> padding(window->shape().rank());
  padding[d] = PaddingDim{max_off, high, p.interior};
  Instruction* buffer = em.Pad(window, value, std::move(padding));
  std::vector<int64_t> by_tile(t);
  bool same = true;
  for (int64_t k = 0; k < t; ++k) {
    by_tile[k] = max_off - off[k];
    same = same && by_tile[k] == by_tile[0];
  }
  std::vector<int64_t> sizes = buffer->shape().dims();
  sizes[d] = L;
  if (same) {
    std::vector<int64_t> starts(sizes.size(), 0), limits = sizes;
    starts[d] = by_tile[0];
    limits[d] = by_tile[0] + L;
    return em.Slice(buffer, std::move(starts), std::move(limits));
  }
  std::vector<Instruction*> starts(sizes.size(), em.ZeroOf(DType::kS32));
  starts[d] = em.PerTile(in, d, by_tile);
  return em.DynamicSlice(buffer, std::move(starts), std::move(sizes));
}

// The local pad of `inst` on x's local buffer `local` (global shape x's), into `em`: every
// sharded padded dim by halo exchange, the unsharded dims by one local pad. Error when some dim's
// windows cannot be exchanged.
StatusOr<Instruction*> LocalPad(const Instruction& inst, const PartitionedValue& x, Instruction* local,
                                Instruction* value, const ShardLayout& out, Emitter& em) {
  const std::vector<PaddingDim>& padding = *inst.attrs().padding;
  XS_ASSIGN_OR_RETURN(ShardLayout in, x.Layout());
  std::vector<PaddingDim> rest = padding;
  Shape global = x.global_shape();
  for (int d = 0; d < inst.shape().rank(); ++d) {
    if (in.tiles()[d] == 1) continue;
    rest[d] = PaddingDim{};
    const PaddingDim& p = padding[d];
    if (p.low == 0 && p.high == 0 && p.interior == 0) continue;
    PartitionedValue cur(local, global, x.sharding(), &em);
    if (p.interior != 0) {
      XS_ASSIGN_OR_RETURN(local, InteriorPadDim(cur, d, p, inst.shape().dim(d), out.shard_dims()[d], value));
    } else {
      const DimWindow w = Window(d, in.tiles()[d], out.shard_dims()[d], inst.shape().dim(d), p.low);
      StatusOr<Instruction*> windowed = HaloWindow(cur, w, "pad");
      if (!windowed.ok()) return windowed.status();
      // Window positions outside the operand become the pad value.
      std::vector<int64_t> lo(em.num_partitions());
      for (int64_t q = 0; q < em.num_partitions(); ++q) lo[q] = w.lo[out.start(q, d) / out.shard_dims()[d]];
      const Shape& shape = (*windowed)->shape();
      Instruction* pos = em.Binary(Opcode::kAdd, em.Iota(DType::kS32, shape.dims(), d),
                                   em.Broadcast(em.PerPartition(lo), shape.WithDType(DType::kS32), {}));
      Instruction* inside = em.Binary(
          Opcode::kAnd,
          em.Compare(pos, em.Broadcast(em.ZeroOf(DType::kS32), pos->shape(), {}), ComparisonDirection::kGe),
          em.Compare(pos, em.Broadcast(em.Scalar(DType::kS32, static_cast<double>(in.dims()[d])), pos->shape(), {}),
                     ComparisonDirection::kLt));
      local = em.Select(inside, *windowed, em.Broadcast(value, shape, {}));
    }
    std::vector<int64_t> dims = global.dims();
    dims[d] = inst.shape().dim(d);
    global = Shape(global.dtype(), dims);
  }
  return em.Pad(local, value, rest);
}

}  // namespace

// pad along sharded dims, the result keeping the operand's tiling: halo windows (HaloWindow for
// low / high padding; MaskedWindow and a local interior pad for interior padding, taken when it
// receives less than the rule handler's gather).
Status HandlePad(const Instruction& inst, Context& ctx) {
  const PartitionedValue& x = ctx.Get(inst.operand(0));
  const HloSharding target = ctx.TargetOf(inst);
  if (!SameTiling(x.sharding(), target) || x.partial()) return HandleShapeOp(inst, ctx);
  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(ShardLayout in, x.Layout());
  XS_ASSIGN_OR_RETURN(ShardLayout out, ShardLayout::Create(target, inst.shape().dims(), em.num_partitions()));
  bool interior = false;
  for (int d = 0; d < inst.shape().rank(); ++d) {
    interior = interior || (in.tiles()[d] > 1 && (*inst.attrs().padding)[d].interior != 0);
  }
  if (interior) {
    // Dry run: the halo exchanges against the rule handler's gather.
    std::unique_ptr<Emitter> scratch = Emitter::Scratch(&ctx.state());
    PartitionedValue dry(scratch->ScratchParameter(x.hlo()->shape()), x.global_shape(), x.sharding(), scratch.get());
    Instruction* dry_value = scratch->ScratchParameter(Shape(inst.shape().dtype(), {}));
    if (!LocalPad(inst, dry, dry.hlo(), dry_value, out, *scratch).ok() ||
        scratch->cost() > RulePlanCost(inst, ctx, RuleConfig{})) {
      return HandleShapeOp(inst, ctx);
    }
  }
  XS_ASSIGN_OR_RETURN(PartitionedValue value, ctx.Get(inst.operand(1)).Replicate("pad value"));
  StatusOr<Instruction*> result = LocalPad(inst, x, x.hlo(), value.hlo(), out, em);
  if (!result.ok()) return HandleShapeOp(inst, ctx);
  ctx.Set(&inst, PartitionedValue(*result, inst.shape(), target, &em));
  return OkStatus();
}

namespace {

// `s` with its tile order reversed along each of `dims` (the device of tile k moves to tile
// tiles - 1 - k).
StatusOr<HloSharding> Mirrored(const HloSharding& s, const std::vector<int>& dims) {
  const TileAssignment& ta = s.tile_assignment();
  const std::vector<int64_t>& devices = ta.devices();
  std::vector<int64_t> out(devices.size());
  std::vector<int64_t> strides(ta.num_dims(), 1);
  for (int d = ta.num_dims() - 2; d >= 0; --d) strides[d] = strides[d + 1] * ta.dim(d + 1);
  for (size_t pos = 0; pos < devices.size(); ++pos) {
    int64_t mirrored = static_cast<int64_t>(pos);
    for (int d : dims) {
      const int64_t k = static_cast<int64_t>(pos) / strides[d] % ta.dim(d);
      mirrored += (ta.dim(d) - 1 - 2 * k) * strides[d];
    }
    out[mirrored] = devices[pos];
  }
  XS_ASSIGN_OR_RETURN(TileAssignment mirrored, TileAssignment::FromDevices(ta.dims(), std::move(out)));
  return HloSharding::Tile(std::move(mirrored), s.ReplicateOnLastTileDim());
}

// The locally reversed `local` (sharding `mirrored`: x's tiling with the tile order of the
// reversed dims mirrored) realigned along its uneven dims `dims`: reversed, tile k of a dim of n
// in shards of L holds the positions [kL - δ, kL - δ + L) of the result (δ = tL - n, the padding),
// so each tile takes the window [kL + δ, kL + δ + L) of that padded view by halo exchange.
StatusOr<Instruction*> AlignReversed(const PartitionedValue& x, Instruction* local, const HloSharding& mirrored,
                                     const std::vector<int>& dims, Emitter& em) {
  XS_ASSIGN_OR_RETURN(ShardLayout in, x.Layout());
  std::vector<int64_t> padded = x.global_shape().dims();
  for (int d : dims) padded[d] = in.tiles()[d] * in.shard_dims()[d];
  const Shape view(x.global_shape().dtype(), padded);
  for (int d : dims) {
    const int64_t t = in.tiles()[d], L = in.shard_dims()[d], n = in.dims()[d], delta = t * L - n;
    DimWindow w;
    w.dim = d;
    w.size = L;
    for (int64_t k = 0; k < t; ++k) {
      w.lo.push_back(k * L + delta);
      w.needed.push_back(std::clamp<int64_t>(n - k * L, 0, L));
    }
    XS_ASSIGN_OR_RETURN(local, MaskedWindow(PartitionedValue(local, view, mirrored, &em), w, nullptr, "reverse"));
  }
  return local;
}

}  // namespace

// reverse along sharded dims: each partition reverses its own piece, which is the result's piece
// of the mirrored tile, and one collective-permute (or whatever the target needs) moves it; on
// uneven dims the reversed pieces are off by the padding, and a halo exchange realigns them
// first (taken when that receives less than the rule handler's gather). On even dims with the
// result in x's sharding, x's pieces are moved before the local reverse instead (same bytes), so
// reverses of one value over the same sharded dims share the move (the reshard cache).
Status HandleReverse(const Instruction& inst, Context& ctx) {
  const PartitionedValue& x = ctx.Get(inst.operand(0));
  const HloSharding& s = x.sharding();
  if (!s.IsTiled() || !s.subgroup_types().empty() || x.partial()) return HandleShapeOp(inst, ctx);
  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(ShardLayout in, x.Layout());
  std::vector<int> sharded, uneven;
  for (int64_t d : *inst.attrs().dimensions) {
    if (in.tiles()[d] == 1) continue;
    sharded.push_back(static_cast<int>(d));
    if (in.HasPadding(static_cast<int>(d))) uneven.push_back(static_cast<int>(d));
  }
  if (sharded.empty()) return HandleShapeOp(inst, ctx);
  XS_ASSIGN_OR_RETURN(HloSharding mirrored, Mirrored(s, sharded));
  if (!uneven.empty()) {
    std::unique_ptr<Emitter> scratch = Emitter::Scratch(&ctx.state());
    Instruction* dry = scratch->ScratchParameter(x.hlo()->shape());
    if (!AlignReversed(x, dry, mirrored, uneven, *scratch).ok() ||
        scratch->cost() + ReshardCost(ctx.state(), inst.shape(), mirrored, std::nullopt, ctx.TargetOf(inst)) >=
            RulePlanCost(inst, ctx, RuleConfig{})) {
      return HandleShapeOp(inst, ctx);
    }
  }
  Attributes attrs;
  attrs.dimensions = *inst.attrs().dimensions;
  if (uneven.empty() && ctx.TargetOf(inst) == s) {
    // Even dims and a result kept in x's sharding: move x's pieces to the mirrored devices first
    // (the same bytes as moving the reversed pieces), so that two reverses of one value over the
    // same sharded dims share that move through the reshard cache.
    XS_ASSIGN_OR_RETURN(PartitionedValue moved, x.Reshard(mirrored, "reverse"));
    Instruction* local = em.Add(Opcode::kReverse, x.hlo()->shape(), {moved.hlo()}, std::move(attrs));
    return ctx.Finish(inst, PartitionedValue(local, inst.shape(), s, &em), "reverse");
  }
  Instruction* local = em.Add(Opcode::kReverse, x.hlo()->shape(), {x.hlo()}, std::move(attrs));
  if (!uneven.empty()) {
    XS_ASSIGN_OR_RETURN(local, AlignReversed(x, local, mirrored, uneven, em));
  }
  return ctx.Finish(inst, PartitionedValue(local, inst.shape(), mirrored, &em), "reverse");
}

}  // namespace xs::spmd::internal
