// gather and scatter on an operand sharded along an indexed dim, without gathering the operand
// (XLA's "trivially sliced operand" strategy): each partition looks up (or scatters into) its own
// shard with the indices moved to the shard's origin; gather masks the lookups that fall outside
// the shard and sums the partial results over the indexed axes, scatter lets the out-of-shard
// updates drop (scatter skips out-of-bounds windows). A scatter whose updates are split along their
// scatter dims may instead scatter locally into the combiner's identity and all-reduce
// (TryPartialScatter). Each is chosen when it costs less than the rule handler's plans (index /
// operand passthrough, batch dims), which handle every other case.
#include <algorithm>
#include <cmath>
#include <limits>

#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

uint64_t MaskOf(const std::vector<int>& axes) {
  uint64_t m = 0;
  for (int a : axes) m |= uint64_t{1} << a;
  return m;
}

// The axes view of `s` on the module mesh; all dims empty when it is not on the mesh (the
// reshard then moves it); nullopt for manual shardings.
std::optional<AxesSharding> ViewOf(const HloSharding& s, int rank, const TileMesh& mesh) {
  std::optional<AxesSharding> a = mesh.ToAxes(s, rank);
  if (!a) return AxesSharding{std::vector<std::vector<int>>(rank), 0};
  if (a->manual != 0) return std::nullopt;
  return a;
}

// True when every position of a dim of `size` (and one past it) fits the index type, so that the
// shard offsets and bounds the local indices are compared with are exact.
bool IndexTypeHolds(DType t, int64_t size) {
  const int bits = DTypeBitWidth(t) - (IsSignedInteger(t) ? 1 : 0);
  return bits >= 62 || size < (int64_t{1} << bits);
}

// The index components of `indices` (local) along index_vector_dim `ivd`, one per entry of the
// index map (the whole array when ivd == rank: one implicit component).
std::vector<Instruction*> Components(Emitter& em, Instruction* indices, int ivd, size_t count) {
  if (ivd == indices->shape().rank()) return {indices};
  std::vector<Instruction*> out;
  for (size_t j = 0; j < count; ++j) {
    std::vector<int64_t> starts(indices->shape().rank(), 0), limits = indices->shape().dims();
    starts[ivd] = static_cast<int64_t>(j);
    limits[ivd] = static_cast<int64_t>(j) + 1;
    out.push_back(em.Slice(indices, starts, limits));
  }
  return out;
}

Instruction* Join(Emitter& em, std::vector<Instruction*> components, int ivd) {
  if (components.size() == 1) return components[0];
  return em.Concatenate(std::move(components), ivd);
}

Instruction* Splat(Emitter& em, const Shape& like, DType dtype, double value) {
  return em.Broadcast(em.Scalar(dtype, value), like.WithDType(dtype), {});
}

// Where this partition's shard of `layout` starts along d, broadcast to `like` (index dtype).
Instruction* StartOf(Emitter& em, const ShardLayout& layout, int d, const Shape& like) {
  Instruction* start = em.TileStart(layout, d);
  if (like.dtype() != DType::kS32) start = em.Convert(start, like.dtype());
  return em.Broadcast(start, like, {});
}

// Bytes moved by a plan: the reshards of the operands into `to` and of the local result (with
// pending sums over `partial`) to the instruction's target.
int64_t PlanCost(Context& ctx, const Instruction& inst, const std::vector<HloSharding>& to,
                 const HloSharding& result, const std::vector<int>& partial) {
  ModuleState& state = ctx.state();
  int64_t cost = 0;
  for (size_t i = 0; i < to.size(); ++i) {
    const PartitionedValue& v = ctx.Get(inst.operand(static_cast<int64_t>(i)));
    cost += ReshardCost(state, v.global_shape(), v.sharding(), v.partial(), to[i]);
  }
  std::optional<PartialReduction> p;
  if (!partial.empty()) p = PartialReduction{partial, nullptr};
  cost += ReshardCost(state, inst.shape(), result, p, ctx.TargetOf(inst));
  return std::min(cost, kImpossibleCost);
}

