// Planning of fused elementwise loops: grouping (consumers first, a producer joins its users'
// group when that cannot create a cycle), the tile program of each group, and the step reorder.
#include "xshard/runtime/fusion_plan.h"

#include <algorithm>
#include <memory>
#include <unordered_set>

#include "xshard/runtime/executable_plan.h"

namespace xs {

Status RunFusedLoop(const Step& step, Frame& frame, RunContext& ctx);  // executable_fusion.cc

namespace {

bool IsMemberOpcode(Opcode op) {
  switch (op) {
    case Opcode::kAbs: case Opcode::kNegate: case Opcode::kExp: case Opcode::kLog:
    case Opcode::kSqrt: case Opcode::kRsqrt: case Opcode::kTanh: case Opcode::kSin:
    case Opcode::kCos: case Opcode::kTan: case Opcode::kLogistic: case Opcode::kExpm1:
    case Opcode::kLog1p: case Opcode::kCbrt: case Opcode::kErf: case Opcode::kCeil:
    case Opcode::kFloor: case Opcode::kRoundNearestAfz: case Opcode::kRoundNearestEven:
    case Opcode::kAtan: case Opcode::kAcos: case Opcode::kAsin: case Opcode::kAcosh:
    case Opcode::kAsinh: case Opcode::kAtanh: case Opcode::kCosh: case Opcode::kSinh:
    case Opcode::kSign: case Opcode::kIsFinite: case Opcode::kNot:
    case Opcode::kPopulationCount: case Opcode::kClz: case Opcode::kReal: case Opcode::kImag:
    case Opcode::kAdd: case Opcode::kSubtract: case Opcode::kMultiply: case Opcode::kDivide:
    case Opcode::kRemainder: case Opcode::kMaximum: case Opcode::kMinimum: case Opcode::kPower:
    case Opcode::kAtan2: case Opcode::kAnd: case Opcode::kOr: case Opcode::kXor:
    case Opcode::kShiftLeft: case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical: case Opcode::kComplex: case Opcode::kCompare:
    case Opcode::kConvert: case Opcode::kCopy: case Opcode::kSelect: case Opcode::kClamp:
      return true;
    default:
      return false;
  }
}

bool LoopShaped(const Shape& s) {
  return s.IsArray() && s.rank() >= 1 && s.num_elements() > 0 && DTypeSize(s.dtype()) > 0;
}

bool IsMember(const Step& step) {
  const Instruction& inst = *step.inst;
  if (!IsMemberOpcode(inst.opcode()) || !LoopShaped(inst.shape())) return false;
  for (const Instruction* o : inst.operands()) {
    if (!o->shape().IsArray() || DTypeSize(o->shape().dtype()) <= 0) return false;
    if (o->shape().rank() != 0 && o->shape().dims() != inst.shape().dims()) return false;
  }
  switch (step.scalar_kind) {
    case ScalarKind::kUnary: return step.unary != nullptr;
    case ScalarKind::kBinary: return step.binary != nullptr;
    case ScalarKind::kTernary: return step.ternary != nullptr;
    case ScalarKind::kShare: return true;
    default: return false;
  }
}

// Broadcasts and iotas are recomputed inside every group that reads them.
bool IsGenerator(const Instruction& inst) {
  if (!LoopShaped(inst.shape())) return false;
  if (inst.opcode() == Opcode::kIota) return inst.attrs().iota_dimension.has_value();
  return inst.opcode() == Opcode::kBroadcast && inst.operand(0)->shape().IsArray() &&
         inst.operand(0)->shape().dtype() == inst.shape().dtype();
}

struct Group {
  std::vector<const Instruction*> members;  // reverse post order while grouping
  std::vector<int64_t> dims;
  const Instruction* reduce = nullptr;  // a reduce of a member (or of an input, with no members)
};

// Loops of fewer elements gain nothing from a reduce of their own.
constexpr int64_t kOwnReduceLoopElements = int64_t{1} << 16;

// A reduce a fused loop can compute: one operand, typed combiner, static init.
bool FusibleReduce(const Step& s) {
  const Instruction& r = *s.inst;
  if (r.opcode() != Opcode::kReduce || r.operand_count() != 2 || !r.shape().IsArray()) return false;
  if (s.combine == kernels::CombineKind::kGeneric || s.combine == kernels::CombineKind::kOverwrite) return false;
  const Instruction* in = r.operand(0);
  const Opcode init = r.operand(1)->opcode();
  if (!LoopShaped(in->shape()) || (init != Opcode::kConstant && init != Opcode::kParameter)) return false;
  return kernels::FindReduceRange(s.combine, in->shape().dtype()).ok();
}

// Whether a path of users from any of `from` reaches a member of group `g` (conservatively
// true past a visit budget).
bool Reaches(const std::vector<const Instruction*>& from,
             const std::unordered_map<const Instruction*, int>& group_of, int g) {
  std::vector<const Instruction*> stack = from;
  std::unordered_set<const Instruction*> seen(from.begin(), from.end());
  int budget = 20000;
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    auto it = group_of.find(i);
    if (it != group_of.end() && it->second == g) return true;
    if (--budget < 0) return true;
    for (const Instruction* u : i->users()) {
      if (seen.insert(u).second) stack.push_back(u);
    }
  }
  return false;
}

// Builds the tile program and the fused step of one group (members in post order).
class LoopBuilder {
 public:
  LoopBuilder(const Group& g, const std::unordered_map<const Instruction*, int>& slot,
              const std::unordered_map<const Instruction*, const Step*>& step_of,
              const std::unordered_set<const Instruction*>& members)
      : g_(g), slot_(slot), step_of_(step_of), members_(members) {}

