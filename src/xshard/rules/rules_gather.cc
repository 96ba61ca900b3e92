// Rules of gather and scatter: index-passthrough dims (indices batch dims <-> result batch dims /
// update scatter dims), operand-passthrough dims (operand dims taken whole <-> result offset
// dims / update window dims), explicit batching dims (shared by all three), and the indexed
// dims, which need replication.
#include <algorithm>

#include "xshard/rules/rules_internal.h"

namespace xs::rules_internal {
namespace {

using Ref = RuleBuilder::Ref;
using DimList = std::vector<std::pair<Ref, int>>;

int IndexOf(const std::vector<int64_t>& v, int64_t x) {
  auto it = std::find(v.begin(), v.end(), x);
  return it == v.end() ? -1 : static_cast<int>(it - v.begin());
}

// Dims 0..rank-1 that are not in `skip_a` / `skip_b`, in order.
std::vector<int> DimsExcept(int rank, const std::vector<int64_t>& skip_a,
                            const std::vector<int64_t>& skip_b = {}) {
  std::vector<int> out;
  for (int d = 0; d < rank; ++d) {
    if (IndexOf(skip_a, d) < 0 && IndexOf(skip_b, d) < 0) out.push_back(d);
  }
  return out;
}

bool AllBelow(const std::vector<int64_t>& dims, int rank) {
  return std::all_of(dims.begin(), dims.end(), [&](int64_t d) { return d >= 0 && d < rank; });
}

}  // namespace

StatusOr<OpShardingRule> GatherRule(const Instruction& inst) {
  if (!inst.attrs().gather || !inst.attrs().slice_sizes || inst.operand_count() != 2) {
    return BadAttr(inst, "gather needs its dimension numbers and slice_sizes=");
  }
  const GatherDimensionNumbers& g = *inst.attrs().gather;
  const std::vector<int64_t>& slice_sizes = *inst.attrs().slice_sizes;
  const Shape& operand = inst.operand(0)->shape();
  const Shape& indices = inst.operand(1)->shape();
  const Shape& out = inst.shape();
  const int ivd = static_cast<int>(g.index_vector_dim);
  if (!AllBelow(g.offset_dims, out.rank()) || !AllBelow(g.collapsed_slice_dims, operand.rank()) ||
      !AllBelow(g.operand_batching_dims, operand.rank()) ||
      !AllBelow(g.start_indices_batching_dims, indices.rank()) ||
      static_cast<int>(slice_sizes.size()) != operand.rank() ||
      g.operand_batching_dims.size() != g.start_indices_batching_dims.size()) {
    return BadAttr(inst,
                   "gather dimension numbers do not fit the operand, indices and result ranks");
  }
  const std::vector<int> idx_batch = DimsExcept(indices.rank(), {ivd});
  const std::vector<int> out_batch = DimsExcept(out.rank(), g.offset_dims);
  const std::vector<int> op_offset =
      DimsExcept(operand.rank(), g.collapsed_slice_dims, g.operand_batching_dims);
  if (idx_batch.size() != out_batch.size() || op_offset.size() != g.offset_dims.size()) {
    return BadAttr(inst, "gather batch / offset dim counts do not match the result");
  }
  RuleBuilder b = MakeBuilder(inst);
  const Ref op = b.Operand(0), idx = b.Operand(1), res = RuleBuilder::Result();
  for (size_t k = 0; k < idx_batch.size(); ++k) {
    DimList on = {{idx, idx_batch[k]}, {res, out_batch[k]}};
    const int pos = IndexOf(g.start_indices_batching_dims, idx_batch[k]);
    if (pos >= 0) on.push_back({op, static_cast<int>(g.operand_batching_dims[pos])});
    Factor(b, indices.dim(idx_batch[k]), FactorKind::kPassThrough, on);
  }
  for (size_t k = 0; k < op_offset.size(); ++k) {
    const int d = op_offset[k], od = static_cast<int>(g.offset_dims[k]);
    if (slice_sizes[d] == operand.dim(d)) {
      Factor(b, operand.dim(d), FactorKind::kPassThrough, {{op, d}, {res, od}});
    } else {
      Factor(b, operand.dim(d), FactorKind::kNeedReplication, {{op, d}});
      Factor(b, out.dim(od), FactorKind::kPassThrough, {{res, od}});
    }
  }
  for (int64_t d : g.collapsed_slice_dims) {
    Factor(b, operand.dim(d), FactorKind::kNeedReplication, {{op, static_cast<int>(d)}});
  }
  if (ivd < indices.rank()) Factor(b, indices.dim(ivd), FactorKind::kNeedReplication, {{idx, ivd}});
  return std::move(b).Build();
}

StatusOr<OpShardingRule> ScatterRule(const Instruction& inst) {
  const int n = (inst.operand_count() - 1) / 2;
  if (!inst.attrs().scatter || n < 1 || inst.operand_count() != 2 * n + 1) {
    return BadAttr(inst,
                   "scatter needs operands, indices, as many updates, and its dimension numbers");
  }
  const ScatterDimensionNumbers& s = *inst.attrs().scatter;
  const Shape& operand = inst.operand(0)->shape();
  const Shape& indices = inst.operand(n)->shape();
  const Shape& updates = inst.operand(n + 1)->shape();
  const int ivd = static_cast<int>(s.index_vector_dim);
  if (!AllBelow(s.update_window_dims, updates.rank()) ||
      !AllBelow(s.inserted_window_dims, operand.rank()) ||
      !AllBelow(s.input_batching_dims, operand.rank()) ||
      !AllBelow(s.scatter_indices_batching_dims, indices.rank()) ||
      s.input_batching_dims.size() != s.scatter_indices_batching_dims.size()) {
    return BadAttr(inst,
                   "scatter dimension numbers do not fit the operand, indices and update ranks");
  }
  const std::vector<int> idx_batch = DimsExcept(indices.rank(), {ivd});
  const std::vector<int> upd_scatter = DimsExcept(updates.rank(), s.update_window_dims);
  const std::vector<int> op_window =
      DimsExcept(operand.rank(), s.inserted_window_dims, s.input_batching_dims);
  if (idx_batch.size() != upd_scatter.size() || op_window.size() != s.update_window_dims.size()) {
    return BadAttr(inst, "scatter scatter / window dim counts do not match the updates");
  }
  RuleBuilder b = MakeBuilder(inst);
  const Ref idx = b.Operand(n);
  for (int d = 0; d < operand.rank(); ++d) {
    DimList on;
    for (int i = 0; i < n; ++i) on.push_back({b.Operand(i), d});
    for (int l = 0; l < b.num_result_leaves(); ++l) on.push_back({RuleBuilder::Result(l), d});
    const int w = IndexOf(std::vector<int64_t>(op_window.begin(), op_window.end()), d);
    if (w >= 0) {
      const int ud = static_cast<int>(s.update_window_dims[w]);
      for (int i = 0; i < n; ++i) {
        if (updates.dim(ud) == operand.dim(d))
          on.push_back({b.Operand(n + 1 + i), ud});
        else
          Factor(b, updates.dim(ud), FactorKind::kNeedReplication, {{b.Operand(n + 1 + i), ud}});
      }
    }
    const int pos = IndexOf(s.input_batching_dims, d);
    if (pos >= 0) {
      const int id = static_cast<int>(s.scatter_indices_batching_dims[pos]);
      on.push_back({idx, id});
      const int k = IndexOf(std::vector<int64_t>(idx_batch.begin(), idx_batch.end()), id);
      if (k >= 0) {
        for (int i = 0; i < n; ++i) on.push_back({b.Operand(n + 1 + i), upd_scatter[k]});
      }
    }
    Factor(b, operand.dim(d), FactorKind::kPassThrough, on);
  }
  for (size_t k = 0; k < idx_batch.size(); ++k) {
    if (IndexOf(s.scatter_indices_batching_dims, idx_batch[k]) >= 0) continue;
    DimList on = {{idx, idx_batch[k]}};
    for (int i = 0; i < n; ++i) on.push_back({b.Operand(n + 1 + i), upd_scatter[k]});
    Factor(b, indices.dim(idx_batch[k]), FactorKind::kReduction, on);
  }
  if (ivd < indices.rank()) Factor(b, indices.dim(ivd), FactorKind::kNeedReplication, {{idx, ivd}});
  return std::move(b).Build();
}

}  // namespace xs::rules_internal