// Gather with the operand's sharded indexed dims (slice size 1) kept sharded. Returns false
// (emitting nothing) when the strategy does not apply or costs more than the rule handler.
StatusOr<bool> TryShardedOperandGather(const Instruction& inst, Context& ctx) {
  const GatherDimensionNumbers& g = *inst.attrs().gather;
  const std::vector<int64_t>& slice_sizes = *inst.attrs().slice_sizes;
  const PartitionedValue& x = ctx.Get(inst.operand(0));
  const PartitionedValue& idx = ctx.Get(inst.operand(1));
  const Shape& operand = x.global_shape();
  const Shape& indices = idx.global_shape();
  const Shape& out = inst.shape();
  const TileMesh& mesh = ctx.state().mesh;
  if (!out.IsArray() || !indices.IsArray() || !IsInteger(indices.dtype())) return false;
  const HloSharding target = ctx.TargetOf(inst);
  std::optional<AxesSharding> ox = ViewOf(x.sharding(), operand.rank(), mesh);
  std::optional<AxesSharding> ix = ViewOf(idx.sharding(), indices.rank(), mesh);
  std::optional<AxesSharding> tx = ViewOf(target, out.rank(), mesh);
  if (!ox || !ix || !tx || target.IsManual() || !target.subgroup_types().empty()) return false;
  const int ivd = static_cast<int>(g.index_vector_dim);

  // Operand: the sharded trivially sliced indexed dims and the passthrough dims keep their axes.
  AxesSharding oa{std::vector<std::vector<int>>(operand.rank()), 0};
  std::vector<int> partial;
  std::vector<bool> sliced(operand.rank(), false);
  for (int64_t d : g.start_index_map) {
    if (slice_sizes[d] != 1 || operand.dim(static_cast<int>(d)) <= 1 || ox->dims[d].empty()) continue;
    if (!IndexTypeHolds(indices.dtype(), operand.dim(static_cast<int>(d)))) return false;
    sliced[d] = true;
    oa.dims[d] = ox->dims[d];
    partial.insert(partial.end(), ox->dims[d].begin(), ox->dims[d].end());
  }
  if (partial.empty()) return false;
  std::vector<int> op_offset;
  for (int d = 0; d < operand.rank(); ++d) {
    // Explicit batching dims keep their axes (the indices' batching dims follow them).
    if (Contains(g.operand_batching_dims, d)) oa.dims[d] = ox->dims[d];
    if (Contains(g.collapsed_slice_dims, d) || Contains(g.operand_batching_dims, d)) continue;
    op_offset.push_back(d);
    if (slice_sizes[d] == operand.dim(d)) oa.dims[d] = ox->dims[d];
  }
  uint64_t used = 0;
  for (const std::vector<int>& axes : oa.dims) used |= MaskOf(axes);

  // Indices: batch dims (not explicit batching dims) take the result's axes, else their own, when
  // those are free.
  AxesSharding ia{std::vector<std::vector<int>>(indices.rank()), 0};
  AxesSharding ra{std::vector<std::vector<int>>(out.rank()), 0};
  std::vector<int> out_batch;
  for (int d = 0; d < out.rank(); ++d) {
    if (!Contains(g.offset_dims, d)) out_batch.push_back(d);
  }
  size_t k = 0;
  for (int d = 0; d < indices.rank(); ++d) {
    if (d == ivd) continue;
    const int od = out_batch[k++];
    const auto batching = std::find(g.start_indices_batching_dims.begin(), g.start_indices_batching_dims.end(), d);
    if (batching != g.start_indices_batching_dims.end()) {
      ia.dims[d] = ra.dims[od] = oa.dims[g.operand_batching_dims[batching - g.start_indices_batching_dims.begin()]];
      continue;
    }
    for (const std::vector<int>* axes : {&tx->dims[od], &ix->dims[d]}) {
      if (axes->empty() || (MaskOf(*axes) & used) != 0) continue;
      ia.dims[d] = *axes;
      ra.dims[od] = *axes;
      used |= MaskOf(*axes);
      break;
    }
  }
  // Offset dims keep their operand dim's axes, except a sliced dim's: its slice is one element (the
  // result dim has size 1) and its axes are the partial ones.
  for (size_t j = 0; j < op_offset.size(); ++j) {
    if (!sliced[op_offset[j]]) ra.dims[g.offset_dims[j]] = oa.dims[op_offset[j]];
  }
  const HloSharding op_s = mesh.ToHloSharding(oa), idx_s = mesh.ToHloSharding(ia);
  const HloSharding res_s = mesh.ToHloSharding(ra);
  const int64_t cost = PlanCost(ctx, inst, {op_s, idx_s}, res_s, partial);
  if (cost >= RulePlanCost(inst, ctx, RuleConfig{})) return false;

  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(PartitionedValue xv, x.Reshard(op_s, "operand 0"));
  XS_ASSIGN_OR_RETURN(PartitionedValue iv, idx.Reshard(idx_s, "operand 1"));
  XS_ASSIGN_OR_RETURN(ShardLayout layout, xv.Layout());
  // Each sliced component: clamped as the global gather clamps it, moved to the shard's origin;
  // the lookup is this partition's when every moved component lands inside its shard.
  std::vector<Instruction*> comps = Components(em, iv.hlo(), ivd, g.start_index_map.size());
  Instruction* mine = nullptr;
  for (size_t j = 0; j < comps.size(); ++j) {
    const int d = static_cast<int>(g.start_index_map[j]);
    if (!sliced[d]) continue;
    const Shape& s = comps[j]->shape();
    const DType t = s.dtype();
    Instruction* c = em.Binary(Opcode::kMaximum, comps[j], Splat(em, s, t, 0));
    c = em.Binary(Opcode::kMinimum, c, Splat(em, s, t, static_cast<double>(operand.dim(d) - 1)));
    if (!IsSignedInteger(t)) {
      // Unsigned: compare before subtracting (no negative values).
      Instruction* start = StartOf(em, layout, d, s);
      Instruction* in = em.Binary(
          Opcode::kAnd, em.Compare(c, start, ComparisonDirection::kGe),
          em.Compare(c, em.Binary(Opcode::kAdd, start, Splat(em, s, t, static_cast<double>(layout.shard_dims()[d]))),
                     ComparisonDirection::kLt));
      comps[j] = em.Select(in, em.Binary(Opcode::kSubtract, c, start), Splat(em, s, t, 0));
      mine = mine == nullptr ? in : em.Binary(Opcode::kAnd, mine, in);
      continue;
    }
    c = em.Binary(Opcode::kSubtract, c, StartOf(em, layout, d, s));
    Instruction* in = em.Binary(Opcode::kAnd, em.Compare(c, Splat(em, s, t, 0), ComparisonDirection::kGe),
                                em.Compare(c, Splat(em, s, t, static_cast<double>(layout.shard_dims()[d])),
                                           ComparisonDirection::kLt));
    comps[j] = c;
    mine = mine == nullptr ? in : em.Binary(Opcode::kAnd, mine, in);
  }
  Instruction* local_indices = Join(em, std::move(comps), ivd);
  std::unique_ptr<Instruction> clone = inst.CloneWithNewOperands({xv.hlo(), local_indices});
  XS_ASSIGN_OR_RETURN(Shape local_shape, LocalShape(out, res_s, em.num_partitions()));
  for (int d : op_offset) {
    if (slice_sizes[d] == operand.dim(d)) (*clone->mutable_attrs().slice_sizes)[d] = layout.shard_dims()[d];
  }
  clone->set_shape(local_shape);
  clone->set_sharding(std::nullopt);
  Instruction* looked_up = em.AddInstruction(std::move(clone));
  // The mask has the indices' batch dims (ivd dropped), which are the result's batch dims.
  std::vector<int64_t> batch_dims;
  for (int d = 0; d < mine->shape().rank(); ++d) {
    if (d != ivd) batch_dims.push_back(mine->shape().dim(d));
  }
  if (ivd < mine->shape().rank()) mine = em.Reshape(mine, batch_dims);
  mine = em.Broadcast(mine, local_shape.WithDType(DType::kPred),
                      std::vector<int64_t>(out_batch.begin(), out_batch.end()));
  Instruction* result = em.Select(mine, looked_up, Splat(em, local_shape, out.dtype(), 0));
  const Opcode sum = out.dtype() == DType::kPred ? Opcode::kOr : Opcode::kAdd;
  PartitionedValue v(result, out, res_s, &em,
                     PartialReduction{partial, ctx.state().Reducer(sum, out.dtype())});
  XS_RETURN_IF_ERROR(ctx.Finish(inst, v, "lookups in a sharded operand dim"));
  return true;
}

