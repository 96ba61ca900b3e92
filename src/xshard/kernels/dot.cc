// dot via BLAS GEMM (f32 / f64 / c64 / c128, and f16 / bf16 through f32) or a naive integer loop.
#include "xshard/kernels/dot.h"

#include <cblas.h>

#include <algorithm>
#include <complex>
#include <memory>

#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/scalar_ops.h"
#include "xshard/kernels/shape_ops.h"

namespace xs::kernels {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<int64_t> FreeDims(int rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> out;
  for (int i = 0; i < rank; ++i) {
    if (!Contains(batch, i) && !Contains(contracting, i)) out.push_back(i);
  }
  return out;
}

std::vector<int64_t> Concat(std::initializer_list<const std::vector<int64_t>*> parts) {
  std::vector<int64_t> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

int64_t SizeOf(const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
  int64_t n = 1;
  for (int64_t d : which) n *= dims[d];
  return n;
}

// An operand laid out for GEMM: [batch, rows, cols] row-major, possibly marked transposed
// (stored [batch, cols, rows]). `data` is the caller's array itself when it already has the GEMM
// type and a usable layout (no copy: a dot's operands can be gigabytes), else `owned`.
struct GemmOperand {
  std::unique_ptr<Array> owned;
  const Array* data = nullptr;
  bool transposed = false;
};

// Arranges `a` (converted to `type` first if it is not) as [batch..., outer..., inner...] (no
// transpose), or [batch..., inner..., outer...] with transposed=true when that is already the
// layout; else transposes.
StatusOr<GemmOperand> Arrange(const Array& a, DType type, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& outer, const std::vector<int64_t>& inner) {
  GemmOperand g;
  g.data = &a;
  if (a.dtype() != type) {
    XS_ASSIGN_OR_RETURN(Array converted, Convert(a, type));
    g.owned = std::make_unique<Array>(std::move(converted));
    g.data = g.owned.get();
  }
  const std::vector<int64_t> straight = Concat({&batch, &outer, &inner});
  if (IsIdentity(straight)) return g;
  const std::vector<int64_t> swapped = Concat({&batch, &inner, &outer});
  if (IsIdentity(swapped)) {
    g.transposed = true;
    return g;
  }
  g.owned = std::make_unique<Array>(Transpose(*g.data, straight));
  g.data = g.owned.get();
  return g;
}

template <typename T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  const auto trans_a = ta ? CblasTrans : CblasNoTrans;
  const auto trans_b = tb ? CblasTrans : CblasNoTrans;
  const blasint lda = static_cast<blasint>(ta ? m : k), ldb = static_cast<blasint>(tb ? k : n);
  const blasint M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, trans_a, trans_b, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, N);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, trans_a, trans_b, M, N, K, 1.0, a, lda, b, ldb, 0.0, c, N);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    const T one(1), zero(0);
    cblas_cgemm(CblasRowMajor, trans_a, trans_b, M, N, K, &one, a, lda, b, ldb, &zero, c, N);
  } else {
    const T one(1), zero(0);
    cblas_zgemm(CblasRowMajor, trans_a, trans_b, M, N, K, &one, a, lda, b, ldb, &zero, c, N);
  }
}

template <typename T>
void BatchedGemm(const GemmOperand& a, const GemmOperand& b, int64_t batch, int64_t m, int64_t n,
                 int64_t k, Array& out) {
  const T* pa = reinterpret_cast<const T*>(a.data->data());
  const T* pb = reinterpret_cast<const T*>(b.data->data());
  T* pc = reinterpret_cast<T*>(out.data());
  for (int64_t i = 0; i < batch; ++i) {
    Gemm<T>(a.transposed, b.transposed, m, n, k, pa + i * m * k, pb + i * k * n, pc + i * m * n);
  }
}

