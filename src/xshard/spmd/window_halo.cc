// Halo exchange for convolution and reduce-window: which windowed dims may stay sharded, the
// window each result tile reads, its cost, the exchange itself (HaloWindow) with the positions
// outside the input set to the padding value, and the local window attributes.
#include "xshard/spmd/window_halo.h"

#include <algorithm>
#include <map>

#include "xshard/base/strings.h"

namespace xs::spmd::internal {
namespace {

int64_t Ceil(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The low padding of a result tile's local window: how far before its first input element the
// tile's first window starts (0 without lhs dilation).
int64_t LocalPadLow(const WindowDim& w) {
  return ((w.pad_low % w.lhs_dilation) + w.lhs_dilation) % w.lhs_dilation;
}

// The reach of the windows: per shift (source tile - result tile) the part [a, b) of the source
// tile some window reads (as HaloWindow computes it).
std::map<int64_t, std::pair<int64_t, int64_t>> UsedParts(const DimWindow& w, int64_t in_size, int64_t len) {
  std::map<int64_t, std::pair<int64_t, int64_t>> used;
  for (size_t k = 0; k < w.lo.size(); ++k) {
    const int64_t lo = std::max<int64_t>(w.lo[k], 0), hi = std::min(w.lo[k] + w.needed[k], in_size);
    for (int64_t m = lo / len; lo < hi && m <= (hi - 1) / len; ++m) {
      const int64_t a = std::max(lo, m * len) - m * len, b = std::min(hi, (m + 1) * len) - m * len;
      const int64_t s = m - static_cast<int64_t>(k);
      auto it = used.find(s);
      if (it == used.end()) {
        used[s] = {a, b};
      } else {
        it->second = {std::min(it->second.first, a), std::max(it->second.second, b)};
      }
    }
  }
  return used;
}

// The (single) result dim size of the op's result leaves.
int64_t ResultDim(const Instruction& inst, int d) { return ShapeLeaves(inst.shape())[0]->dim(d); }

}  // namespace

std::optional<WindowedDim> WindowedDimOf(const Instruction& inst, int operand, int dim) {
  const std::optional<Window>& window = inst.attrs().window;
  if (!window) return std::nullopt;
  if (inst.opcode() == Opcode::kConvolution && operand == 0 && inst.attrs().conv_dims) {
    const ConvolutionDimensionNumbers& cd = *inst.attrs().conv_dims;
    for (size_t i = 0; i < cd.input_spatial.size() && i < window->dims.size(); ++i) {
      if (cd.input_spatial[i] != dim || TrivialWindowDim(window->dims[i])) continue;
      return WindowedDim{window->dims[i], static_cast<int>(cd.output_spatial[i]), static_cast<int>(i)};
    }
    return std::nullopt;
  }
  if (inst.opcode() == Opcode::kReduceWindow && operand < inst.operand_count() / 2 &&
      dim < static_cast<int>(window->dims.size()) && !TrivialWindowDim(window->dims[dim])) {
    return WindowedDim{window->dims[dim], dim, dim};
  }
  return std::nullopt;
}

std::optional<DimWindow> ResultTileWindows(const WindowDim& w, int dim, int64_t in_size,
                                           int64_t out_size, int64_t tiles) {
  if (w.window_reversal || tiles <= 1 || in_size <= 0 || out_size <= 0) return std::nullopt;
  const int64_t out_len = Ceil(out_size, tiles);
  const int64_t reach = (w.size - 1) * w.rhs_dilation + 1;  // padded positions one output reads
  const int64_t ld = w.lhs_dilation, low = LocalPadLow(w);
  // Input element i sits at padded position pad_low + i * ld. Result tile k reads padded
  // positions [k * out_len * stride, ... + (outputs - 1) * stride + reach): the input elements
  // from lo[k] = ceil((first - pad_low) / ld) on. With lhs dilation every tile must start the
  // same distance (`low`) before its first element, so that one local window serves them all.
  DimWindow win;
  win.dim = dim;
  win.size = 0;
  std::vector<int64_t> start(tiles, low);  // padded positions from the first window to lo[k]
  std::vector<bool> any(tiles, false);     // the tile holds results
  bool alike = true;
  for (int64_t k = 0; k < tiles; ++k) {
    const int64_t outputs = std::clamp<int64_t>(out_size - k * out_len, 0, out_len);
    const int64_t first = k * out_len * w.stride;
    const int64_t lo = CeilDiv(first - w.pad_low, ld);
    win.lo.push_back(lo);
    win.needed.push_back(
        outputs > 0 ? std::max<int64_t>(FloorDiv(first + (outputs - 1) * w.stride + reach - 1 - w.pad_low, ld) - lo + 1, 0)
                    : 0);
    win.size = std::max(win.size, FloorDiv(first + (out_len - 1) * w.stride + reach - 1 - w.pad_low, ld) - lo + 1);
    any[k] = outputs > 0;
    if (any[k]) start[k] = w.pad_low + lo * ld - first;
    alike = alike && start[k] == low;
  }
  if (!alike) {
    // Tile k's first window starts start[k] (in [0, ld)) before its first element. Starting each
    // tile's local window local_pad_low - start[k] positions earlier lines them all up; that
    // reaches no element before lo[k] (the shift is under ld), and the result moves by whole
    // elements only when the shift is a multiple of the stride.
    for (int64_t k = 0; k < tiles; ++k) {
      if (any[k]) win.local_pad_low = std::max(win.local_pad_low, start[k]);
    }
    win.size = 0;
    for (int64_t k = 0; k < tiles; ++k) {
      const int64_t s = any[k] ? win.local_pad_low - start[k] : 0;
      if (s % w.stride != 0) return std::nullopt;
      win.shift.push_back(s);
      win.extra = std::max(win.extra, s / w.stride);
    }
    for (int64_t k = 0; k < tiles; ++k) {
      const int64_t from = k * out_len * w.stride - win.shift[k];
      win.size = std::max(
          win.size, FloorDiv(from + (out_len + win.extra - 1) * w.stride + reach - 1 - w.pad_low, ld) - win.lo[k] + 1);
    }
  }
  if (win.size <= 0) return std::nullopt;
  return win;
}

bool HaloFactorFits(const Op& op, int f, int64_t tiles) {
  const OpShardingRule& rule = op.rule;
  if (rule.factors[f].kind != FactorKind::kPermutation) return false;
  bool in_input = false;
  for (int i = 0; i < static_cast<int>(rule.operands.size()); ++i) {
    if (!Participates(op, i)) continue;
    const std::vector<std::vector<int>>& dims = rule.operands[i].dims;
    for (int d = 0; d < static_cast<int>(dims.size()); ++d) {
      if (std::find(dims[d].begin(), dims[d].end(), f) == dims[d].end()) continue;
      const std::optional<WindowedDim> wd = WindowedDimOf(*op.inst, i, d);
      if (dims[d].size() != 1 || !wd) return false;
      const int64_t in_size = op.operands[i].global_shape().dim(d);
      const std::optional<DimWindow> w =
          ResultTileWindows(wd->window, d, in_size, ResultDim(*op.inst, wd->result_dim), tiles);
      if (!w) return false;
      // Shifted tiles cut their result out afterwards (AddShifted): one array result only.
      if (!w->shift.empty() && !op.inst->shape().IsArray()) return false;
      // A tile whose window spans the whole dim (a cumulative sum or max: reduce-window over the
      // full length) would receive every other tile: as many bytes as gathering the dim, in more
      // collectives, and not shared with the operand's other users the way a gathered copy is
      // (the reshard cache). XLA gathers such dims; so does the plan.
      for (size_t k = 0; k < w->lo.size(); ++k) {
        if (w->lo[k] <= 0 && w->lo[k] + w->needed[k] >= in_size) return false;
      }
      in_input = true;
    }
  }
  for (const TensorFactors& t : rule.results) {
    for (const std::vector<int>& dim : t.dims) {
      if (std::find(dim.begin(), dim.end(), f) != dim.end() && dim.size() != 1) return false;
    }
  }
  return in_input;
}

void AddHaloCost(const Op& op, const Plan& plan, ModuleState& state, int64_t* bytes, int64_t* collectives,
                 double* latency_us) {
  const int64_t n = state.num_partitions;
  for (int i = 0; i < static_cast<int>(op.operands.size()); ++i) {
    const Shape& global = op.operands[i].global_shape();
    StatusOr<ShardLayout> layout = ShardLayout::Create(plan.operands[i], global.dims(), n);
    if (!layout.ok()) continue;
    for (int d = 0; d < global.rank(); ++d) {
      const std::optional<WindowedDim> wd = WindowedDimOf(*op.inst, i, d);
      const int64_t tiles = layout->tiles()[d], len = layout->shard_dims()[d];
      if (!wd || tiles <= 1) continue;
      const std::optional<DimWindow> w =
          ResultTileWindows(wd->window, d, global.dim(d), ResultDim(*op.inst, wd->result_dim), tiles);
      if (!w) continue;
      if (!WindowsReach(*w, global.dim(d), len, 2)) {
        // Far windows (input and result tiles of different lengths): what FarWindow would move.
        std::unique_ptr<Emitter> scratch = Emitter::Scratch(&state);
        StatusOr<Shape> local = LocalShape(global, plan.operands[i], n);
        if (!local.ok()) continue;
        PartitionedValue dry(scratch->ScratchParameter(*local), global, plan.operands[i], scratch.get());
        if (!FarWindow(dry, *w, "").ok()) {
          *bytes += kImpossibleCost / 4;  // no halo form: never cheaper than the unsharded plan
          continue;
        }
        *bytes += scratch->bytes();
        *collectives += (scratch->cost() - scratch->bytes() + 1) / 2;  // permutes, paired as below
        *latency_us += scratch->latency_us();
        continue;
      }
      const auto used = UsedParts(*w, global.dim(d), len);
      if (used.empty()) continue;
      int64_t rows = 0, permutes = 0;
      for (int64_t s = used.begin()->first; s <= used.rbegin()->first; ++s) {
        if (s == 0) continue;
        const auto it = used.find(s);
        rows += it == used.end() || (s != used.begin()->first && s != used.rbegin()->first)
                    ? len
                    : it->second.second - it->second.first;
        ++permutes;
      }
      // A collective-permute waits on one neighbour, not on the whole group: its fixed cost is
      // MachineModel::LatencyUs("collective-permute"); in the byte-based cost (bytes plus one per
      // collective) two permutes count as one collective.
      *collectives += (permutes + 1) / 2;
      *latency_us += static_cast<double>(permutes) * state.machine.LatencyUs("collective-permute");
      int64_t rest = DTypeSize(global.dtype());
      for (int e = 0; e < global.rank(); ++e) rest *= e == d ? 1 : layout->shard_dims()[e];
      *bytes += rows * rest;
    }
  }
}

bool WindowsReach(const DimWindow& w, int64_t in_size, int64_t len, int64_t max_shift) {
  const auto used = UsedParts(w, in_size, len);
  return used.empty() || (used.begin()->first >= -max_shift && used.rbegin()->first <= max_shift);
}

StatusOr<Instruction*> MaskedWindow(const PartitionedValue& v, const DimWindow& w, Instruction* fill,
                                    std::string_view why) {
  Emitter& em = v.emitter();
  XS_ASSIGN_OR_RETURN(ShardLayout layout, v.Layout());
  Instruction* local = v.hlo();
  const int d = w.dim;
  const int64_t size = v.global_shape().dim(d);
  // Windows that start at their own tile's start and end inside it (a 2x2 pool with stride 2)
  // are a static slice of the local shard: no exchange, no per-tile offset.
  const int64_t len = layout.shard_dims()[d];
  bool own = w.size <= len;
  for (size_t k = 0; k < w.lo.size() && own; ++k) {
    own = w.needed[k] == 0 || w.lo[k] == static_cast<int64_t>(k) * len;
  }
  Instruction* windowed = nullptr;
  if (own) {
    std::vector<int64_t> limits = local->shape().dims();
    limits[d] = w.size;
    windowed = w.size == len ? local : em.Slice(local, limits);
  } else if (WindowsReach(w, size, len, 2)) {
    XS_ASSIGN_OR_RETURN(windowed, HaloWindow(v, w, why));
  } else {
    XS_ASSIGN_OR_RETURN(windowed, FarWindow(v, w, why));
  }
  bool outside = false;
  for (size_t k = 0; k < w.lo.size(); ++k) {
    outside = outside || (w.needed[k] > 0 && (w.lo[k] < 0 || w.lo[k] + w.needed[k] > size));
  }
  if (!outside) return windowed;
  // Window positions outside the input read the padding value.
  const Shape& shape = windowed->shape();
  const Shape s32 = shape.WithDType(DType::kS32);
  Instruction* pos = em.Binary(Opcode::kAdd, em.Iota(DType::kS32, shape.dims(), d),
                               em.Broadcast(em.PerTile(layout, d, w.lo), s32, {}));
  Instruction* inside = em.Binary(
      Opcode::kAnd, em.Compare(pos, em.Broadcast(em.ZeroOf(DType::kS32), s32, {}), ComparisonDirection::kGe),
      em.Compare(pos, em.Broadcast(em.Scalar(DType::kS32, static_cast<double>(size)), s32, {}),
                 ComparisonDirection::kLt));
  Instruction* value = fill != nullptr ? fill : em.ZeroOf(shape.dtype());
  return em.Select(inside, windowed, em.Broadcast(value, shape, {}));
}

StatusOr<Instruction*> ExchangeHalos(const Instruction& inst, int operand, const PartitionedValue& v,
                                     Instruction* fill) {
  XS_ASSIGN_OR_RETURN(ShardLayout layout, v.Layout());
  Instruction* local = v.hlo();
  const Shape& global = v.global_shape();
  for (int d = 0; d < global.rank(); ++d) {
    const std::optional<WindowedDim> wd = WindowedDimOf(inst, operand, d);
    if (!wd || layout.tiles()[d] <= 1) continue;
    const std::optional<DimWindow> w =
        ResultTileWindows(wd->window, d, global.dim(d), ResultDim(inst, wd->result_dim), layout.tiles()[d]);
    if (!w) return FailedPrecondition("the windows of dim ", d, " do not fit a halo exchange");
    XS_ASSIGN_OR_RETURN(local, MaskedWindow(PartitionedValue(local, global, v.sharding(), &v.emitter()), *w, fill,
                                            StrCat(OpcodeName(inst.opcode()), " window")));
  }
  return local;
}

void LocalizeWindows(Instruction& local, const Instruction& global) {
  Attributes& attrs = local.mutable_attrs();
  if (!attrs.window) return;
  const Shape& local_out = *ShapeLeaves(local.shape())[0];
  const Shape& global_out = *ShapeLeaves(global.shape())[0];
  auto localize = [&](WindowDim& w, int in_dim, int out_dim) {
    const int64_t in = local.operand(0)->shape().dim(in_dim), out = local_out.dim(out_dim);
    if (TrivialWindowDim(w) || w.window_reversal ||
        (in == global.operand(0)->shape().dim(in_dim) && out == global_out.dim(out_dim))) {
      return;
    }
    w.pad_low = LocalPadLow(w);
    w.pad_high = (out - 1) * w.stride + (w.size - 1) * w.rhs_dilation - w.pad_low - (in - 1) * w.lhs_dilation;
  };
  if (global.opcode() == Opcode::kConvolution && attrs.conv_dims) {
    const ConvolutionDimensionNumbers& cd = *attrs.conv_dims;
    for (size_t i = 0; i < cd.input_spatial.size() && i < attrs.window->dims.size(); ++i) {
      const int ks = static_cast<int>(cd.kernel_spatial[i]);
      // A kernel split with the input is a dot in disguise (a reduction factor): its window stays.
      if (local.operand(1)->shape().dim(ks) != global.operand(1)->shape().dim(ks)) continue;
      localize(attrs.window->dims[i], static_cast<int>(cd.input_spatial[i]), static_cast<int>(cd.output_spatial[i]));
    }
  } else if (global.opcode() == Opcode::kReduceWindow) {
    for (int d = 0; d < static_cast<int>(attrs.window->dims.size()); ++d) localize(attrs.window->dims[d], d, d);
  }
}

std::vector<ShiftedResult> ShiftedResults(const Instruction& inst, const Shape& input, const HloSharding& sharding,
                                          int64_t n) {
  std::vector<ShiftedResult> out;
  StatusOr<ShardLayout> layout = ShardLayout::Create(sharding, input.dims(), n);
  if (!layout.ok()) return out;
  for (int d = 0; d < input.rank(); ++d) {
    const std::optional<WindowedDim> wd = WindowedDimOf(inst, 0, d);
    if (!wd || layout->tiles()[d] <= 1) continue;
    std::optional<DimWindow> w =
        ResultTileWindows(wd->window, d, input.dim(d), ResultDim(inst, wd->result_dim), layout->tiles()[d]);
    if (w && !w->shift.empty()) out.push_back(ShiftedResult{wd->index, wd->result_dim, std::move(*w)});
  }
  return out;
}

StatusOr<Instruction*> AddShifted(std::unique_ptr<Instruction> local, const std::vector<ShiftedResult>& shifts,
                                  const HloSharding& result_sharding, const Shape& global_result, Emitter& em) {
  Attributes& attrs = local->mutable_attrs();
  for (const ShiftedResult& s : shifts) {
    WindowDim& w = attrs.window->dims[s.window];
    const int in_dim = attrs.conv_dims ? static_cast<int>(attrs.conv_dims->input_spatial[s.window]) : s.window;
    const int64_t in = local->operand(0)->shape().dim(in_dim), out = local->shape().dim(s.result_dim);
    w.pad_low = s.win.local_pad_low;
    w.pad_high = (out - 1) * w.stride + (w.size - 1) * w.rhs_dilation - w.pad_low - (in - 1) * w.lhs_dilation;
  }
  Instruction* x = em.AddInstruction(std::move(local));
  if (shifts.empty()) return x;
  XS_ASSIGN_OR_RETURN(ShardLayout layout,
                      ShardLayout::Create(result_sharding, global_result.dims(), em.num_partitions()));
  std::vector<Instruction*> starts(global_result.rank(), nullptr);
  std::vector<int64_t> sizes = x->shape().dims();
  for (const ShiftedResult& s : shifts) {
    const int64_t stride = x->attrs().window->dims[s.window].stride;
    if (layout.tiles()[s.result_dim] != static_cast<int64_t>(s.win.shift.size())) {
      return Internal("a shifted window's result dim ", s.result_dim, " has ", layout.tiles()[s.result_dim],
                      " tiles where its input has ", s.win.shift.size());
    }
    std::vector<int64_t> by_tile;
    for (int64_t v : s.win.shift) by_tile.push_back(v / stride);
    starts[s.result_dim] = em.PerTile(layout, s.result_dim, by_tile);
    sizes[s.result_dim] -= s.win.extra;
  }
  for (Instruction*& start : starts) {
    if (start == nullptr) start = em.ZeroOf(DType::kS32);
  }
  return em.DynamicSlice(x, std::move(starts), sizes);
}

}  // namespace xs::spmd::internal