// The size of a scatter's window along each operand dim (1 for inserted and batching dims), and
// in `update_dims` (when given) the updates' dim each operand dim's window runs along (-1: none).
std::vector<int64_t> ScatterWindow(const ScatterDimensionNumbers& sd, const Shape& operand, const Shape& updates,
                                   std::vector<int>* update_dims = nullptr) {
  std::vector<int64_t> window(operand.rank(), 1);
  if (update_dims != nullptr) update_dims->assign(operand.rank(), -1);
  size_t w = 0;
  for (int d = 0; d < operand.rank(); ++d) {
    if (Contains(sd.inserted_window_dims, d) || Contains(sd.input_batching_dims, d)) continue;
    const int ud = static_cast<int>(sd.update_window_dims[w++]);
    window[d] = updates.dim(ud);
    if (update_dims != nullptr) (*update_dims)[d] = ud;
  }
  return window;
}

// A scatter's local indices for an operand whose `sliced` dims are split as `layout` splits them:
// each such component moved to the shard's origin, and sent past the shard (so that the scatter
// skips it) when it lies in another shard or outside the operand.
Instruction* LocalScatterIndices(Emitter& em, Instruction* indices, const ScatterDimensionNumbers& sd,
                                 const std::vector<bool>& sliced, const ShardLayout& layout, const Shape& operand) {
  const int ivd = static_cast<int>(sd.index_vector_dim);
  std::vector<Instruction*> comps = Components(em, indices, ivd, sd.scatter_dims_to_operand_dims.size());
  for (size_t j = 0; j < comps.size(); ++j) {
    const int d = static_cast<int>(sd.scatter_dims_to_operand_dims[j]);
    if (!sliced[d]) continue;
    const Shape& s = comps[j]->shape();
    const DType t = s.dtype();
    const double len = static_cast<double>(layout.shard_dims()[d]);
    // Globally out of bounds: a local position past the shard (skipped, never in the padding).
    Instruction* inside =
        em.Compare(comps[j], Splat(em, s, t, static_cast<double>(operand.dim(d))), ComparisonDirection::kLt);
    if (IsSignedInteger(t)) {
      inside = em.Binary(Opcode::kAnd, inside, em.Compare(comps[j], Splat(em, s, t, 0), ComparisonDirection::kGe));
    }
    Instruction* start = StartOf(em, layout, d, s);
    Instruction* local = em.Binary(Opcode::kSubtract, comps[j], start);
    if (!IsSignedInteger(t)) {
      // Unsigned: positions before the shard would wrap; send them past it instead.
      inside = em.Binary(Opcode::kAnd, inside, em.Compare(comps[j], start, ComparisonDirection::kGe));
    }
    comps[j] = em.Select(inside, local, Splat(em, s, t, len));
  }
  return Join(em, std::move(comps), ivd);
}

