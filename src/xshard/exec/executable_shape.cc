// Executor handlers for values and data movement: constant, tuple, get-tuple-element, reshape,
// bitcast, broadcast, transpose, slice, dynamic-slice, dynamic-update-slice (in place when the
// operand dies), concatenate, pad, reverse, iota, and the pass-through ops (after-all,
// add-dependency, opt-barrier, domain, partition-id, replica-id, get-dimension-size).
#include <algorithm>
#include <cstring>

#include "xshard/kernels/shape_ops.h"
#include "xshard/exec/executable_plan.h"

namespace xs {
namespace {

// Runs a kernel that writes its whole result into `into` (the step's planned buffer, see
// NewArray) and returns a view of it; a kernel result of other dims (a declared shape that
// differs from the computed one) is kept as the kernel made it.
template <typename F>
Status Emit(const Step& step, Frame& frame, RunContext& ctx, F&& make) {
  std::shared_ptr<Array> out = NewArray(step.inst->shape(), ctx);
  Array made = make(out.get());
  const bool in_place = made.dims() == out->dims() && made.dtype() == out->dtype() && made.data() == out->data();
  frame.slots[step.out] = OwnedSlot(in_place ? std::move(out) : AdoptArray(std::move(made), ctx));
  return OkStatus();
}

// Prepare of a step whose Run goes through Emit: its result gets a planned buffer.
template <PrepareFn kPrepare>
Status PrepareEmitting(const Instruction& inst, Step& step, const Program& program) {
  XS_RETURN_IF_ERROR(kPrepare(inst, step, program));
  step.writes_result_buffer = true;
  return OkStatus();
}

Status RequireArrays(const Instruction& inst, int n) {
  for (int i = 0; i < n && i < inst.operand_count(); ++i) {
    if (!inst.operand(i)->shape().IsArray()) {
      return InvalidArgument("operand ", i, " must be an array, got ", inst.operand(i)->shape().ToString(false));
    }
  }
  if (!inst.shape().IsArray()) return InvalidArgument("result must be an array");
  return OkStatus();
}

Slot LiteralSlot(const Literal& lit) {
  if (lit.array) return SharedSlot(&*lit.array);
  std::vector<Slot> elements;
  for (const Literal& e : lit.elements) elements.push_back(LiteralSlot(e));
  return TupleSlot(std::move(elements));
}

Status RunConstant(const Step& step, Frame& frame, RunContext&) {
  frame.slots[step.out] = LiteralSlot(*step.inst->attrs().literal);
  return OkStatus();
}

bool LiteralMatches(const Literal& lit, const Shape& shape) {
  if (lit.array) return shape.IsArray() && lit.array->dtype() == shape.dtype() && lit.array->dims() == shape.dims();
  if (!shape.IsTuple() || static_cast<int>(lit.elements.size()) != shape.tuple_size()) return false;
  for (int i = 0; i < shape.tuple_size(); ++i) {
    if (!LiteralMatches(lit.elements[i], shape.tuple_shape(i))) return false;
  }
  return true;
}

Status PrepareConstant(const Instruction& inst, Step& step, const Program&) {
  if (!inst.attrs().literal) return InvalidArgument("constant has no value");
  if (!LiteralMatches(*inst.attrs().literal, inst.shape())) {
    return InvalidArgument("constant value does not match its shape ", inst.shape().ToString(false));
  }
  step.run = &RunConstant;
  step.scalar_kind = ScalarKind::kConstant;
  return OkStatus();
}

Status RunTuple(const Step& step, Frame& frame, RunContext&) {
  std::vector<Slot> elements;
  for (size_t i = 0; i < step.operands.size(); ++i) elements.push_back(TakeOperand(step, frame, static_cast<int>(i)));
  frame.slots[step.out] = TupleSlot(std::move(elements));
  return OkStatus();
}

Status PrepareTuple(const Instruction&, Step& step, const Program&) {
  step.run = &RunTuple;
  step.scalar_kind = ScalarKind::kTuple;
  return OkStatus();
}

Status RunGetTupleElement(const Step& step, Frame& frame, RunContext&) {
  const Slot& t = frame.slots[step.operands[0]];
  XS_CHECK(t.tuple != nullptr, "get-tuple-element of a non-tuple");
  frame.slots[step.out] = (*t.tuple)[step.inst->tuple_index()];
  return OkStatus();
}

Status PrepareGetTupleElement(const Instruction& inst, Step& step, const Program&) {
  const Shape& s = inst.operand(0)->shape();
  if (!s.IsTuple() || !inst.attrs().tuple_index || *inst.attrs().tuple_index < 0 ||
      *inst.attrs().tuple_index >= s.tuple_size()) {
    return InvalidArgument("index out of range for ", s.ToString(false));
  }
  step.run = &RunGetTupleElement;
  return OkStatus();
}

Status RunPassThrough(const Step& step, Frame& frame, RunContext&) {
  frame.slots[step.out] = TakeOperand(step, frame, 0);
  return OkStatus();
}

Status RunToken(const Step& step, Frame& frame, RunContext&) {
  frame.slots[step.out] = TupleSlot({});
  return OkStatus();
}

// Row-major reshape and bitcast keep the bytes: the result views the operand's buffer (and keeps
// it alive); the planner extends the operand buffer's live range to the alias's last use.
Status RunReshape(const Step& step, Frame& frame, RunContext&) {
  const Slot& in = frame.slots[step.operands[0]];
  XS_CHECK(in.array != nullptr, "reshape of a non-array");
  struct Alias {
    std::shared_ptr<Array> source;
    Array view;
  };
  auto alias = std::make_shared<Alias>(
      Alias{in.array, Array::View(step.inst->shape().WithoutLayout(), in.array->data())});
  frame.slots[step.out] = Slot{std::shared_ptr<Array>(alias, &alias->view), nullptr, false};
  return OkStatus();
}

Status PrepareReshape(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrays(inst, 1));
  const Shape& in = inst.operand(0)->shape();
  if (in.dtype() != inst.shape().dtype() || in.num_elements() != inst.shape().num_elements()) {
    return InvalidArgument("cannot reshape ", in.ToString(false), " to ", inst.shape().ToString(false));
  }
  step.run = &RunReshape;
  return OkStatus();
}

// A scalar broadcast fills the planned result buffer directly.
Status RunBroadcastScalar(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  std::shared_ptr<Array> out = NewArray(step.inst->shape(), ctx);
  const int64_t n = step.count;
  auto fill = [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, in.data(), sizeof(T));
    std::fill_n(reinterpret_cast<T*>(out->data()), n, v);
  };
  switch (DTypeSize(in.dtype())) {
    case 1: std::memset(out->data(), static_cast<int>(in.data()[0]), static_cast<size_t>(n)); break;
    case 2: fill(uint16_t{}); break;
    case 4: fill(uint32_t{}); break;
    case 8: fill(uint64_t{}); break;
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(out->data() + i * in.byte_size(), in.data(), in.byte_size());
  }
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status RunBroadcast(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  return Emit(step, frame, ctx, [&](Array* into) {
    return kernels::Broadcast(in, step.inst->shape().dims(), step.inst->dimensions(), into);
  });
}

Status PrepareBroadcast(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrays(inst, 1));
  const Shape& in = inst.operand(0)->shape();
  const std::vector<int64_t>& d = inst.dimensions();
  if (static_cast<int>(d.size()) != in.rank()) {
    return InvalidArgument("broadcast dimensions={", JoinDims(d), "} must list ", in.rank(), " dims");
  }
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] < 0 || d[i] >= inst.shape().rank() || inst.shape().dim(static_cast<int>(d[i])) != in.dim(static_cast<int>(i))) {
      return InvalidArgument("broadcast operand dim ", i, " does not match result dim ", d[i]);
    }
  }
  step.run = &RunBroadcast;
  if (in.rank() == 0 && in.byte_size() == DTypeSize(in.dtype()) && DTypeSize(in.dtype()) > 0) {
    step.run = &RunBroadcastScalar;
    step.writes_result_buffer = true;
  }
  return OkStatus();
}

