// Rules of the ops that combine or index data: dot, convolution, reduce, reduce-window,
// select-and-scatter, sort / topk, gather, scatter, fft, the linear-algebra ops and batch norm.
#include <algorithm>

#include "xshard/rules/rules_internal.h"

namespace xs::rules_internal {
namespace {

using Ref = RuleBuilder::Ref;
using DimList = std::vector<std::pair<Ref, int>>;

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Every dim number in `dims` names a dim of `s` (`what` of `inst`). Shape inference takes the
// declared shapes of sparse dots and convolutions (their sparse operand is stored compressed), so
// their dim numbers are checked here.
Status DimsInRange(const Instruction& inst, const Shape& s, std::initializer_list<int64_t> dims, const char* what) {
  for (int64_t d : dims) {
    if (d < 0 || d >= s.rank()) {
      return BadAttr(inst, StrCat("a dim number of the ", what, " (", d, ") is outside its rank ", s.rank()));
    }
  }
  return OkStatus();
}
Status DimsInRange(const Instruction& inst, const Shape& s, const std::vector<int64_t>& dims, const char* what) {
  for (int64_t d : dims) XS_RETURN_IF_ERROR(DimsInRange(inst, s, {d}, what));
  return OkStatus();
}

void IgnoreOperands(RuleBuilder& b, const Instruction& inst, int from, int to) {
  for (int i = from; i < to; ++i) {
    for (int l = 0; l < LeafCount(inst.operand(i)->shape()); ++l) b.Ignore(b.Operand(i, l));
  }
}

// dot: batch dims (lhs, rhs, out), lhs free dims (lhs, out), rhs free dims (rhs, out), and the
// contracting dims (lhs, rhs) as reduction factors. Result dims: batch, lhs free, rhs free.
StatusOr<OpShardingRule> Dot(const Instruction& inst) {
  if (inst.operand_count() < 2) return BadAttr(inst, "dot needs two operands");
  // No dimension numbers: an outer product.
  const DotDimensionNumbers dn = inst.attrs().dot.value_or(DotDimensionNumbers{});
  const Shape& lhs = inst.operand(0)->shape();
  const Shape& rhs = inst.operand(1)->shape();
  const Shape& out = inst.shape();
  if (dn.lhs_batch.size() != dn.rhs_batch.size() ||
      dn.lhs_contracting.size() != dn.rhs_contracting.size()) {
    return BadAttr(inst, "lhs and rhs list different numbers of batch / contracting dims");
  }
  if (!lhs.IsArray() || !rhs.IsArray() || !out.IsArray()) return BadAttr(inst, "dot operands must be arrays");
  XS_RETURN_IF_ERROR(DimsInRange(inst, lhs, dn.lhs_batch, "lhs"));
  XS_RETURN_IF_ERROR(DimsInRange(inst, lhs, dn.lhs_contracting, "lhs"));
  XS_RETURN_IF_ERROR(DimsInRange(inst, rhs, dn.rhs_batch, "rhs"));
  XS_RETURN_IF_ERROR(DimsInRange(inst, rhs, dn.rhs_contracting, "rhs"));
  RuleBuilder b = MakeBuilder(inst);
  IgnoreOperands(b, inst, 2, inst.operand_count());
  const Ref res = RuleBuilder::Result();
  int o = 0;
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i, ++o) {
    Factor(b, lhs.dim(dn.lhs_batch[i]), FactorKind::kPassThrough,
           {{b.Operand(0), static_cast<int>(dn.lhs_batch[i])},
            {b.Operand(1), static_cast<int>(dn.rhs_batch[i])},
            {res, o}});
  }
  for (int side = 0; side < 2; ++side) {
    const Shape& s = side == 0 ? lhs : rhs;
    const auto& batch = side == 0 ? dn.lhs_batch : dn.rhs_batch;
    const auto& contracting = side == 0 ? dn.lhs_contracting : dn.rhs_contracting;
    for (int d = 0; d < s.rank(); ++d) {
      if (Contains(batch, d) || Contains(contracting, d)) continue;
      if (o >= out.rank()) return BadAttr(inst, "result rank is smaller than batch + free dims");
      Factor(b, s.dim(d), FactorKind::kPassThrough, {{b.Operand(side), d}, {res, o++}});
    }
  }
  if (o != out.rank()) return BadAttr(inst, "result rank is not batch + lhs free + rhs free dims");
  for (size_t i = 0; i < dn.lhs_contracting.size(); ++i) {
    Factor(b, lhs.dim(dn.lhs_contracting[i]), FactorKind::kReduction,
           {{b.Operand(0), static_cast<int>(dn.lhs_contracting[i])},
            {b.Operand(1), static_cast<int>(dn.rhs_contracting[i])}});
  }
  return std::move(b).Build();
}

bool TrivialWindow(const WindowDim& w) {
  return w.size == 1 && w.stride == 1 && w.pad_low == 0 && w.pad_high == 0 && w.lhs_dilation == 1 &&
         w.rhs_dilation == 1 && !w.window_reversal;
}

// convolution(input, kernel): batch passes through (unless batch groups), the input feature and
// kernel input feature contract, the kernel output feature is the output feature; with feature
// groups the group count is a pass-through factor major in the input feature, kernel output
// feature and output feature. Spatial dims: pass-through for a 1-wide window, a reduction when
// the window covers the whole input (a dot in disguise), a permutation of the input and kernel
// dims with the result dim its own when the kernel is larger than the result (a weight
// gradient), every dim its own when the kernel is as wide as the result or the input is dilated
// with such a kernel, else a permutation (halo exchange) with the kernel's spatial dim
// replicated.
StatusOr<OpShardingRule> Convolution(const Instruction& inst) {
  if (!inst.attrs().conv_dims || inst.operand_count() != 2)
    return BadAttr(inst, "convolution needs dim_labels=");
  const ConvolutionDimensionNumbers& cd = *inst.attrs().conv_dims;
  const Shape& in = inst.operand(0)->shape();
  const Shape& k = inst.operand(1)->shape();
  const Shape& out = inst.shape();
  const size_t ns = cd.input_spatial.size();
  const Window window = inst.attrs().window.value_or(Window{std::vector<WindowDim>(ns)});
  if (cd.kernel_spatial.size() != ns || cd.output_spatial.size() != ns ||
      window.dims.size() != ns) {
    return BadAttr(inst, "spatial dim counts of dim_labels and window differ");
  }
  if (!in.IsArray() || !k.IsArray() || !out.IsArray()) return BadAttr(inst, "convolution operands must be arrays");
  XS_RETURN_IF_ERROR(DimsInRange(inst, in, {cd.input_batch, cd.input_feature}, "input"));
  XS_RETURN_IF_ERROR(DimsInRange(inst, in, cd.input_spatial, "input"));
  XS_RETURN_IF_ERROR(DimsInRange(inst, k, {cd.kernel_input_feature, cd.kernel_output_feature}, "kernel"));
  XS_RETURN_IF_ERROR(DimsInRange(inst, k, cd.kernel_spatial, "kernel"));
  XS_RETURN_IF_ERROR(DimsInRange(inst, out, {cd.output_batch, cd.output_feature}, "result"));
  XS_RETURN_IF_ERROR(DimsInRange(inst, out, cd.output_spatial, "result"));
  RuleBuilder b = MakeBuilder(inst);
  const Ref lhs = b.Operand(0), rhs = b.Operand(1), res = RuleBuilder::Result();
  const int ib = static_cast<int>(cd.input_batch), iff = static_cast<int>(cd.input_feature);
  const int ki = static_cast<int>(cd.kernel_input_feature),
            ko = static_cast<int>(cd.kernel_output_feature);
  const int ob = static_cast<int>(cd.output_batch), of = static_cast<int>(cd.output_feature);
  const int64_t fgc = inst.attrs().feature_group_count, bgc = inst.attrs().batch_group_count;
  // Batch groups (a depthwise or grouped convolution's weight gradient): output feature o
  // belongs to group g = o / (O / bgc) and reads input batch g * (B / bgc) + output batch. So the
  // input batch dim is [groups, group size], the kernel's and the result's output features
  // [groups, features per group], and a group split over devices stays local.
  const bool batch_groups = bgc > 1 && fgc == 1 && in.dim(ib) % bgc == 0 && k.dim(ko) % bgc == 0 &&
                            out.dim(of) == k.dim(ko) && out.dim(ob) * bgc == in.dim(ib);
  if (bgc == 1) {
    Factor(b, in.dim(ib), FactorKind::kPassThrough, {{lhs, ib}, {res, ob}});
  } else if (batch_groups) {
    Factor(b, bgc, FactorKind::kPassThrough, {{lhs, ib}, {rhs, ko}, {res, of}});
    Factor(b, in.dim(ib) / bgc, FactorKind::kPassThrough, {{lhs, ib}, {res, ob}});
  } else {
    Factor(b, in.dim(ib), FactorKind::kNeedReplication, {{lhs, ib}});
    Factor(b, out.dim(ob), FactorKind::kPassThrough, {{res, ob}});
  }
  if (fgc > 1 && in.dim(iff) % fgc == 0 && k.dim(ko) % fgc == 0) {
    Factor(b, fgc, FactorKind::kPassThrough, {{lhs, iff}, {rhs, ko}, {res, of}});
    Factor(b, in.dim(iff) / fgc, FactorKind::kReduction, {{lhs, iff}, {rhs, ki}});
    Factor(b, k.dim(ko) / fgc, FactorKind::kPassThrough, {{rhs, ko}, {res, of}});
  } else if (fgc > 1) {
    return BadAttr(inst, "feature_group_count does not divide the feature dims");
  } else {
    Factor(b, in.dim(iff), FactorKind::kReduction, {{lhs, iff}, {rhs, ki}});
    Factor(b, k.dim(ko) / (batch_groups ? bgc : 1), FactorKind::kPassThrough, {{rhs, ko}, {res, of}});
  }
  for (size_t i = 0; i < ns; ++i) {
    const int is = static_cast<int>(cd.input_spatial[i]),
              ks = static_cast<int>(cd.kernel_spatial[i]);
    const int os = static_cast<int>(cd.output_spatial[i]);
    const WindowDim& w = window.dims[i];
    if (TrivialWindow(w)) {
      Factor(b, in.dim(is), FactorKind::kPassThrough, {{lhs, is}, {res, os}});
    } else if (out.dim(os) == 1 && w.size == in.dim(is) && w.pad_low == 0 && w.pad_high == 0 &&
               w.lhs_dilation == 1 && w.rhs_dilation == 1) {
      Factor(b, in.dim(is), FactorKind::kReduction, {{lhs, is}, {rhs, ks}});
    } else if (k.dim(ks) > out.dim(os) && w.lhs_dilation == 1) {
      // A kernel larger than the result (a weight gradient: the output gradient slides over the
      // image): the input and kernel dims move together (halo), the small result dim is its own.
      Factor(b, in.dim(is), FactorKind::kPermutation, {{lhs, is}, {rhs, ks}});
      Factor(b, out.dim(os), FactorKind::kNeedReplication, {{res, os}});
    } else if (k.dim(ks) >= out.dim(os)) {
      // The same for a transposed convolution's weight gradient (lhs dilation), which has no
      // halo form: each dim on its own, so that the input's split does not land on the result's
      // few rows (a 2-row kernel gradient split over 8 devices, then gathered for the output).
      // And for a kernel exactly as wide as the result (a correlation building a Toeplitz
      // matrix, say): each result tile's halo would be the kernel's width, nearly the whole
      // input, so the result is not split along the input (XLA's propagation, too, splits a
      // convolution's result spatially only when the kernel is smaller than it).
      Factor(b, in.dim(is), FactorKind::kNeedReplication, {{lhs, is}});
      Factor(b, k.dim(ks), FactorKind::kNeedReplication, {{rhs, ks}});
      Factor(b, out.dim(os), FactorKind::kNeedReplication, {{res, os}});
    } else {
      Factor(b, in.dim(is), FactorKind::kPermutation, {{lhs, is}, {res, os}});
      Factor(b, k.dim(ks), FactorKind::kNeedReplication, {{rhs, ks}});
    }
  }
  return std::move(b).Build();
}

// reduce(inputs..., inits...), dimensions={...}: reduced dims are reduction factors of every
// input; kept dims pass through to every result leaf.
StatusOr<OpShardingRule> Reduce(const Instruction& inst) {
  const int n = inst.operand_count() / 2;
  if (n == 0 || inst.operand_count() % 2 != 0)
    return BadAttr(inst, "reduce needs inputs and as many init values");
  const Shape& in = inst.operand(0)->shape();
  RuleBuilder b = MakeBuilder(inst);
  IgnoreOperands(b, inst, n, 2 * n);
  int kept = 0;
  for (int d = 0; d < in.rank(); ++d) {
    DimList on;
    for (int i = 0; i < n; ++i) on.push_back({b.Operand(i), d});
    if (Contains(inst.dimensions(), d)) {
      Factor(b, in.dim(d), FactorKind::kReduction, on);
      continue;
    }
    for (int l = 0; l < b.num_result_leaves(); ++l) {
      if (kept >= b.ShapeOf(RuleBuilder::Result(l)).rank())
        return BadAttr(inst, "result rank is not the kept dims");
      on.push_back({RuleBuilder::Result(l), kept});
    }
    ++kept;
    Factor(b, in.dim(d), FactorKind::kPassThrough, on);
  }
  return std::move(b).Build();
}

// reduce-window(inputs..., inits...) and select-and-scatter(operand, source, init): a dim with a
// 1-wide window passes through; a windowed dim moves data (halo; a dilated reduce-window's too,
// where the partitioner's window geometry allows it, window_halo.h); a dilated select-and-scatter
// window needs replication.
StatusOr<OpShardingRule> Windowed(const Instruction& inst) {
  const bool sas = inst.opcode() == Opcode::kSelectAndScatter;
  const int n = sas ? 1 : inst.operand_count() / 2;
  if (n == 0) return BadAttr(inst, "reduce-window needs inputs and init values");
  const Shape& in = inst.operand(0)->shape();
  const Window window = inst.attrs().window.value_or(Window{});
  if (static_cast<int>(window.dims.size()) != in.rank()) {
    return BadAttr(inst, "window= must have one entry per operand dim");
  }
  RuleBuilder b = MakeBuilder(inst);
  IgnoreOperands(b, inst, sas ? 2 : n, inst.operand_count());
  for (int d = 0; d < in.rank(); ++d) {
    const WindowDim& w = window.dims[d];
    DimList on;
    for (int i = 0; i < n; ++i) on.push_back({b.Operand(i), d});
    for (int l = 0; l < b.num_result_leaves(); ++l) on.push_back({RuleBuilder::Result(l), d});
    if (TrivialWindow(w)) {
      if (sas) on.push_back({b.Operand(1), d});
      Factor(b, in.dim(d), FactorKind::kPassThrough, on);
      continue;
    }
    if (sas && (w.lhs_dilation > 1 || w.rhs_dilation > 1)) {
      for (const auto& [t, dim] : on)
        Factor(b, b.ShapeOf(t).dim(dim), FactorKind::kNeedReplication, {{t, dim}});
    } else {
      Factor(b, in.dim(d), FactorKind::kPermutation, on);
    }
    if (sas)
      Factor(b, inst.operand(1)->shape().dim(d), FactorKind::kNeedReplication, {{b.Operand(1), d}});
  }
  return std::move(b).Build();
}

// sort(operands...), dimensions={d}: every operand and result leaf shares each dim; the sorted
// dim needs replication.
StatusOr<OpShardingRule> Sort(const Instruction& inst) {
  if (inst.dimensions().size() != 1) return BadAttr(inst, "sort needs dimensions={d}");
  const Shape& in = inst.operand(0)->shape();
  RuleBuilder b = MakeBuilder(inst);
  for (int d = 0; d < in.rank(); ++d) {
    DimList on;
    for (int i = 0; i < inst.operand_count(); ++i) on.push_back({b.Operand(i), d});
    for (int l = 0; l < b.num_result_leaves(); ++l) on.push_back({RuleBuilder::Result(l), d});
    Factor(b, in.dim(d),
           d == inst.dimensions()[0] ? FactorKind::kNeedReplication : FactorKind::kPassThrough, on);
  }
  return std::move(b).Build();
}

// topk(x) -> (values, indices) over the last dim: batch dims pass through, the last dim needs
// replication. Also used for custom-call "TopK".
StatusOr<OpShardingRule> TopK(const Instruction& inst) {
  const Shape& in = inst.operand(0)->shape();
  RuleBuilder b = MakeBuilder(inst);
  IgnoreOperands(b, inst, 1, inst.operand_count());
  for (int l = 0; l < b.num_result_leaves(); ++l) {
    if (b.ShapeOf(RuleBuilder::Result(l)).rank() != in.rank()) return BarrierRule(inst);
  }
  for (int d = 0; d < in.rank(); ++d) {
    DimList results;
    for (int l = 0; l < b.num_result_leaves(); ++l) results.push_back({RuleBuilder::Result(l), d});
    if (d + 1 < in.rank()) {
      results.push_back({b.Operand(0), d});
      Factor(b, in.dim(d), FactorKind::kPassThrough, results);
    } else {
      Factor(b, in.dim(d), FactorKind::kNeedReplication, {{b.Operand(0), d}});
      Factor(b, b.ShapeOf(RuleBuilder::Result()).dim(d), FactorKind::kNeedReplication, results);
    }
  }
  return std::move(b).Build();
}

// Leading dims pass through; the trailing `n` dims need replication (fft over its lengths,
// cholesky / triangular-solve over their matrices).
StatusOr<OpShardingRule> TrailingDimsReplicated(const Instruction& inst, int n) {
  RuleBuilder b = MakeBuilder(inst);
  const Shape& out = inst.shape();
  std::vector<Ref> full = {RuleBuilder::Result()};
  for (int i = 0; i < inst.operand_count(); ++i) {
    if (inst.operand(i)->shape().rank() == out.rank())
      full.push_back(b.Operand(i));
    else
      b.Ignore(b.Operand(i));
  }
  for (int d = 0; d < out.rank(); ++d) {
    if (d < out.rank() - n) {
      DimList on;
      for (Ref t : full) on.push_back({t, d});
      Factor(b, out.dim(d), FactorKind::kPassThrough, on);
    } else {
      for (Ref t : full) Factor(b, b.ShapeOf(t).dim(d), FactorKind::kNeedReplication, {{t, d}});
    }
  }
  return std::move(b).Build();
}

StatusOr<OpShardingRule> Fft(const Instruction& inst) {
  const std::optional<std::vector<int64_t>>& lengths = inst.attrs().fft_length;
  const int n = lengths ? static_cast<int>(lengths->size()) : 1;
  return TrailingDimsReplicated(inst, n);
}
StatusOr<OpShardingRule> Matrix(const Instruction& inst) {
  return TrailingDimsReplicated(inst, 2);
}

// Batch norm: the feature dim passes through every tensor; the other dims of the full-size
// tensors pass through for inference (elementwise per feature) and need replication for
// training / grad (their statistics reduce over them).
StatusOr<OpShardingRule> BatchNorm(const Instruction& inst) {
  const std::optional<int64_t>& fi = inst.attrs().feature_index;
  const Shape& in = inst.operand(0)->shape();
  if (!fi || *fi < 0 || *fi >= in.rank()) return BadAttr(inst, "batch norm needs feature_index=N");
  const int f = static_cast<int>(*fi);
  RuleBuilder b = MakeBuilder(inst);
  std::vector<Ref> full, feature;
  for (int i = 0; i < inst.operand_count(); ++i)
    (inst.operand(i)->shape().rank() == in.rank() ? full : feature).push_back(b.Operand(i));
  for (int l = 0; l < b.num_result_leaves(); ++l) {
    Ref r = RuleBuilder::Result(l);
    (b.ShapeOf(r).rank() == in.rank() ? full : feature).push_back(r);
  }
  const bool inference = inst.opcode() == Opcode::kBatchNormInference;
  for (int d = 0; d < in.rank(); ++d) {
    DimList on;
    for (Ref t : full) on.push_back({t, d});
    if (d == f) {
      for (Ref t : feature) on.push_back({t, 0});
      Factor(b, in.dim(d), FactorKind::kPassThrough, on);
    } else {
      Factor(b, in.dim(d), inference ? FactorKind::kPassThrough : FactorKind::kNeedReplication, on);
    }
  }
  return std::move(b).Build();
}

}  // namespace

StatusOr<OpShardingRule> TopKRule(const Instruction& inst) {
  return TopK(inst);
}

void AddContractionRules(RuleTable& table) {
  Set(table, Opcode::kDot, Dot);
  Set(table, Opcode::kConvolution, Convolution);
  Set(table, Opcode::kReduce, Reduce);
  Set(table, Opcode::kReduceWindow, Windowed);
  Set(table, Opcode::kSelectAndScatter, Windowed);
  Set(table, Opcode::kSort, Sort);
  Set(table, Opcode::kTopK, TopK);
  Set(table, Opcode::kGather, GatherRule);
  Set(table, Opcode::kScatter, ScatterRule);
  Set(table, Opcode::kFft, Fft);
  Set(table, Opcode::kCholesky, Matrix);
  Set(table, Opcode::kTriangularSolve, Matrix);
  Set(table, Opcode::kBatchNormTraining, BatchNorm);
  Set(table, Opcode::kBatchNormInference, BatchNorm);
  Set(table, Opcode::kBatchNormGrad, BatchNorm);
}

}  // namespace xs::rules_internal
