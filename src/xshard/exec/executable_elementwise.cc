// Executor handlers for elementwise ops: unary / binary math, compare, convert, bitcast-convert,
// select, clamp, copy, map, reduce-precision, stochastic-convert. Results reuse a dying operand's buffer when the
// dtype and dims match (so a chain of adds allocates nothing).
#include <cmath>
#include <cstring>
#include <limits>

#include "xshard/kernels/reduce.h"
#include "xshard/kernels/shape_ops.h"
#include "xshard/exec/executable_plan.h"

namespace xs {
namespace {

Status RequireArrayOperands(const Instruction& inst) {
  for (const Instruction* op : inst.operands()) {
    if (!op->shape().IsArray()) {
      return InvalidArgument("operand '", op->name(), "' has shape ", op->shape().ToString(false),
                             "; an array is required");
    }
  }
  if (!inst.shape().IsArray()) {
    return InvalidArgument("result shape ", inst.shape().ToString(false), " must be an array");
  }
  return OkStatus();
}

Status RequireSameDims(const Instruction& inst, int a, int b) {
  const Shape& sa = inst.operand(a)->shape();
  const Shape& sb = inst.operand(b)->shape();
  if (sa.dims() != sb.dims()) {
    return InvalidArgument("operands ", a, " and ", b, " have different dims: ", sa.ToString(false),
                           " vs ", sb.ToString(false));
  }
  return OkStatus();
}

Status CheckResultDType(const Instruction& inst, DType want) {
  if (inst.shape().dtype() != want) {
    return InvalidArgument("result type ", DTypeName(inst.shape().dtype()), " should be ",
                           DTypeName(want), " for ", OpcodeName(inst.opcode()), " of ",
                           inst.operand(0)->shape().ToString(false));
  }
  return OkStatus();
}

Status RunUnary(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  std::shared_ptr<Array> out = ResultBuffer(step, frame, ctx, 0);
  step.elementwise().unary(in.data(), out->data(), step.count);
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status PrepareUnary(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrayOperands(inst));
  const DType t = inst.operand(0)->shape().dtype();
  XS_ASSIGN_OR_RETURN(step.SetPayload(ElementwisePayload{}).unary, kernels::FindUnaryKernel(inst.opcode(), t));
  XS_ASSIGN_OR_RETURN(DType out, kernels::UnaryResultDType(inst.opcode(), t));
  XS_RETURN_IF_ERROR(CheckResultDType(inst, out));
  step.run = &RunUnary;
  step.scalar_kind = ScalarKind::kUnary;
  step.writes_result_buffer = true;
  step.inplace_operand = 0;
  return OkStatus();
}

Status RunShare(const Step& step, Frame& frame, RunContext&) {
  frame.slots[step.out] = TakeOperand(step, frame, 0);
  return OkStatus();
}

Status PrepareCopy(const Instruction& inst, Step& step, const Program&) {
  if (!inst.operand(0)->shape().Compatible(inst.shape())) {
    return InvalidArgument("copy result ", inst.shape().ToString(false), " differs from its operand ",
                           inst.operand(0)->shape().ToString(false));
  }
  step.run = &RunShare;  // values are immutable, so a copy can share the buffer
  step.scalar_kind = ScalarKind::kShare;
  return OkStatus();
}

Status RunBinary(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& a = OperandArray(step, frame, 0);
  const Array& b = OperandArray(step, frame, 1);
  std::shared_ptr<Array> out = ResultBuffer(step, frame, ctx, 0);
  step.elementwise().binary(a.data(), b.data(), out->data(), step.count);
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status PrepareBinary(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrayOperands(inst));
  XS_RETURN_IF_ERROR(RequireSameDims(inst, 0, 1));
  const DType t = inst.operand(0)->shape().dtype();
  if (inst.operand(1)->shape().dtype() != t) {
    return InvalidArgument("operand types differ: ", DTypeName(t), " vs ",
                           DTypeName(inst.operand(1)->shape().dtype()));
  }
  XS_ASSIGN_OR_RETURN(step.SetPayload(ElementwisePayload{}).binary, kernels::FindBinaryKernel(inst.opcode(), t));
  DType want = t;
  if (inst.opcode() == Opcode::kComplex) want = t == DType::kF64 ? DType::kC128 : DType::kC64;
  XS_RETURN_IF_ERROR(CheckResultDType(inst, want));
  step.run = &RunBinary;
  step.scalar_kind = ScalarKind::kBinary;
  step.writes_result_buffer = true;
  step.inplace_operand = 0;
  return OkStatus();
}

Status PrepareCompare(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrayOperands(inst));
  XS_RETURN_IF_ERROR(RequireSameDims(inst, 0, 1));
  const DType t = inst.operand(0)->shape().dtype();
  if (!inst.attrs().comparison_direction) return InvalidArgument("compare needs direction=");
  XS_ASSIGN_OR_RETURN(step.SetPayload(ElementwisePayload{}).binary,
                      kernels::FindCompareKernel(*inst.attrs().comparison_direction, inst.attrs().comparison_type, t));
  XS_RETURN_IF_ERROR(CheckResultDType(inst, DType::kPred));
  step.run = &RunBinary;
  step.scalar_kind = ScalarKind::kBinary;
  step.writes_result_buffer = true;
  step.inplace_operand = 0;
  return OkStatus();
}

Status PrepareConvert(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrayOperands(inst));
  const DType from = inst.operand(0)->shape().dtype(), to = inst.shape().dtype();
  if (from == to) {
    step.run = &RunShare;
    step.scalar_kind = ScalarKind::kShare;
    return OkStatus();
  }
  XS_ASSIGN_OR_RETURN(step.SetPayload(ElementwisePayload{}).unary, kernels::FindConvertKernel(from, to));
  step.run = &RunUnary;
  step.scalar_kind = ScalarKind::kUnary;
  step.writes_result_buffer = true;
  step.inplace_operand = 0;
  return OkStatus();
}

