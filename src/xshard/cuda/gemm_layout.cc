// GemmLayoutFor: an XLA dot's dimension numbers and types as one column-major cuBLASLt call
// (no CUDA library needed: this part is tested on machines without a GPU).
#include <algorithm>
#include <numeric>

#include "xshard/base/strings.h"
#include "xshard/cuda/gemm.h"

namespace xs::cuda {
namespace {

enum class Group { kBatch, kFree, kContracting };

struct OperandDims {
  std::vector<int64_t> batch, free, contracting;  // contracting in the chosen K order
};

// The dims of a row-major operand not in `batch` / `contracting`, increasing (the order they take
// in the result).
std::vector<int64_t> FreeDims(int rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end()) {
      free.push_back(d);
    }
  }
  return free;
}

// How a row-major operand reads in place: as [batch, free, contracting] (free major), as
// [batch, contracting, free], or not at all (nullopt). Dims of size 1 do not move addresses, so
// they may sit anywhere.
std::optional<bool> FreeMajor(const std::vector<int64_t>& sizes, const OperandDims& d) {
  std::vector<std::pair<Group, size_t>> role(sizes.size());
  for (size_t i = 0; i < d.batch.size(); ++i) role[d.batch[i]] = {Group::kBatch, i};
  for (size_t i = 0; i < d.free.size(); ++i) role[d.free[i]] = {Group::kFree, i};
  for (size_t i = 0; i < d.contracting.size(); ++i) role[d.contracting[i]] = {Group::kContracting, i};
  std::vector<std::pair<Group, size_t>> seq;
  for (size_t dim = 0; dim < sizes.size(); ++dim) {
    if (sizes[dim] != 1) seq.push_back(role[dim]);
  }
  auto matches = [&](Group second, Group third) {
    std::vector<std::pair<Group, size_t>> want;
    for (Group g : {Group::kBatch, second, third}) {
      const std::vector<int64_t>& dims = g == Group::kBatch ? d.batch
                                         : g == Group::kFree ? d.free
                                                             : d.contracting;
      for (size_t i = 0; i < dims.size(); ++i) {
        if (sizes[dims[i]] != 1) want.push_back({g, i});
      }
    }
    return want == seq;
  };
  if (matches(Group::kFree, Group::kContracting)) return true;
  if (matches(Group::kContracting, Group::kFree)) return false;
  return std::nullopt;
}

int64_t Product(const std::vector<int64_t>& sizes, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= sizes[d];
  return p;
}

std::vector<int64_t> Concat(std::initializer_list<const std::vector<int64_t>*> parts) {
  std::vector<int64_t> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

Status CheckTypes(const Instruction& dot, GemmLayout& g) {
  const DType lt = g.lhs_type, rt = g.rhs_type, ot = g.out_type;
  const std::string what = StrCat("dot ", dot.name(), " (", DTypeName(lt), " x ", DTypeName(rt),
                                  " -> ", DTypeName(ot), ")");
  if (IsInteger(lt) || IsInteger(rt) || lt == DType::kPred || rt == DType::kPred ||
      IsInteger(ot) || ot == DType::kPred) {
    return Unimplemented("integer ", what, " has no cuBLASLt form: it needs the fallback dot kernel");
  }
  if (IsComplex(lt) || IsComplex(rt) || IsComplex(ot)) {
    return Unimplemented("complex ", what, " has no cuBLASLt plan yet: it needs the fallback dot kernel");
  }
  if (lt != rt) {
    return Unimplemented(what, " mixes operand types: cuBLASLt needs both the same (convert one "
                         "first); it needs the fallback dot kernel");
  }
  const bool half = lt == DType::kBF16 || lt == DType::kF16;
  const bool ok = (half && (ot == lt || ot == DType::kF32)) ||
                  (lt == DType::kF32 && ot == DType::kF32) ||
                  (lt == DType::kF64 && ot == DType::kF64);
  if (!ok) {
    return Unimplemented(what, ": cuBLASLt takes bf16 / f16 -> same or f32, f32 -> f32 and "
                         "f64 -> f64; it needs the fallback dot kernel");
  }
  // XLA's GPU backend (xla/service/gpu/matmul_utils.cc, GetBlasComputationType): f16 / bf16
  // accumulate in f32; an f32 result from f32 operands computes as TF32 when TF32 is enabled
  // (tsl::tensor_float_32_execution_enabled(), on by default in JAX) and compute_precision <= 1,
  // compute_precision being the largest operand_precision (DEFAULT 0, HIGH 1, HIGHEST 2); so
  // only HIGHEST (jax precision=HIGHEST) forces full f32. f64 computes in f64. The scale type
  // (GetScaleType) is f32 for an f32 computation, else the result type.
  int precision = 0;
  if (const auto& p = dot.attrs().operand_precision; p.has_value()) {
    for (Precision q : *p) precision = std::max(precision, static_cast<int>(q));
  }
  if (lt == DType::kF64) {
    g.compute = GemmCompute::k64F;
    g.scale_type = DType::kF64;
  } else if (lt == DType::kF32 && precision <= static_cast<int>(Precision::kHigh)) {
    g.compute = GemmCompute::k32FFastTF32;
    g.scale_type = DType::kF32;
  } else {
    g.compute = GemmCompute::k32F;
    g.scale_type = DType::kF32;
  }
  return OkStatus();
}

}  // namespace

