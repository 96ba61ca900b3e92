// MakeGatherBatchDimsExplicit: iota components of gather and scatter indices become batching dims.
#include "xshard/passes/gather_batch_dims.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace xs {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

void Erase(std::vector<int64_t>& v, int64_t x) { v.erase(std::remove(v.begin(), v.end(), x), v.end()); }

// True when `z` is a scalar constant, or a broadcast of one, that is at most 0.
bool NonPositiveConstant(const Instruction& z) {
  const Instruction* c = &z;
  if (c->opcode() == Opcode::kBroadcast && c->operand(0)->shape().rank() == 0) c = c->operand(0);
  return c->opcode() == Opcode::kConstant && c->shape().IsArray() && c->shape().rank() == 0 &&
         c->literal().GetDouble(0) <= 0;
}

// The dim of `c` along which its values count 0, 1, 2, ... (equal along every other dim): an
// iota, and what keeps that: a broadcast of such a value, a reshape that only adds or drops dims
// of size 1, a convert to an integer type that holds the positions, and the select JAX wraps
// around an index to wrap negative ones (select(x < 0, x + n, x) of such an x is x, whose values
// are never negative); nullopt otherwise.
std::optional<int64_t> IotaDim(const Instruction& c, int depth = 0) {
  if (depth > 32 || !c.shape().IsArray() || !IsInteger(c.shape().dtype())) return std::nullopt;
  const Shape& shape = c.shape();
  switch (c.opcode()) {
    case Opcode::kIota:
      if (!c.attrs().iota_dimension) return std::nullopt;
      return *c.attrs().iota_dimension;
    case Opcode::kBroadcast: {
      const std::optional<int64_t> d = IotaDim(*c.operand(0), depth + 1);
      if (!d || *d >= static_cast<int64_t>(c.dimensions().size())) return std::nullopt;
      return c.dimensions()[*d];
    }
    case Opcode::kReshape: {
      const Shape& in = c.operand(0)->shape();
      const std::optional<int64_t> d = IotaDim(*c.operand(0), depth + 1);
      if (!d || in.dim(static_cast<int>(*d)) <= 1) return std::nullopt;
      std::vector<int64_t> in_dims, out_dims;  // the dims of size > 1, in order
      for (int k = 0; k < in.rank(); ++k) {
        if (in.dim(k) > 1) in_dims.push_back(k);
      }
      for (int k = 0; k < shape.rank(); ++k) {
        if (shape.dim(k) > 1) out_dims.push_back(k);
      }
      if (in_dims.size() != out_dims.size()) return std::nullopt;
      std::optional<int64_t> mapped;
      for (size_t i = 0; i < in_dims.size(); ++i) {
        if (in.dim(static_cast<int>(in_dims[i])) != shape.dim(static_cast<int>(out_dims[i]))) return std::nullopt;
        if (in_dims[i] == *d) mapped = out_dims[i];
      }
      return mapped;
    }
    case Opcode::kConvert:
    case Opcode::kCopy: {
      const std::optional<int64_t> d = IotaDim(*c.operand(0), depth + 1);
      if (!d) return std::nullopt;
      const int bits = DTypeBitWidth(shape.dtype()) - (IsSignedInteger(shape.dtype()) ? 1 : 0);
      if (bits < 62 && shape.dim(static_cast<int>(*d)) > (int64_t{1} << bits)) return std::nullopt;
      return d;
    }
    case Opcode::kSelect: {
      const Instruction& p = *c.operand(0);
      if (p.opcode() != Opcode::kCompare || !p.attrs().comparison_direction) return std::nullopt;
      const ComparisonDirection dir = *p.attrs().comparison_direction;
      // select(x < z, _, x) and select(x >= z, x, _) with z <= 0 are x.
      const Instruction* x = nullptr;
      if (dir == ComparisonDirection::kLt) x = c.operand(2);
      if (dir == ComparisonDirection::kGe) x = c.operand(1);
      if (x == nullptr || p.operand(0) != x || !NonPositiveConstant(*p.operand(1))) return std::nullopt;
      return IotaDim(*x, depth + 1);
    }
    default: return std::nullopt;
  }
}