Status RunBitcastConvert(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  std::shared_ptr<Array> out = NewArray(step.inst->shape(), ctx);
  XS_RETURN_IF_ERROR(kernels::BitcastInto(in, *out));
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

int64_t ShapeBits(const Shape& s) { return s.num_elements() * DTypeBitWidth(s.dtype()); }

Status PrepareBitcastConvert(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrayOperands(inst));
  // Bits, not bytes: the types narrower than a byte are held one per byte (u8[3] -> u4[3,2]).
  if (ShapeBits(inst.shape()) != ShapeBits(inst.operand(0)->shape()) || DTypeSize(inst.shape().dtype()) == 0) {
    return InvalidArgument("bitcast-convert from ", inst.operand(0)->shape().ToString(false), " to ",
                           inst.shape().ToString(false), " changes the number of bits");
  }
  step.run = &RunBitcastConvert;
  step.writes_result_buffer = true;
  const DType from = inst.operand(0)->shape().dtype();
  if (DTypeBitWidth(from) == DTypeBitWidth(inst.shape().dtype())) {
    // Same element width: a byte copy per element (or s4 <-> u4's re-encoding), so scalars
    // (comparators' float -> int tricks) take the scalar fast path and arrays join fused loops
    // (jax.random's bits -> float).
    StatusOr<kernels::UnaryKernel> copy = kernels::FindBitcastKernel(from, inst.shape().dtype());
    if (!copy.ok() && inst.shape().rank() == 0) return copy.status();
    if (copy.ok()) {
      step.SetPayload(ElementwisePayload{}).unary = *copy;
      step.scalar_kind = ScalarKind::kUnary;
    }
  }
  return OkStatus();
}