Status RunTranspose(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  return Emit(step, frame, ctx, [&](Array* into) { return kernels::Transpose(in, step.inst->dimensions(), into); });
}

Status RunSlice(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  return Emit(step, frame, ctx, [&](Array* into) { return kernels::Slice(in, *step.inst->attrs().slice, into); });
}

Status PrepareSlice(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrays(inst, 1));
  const auto& s = inst.attrs().slice;
  const Shape& in = inst.operand(0)->shape();
  if (!s || static_cast<int>(s->size()) != in.rank()) return InvalidArgument("slice needs one range per dim");
  for (int i = 0; i < in.rank(); ++i) {
    const SliceDim& d = (*s)[i];
    if (d.start < 0 || d.limit > in.dim(i) || d.start > d.limit || d.stride < 1) {
      return InvalidArgument("slice [", d.start, ":", d.limit, ":", d.stride, "] is out of range for dim ",
                             i, " of size ", in.dim(i));
    }
  }
  step.run = &RunSlice;
  return OkStatus();
}

std::vector<const Array*> StartArrays(const Step& step, const Frame& frame, int first) {
  std::vector<const Array*> starts;
  for (size_t i = first; i < step.operands.size(); ++i) starts.push_back(&OperandArray(step, frame, static_cast<int>(i)));
  return starts;
}