std::string_view GemmComputeName(GemmCompute c) {
  switch (c) {
    case GemmCompute::k32F: return "32F";
    case GemmCompute::k32FFastTF32: return "32F_FAST_TF32";
    case GemmCompute::k64F: return "64F";
  }
  return "?";
}

std::string GemmLayout::ToString() const {
  return StrCat("m=", m, " n=", n, " k=", k, " batch=", batch, " transa=", transa ? "T" : "N",
                " transb=", transb ? "T" : "N", " lda=", lda, " ldb=", ldb, " ldc=", ldc,
                " stride_a=", stride_a, " stride_b=", stride_b, " stride_c=", stride_c, " types=",
                DTypeName(lhs_type), "x", DTypeName(rhs_type), "->", DTypeName(out_type),
                " compute=", GemmComputeName(compute), " scale=", DTypeName(scale_type),
                " lhs_perm={", StrJoin(lhs_permutation, ","), "} rhs_perm={",
                StrJoin(rhs_permutation, ","), "}");
}

StatusOr<GemmLayout> GemmLayoutFor(const Instruction& dot) {
  if (dot.opcode() != Opcode::kDot || dot.operand_count() != 2 || !dot.attrs().dot.has_value() ||
      !dot.shape().IsArray()) {
    return Unimplemented("GemmPlan takes a dot with two operands and dimension numbers; ",
                         dot.ShortString(), " is not one");
  }
  const DotDimensionNumbers& dn = *dot.attrs().dot;
  const Shape& ls = dot.operand(0)->shape();
  const Shape& rs = dot.operand(1)->shape();
  if (!ls.IsArray() || !rs.IsArray() || dn.lhs_batch.size() != dn.rhs_batch.size() ||
      dn.lhs_contracting.size() != dn.rhs_contracting.size()) {
    return InvalidArgument("dot ", dot.name(), ": operands and dimension numbers disagree");
  }
  const std::vector<int64_t>& lsz = ls.dims();
  const std::vector<int64_t>& rsz = rs.dims();
  for (const auto* dims : {&dn.lhs_batch, &dn.lhs_contracting}) {
    for (int64_t d : *dims) {
      if (d < 0 || d >= ls.rank()) return InvalidArgument("dot ", dot.name(), ": lhs dim ", d, " out of range");
    }
  }
  for (const auto* dims : {&dn.rhs_batch, &dn.rhs_contracting}) {
    for (int64_t d : *dims) {
      if (d < 0 || d >= rs.rank()) return InvalidArgument("dot ", dot.name(), ": rhs dim ", d, " out of range");
    }
  }
  GemmLayout g;
  g.lhs_type = ls.dtype();
  g.rhs_type = rs.dtype();
  g.out_type = dot.shape().dtype();
  XS_RETURN_IF_ERROR(CheckTypes(dot, g));

  OperandDims lhs{dn.lhs_batch, FreeDims(ls.rank(), dn.lhs_batch, dn.lhs_contracting), {}};
  OperandDims rhs{dn.rhs_batch, FreeDims(rs.rank(), dn.rhs_batch, dn.rhs_contracting), {}};
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i) {
    if (lsz[dn.lhs_batch[i]] != rsz[dn.rhs_batch[i]]) {
      return InvalidArgument("dot ", dot.name(), ": batch dim sizes differ (", lsz[dn.lhs_batch[i]],
                             " vs ", rsz[dn.rhs_batch[i]], ")");
    }
  }
  // The K order: contracting pairs sorted by the lhs dims or by the rhs dims, whichever lets more
  // operands be read in place (the lhs order first on a tie).
  const size_t nk = dn.lhs_contracting.size();
  std::vector<size_t> by_lhs(nk), by_rhs(nk);
  std::iota(by_lhs.begin(), by_lhs.end(), 0);
  std::iota(by_rhs.begin(), by_rhs.end(), 0);
  std::sort(by_lhs.begin(), by_lhs.end(),
            [&](size_t a, size_t b) { return dn.lhs_contracting[a] < dn.lhs_contracting[b]; });
  std::sort(by_rhs.begin(), by_rhs.end(),
            [&](size_t a, size_t b) { return dn.rhs_contracting[a] < dn.rhs_contracting[b]; });
  struct Choice {
    OperandDims lhs, rhs;
    std::optional<bool> lhs_free_major, rhs_free_major;
    int in_place() const { return int{lhs_free_major.has_value()} + int{rhs_free_major.has_value()}; }
  };
  std::optional<Choice> best;
  for (const std::vector<size_t>* order : {&by_lhs, &by_rhs}) {
    Choice c{lhs, rhs, std::nullopt, std::nullopt};
    for (size_t i : *order) {
      if (lsz[dn.lhs_contracting[i]] != rsz[dn.rhs_contracting[i]]) {
        return InvalidArgument("dot ", dot.name(), ": contracting dim sizes differ (",
                               lsz[dn.lhs_contracting[i]], " vs ", rsz[dn.rhs_contracting[i]], ")");
      }
      c.lhs.contracting.push_back(dn.lhs_contracting[i]);
      c.rhs.contracting.push_back(dn.rhs_contracting[i]);
    }
    c.lhs_free_major = FreeMajor(lsz, c.lhs);
    c.rhs_free_major = FreeMajor(rsz, c.rhs);
    if (!best.has_value() || c.in_place() > best->in_place()) best = std::move(c);
  }
  lhs = best->lhs;
  rhs = best->rhs;
  std::optional<bool> lhs_free_major = best->lhs_free_major, rhs_free_major = best->rhs_free_major;
  if (!lhs_free_major.has_value()) {
    g.lhs_permutation = Concat({&lhs.batch, &lhs.free, &lhs.contracting});
    lhs_free_major = true;
  }
  if (!rhs_free_major.has_value()) {
    g.rhs_permutation = Concat({&rhs.batch, &rhs.contracting, &rhs.free});
    rhs_free_major = false;
  }
  g.batch = Product(lsz, lhs.batch);
  g.m = Product(lsz, lhs.free);
  g.n = Product(rsz, rhs.free);
  g.k = Product(lsz, lhs.contracting);
  std::vector<int64_t> want;
  for (int64_t d : lhs.batch) want.push_back(lsz[d]);
  for (int64_t d : lhs.free) want.push_back(lsz[d]);
  for (int64_t d : rhs.free) want.push_back(rsz[d]);
  if (want != dot.shape().dims()) {
    return InvalidArgument("dot ", dot.name(), ": result dims [", StrJoin(dot.shape().dims(), ","),
                           "] are not batch, lhs free, rhs free dims [", StrJoin(want, ","), "]");
  }
  // Column-major view (see gemm.h): A = rhs (op(A) is n x k), B = lhs (op(B) is k x m).
  g.transa = *rhs_free_major;   // rhs [n, k] row-major = col-major k x n: transposed
  g.lda = std::max<int64_t>(1, g.transa ? g.k : g.n);
  g.transb = !*lhs_free_major;  // lhs [k, m] row-major = col-major m x k: transposed
  g.ldb = std::max<int64_t>(1, g.transb ? g.m : g.k);
  g.ldc = std::max<int64_t>(1, g.n);
  if (g.batch > 1) {
    g.stride_a = g.n * g.k;
    g.stride_b = g.m * g.k;
    g.stride_c = g.m * g.n;
  }
  return g;
}

}  // namespace xs::cuda
