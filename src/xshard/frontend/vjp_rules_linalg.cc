// VJP rules of dot_general (JAX's _dot_general_transpose_lhs / _rhs: a dot_general of the
// cotangent with the other operand, a transpose back to the operand's dim order, a convert when
// preferred_element_type changed the dtype) and conv_general_dilated (JAX's
// _conv_general_dilated_transpose_lhs / _rhs: convolutions of the cotangent with the reversed
// kernel / with the input, with swapped strides and dilations).
#include <algorithm>
#include <numeric>

#include "xshard/frontend/autodiff.h"
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
  // JAX binds g (the output's dtype) with y as they are; our dot_general needs equal operand
  // dtypes, so y is converted to g's dtype first (exact: it only widens under
  // preferred_element_type).
  Atom y_cast = y;
  if (y.aval().dtype != g.aval().dtype) {
    XS_ASSIGN_OR_RETURN(y_cast, e.Op("convert_element_type", {y},
                                     {{"new_dtype", g.aval().dtype}, {"weak_type", false}}));
  }
  XS_ASSIGN_OR_RETURN(Atom dot, e.Op("dot_general", {g, y_cast}, p));
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

int64_t Dilate(int64_t n, int64_t d) { return n == 0 ? 0 : (n - 1) * d + 1; }

IntList Take(const std::vector<int64_t>& dims, const IntList& idx) {
  IntList out;
  for (int64_t i : idx) out.push_back(dims[i]);
  return out;
}
IntList SpatialOf(const IntList& spec) { return IntList(spec.begin() + 2, spec.end()); }
IntList SwapFirstTwo(IntList spec) {
  std::swap(spec[0], spec[1]);
  return spec;
}

struct ConvParams {
  IntList strides, lhs_dil, rhs_dil;
  IntLists padding, dn;
  int64_t fgc = 1, bgc = 1;
};

StatusOr<ConvParams> GetConvParams(const Eqn& eqn) {
  ConvParams c;
  XS_ASSIGN_OR_RETURN(c.strides, GetInts(eqn, "window_strides"));
  XS_ASSIGN_OR_RETURN(c.padding, GetIntLists(eqn, "padding"));
  XS_ASSIGN_OR_RETURN(c.dn, GetIntLists(eqn, "dimension_numbers"));
  c.lhs_dil = IntList(c.strides.size(), 1);
  c.rhs_dil = IntList(c.strides.size(), 1);
  if (auto r = GetInts(eqn, "lhs_dilation"); r.ok()) c.lhs_dil = *r;
  if (auto r = GetInts(eqn, "rhs_dilation"); r.ok()) c.rhs_dil = *r;
  XS_ASSIGN_OR_RETURN(c.fgc, GetInt(eqn, "feature_group_count"));
  XS_ASSIGN_OR_RETURN(c.bgc, GetInt(eqn, "batch_group_count"));
  if (c.fgc > 1 && c.bgc > 1) {
    return InvalidArgument("conv_general_dilated: feature_group_count=", c.fgc,
                           " and batch_group_count=", c.bgc, " cannot both exceed 1");
  }
  return c;
}

// JAX's _reshape_axis_out_of: splits dim src into (size1, dims[src] / size1).
StatusOr<Atom> ReshapeAxisOutOf(Emitter& e, int64_t src, int64_t size1, const Atom& x) {
  std::vector<int64_t> dims = x.aval().dims;
  int64_t size2 = dims[src] / size1;
  dims[src] = size2;
  dims.insert(dims.begin() + src, size1);
  return e.Op("reshape", {x}, {{"new_sizes", IntList(dims)}, {"dimensions", Param{}}});
}

// JAX's _reshape_axis_into: moves dim src just before dim dst (numbered without src) and
// merges the two, src major.
StatusOr<Atom> ReshapeAxisInto(Emitter& e, int64_t src, int64_t dst, const Atom& x) {
  const std::vector<int64_t>& dims = x.aval().dims;
  IntList perm;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) {
    if (i != src) perm.push_back(i);
  }
  perm.insert(perm.begin() + dst, src);
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) {
    if (i != src) shape.push_back(dims[i]);
  }
  shape[dst] *= dims[src];
  Atom t = x;
  if (perm != Range(0, perm.size())) {
    XS_ASSIGN_OR_RETURN(t, e.Op("transpose", {x}, {{"permutation", perm}}));
  }
  return e.Op("reshape", {t}, {{"new_sizes", IntList(shape)}, {"dimensions", Param{}}});
}

StatusOr<Atom> Conv(Emitter& e, const Atom& lhs, const Atom& rhs, const Params& base,
                    IntList strides, IntLists padding, IntList lhs_dil, IntList rhs_dil,
                    IntLists dn, int64_t fgc, int64_t bgc) {
  Params p = base;
  p["feature_group_count"] = fgc;
  p["batch_group_count"] = bgc;
  p["window_strides"] = strides;
  p["padding"] = padding;
  p["lhs_dilation"] = lhs_dil;
  p["rhs_dilation"] = rhs_dil;
  p["dimension_numbers"] = dn;
  return e.Op("conv_general_dilated", {lhs, rhs}, p);
}