// Scatter (one operand) into an operand whose trivially sliced indexed dims (and explicit batching
// dims) stay sharded: every partition applies all updates of its batch rows to its shard, with indices moved to the shard's origin; updates
// that belong elsewhere are out of bounds and skipped, as the global scatter skips them.
StatusOr<bool> TryShardedOperandScatter(const Instruction& inst, Context& ctx, int64_t limit, int64_t* cost_out) {
  if (inst.operand_count() != 3 || !inst.shape().IsArray()) return false;
  const ScatterDimensionNumbers& sd = *inst.attrs().scatter;
  const PartitionedValue& x = ctx.Get(inst.operand(0));
  const PartitionedValue& idx = ctx.Get(inst.operand(1));
  const PartitionedValue& upd = ctx.Get(inst.operand(2));
  const Shape& operand = x.global_shape();
  const Shape& indices = idx.global_shape();
  const Shape& updates = upd.global_shape();
  const TileMesh& mesh = ctx.state().mesh;
  if (!IsInteger(indices.dtype())) return false;
  std::optional<AxesSharding> ox = ViewOf(x.sharding(), operand.rank(), mesh);
  const HloSharding target = ctx.TargetOf(inst);
  if (!ox || target.IsManual() || !target.subgroup_types().empty()) return false;
  const int ivd = static_cast<int>(sd.index_vector_dim);
  std::vector<int> window_update_dim;
  const std::vector<int64_t> window = ScatterWindow(sd, operand, updates, &window_update_dim);
  AxesSharding oa{std::vector<std::vector<int>>(operand.rank()), 0};
  AxesSharding ua{std::vector<std::vector<int>>(updates.rank()), 0};
  std::vector<bool> sliced(operand.rank(), false);
  bool any = false;
  for (int64_t d : sd.scatter_dims_to_operand_dims) {
    if (window[d] != 1 || operand.dim(static_cast<int>(d)) <= 1 || ox->dims[d].empty()) continue;
    if (!IndexTypeHolds(indices.dtype(), operand.dim(static_cast<int>(d)))) return false;
    sliced[d] = any = true;
    oa.dims[d] = ox->dims[d];
  }
  if (!any) return false;
  for (int d = 0; d < operand.rank(); ++d) {
    if (sliced[d] || window_update_dim[d] < 0 || window[d] != operand.dim(d)) continue;
    oa.dims[d] = ox->dims[d];
    ua.dims[window_update_dim[d]] = ox->dims[d];
  }
  // Explicit batching dims keep their axes, and so do the indices' batching dims and the updates'
  // scatter dims that follow them (each partition scatters its own batch rows into its own rows).
  AxesSharding ia{std::vector<std::vector<int>>(indices.rank()), 0};
  std::vector<int> update_scatter_dims;
  for (int d = 0; d < updates.rank(); ++d) {
    if (!Contains(sd.update_window_dims, d)) update_scatter_dims.push_back(d);
  }
  for (size_t m = 0; m < sd.input_batching_dims.size() && m < sd.scatter_indices_batching_dims.size(); ++m) {
    const int od = static_cast<int>(sd.input_batching_dims[m]);
    const int id = static_cast<int>(sd.scatter_indices_batching_dims[m]);
    const int ud_index = id < ivd ? id : id - 1;  // the indices' dims without index_vector_dim
    if (ud_index < 0 || ud_index >= static_cast<int>(update_scatter_dims.size())) return false;
    oa.dims[od] = ox->dims[od];
    ia.dims[id] = ox->dims[od];
    ua.dims[update_scatter_dims[ud_index]] = ox->dims[od];
  }
  const HloSharding op_s = mesh.ToHloSharding(oa), upd_s = mesh.ToHloSharding(ua);
  const HloSharding idx_s = mesh.ToHloSharding(ia);
  const int64_t cost = PlanCost(ctx, inst, {op_s, idx_s, upd_s}, op_s, {});
  *cost_out = cost;
  if (cost >= limit) return false;

  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(PartitionedValue xv, x.Reshard(op_s, "operand 0"));
  XS_ASSIGN_OR_RETURN(PartitionedValue iv, idx.Reshard(idx_s, "operand 1"));
  XS_ASSIGN_OR_RETURN(PartitionedValue uv, upd.Reshard(upd_s, "operand 2"));
  XS_ASSIGN_OR_RETURN(ShardLayout layout, xv.Layout());
  Instruction* local_indices = LocalScatterIndices(em, iv.hlo(), sd, sliced, layout, operand);
  std::unique_ptr<Instruction> clone = inst.CloneWithNewOperands({xv.hlo(), local_indices, uv.hlo()});
  clone->set_shape(xv.hlo()->shape());
  clone->set_sharding(std::nullopt);
  clone->set_calls({{inst.calls()[0].role, ctx.state().Clone(*inst.calls()[0].computation)}});
  Instruction* local = em.AddInstruction(std::move(clone));
  XS_RETURN_IF_ERROR(ctx.Finish(inst, PartitionedValue(local, inst.shape(), op_s, &em),
                                "scatter into a sharded operand dim"));
  return true;
}