// `x`, or what it reads through get-tuple-element of a tuple (an inlined call's result).
Instruction* ThroughTuples(Instruction* x) {
  for (int depth = 0; depth < 64 && x->opcode() == Opcode::kGetTupleElement &&
                      x->operand(0)->opcode() == Opcode::kTuple && x->operand(0)->parent() == x->parent();
       ++depth) {
    x = x->operand(0)->operand(static_cast<int>(x->tuple_index()));
  }
  return x;
}

// Removes `inst` and then those of its operands nothing else uses, when nothing uses it.
Status RemoveIfDead(Instruction* inst) {
  Computation* c = inst->parent();
  if (inst->user_count() > 0 || inst == c->root() || !inst->control_successors().empty() ||
      !inst->control_predecessors().empty()) {
    return OkStatus();
  }
  std::vector<Instruction*> operands = inst->operands();
  XS_RETURN_IF_ERROR(c->RemoveInstruction(inst));
  std::sort(operands.begin(), operands.end());
  operands.erase(std::unique(operands.begin(), operands.end()), operands.end());
  for (Instruction* op : operands) {
    if (op->opcode() == Opcode::kIota || op->opcode() == Opcode::kBroadcast || op->opcode() == Opcode::kConcatenate ||
        op->opcode() == Opcode::kGetTupleElement) {
      XS_RETURN_IF_ERROR(RemoveIfDead(op));
    }
  }
  return OkStatus();
}

// The split of an index vector that is a concatenate along `ivd`: the components that are an
// iota along an indices dim b and index an operand dim o taken whole and collapsed (`collapsed`,
// `window` the slice / window size of o, 1), as batching pairs (o, b); the other components and
// their part of the index map.
struct Split {
  std::vector<std::pair<int64_t, int64_t>> pairs;  // (operand dim, indices dim)
  std::vector<Instruction*> kept;
  std::vector<int64_t> kept_map;
};

std::optional<Split> SplitIndices(const Instruction& indices, int64_t ivd, const std::vector<int64_t>& index_map,
                                  const std::vector<int64_t>& collapsed, const std::vector<int64_t>& taken_batch,
                                  const Shape& operand, const std::function<int64_t(int64_t)>& window) {
  if (indices.opcode() != Opcode::kConcatenate || ivd >= indices.shape().rank() || indices.dimensions().size() != 1 ||
      indices.dimensions()[0] != ivd || static_cast<int64_t>(index_map.size()) != indices.shape().dim(ivd)) {
    return std::nullopt;
  }
  Split out;
  int64_t at = 0;
  for (Instruction* c : indices.operands()) {
    const int64_t width = c->shape().dim(ivd);
    std::optional<int64_t> b = width == 1 ? IotaDim(*c) : std::nullopt;
    const int64_t o = width == 1 ? index_map[at] : -1;
    const bool batch = b && *b != ivd && Contains(collapsed, o) && window(o) == 1 &&
                       operand.dim(o) == indices.shape().dim(*b) && !Contains(taken_batch, *b) &&
                       std::none_of(out.pairs.begin(), out.pairs.end(), [&](const auto& p) { return p.second == *b; });
    if (batch) {
      out.pairs.push_back({o, *b});
    } else {
      out.kept.push_back(c);
      out.kept_map.insert(out.kept_map.end(), index_map.begin() + at, index_map.begin() + at + width);
    }
    at += width;
  }
  if (out.pairs.empty() || out.kept.empty()) return std::nullopt;
  return out;
}

// The indices without the batch components: the one kept component, or a concatenate of them.
Instruction* KeptIndices(const Instruction& indices, const Split& split, int64_t ivd) {
  if (split.kept.size() == 1) return split.kept[0];
  std::vector<int64_t> dims = indices.shape().dims();
  dims[ivd] = static_cast<int64_t>(split.kept_map.size());
  std::unique_ptr<Instruction> cat =
      Instruction::Create(Opcode::kConcatenate, indices.shape().WithDims(dims), split.kept, indices.name());
  cat->mutable_attrs().dimensions = std::vector<int64_t>{ivd};
  return indices.parent()->AddInstruction(std::move(cat));
}