  Step Build() {
    loop_ = std::make_shared<FusedLoop>();
    loop_->dims = g_.dims;
    loop_->count = 1;
    for (int64_t d : g_.dims) loop_->count *= d;
    loop_->members = static_cast<int64_t>(g_.members.size());
    for (const Instruction* m : g_.members) AddMember(*m);
    if (g_.reduce != nullptr) {
      AddReduce(*g_.reduce);
    } else {
      // The primary output is the last member; it may take over a dying input of its type.
      const Instruction* primary = g_.members.back();
      step_.inst = primary;
      step_.out = slot_.at(primary);
      step_.count = loop_->count;
      for (size_t i = 0; i < step_.operands.size(); ++i) {
        const Shape& s = input_insts_[i]->shape();
        if (s.dtype() == primary->shape().dtype() && s.dims() == primary->shape().dims()) {
          loop_->donor = static_cast<int>(i);
          break;
        }
      }
    }
    int64_t bytes = 0;
    for (const Instruction* in : input_insts_) bytes += in->shape().byte_size();
    for (const FusedOutput& o : loop_->outputs) bytes += o.inst->shape().byte_size();
    bytes += step_.inst->shape().byte_size();
    step_.gated = bytes >= (int64_t{1} << 20);
    step_.run = &RunFusedLoop;
    step_.fused = loop_;
    return std::move(step_);
  }

 private:
  int NewValue(FusedValueKind kind, DType dtype) {
    FusedValue v;
    v.kind = kind;
    v.esize = static_cast<int>(DTypeSize(dtype));
    loop_->max_esize = std::max(loop_->max_esize, v.esize);
    if (kind == FusedValueKind::kScratch || kind == FusedValueKind::kUniform ||
        kind == FusedValueKind::kScalarInput) {
      v.buffer = loop_->num_buffers++;
    }
    loop_->values.push_back(v);
    return static_cast<int>(loop_->values.size()) - 1;
  }

  int InputIndex(const Instruction* inst) {
    auto it = input_index_.find(inst);
    if (it != input_index_.end()) return it->second;
    const int k = static_cast<int>(step_.operands.size());
    step_.operands.push_back(slot_.at(inst));
    input_insts_.push_back(inst);
    input_index_[inst] = k;
    return k;
  }

  bool Uniform(int v) const {
    const FusedValueKind k = loop_->values[v].kind;
    return k == FusedValueKind::kScalarInput || k == FusedValueKind::kUniform;
  }