// The combiner of a scatter's to_apply when it is one commutative, associative op of its two
// scalar parameters (add, multiply, minimum, maximum, and, or), with that op's identity; nullopt
// otherwise (or when the identity is not exact in the dtype).
struct Combiner {
  Opcode op;
  double identity;
};
std::optional<Combiner> ScatterCombiner(const Instruction& inst, DType dtype) {
  const Computation* f = inst.to_apply();
  if (f == nullptr || !IsCollectiveReducer(*f)) return std::nullopt;
  const Instruction* root = f->root();
  const bool fp = IsFloating(dtype);
  const bool small_int = IsInteger(dtype) && DTypeBitWidth(dtype) <= 32;
  switch (root->opcode()) {
    case Opcode::kAdd: return dtype == DType::kPred ? std::nullopt : std::optional<Combiner>({Opcode::kAdd, 0.0});
    case Opcode::kMultiply: return dtype == DType::kPred ? std::nullopt : std::optional<Combiner>({Opcode::kMultiply, 1.0});
    case Opcode::kMaximum:
      if (fp) return Combiner{Opcode::kMaximum, -std::numeric_limits<double>::infinity()};
      if (small_int) return Combiner{Opcode::kMaximum, IsSignedInteger(dtype) ? -std::ldexp(1.0, DTypeBitWidth(dtype) - 1) : 0.0};
      return std::nullopt;
    case Opcode::kMinimum:
      if (fp) return Combiner{Opcode::kMinimum, std::numeric_limits<double>::infinity()};
      if (small_int) {
        return Combiner{Opcode::kMinimum, IsSignedInteger(dtype) ? std::ldexp(1.0, DTypeBitWidth(dtype) - 1) - 1
                                                                 : std::ldexp(1.0, DTypeBitWidth(dtype)) - 1};
      }
      return std::nullopt;
    case Opcode::kOr: return dtype == DType::kPred ? std::optional<Combiner>({Opcode::kOr, 0.0}) : std::nullopt;
    case Opcode::kAnd: return dtype == DType::kPred ? std::optional<Combiner>({Opcode::kAnd, 1.0}) : std::nullopt;
    default: return std::nullopt;
  }
}