// XLA's legacy form: all start indices in one rank-1 operand after the first `first` operands.
bool LegacyStarts(const Instruction& inst, int first) {
  if (inst.operand_count() != first + 1) return false;
  const Shape& s = inst.operand(first)->shape();
  return s.IsArray() && s.rank() == 1 && s.dim(0) == inst.operand(0)->shape().rank() && IsInteger(s.dtype());
}

Status RunDynamicSlice(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  const std::vector<const Array*> starts = StartArrays(step, frame, 1);
  return Emit(step, frame, ctx, [&](Array* into) {
    return kernels::DynamicSlice(in, starts, step.inst->shape().dims(), into);
  });
}

Status PrepareDynamicSlice(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrays(inst, inst.operand_count()));
  const Shape& in = inst.operand(0)->shape();
  if (inst.operand_count() - 1 != in.rank() && !LegacyStarts(inst, 1)) {
    return InvalidArgument("dynamic-slice needs one scalar start index per dim (", in.rank(), ")");
  }
  for (int i = 0; i < in.rank(); ++i) {
    if (inst.shape().dim(i) > in.dim(i)) return InvalidArgument("dynamic-slice size exceeds the operand");
  }
  step.run = &RunDynamicSlice;
  return OkStatus();
}

Status RunDynamicUpdateSlice(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& operand = OperandArray(step, frame, 0);
  const Array& update = OperandArray(step, frame, 1);
  std::shared_ptr<Array> out = ResultBuffer(step, frame, ctx, 0);
  if (out->data() != operand.data()) std::memcpy(out->data(), operand.data(), static_cast<size_t>(operand.byte_size()));
  kernels::DynamicUpdateSliceInPlace(*out, update, StartArrays(step, frame, 2));
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status PrepareDynamicUpdateSlice(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrays(inst, inst.operand_count()));
  const Shape& in = inst.operand(0)->shape();
  const Shape& up = inst.operand(1)->shape();
  if ((inst.operand_count() - 2 != in.rank() && !LegacyStarts(inst, 2)) || up.rank() != in.rank()) {
    return InvalidArgument("dynamic-update-slice needs an update of the operand's rank and one start per dim");
  }
  for (int i = 0; i < in.rank(); ++i) {
    if (up.dim(i) > in.dim(i)) return InvalidArgument("dynamic-update-slice update exceeds the operand");
  }
  step.run = &RunDynamicUpdateSlice;
  step.writes_result_buffer = true;
  step.inplace_operand = 0;
  return OkStatus();
}

Status RunConcatenate(const Step& step, Frame& frame, RunContext& ctx) {
  const std::vector<const Array*> inputs = StartArrays(step, frame, 0);
  return Emit(step, frame, ctx, [&](Array* into) {
    return kernels::Concatenate(inputs, step.inst->dimensions()[0], into);
  });
}

Status PrepareConcatenate(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrays(inst, inst.operand_count()));
  if (inst.dimensions().size() != 1 || inst.operand_count() < 1) {
    return InvalidArgument("concatenate needs dimensions={d} and at least one operand");
  }
  step.run = &RunConcatenate;
  return OkStatus();
}

Status RunPad(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  const Array& value = OperandArray(step, frame, 1);
  return Emit(step, frame, ctx, [&](Array* into) {
    return kernels::Pad(in, value, *step.inst->attrs().padding, into);
  });
}

Status PreparePad(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(RequireArrays(inst, 2));
  const auto& p = inst.attrs().padding;
  if (!p || static_cast<int>(p->size()) != inst.operand(0)->shape().rank()) {
    return InvalidArgument("pad needs padding= with one entry per dim");
  }
  for (const PaddingDim& d : *p) {
    if (d.interior < 0) return InvalidArgument("pad interior padding must be >= 0");
  }
  step.run = &RunPad;
  return OkStatus();
}

Status RunReverse(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  return Emit(step, frame, ctx, [&](Array* into) { return kernels::Reverse(in, step.inst->dimensions(), into); });
}

Status PrepareDimsOp(const Instruction& inst, Step& step, RunFn run) {
  XS_RETURN_IF_ERROR(RequireArrays(inst, 1));
  const int rank = inst.operand(0)->shape().rank();
  for (int64_t d : inst.dimensions()) {
    if (d < 0 || d >= rank) return InvalidArgument("dimension ", d, " is out of range for rank ", rank);
  }
  step.run = run;
  return OkStatus();
}

