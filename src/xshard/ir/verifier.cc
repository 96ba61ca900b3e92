// The HLO verifier: module / computation structure, then per-instruction shape and sharding checks.
#include "xshard/ir/verifier.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "xshard/ir/shape_inference.h"
#include "xshard/ir/verifier_internal.h"

namespace xs {

std::string VerifierWhere(const Instruction& inst) {
  std::string s = StrCat("instruction '", inst.name(), "' (", OpcodeName(inst.opcode()), ")");
  if (inst.parent() != nullptr && !inst.parent()->IsEntry()) {
    StrAppend(&s, " in computation '", inst.parent()->name(), "'");
  }
  return s;
}

namespace {

std::string Where(const Instruction& inst) { return VerifierWhere(inst); }

std::string OperandList(const Instruction& inst) {
  std::string s;
  for (int i = 0; i < inst.operand_count(); ++i) {
    StrAppend(&s, i ? ", " : "", ShapeText(inst.operand(i)->shape()), " ",
              inst.operand(i)->name());
  }
  return s;
}

// A layout must give one minor_to_major entry per dim, each dim once.
Status CheckLayout(const Shape& shape) {
  if (shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes()) XS_RETURN_IF_ERROR(CheckLayout(s));
    return OkStatus();
  }
  if (!shape.layout() || shape.IsToken()) return OkStatus();
  const auto& m2m = shape.layout()->minor_to_major;
  if (m2m.empty() && shape.rank() > 0) return OkStatus();  // `{:T(..)}`-only layouts
  std::vector<bool> seen(shape.rank(), false);
  bool ok = static_cast<int>(m2m.size()) == shape.rank();
  for (int64_t d : m2m) {
    ok = ok && d >= 0 && d < shape.rank() && !seen[d];
    if (ok) seen[d] = true;
  }
  if (!ok) {
    return InvalidArgument("layout ", shape.layout()->ToString(), " of ", shape.ToString(),
                           " must list each of the ", shape.rank(), " dims once");
  }
  return OkStatus();
}

void CollectLeaves(const Shape& shape, std::vector<const Shape*>& leaves) {
  if (!shape.IsTuple()) {
    leaves.push_back(&shape);
    return;
  }
  for (const Shape& s : shape.tuple_shapes()) CollectLeaves(s, leaves);
}

// Validates a sharding when the module gives no partition count (XLA then checks no count):
// ranks, leaf counts and unique non-negative device ids.
Status ValidateWithoutDeviceCount(const HloSharding& s, const Shape& shape) {
  if (s.IsTuple()) {
    std::vector<const Shape*> leaves;
    CollectLeaves(shape, leaves);
    if (!shape.IsTuple() || leaves.size() != s.tuple_elements().size()) {
      return s.Validate(shape, std::numeric_limits<int32_t>::max());  // reports the mismatch
    }
    for (size_t i = 0; i < leaves.size(); ++i) {
      Status st = ValidateWithoutDeviceCount(s.tuple_elements()[i], *leaves[i]);
      if (!st.ok()) return Annotate(st, StrCat("tuple element ", i, ": "));
    }
    return OkStatus();
  }
  if (s.IsMaximal()) return s.Validate(shape, std::max<int64_t>(1, s.device() + 1));
  if (s.IsMeshAxes()) {
    int64_t n = 1;
    for (const auto& [name, size] : s.mesh_axes().mesh_axes) n *= std::max<int64_t>(size, 1);
    return s.Validate(shape, n);
  }
  if (!s.IsTiled()) return s.Validate(shape, 1);
  // An iota form is a permutation of 0..N-1: only explicit lists need the O(N) scan.
  const TileAssignment& tiles = s.tile_assignment();
  if (!tiles.FindIota()) {
    std::unordered_set<int64_t> seen;
    for (int64_t d : tiles.devices()) {
      if (d < 0 || !seen.insert(d).second) {
        return InvalidArgument("sharding ", s.ToString(false), " on shape ", shape.ToString(),
                               ": device ", d, " is negative or appears twice");
      }
    }
  }
  if (s.TiledDataRank() != shape.rank() || tiles.num_devices() == 1) {
    return s.Validate(shape, tiles.num_devices());  // reports the problem
  }
  return OkStatus();
}

// A sharding must fit the shape: one element per tuple leaf (a non-tuple sharding of a tuple
// applies to every leaf, as in XLA), and tile counts per dim. With num_partitions > 1 every
// tiled sharding must use exactly that many devices.
Status ValidateSharding(const HloSharding& s, const Shape& shape, int64_t num_partitions) {
  if (shape.IsTuple() && !s.IsTuple()) {
    std::vector<const Shape*> leaves;
    CollectLeaves(shape, leaves);
    for (size_t i = 0; i < leaves.size(); ++i) {
      Status st = ValidateSharding(s, *leaves[i], num_partitions);
      if (!st.ok()) return Annotate(st, StrCat("tuple element ", i, ": "));
    }
    return OkStatus();
  }
  if (num_partitions > 1) return s.Validate(shape, num_partitions);
  return ValidateWithoutDeviceCount(s, shape);
}

// Operands (and control predecessors) must not reach back to the instruction.
Status CheckAcyclic(const Computation& comp) {
  enum Color { kWhite, kGrey, kBlack };
  std::unordered_map<const Instruction*, Color> color;
  for (Instruction* start : comp.instructions()) {
    if (color[start] != kWhite) continue;
    std::vector<std::pair<const Instruction*, size_t>> stack = {{start, 0}};
    color[start] = kGrey;
    while (!stack.empty()) {
      auto& [inst, next] = stack.back();
      const size_t n_ops = inst->operands().size();
      const size_t n_all = n_ops + inst->control_predecessors().size();
      if (next == n_all) {
        color[inst] = kBlack;
        stack.pop_back();
        continue;
      }
      const Instruction* pred = next < n_ops ? inst->operand(static_cast<int>(next))
                                             : inst->control_predecessors()[next - n_ops];
      ++next;
      if (color[pred] == kGrey) {
        return InvalidArgument("computation '", comp.name(), "' has a cycle through '",
                               pred->name(), "' (an instruction depends on itself)");
      }
      if (color[pred] == kWhite) {
        color[pred] = kGrey;
        stack.push_back({pred, 0});
      }
    }
  }
  return OkStatus();
}

Status CheckParameters(const Computation& comp) {
  for (Instruction* inst : comp.instructions()) {
    if (inst->opcode() != Opcode::kParameter) continue;
    const auto& n = inst->attrs().parameter_number;
    if (!n || *n < 0) {
      return InvalidArgument(Where(*inst), ": a parameter needs a number >= 0");
    }
    const Instruction* other =
        *n < comp.num_parameters() ? comp.parameter(static_cast<int>(*n)) : nullptr;
    if (other == nullptr) {
      return InvalidArgument(Where(*inst), ": parameter(", *n, ") is out of range; number ",
                             "parameters 0, 1, 2, ... without gaps");
    }
    if (other != inst) {
      return InvalidArgument("computation '", comp.name(), "' has parameter(", *n, ") twice: '",
                             other->name(), "' and '", inst->name(),
                             "'; number parameters 0, 1, 2, ... once each");
    }
  }
  for (int i = 0; i < comp.num_parameters(); ++i) {
    if (comp.parameter(i) == nullptr) {
      return InvalidArgument("computation '", comp.name(), "' has parameter(",
                             comp.num_parameters() - 1, ") but no parameter(", i,
                             "); number parameters 0, 1, 2, ... without gaps");
    }
  }
  return OkStatus();
}

Status CheckCallGraphAcyclic(const Module& module) {
  std::unordered_map<const Computation*, int> state;  // 0 new, 1 on stack, 2 done
  std::vector<std::pair<const Computation*, std::vector<Computation*>>> stack;
  for (Computation* root : module.computations()) {
    if (state[root] != 0) continue;
    auto callees = [](const Computation* c) {
      std::vector<Computation*> out;
      for (Instruction* i : c->instructions()) {
        for (Computation* callee : i->called_computations()) out.push_back(callee);
      }
      return out;
    };
    state[root] = 1;
    stack.push_back({root, callees(root)});
    while (!stack.empty()) {
      auto& [comp, pending] = stack.back();
      if (pending.empty()) {
        state[comp] = 2;
        stack.pop_back();
        continue;
      }
      Computation* next = pending.back();
      pending.pop_back();
      if (state[next] == 1) {
        return InvalidArgument("computation '", next->name(), "' calls itself (through '",
                               comp->name(), "'); HLO has no recursion");
      }
      if (state[next] == 0) {
        state[next] = 1;
        stack.push_back({next, callees(next)});
      }
    }
  }
  return OkStatus();
}

// Computations nest (call, while, conditional, fusion, reducers, ...) at most kMaxCallDepth
// deep: the partitioner and executor descend into callees recursively, so a deeper chain would
// overflow the stack instead of failing with a message.
Status CheckCallDepth(const Module& module) {
  std::unordered_map<const Computation*, std::pair<int64_t, const Computation*>> depth;  // height, deepest callee
  for (Computation* comp : module.MakeComputationPostOrder()) {  // callees first
    std::pair<int64_t, const Computation*> d = {1, nullptr};
    for (Instruction* inst : comp->instructions()) {
      for (Computation* callee : inst->called_computations()) {
        auto it = depth.find(callee);
        if (it != depth.end() && it->second.first + 1 > d.first) d = {it->second.first + 1, callee};
      }
    }
    if (d.first > kMaxCallDepth) {
      std::vector<std::string> chain;
      chain.push_back(StrCat("'", comp->name(), "'"));
      for (const Computation* c = d.second; c != nullptr && chain.size() < 4; c = depth[c].second) {
        chain.push_back(StrCat("'", c->name(), "'"));
      }
      return InvalidArgument("computations nest more than ", kMaxCallDepth, " deep (", StrJoin(chain, " calls "),
                             " ...); xshard handles up to ", kMaxCallDepth,
                             " levels of call / while / conditional nesting: inline some of the calls");
    }
    depth[comp] = d;
  }
  return OkStatus();
}

}  // namespace