// Scatter whose updates (and their indices) are split along the updates' scatter dims, with a
// commutative, associative combiner: every partition scatters its own updates into the
// combiner's identity, the partial results are combined over those axes (an all-reduce: XLA's
// plan) and the operand is combined in once. Chosen over the rule plan, which gathers the updates,
// when it costs less: small outputs, many updates (segment sums, histograms, a replicated
// table's gradient from a large batch). Updates split unevenly have their padding's indices set
// out of bounds, so that nothing is scattered from it.
StatusOr<bool> TryPartialScatter(const Instruction& inst, Context& ctx, int64_t limit, int64_t* cost_out) {
  if (inst.operand_count() != 3 || !inst.shape().IsArray()) return false;
  const ScatterDimensionNumbers& sd = *inst.attrs().scatter;
  if (!sd.input_batching_dims.empty()) return false;
  const PartitionedValue& x = ctx.Get(inst.operand(0));
  const PartitionedValue& idx = ctx.Get(inst.operand(1));
  const PartitionedValue& upd = ctx.Get(inst.operand(2));
  if (x.partial() || idx.partial() || upd.partial()) return false;
  const Shape& operand = x.global_shape();
  const Shape& indices = idx.global_shape();
  const Shape& updates = upd.global_shape();
  std::optional<Combiner> combiner = ScatterCombiner(inst, operand.dtype());
  const HloSharding target = ctx.TargetOf(inst);
  if (!combiner || target.IsManual() || !target.subgroup_types().empty()) return false;
  const TileMesh& mesh = ctx.state().mesh;
  std::optional<AxesSharding> ia = ViewOf(idx.sharding(), indices.rank(), mesh);
  std::optional<AxesSharding> ua = ViewOf(upd.sharding(), updates.rank(), mesh);
  if (!ia || !ua) return false;
  const int ivd = static_cast<int>(sd.index_vector_dim);
  if (ivd < indices.rank() && !ia->dims[ivd].empty()) return false;
  // The updates' scatter dims pair with the indices' dims other than index_vector_dim, in order.
  std::vector<int> index_dims;
  for (int d = 0; d < indices.rank(); ++d) {
    if (d != ivd) index_dims.push_back(d);
  }
  std::vector<int> axes, padded_index_dims;
  size_t k = 0;
  for (int d = 0; d < updates.rank(); ++d) {
    if (Contains(sd.update_window_dims, d)) {
      if (!ua->dims[d].empty()) return false;  // window dims whole
      continue;
    }
    if (k >= index_dims.size() || ua->dims[d] != ia->dims[index_dims[k]]) return false;
    int64_t pieces = 1;
    for (int a : ua->dims[d]) pieces *= mesh.axis_size(a);
    if (updates.dim(d) % pieces != 0) padded_index_dims.push_back(index_dims[k]);
    axes.insert(axes.end(), ua->dims[d].begin(), ua->dims[d].end());
    ++k;
  }
  if (axes.empty() || k != index_dims.size()) return false;
  // Updates split unevenly: the padding's indices are set out of bounds (-1, or the type's
  // largest value when unsigned, past every indexed dim), so that the scatter skips them.
  if (!padded_index_dims.empty() && !IsSignedInteger(indices.dtype())) {
    for (int64_t o : sd.scatter_dims_to_operand_dims) {
      if (!IndexTypeHolds(indices.dtype(), operand.dim(static_cast<int>(o)))) return false;
    }
  }
  // The operand's trivially sliced indexed dims that the target splits on axes other than the
  // updates' stay split: each partition scatters into its own rows of the identity (indices moved
  // to the shard's origin, the rest skipped), so that the partial results to combine are shards
  // (XLA's plan for an embedding gradient whose table rows and ids are split on different axes).
  const std::vector<int64_t> window = ScatterWindow(sd, operand, updates);
  AxesSharding oa{std::vector<std::vector<int>>(operand.rank()), 0};
  std::vector<bool> sliced(operand.rank(), false);
  bool any_sliced = false;
  if (std::optional<AxesSharding> ta = ViewOf(target, operand.rank(), mesh)) {
    for (int64_t d64 : sd.scatter_dims_to_operand_dims) {
      const int d = static_cast<int>(d64);
      const std::vector<int>& da = ta->dims[d];
      if (window[d] != 1 || operand.dim(d) <= 1 || da.empty() || sliced[d]) continue;
      if (!IndexTypeHolds(indices.dtype(), operand.dim(d))) continue;
      if (std::any_of(da.begin(), da.end(),
                      [&](int a) { return std::find(axes.begin(), axes.end(), a) != axes.end(); }))
        continue;
      oa.dims[d] = da;
      sliced[d] = any_sliced = true;
    }
  }
  const HloSharding op_s = any_sliced ? mesh.ToHloSharding(oa) : HloSharding::Replicate();
  ModuleState& state = ctx.state();
  const int64_t cost = ReshardCost(state, operand, op_s, PartialReduction{axes, nullptr}, target) +
                       ReshardCost(state, operand, x.sharding(), std::nullopt, target);
  *cost_out = cost;
  if (cost >= limit) return false;

  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(Shape local_shape, LocalShape(operand, op_s, em.num_partitions()));
  Instruction* identity = Splat(em, local_shape, operand.dtype(), combiner->identity);
  Instruction* local_indices = idx.hlo();
  if (!padded_index_dims.empty()) {
    const DType t = indices.dtype();
    const double skip =
        IsSignedInteger(t) ? -1.0 : std::min(std::ldexp(1.0, DTypeBitWidth(t)) - 1, std::ldexp(1.0, 53));
    XS_ASSIGN_OR_RETURN(local_indices, idx.PadWithValue(em.Scalar(t, skip), padded_index_dims));
  }
  if (any_sliced) {
    XS_ASSIGN_OR_RETURN(ShardLayout layout, PartitionedValue(identity, operand, op_s, &em).Layout());
    local_indices = LocalScatterIndices(em, local_indices, sd, sliced, layout, operand);
  }
  std::unique_ptr<Instruction> clone = inst.CloneWithNewOperands({identity, local_indices, upd.hlo()});
  clone->set_shape(identity->shape());
  clone->set_sharding(std::nullopt);
  clone->set_calls({{inst.calls()[0].role, state.Clone(*inst.calls()[0].computation)}});
  Instruction* local = em.AddInstruction(std::move(clone));
  PartitionedValue partial(local, operand, op_s, &em,
                           PartialReduction{axes, state.Reducer(combiner->op, operand.dtype())});
  XS_ASSIGN_OR_RETURN(PartitionedValue combined, partial.Reshard(target, "combine the partitions' scatters"));
  XS_ASSIGN_OR_RETURN(PartitionedValue base, x.Reshard(target, "operand 0"));
  Instruction* out = em.Binary(combiner->op, base.hlo(), combined.hlo());
  ctx.Set(&inst, PartitionedValue(out, inst.shape(), target, &em));
  return true;
}

}  // namespace