Status RunSelect(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& pred = OperandArray(step, frame, 0);
  if (pred.rank() == 0 && step.count != 1) {
    const bool p = pred.data()[0] != std::byte{0};
    Slot chosen = TakeOperand(step, frame, p ? 1 : 2);
    frame.slots[step.out] = std::move(chosen);
    return OkStatus();
  }
  const Array& t = OperandArray(step, frame, 1);
  const Array& f = OperandArray(step, frame, 2);
  std::shared_ptr<Array> out = ResultBuffer(step, frame, ctx, 1);
  step.elementwise().ternary(pred.data(), t.data(), f.data(), out->data(), step.count);
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status PrepareSelect(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrayOperands(inst));
  XS_RETURN_IF_ERROR(RequireSameDims(inst, 1, 2));
  if (inst.operand(0)->shape().dtype() != DType::kPred) return InvalidArgument("select predicate must be pred");
  if (inst.operand(0)->shape().rank() != 0) XS_RETURN_IF_ERROR(RequireSameDims(inst, 0, 1));
  XS_ASSIGN_OR_RETURN(step.SetPayload(ElementwisePayload{}).ternary, kernels::FindSelectKernel(inst.shape().dtype()));
  step.run = &RunSelect;
  step.scalar_kind = ScalarKind::kTernary;
  // A scalar predicate over a non-scalar result passes the chosen operand through.
  if (inst.operand(0)->shape().rank() != 0 || inst.shape().num_elements() == 1) {
    step.writes_result_buffer = true;
    step.inplace_operand = 1;
  }
  return OkStatus();
}

Status RunClamp(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& x = OperandArray(step, frame, 1);
  const Array* lo = &OperandArray(step, frame, 0);
  const Array* hi = &OperandArray(step, frame, 2);
  Array lo_full, hi_full;
  if (lo->rank() == 0 && x.rank() > 0) {
    lo_full = kernels::Broadcast(*lo, x.dims(), {});
    lo = &lo_full;
  }
  if (hi->rank() == 0 && x.rank() > 0) {
    hi_full = kernels::Broadcast(*hi, x.dims(), {});
    hi = &hi_full;
  }
  std::shared_ptr<Array> out = ResultBuffer(step, frame, ctx, 1);
  step.elementwise().ternary(lo->data(), x.data(), hi->data(), out->data(), step.count);
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status PrepareClamp(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrayOperands(inst));
  for (int i : {0, 2}) {
    if (inst.operand(i)->shape().rank() != 0) XS_RETURN_IF_ERROR(RequireSameDims(inst, i, 1));
  }
  XS_ASSIGN_OR_RETURN(step.SetPayload(ElementwisePayload{}).ternary, kernels::FindClampKernel(inst.shape().dtype()));
  step.run = &RunClamp;
  step.scalar_kind = ScalarKind::kTernary;
  step.writes_result_buffer = true;
  step.inplace_operand = 1;
  return OkStatus();
}

Status RunMap(const Step& step, Frame& frame, RunContext& ctx) {
  std::vector<const Array*> inputs;
  for (size_t i = 0; i < step.operands.size(); ++i) inputs.push_back(&OperandArray(step, frame, static_cast<int>(i)));
  ScalarRunner runner(*step.callees[0], ctx);
  XS_ASSIGN_OR_RETURN(Array out, kernels::Map(inputs, step.inst->shape().dtype(), runner.AsFn()));
  frame.slots[step.out] = OwnedSlot(AdoptArray(std::move(out), ctx));
  return OkStatus();
}

Status PrepareMap(const Instruction& inst, Step& step, const Program& program) {
  XS_RETURN_IF_ERROR(RequireArrayOperands(inst));
  if (inst.to_apply() == nullptr) return InvalidArgument("map needs to_apply=");
  step.callees.push_back(program.Get(inst.to_apply()));
  step.run = &RunMap;
  return OkStatus();
}