// x converted to want's dtype (JAX's convert_element_type in the conv transposes), or x.
StatusOr<Atom> ConvertTo(Emitter& e, const Atom& x, const AVal& want) {
  if (x.aval().dtype == want.dtype) return x;
  return e.Op("convert_element_type", {x}, {{"new_dtype", want.dtype}, {"weak_type", false}});
}

// _conv_general_dilated_transpose_lhs: conv(g, rev(rhs)) with strides and lhs dilation swapped.
StatusOr<Atom> ConvTransposeLhs(Emitter& e, const Atom& g, const AVal& lhs, const Atom& rhs,
                                const ConvParams& c, const Params& base) {
  const IntList &ls = c.dn[0], &rs = c.dn[1], &os = c.dn[2];
  IntList in = Take(lhs.dims, SpatialOf(ls)), win = Take(rhs.aval().dims, SpatialOf(rs));
  IntList out = Take(g.aval().dims, SpatialOf(os));
  IntLists padding;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t rd = Dilate(win[i], c.rhs_dil[i]);
    int64_t before = rd - c.padding[i][0] - 1;
    int64_t after = Dilate(in[i], c.lhs_dil[i]) + rd - 1 - Dilate(out[i], c.strides[i]) - before;
    padding.push_back({before, after});
  }
  Atom kernel = rhs;
  int64_t groups = std::max(c.fgc, c.bgc);
  if (groups > 1) {  // the output-feature groups move into the kernel's input features
    XS_ASSIGN_OR_RETURN(kernel, ReshapeAxisOutOf(e, rs[0], groups, kernel));
    XS_ASSIGN_OR_RETURN(kernel, ReshapeAxisInto(e, rs[0], rs[1], kernel));
  }
  Atom revd = e.Raw(kRev, {kernel}, {kernel.aval()}, {{"dimensions", SpatialOf(rs)}})[0];
  XS_ASSIGN_OR_RETURN(revd, ConvertTo(e, revd, g.aval()));
  XS_ASSIGN_OR_RETURN(Atom r, Conv(e, g, revd, base, c.lhs_dil, padding, c.strides, c.rhs_dil,
                                   {os, SwapFirstTwo(rs), ls}, groups, 1));
  XS_ASSIGN_OR_RETURN(r, ConvertTo(e, r, lhs));
  if (c.bgc > 1) {  // the batch groups come back out of the features
    XS_ASSIGN_OR_RETURN(r, ReshapeAxisOutOf(e, ls[1], c.bgc, r));
    XS_ASSIGN_OR_RETURN(r, ReshapeAxisInto(e, ls[1], ls[0], r));
  }
  return r;
}

// _conv_general_dilated_transpose_rhs: conv(lhs, g) with strides and rhs dilation swapped.
StatusOr<Atom> ConvTransposeRhs(Emitter& e, const Atom& g, const Atom& lhs, const AVal& rhs,
                                const ConvParams& c, const Params& base) {
  const IntList &ls = c.dn[0], &rs = c.dn[1], &os = c.dn[2];
  IntList in = Take(lhs.aval().dims, SpatialOf(ls)), win = Take(rhs.dims, SpatialOf(rs));
  IntList out = Take(g.aval().dims, SpatialOf(os));
  IntLists padding;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t lo = c.padding[i][0];
    int64_t from_lhs = Dilate(out[i], c.strides[i]) - Dilate(in[i], c.lhs_dil[i]);
    int64_t from_rhs = Dilate(win[i], c.rhs_dil[i]) - lo - 1;
    padding.push_back({lo, from_lhs + from_rhs});
  }
  XS_ASSIGN_OR_RETURN(Atom lhs_cast, ConvertTo(e, lhs, g.aval()));
  // Feature groups become batch groups of the transposed convolution and vice versa.
  XS_ASSIGN_OR_RETURN(Atom r, Conv(e, lhs_cast, g, base, c.rhs_dil, padding, c.lhs_dil, c.strides,
                                   {SwapFirstTwo(ls), SwapFirstTwo(os), SwapFirstTwo(rs)},
                                   c.bgc, c.fgc));
  return ConvertTo(e, r, rhs);
}

}  // namespace

void AddLinalgRules(RuleTable& t) {
  // conv_general_dilated is bilinear too: rhs first, then lhs.
  t["conv_general_dilated"] = {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(ConvParams c, GetConvParams(*r.eqn));
    AVal l_aval = InAval(r, 0), r_aval = InAval(r, 1);
    Atom lhs = r.in[0], rhs = r.in[1];
    bool active[2] = {r.active[0], r.active[1]};
    Params base = r.eqn->params;
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      if (active[1]) {
        XS_ASSIGN_OR_RETURN(Atom g, ConvTransposeRhs(e, *ct[0], lhs, r_aval, c, base));
        XS_RETURN_IF_ERROR(write(1, g));
      }
      if (active[0]) {
        XS_ASSIGN_OR_RETURN(Atom g, ConvTransposeLhs(e, *ct[0], l_aval, rhs, c, base));
        XS_RETURN_IF_ERROR(write(0, g));
      }
      return OkStatus();
    });
  }};
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
