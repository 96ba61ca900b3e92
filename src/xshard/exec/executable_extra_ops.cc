// Executor handlers for the ops outside the everyday set: topk (and the TopK custom-call),
// fft, cholesky, triangular-solve, rng, rng-bit-generator, batch-norm-*, ragged-dot, and the
// custom-calls JAX emits on CPU for linear algebra (lapack_?potrf_ffi, ?getrf, ?trsm here; the
// other LAPACK targets in executable_lapack.cc) and block-scaled dots. Each reads its attributes
// at plan time into a parameter block the step keeps.
#include <memory>
#include <string>

#include "xshard/kernels/batch_norm.h"
#include "xshard/kernels/fft.h"
#include "xshard/kernels/linalg.h"
#include "xshard/kernels/ragged_dot.h"
#include "xshard/kernels/parallel.h"
#include "xshard/kernels/random.h"
#include "xshard/kernels/topk.h"
#include "xshard/exec/executable_plan.h"

namespace xs {

// JAX's other LAPACK custom-calls (geqrf, syevd, gesdd, ...; executable_lapack.cc): sets *handled
// when `target` is one.
Status PrepareLapackCustomCall(const Instruction& inst, std::string_view target, Step& step, bool* handled);

namespace {

// ---- attribute readers (typed attributes parsed by text/; errors name a missing one) ----

template <typename T>
StatusOr<T> Required(const Instruction& inst, const std::optional<T>& v, std::string_view name,
                     std::string_view form) {
  if (!v) return InvalidArgument(OpcodeName(inst.opcode()), " '", inst.name(), "' needs ", name, "=", form);
  return *v;
}

// Parameters a step keeps (its ExtraPayload points at one of these).
struct TopKParams : ExtraParams {
  int64_t k = 0;
  bool largest = true;
};
struct FftParams : ExtraParams {
  kernels::FftType type = kernels::FftType::kFft;
  std::vector<int64_t> lengths;
};
struct CholeskyParams : ExtraParams {
  bool lower = false;
};
struct SolveParams : ExtraParams {
  kernels::TriangularSolveOptions options;
};
struct BatchNormParams : ExtraParams {
  double epsilon = 0;
  int64_t feature_index = 0;
};
struct RaggedParams : ExtraParams {
  kernels::RaggedDotDims dims;
};

template <typename P>
const P& Params(const Step& step) {
  return static_cast<const P&>(step.extra());
}

// ---- topk ----

Status RunTopK(const Step& step, Frame& frame, RunContext& ctx) {
  const auto& p = Params<TopKParams>(step);
  const int threads = IntraOpThreads(ctx);
  XS_ASSIGN_OR_RETURN(auto r, kernels::TopK(OperandArray(step, frame, 0), p.k, p.largest, threads));
  std::vector<Array> out;
  out.push_back(std::move(r.first));
  out.push_back(std::move(r.second));
  SetTuple(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status CheckTopKShape(const Instruction& inst, int64_t k) {
  const Shape& s = inst.shape();
  if (!s.IsTuple() || s.tuple_size() != 2 || !s.tuple_shape(1).IsArray() || s.tuple_shape(1).dtype() != DType::kS32 ||
      s.tuple_shape(0).rank() < 1 || s.tuple_shape(0).dims().back() != k) {
    return InvalidArgument("topk's result must be (values[..., k], s32[..., k]) with k=", k, ", got ",
                           s.ToString(false));
  }
  return OkStatus();
}

Status PrepareTopK(const Instruction& inst, Step& step, const Program&) {
  auto p = std::make_shared<TopKParams>();
  XS_ASSIGN_OR_RETURN(p->k, Required(inst, inst.attrs().k, "k", "N"));
  p->largest = inst.attrs().largest.value_or(true);
  XS_RETURN_IF_ERROR(CheckTopKShape(inst, p->k));
  step.SetPayload(ExtraPayload{std::move(p)});
  step.run = &RunTopK;
  return OkStatus();
}

// ---- fft ----

Status RunFft(const Step& step, Frame& frame, RunContext& ctx) {
  const auto& p = Params<FftParams>(step);
  XS_ASSIGN_OR_RETURN(Array out, kernels::Fft(OperandArray(step, frame, 0), p.type, p.lengths));
  SetArray(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status PrepareFft(const Instruction& inst, Step& step, const Program&) {
  auto p = std::make_shared<FftParams>();
  XS_ASSIGN_OR_RETURN(p->type, Required(inst, inst.attrs().fft_type, "fft_type", "FFT|IFFT|RFFT|IRFFT"));
  XS_ASSIGN_OR_RETURN(p->lengths, Required(inst, inst.attrs().fft_length, "fft_length", "{n,...}"));
  step.SetPayload(ExtraPayload{std::move(p)});
  step.run = &RunFft;
  return OkStatus();
}

// ---- cholesky, triangular-solve ----

Status RunCholesky(const Step& step, Frame& frame, RunContext& ctx) {
  XS_ASSIGN_OR_RETURN(Array out, kernels::Cholesky(OperandArray(step, frame, 0), Params<CholeskyParams>(step).lower));
  SetArray(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status PrepareCholesky(const Instruction& inst, Step& step, const Program&) {
  auto p = std::make_shared<CholeskyParams>();
  p->lower = inst.attrs().lower.value_or(false);
  step.SetPayload(ExtraPayload{std::move(p)});
  step.run = &RunCholesky;
  return OkStatus();
}

Status RunTriangularSolve(const Step& step, Frame& frame, RunContext& ctx) {
  XS_ASSIGN_OR_RETURN(Array out, kernels::TriangularSolve(OperandArray(step, frame, 0), OperandArray(step, frame, 1),
                                                          Params<SolveParams>(step).options));
  SetArray(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status PrepareTriangularSolve(const Instruction& inst, Step& step, const Program&) {
  auto p = std::make_shared<SolveParams>();
  const Attributes& a = inst.attrs();
  p->options.left_side = a.left_side.value_or(false);
  p->options.lower = a.lower.value_or(false);
  p->options.unit_diagonal = a.unit_diagonal.value_or(false);
  p->options.transpose_a = a.transpose_a.value_or(TransposeKind::kNoTranspose);
  step.SetPayload(ExtraPayload{std::move(p)});
  step.run = &RunTriangularSolve;
  return OkStatus();
}

// ---- rng, rng-bit-generator ----

Status RunRng(const Step& step, Frame& frame, RunContext& ctx) {
  // The stream is fixed by the instruction's name, so every run and every device draw the same
  // numbers (XLA leaves rng's values to the backend).
  const uint64_t seed = std::hash<std::string>{}(step.inst->name());
  XS_ASSIGN_OR_RETURN(Array out, kernels::Rng(*step.inst->attrs().distribution, OperandArray(step, frame, 0),
                                              OperandArray(step, frame, 1), step.inst->shape(), seed));
  SetArray(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status PrepareRng(const Instruction& inst, Step& step, const Program&) {
  if (!inst.attrs().distribution || inst.operand_count() != 2) {
    return InvalidArgument("rng needs two operands and distribution=rng_uniform or rng_normal");
  }
  step.run = &RunRng;
  return OkStatus();
}

Status RunRngBitGenerator(const Step& step, Frame& frame, RunContext& ctx) {
  const Shape& s = step.inst->shape();
  XS_ASSIGN_OR_RETURN(auto r, kernels::RngBitGenerator(step.inst->attrs().rng_algorithm.value_or(RngAlgorithm::kDefault),
                                                       OperandArray(step, frame, 0), s.IsTuple() ? s.tuple_shape(1) : s));
  if (!s.IsTuple()) {  // the bits alone (the new state is dropped)
    SetArray(step, frame, ctx, std::move(r.second));
    return OkStatus();
  }
  std::vector<Array> out;
  out.push_back(std::move(r.first));
  out.push_back(std::move(r.second));
  SetTuple(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status PrepareRngBitGenerator(const Instruction& inst, Step& step, const Program&) {
  const Shape& s = inst.shape();
  if (!s.IsArray() && (!s.IsTuple() || s.tuple_size() != 2 || !s.tuple_shape(1).IsArray())) {
    return InvalidArgument("rng-bit-generator's result must be (state, bits) or bits, got ", s.ToString(false));
  }
  step.run = &RunRngBitGenerator;
  return OkStatus();
}

// ---- batch norm ----

StatusOr<std::shared_ptr<BatchNormParams>> ReadBatchNorm(const Instruction& inst) {
  auto p = std::make_shared<BatchNormParams>();
  XS_ASSIGN_OR_RETURN(p->epsilon, Required(inst, inst.attrs().epsilon, "epsilon", "X"));
  XS_ASSIGN_OR_RETURN(p->feature_index, Required(inst, inst.attrs().feature_index, "feature_index", "N"));
  return p;
}

Status RunBatchNormTraining(const Step& step, Frame& frame, RunContext& ctx) {
  const auto& p = Params<BatchNormParams>(step);
  XS_ASSIGN_OR_RETURN(std::vector<Array> out,
                      kernels::BatchNormTraining(OperandArray(step, frame, 0), OperandArray(step, frame, 1),
                                                 OperandArray(step, frame, 2), p.epsilon, p.feature_index));
  SetTuple(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status RunBatchNormInference(const Step& step, Frame& frame, RunContext& ctx) {
  const auto& p = Params<BatchNormParams>(step);
  XS_ASSIGN_OR_RETURN(Array out, kernels::BatchNormInference(
                                     OperandArray(step, frame, 0), OperandArray(step, frame, 1),
                                     OperandArray(step, frame, 2), OperandArray(step, frame, 3),
                                     OperandArray(step, frame, 4), p.epsilon, p.feature_index));
  SetArray(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status RunBatchNormGrad(const Step& step, Frame& frame, RunContext& ctx) {
  const auto& p = Params<BatchNormParams>(step);
  XS_ASSIGN_OR_RETURN(std::vector<Array> out,
                      kernels::BatchNormGrad(OperandArray(step, frame, 0), OperandArray(step, frame, 1),
                                             OperandArray(step, frame, 2), OperandArray(step, frame, 3),
                                             OperandArray(step, frame, 4), p.epsilon, p.feature_index));
  SetTuple(step, frame, ctx, std::move(out));
  return OkStatus();
}

template <RunFn kRun>
Status PrepareBatchNorm(const Instruction& inst, Step& step, const Program&) {
  XS_ASSIGN_OR_RETURN(step.SetPayload(ExtraPayload{}).params, ReadBatchNorm(inst));
  step.run = kRun;
  return OkStatus();
}

// ---- ragged-dot ----

Status RunRaggedDot(const Step& step, Frame& frame, RunContext& ctx) {
  XS_ASSIGN_OR_RETURN(Array out, kernels::RaggedDot(OperandArray(step, frame, 0), OperandArray(step, frame, 1),
                                                    OperandArray(step, frame, 2), Params<RaggedParams>(step).dims,
                                                    step.inst->shape()));
  SetArray(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status PrepareRaggedDot(const Instruction& inst, Step& step, const Program&) {
  auto p = std::make_shared<RaggedParams>();
  p->dims.dot = inst.attrs().dot.value_or(DotDimensionNumbers{});
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> ragged, Required(inst, inst.attrs().lhs_ragged_dims, "lhs_ragged_dims", "{d}"));
  if (ragged.size() != 1) return InvalidArgument("ragged-dot needs exactly one lhs_ragged_dims entry");
  p->dims.lhs_ragged = ragged[0];
  p->dims.rhs_group = inst.attrs().rhs_group_dims.value_or(std::vector<int64_t>{});
  step.SetPayload(ExtraPayload{std::move(p)});
  step.run = &RunRaggedDot;
  return OkStatus();
}

// ---- JAX's LAPACK custom-calls on CPU (jnp.linalg / jax.scipy.linalg) ----

// A character field of the FFI backend_config, `{uplo = 76 : ui8, ...}`: the ASCII code, or
// `fallback` when absent.
StatusOr<char> FfiChar(const Instruction& inst, std::string_view name, char fallback) {
  const std::string_view text = inst.attrs().backend_config ? std::string_view(*inst.attrs().backend_config) : "";
  size_t pos = 0;
  while ((pos = text.find(name, pos)) != std::string_view::npos) {
    const bool starts = pos == 0 || text[pos - 1] == '{' || text[pos - 1] == ' ' || text[pos - 1] == ',';
    size_t q = pos + name.size();
    while (q < text.size() && text[q] == ' ') ++q;
    if (starts && q < text.size() && text[q] == '=') {
      ++q;
      while (q < text.size() && text[q] == ' ') ++q;
      size_t e = q;
      while (e < text.size() && text[e] >= '0' && text[e] <= '9') ++e;
      int64_t code = 0;
      if (!ParseInt64(text.substr(q, e - q), &code) || code < 0 || code > 127) {
        return InvalidArgument("custom-call ", inst.name(), ": backend_config field ", name, " is not a character code");
      }
      return static_cast<char>(code);
    }
    pos += name.size();
  }
  return fallback;
}

bool IsLapackTarget(std::string_view target, std::string_view routine) {
  // lapack_<s|d|c|z><routine>_ffi
  return target.size() == routine.size() + 12 && target.substr(0, 6) == "lapack" && target[6] == '_' &&
         std::string_view("sdcz").find(target[7]) != std::string_view::npos && target.substr(8, routine.size()) == routine &&
         target.substr(8 + routine.size()) == "_ffi";
}

Status RunLapackPotrf(const Step& step, Frame& frame, RunContext& ctx) {
  XS_ASSIGN_OR_RETURN(std::vector<Array> out,
                      kernels::LapackPotrf(OperandArray(step, frame, 0), Params<CholeskyParams>(step).lower));
  SetTuple(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status RunLapackGetrf(const Step& step, Frame& frame, RunContext& ctx) {
  XS_ASSIGN_OR_RETURN(std::vector<Array> out, kernels::LapackGetrf(OperandArray(step, frame, 0)));
  SetTuple(step, frame, ctx, std::move(out));
  return OkStatus();
}

Status PrepareLapack(const Instruction& inst, std::string_view target, Step& step) {
  const Shape& s = inst.shape();
  if (IsLapackTarget(target, "potrf")) {
    if (inst.operand_count() != 1 || !s.IsTuple() || s.tuple_size() != 2) {
      return InvalidArgument("custom-call ", target, " needs one operand and a (factor, info) result");
    }
    auto p = std::make_shared<CholeskyParams>();
    XS_ASSIGN_OR_RETURN(char uplo, FfiChar(inst, "uplo", 'L'));
    p->lower = uplo == 'L';
    step.SetPayload(ExtraPayload{std::move(p)});
    step.run = &RunLapackPotrf;
    return OkStatus();
  }
  if (IsLapackTarget(target, "getrf")) {
    if (inst.operand_count() != 1 || !s.IsTuple() || s.tuple_size() != 3) {
      return InvalidArgument("custom-call ", target, " needs one operand and a (lu, pivots, info) result");
    }
    step.run = &RunLapackGetrf;
    return OkStatus();
  }
  // trsm: (a, b) -> x, b's shape.
  if (inst.operand_count() < 2 || !s.IsArray()) {
    return InvalidArgument("custom-call ", target, " needs (a, b) and an array result");
  }
  auto p = std::make_shared<SolveParams>();
  XS_ASSIGN_OR_RETURN(char side, FfiChar(inst, "side", 'L'));
  XS_ASSIGN_OR_RETURN(char uplo, FfiChar(inst, "uplo", 'L'));
  XS_ASSIGN_OR_RETURN(char trans, FfiChar(inst, "trans_x", 'N'));
  XS_ASSIGN_OR_RETURN(char diag, FfiChar(inst, "diag", 'N'));
  p->options.left_side = side == 'L';
  p->options.lower = uplo == 'L';
  p->options.unit_diagonal = diag == 'U';
  p->options.transpose_a = trans == 'T'   ? kernels::TransposeA::kTranspose
                           : trans == 'C' ? kernels::TransposeA::kAdjoint
                                          : kernels::TransposeA::kNoTranspose;
  step.SetPayload(ExtraPayload{std::move(p)});
  step.run = &RunTriangularSolve;
  return OkStatus();
}

Status RunBlockScaledDot(const Step& step, Frame& frame, RunContext& ctx) {
  const int n = static_cast<int>(step.operands.size());
  XS_ASSIGN_OR_RETURN(Array out, kernels::BlockScaledDot(OperandArray(step, frame, 0), OperandArray(step, frame, 1),
                                                         n > 2 ? &OperandArray(step, frame, 2) : nullptr,
                                                         n > 3 ? &OperandArray(step, frame, 3) : nullptr,
                                                         step.inst->shape()));
  SetArray(step, frame, ctx, std::move(out));
  return OkStatus();
}

}  // namespace

Status PrepareExtraCustomCall(const Instruction& inst, Step& step, const Program& program, bool* handled) {
  const std::string_view target = inst.attrs().custom_call_target ? std::string_view(*inst.attrs().custom_call_target) : "";
  *handled = false;
  if (target == "TopK") {
    // jax.lax.top_k: the k largest along the last dim; k is the result's last dim.
    *handled = true;
    const Shape& s = inst.shape();
    if (inst.operand_count() != 1 || !s.IsTuple() || s.tuple_size() != 2 || s.tuple_shape(0).rank() < 1) {
      return InvalidArgument("custom-call TopK needs one operand and a (values, indices) result, got ", s.ToString(false));
    }
    auto p = std::make_shared<TopKParams>();
    p->k = s.tuple_shape(0).dims().back();
    p->largest = inst.attrs().largest.value_or(true);
    XS_RETURN_IF_ERROR(CheckTopKShape(inst, p->k));
    step.SetPayload(ExtraPayload{std::move(p)});
    step.run = &RunTopK;
    return OkStatus();
  }
  if (IsLapackTarget(target, "potrf") || IsLapackTarget(target, "getrf") || IsLapackTarget(target, "trsm")) {
    *handled = true;
    return PrepareLapack(inst, target, step);
  }
  XS_RETURN_IF_ERROR(PrepareLapackCustomCall(inst, target, step, handled));
  if (*handled) return OkStatus();
  if (IsSpmdInternalCustomCall(target)) {
    *handled = true;
    return PrepareSpmdInternalCustomCall(inst, target, step);
  }
  if (target == "__op$block_scaled_dot") {
    *handled = true;
    if (inst.operand_count() < 2 || inst.operand_count() > 4 || !inst.shape().IsArray()) {
      return InvalidArgument("custom-call __op$block_scaled_dot needs (lhs, rhs[, lhs_scale[, rhs_scale]]) and an array result");
    }
    step.run = &RunBlockScaledDot;
    return OkStatus();
  }
  (void)program;
  return OkStatus();
}

void RegisterScanHandlers(HandlerTable& t);  // executable_scan.cc

void RegisterExtraOpHandlers(HandlerTable& t) {
  RegisterScanHandlers(t);
  auto set = [&t](Opcode op, PrepareFn f) { t[static_cast<int>(op)] = f; };
  set(Opcode::kTopK, &PrepareTopK);
  set(Opcode::kFft, &PrepareFft);
  set(Opcode::kCholesky, &PrepareCholesky);
  set(Opcode::kTriangularSolve, &PrepareTriangularSolve);
  set(Opcode::kRng, &PrepareRng);
  set(Opcode::kRngBitGenerator, &PrepareRngBitGenerator);
  set(Opcode::kBatchNormTraining, &PrepareBatchNorm<&RunBatchNormTraining>);
  set(Opcode::kBatchNormInference, &PrepareBatchNorm<&RunBatchNormInference>);
  set(Opcode::kBatchNormGrad, &PrepareBatchNorm<&RunBatchNormGrad>);
  set(Opcode::kRaggedDot, &PrepareRaggedDot);
}

}  // namespace xs