  // The value of operand `o` of a member.
  int ValueOf(const Instruction* o) {
    auto it = value_of_.find(o);
    if (it != value_of_.end()) return it->second;
    int v;
    if (o->shape().rank() == 0) {
      v = NewValue(FusedValueKind::kScalarInput, o->shape().dtype());
      loop_->values[v].input = InputIndex(o);
      FusedOp fill;
      fill.kind = FusedOpKind::kFill;
      fill.in[0] = loop_->values[v].input;
      fill.out = v;
      loop_->prologue.push_back(fill);
    } else if (!members_.count(o) && IsGenerator(*o)) {
      v = Generate(*o);
    } else {
      XS_CHECK(!members_.count(o), "fused member '", o->name(), "' used before it is computed");
      v = NewValue(FusedValueKind::kInput, o->shape().dtype());
      loop_->values[v].input = InputIndex(o);
    }
    value_of_[o] = v;
    return v;
  }

  int Generate(const Instruction& gen) {
    FusedOp op;
    if (gen.opcode() == Opcode::kBroadcast && gen.operand(0)->shape().rank() == 0) {
      return ValueOf(gen.operand(0));  // a scalar broadcast stays a scalar
    }
    const int v = NewValue(FusedValueKind::kScratch, gen.shape().dtype());
    const std::vector<int64_t>& dims = g_.dims;
    if (gen.opcode() == Opcode::kIota) {
      const int64_t d = *gen.attrs().iota_dimension;
      op.kind = FusedOpKind::kIota;
      op.size = dims[d];
      for (size_t k = d + 1; k < dims.size(); ++k) op.inner *= dims[k];
      if (gen.shape().dtype() != DType::kS64) {
        op.unary = *kernels::FindConvertKernel(DType::kS64, gen.shape().dtype());
      }
    } else {
      const Shape& in = gen.operand(0)->shape();
      op.kind = FusedOpKind::kGather;
      op.in[0] = InputIndex(gen.operand(0));
      op.strides.assign(dims.size(), 0);
      std::vector<int64_t> in_strides(in.rank(), 1);
      for (int k = in.rank() - 2; k >= 0; --k) in_strides[k] = in_strides[k + 1] * in.dim(k + 1);
      for (size_t k = 0; k < gen.dimensions().size(); ++k) {
        op.strides[gen.dimensions()[k]] = in_strides[k];
      }
    }
    op.out = v;
    loop_->body.push_back(op);
    return v;
  }

  bool IsOutput(const Instruction& m) const {
    if (m.IsRoot() || (g_.reduce == nullptr && &m == g_.members.back())) return true;
    for (const Instruction* u : m.users()) {
      if (!members_.count(u) && u != g_.reduce) return true;
    }
    return false;
  }

  void AddReduce(const Instruction& r) {
    const Step& s = *step_of_.at(&r);
    FusedReduce& fr = loop_->reduce;
    loop_->has_reduce = true;
    fr.inst = &r;
    fr.fn = *kernels::FindReduceRange(s.combine, r.operand(0)->shape().dtype());
    fr.value = ValueOf(r.operand(0));
    fr.init = InputIndex(r.operand(1));
    const std::vector<int64_t>& dims = g_.dims;
    std::vector<char> reduced(dims.size(), 0);
    for (int64_t d : r.dimensions()) reduced[d] = 1;
    fr.ostride.assign(dims.size(), 0);
    int64_t stride = 1;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (reduced[d]) continue;
      fr.ostride[d] = stride;
      stride *= dims[d];
    }
    step_.inst = &r;
    step_.out = slot_.at(&r);
    step_.count = r.shape().num_elements();
  }

