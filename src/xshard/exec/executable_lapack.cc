// Executor handlers for JAX's LAPACK custom-calls on CPU beyond potrf / getrf / trsm
// (executable_extra_ops.cc): lapack_<s|d|c|z><routine>_ffi for geqrf, geqp3, orgqr / ungqr,
// ormqr / unmqr, syevd / heevd, gesdd, gesvd, geev, gees, gehrd, sytrd / hetrd and gtsv
// (kernels/linalg_lapack.h). Prepare reads the FFI attributes of backend_config (`mode = 86 : ui8`,
// `low = 1 : i32`, `left = true`) and checks the operands and the result tuple against the shapes
// JAX's lowering (jax/_src/lax/linalg.py) gives, so a malformed call fails at plan time naming
// the instruction.
#include <memory>
#include <string>

#include "xshard/exec/executable_plan.h"
#include "xshard/kernels/linalg_lapack.h"

namespace xs {
namespace lapack_exec {
namespace {

enum class Routine { kGeqrf, kGeqp3, kOrgqr, kOrmqr, kSyevd, kGesdd, kGesvd, kGeev, kGees, kGehrd, kSytrd, kGtsv };
enum class Kind { kAny, kReal, kComplex };  // which of s / d / c / z the routine has

struct RoutineName {
  std::string_view name;
  Routine routine;
  Kind kind;
};
constexpr RoutineName kRoutines[] = {
    {"geqrf", Routine::kGeqrf, Kind::kAny},     {"geqp3", Routine::kGeqp3, Kind::kAny},
    {"orgqr", Routine::kOrgqr, Kind::kReal},    {"ungqr", Routine::kOrgqr, Kind::kComplex},
    {"ormqr", Routine::kOrmqr, Kind::kReal},    {"unmqr", Routine::kOrmqr, Kind::kComplex},
    {"syevd", Routine::kSyevd, Kind::kReal},    {"heevd", Routine::kSyevd, Kind::kComplex},
    {"gesdd", Routine::kGesdd, Kind::kAny},     {"gesvd", Routine::kGesvd, Kind::kAny},
    {"geev", Routine::kGeev, Kind::kAny},       {"gees", Routine::kGees, Kind::kAny},
    {"gehrd", Routine::kGehrd, Kind::kAny},     {"sytrd", Routine::kSytrd, Kind::kReal},
    {"hetrd", Routine::kSytrd, Kind::kComplex}, {"gtsv", Routine::kGtsv, Kind::kAny},
};

struct LapackTarget {
  Routine routine;
  DType dtype;  // the element type the s / d / c / z letter names
};

// lapack_<s|d|c|z><routine>_ffi of one of kRoutines (with a letter the routine has), or nullopt.
std::optional<LapackTarget> ParseLapackTarget(std::string_view target) {
  constexpr std::string_view kPrefix = "lapack_", kSuffix = "_ffi";
  if (target.size() <= kPrefix.size() + 1 + kSuffix.size() || target.substr(0, kPrefix.size()) != kPrefix ||
      target.substr(target.size() - kSuffix.size()) != kSuffix) {
    return std::nullopt;
  }
  const char letter = target[kPrefix.size()];
  const std::string_view name = target.substr(kPrefix.size() + 1, target.size() - kPrefix.size() - 1 - kSuffix.size());
  DType dtype;
  switch (letter) {
    case 's': dtype = DType::kF32; break;
    case 'd': dtype = DType::kF64; break;
    case 'c': dtype = DType::kC64; break;
    case 'z': dtype = DType::kC128; break;
    default: return std::nullopt;
  }
  const bool complex = letter == 'c' || letter == 'z';
  for (const RoutineName& r : kRoutines) {
    if (r.name != name) continue;
    if ((r.kind == Kind::kReal && complex) || (r.kind == Kind::kComplex && !complex)) return std::nullopt;
    return LapackTarget{r.routine, dtype};
  }
  return std::nullopt;
}

struct LapackParams : ExtraParams {
  Routine routine = Routine::kGeqrf;
  bool lower = true;       // syevd, sytrd: uplo = 'L'
  bool vectors = true;     // syevd: mode 'V'; gees: mode 'V'
  bool left = true;        // ormqr: left; geev: compute_left = 'V'
  bool right = true;       // geev: compute_right = 'V'
  bool transpose = false;  // ormqr
  kernels::SvdOptions svd;
  int ilo = 1, ihi = 0;  // gehrd: low, high
};

// "custom-call 'name' (target): what".
template <typename... Args>
Status CallError(const Instruction& inst, std::string_view target, const Args&... what) {
  return InvalidArgument("custom-call '", inst.name(), "' (", target, "): ", what...);
}

// The text of field `name` in the FFI backend_config (`{mode = 86 : ui8, left = true}`): "86 : ui8",
// "true", or nullopt when absent.
std::optional<std::string_view> FfiField(const Instruction& inst, std::string_view name) {
  const std::string_view text = inst.attrs().backend_config ? std::string_view(*inst.attrs().backend_config) : "";
  for (size_t pos = text.find(name); pos != std::string_view::npos; pos = text.find(name, pos + 1)) {
    const bool starts = pos == 0 || text[pos - 1] == '{' || text[pos - 1] == ' ' || text[pos - 1] == ',';
    size_t q = pos + name.size();
    while (q < text.size() && text[q] == ' ') ++q;
    if (!starts || q >= text.size() || text[q] != '=') continue;
    ++q;
    while (q < text.size() && text[q] == ' ') ++q;
    size_t e = q;
    while (e < text.size() && text[e] != ',' && text[e] != '}') ++e;
    std::string_view v = text.substr(q, e - q);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v;
  }
  return std::nullopt;
}

// An integer field ("86 : ui8", "4 : i32"), `fallback` when absent.
StatusOr<int64_t> FfiInt(const Instruction& inst, std::string_view target, std::string_view name,
                         std::optional<int64_t> fallback) {
  std::optional<std::string_view> v = FfiField(inst, name);
  if (!v) {
    if (fallback) return *fallback;
    return CallError(inst, target, "backend_config needs the field ", name, " (as JAX's lowering writes it, e.g. {",
                     name, " = 86 : ui8})");
  }
  std::string_view digits = v->substr(0, v->find(':'));
  while (!digits.empty() && digits.back() == ' ') digits.remove_suffix(1);
  int64_t out = 0;
  if (!ParseInt64(digits, &out))
    return CallError(inst, target, "backend_config field ", name, " = ", *v, " is no integer");
  return out;
}

// A character field (`mode = 86 : ui8` is 'V') that must be one of `allowed`.
StatusOr<char> FfiChar(const Instruction& inst, std::string_view target, std::string_view name,
                       std::optional<char> fallback, std::string_view allowed) {
  XS_ASSIGN_OR_RETURN(int64_t code, FfiInt(inst, target, name, fallback));
  if (code < 0 || code > 127 || allowed.find(static_cast<char>(code)) == std::string_view::npos) {
    std::string list;
    for (char c : allowed) list += StrCat(list.empty() ? "" : ", ", "'", std::string(1, c), "' (", int{c}, ")");
    return CallError(inst, target, "backend_config field ", name, " = ", code, " is not one of ", list);
  }
  return static_cast<char>(code);
}

// A bool field (`left = true`).
StatusOr<bool> FfiBool(const Instruction& inst, std::string_view target, std::string_view name) {
  std::optional<std::string_view> v = FfiField(inst, name);
  if (v && (*v == "true" || *v == "false")) return *v == "true";
  return CallError(inst, target, "backend_config needs the field ", name,
                   " = true or false (as JAX's lowering writes it)");
}

std::vector<int64_t> Batch(const Shape& s, int minor) { return {s.dims().begin(), s.dims().end() - minor}; }
std::vector<int64_t> Plus(std::vector<int64_t> dims, std::initializer_list<int64_t> minor) {
  dims.insert(dims.end(), minor.begin(), minor.end());
  return dims;
}
DType RealOf(DType t) { return t == DType::kC64 ? DType::kF32 : t == DType::kC128 ? DType::kF64 : t; }
DType ComplexOf(DType t) { return t == DType::kF32 ? DType::kC64 : t == DType::kF64 ? DType::kC128 : t; }

// The result JAX's lowering gives a call on operands `ops` (checked here, dims >= 0).
StatusOr<Shape> ExpectedResult(const Instruction& inst, std::string_view target, const LapackParams& p,
                               const std::vector<Shape>& ops) {
  const Shape& a = ops[0];
  const DType t = a.dtype(), rt = RealOf(t), s32 = DType::kS32;
  const bool square = p.routine == Routine::kSyevd || p.routine == Routine::kGeev || p.routine == Routine::kGees ||
                      p.routine == Routine::kGehrd || p.routine == Routine::kSytrd;
  const int matrix_op = p.routine == Routine::kGtsv ? 3 : 0;
  const Shape& m = ops[matrix_op];
  if (m.rank() < 2 || (square && m.dims()[m.rank() - 1] != m.dims()[m.rank() - 2])) {
    return CallError(inst, target, "operand ", matrix_op, " must be ",
                     square ? "square matrices [..., n, n]" : "matrices [..., m, n]", ", got ", m.ToString(false));
  }
  const int64_t rows = m.dims()[m.rank() - 2], cols = m.dims().back(), k = std::min(rows, cols);
  const std::vector<int64_t> batch = Batch(m, 2);
  auto vec = [&](int i, DType dt, int64_t size) -> Status {
    if (ops[i].IsArray() && ops[i].dtype() == dt && ops[i].dims() == Plus(batch, {size})) return OkStatus();
    return CallError(inst, target, "operand ", i, " must be ", Shape(dt, Plus(batch, {size})).ToString(false),
                     " for a matrix operand ", m.ToString(false), ", got ", ops[i].ToString(false));
  };
  const Shape info(s32, batch);
  switch (p.routine) {
    case Routine::kGeqrf: return Shape::Tuple({a, Shape(t, Plus(batch, {k}))});
    case Routine::kGeqp3:
      XS_RETURN_IF_ERROR(vec(1, s32, cols));
      return Shape::Tuple({a, ops[1], Shape(t, Plus(batch, {k}))});
    case Routine::kOrgqr:
      if (ops[1].rank() < 1 || ops[1].dims().back() > cols || rows < cols) {
        return CallError(inst, target, "needs a [..., m, n] with m >= n and tau [..., k] with k <= n, got ",
                         a.ToString(false), " and ", ops[1].ToString(false));
      }
      XS_RETURN_IF_ERROR(vec(1, t, ops[1].dims().back()));
      return a;
    case Routine::kOrmqr: {
      const Shape& c = ops[2];
      const int64_t order = c.rank() == a.rank() ? c.dims()[c.rank() - (p.left ? 2 : 1)] : -1;
      if (c.dtype() != t || c.rank() != a.rank() || Batch(c, 2) != batch || rows != order || ops[1].rank() < 1 ||
          ops[1].dims().back() > std::min(cols, order)) {
        return CallError(inst, target,
                         "needs reflectors a [..., r, n], tau [..., k] (k <= n, r) and c of a's type and ",
                         "batch with r = c's ", p.left ? "rows" : "columns", ", got a ", a.ToString(false), ", tau ",
                         ops[1].ToString(false), ", c ", c.ToString(false));
      }
      XS_RETURN_IF_ERROR(vec(1, t, ops[1].dims().back()));
      return c;
    }
    case Routine::kSyevd: return Shape::Tuple({a, Shape(rt, Plus(batch, {rows})), info});
    case Routine::kGesdd:
    case Routine::kGesvd: {
      const bool full = p.svd.mode == 'A' || (p.svd.mode == 'N' && p.svd.full_uv);
      return Shape::Tuple({a, Shape(rt, Plus(batch, {k})), Shape(t, Plus(batch, {rows, full ? rows : k})),
                           Shape(t, Plus(batch, {full ? cols : k, cols})), info});
    }
    case Routine::kGeev: {
      const Shape w(t, Plus(batch, {rows})), v(ComplexOf(t), a.dims());
      if (IsComplex(t)) return Shape::Tuple({w, v, v, info});
      return Shape::Tuple({w, w, v, v, info});
    }
    case Routine::kGees: {
      const Shape w(t, Plus(batch, {rows}));
      if (IsComplex(t)) return Shape::Tuple({a, a, w, info, info});
      return Shape::Tuple({a, a, w, w, info, info});
    }
    case Routine::kGehrd:
      if (rows < 1) return CallError(inst, target, "needs matrices of order >= 1, got ", a.ToString(false));
      return Shape::Tuple({a, Shape(t, Plus(batch, {rows - 1})), info});
    case Routine::kSytrd:
      if (rows < 1) return CallError(inst, target, "needs matrices of order >= 1, got ", a.ToString(false));
      return Shape::Tuple({a, Shape(rt, Plus(batch, {rows})), Shape(rt, Plus(batch, {rows - 1})),
                           Shape(t, Plus(batch, {rows - 1})), info});
    case Routine::kGtsv:
      for (int i = 0; i < 3; ++i) XS_RETURN_IF_ERROR(vec(i, m.dtype(), rows));
      return Shape::Tuple({ops[0], ops[1], ops[2], ops[3], info});
  }
  return CallError(inst, target, "unknown routine");
}

Status RunLapack(const Step& step, Frame& frame, RunContext& ctx) {
  const auto& p = static_cast<const LapackParams&>(step.extra());
  auto op = [&](int i) -> const Array& { return OperandArray(step, frame, i); };
  StatusOr<std::vector<Array>> out = std::vector<Array>{};
  switch (p.routine) {
    case Routine::kGeqrf: out = kernels::LapackGeqrf(op(0)); break;
    case Routine::kGeqp3: out = kernels::LapackGeqp3(op(0), op(1)); break;
    case Routine::kSyevd: out = kernels::LapackSyevd(op(0), p.lower, p.vectors); break;
    case Routine::kGesdd:
    case Routine::kGesvd: out = kernels::LapackSvd(op(0), p.svd); break;
    case Routine::kGeev: out = kernels::LapackGeev(op(0), p.left, p.right); break;
    case Routine::kGees: out = kernels::LapackGees(op(0), p.vectors); break;
    case Routine::kGehrd: out = kernels::LapackGehrd(op(0), p.ilo, p.ihi); break;
    case Routine::kSytrd: out = kernels::LapackSytrd(op(0), p.lower); break;
    case Routine::kGtsv: out = kernels::LapackGtsv(op(0), op(1), op(2), op(3)); break;
    case Routine::kOrgqr:
    case Routine::kOrmqr: {
      StatusOr<Array> a = p.routine == Routine::kOrgqr ? kernels::LapackOrgqr(op(0), op(1))
                                                       : kernels::LapackOrmqr(op(0), op(1), op(2), p.left, p.transpose);
      if (!a.ok()) return a.status();
      SetArray(step, frame, ctx, std::move(a).value());
      return OkStatus();
    }
  }
  if (!out.ok()) return out.status();
  SetTuple(step, frame, ctx, std::move(out).value());
  return OkStatus();
}

constexpr int kOperandCounts[] = {1, 2, 2, 3, 1, 1, 1, 1, 1, 1, 1, 4};  // by Routine

Status Prepare(const Instruction& inst, std::string_view target, const LapackTarget& lt, Step& step) {
  auto p = std::make_shared<LapackParams>();
  p->routine = lt.routine;
  const int want_ops = kOperandCounts[static_cast<int>(lt.routine)];
  if (inst.operand_count() != want_ops) {
    return CallError(inst, target, "takes ", want_ops, " operand(s), got ", inst.operand_count());
  }
  std::vector<Shape> ops;
  for (int i = 0; i < inst.operand_count(); ++i) {
    const Shape& s = inst.operand(i)->shape();
    const bool int_operand = lt.routine == Routine::kGeqp3 && i == 1;
    if (!s.IsArray() || (!int_operand && s.dtype() != lt.dtype)) {
      return CallError(inst, target, "operand ", i, " is ", s.ToString(false), "; the target's letter (s, d, c, z) ",
                       "takes ", DTypeName(lt.dtype), " arrays: use the target of the operand's type");
    }
    for (int64_t d : s.dims()) {
      if (d < 0) return CallError(inst, target, "operand ", i, " has a dynamic dim: ", s.ToString(false));
    }
    ops.push_back(s.WithoutLayout());
  }
  switch (lt.routine) {
    case Routine::kSyevd: {
      XS_ASSIGN_OR_RETURN(char mode, FfiChar(inst, target, "mode", 'V', "VN"));
      XS_ASSIGN_OR_RETURN(char uplo, FfiChar(inst, target, "uplo", 'L', "LU"));
      p->vectors = mode == 'V';
      p->lower = uplo == 'L';
      break;
    }
    case Routine::kSytrd: {
      XS_ASSIGN_OR_RETURN(char uplo, FfiChar(inst, target, "uplo", 'L', "LU"));
      p->lower = uplo == 'L';
      break;
    }
    case Routine::kGesdd:
    case Routine::kGesvd: {
      XS_ASSIGN_OR_RETURN(p->svd.mode, FfiChar(inst, target, "mode", std::nullopt, "ASN"));
      p->svd.divide_and_conquer = lt.routine == Routine::kGesdd;
      // Mode 'N' computes no vectors, but JAX still gives u / vt results: full ([m, m], [n, n])
      // or economy ([m, k], [k, n]) by its full_matrices.
      const Shape& s = inst.shape();
      const Shape& a = ops[0];
      if (a.rank() >= 2 && s.IsTuple() && s.tuple_size() == 5 && s.tuple_shape(2).rank() >= 2 &&
          s.tuple_shape(3).rank() >= 2) {
        const Shape &u = s.tuple_shape(2), &vt = s.tuple_shape(3);
        p->svd.full_uv = u.dims().back() == a.dims()[a.rank() - 2] && vt.dims()[vt.rank() - 2] == a.dims().back();
      }
      break;
    }
    case Routine::kGeev: {
      XS_ASSIGN_OR_RETURN(char l, FfiChar(inst, target, "compute_left", std::nullopt, "VN"));
      XS_ASSIGN_OR_RETURN(char r, FfiChar(inst, target, "compute_right", std::nullopt, "VN"));
      p->left = l == 'V';
      p->right = r == 'V';
      break;
    }
    case Routine::kGees: {
      XS_ASSIGN_OR_RETURN(char mode, FfiChar(inst, target, "mode", std::nullopt, "VN"));
      XS_ASSIGN_OR_RETURN(char sort, FfiChar(inst, target, "sort", 'N', "NS"));
      if (sort != 'N') {
        return CallError(inst, target, "sort = 'S' (ordering the eigenvalues) is not implemented, as in jaxlib; ",
                         "call schur with sort_eig_vals=False");
      }
      p->vectors = mode == 'V';
      break;
    }
    case Routine::kGehrd: {
      const int64_t n = ops[0].rank() >= 1 ? ops[0].dims().back() : 0;
      XS_ASSIGN_OR_RETURN(int64_t low, FfiInt(inst, target, "low", 1));
      XS_ASSIGN_OR_RETURN(int64_t high, FfiInt(inst, target, "high", n));
      if (low < 1 || low > std::max<int64_t>(1, n) || high < std::min(low, n) || high > n) {
        return CallError(inst, target, "needs 1 <= low <= high <= n = ", n, ", got low = ", low, ", high = ", high);
      }
      p->ilo = static_cast<int>(low);
      p->ihi = static_cast<int>(high);
      break;
    }
    case Routine::kOrmqr: {
      XS_ASSIGN_OR_RETURN(p->left, FfiBool(inst, target, "left"));
      XS_ASSIGN_OR_RETURN(p->transpose, FfiBool(inst, target, "transpose"));
      break;
    }
    default: break;
  }
  XS_ASSIGN_OR_RETURN(Shape want, ExpectedResult(inst, target, *p, ops));
  if (!inst.shape().Compatible(want)) {
    return CallError(
        inst, target, "the result must be ", want.ToString(false), " for operand(s) ",
        [&] {
          std::string s;
          for (const Shape& o : ops) s += StrCat(s.empty() ? "" : ", ", o.ToString(false));
          return s;
        }(),
        " (as JAX's lowering gives it), got ", inst.shape().ToString(false));
  }
  step.SetPayload(ExtraPayload{std::move(p)});
  step.run = &RunLapack;
  return OkStatus();
}

}  // namespace
}  // namespace lapack_exec

// Called by PrepareExtraCustomCall (executable_extra_ops.cc): sets *handled for the targets above.
Status PrepareLapackCustomCall(const Instruction& inst, std::string_view target, Step& step, bool* handled) {
  const std::optional<lapack_exec::LapackTarget> lt = lapack_exec::ParseLapackTarget(target);
  *handled = lt.has_value();
  if (!lt) return OkStatus();
  return lapack_exec::Prepare(inst, target, *lt, step);
}

}  // namespace xs
