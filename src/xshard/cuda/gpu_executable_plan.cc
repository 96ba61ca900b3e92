// Phase 1 of the GPU executor, no GPU needed: from exec's plan of each computation, where every
// array leaf lives (exec's arena offsets where it planned one; otherwise a "side" buffer of our
// own, placed by liveness after exec's part of the frame) and what each step does on the device.
// Steps that exec runs as aliases (reshape, bitcast, copy, tuple, get-tuple-element, identity
// custom-calls) stay aliases; every step exec gives a buffer of its own writes one here too, so
// exec's liveness of its arena buffers holds unchanged.
#include <algorithm>

#include "xshard/cuda/gpu_executable_plan.h"
#include "xshard/exec/buffer_assignment.h"
#include "xshard/exec/fusion_plan.h"

namespace xs::cuda {

void FlattenArrayShapes(const Shape& s, std::vector<Shape>& out) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes()) FlattenArrayShapes(e, out);
  } else if (s.IsArray()) {
    out.push_back(s.WithoutLayout());
  }
}

namespace {

int64_t LeafCount(const Shape& s) {
  std::vector<Shape> v;
  FlattenArrayShapes(s, v);
  return static_cast<int64_t>(v.size());
}

bool IsIdentityCustomCall(const Instruction& inst) {
  static constexpr std::string_view kIdentities[] = {
      "Sharding",         "SPMDFullToShardShape", "SPMDShardToFullShape", "xla.sdy.FuncResultSharding",
      "ShardBarrierFrom", "ShardBarrierTo",       "MoveToHost",           "MoveToDevice",
      "PinToDevice",      "PinToDeviceSram",      "LayoutConstraint",     "annotate_device_placement"};
  const std::string target = inst.attrs().custom_call_target.value_or("");
  return inst.operand_count() == 1 &&
         std::find(std::begin(kIdentities), std::end(kIdentities), target) != std::end(kIdentities);
}

bool IsCollectiveStart(Opcode op) {
  return op == Opcode::kAllGatherStart || op == Opcode::kCollectivePermuteStart;
}

// The collective an async-start runs (its wrapped computation's root over its parameters in
// order), or null (exec's WrappedCollective).
const Instruction* WrappedCollective(const Instruction& start) {
  const Computation* c = start.async_wrapped_computation();
  if (c == nullptr || c->root() == nullptr || !IsCollective(c->root()->opcode())) return nullptr;
  const Instruction* root = c->root();
  if (root->operand_count() != c->num_parameters()) return nullptr;
  for (int i = 0; i < root->operand_count(); ++i) {
    const Instruction* p = root->operand(i);
    if (p->opcode() != Opcode::kParameter || p->parameter_number() != i) return nullptr;
  }
  return root;
}

class Planner {
 public:
  Planner(GpuPlanData& data, const ComputationPlan& exec) : data_(data), exec_(exec) {}

