// Block operations: GEMM through cached DotPlans, fill, add and convert through the elementwise
// kernels (strided refs are made contiguous first).
#include "xshard/cmm/kernel_ops.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/elementwise.h"

namespace xs::cmm {
namespace {

// A contiguous copy of `r` when it is strided, else a view of it.
Array Dense(const Ref& r) {
  if (r.num_elements() == 0) return Array(r.dtype(), r.dims());
  if (r.contiguous()) return Array::View(Shape(r.dtype(), r.dims()), r.data());
  return r.Load();
}

// Runs a unary kernel from `src` into dst's elements (dst may be strided).
Status Apply(kernels::UnaryKernel fn, const Ref& src, const Ref& dst) {
  const Array in = Dense(src);
  if (dst.contiguous()) {
    fn(in.data(), dst.data(), dst.num_elements());
    return OkStatus();
  }
  Array out(dst.dtype(), dst.dims());
  fn(in.data(), out.data(), out.num_elements());
  return dst.Store(out);
}

// Every ref valid, and the last one (the one written) writable.
Status CheckValid(std::string_view op, std::initializer_list<const Ref*> refs) {
  for (const Ref* r : refs) {
    if (!r->valid()) return InvalidArgument(op, " of an invalid ref");
  }
  const Ref& out = **(refs.end() - 1);
  if (out.writable()) return OkStatus();
  return InvalidArgument(op, " into ", out.ToString(),
                         ": inputs are read-only; write an output or a scratch buffer");
}

}  // namespace

Status DotAccumulate(const Ref& a, const Ref& b, const Ref& acc) {
  XS_RETURN_IF_ERROR(CheckValid("DotAccumulate", {&a, &b, &acc}));
  const bool shapes_ok = a.rank() == 2 && b.rank() == 2 && acc.rank() == 2 &&
                         a.dims()[1] == b.dims()[0] && acc.dims()[0] == a.dims()[0] &&
                         acc.dims()[1] == b.dims()[1];
  if (!shapes_ok || a.dtype() != b.dtype() || acc.dtype() != DType::kF32 ||
      !IsFloating(a.dtype())) {
    return InvalidArgument("DotAccumulate(", a.ToString(), ", ", b.ToString(), ", ", acc.ToString(),
                           "): needs a [m,k] @ b [k,n] of one float dtype into an "
                           "f32 [m,n] accumulator");
  }
  const int64_t m = a.dims()[0], k = a.dims()[1], n = b.dims()[1];
  if (m * n == 0) return OkStatus();
  using Key = std::tuple<DType, int64_t, int64_t, int64_t>;
  thread_local std::map<Key, std::shared_ptr<const kernels::DotPlan>> plans;
  thread_local std::vector<float> product;
  std::shared_ptr<const kernels::DotPlan>& plan = plans[Key{a.dtype(), m, k, n}];
  if (plan == nullptr) {
    DotDimensionNumbers dn;
    dn.lhs_contracting = {1};
    dn.rhs_contracting = {0};
    XS_ASSIGN_OR_RETURN(plan, kernels::DotPlan::Create(Shape(a.dtype(), {m, k}),
                                                       Shape(b.dtype(), {k, n}), dn, DType::kF32));
  }
  const Array da = Dense(a), db = Dense(b);
  product.resize(m * n);
  auto* out = reinterpret_cast<std::byte*>(product.data());
  XS_RETURN_IF_ERROR(plan->Run(da.data(), db.data(), out));
  return AddInto(Ref(nullptr, BufferId{}, DType::kF32, out, {m, n}), acc);
}

Status Fill(const Ref& ref, double value) {
  XS_RETURN_IF_ERROR(CheckValid("Fill", {&ref}));
  // One converted element, replicated by doubling memcpys (Array::Full converts per element:
  // ~1.5 ms for a 128x128 block, which made the tiled matmul's k == 0 steps dominate it).
  const Array one = Array::Full(ref.dtype(), {}, value);
  const int64_t esize = DTypeSize(ref.dtype()), n = ref.num_elements();
  Array dense;
  std::byte* out = ref.data();
  if (!ref.contiguous()) {
    dense = Array(ref.dtype(), ref.dims());
    out = dense.data();
  }
  if (n > 0) {
    std::memcpy(out, one.data(), esize);
    for (int64_t have = 1; have < n; have *= 2) {
      std::memcpy(out + have * esize, out, std::min(have, n - have) * esize);
    }
  }
  return ref.contiguous() ? OkStatus() : ref.Store(dense);
}

Status AddInto(const Ref& x, const Ref& acc) {
  XS_RETURN_IF_ERROR(CheckValid("AddInto", {&x, &acc}));
  if (x.dtype() != acc.dtype() || x.dims() != acc.dims()) {
    return InvalidArgument("AddInto(", x.ToString(), ", ", acc.ToString(),
                           "): dtypes and dims must match");
  }
  XS_ASSIGN_OR_RETURN(kernels::BinaryKernel add,
                      kernels::FindBinaryKernel(Opcode::kAdd, acc.dtype()));
  const Array dx = Dense(x);
  if (acc.contiguous()) {
    add(acc.data(), dx.data(), acc.data(), acc.num_elements());
    return OkStatus();
  }
  Array sum = acc.Load();
  add(sum.data(), dx.data(), sum.data(), sum.num_elements());
  return acc.Store(sum);
}

Status StoreConverted(const Ref& src, const Ref& dst) {
  XS_RETURN_IF_ERROR(CheckValid("StoreConverted", {&src, &dst}));
  if (src.dims() != dst.dims()) {
    return InvalidArgument("StoreConverted(", src.ToString(), ", ", dst.ToString(),
                           "): dims must match");
  }
  XS_ASSIGN_OR_RETURN(kernels::UnaryKernel convert,
                      kernels::FindConvertKernel(src.dtype(), dst.dtype()));
  return Apply(convert, src, dst);
}

}  // namespace xs::cmm