// reduce-precision as XLA's evaluator: round the mantissa to nearest even, then flush exponents
// out of range to 0 / inf; NaN stays NaN (inf when no mantissa bits remain).
template <typename F, typename U>
F ReducePrecisionValue(F value, int exponent_bits, int mantissa_bits) {
  constexpr int kSrcMantissa = std::numeric_limits<F>::digits - 1;
  constexpr int kSrcExponent = static_cast<int>(sizeof(F)) * 8 - kSrcMantissa - 1;
  U bits;
  std::memcpy(&bits, &value, sizeof(F));
  if (mantissa_bits < kSrcMantissa) {
    const U last_bit = U{1} << (kSrcMantissa - mantissa_bits);
    const U base_bias = (last_bit >> 1) - 1;
    const U x_last = (bits & last_bit) >> (kSrcMantissa - mantissa_bits);
    bits = (bits + x_last + base_bias) & ~(last_bit - 1);
  }
  if (exponent_bits < kSrcExponent) {
    const U sign_mask = U{1} << (sizeof(F) * 8 - 1);
    const U exp_mask = ((U{1} << kSrcExponent) - 1) << kSrcMantissa;
    const U bias = (U{1} << (kSrcExponent - 1)) - 1;
    const U reduced_bias = (U{1} << (exponent_bits - 1)) - 1;
    const U max_exp = bias + reduced_bias, min_exp = bias - reduced_bias;
    const U x_exp = bits & exp_mask;
    const bool overflow = x_exp > (max_exp << kSrcMantissa);
    const bool underflow = x_exp <= (min_exp << kSrcMantissa);
    const U zero = bits & sign_mask, inf = zero | exp_mask;
    if (overflow) bits = inf;
    if (underflow) bits = zero;
  }
  F out;
  std::memcpy(&out, &bits, sizeof(F));
  if (std::isnan(value)) out = mantissa_bits > 0 ? value : std::numeric_limits<F>::infinity();
  return out;
}

Status RunReducePrecision(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  std::shared_ptr<Array> out = ResultBuffer(step, frame, ctx, 0);
  const int e = static_cast<int>(*step.inst->attrs().exponent_bits);
  const int m = static_cast<int>(*step.inst->attrs().mantissa_bits);
  const int64_t n = step.count;
  if (in.dtype() == DType::kF64) {
    const double* x = reinterpret_cast<const double*>(in.data());
    double* o = reinterpret_cast<double*>(out->data());
    for (int64_t i = 0; i < n; ++i) o[i] = ReducePrecisionValue<double, uint64_t>(x[i], e, m);
    return (frame.slots[step.out] = OwnedSlot(std::move(out)), OkStatus());
  }
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(in.GetDouble(i));
    out->SetDouble(i, ReducePrecisionValue<float, uint32_t>(v, e, m));
  }
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status PrepareReducePrecision(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrayOperands(inst));
  const DType t = inst.shape().dtype();
  if (t != DType::kF32 && t != DType::kF64 && t != DType::kF16 && t != DType::kBF16) {
    return UnsupportedInstruction(inst, StrCat("element type ", DTypeName(t)));
  }
  const auto& a = inst.attrs();
  if (!a.exponent_bits || !a.mantissa_bits || *a.exponent_bits < 1 || *a.mantissa_bits < 0) {
    return InvalidArgument("reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0");
  }
  step.run = &RunReducePrecision;
  step.writes_result_buffer = true;
  step.inplace_operand = 0;
  return OkStatus();
}

// stochastic-convert(x, random) to a signed integer type, as XLA's StochasticConvertDecomposer
// defines it: |x| = t + f (t integral, 0 <= f < 1) rounds up to t + 1 when random < f * 2^bits
// (so with probability f for uniform random bits), the sign is put back, NaN gives 0 and values at
// or beyond the type's range clamp to its min / max. Computed in double (exact for every operand
// type xshard has: f * 2^bits is a power-of-two scaling).
template <typename R, typename U>
void StochasticConvertLoop(const Array& x, const U* random, R* out, int64_t n) {
  constexpr double kMin = static_cast<double>(std::numeric_limits<R>::min());
  constexpr double kMax = static_cast<double>(std::numeric_limits<R>::max());
  const double scale = std::ldexp(1.0, std::numeric_limits<U>::digits);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x.GetDouble(i);
    if (std::isnan(v)) {
      out[i] = 0;
    } else if (v <= kMin) {
      out[i] = std::numeric_limits<R>::min();
    } else if (v >= kMax) {
      out[i] = std::numeric_limits<R>::max();
    } else {
      const double a = std::fabs(v), t = std::floor(a);
      R r = static_cast<R>(t);
      if (random[i] < static_cast<U>((a - t) * scale)) ++r;
      out[i] = v < 0 ? static_cast<R>(-r) : r;
    }
  }
}

