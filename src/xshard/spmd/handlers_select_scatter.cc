// select-and-scatter (a max pool's gradient) along sharded windowed dims whose windows stay
// inside their own tile (a 2x2 pool with stride 2 over evenly split rows): the source takes the
// operand's tiling and each partition selects and scatters locally. Other cases go through the
// rule handler, which gathers the windowed dims.
#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {
namespace {

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
  for (int d = 0; d < shape.rank(); ++d) {
    const WindowDim& w = inst.attrs().window->dims[d];
    const bool trivial = w.size == 1 && w.stride == 1 && w.pad_low == 0 && w.pad_high == 0 &&
                         w.lhs_dilation == 1 && w.rhs_dilation == 1;
    if (layout.tiles()[d] == 1 || trivial) continue;
    if (!WindowsStayInTile(w, shape.dim(d), source.global_shape().dim(d), layout.tiles()[d])) {
      return HandleShapeOp(inst, ctx);
    }
    windowed = true;
  }
  if (!windowed) return HandleShapeOp(inst, ctx);
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