Status RunIota(const Step& step, Frame& frame, RunContext& ctx) {
  const Shape& s = step.inst->shape();
  std::shared_ptr<Array> out = NewArray(s, ctx);
  XS_ASSIGN_OR_RETURN(Array a, kernels::Iota(s.dtype(), s.dims(), *step.inst->attrs().iota_dimension, out.get()));
  frame.slots[step.out] = OwnedSlot(a.data() == out->data() ? std::move(out) : AdoptArray(std::move(a), ctx));
  return OkStatus();
}

Status PrepareIota(const Instruction& inst, Step& step, const Program&) {
  const auto& d = inst.attrs().iota_dimension;
  if (!inst.shape().IsArray() || !d || *d < 0 || *d >= inst.shape().rank()) {
    return InvalidArgument("iota_dimension out of range for ", inst.shape().ToString(false));
  }
  if (!kernels::IsElementwiseDType(inst.shape().dtype())) {
    return UnsupportedInstruction(inst, StrCat("element type ", DTypeName(inst.shape().dtype())));
  }
  step.run = &RunIota;
  return OkStatus();
}

Status RunIdScalar(const Step& step, Frame& frame, RunContext& ctx) {
  const int64_t v = step.inst->opcode() == Opcode::kPartitionId ? ctx.options.partition_id
                                                                 : ctx.options.replica_id;
  std::shared_ptr<Array> out = NewArray(step.inst->shape(), ctx);
  out->SetDouble(0, static_cast<double>(v));
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status RunGetDimensionSize(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& in = OperandArray(step, frame, 0);
  std::shared_ptr<Array> out = NewArray(step.inst->shape(), ctx);
  out->SetDouble(0, static_cast<double>(in.dims()[step.inst->dimensions()[0]]));
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status PrepareTranspose(const Instruction& inst, Step& step, const Program&) {
  XS_RETURN_IF_ERROR(PrepareDimsOp(inst, step, &RunTranspose));
  if (static_cast<int>(inst.dimensions().size()) != inst.operand(0)->shape().rank()) {
    return InvalidArgument("transpose dimensions must be a permutation of the operand dims");
  }
  return OkStatus();
}
Status PrepareReverse(const Instruction& inst, Step& step, const Program&) {
  return PrepareDimsOp(inst, step, &RunReverse);
}
Status PrepareGetDimensionSize(const Instruction& inst, Step& step, const Program&) {
  if (inst.dimensions().size() != 1) return InvalidArgument("get-dimension-size needs dimensions={d}");
  return PrepareDimsOp(inst, step, &RunGetDimensionSize);
}

}  // namespace

void RegisterShapeHandlers(HandlerTable& t) {
  auto set = [&t](Opcode op, PrepareFn f) { t[static_cast<int>(op)] = f; };
  set(Opcode::kConstant, &PrepareConstant);
  set(Opcode::kTuple, &PrepareTuple);
  set(Opcode::kGetTupleElement, &PrepareGetTupleElement);
  set(Opcode::kReshape, &PrepareReshape);
  set(Opcode::kBitcast, &PrepareReshape);  // row-major: a bitcast with equal element counts is a reshape
  set(Opcode::kBroadcast, &PrepareEmitting<&PrepareBroadcast>);
  set(Opcode::kTranspose, &PrepareEmitting<&PrepareTranspose>);
  set(Opcode::kSlice, &PrepareEmitting<&PrepareSlice>);
  set(Opcode::kDynamicSlice, &PrepareEmitting<&PrepareDynamicSlice>);
  set(Opcode::kDynamicUpdateSlice, &PrepareDynamicUpdateSlice);
  set(Opcode::kConcatenate, &PrepareEmitting<&PrepareConcatenate>);
  set(Opcode::kPad, &PrepareEmitting<&PreparePad>);
  set(Opcode::kReverse, &PrepareEmitting<&PrepareReverse>);
  set(Opcode::kIota, &PrepareEmitting<&PrepareIota>);
  set(Opcode::kAfterAll, &PrepareSimple<&RunToken>);
  set(Opcode::kAddDependency, &PrepareSimple<&RunPassThrough>);
  set(Opcode::kOptimizationBarrier, &PrepareSimple<&RunPassThrough>);
  set(Opcode::kDomain, &PrepareSimple<&RunPassThrough>);
  set(Opcode::kPartitionId, &PrepareSimple<&RunIdScalar>);
  set(Opcode::kReplicaId, &PrepareSimple<&RunIdScalar>);
  set(Opcode::kGetDimensionSize, &PrepareGetDimensionSize);
}

}  // namespace xs
