// dot: result dims, the one-call entry point over DotPlan (gemm_plan.cc), the naive reference and
// the process-wide BLAS thread count.
#include "xshard/kernels/dot.h"

#include <cblas.h>

#include <algorithm>

#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/scalar_ops.h"

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

StatusOr<Array> DotOperandAs(const Array& a, DType t) {
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
  auto distinct = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> all = a;
    all.insert(all.end(), b.begin(), b.end());
    std::sort(all.begin(), all.end());
    return std::adjacent_find(all.begin(), all.end()) == all.end();
  };
  if (!distinct(dn.lhs_batch, dn.lhs_contracting) || !distinct(dn.rhs_batch, dn.rhs_contracting)) {
    return InvalidArgument("dot: a dim is listed twice among the batch and contracting dims of one "
                           "operand; list each dim at most once");
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
  XS_ASSIGN_OR_RETURN(std::shared_ptr<const DotPlan> plan,
                      DotPlan::Create(lhs.shape(), rhs.shape(), dn, result));
  return plan->Run(lhs, rhs);
}

StatusOr<Array> DotGeneralReference(const Array& lhs, const Array& rhs,
                                    const DotDimensionNumbers& dn, DType result) {
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims, DotResultDims(lhs.dims(), rhs.dims(), dn));
  if (!IsComputableDType(result)) return UnsupportedDType("dot", result);
  XS_ASSIGN_OR_RETURN(Array a, DotOperandAs(lhs, result));
  XS_ASSIGN_OR_RETURN(Array b, DotOperandAs(rhs, result));
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