  std::unique_ptr<GpuComputation> Plan() {
    auto c = std::make_unique<GpuComputation>();
    c->exec = &exec_;
    c->exec_arena_bytes = AlignedBufferBytes(exec_.arena_bytes);
    locs_.assign(exec_.num_slots, {});
    int64_t param_leaf = 0;
    const Computation& comp = *exec_.computation;
    for (int p = 0; p < comp.num_parameters(); ++p) {
      const int64_t n = LeafCount(comp.parameter(p)->shape());
      std::vector<Loc>& l = locs_[exec_.param_slots[p]];
      for (int64_t i = 0; i < n; ++i) l.push_back({Loc::kParam, param_leaf++});
    }
    c->num_param_leaves = param_leaf;
    for (size_t k = 0; k < exec_.steps.size(); ++k) {
      step_index_ = static_cast<int>(k);
      c->actions.push_back(PlanStep(exec_.steps[k], *c));
    }
    step_index_ = static_cast<int>(exec_.steps.size());
    c->root = locs_[exec_.root_slot];
    for (const Loc& l : c->root) Use(l);  // alive to the end; a caller copies callees' roots out
    // Callees' frames: one region per calling step, alive at that step only.
    std::vector<BufferInterval> intervals;
    for (const Side& s : sides_) intervals.push_back({s.bytes, s.first, s.last, -1});
    std::vector<int> callee_interval(c->actions.size(), -1);
    for (size_t k = 0; k < c->actions.size(); ++k) {
      int64_t bytes = 0;
      for (const GpuComputation* callee : c->actions[k].callees) bytes = std::max(bytes, callee->frame_bytes);
      if (bytes == 0) continue;
      callee_interval[k] = static_cast<int>(intervals.size());
      intervals.push_back({bytes, static_cast<int>(k), static_cast<int>(k), -1});
    }
    const BufferAssignment a = AssignBuffers(intervals);
    auto fix = [&](Loc& l) {
      if (l.kind == Loc::kSide) l = {Loc::kFrame, c->exec_arena_bytes + a.offsets[l.index]};
    };
    for (size_t k = 0; k < c->actions.size(); ++k) {
      Action& act = c->actions[k];
      for (std::vector<Loc>* v : {&act.in, &act.out, &act.temps, &act.gemm_operands}) {
        for (Loc& l : *v) fix(l);
      }
      if (callee_interval[k] >= 0) act.callee_offset = c->exec_arena_bytes + a.offsets[callee_interval[k]];
    }
    for (Loc& l : c->root) fix(l);
    c->frame_bytes = c->exec_arena_bytes + AlignedBufferBytes(a.arena_bytes);
    return c;
  }

  // A side buffer alive during the current step only (a temporary of its kernels).
  static Loc Temp(void* self, int64_t bytes) {
    auto* p = static_cast<Planner*>(self);
    return p->NewSide(bytes);
  }

 private:
  struct Side {
    int64_t bytes;
    int first, last;
  };

  Loc NewSide(int64_t bytes) {
    sides_.push_back({std::max<int64_t>(bytes, 1), step_index_, step_index_});
    return {Loc::kSide, static_cast<int64_t>(sides_.size() - 1)};
  }
  void Use(const Loc& l) {
    if (l.kind == Loc::kSide) sides_[l.index].last = std::max(sides_[l.index].last, step_index_);
  }
  // Fresh side buffers for every leaf of `s`.
  std::vector<Loc> NewLeaves(const Shape& s, std::vector<int64_t>* bytes = nullptr) {
    std::vector<Shape> shapes;
    FlattenArrayShapes(s, shapes);
    std::vector<Loc> out;
    for (const Shape& e : shapes) {
      out.push_back(NewSide(e.byte_size()));
      if (bytes != nullptr) bytes->push_back(e.byte_size());
    }
    return out;
  }
  Loc ConstantLoc(const Array& a) {
    const int64_t offset = AlignedBufferBytes(static_cast<int64_t>(data_.constants.size()));
    data_.constants.resize(offset + std::max<int64_t>(a.byte_size(), 1));
    std::copy(a.data(), a.data() + a.byte_size(), data_.constants.begin() + offset);
    return {Loc::kConstant, offset};
  }
  void LiteralLocs(const Literal& lit, std::vector<Loc>& out) {
    if (lit.array) {
      out.push_back(ConstantLoc(*lit.array));
      return;
    }
    for (const Literal& e : lit.elements) LiteralLocs(e, out);
  }
  // Leaves [begin, begin + count) of element `index` of a tuple of shape `s`.
  static std::pair<int64_t, int64_t> ElementRange(const Shape& s, int64_t index) {
    int64_t begin = 0;
    for (int64_t j = 0; j < index && j < s.tuple_size(); ++j) begin += LeafCount(s.tuple_shape(static_cast<int>(j)));
    return {begin, index < s.tuple_size() ? LeafCount(s.tuple_shape(static_cast<int>(index))) : 0};
  }
  std::vector<Loc> Element(int slot, const Shape& s, int64_t index) {
    const auto [b, n] = ElementRange(s, index);
    const std::vector<Loc>& all = locs_[slot];
    if (b + n > static_cast<int64_t>(all.size())) return {};
    return std::vector<Loc>(all.begin() + b, all.begin() + b + n);
  }
  const GpuComputation* Callee(const ComputationPlan* p) {
    auto it = data_.computations.find(p);
    return it == data_.computations.end() ? nullptr : it->second.get();
  }
  void AddCallees(const Step& step, Action& act, GpuComputation& c) {
    for (const ComputationPlan* p : step.callees) {
      const GpuComputation* g = Callee(p);
      if (g == nullptr) {
        act.kind = ActionKind::kUnsupported;
        act.why = StrCat("its computation '", p->computation->name(), "' was not planned");
        return;
      }
      act.callees.push_back(g);
      c.host_driven |= g->host_driven;
      c.communicates |= g->communicates;
    }
  }
  // The result of a step that writes its own buffers: exec's arena offset for an array result
  // when exec planned one, else side buffers.
  std::vector<Loc> ResultLeaves(const Step& step, std::vector<int64_t>& bytes) {
    const Shape& s = step.inst->shape();
    if (s.IsArray() && step.arena_offset >= 0) {
      bytes.push_back(s.byte_size());
      return {{Loc::kFrame, step.arena_offset}};
    }
    return NewLeaves(s, &bytes);
  }