  void AddMember(const Instruction& m) {
    const Step& s = *step_of_.at(&m);
    std::vector<int> ins;
    for (const Instruction* o : m.operands()) ins.push_back(ValueOf(o));
    const bool output = IsOutput(m);
    bool uniform = true;
    for (int v : ins) uniform &= Uniform(v);
    FusedOp op;
    switch (s.scalar_kind) {
      case ScalarKind::kUnary: op.kind = FusedOpKind::kUnary; op.unary = s.unary; break;
      case ScalarKind::kBinary: op.kind = FusedOpKind::kBinary; op.binary = s.binary; break;
      case ScalarKind::kTernary: op.kind = FusedOpKind::kTernary; op.ternary = s.ternary; break;
      default:  // copy / same-type convert share their operand's value
        if (!output) {
          value_of_[&m] = ins[0];
          return;
        }
        op.kind = FusedOpKind::kCopy;
        break;
    }
    for (size_t i = 0; i < ins.size(); ++i) op.in[i] = ins[i];
    const DType t = m.shape().dtype();
    if (uniform) {
      op.out = NewValue(FusedValueKind::kUniform, t);
      loop_->prologue.push_back(op);
      value_of_[&m] = op.out;
      if (!output) return;
      // A uniform output: copied out of its tile at every tile.
      op = FusedOp{};
      op.kind = FusedOpKind::kCopy;
      op.in[0] = value_of_[&m];
    }
    if (output) {
      op.out = NewValue(FusedValueKind::kOutput, t);
      loop_->values[op.out].output = static_cast<int>(loop_->outputs.size());
      loop_->outputs.push_back({op.out, slot_.at(&m), &m});
    } else {
      op.out = NewValue(FusedValueKind::kScratch, t);
    }
    loop_->body.push_back(op);
    value_of_[&m] = op.out;
  }

  const Group& g_;
  const std::unordered_map<const Instruction*, int>& slot_;
  const std::unordered_map<const Instruction*, const Step*>& step_of_;
  const std::unordered_set<const Instruction*>& members_;
  std::shared_ptr<FusedLoop> loop_;
  Step step_;
  std::vector<const Instruction*> input_insts_;
  std::unordered_map<const Instruction*, int> input_index_;
  std::unordered_map<const Instruction*, int> value_of_;
};

}  // namespace

