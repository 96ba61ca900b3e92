// select-and-scatter (a max pool's gradient) along sharded windowed dims. Windows that stay
// inside their own tile (a 2x2 pool with stride 2 over evenly split rows): the source takes the
// operand's tiling and each partition selects and scatters locally. Windows that overlap across
// tiles (3x3 at stride 2) along sharded dims: halo exchange, as XLA's partitioner does it.
// Each tile takes every source window that touches its operand rows and the operand rows those
// windows cover (from its neighbours; rows outside the operand read a value the select never
// takes: -inf for a >= / > select, +inf for <= / <), selects and scatters them locally, and keeps
// its own rows: every window that scatters into a tile's rows is one it evaluated whole, and what
// it scattered into a neighbour's rows is dropped (the neighbour computed it too); one edge
// differs: under >= (<=) a window of real -inf (+inf) elements that starts in the padding keeps
// a padding position where the whole program picks its first real one. The scatter
// must be an add, so that the windows a tile takes past the source's end (source zeros) change
// nothing. Other cases, and the halo plan when it moves more, go through the rule handler, which
// gathers the windowed dims.
#include <algorithm>
#include <limits>

#include "xshard/spmd/handlers.h"
#include "xshard/spmd/window_halo.h"

namespace xs::spmd::internal {
namespace {

// The value the select computation never picks over a real element: -inf for (a, b) -> a >= b
// or a > b (the first operand is the one kept), +inf for <= / <; nullopt for other selects
// (total-order compares among them) and for types without infinities.
std::optional<double> NeverSelected(const Instruction& inst) {
  const DType t = inst.shape().dtype();
  if (t != DType::kF32 && t != DType::kF64 && t != DType::kBF16 && t != DType::kF16) return std::nullopt;
  const Computation* select = nullptr;
  for (const CalledComputation& c : inst.calls()) {
    if (c.role == CallRole::kSelect) select = c.computation;
  }
  if (select == nullptr || select->num_parameters() != 2) return std::nullopt;
  const Instruction* root = select->root();
  // A total-order compare puts -NaN below -inf (and +NaN above +inf): every fill may be picked.
  if (root == nullptr || root->opcode() != Opcode::kCompare || !root->attrs().comparison_direction ||
      root->attrs().comparison_type == ComparisonType::kTotalOrder) {
    return std::nullopt;
  }
  const bool straight = root->operand(0) == select->parameter(0) && root->operand(1) == select->parameter(1);
  const bool swapped = root->operand(0) == select->parameter(1) && root->operand(1) == select->parameter(0);
  if (!straight && !swapped) return std::nullopt;
  const double inf = std::numeric_limits<double>::infinity();
  switch (*root->attrs().comparison_direction) {
    case ComparisonDirection::kGe:
    case ComparisonDirection::kGt: return straight ? -inf : inf;
    case ComparisonDirection::kLe:
    case ComparisonDirection::kLt: return straight ? inf : -inf;
    default: return std::nullopt;
  }
}

// True when the scatter computation is (x, y) -> x + y.
bool ScatterAdds(const Instruction& inst) {
  for (const CalledComputation& c : inst.calls()) {
    if (c.role != CallRole::kScatter) continue;
    const Computation& s = *c.computation;
    const Instruction* root = s.root();
    return s.num_parameters() == 2 && root != nullptr && root->opcode() == Opcode::kAdd && root->operand_count() == 2 &&
           root->operand(0)->opcode() == Opcode::kParameter && root->operand(1)->opcode() == Opcode::kParameter &&
           root->operand(0) != root->operand(1);
  }
  return false;
}

// The halo plan along dim d (operand tiles of `len` rows, `tiles` of them; `m` source windows):
// the source windows and operand rows each tile takes, and where its own rows start in them.
struct SelectScatterHalo {
  DimWindow operand, source;
  std::vector<int64_t> own;  // per tile: offset of its first row in its operand window
};

std::optional<SelectScatterHalo> PlanHalo(const WindowDim& w, int d, int64_t tiles, int64_t len, int64_t m) {
  if (w.lhs_dilation != 1 || w.rhs_dilation != 1 || w.window_reversal || w.stride < 1 || m < 1) {
    return std::nullopt;
  }
  // Window j covers operand rows [j * stride - pad_low, ... + size). Tile k takes windows
  // first[k] .. first[k] + count - 1: from the first that touches its rows (or, with gaps
  // between windows, the last that starts at or before them) on, enough to cover its rows; the
  // same count for every tile (one local shape), of which only those up to the last window that
  // touches its rows, last[k], need real rows: the others scatter outside its rows or, past the
  // source's end, scatter zeros.
  std::vector<int64_t> first(tiles), last(tiles);
  int64_t count = 1;
  for (int64_t k = 0; k < tiles; ++k) {
    const int64_t a = k * len, b = (k + 1) * len;  // the tile's rows [a, b)
    const int64_t touch = std::max<int64_t>(0, CeilDiv(a + w.pad_low - w.size + 1, w.stride));
    first[k] = std::min(touch, std::max<int64_t>(0, FloorDiv(a + w.pad_low, w.stride)));
    last[k] = std::min(m - 1, FloorDiv(b - 1 + w.pad_low, w.stride));
    const int64_t start = first[k] * w.stride - w.pad_low;
    count = std::max({count, last[k] - first[k] + 1, CeilDiv(b - start - w.size, w.stride) + 1});
  }
  SelectScatterHalo h;
  h.operand.dim = h.source.dim = d;
  h.source.size = count;
  h.operand.size = (count - 1) * w.stride + w.size;
  for (int64_t k = 0; k < tiles; ++k) {
    const int64_t start = first[k] * w.stride - w.pad_low;
    if (start > k * len) return std::nullopt;
    const int64_t windows = std::max<int64_t>(0, last[k] - first[k] + 1);
    h.source.lo.push_back(first[k]);
    // Windows past the source's end exist only here and may reach the tile's rows: they must
    // scatter zeros (MaskedWindow's fill past the end), so those tiles take their whole window.
    h.source.needed.push_back(first[k] + count > m ? count : windows);
    h.operand.lo.push_back(start);
    h.own.push_back(k * len - start);
    const int64_t rows = windows == 0 ? 0 : (windows - 1) * w.stride + w.size;
    h.operand.needed.push_back(std::min(h.operand.size, std::max(rows, h.own.back() + len)));
  }
  return h;
}

// The local select-and-scatter of the halo plans (one per overlapping dim) into `em`: x (the
// operand, tiled by `layout`) and src (the source, tiled alike) widened dim by dim to each tile's
// windows (a later dim's exchange carries the earlier dims' halos, corners included), selected
// and scattered, and the tile's own rows kept. `calls` are the local op's computations.
StatusOr<Instruction*> HaloLocal(const Instruction& inst, const std::vector<SelectScatterHalo>& halos, double never,
                                 const PartitionedValue& x, const PartitionedValue& src, Instruction* init,
                                 const ShardLayout& layout, std::vector<CalledComputation> calls) {
  Emitter& em = x.emitter();
  Instruction* fill = em.Scalar(inst.shape().dtype(), never);
  Instruction* xw = x.hlo();
  Instruction* sw = src.hlo();
  for (const SelectScatterHalo& h : halos) {
    XS_ASSIGN_OR_RETURN(xw, MaskedWindow(PartitionedValue(xw, x.global_shape(), x.sharding(), &em), h.operand, fill,
                                         "select-and-scatter operand"));
    XS_ASSIGN_OR_RETURN(sw, MaskedWindow(PartitionedValue(sw, src.global_shape(), src.sharding(), &em), h.source,
                                         nullptr, "select-and-scatter source"));
  }
  std::unique_ptr<Instruction> local = inst.CloneWithNewOperands({xw, sw, init});
  local->set_shape(xw->shape());
  local->set_sharding(std::nullopt);
  for (const SelectScatterHalo& h : halos) {
    WindowDim& w = local->mutable_attrs().window->dims[h.operand.dim];
    w.pad_low = w.pad_high = 0;
  }
  local->set_calls(std::move(calls));
  Instruction* r = em.AddInstruction(std::move(local));
  for (const SelectScatterHalo& h : halos) {
    const int d = h.operand.dim;
    std::vector<int64_t> sizes = r->shape().dims();
    sizes[d] = layout.shard_dims()[d];
    if (std::all_of(h.own.begin(), h.own.end(), [&](int64_t o) { return o == h.own[0]; })) {
      std::vector<int64_t> starts(sizes.size(), 0), limits = sizes;
      starts[d] = h.own[0];
      limits[d] += h.own[0];
      r = em.Slice(r, std::move(starts), std::move(limits));
    } else {
      std::vector<Instruction*> starts(sizes.size(), em.ZeroOf(DType::kS32));
      starts[d] = em.PerTile(layout, d, h.own);
      r = em.DynamicSlice(r, std::move(starts), std::move(sizes));
    }
  }
  return r;
}

// The halo plan along `dims` when it fits and moves less than the rule handler's plan; false
// (nothing emitted) otherwise.
StatusOr<bool> TryHalo(const Instruction& inst, Context& ctx, const ShardLayout& layout, const std::vector<int>& dims) {
  const PartitionedValue& operand = ctx.Get(inst.operand(0));
  const PartitionedValue& source = ctx.Get(inst.operand(1));
  const HloSharding& s = operand.sharding();
  const std::optional<double> never = NeverSelected(inst);
  if (!never || !ScatterAdds(inst)) return false;
  std::vector<SelectScatterHalo> halos;
  for (int d : dims) {
    std::optional<SelectScatterHalo> h = PlanHalo(inst.attrs().window->dims[d], d, layout.tiles()[d],
                                                  layout.shard_dims()[d], source.global_shape().dim(d));
    if (!h) return false;
    halos.push_back(*std::move(h));
  }
  ModuleState& state = ctx.state();
  const int64_t reshards = ReshardCost(state, source.global_shape(), source.sharding(), source.partial(), s) +
                           ReshardCost(state, inst.shape(), s, std::nullopt, ctx.TargetOf(inst));
  if (reshards >= kImpossibleCost) return false;
  {
    // Dry run of the exchange against the rule handler's gather.
    std::unique_ptr<Emitter> scratch = Emitter::Scratch(&state);
    XS_ASSIGN_OR_RETURN(ShardLayout src_layout,
                        ShardLayout::Create(s, source.global_shape().dims(), state.num_partitions));
    PartitionedValue x(scratch->ScratchParameter(operand.hlo()->shape()), operand.global_shape(), s, scratch.get());
    PartitionedValue src(scratch->ScratchParameter(Shape(source.global_shape().dtype(), src_layout.shard_dims())),
                         source.global_shape(), s, scratch.get());
    Instruction* init = scratch->ScratchParameter(Shape(inst.shape().dtype(), {}));
    if (!HaloLocal(inst, halos, *never, x, src, init, layout, inst.calls()).ok() ||
        reshards + scratch->cost() > RulePlanCost(inst, ctx, RuleConfig{})) {
      return false;
    }
  }
  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(PartitionedValue src, source.Reshard(s, "select-and-scatter source"));
  XS_ASSIGN_OR_RETURN(PartitionedValue init, ctx.Get(inst.operand(2)).Replicate("select-and-scatter init"));
  std::vector<CalledComputation> calls;
  for (const CalledComputation& c : inst.calls()) calls.push_back({c.role, state.Clone(*c.computation)});
  XS_ASSIGN_OR_RETURN(Instruction * result,
                      HaloLocal(inst, halos, *never, operand, src, init.hlo(), layout, std::move(calls)));
  XS_RETURN_IF_ERROR(ctx.Finish(inst, PartitionedValue(result, inst.shape(), s, &em), "select-and-scatter"));
  return true;
}

// True when every window of operand dim d (n elements in `tiles` tiles; s source elements) lies
// in the operand tile of its source tile, both dims split evenly.
bool WindowsStayInTile(const WindowDim& w, int64_t n, int64_t s, int64_t tiles) {
  if (n % tiles != 0 || s % tiles != 0 || w.pad_low != 0 || w.pad_high != 0 || w.lhs_dilation != 1 ||
      w.rhs_dilation != 1 || w.window_reversal) {
    return false;
  }
  const int64_t in = n / tiles, out = s / tiles;
  // Local shapes must line up: the local operand's windows make the local source.
  if (in < w.size || (in - w.size) / w.stride + 1 != out) return false;
  for (int64_t k = 0; k < tiles; ++k) {
    const int64_t first = k * out * w.stride, last = first + (out - 1) * w.stride + w.size;
    if (first < k * in || last > (k + 1) * in) return false;
  }
  return true;
}

}  // namespace

Status HandleSelectAndScatter(const Instruction& inst, Context& ctx) {
  const PartitionedValue& operand = ctx.Get(inst.operand(0));
  const PartitionedValue& source = ctx.Get(inst.operand(1));
  const HloSharding& s = operand.sharding();
  const Shape& shape = inst.shape();
  if (!s.IsTiled() || !s.subgroup_types().empty() || operand.partial() || !inst.attrs().window ||
      static_cast<int>(inst.attrs().window->dims.size()) != shape.rank()) {
    return HandleShapeOp(inst, ctx);
  }
  XS_ASSIGN_OR_RETURN(ShardLayout layout, operand.Layout());
  bool windowed = false;
  std::vector<int> overlapping;  // sharded dims whose windows cross tiles
  for (int d = 0; d < shape.rank(); ++d) {
    const WindowDim& w = inst.attrs().window->dims[d];
    if (layout.tiles()[d] == 1 || TrivialWindowDim(w)) continue;
    if (!WindowsStayInTile(w, shape.dim(d), source.global_shape().dim(d), layout.tiles()[d])) overlapping.push_back(d);
    windowed = true;
  }
  if (!windowed) return HandleShapeOp(inst, ctx);
  if (!overlapping.empty()) {
    StatusOr<bool> halo = TryHalo(inst, ctx, layout, overlapping);
    if (!halo.ok() || !*halo) return HandleShapeOp(inst, ctx);
    return OkStatus();
  }
  ModuleState& state = ctx.state();
  const int64_t mine = ReshardCost(state, source.global_shape(), source.sharding(), source.partial(), s) +
                       ReshardCost(state, shape, s, std::nullopt, ctx.TargetOf(inst));
  if (mine >= kImpossibleCost || mine > RulePlanCost(inst, ctx, RuleConfig{})) return HandleShapeOp(inst, ctx);
  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(PartitionedValue src, source.Reshard(s, "select-and-scatter source"));
  XS_ASSIGN_OR_RETURN(PartitionedValue init, ctx.Get(inst.operand(2)).Replicate("select-and-scatter init"));
  std::unique_ptr<Instruction> local = inst.CloneWithNewOperands({operand.hlo(), src.hlo(), init.hlo()});
  local->set_shape(operand.hlo()->shape());
  local->set_sharding(std::nullopt);
  std::vector<CalledComputation> calls;
  for (const CalledComputation& c : inst.calls()) calls.push_back({c.role, state.Clone(*c.computation)});
  local->set_calls(std::move(calls));
  Instruction* result = em.AddInstruction(std::move(local));
  return ctx.Finish(inst, PartitionedValue(result, shape, s, &em), "select-and-scatter");
}

}  // namespace xs::spmd::internal