// Naive [batch, m, k] x [batch, k, n] in storage type S with XLA's wrapping integer math.
template <typename S>
void NaiveBatchedMatmul(const GemmOperand& a, const GemmOperand& b, int64_t batch, int64_t m,
                        int64_t n, int64_t k, Array& out) {
  const S* pa = reinterpret_cast<const S*>(a.data->data());
  const S* pb = reinterpret_cast<const S*>(b.data->data());
  S* pc = reinterpret_cast<S*>(out.data());
  for (int64_t bi = 0; bi < batch; ++bi) {
    const S* A = pa + bi * m * k;
    const S* B = pb + bi * k * n;
    S* C = pc + bi * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        auto acc = ComputeT<S>(0);
        for (int64_t p = 0; p < k; ++p) {
          const auto x = ToCompute(a.transposed ? A[p * m + i] : A[i * k + p]);
          const auto y = ToCompute(b.transposed ? B[j * k + p] : B[p * n + j]);
          acc = ops::Add::Apply(acc, ops::Multiply::Apply(x, y));
        }
        C[i * n + j] = FromCompute<S>(acc);
      }
    }
  }
}

StatusOr<Array> ToDType(const Array& a, DType t) {
  if (a.dtype() == t) return a;
  return Convert(a, t);
}

}  // namespace

StatusOr<std::vector<int64_t>> DotResultDims(const std::vector<int64_t>& lhs,
                                             const std::vector<int64_t>& rhs,
                                             const DotDimensionNumbers& dn) {
  if (dn.lhs_batch.size() != dn.rhs_batch.size() ||
      dn.lhs_contracting.size() != dn.rhs_contracting.size()) {
    return InvalidArgument("dot: lhs and rhs must list the same number of batch dims and of "
                           "contracting dims");
  }
  auto in_range = [](const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
    for (int64_t d : which) {
      if (d < 0 || d >= static_cast<int64_t>(dims.size())) return false;
    }
    return true;
  };
  if (!in_range(lhs, dn.lhs_batch) || !in_range(lhs, dn.lhs_contracting) ||
      !in_range(rhs, dn.rhs_batch) || !in_range(rhs, dn.rhs_contracting)) {
    return InvalidArgument("dot: a batch or contracting dim number is out of range for operands [",
                           JoinDims(lhs), "] and [", JoinDims(rhs), "]");
  }
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i) {
    if (lhs[dn.lhs_batch[i]] != rhs[dn.rhs_batch[i]]) {
      return InvalidArgument("dot: batch dim sizes differ: lhs dim ", dn.lhs_batch[i], " is ",
                             lhs[dn.lhs_batch[i]], ", rhs dim ", dn.rhs_batch[i], " is ",
                             rhs[dn.rhs_batch[i]]);
    }
  }
  for (size_t i = 0; i < dn.lhs_contracting.size(); ++i) {
    if (lhs[dn.lhs_contracting[i]] != rhs[dn.rhs_contracting[i]]) {
      return InvalidArgument("dot: contracting dim sizes differ: lhs dim ", dn.lhs_contracting[i],
                             " is ", lhs[dn.lhs_contracting[i]], ", rhs dim ",
                             dn.rhs_contracting[i], " is ", rhs[dn.rhs_contracting[i]]);
    }
  }
  std::vector<int64_t> out;
  for (int64_t d : dn.lhs_batch) out.push_back(lhs[d]);
  for (int64_t d : FreeDims(static_cast<int>(lhs.size()), dn.lhs_batch, dn.lhs_contracting)) out.push_back(lhs[d]);
  for (int64_t d : FreeDims(static_cast<int>(rhs.size()), dn.rhs_batch, dn.rhs_contracting)) out.push_back(rhs[d]);
  return out;
}

