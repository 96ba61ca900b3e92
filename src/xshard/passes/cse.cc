// EliminateCommonSubexpressions: buckets instructions by (opcode, shape, operands) and merges
// those whose attributes, called computations (equal in structure) and sharding are equal too.
#include "xshard/passes/cse.h"

#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace xs {
namespace {

// Side effects come from the opcode table (HasSideEffect); parameters are distinct by position,
// and collectives / async ops are kept apart (two equal all-reduces are two communications).
bool Mergeable(const Instruction& inst) {
  const Opcode op = inst.opcode();
  return !HasSideEffect(inst) && op != Opcode::kParameter && !IsCollective(op) && !IsAsync(op) &&
         inst.control_predecessors().empty() && inst.control_successors().empty();
}

// A synchronous collective computes a function of its operand on every device of its groups, and
// every device runs the same program: two with the same operands and attributes (groups, channel,
// reducer, dims) give the same values, so the second is the first's result and one communication
// less, as XLA merges a shard_map's repeated `pmax` of one value. Async pairs and collectives
// inside called computations (SameComputation) stay apart.
bool MergeableCollective(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
    case Opcode::kAllToAll:
    case Opcode::kCollectivePermute: break;
    default: return false;
  }
  return !HasSideEffect(inst) && inst.control_predecessors().empty() && inst.control_successors().empty();
}

bool SameComputation(const Computation& a, const Computation& b, int depth);

// The same computations, in order, by SameComputation.
bool SameCalls(const Instruction& a, const Instruction& b, int depth) {
  if (a.calls().size() != b.calls().size()) return false;
  for (size_t k = 0; k < a.calls().size(); ++k) {
    const CalledComputation& x = a.calls()[k];
    const CalledComputation& y = b.calls()[k];
    if (x.role != y.role || !SameComputation(*x.computation, *y.computation, depth + 1)) return false;
  }
  return true;
}

// True when `a` and `b` compute the same function: their instructions in post order pair up with
// the same opcode, shape, attributes, sharding, parameter number, operands (by position) and
// called computations (in turn), and so do their roots. The reducers JAX writes once per reduce
// (region_0, region_1, ... with the same add) are equal, as XLA's CSE finds them. Computations
// holding an instruction CSE would not merge itself (side effects, random numbers, collectives),
// instructions written in another order, control edges or nesting deeper than 8 count as
// different (merging less is always correct).
bool SameComputation(const Computation& a, const Computation& b, int depth) {
  if (&a == &b) return true;
  if (depth > 8 || a.num_parameters() != b.num_parameters()) return false;
  const std::vector<Instruction*> pa = a.MakeInstructionPostOrder(), pb = b.MakeInstructionPostOrder();
  if (pa.size() != pb.size()) return false;
  std::unordered_map<const Instruction*, size_t> pos_a, pos_b;
  for (size_t i = 0; i < pa.size(); ++i) {
    pos_a[pa[i]] = i;
    pos_b[pb[i]] = i;
  }
  for (size_t i = 0; i < pa.size(); ++i) {
    const Instruction& x = *pa[i];
    const Instruction& y = *pb[i];
    if (x.opcode() != y.opcode() || !(x.shape() == y.shape()) || !(x.attrs() == y.attrs()) ||
        !(x.sharding() == y.sharding()) || x.operand_count() != y.operand_count() ||
        !x.control_predecessors().empty() || !y.control_predecessors().empty()) {
      return false;
    }
    if (x.opcode() == Opcode::kParameter ? x.parameter_number() != y.parameter_number() : !Mergeable(x)) {
      return false;  // (two random draws or two communications stay two)
    }
    for (int k = 0; k < x.operand_count(); ++k) {
      if (pos_a.at(x.operand(k)) != pos_b.at(y.operand(k))) return false;
    }
    if (!SameCalls(x, y, depth)) return false;
  }
  return a.root() != nullptr && b.root() != nullptr && pos_a.at(a.root()) == pos_b.at(b.root());
}

bool Same(const Instruction& a, const Instruction& b) {
  return a.attrs() == b.attrs() && a.sharding() == b.sharding() && a.shape() == b.shape() && SameCalls(a, b, 0);
}

// Values CseOptions::keep_generated_values leaves alone, given which operands are such values.
bool Generated(const Instruction& inst, const std::unordered_set<const Instruction*>& generated) {
  switch (inst.opcode()) {
    case Opcode::kIota:
    case Opcode::kConstant: return true;
    case Opcode::kBroadcast:
    case Opcode::kConvert:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kBitcastConvert:
    case Opcode::kCopy: break;
    default:
      if (!IsElementwise(inst.opcode())) return false;
  }
  for (const Instruction* o : inst.operands()) {
    if (!generated.contains(o)) return false;
  }
  return true;
}

}  // namespace

StatusOr<bool> EliminateCommonSubexpressions(Module& module, const CseOptions& options) {
  bool changed = false;
  for (Computation* c : module.computations()) {
    using Key = std::tuple<int, std::string, std::vector<const Instruction*>>;
    std::map<Key, std::vector<Instruction*>> seen;
    std::unordered_set<const Instruction*> generated;
    for (Instruction* inst : c->MakeInstructionPostOrder()) {
      if (options.keep_generated_values && Generated(*inst, generated)) {
        generated.insert(inst);
        continue;
      }
      if (!Mergeable(*inst) && !MergeableCollective(*inst)) continue;
      Key key{static_cast<int>(inst->opcode()), inst->shape().ToString(),
              std::vector<const Instruction*>(inst->operands().begin(), inst->operands().end())};
      std::vector<Instruction*>& bucket = seen[key];
      Instruction* twin = nullptr;
      for (Instruction* other : bucket) {
        if (Same(*inst, *other)) {
          twin = other;
          break;
        }
      }
      if (twin == nullptr) {
        bucket.push_back(inst);
        continue;
      }
      inst->ReplaceAllUsesWith(twin);
      changed = true;
    }
  }
  return changed;
}

}  // namespace xs