  Action PlanStep(const Step& step, GpuComputation& c);
  Action PlanCollective(const Step& step, Action act, GpuComputation& c);

  GpuPlanData& data_;
  const ComputationPlan& exec_;
  std::vector<std::vector<Loc>> locs_;  // per slot: its array leaves
  std::vector<Side> sides_;
  int step_index_ = 0;
};

Action Planner::PlanStep(const Step& step, GpuComputation& c) {
  const Instruction& inst = *step.inst;
  const Opcode op = inst.opcode();
  Action act;
  act.step = &step;
  for (int o : step.operands) {
    act.in_begin.push_back(static_cast<int>(act.in.size()));
    for (const Loc& l : locs_[o]) {
      act.in.push_back(l);
      Use(l);
    }
  }
  act.in_begin.push_back(static_cast<int>(act.in.size()));
  std::vector<Loc>& out = locs_[step.out];
  auto operand = [&](int i) { return locs_[step.operands[i]]; };
  if (step.payload_kind() != PayloadKind::kFused && !step.writes_result_buffer) {
    switch (op) {
      case Opcode::kReshape: case Opcode::kBitcast: case Opcode::kCopy: case Opcode::kAddDependency:
      case Opcode::kDomain: case Opcode::kAsyncUpdate:
        out = operand(0);
        return act;
      case Opcode::kOptimizationBarrier: case Opcode::kTuple:
        out = act.in;
        return act;
      case Opcode::kGetTupleElement:
        out = Element(step.operands[0], inst.operand(0)->shape(), inst.tuple_index());
        return act;
      case Opcode::kAfterAll:
        return act;
      case Opcode::kCopyStart: {
        out = operand(0);
        out.insert(out.end(), locs_[step.operands[0]].begin(), locs_[step.operands[0]].end());
        for (int i = 2; i < inst.shape().tuple_size(); ++i) {
          for (const Loc& l : NewLeaves(inst.shape().tuple_shape(i))) out.push_back(l);
        }
        return act;
      }
      case Opcode::kCopyDone:
        out = Element(step.operands[0], inst.operand(0)->shape(), 0);
        return act;
      case Opcode::kConstant:
        if (inst.attrs().literal) LiteralLocs(*inst.attrs().literal, out);
        return act;
      case Opcode::kPartitionId: case Opcode::kReplicaId: {
        Array zero(inst.shape());
        out = {ConstantLoc(zero)};
        data_.id_constants.push_back({out[0].index, op});
        return act;
      }
      case Opcode::kAllReduceDone: case Opcode::kAllGatherDone: case Opcode::kCollectivePermuteDone:
      case Opcode::kAsyncDone: {
        act.kind = ActionKind::kDone;
        const Instruction* start = inst.operand(0);
        while (start->opcode() == Opcode::kAsyncUpdate) start = start->operand(0);
        act.collective_key = start;
        out = op == Opcode::kAllReduceDone ? operand(0) : Element(step.operands[0], inst.operand(0)->shape(), 1);
        return act;
      }
      case Opcode::kCall: case Opcode::kFusion: case Opcode::kWhile: case Opcode::kConditional: {
        act.kind = op == Opcode::kWhile         ? ActionKind::kWhile
                   : op == Opcode::kConditional ? ActionKind::kConditional
                                                : ActionKind::kCall;
        AddCallees(step, act, c);
        if (act.kind == ActionKind::kUnsupported) return act;
        c.host_driven |= op == Opcode::kWhile || op == Opcode::kConditional;
        out = NewLeaves(inst.shape(), &act.out_bytes);
        act.out = out;
        if (op == Opcode::kWhile && act.callees.size() == 2) {
          // The body's root may pass carry j to position i != j: those go through a temporary.
          int64_t swap = 0;
          for (size_t i = 0; i < act.callees[1]->root.size(); ++i) {
            const Loc& r = act.callees[1]->root[i];
            if (r.kind == Loc::kParam && r.index != static_cast<int64_t>(i)) swap += act.out_bytes[i];
          }
          if (swap > 0) act.temps.push_back(NewSide(swap));
        }
        return act;
      }
      case Opcode::kCustomCall:
        if (IsIdentityCustomCall(inst)) {
          out = operand(0);
          return act;
        }
        break;
      default:
        break;
    }
  }
  if (IsCollective(op)) {
    if (std::string why = NarrowTypeRefusal(step); !why.empty()) {
      out = ResultLeaves(step, act.out_bytes);  // later steps still read its (never written) result
      act.out = out;
      act.kind = ActionKind::kUnsupported;
      act.why = std::move(why);
      return act;
    }
  }
  if (IsCollective(op) || op == Opcode::kAsyncStart) return PlanCollective(step, std::move(act), c);
  // A step that computes: generated kernels, a GEMM or a convolution.
  out = ResultLeaves(step, act.out_bytes);
  if (const FusedPayload* fused = step.FindPayload<FusedPayload>()) {
    // The action's outputs in FusedLoop::outputs order, then a fused reduce's result.
    const FusedLoop& loop = *fused->loop;
    const std::vector<Loc> result = out;
    const std::vector<int64_t> result_bytes = act.out_bytes;
    act.out_bytes.clear();
    for (size_t i = 0; i < loop.outputs.size(); ++i) {
      const FusedOutput& o = loop.outputs[i];
      if (o.slot == step.out) {
        act.out.push_back(result[0]);
        act.out_bytes.push_back(result_bytes[0]);
        continue;
      }
      const int64_t bytes = o.inst->shape().byte_size();
      const int64_t off = i < fused->output_offsets.size() ? fused->output_offsets[i] : -1;
      locs_[o.slot] = {off >= 0 ? Loc{Loc::kFrame, off} : NewSide(bytes)};
      act.out.push_back(locs_[o.slot][0]);
      act.out_bytes.push_back(bytes);
    }
    if (loop.has_reduce) {
      act.out.push_back(result[0]);
      act.out_bytes.push_back(result_bytes[0]);
    }
  } else {
    act.out = out;
  }
  if (op == Opcode::kRngGetAndUpdateState) {
    // Its 128-bit state, the kernel's operand: 16 zero bytes of the constant region, which lives
    // as long as the executable and which nothing else writes, so each executable keeps its own
    // state from 0 across its runs, as the CPU executor does.
    act.in = {ConstantLoc(Array(Shape(DType::kU64, {2})))};
    act.in_begin = {0, 1};
  }
  act.kind = ActionKind::kKernels;
  PlanComputeAction(step, act, data_, this, &Planner::Temp);
  return act;
}

Action Planner::PlanCollective(const Step& step, Action act, GpuComputation& c) {
  const Instruction& inst = *step.inst;
  const Opcode op = inst.opcode();
  std::vector<Loc>& out = locs_[step.out];
  c.communicates = true;
  act.kind = ActionKind::kCollective;
  act.collective = &inst;
  act.collective_key = &inst;
  if (op == Opcode::kAsyncStart) {
    act.collective = WrappedCollective(inst);
    if (act.collective == nullptr) {
      // Another wrapped computation: run at the start, like a call.
      act.kind = ActionKind::kCall;
      AddCallees(step, act, c);
    }
    act.start = true;
    // ((operands), result, context...): operands alias, the result is ours.
    out = act.in;
    act.out = NewLeaves(inst.shape().tuple_shape(1), &act.out_bytes);
    out.insert(out.end(), act.out.begin(), act.out.end());
    for (int i = 2; i < inst.shape().tuple_size(); ++i) {
      for (const Loc& l : NewLeaves(inst.shape().tuple_shape(i))) out.push_back(l);
    }
    return act;
  }
  act.start = op == Opcode::kAllGatherStart || op == Opcode::kAllReduceStart ||
              op == Opcode::kCollectivePermuteStart;
  if (IsCollectiveStart(op) && inst.shape().IsTuple() && inst.shape().tuple_size() >= 2) {
    act.out = NewLeaves(inst.shape().tuple_shape(1), &act.out_bytes);
    out.clear();  // (operands, result, context...): a combined start's operands form a tuple
    for (const auto& o : step.operands) out.insert(out.end(), locs_[o].begin(), locs_[o].end());
    out.insert(out.end(), act.out.begin(), act.out.end());
    for (int i = 2; i < inst.shape().tuple_size(); ++i) {
      for (const Loc& l : NewLeaves(inst.shape().tuple_shape(i))) out.push_back(l);
    }
    return act;
  }
  out = ResultLeaves(step, act.out_bytes);
  act.out = out;
  return act;
}

// Whether `step` runs its callees as frames of their own (a reduce's or sort's to_apply is
// compiled into its kernel instead).
bool RunsCalleesAsFrames(const Step& step) {
  switch (step.inst->opcode()) {
    case Opcode::kCall: case Opcode::kFusion: case Opcode::kWhile: case Opcode::kConditional:
      return true;
    case Opcode::kAsyncStart:
      return WrappedCollective(*step.inst) == nullptr;
    default:
      return false;
  }
}

void PlanWithCallees(const ComputationPlan* p, GpuPlanData& data) {
  if (data.computations.count(p)) return;
  for (const Step& step : p->steps) {
    if (!RunsCalleesAsFrames(step)) continue;
    for (const ComputationPlan* c : step.callees) PlanWithCallees(c, data);
  }
  Planner planner(data, *p);
  data.computations[p] = planner.Plan();
}

}  // namespace

std::string_view ActionKindName(ActionKind k) {
  static constexpr std::string_view kNames[] = {"alias",      "kernels", "gemm",        "conv",
                                                "copy",       "zero",    "collective",  "done",
                                                "call",       "while",   "conditional", "unsupported"};
  return kNames[static_cast<int>(k)];
}

// Plans the entry and every computation it runs as a frame (loop bodies and conditions,
// branches, called computations), callees first.
Status PlanProgram(const Module& module, const Program& program, GpuPlanData& data) {
  if (program.entry == nullptr) return Internal("the program has no entry plan");
  PlanWithCallees(program.entry, data);
  auto it = data.computations.find(program.entry);
  if (it == data.computations.end()) return Internal("the entry computation was not planned");
  data.entry = it->second.get();
  for (int i = 0; i < module.entry()->num_parameters(); ++i) {
    FlattenArrayShapes(module.entry()->parameter(i)->shape(), data.argument_shapes);
  }
  FlattenArrayShapes(module.entry()->root()->shape(), data.result_shapes);
  return OkStatus();
}

}  // namespace xs::cuda
