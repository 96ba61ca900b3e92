// Convolutions whose kernel spatial dims are sharded like the input's (a weight gradient: the
// "kernel" is the output gradient, as large as the image, and the window slides over all of it):
// each partition convolves its input rows plus a halo with its own kernel rows into a partial
// result, and the partial results are summed (XLA's windowed reduction with ExchangeHalo). The
// contracted feature dims may be split alike (the batch of a weight gradient), and a depthwise
// weight gradient's batch groups pass through whole.
#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/spmd/window_halo.h"

namespace xs::spmd::internal {
namespace {

// One sharded spatial dim: input dim, kernel dim, its window, the mesh axes and tile count.
struct SplitDim {
  int in = 0, kernel = 0, window = 0;
  Axes axes;
  DimWindow halo;
};

}  // namespace

StatusOr<bool> TryWindowReductionConv(const Instruction& inst, Context& ctx, const RuleConfig& config) {
  const Attributes& attrs = inst.attrs();
  if (!attrs.conv_dims || !attrs.window || !config.reducer) return false;
  const ConvolutionDimensionNumbers& cd = *attrs.conv_dims;
  const PartitionedValue& lhs = ctx.Get(inst.operand(0));
  const PartitionedValue& rhs = ctx.Get(inst.operand(1));
  if (lhs.partial() || rhs.partial() || !lhs.sharding().IsTiled() || !rhs.sharding().IsTiled()) return false;
  ModuleState& state = ctx.state();
  const TileMesh& mesh = state.mesh;
  const std::optional<AxesSharding> la = mesh.ToAxes(lhs.sharding(), lhs.global_shape().rank());
  const std::optional<AxesSharding> ra = mesh.ToAxes(rhs.sharding(), rhs.global_shape().rank());
  if (!la || !ra || la->manual != 0 || ra->manual != 0) return false;
  // Every sharded kernel dim is a spatial dim sharded like its input dim; nothing else is sharded.
  std::vector<SplitDim> split;
  std::vector<bool> lhs_ok(la->rank(), false), rhs_ok(ra->rank(), false);
  for (size_t i = 0; i < cd.kernel_spatial.size(); ++i) {
    const int ks = static_cast<int>(cd.kernel_spatial[i]), is = static_cast<int>(cd.input_spatial[i]);
    if (ra->dims[ks].empty()) continue;
    if (la->dims[is] != ra->dims[ks]) return false;
    lhs_ok[is] = rhs_ok[ks] = true;
    split.push_back(SplitDim{is, ks, static_cast<int>(i), ra->dims[ks], {}});
  }
  if (split.empty()) return false;
  // The contracted feature dims may be split alike too (a weight gradient over a batch split on
  // data: the image's batch is the contracted "feature" dim): their axes join the partial sum.
  // Not with feature groups, whose grouping a split would cut; batch groups (a depthwise weight
  // gradient) stay whole, as the checks below keep every other dim unsplit.
  Axes feature_axes;
  const int in_f = static_cast<int>(cd.input_feature), k_f = static_cast<int>(cd.kernel_input_feature);
  if (!la->dims[in_f].empty() && la->dims[in_f] == ra->dims[k_f] && attrs.feature_group_count == 1) {
    lhs_ok[in_f] = rhs_ok[k_f] = true;
    feature_axes = la->dims[in_f];
  }
  for (int d = 0; d < la->rank(); ++d) {
    if (!la->dims[d].empty() && !lhs_ok[d]) return false;
  }
  for (int d = 0; d < ra->rank(); ++d) {
    if (!ra->dims[d].empty() && !rhs_ok[d]) return false;
  }
  // Kernel tile k holds kernel rows [k*len, k*len + valid): they meet input padded positions
  // o*stride + j*rhs_dilation for every output o and those rows j.
  int64_t halo_bytes = 0;
  for (SplitDim& s : split) {
    const WindowDim& w = attrs.window->dims[s.window];
    if (w.lhs_dilation != 1 || w.window_reversal) return false;
    const int64_t tiles = AxesSize(mesh, s.axes), k_size = w.size;
    const int64_t len = (k_size + tiles - 1) / tiles, outputs = inst.shape().dim(static_cast<int>(cd.output_spatial[s.window]));
    const int64_t in_size = lhs.global_shape().dim(s.in), in_len = (in_size + tiles - 1) / tiles;
    s.halo.dim = s.in;
    s.halo.size = (outputs - 1) * w.stride + (len - 1) * w.rhs_dilation + 1;
    for (int64_t k = 0; k < tiles; ++k) {
      const int64_t valid = std::clamp<int64_t>(k_size - k * len, 0, len);
      s.halo.lo.push_back(k * len * w.rhs_dilation - w.pad_low);
      s.halo.needed.push_back(valid > 0 ? (outputs - 1) * w.stride + (valid - 1) * w.rhs_dilation + 1 : 0);
    }
    if (!WindowsReach(s.halo, in_size, in_len, 2)) return false;
    // Bytes received: the window beyond the own shard (an estimate: two neighbours' rows).
    int64_t rest = DTypeSize(lhs.global_shape().dtype());
    for (int64_t e : lhs.hlo()->shape().dims()) rest *= e;
    halo_bytes += std::max<int64_t>(s.halo.size - in_len, 0) * (rest / std::max<int64_t>(in_len, 1));
  }
  Axes partial;
  for (const SplitDim& s : split) partial.insert(partial.end(), s.axes.begin(), s.axes.end());
  partial.insert(partial.end(), feature_axes.begin(), feature_axes.end());
  std::sort(partial.begin(), partial.end());
  const HloSharding target = ctx.TargetOf(inst);
  const int64_t mine = halo_bytes + static_cast<int64_t>(2 * split.size()) +
                       ReshardCost(state, inst.shape(), HloSharding::Replicate(), PartialReduction{partial, nullptr},
                                   target);
  if (mine >= kImpossibleCost || mine > RulePlanCost(inst, ctx, config)) return false;

  Emitter& em = ctx.em();
  // Padding rows of an uneven split feature dim must add nothing, on both sides (0 * NaN).
  Instruction* x = lhs.hlo();
  std::vector<int> kernel_dims;
  if (!feature_axes.empty()) {
    XS_ASSIGN_OR_RETURN(x, lhs.PadWithValue(nullptr, {in_f}));
    kernel_dims.push_back(k_f);
  }
  for (const SplitDim& s : split) {
    XS_ASSIGN_OR_RETURN(x, MaskedWindow(PartitionedValue(x, lhs.global_shape(), lhs.sharding(), &em), s.halo,
                                        nullptr, "convolution over a sharded kernel: input window"));
    kernel_dims.push_back(s.kernel);
  }
  // Padding rows of uneven kernel shards must add nothing.
  XS_ASSIGN_OR_RETURN(Instruction* k, rhs.PadWithValue(nullptr, kernel_dims));
  std::unique_ptr<Instruction> local = inst.CloneWithNewOperands({x, k});
  for (const SplitDim& s : split) {
    WindowDim& w = (*local->mutable_attrs().window).dims[s.window];
    w.size = k->shape().dim(s.kernel);
    w.pad_low = 0;
    w.pad_high = 0;
  }
  local->set_shape(inst.shape());
  local->set_sharding(std::nullopt);
  Instruction* result = em.AddInstruction(std::move(local));
  XS_RETURN_IF_ERROR(ctx.Finish(inst, PartitionedValue(result, inst.shape(), HloSharding::Replicate(), &em,
                                                       PartialReduction{partial, config.reducer()}),
                                "convolution over a sharded kernel"));
  return true;
}

}  // namespace xs::spmd::internal