Status HandleGather(const Instruction& inst, Context& ctx) {
  XS_ASSIGN_OR_RETURN(bool done, TryShardedOperandGather(inst, ctx));
  return done ? OkStatus() : PartitionByRule(inst, ctx, RuleConfig{});
}

Status HandleScatter(const Instruction& inst, Context& ctx) {
  // Each plan's cost first (a limit of 0 emits nothing), then the cheapest: the sharded-operand
  // plan, the partial one, else the rule handler's.
  int64_t sharded = kImpossibleCost, partial = kImpossibleCost;
  XS_RETURN_IF_ERROR(TryShardedOperandScatter(inst, ctx, 0, &sharded).status());
  XS_RETURN_IF_ERROR(TryPartialScatter(inst, ctx, 0, &partial).status());
  bool done = false;
  if (std::min(sharded, partial) < kImpossibleCost) {
    const int64_t rule = RulePlanCost(inst, ctx, PositionalConfig(inst));
    int64_t unused = 0;
    if (sharded <= partial) {
      XS_ASSIGN_OR_RETURN(done, TryShardedOperandScatter(inst, ctx, rule, &unused));
    } else {
      XS_ASSIGN_OR_RETURN(done, TryPartialScatter(inst, ctx, rule, &unused));
    }
  }
  return done ? OkStatus() : PartitionByRule(inst, ctx, PositionalConfig(inst));
}

}  // namespace xs::spmd::internal
