// Kernels for cholesky, triangular-solve and JAX's lapack_?potrf_ffi / ?trsm_ffi custom-calls
// (?getrf_ffi: kernel_codegen_linalg_lapack.cc). One thread block per batch matrix (grid-stride
// over the batch); its threads share out each step of the sequential algorithm, with a barrier
// between steps. Every value is computed in f64 in the CPU executor's operation order
// (kernels/linalg.cc); the matrix being worked on lives in dynamic shared memory as f64 when it
// fits in 44 KiB (the CPU's numerics exactly, rounded once at the end), else in the result
// buffer in global memory (each stored value rounded to the element type, as LAPACK's own
// single-precision routines do).
//   cholesky / potrf, left-looking: for column j one thread forms the diagonal a_jj - sum L_jk^2
//   (the CPU's order), then the block's threads take one row each below it: L_ij = (a_ij -
//   sum_k L_ik L_jk) / L_jj. A non-positive (or NaN) pivot stops the factorization: cholesky's
//   result becomes all NaN; potrf keeps the columns done and a's values elsewhere, info = j+1.
//   triangular-solve / trsm, substitution: for each solved row (column) of x in order, its
//   right-hand sides are divided by the diagonal, then the block updates every (remaining line,
//   right-hand side) pair in parallel: the CPU's subtractions in its order.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/core/shape.h"
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {

// kernel_codegen_linalg_lapack.cc.
StatusOr<GeneratedKernel> GenerateGetrfKernel(const Instruction& inst);

namespace linalg {

using codegen::Int;

// The element types the linear algebra kernels take (the CPU's real ones; complex is refused).
Status RequireLinalgType(const Instruction& inst, DType t) {
  if (t != DType::kF16 && t != DType::kBF16 && t != DType::kF32 && t != DType::kF64) {
    return Unimplemented("cuda: '", inst.name(), "' has element type ", DTypeName(t),
                         ", which the generated linear algebra kernels do not take (f16, bf16, f32, f64)");
  }
  return OkStatus();
}

// Matrices of at most this many bytes as f64 are worked on in shared memory: with the kernels'
// few static shared bytes (at most 3 KiB, getrf's argmax) under the 48 KiB a launch gets without
// opting in to more.
constexpr int64_t kSharedLimit = 44 * 1024;
bool FitsShared(int64_t f64_elements) { return f64_elements * 8 <= kSharedLimit; }

int BlockFor(int64_t width) {
  int block = 32;
  while (block < codegen::kBlock && block < width) block *= 2;
  return block;
}

// The kernel's opening: entry point, index type, and the accessors of the working matrix:
// ld(k) reads element k of the current matrix as f64 and st(k, v) writes it, from / to the
// f64 array `w` in shared memory or the result matrix `m` (a `t*` variable the caller sets).
std::string Open(int num_pointers, int64_t largest) {
  return "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
         std::to_string(num_pointers) + "> a) {\n  typedef " + codegen::IndexType(largest) + " idx_t;\n" +
         "  const idx_t tid = (idx_t)threadIdx.x, nthreads = (idx_t)blockDim.x;\n";
}

std::string Accessors(DType t, bool shared) {
  if (shared) {
    return "    auto ld = [&](idx_t k) -> double { return w[k]; };\n"
           "    auto st = [&](idx_t k, double v) { w[k] = v; };\n";
  }
  return "    auto ld = [&](idx_t k) -> double { return " + codegen::ConvertExpr(t, DType::kF64, "m[k]") + "; };\n" +
         "    auto st = [&](idx_t k, double v) { m[k] = " + codegen::ConvertExpr(DType::kF64, t, "v") + "; };\n";
}

// Copies `src` (the operand's matrix) to the working matrix, as f64 into `w` or as is into `m`;
// the same element by the same thread, so the result may be the operand's buffer.
std::string Load(DType t, bool shared, int64_t count) {
  const std::string body = shared ? "w[e] = " + codegen::ConvertExpr(t, DType::kF64, "src[e]") : "m[e] = src[e]";
  return "    for (idx_t e = tid; e < " + Int(count) + "; e += nthreads) " + body + ";\n";
}

// Writes the shared working matrix back into `m`, rounded to the element type.
std::string StoreBack(DType t, int64_t count) {
  return "    for (idx_t e = tid; e < " + Int(count) +
         "; e += nthreads) m[e] = " + codegen::ConvertExpr(DType::kF64, t, "w[e]") + ";\n";
}

LaunchDims Launch(int64_t batch, int64_t width, bool shared, int64_t shared_bytes) {
  LaunchDims l;
  l.grid = std::clamp<int64_t>(batch, 1, codegen::kMaxGrid);
  l.block = BlockFor(width);
  l.shared_bytes = shared ? shared_bytes : 0;
  return l;
}

// A character field of a FFI backend_config, `{uplo = 76 : ui8, ...}` (the CPU executor's
// reading): the ASCII code, or `fallback` when absent.
StatusOr<char> FfiChar(const Instruction& inst, std::string_view name, char fallback) {
  const std::string_view text = inst.attrs().backend_config ? std::string_view(*inst.attrs().backend_config) : "";
  for (size_t pos = text.find(name); pos != std::string_view::npos; pos = text.find(name, pos + name.size())) {
    const bool starts = pos == 0 || text[pos - 1] == '{' || text[pos - 1] == ' ' || text[pos - 1] == ',';
    size_t q = pos + name.size();
    while (q < text.size() && text[q] == ' ') ++q;
    if (!starts || q >= text.size() || text[q] != '=') continue;
    ++q;
    while (q < text.size() && text[q] == ' ') ++q;
    int code = 0, digits = 0;
    for (; q < text.size() && text[q] >= '0' && text[q] <= '9' && code < 1000; ++q, ++digits)
      code = code * 10 + (text[q] - '0');
    if (digits == 0 || code > 127) {
      return InvalidArgument("custom-call '", inst.name(), "': backend_config field ", name,
                             " is not a character code");
    }
    return static_cast<char>(code);
  }
  return fallback;
}

}  // namespace linalg

namespace {

using codegen::Int;

// cholesky (potrf = false) or lapack_?potrf_ffi (potrf: a (factor, info) tuple).
StatusOr<GeneratedKernel> CholeskyKernel(const Instruction& inst, bool lower, bool potrf) {
  const Shape& in = inst.operand(0)->shape();
  const Shape& out = potrf ? inst.shape().tuple_shape(0) : inst.shape();
  if (!in.IsArray() || in.rank() < 2 || in.dim(in.rank() - 1) != in.dim(in.rank() - 2) || !out.IsArray() ||
      out.dims() != in.dims() || out.dtype() != in.dtype()) {
    return InvalidArgument("'", inst.name(), "' needs square matrices [..., n, n] and a result of the operand's shape");
  }
  const DType t = in.dtype();
  XS_RETURN_IF_ERROR(linalg::RequireLinalgType(inst, t));
  const int64_t n = in.dims().back(), nn = n * n;
  const int64_t batch = nn == 0 ? 0 : in.num_elements() / nn;
  const bool shared = linalg::FitsShared(nn);
  const int num_pointers = potrf ? 3 : 2;
  const std::string ct = codegen::CType(t);
  // L(i, j), i >= j, of the factor: the lower triangle, or the upper one transposed.
  const std::string at = lower ? "i * " + Int(n) + " + j" : "j * " + Int(n) + " + i";

  std::string b = linalg::Open(num_pointers, in.num_elements() + nn);
  if (shared) b += "  extern __shared__ __align__(16) unsigned char xs_smem[];\n  double* w = (double*)xs_smem;\n";
  b += "  __shared__ double xs_diag;\n  __shared__ int xs_fail;\n";
  b += "  auto at = [&](idx_t i, idx_t j) -> idx_t { return " + at + "; };\n";
  b += "  for (idx_t bat = (idx_t)blockIdx.x; bat < " + Int(batch) + "; bat += (idx_t)gridDim.x) {\n";
  b += "    const " + ct + "* src = (const " + ct + "*)a.p[0] + bat * " + Int(nn) + ";\n";
  b += "    " + ct + "* m = (" + ct + "*)a.p[1] + bat * " + Int(nn) + ";\n";
  b += linalg::Accessors(t, shared) + linalg::Load(t, shared, nn);
  b += "    if (tid == 0) xs_fail = 0;\n    __syncthreads();\n";
  b += "    for (idx_t j = 0; j < " + Int(n) + "; ++j) {\n";
  b += "      if (tid == 0) {\n        double d = ld(at(j, j));\n";
  b += "        for (idx_t k = 0; k < j; ++k) { const double x = ld(at(j, k)); d -= x * x; }\n";
  b += "        if (!(d > 0)) {\n          xs_fail = (int)(j + 1);\n        } else {\n";
  b += "          xs_diag = sqrt(d);\n          st(at(j, j), xs_diag);\n        }\n      }\n";
  b += "      __syncthreads();\n      if (xs_fail != 0) break;\n      const double l = xs_diag;\n";
  b += "      for (idx_t i = j + 1 + tid; i < " + Int(n) + "; i += nthreads) {\n";
  b += "        double s = ld(at(i, j));\n";
  b += "        for (idx_t k = 0; k < j; ++k) s -= ld(at(i, k)) * ld(at(j, k));\n";
  b += "        st(at(i, j), s / l);\n      }\n      __syncthreads();\n    }\n";
  b += "    const int fail = xs_fail;\n";
  if (potrf) {
    // LAPACK leaves the other triangle and the columns from a failure on as they were.
    if (shared) b += linalg::StoreBack(t, nn);
    b += "    if (tid == 0) ((int*)a.p[2])[bat] = fail;\n";
  } else {
    // The other triangle zero; all NaN when not positive definite.
    const std::string nan = codegen::ConvertExpr(DType::kF64, t, "__longlong_as_double(0x7ff8000000000000LL)");
    const std::string keep = shared ? codegen::ConvertExpr(DType::kF64, t, "w[e]") : "m[e]";
    b += "    for (idx_t e = tid; e < " + Int(nn) + "; e += nthreads) {\n";
    b += "      const idx_t r = e / " + Int(n) + ", c = e % " + Int(n) + ";\n";
    b += "      m[e] = fail != 0 ? " + nan + " : (" + (lower ? "c > r" : "c < r") + ") ? (" + ct + ")0 : " + keep +
         ";\n";
    b += "    }\n";
  }
  b += "    __syncthreads();\n  }\n}\n";
  const std::string where = shared ? "shared" : "global";
  return codegen::Finish(potrf ? "potrf" : "cholesky", std::move(b), linalg::Launch(batch, n, shared, nn * 8),
                         num_pointers, "linalg_cholesky_" + where);
}

struct SolveOptions {
  bool left = false, lower = false, unit = false, transpose = false;
};

// triangular-solve(a, b) / lapack_?trsm_ffi(a, b, ...): x with b's shape (the last pointer).
StatusOr<GeneratedKernel> SolveKernel(const Instruction& inst, const SolveOptions& o) {
  const Shape& as = inst.operand(0)->shape();
  const Shape& bs = inst.operand(1)->shape();
  const Shape& out = inst.shape();
  const int r = as.IsArray() ? as.rank() : 0;
  if (r < 2 || !bs.IsArray() || bs.rank() != r || as.dim(r - 1) != as.dim(r - 2) || !out.IsArray() ||
      out.dims() != bs.dims() || out.dtype() != bs.dtype() || as.dtype() != bs.dtype() ||
      !std::equal(as.dims().begin(), as.dims().end() - 2, bs.dims().begin()) ||
      (o.left ? bs.dim(r - 2) : bs.dim(r - 1)) != as.dim(r - 1)) {
    return InvalidArgument("'", inst.name(),
                           "' needs a [..., m, m] and b [..., m, n] (left side) or [..., n, m] of one "
                           "type, and a result of b's shape");
  }
  const DType t = bs.dtype();
  XS_RETURN_IF_ERROR(linalg::RequireLinalgType(inst, t));
  const int64_t m = as.dim(r - 1), rows = bs.dim(r - 2), cols = bs.dim(r - 1);
  const int64_t mm = m * m, rc = rows * cols;
  const int64_t batch = mm == 0 || rc == 0 ? 0 : bs.num_elements() / rc;
  const int64_t rhs = o.left ? cols : rows;
  const bool shared = linalg::FitsShared(rc);
  const int num_pointers = inst.operand_count() + 1;
  const std::string ct = codegen::CType(t);
  // op(a) lower when lower xor transposed; lines of x are solved first to last when the
  // solve runs down a lower op(a) from the left, or up an upper one from the right.
  const bool op_lower = o.lower != o.transpose;
  const bool forward = o.left == op_lower;
  // The coefficient of solved line i in line rr's equation, and element (line, right-hand side).
  const std::string coef = o.left != o.transpose ? "A[rr * " + Int(m) + " + i]" : "A[i * " + Int(m) + " + rr]";
  const std::string xat = o.left ? "l * " + Int(cols) + " + q" : "q * " + Int(cols) + " + l";

  std::string b = linalg::Open(num_pointers, as.num_elements() + bs.num_elements());
  if (shared) b += "  extern __shared__ __align__(16) unsigned char xs_smem[];\n  double* w = (double*)xs_smem;\n";
  b += "  auto xat = [&](idx_t l, idx_t q) -> idx_t { return " + xat + "; };\n";
  b += "  for (idx_t bat = (idx_t)blockIdx.x; bat < " + Int(batch) + "; bat += (idx_t)gridDim.x) {\n";
  b += "    const " + ct + "* A = (const " + ct + "*)a.p[0] + bat * " + Int(mm) + ";\n";
  b += "    const " + ct + "* src = (const " + ct + "*)a.p[1] + bat * " + Int(rc) + ";\n";
  b += "    " + ct + "* m = (" + ct + "*)a.p[" + std::to_string(num_pointers - 1) + "] + bat * " + Int(rc) + ";\n";
  b += linalg::Accessors(t, shared) + linalg::Load(t, shared, rc) + "    __syncthreads();\n";
  b += "    for (idx_t s = 0; s < " + Int(m) + "; ++s) {\n";
  b += "      const idx_t i = " + std::string(forward ? "s" : Int(m - 1) + " - s") + ";\n";
  if (!o.unit) {
    b += "      const double d = " + codegen::ConvertExpr(t, DType::kF64, "A[i * " + Int(m) + " + i]") + ";\n";
    b += "      for (idx_t q = tid; q < " + Int(rhs) + "; q += nthreads) st(xat(i, q), ld(xat(i, q)) / d);\n";
    b += "      __syncthreads();\n";
  }
  // The lines not solved yet: after i (forward) or before it.
  b += "      const idx_t rest = " + Int(m - 1) + " - s;\n";
  b += "      for (idx_t e = tid; e < rest * " + Int(rhs) + "; e += nthreads) {\n";
  b += "        const idx_t rr = " + std::string(forward ? "i + 1 + " : "") + "e / " + Int(rhs) + ", q = e % " +
       Int(rhs) + ";\n";
  b += "        const double c = " + codegen::ConvertExpr(t, DType::kF64, coef) + ";\n";
  b += "        st(xat(rr, q), ld(xat(rr, q)) - c * ld(xat(i, q)));\n      }\n      __syncthreads();\n    }\n";
  if (shared) b += linalg::StoreBack(t, rc);
  b += "    __syncthreads();\n  }\n}\n";
  const std::string where = shared ? "shared" : "global";
  return codegen::Finish("trsm", std::move(b),
                         linalg::Launch(batch, std::max<int64_t>(1, (m - 1) * rhs), shared, rc * 8), num_pointers,
                         "linalg_substitution_" + where);
}

bool IsLapack(std::string_view target, std::string_view routine) {
  return target.size() == routine.size() + 12 && target.substr(0, 7) == "lapack_" &&
         std::string_view("sdcz").find(target[7]) != std::string_view::npos &&
         target.substr(8, routine.size()) == routine && target.substr(8 + routine.size()) == "_ffi";
}

}  // namespace

StatusOr<std::vector<GeneratedKernel>> GenerateLinalgKernels(const Instruction& inst) {
  const Attributes& attrs = inst.attrs();
  std::vector<GeneratedKernel> out;
  if (inst.opcode() == Opcode::kCholesky && inst.operand_count() == 1) {
    XS_ASSIGN_OR_RETURN(GeneratedKernel k, CholeskyKernel(inst, attrs.lower.value_or(false), false));
    out.push_back(std::move(k));
    return out;
  }
  if (inst.opcode() == Opcode::kTriangularSolve && inst.operand_count() == 2) {
    SolveOptions o;
    o.left = attrs.left_side.value_or(false);
    o.lower = attrs.lower.value_or(false);
    o.unit = attrs.unit_diagonal.value_or(false);
    o.transpose = attrs.transpose_a.value_or(TransposeKind::kNoTranspose) != TransposeKind::kNoTranspose;
    XS_ASSIGN_OR_RETURN(GeneratedKernel k, SolveKernel(inst, o));
    out.push_back(std::move(k));
    return out;
  }
  const std::string target = inst.opcode() == Opcode::kCustomCall ? attrs.custom_call_target.value_or("") : "";
  const Shape& s = inst.shape();
  if (IsLapack(target, "potrf") && inst.operand_count() == 1 && s.IsTuple() && s.tuple_size() == 2) {
    XS_ASSIGN_OR_RETURN(char uplo, linalg::FfiChar(inst, "uplo", 'L'));
    XS_ASSIGN_OR_RETURN(GeneratedKernel k, CholeskyKernel(inst, uplo == 'L', true));
    out.push_back(std::move(k));
    return out;
  }
  if (IsLapack(target, "getrf") && inst.operand_count() == 1 && s.IsTuple() && s.tuple_size() == 3) {
    XS_ASSIGN_OR_RETURN(GeneratedKernel k, GenerateGetrfKernel(inst));
    out.push_back(std::move(k));
    return out;
  }
  if (IsLapack(target, "trsm") && inst.operand_count() >= 2 && s.IsArray()) {
    SolveOptions o;
    XS_ASSIGN_OR_RETURN(char side, linalg::FfiChar(inst, "side", 'L'));
    XS_ASSIGN_OR_RETURN(char uplo, linalg::FfiChar(inst, "uplo", 'L'));
    XS_ASSIGN_OR_RETURN(char trans, linalg::FfiChar(inst, "trans_x", 'N'));
    XS_ASSIGN_OR_RETURN(char diag, linalg::FfiChar(inst, "diag", 'N'));
    o.left = side == 'L';
    o.lower = uplo == 'L';
    o.unit = diag == 'U';
    o.transpose = trans == 'T' || trans == 'C';  // real types: the adjoint is the transpose
    XS_ASSIGN_OR_RETURN(GeneratedKernel k, SolveKernel(inst, o));
    out.push_back(std::move(k));
    return out;
  }
  return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), target.empty() ? "" : " ", target,
                       ") is no linear algebra op the generated kernels take (cholesky, triangular-solve, "
                       "lapack_?potrf_ffi / ?getrf_ffi / ?trsm_ffi with their operands and results)");
}

}  // namespace xs::cuda
