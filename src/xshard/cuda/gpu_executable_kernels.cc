// What runs a computing step on the GPU (phase 1, no GPU needed): a generated kernel
// (kernel_codegen.h) for fused loops, elementwise and shape ops, reduce and reduce-window; a
// cuBLASLt GEMM for dots (gemm.h) and a cuDNN convolution (conv.h), with transposed copies of
// operands they cannot read in place, else a generated direct dot / convolution kernel;
// a device copy for bitcast-convert. Anything else is "unsupported" with the generator's reason.
#include <optional>

#include "xshard/cuda/conv.h"
#include "xshard/cuda/gpu_executable_plan.h"
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/exec/fusion_plan.h"

namespace xs::cuda {
namespace {

void Unsupported(Action& act, const Status& why) {
  act.kind = ActionKind::kUnsupported;
  act.why = why.message();
}

// The KernelArgs pointers of a kernel over `act`'s operands then its outputs (kernel_codegen.h).
bool AddKernel(Action& act, GeneratedKernel k) {
  const int want = static_cast<int>(act.in.size() + act.out.size());
  if (k.num_pointers != want) {
    act.kind = ActionKind::kUnsupported;
    act.why = StrCat("its kernel ", k.source.name, " takes ", k.num_pointers, " buffers; the step has ",
                     act.in.size(), " operand and ", act.out.size(), " result array(s)");
    return false;
  }
  PlannedKernel p;
  p.kernel = std::move(k);
  for (size_t i = 0; i < act.in.size(); ++i) p.args.push_back({KernelArg::kInput, static_cast<int>(i)});
  for (size_t i = 0; i < act.out.size(); ++i) p.args.push_back({KernelArg::kOutput, static_cast<int>(i)});
  act.kernels.push_back(std::move(p));
  return true;
}

// The first narrow type (f8*, f4e2m1fn, s2, s4, u2, u4) among `s`'s leaves.
std::optional<DType> NarrowLeaf(const Shape& s) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes()) {
      if (std::optional<DType> t = NarrowLeaf(e)) return t;
    }
    return std::nullopt;
  }
  if (s.IsArray() && IsNarrowType(s.dtype())) return s.dtype();
  return std::nullopt;
}
std::optional<DType> NarrowTypeOf(const Instruction& inst) {
  if (std::optional<DType> t = NarrowLeaf(inst.shape())) return t;
  for (const Instruction* o : inst.operands()) {
    if (std::optional<DType> t = NarrowLeaf(o->shape())) return t;
  }
  return std::nullopt;
}

// Generated kernels, GEMMs and convolutions do not compute on the narrow types (the CPU executor
// widens them); the ragged and block-scaled dots decode their f8 operands themselves, and a
// bitcast-convert between whole bytes is a device copy. The first narrow type of a step that
// needs more, in `*t`.
bool RefusesNarrowTypes(const Step& step, DType* t) {
  const Instruction& inst = *step.inst;
  std::optional<DType> found;
  if (const FusedPayload* fused = step.FindPayload<FusedPayload>()) {
    for (const std::vector<FusedOp>* ops : {&fused->loop->prologue, &fused->loop->body}) {
      for (const FusedOp& op : *ops) {
        if (!found && op.inst != nullptr) found = NarrowTypeOf(*op.inst);
      }
    }
    for (const FusedOutput& o : fused->loop->outputs) {
      if (!found && o.inst != nullptr) found = NarrowTypeOf(*o.inst);
    }
    if (!found) found = NarrowTypeOf(inst);
  } else {
    const bool decodes_f8 = inst.opcode() == Opcode::kRaggedDot ||
                            (inst.opcode() == Opcode::kCustomCall &&
                             inst.attrs().custom_call_target.value_or("") == "__op$block_scaled_dot");
    const bool byte_copy = inst.opcode() == Opcode::kBitcastConvert && inst.operand_count() == 1 &&
                           DTypeBitWidth(inst.shape().dtype()) >= 8 &&
                           DTypeBitWidth(inst.operand(0)->shape().dtype()) >= 8;
    // Collectives that only move data take any type; those that reduce do not.
    const bool moves_only = IsCollective(inst.opcode()) &&
                            !(inst.opcode() == Opcode::kAllReduce || inst.opcode() == Opcode::kAllReduceStart ||
                              inst.opcode() == Opcode::kReduceScatter);
    if (!decodes_f8 && !byte_copy && !moves_only) found = NarrowTypeOf(inst);
  }
  if (found) *t = *found;
  return found.has_value();
}

// Every operand must be one array (no tuple operands) for the kernel conventions.
bool OneLeafPerOperand(const Action& act) {
  for (size_t i = 0; i + 1 < act.in_begin.size(); ++i) {
    if (act.in_begin[i + 1] - act.in_begin[i] != 1) return false;
  }
  return true;
}

// A transposed copy of operand `i` of a dot or convolution into a temporary: a detached parameter of the operand's
// shape and a transpose of it, kept by the plan, drive the generator.
StatusOr<Loc> PermutedOperand(const Instruction& dot, int i, const std::vector<int64_t>& perm, Action& act,
                              GpuPlanData& data, void* planner, TempFn temp) {
  const Shape& from = dot.operand(i)->shape().WithoutLayout();
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(from.dim(static_cast<int>(p)));
  const Shape to(from.dtype(), dims);
  std::unique_ptr<Instruction> param = Instruction::Create(Opcode::kParameter, from, {}, StrCat(dot.name(), ".operand", i));
  std::unique_ptr<Instruction> transpose =
      Instruction::Create(Opcode::kTranspose, to, {param.get()}, StrCat(dot.name(), ".transpose", i));
  transpose->mutable_attrs().dimensions = perm;
  StatusOr<GeneratedKernel> k = GenerateOpKernel(*transpose);
  data.made.push_back(std::move(param));
  data.made.push_back(std::move(transpose));
  if (!k.ok()) return k.status();
  const Loc t = temp(planner, to.byte_size());
  act.temps.push_back(t);
  PlannedKernel p;
  p.kernel = std::move(k).value();
  p.args = {{KernelArg::kInput, act.in_begin[i]}, {KernelArg::kTemp, static_cast<int>(act.temps.size() - 1)}};
  act.kernels.push_back(std::move(p));
  return t;
}

