// MakeGatherBatchDimsExplicit: iota components of gather indices become batching dims.
#include "xshard/passes/gather_batch_dims.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace xs {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

void Erase(std::vector<int64_t>& v, int64_t x) { v.erase(std::remove(v.begin(), v.end(), x), v.end()); }

// The dim of `c` along which its values count 0, 1, 2, ... (equal along every other dim): an
// iota, or a broadcast of a rank-1 iota; nullopt otherwise.
std::optional<int64_t> IotaDim(const Instruction& c) {
  if (!c.shape().IsArray() || !IsInteger(c.shape().dtype())) return std::nullopt;
  if (c.opcode() == Opcode::kIota && c.attrs().iota_dimension) return *c.attrs().iota_dimension;
  if (c.opcode() != Opcode::kBroadcast || c.dimensions().size() != 1) return std::nullopt;
  const Instruction& x = *c.operand(0);
  if (x.opcode() != Opcode::kIota || x.shape().rank() != 1 || !IsInteger(x.shape().dtype())) return std::nullopt;
  return c.dimensions()[0];
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
    if (op->opcode() == Opcode::kIota || op->opcode() == Opcode::kBroadcast || op->opcode() == Opcode::kConcatenate) {
      XS_RETURN_IF_ERROR(RemoveIfDead(op));
    }
  }
  return OkStatus();
}

// Rewrites one gather; false when it has no such component (or nothing else to look up).
StatusOr<bool> Rewrite(Instruction* gather) {
  if (!gather->attrs().gather || !gather->attrs().slice_sizes || gather->operand_count() != 2) return false;
  GatherDimensionNumbers g = *gather->attrs().gather;
  const std::vector<int64_t>& slice_sizes = *gather->attrs().slice_sizes;
  Instruction* indices = gather->operand(1);
  const Shape& operand = gather->operand(0)->shape();
  const int64_t ivd = g.index_vector_dim;
  if (indices->opcode() != Opcode::kConcatenate || ivd >= indices->shape().rank() ||
      indices->dimensions().size() != 1 || indices->dimensions()[0] != ivd ||
      static_cast<int64_t>(g.start_index_map.size()) != indices->shape().dim(ivd)) {
    return false;
  }
  std::vector<Instruction*> kept;
  std::vector<int64_t> kept_map;
  std::vector<std::pair<int64_t, int64_t>> pairs;  // (operand dim, indices dim)
  int64_t at = 0;
  for (Instruction* c : indices->operands()) {
    const int64_t width = c->shape().dim(ivd);
    std::optional<int64_t> b = width == 1 ? IotaDim(*c) : std::nullopt;
    const int64_t o = width == 1 ? g.start_index_map[at] : -1;
    const bool batch = b && *b != ivd && Contains(g.collapsed_slice_dims, o) && slice_sizes[o] == 1 &&
                       operand.dim(o) == indices->shape().dim(*b) && !Contains(g.start_indices_batching_dims, *b) &&
                       std::none_of(pairs.begin(), pairs.end(), [&](const auto& p) { return p.second == *b; });
    if (batch) {
      pairs.push_back({o, *b});
    } else {
      kept.push_back(c);
      kept_map.insert(kept_map.end(), g.start_index_map.begin() + at, g.start_index_map.begin() + at + width);
    }
    at += width;
  }
  if (pairs.empty() || kept.empty()) return false;
  Computation* comp = gather->parent();
  Instruction* new_indices = kept[0];
  if (kept.size() > 1) {
    std::vector<int64_t> dims = indices->shape().dims();
    dims[ivd] = static_cast<int64_t>(kept_map.size());
    std::unique_ptr<Instruction> cat =
        Instruction::Create(Opcode::kConcatenate, indices->shape().WithDims(dims), kept, indices->name());
    cat->mutable_attrs().dimensions = std::vector<int64_t>{ivd};
    new_indices = comp->AddInstruction(std::move(cat));
  }
  for (const auto& [o, b] : pairs) {
    Erase(g.collapsed_slice_dims, o);
    g.operand_batching_dims.push_back(o);
    g.start_indices_batching_dims.push_back(b);
  }
  // Batching pairs in operand-dim order, as XLA prints them.
  std::vector<std::pair<int64_t, int64_t>> all;
  for (size_t i = 0; i < g.operand_batching_dims.size(); ++i) {
    all.push_back({g.operand_batching_dims[i], g.start_indices_batching_dims[i]});
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) {
    g.operand_batching_dims[i] = all[i].first;
    g.start_indices_batching_dims[i] = all[i].second;
  }
  g.start_index_map = kept_map;
  gather->ReplaceOperandWith(1, new_indices);
  gather->mutable_attrs().gather = std::move(g);
  XS_RETURN_IF_ERROR(RemoveIfDead(indices));
  return true;
}

}  // namespace

StatusOr<bool> MakeGatherBatchDimsExplicit(Module& module) {
  bool changed = false;
  for (Computation* c : module.computations()) {
    std::vector<Instruction*> gathers;
    for (Instruction* inst : c->instructions()) {
      if (inst->opcode() == Opcode::kGather) gathers.push_back(inst);
    }
    for (Instruction* g : gathers) {
      XS_ASSIGN_OR_RETURN(bool one, Rewrite(g));
      changed = changed || one;
    }
  }
  return changed;
}

}  // namespace xs
