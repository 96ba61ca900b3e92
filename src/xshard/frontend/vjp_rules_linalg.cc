// VJP rule of dot_general: JAX's _dot_general_transpose_lhs / _rhs (a dot_general of the
// cotangent with the other operand, then a transpose back to the operand's dim order, then a
// convert when preferred_element_type changed the dtype).
#include <algorithm>
#include <numeric>

#include "xshard/frontend/autodiff_internal.h"

namespace xs::fe::ad {
namespace {

// dimension_numbers as four int lists: lhs contracting, rhs contracting, lhs batch, rhs batch.
struct DotDims {
  IntList x_contract, y_contract, x_batch, y_batch;
};

StatusOr<DotDims> GetDotDims(const Eqn& eqn) {
  XS_ASSIGN_OR_RETURN(IntLists dn, GetIntLists(eqn, "dimension_numbers"));
  if (dn.size() != 4) {
    return InvalidArgument("dot_general: dimension_numbers has ", dn.size(),
                           " lists; expected 4 (lhs contracting, rhs contracting, lhs batch, "
                           "rhs batch)");
  }
  return DotDims{dn[0], dn[1], dn[2], dn[3]};
}

IntList Remaining(int64_t rank, const IntList& a, const IntList& b) {
  IntList out;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::find(a.begin(), a.end(), i) == a.end() &&
        std::find(b.begin(), b.end(), i) == b.end()) {
      out.push_back(i);
    }
  }
  return out;
}

IntList Range(int64_t start, size_t n) {
  IntList r(n);
  std::iota(r.begin(), r.end(), start);
  return r;
}

IntList ArgSort(const IntList& v) {
  IntList idx = Range(0, v.size());
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[a] < v[b]; });
  return idx;
}

// _dot_general_transpose_lhs(g, x, y): the cotangent of x, x's type being `x_aval`.
StatusOr<Atom> TransposeLhs(Emitter& e, const Atom& g, const AVal& x_aval, const Atom& y,
                            const DotDims& d, const Params& params, bool swap_ans) {
  int64_t y_rank = y.aval().rank();
  IntList x_kept = Remaining(x_aval.rank(), d.x_contract, d.x_batch);
  IntList y_kept = Remaining(y_rank, d.y_contract, d.y_batch);
  IntList ans_batch = Range(0, d.x_batch.size());
  IntList ans_y = swap_ans ? Range(d.x_batch.size(), y_kept.size())
                           : Range(d.x_batch.size() + x_kept.size(), y_kept.size());
  IntLists dims = {ans_y, y_kept, ans_batch, d.y_batch};
  IntList order = ArgSort(d.y_contract);
  IntList x_contract_sorted_by_y;
  for (int64_t i : order) x_contract_sorted_by_y.push_back(d.x_contract[i]);
  IntList cat = d.x_batch;
  cat.insert(cat.end(), x_kept.begin(), x_kept.end());
  cat.insert(cat.end(), x_contract_sorted_by_y.begin(), x_contract_sorted_by_y.end());
  IntList out_axes = ArgSort(cat);
  Params p = params;
  p["dimension_numbers"] = dims;
  XS_ASSIGN_OR_RETURN(Atom dot, e.Op("dot_general", {g, y}, p));
  Atom x_bar = dot;
  if (out_axes != Range(0, out_axes.size())) {
    XS_ASSIGN_OR_RETURN(x_bar, e.Op("transpose", {dot}, {{"permutation", out_axes}}));
  }
  if (x_bar.aval().dtype != x_aval.dtype) {
    XS_ASSIGN_OR_RETURN(x_bar, e.Op("convert_element_type", {x_bar},
                                    {{"new_dtype", x_aval.dtype},
                                     {"weak_type", x_aval.weak_type}}));
  }
  return x_bar;
}

}  // namespace

void AddLinalgRules(RuleTable& t) {
  // dot_general is bilinear: JAX's JVP is dot(xdot, y) + dot(x, ydot), so the backward part
  // transposes the rhs term first.
  t["dot_general"] = {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(DotDims d, GetDotDims(*r.eqn));
    AVal x_aval = InAval(r, 0), y_aval = InAval(r, 1);
    Atom x = r.in[0], y = r.in[1];
    bool active[2] = {r.active[0], r.active[1]};
    Params params = r.eqn->params;
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      if (active[1]) {
        DotDims swapped{d.y_contract, d.x_contract, d.y_batch, d.x_batch};
        XS_ASSIGN_OR_RETURN(Atom y_bar,
                            TransposeLhs(e, *ct[0], y_aval, x, swapped, params, true));
        XS_RETURN_IF_ERROR(write(1, y_bar));
      }
      if (active[0]) {
        XS_ASSIGN_OR_RETURN(Atom x_bar, TransposeLhs(e, *ct[0], x_aval, y, d, params, false));
        XS_RETURN_IF_ERROR(write(0, x_bar));
      }
      return OkStatus();
    });
  }};
}

}  // namespace xs::fe::ad