Status VerifyInstruction(const Instruction& inst, int64_t num_partitions) {
  Status layout = CheckLayout(inst.shape());
  if (!layout.ok()) return Annotate(layout, StrCat(Where(inst), ": "));
  // The op inside async sugar (`dot-start(a, b)`) is written without its attributes; its shapes
  // are checked by the async-start that wraps it.
  const bool sugar = inst.parent() != nullptr && inst.parent()->is_async_sugar() &&
                     inst.opcode() != Opcode::kParameter;
  StatusOr<Shape> inferred = sugar ? StatusOr<Shape>(inst.shape()) : InferInstructionShape(inst);
  if (!inferred.ok()) return Annotate(inferred.status(), StrCat(Where(inst), ": "));
  if (!inst.shape().Compatible(*inferred)) {
    return InvalidArgument(Where(inst), ": declared shape ", ShapeText(inst.shape()),
                           " differs from the inferred shape ", ShapeText(*inferred),
                           " (operands: ", OperandList(inst), ")");
  }
  if (inst.sharding()) {
    Status st = ValidateSharding(*inst.sharding(), inst.shape(), num_partitions);
    if (!st.ok()) return Annotate(st, StrCat(Where(inst), ": "));
  }
  return OkStatus();
}

Status VerifyComputation(const Computation& comp, const Module* module) {
  if (comp.root() == nullptr || comp.root()->parent() != &comp) {
    return InvalidArgument("computation '", comp.name(), "' has no ROOT instruction");
  }
  XS_RETURN_IF_ERROR(CheckParameters(comp));
  for (Instruction* inst : comp.instructions()) {
    if (comp.GetInstruction(inst->name()) != inst) {
      return InvalidArgument("computation '", comp.name(), "' has two instructions named '",
                             inst->name(), "'");
    }
    for (int i = 0; i < inst->operand_count(); ++i) {
      const Instruction* op = inst->operand(i);
      if (op == nullptr || op->parent() != &comp) {
        return InvalidArgument(Where(*inst), ": operand ", i, " '", op ? op->name() : "null",
                               "' is not in computation '", comp.name(), "'");
      }
    }
    for (Computation* callee : inst->called_computations()) {
      if (callee == nullptr || (module != nullptr && callee->parent() != module)) {
        return InvalidArgument(Where(*inst), ": calls a computation outside the module");
      }
      if (callee->IsEntry()) {
        return InvalidArgument(Where(*inst), ": calls the entry computation '", callee->name(),
                               "'; the entry cannot be called");
      }
    }
  }
  XS_RETURN_IF_ERROR(CheckAcyclic(comp));
  XS_RETURN_IF_ERROR(CheckAsyncChains(comp));
  const int64_t num_partitions = module ? module->config().num_partitions : 1;
  for (Instruction* inst : comp.instructions()) {
    XS_RETURN_IF_ERROR(VerifyInstruction(*inst, num_partitions));
  }
  return OkStatus();
}

Status Verify(const Module& module) {
  if (module.entry() == nullptr || module.entry()->parent() != &module) {
    return InvalidArgument("module '", module.name(), "' has no ENTRY computation");
  }
  std::unordered_set<std::string> names;
  for (Computation* comp : module.computations()) {
    if (!names.insert(comp->name()).second) {
      return InvalidArgument("module '", module.name(), "' has two computations named '",
                             comp->name(), "'");
    }
  }
  XS_RETURN_IF_ERROR(CheckCallGraphAcyclic(module));
  XS_RETURN_IF_ERROR(CheckCallDepth(module));
  for (Computation* comp : module.MakeComputationPostOrder()) {
    XS_RETURN_IF_ERROR(VerifyComputation(*comp, &module));
  }
  return OkStatus();
}

}  // namespace xs