template <typename R>
void StochasticConvertTo(const Array& x, const Array& random, R* out, int64_t n) {
  switch (random.dtype()) {
    case DType::kU8: return StochasticConvertLoop(x, reinterpret_cast<const uint8_t*>(random.data()), out, n);
    case DType::kU16: return StochasticConvertLoop(x, reinterpret_cast<const uint16_t*>(random.data()), out, n);
    case DType::kU32: return StochasticConvertLoop(x, reinterpret_cast<const uint32_t*>(random.data()), out, n);
    default: return StochasticConvertLoop(x, reinterpret_cast<const uint64_t*>(random.data()), out, n);
  }
}

Status RunStochasticConvert(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& x = OperandArray(step, frame, 0);
  const Array& random = OperandArray(step, frame, 1);
  std::shared_ptr<Array> out = NewArray(step.inst->shape(), ctx);
  void* o = out->data();
  switch (out->dtype()) {
    case DType::kS8: StochasticConvertTo(x, random, static_cast<int8_t*>(o), step.count); break;
    case DType::kS16: StochasticConvertTo(x, random, static_cast<int16_t*>(o), step.count); break;
    case DType::kS32: StochasticConvertTo(x, random, static_cast<int32_t*>(o), step.count); break;
    default: StochasticConvertTo(x, random, static_cast<int64_t*>(o), step.count); break;
  }
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status PrepareStochasticConvert(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrayOperands(inst));
  const DType to = inst.shape().dtype(), bits = inst.operand(1)->shape().dtype();
  if (to != DType::kS8 && to != DType::kS16 && to != DType::kS32 && to != DType::kS64) {
    return UnsupportedInstruction(inst, StrCat("stochastic-convert to ", DTypeName(to),
                                               " (XLA defines it for signed integer results)"));
  }
  if (bits != DType::kU8 && bits != DType::kU16 && bits != DType::kU32 && bits != DType::kU64) {
    return InvalidArgument("stochastic-convert '", inst.name(), "' needs unsigned random bits, got ",
                           DTypeName(bits));
  }
  step.run = &RunStochasticConvert;
  step.writes_result_buffer = true;
  return OkStatus();
}

}  // namespace

void RegisterElementwiseHandlers(HandlerTable& t) {
  // Unary and binary ops: those of the opcode table's kinds that kernels/ has a kernel for (probed
  // on one element type the op accepts), so a new op needs only its kernel's table line.
  for (int i = 0; i < kOpcodeCount; ++i) {
    const Opcode op = static_cast<Opcode>(i);
    const uint32_t types = OpcodeAcceptedTypes(op);
    const DType probe = (types & kOnFloat) ? DType::kF32 : (types & kOnSigned) ? DType::kS32 : DType::kPred;
    switch (GetElementwiseKind(op)) {
      case ElementwiseKind::kUnary:
        if (kernels::FindUnaryKernel(op, probe).ok()) t[i] = &PrepareUnary;
        break;
      case ElementwiseKind::kBinary:
        if (kernels::FindBinaryKernel(op, probe).ok()) t[i] = &PrepareBinary;
        break;
      default:
        break;
    }
  }
  t[static_cast<int>(Opcode::kCopy)] = &PrepareCopy;
  t[static_cast<int>(Opcode::kCompare)] = &PrepareCompare;
  t[static_cast<int>(Opcode::kConvert)] = &PrepareConvert;
  t[static_cast<int>(Opcode::kBitcastConvert)] = &PrepareBitcastConvert;
  t[static_cast<int>(Opcode::kSelect)] = &PrepareSelect;
  t[static_cast<int>(Opcode::kClamp)] = &PrepareClamp;
  t[static_cast<int>(Opcode::kMap)] = &PrepareMap;
  t[static_cast<int>(Opcode::kReducePrecision)] = &PrepareReducePrecision;
  t[static_cast<int>(Opcode::kStochasticConvert)] = &PrepareStochasticConvert;
}

}  // namespace xs