// Adds `pairs` to the batching dims (operand side `op`, indices side `idx`), removing their
// operand dims from `collapsed`; all pairs end in operand-dim order, as XLA prints them.
void AddPairs(const std::vector<std::pair<int64_t, int64_t>>& pairs, std::vector<int64_t>& collapsed,
              std::vector<int64_t>& op, std::vector<int64_t>& idx) {
  std::vector<std::pair<int64_t, int64_t>> all;
  for (size_t i = 0; i < op.size(); ++i) all.push_back({op[i], idx[i]});
  for (const auto& [o, b] : pairs) {
    Erase(collapsed, o);
    all.push_back({o, b});
  }
  std::sort(all.begin(), all.end());
  op.clear();
  idx.clear();
  for (const auto& [o, b] : all) {
    op.push_back(o);
    idx.push_back(b);
  }
}

// Rewrites one gather; false when it has no such component (or nothing else to look up).
StatusOr<bool> RewriteGather(Instruction* gather) {
  if (!gather->attrs().gather || !gather->attrs().slice_sizes || gather->operand_count() != 2) return false;
  GatherDimensionNumbers g = *gather->attrs().gather;
  const std::vector<int64_t>& slice_sizes = *gather->attrs().slice_sizes;
  Instruction* read = gather->operand(1);
  Instruction* indices = ThroughTuples(read);
  const std::optional<Split> split = SplitIndices(
      *indices, g.index_vector_dim, g.start_index_map, g.collapsed_slice_dims, g.start_indices_batching_dims,
      gather->operand(0)->shape(), [&](int64_t o) { return slice_sizes[o]; });
  if (!split) return false;
  gather->ReplaceOperandWith(1, KeptIndices(*indices, *split, g.index_vector_dim));
  AddPairs(split->pairs, g.collapsed_slice_dims, g.operand_batching_dims, g.start_indices_batching_dims);
  g.start_index_map = split->kept_map;
  // Sorted (row, id) vectors need not leave the ids sorted on their own: the hint goes.
  gather->mutable_attrs().indices_are_sorted = false;
  gather->mutable_attrs().gather = std::move(g);
  XS_RETURN_IF_ERROR(RemoveIfDead(read));
  return true;
}

// The same for a scatter (inserted window dims are the collapsed ones; window size 1).
StatusOr<bool> RewriteScatter(Instruction* scatter) {
  const int n = (scatter->operand_count() - 1) / 2;
  if (!scatter->attrs().scatter || n < 1 || scatter->operand_count() != 2 * n + 1) return false;
  ScatterDimensionNumbers s = *scatter->attrs().scatter;
  Instruction* read = scatter->operand(n);
  Instruction* indices = ThroughTuples(read);
  const std::optional<Split> split =
      SplitIndices(*indices, s.index_vector_dim, s.scatter_dims_to_operand_dims, s.inserted_window_dims,
                   s.scatter_indices_batching_dims, scatter->operand(0)->shape(), [](int64_t) { return 1; });
  if (!split) return false;
  scatter->ReplaceOperandWith(n, KeptIndices(*indices, *split, s.index_vector_dim));
  AddPairs(split->pairs, s.inserted_window_dims, s.input_batching_dims, s.scatter_indices_batching_dims);
  s.scatter_dims_to_operand_dims = split->kept_map;
  scatter->mutable_attrs().indices_are_sorted = false;
  scatter->mutable_attrs().scatter = std::move(s);
  XS_RETURN_IF_ERROR(RemoveIfDead(read));
  return true;
}

}  // namespace

StatusOr<bool> MakeGatherBatchDimsExplicit(Module& module) {
  bool changed = false;
  for (Computation* c : module.computations()) {
    std::vector<Instruction*> lookups;
    for (Instruction* inst : c->instructions()) {
      if (inst->opcode() == Opcode::kGather || inst->opcode() == Opcode::kScatter) lookups.push_back(inst);
    }
    for (Instruction* l : lookups) {
      XS_ASSIGN_OR_RETURN(bool one, l->opcode() == Opcode::kGather ? RewriteGather(l) : RewriteScatter(l));
      changed = changed || one;
    }
  }
  return changed;
}

}  // namespace xs