void PlanDot(const Step& step, Action& act, GpuPlanData& data, void* planner, TempFn temp) {
  const Instruction& dot = *step.inst;
  StatusOr<GemmLayout> layout = GemmLayoutFor(dot);
  if (!layout.ok()) {
    // Integer, mixed-type and other dots cuBLASLt does not take: the direct kernel (slow path),
    // its strategy naming why. Complex dots stay unsupported with cuBLASLt's reason.
    StatusOr<GeneratedKernel> k = GenerateDotKernel(dot);
    if (k.ok()) {
      k->strategy += StrCat(" (cuBLASLt: ", layout.status().message(), ")");
      AddKernel(act, std::move(k).value());
      return;
    }
    Unsupported(act, layout.status());
    return;
  }
  act.kind = ActionKind::kGemm;
  act.gemm = *layout;
  const std::vector<int64_t>* perms[] = {&layout->lhs_permutation, &layout->rhs_permutation};
  for (int i = 0; i < 2; ++i) {
    if (perms[i]->empty()) {
      act.gemm_operands.push_back(act.in[act.in_begin[i]]);
      continue;
    }
    StatusOr<Loc> t = PermutedOperand(dot, i, *perms[i], act, data, planner, temp);
    if (!t.ok()) {
      Unsupported(act, t.status());
      return;
    }
    act.gemm_operands.push_back(*t);
  }
}

// cuDNN's forward convolution, with a transposed copy of the kernel when cuDNN cannot read its
// dims in place.
void PlanConvolution(const Step& step, Action& act, GpuPlanData& data, void* planner, TempFn temp) {
  const Instruction& conv = *step.inst;
  StatusOr<ConvLayout> layout = ConvLayoutFor(conv);
  if (!layout.ok()) {
    // What cuDNN does not take runs as the direct kernel (slow path), its strategy naming why.
    StatusOr<GeneratedKernel> k = GenerateConvolutionKernel(conv);
    if (k.ok()) {
      k->strategy += StrCat(" (cuDNN: ", layout.status().message(), ")");
      AddKernel(act, std::move(k).value());
      return;
    }
    Unsupported(act, layout.status());
    return;
  }
  act.kind = ActionKind::kConv;
  act.gemm_operands.push_back(act.in[act.in_begin[0]]);
  if (layout->kernel_permutation.empty()) {
    act.gemm_operands.push_back(act.in[act.in_begin[1]]);
    return;
  }
  StatusOr<Loc> t = PermutedOperand(conv, 1, layout->kernel_permutation, act, data, planner, temp);
  if (!t.ok()) {
    Unsupported(act, t.status());
    return;
  }
  act.gemm_operands.push_back(*t);
}

}  // namespace

std::string NarrowTypeRefusal(const Step& step) {
  DType t;
  if (!RefusesNarrowTypes(step, &t)) return "";
  return StrCat("element type ", DTypeName(t),
                ": the GPU backend does not compute on the narrow types (f8*, f4e2m1fn, s2, s4, u2, u4); the "
                "CPU platform does");
}

void PlanComputeAction(const Step& step, Action& act, GpuPlanData& data, void* planner, TempFn temp) {
  const Instruction& inst = *step.inst;
  if (!OneLeafPerOperand(act) || act.out.size() < 1) {
    act.kind = ActionKind::kUnsupported;
    act.why = "tuple operands or results have no kernel";
    return;
  }
  if (std::string why = NarrowTypeRefusal(step); !why.empty()) {
    act.kind = ActionKind::kUnsupported;
    act.why = std::move(why);
    return;
  }
  act.kind = ActionKind::kKernels;
  if (const FusedPayload* fused = step.FindPayload<FusedPayload>()) {
    StatusOr<GeneratedKernel> k = GenerateFusedLoopKernel(*fused->loop);
    if (!k.ok()) {
      Unsupported(act, k.status());
      return;
    }
    AddKernel(act, std::move(k).value());
    return;
  }
  switch (inst.opcode()) {
    case Opcode::kDot:
      PlanDot(step, act, data, planner, temp);
      return;
    case Opcode::kConvolution:
      PlanConvolution(step, act, data, planner, temp);
      return;
    case Opcode::kBitcastConvert:
      act.kind = ActionKind::kCopy;  // same bytes, another type
      return;
    default:
      break;
  }
  // In place when exec put each result over its dying operand's buffer (dynamic-update-slice,
  // scatter): the kernels then skip copying the operands.
  bool in_place = act.out.size() <= act.in.size();
  for (size_t i = 0; in_place && i < act.out.size(); ++i) in_place = act.in[i] == act.out[i];
  StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(inst, in_place);
  if (!ks.ok()) {
    Unsupported(act, ks.status());
    return;
  }
  for (GeneratedKernel& k : *ks) {
    if (!AddKernel(act, std::move(k))) return;
  }
}

}  // namespace xs::cuda