StatusOr<Array> DotGeneral(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dn,
                           DType result) {
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims, DotResultDims(lhs.dims(), rhs.dims(), dn));
  if (!IsComputableDType(result)) return UnsupportedDType("dot", result);
  const std::vector<int64_t> lhs_free = FreeDims(lhs.rank(), dn.lhs_batch, dn.lhs_contracting);
  const std::vector<int64_t> rhs_free = FreeDims(rhs.rank(), dn.rhs_batch, dn.rhs_contracting);
  const int64_t batch = SizeOf(lhs.dims(), dn.lhs_batch);
  const int64_t m = SizeOf(lhs.dims(), lhs_free), n = SizeOf(rhs.dims(), rhs_free);
  const int64_t k = SizeOf(lhs.dims(), dn.lhs_contracting);
  // GEMM type: the result type, with f16 / bf16 widened to f32.
  const bool half = result == DType::kF16 || result == DType::kBF16;
  const bool blas = half || result == DType::kF32 || result == DType::kF64 ||
                    result == DType::kC64 || result == DType::kC128;
  const DType gemm_type = half ? DType::kF32 : result;
  XS_ASSIGN_OR_RETURN(const GemmOperand ga, Arrange(lhs, gemm_type, dn.lhs_batch, lhs_free, dn.lhs_contracting));
  XS_ASSIGN_OR_RETURN(const GemmOperand gb, Arrange(rhs, gemm_type, dn.rhs_batch, dn.rhs_contracting, rhs_free));
  Array out(Shape(gemm_type, out_dims));
  if (batch * m * n == 0 || k == 0) return half ? Convert(out, result) : StatusOr<Array>(std::move(out));
  if (blas) {
    switch (gemm_type) {
      case DType::kF32: BatchedGemm<float>(ga, gb, batch, m, n, k, out); break;
      case DType::kF64: BatchedGemm<double>(ga, gb, batch, m, n, k, out); break;
      case DType::kC64: BatchedGemm<std::complex<float>>(ga, gb, batch, m, n, k, out); break;
      default: BatchedGemm<std::complex<double>>(ga, gb, batch, m, n, k, out); break;
    }
    if (half) return Convert(out, result);
    return out;
  }
  VisitDType(
      result,
      [&](auto tag) {
        using S = typename decltype(tag)::type;
        NaiveBatchedMatmul<S>(ga, gb, batch, m, n, k, out);
      },
      [] {});
  return out;
}

StatusOr<Array> DotGeneralReference(const Array& lhs, const Array& rhs,
                                    const DotDimensionNumbers& dn, DType result) {
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims, DotResultDims(lhs.dims(), rhs.dims(), dn));
  if (!IsComputableDType(result)) return UnsupportedDType("dot", result);
  XS_ASSIGN_OR_RETURN(Array a, ToDType(lhs, result));
  XS_ASSIGN_OR_RETURN(Array b, ToDType(rhs, result));
  const std::vector<int64_t> lhs_free = FreeDims(lhs.rank(), dn.lhs_batch, dn.lhs_contracting);
  const std::vector<int64_t> rhs_free = FreeDims(rhs.rank(), dn.rhs_batch, dn.rhs_contracting);
  std::vector<int64_t> contract_sizes;
  for (int64_t d : dn.lhs_contracting) contract_sizes.push_back(lhs.dims()[d]);
  Array out(Shape(result, out_dims));
  const std::vector<int64_t> sa = RowMajorStrides(a.dims()), sb = RowMajorStrides(b.dims());
  VisitDType(
      result,
      [&](auto tag) {
        using S = typename decltype(tag)::type;
        const S* pa = reinterpret_cast<const S*>(a.data());
        const S* pb = reinterpret_cast<const S*>(b.data());
        S* po = reinterpret_cast<S*>(out.data());
        std::vector<int64_t> oi(out_dims.size(), 0), li(lhs.rank()), ri(rhs.rank());
        for (int64_t linear = 0; linear < out.num_elements(); ++linear) {
          size_t p = 0;
          for (size_t i = 0; i < dn.lhs_batch.size(); ++i, ++p) {
            li[dn.lhs_batch[i]] = oi[p];
            ri[dn.rhs_batch[i]] = oi[p];
          }
          for (int64_t d : lhs_free) li[d] = oi[p++];
          for (int64_t d : rhs_free) ri[d] = oi[p++];
          auto acc = ComputeT<S>(0);
          std::vector<int64_t> ci(contract_sizes.size(), 0);
          const int64_t total = Product(contract_sizes);
          for (int64_t c = 0; c < total; ++c) {
            for (size_t i = 0; i < ci.size(); ++i) {
              li[dn.lhs_contracting[i]] = ci[i];
              ri[dn.rhs_contracting[i]] = ci[i];
            }
            acc = ops::Add::Apply(acc, ops::Multiply::Apply(ToCompute(pa[LinearIndex(li.data(), sa)]),
                                                            ToCompute(pb[LinearIndex(ri.data(), sb)])));
            NextIndex(ci, contract_sizes);
          }
          po[linear] = FromCompute<S>(acc);
          NextIndex(oi, out_dims);
        }
      },
      [] {});
  return out;
}

void SetBlasThreads(int n) {
  static const int kDefault = openblas_get_num_threads();  // captured once, never changed
  openblas_set_num_threads(n > 0 ? n : kDefault);
}

int BlasThreads() { return openblas_get_num_threads(); }

}  // namespace xs::kernels