namespace {

// One grouping attempt; false (steps untouched) when the groups would depend on each other in a
// cycle. `multi_output`: a value read outside its group may still join it (checked by Reaches,
// which does not see every group-level cycle); without it every group is acyclic by construction.
bool TryFuse(std::vector<Step>& steps, const std::unordered_map<const Instruction*, int>& slot,
             const Instruction* root, bool multi_output) {
  std::unordered_map<const Instruction*, const Step*> step_of;
  for (const Step& s : steps) step_of[s.inst] = &s;
  std::unordered_map<const Instruction*, int> group_of;
  std::vector<Group> groups;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const Instruction* inst = it->inst;
    if (!IsMember(*it)) continue;
    int g = -1;
    bool all_in = inst != root;
    std::vector<const Instruction*> outside;
    for (const Instruction* u : inst->users()) {
      auto gi = group_of.find(u);
      if (gi == group_of.end()) {
        all_in = false;
        outside.push_back(u);
      } else if (g < 0) {
        g = gi->second;
      } else if (gi->second != g) {
        all_in = false;
        outside.push_back(u);
      }
    }
    if (g >= 0 && (all_in || (multi_output && !Reaches(outside, group_of, g)))) {
      groups[g].members.push_back(inst);
    } else {
      g = static_cast<int>(groups.size());
      groups.push_back(Group{{inst}, inst->shape().dims()});
    }
    group_of[inst] = g;
  }
  // Groups of copies alone gain nothing.
  std::vector<char> keep(groups.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (const Instruction* m : groups[g].members) keep[g] |= step_of[m]->scalar_kind != ScalarKind::kShare;
    if (!keep[g]) {
      for (const Instruction* m : groups[g].members) group_of.erase(m);
    }
  }
  // Reduces join the group of their operand, or get a loop of their own.
  for (const Step& s : steps) {
    if (!FusibleReduce(s)) continue;
    const Instruction* in = s.inst->operand(0);
    auto gi = group_of.find(in);
    if (gi != group_of.end()) {
      Group& g = groups[gi->second];
      bool only_user = !in->IsRoot();
      for (const Instruction* u : in->users()) only_user &= u == s.inst;
      if (!only_user || g.reduce != nullptr) continue;
      g.reduce = s.inst;
      group_of[s.inst] = gi->second;
    } else if (in->shape().num_elements() >= kOwnReduceLoopElements) {
      group_of[s.inst] = static_cast<int>(groups.size());
      groups.push_back(Group{{}, in->shape().dims(), s.inst});
      keep.push_back(1);
    }
  }
  if (groups.empty()) return true;
  // Generators whose every user is fused are dropped; the groups recompute them.
  std::unordered_set<const Instruction*> dropped;
  for (const Step& s : steps) {
    if (!IsGenerator(*s.inst) || s.inst == root || s.inst->users().empty()) continue;
    bool all = true;
    for (const Instruction* u : s.inst->users()) all &= group_of.count(u) > 0;
    if (all) dropped.insert(s.inst);
  }
  // Fused steps, then a topological order: each node after the nodes of its operands, in the
  // original order otherwise.
  std::vector<Step> fused(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!keep[g]) continue;
    std::reverse(groups[g].members.begin(), groups[g].members.end());
    std::unordered_set<const Instruction*> members(groups[g].members.begin(), groups[g].members.end());
    fused[g] = LoopBuilder(groups[g], slot, step_of, members).Build();
  }
  // Node ids: original steps by index, groups as steps.size() + g.
  const int n0 = static_cast<int>(steps.size());
  std::unordered_map<const Instruction*, int> index;
  for (int i = 0; i < n0; ++i) index[steps[i].inst] = i;
  auto node_of = [&](const Instruction* inst) -> int {
    auto gi = group_of.find(inst);
    if (gi != group_of.end()) return n0 + gi->second;
    auto ii = index.find(inst);
    return ii == index.end() ? -1 : ii->second;  // parameters have no step
  };
  auto deps = [&](int node, std::vector<int>& out) {
    out.clear();
    auto add_operands = [&](const Instruction* inst, bool through_generators) {
      for (const Instruction* o : inst->operands()) {
        if (through_generators && dropped.count(o)) {
          for (const Instruction* oo : o->operands()) out.push_back(node_of(oo));
        } else {
          out.push_back(node_of(o));
        }
      }
      for (const Instruction* p : inst->control_predecessors()) out.push_back(node_of(p));
    };
    if (node < n0) {
      add_operands(steps[node].inst, false);
    } else {
      for (const Instruction* m : groups[node - n0].members) add_operands(m, true);
      if (groups[node - n0].reduce != nullptr) add_operands(groups[node - n0].reduce, true);
    }
  };
  std::vector<char> state(n0 + groups.size(), 0);  // 0 new, 1 open, 2 done
  std::vector<int> order;
  std::vector<std::pair<int, size_t>> stack;
  std::vector<std::vector<int>> dep_lists(n0 + groups.size());
  for (int start = 0; start < n0; ++start) {
    const int s0 = node_of(steps[start].inst);
    if (dropped.count(steps[start].inst) || state[s0] != 0) continue;
    stack.push_back({s0, 0});
    state[s0] = 1;
    deps(s0, dep_lists[s0]);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const std::vector<int>& d = dep_lists[node];
      if (next < d.size()) {
        const int dn = d[next++];
        if (dn < 0 || dn == node || state[dn] == 2) continue;
        if (state[dn] == 1) return false;  // a cycle between groups
        state[dn] = 1;
        deps(dn, dep_lists[dn]);
        stack.push_back({dn, 0});
        continue;
      }
      state[node] = 2;
      order.push_back(node);
      stack.pop_back();
    }
  }
  std::vector<Step> ordered;
  for (int node : order) ordered.push_back(node < n0 ? std::move(steps[node]) : std::move(fused[node - n0]));
  steps = std::move(ordered);
  return true;
}

}  // namespace

void FuseElementwiseSteps(std::vector<Step>& steps,
                          const std::unordered_map<const Instruction*, int>& slot,
                          const Instruction* root) {
  if (!TryFuse(steps, slot, root, /*multi_output=*/true)) {
    const bool ok = TryFuse(steps, slot, root, /*multi_output=*/false);
    XS_CHECK(ok, "single-output fusion groups formed a cycle");
  }
}

}  // namespace xs
