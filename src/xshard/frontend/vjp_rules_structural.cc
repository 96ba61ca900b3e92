// VJP rules of the shape primitives (broadcast_in_dim, reshape, squeeze, expand_dims,
// transpose), the reductions (reduce_sum, reduce_max / reduce_min, reduce_window_sum /
// reduce_window_max) and the slicing primitives (slice, pad, concatenate, dynamic_slice,
// dynamic_update_slice), transposed as JAX's rules in jax/_src/lax/lax.py, slicing.py and
// windowed_reductions.py.
#include <algorithm>
#include <numeric>

#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/autodiff_internal.h"

namespace xs::fe::ad {
namespace {

// A rule whose forward part keeps nothing and whose backward part maps ct to the cotangent of
// input 0 (a linear primitive of one operand).
using LinearFn = std::function<StatusOr<Atom>(Emitter& e, const Atom& ct, const RuleInput& r)>;
VjpRule Linear(LinearFn fn) {
  return {[fn](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    RuleInput saved = r;
    return Backward([fn, saved](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom g, fn(e, *ct[0], saved));
      return write(0, g);
    });
  }};
}

StatusOr<Atom> ReshapeTo(Emitter& e, const Atom& t, const std::vector<int64_t>& dims) {
  if (t.aval().dims == dims) return t;
  return e.Op("reshape", {t}, {{"new_sizes", IntList(dims)}, {"dimensions", Param{}}});
}

StatusOr<Atom> ReduceSum(Emitter& e, const Atom& t, const IntList& axes) {
  if (axes.empty()) return t;
  return e.Op("reduce_sum", {t}, {{"axes", axes}});
}

// lax.expand_dims as JAX emits it: a broadcast_in_dim of `t` to `dims`, t's dims landing at
// `kept` (the positions that are not new size-1 dims).
StatusOr<Atom> ExpandTo(Emitter& e, const Atom& t, const std::vector<int64_t>& dims,
                        const IntList& kept) {
  if (t.aval().dims == dims) return t;
  return e.Op("broadcast_in_dim", {t},
              {{"shape", IntList(dims)}, {"broadcast_dimensions", kept}});
}

// reduce_sum's transpose: broadcast ct back over the reduced axes.
StatusOr<Atom> BroadcastBack(Emitter& e, const Atom& ct, const AVal& operand,
                             const IntList& axes) {
  IntList keep;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) keep.push_back(i);
  }
  return e.Op("broadcast_in_dim", {ct},
              {{"shape", IntList(operand.dims)}, {"broadcast_dimensions", keep}});
}

// reduce_max / reduce_min: the equal-to-result mask divided by the count of equal elements.
VjpRule Chooser() {
  return {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(IntList axes, GetInts(*r.eqn, "axes"));
    AVal operand = InAval(r, 0);
    // JAX reshapes ans to size-1 reduced dims and relies on eq broadcasting them; our
    // elementwise ops need equal shapes, so ans is broadcast back to the operand instead.
    XS_ASSIGN_OR_RETURN(Atom ans, BroadcastBack(e, r.out[0], operand, axes));
    XS_ASSIGN_OR_RETURN(Atom eq, e.Op("eq", {r.in[0], ans}));
    XS_ASSIGN_OR_RETURN(Atom mask, e.Op("convert_element_type", {eq},
                                        {{"new_dtype", operand.dtype}, {"weak_type", false}}));
    XS_ASSIGN_OR_RETURN(Atom counts, ReduceSum(e, mask, axes));
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom d, e.Op("div", {*ct[0], counts}));
      XS_ASSIGN_OR_RETURN(Atom b, BroadcastBack(e, d, operand, axes));
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("mul", {b, mask}));
      return write(0, g);
    });
  }};
}

// The window padding of reduce_window_sum's transpose (JAX's _conv_general_vjp_lhs_padding
// without dilation): pad_before = window - lo - 1, pad_after = in + window - 1 - out' - before,
// with out' the dilated output size (out - 1) * stride + 1.
IntLists WindowTransposePadding(const AVal& in, const IntList& window, const IntList& strides,
                                const AVal& out, const IntLists& padding) {
  IntLists config;
  for (int64_t i = 0; i < in.rank(); ++i) {
    int64_t out_dilated = out.dims[i] == 0 ? 0 : (out.dims[i] - 1) * strides[i] + 1;
    int64_t before = window[i] - padding[i][0] - 1;
    int64_t after = in.dims[i] + window[i] - 1 - out_dilated - before;
    config.push_back({before, after, strides[i] - 1});
  }
  return config;
}

}  // namespace

void AddStructuralRules(RuleTable& t) {
  // broadcast_in_dim: sum over the broadcast dims, then put back the operand's size-1 dims.
  t["broadcast_in_dim"] = Linear([](Emitter& e, const Atom& ct,
                                    const RuleInput& r) -> StatusOr<Atom> {
    XS_ASSIGN_OR_RETURN(IntList bdims, GetInts(*r.eqn, "broadcast_dimensions"));
    const AVal& operand = InAval(r, 0);
    const AVal& out = OutAval(r, 0);
    std::vector<bool> kept(out.rank(), false);
    for (int64_t i = 0; i < operand.rank(); ++i) {
      if (operand.dims[i] != 1) kept[bdims[i]] = true;
    }
    IntList axes;
    for (int64_t i = 0; i < out.rank(); ++i) {
      if (!kept[i]) axes.push_back(i);
    }
    XS_ASSIGN_OR_RETURN(Atom sum, ReduceSum(e, ct, axes));
    IntList non_unit;
    for (int64_t i = 0; i < operand.rank(); ++i) {
      if (operand.dims[i] != 1) non_unit.push_back(i);
    }
    return ExpandTo(e, sum, operand.dims, non_unit);
  });
  auto reshape_back = [](Emitter& e, const Atom& ct, const RuleInput& r) {
    return ReshapeTo(e, ct, InAval(r, 0).dims);
  };
  t["reshape"] = Linear(reshape_back);
  t["expand_dims"] = Linear(reshape_back);  // not a JAX primitive; its inverse is a reshape
  // squeeze: JAX's expand_dims of ct (a broadcast_in_dim).
  t["squeeze"] = Linear([](Emitter& e, const Atom& ct, const RuleInput& r) -> StatusOr<Atom> {
    XS_ASSIGN_OR_RETURN(IntList dims, GetInts(*r.eqn, "dimensions"));
    const AVal& operand = InAval(r, 0);
    IntList kept;
    for (int64_t i = 0; i < operand.rank(); ++i) {
      if (std::find(dims.begin(), dims.end(), i) == dims.end()) kept.push_back(i);
    }
    return ExpandTo(e, ct, operand.dims, kept);
  });
  t["transpose"] = Linear([](Emitter& e, const Atom& ct, const RuleInput& r) -> StatusOr<Atom> {
    XS_ASSIGN_OR_RETURN(IntList perm, GetInts(*r.eqn, "permutation"));
    IntList inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
    return e.Op("transpose", {ct}, {{"permutation", inverse}});
  });
  // rev (from conv's lhs cotangent, differentiated again): its own transpose.
  t[kRev] = Linear([](Emitter& e, const Atom& ct, const RuleInput& r) -> StatusOr<Atom> {
    XS_ASSIGN_OR_RETURN(IntList dims, GetInts(*r.eqn, "dimensions"));
    return e.Raw(kRev, {ct}, {ct.aval()}, {{"dimensions", dims}})[0];
  });
  t["reduce_sum"] = Linear([](Emitter& e, const Atom& ct, const RuleInput& r) -> StatusOr<Atom> {
    XS_ASSIGN_OR_RETURN(IntList axes, GetInts(*r.eqn, "axes"));
    return BroadcastBack(e, ct, InAval(r, 0), axes);
  });
  t["reduce_max"] = Chooser();
  t["reduce_min"] = Chooser();
  // slice: pad ct with zeros back to the operand (interior padding for strides).
  t["slice"] = Linear([](Emitter& e, const Atom& ct, const RuleInput& r) -> StatusOr<Atom> {
    XS_ASSIGN_OR_RETURN(IntList start, GetInts(*r.eqn, "start_indices"));
    const AVal& operand = InAval(r, 0);
    IntList strides(start.size(), 1);
    auto it = r.eqn->params.find("strides");
    if (it != r.eqn->params.end() && std::holds_alternative<IntList>(it->second)) {
      strides = std::get<IntList>(it->second);
    }
    const AVal& tv = ct.aval();
    IntLists config;
    for (size_t i = 0; i < start.size(); ++i) {
      int64_t real_limit =
          start[i] + (tv.dims[i] == 0 ? 0 : 1 + (tv.dims[i] - 1) * strides[i]);
      config.push_back({start[i], operand.dims[i] - real_limit, strides[i] - 1});
    }
    return e.Op("pad", {ct, Emitter::Lit(0.0, tv.dtype)}, {{"padding_config", config}});
  });
  // pad: operand gets ct unpadded (negative padding, then a strided slice over the interior);
  // the padding value gets sum(ct) - sum(operand's ct).
  t["pad"] = {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(IntLists config, GetIntLists(*r.eqn, "padding_config"));
    std::vector<bool> active = r.active;
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      const Atom& tc = *ct[0];
      IntList all(tc.aval().rank());
      std::iota(all.begin(), all.end(), 0);
      IntLists unpad;
      IntList zeros, limits, strides;
      for (const IntList& c : config) unpad.push_back({-c[0], -c[1], 0});
      XS_ASSIGN_OR_RETURN(Atom unpadded, e.Op("pad", {tc, Emitter::Lit(0.0, tc.aval().dtype)},
                                              {{"padding_config", unpad}}));
      for (size_t i = 0; i < config.size(); ++i) {
        zeros.push_back(0);
        limits.push_back(unpadded.aval().dims[i]);
        strides.push_back(config[i][2] + 1);
      }
      XS_ASSIGN_OR_RETURN(Atom t_operand, e.Op("slice", {unpadded},
                                               {{"start_indices", zeros},
                                                {"limit_indices", limits},
                                                {"strides", strides}}));
      Ct t_value;
      if (active[1]) {
        XS_ASSIGN_OR_RETURN(Atom total, ReduceSum(e, tc, all));
        XS_ASSIGN_OR_RETURN(Atom inner, ReduceSum(e, t_operand, all));
        XS_ASSIGN_OR_RETURN(t_value, e.Op("sub", {total, inner}));
      }
      if (active[0]) XS_RETURN_IF_ERROR(write(0, t_operand));
      if (t_value) XS_RETURN_IF_ERROR(write(1, *t_value));
      return OkStatus();
    });
  }};
  // concatenate: each active operand gets its slice of ct.
  t["concatenate"] = {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(int64_t dim, GetInt(*r.eqn, "dimension"));
    std::vector<AVal> avals;
    for (size_t i = 0; i < r.in.size(); ++i) avals.push_back(InAval(r, i));
    std::vector<bool> active = r.active;
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      const AVal& tv = ct[0]->aval();
      int64_t offset = 0;
      std::vector<std::pair<size_t, Atom>> slices;  // all made before any is written, as JAX
      for (size_t i = 0; i < avals.size(); ++i) {
        IntList start(tv.rank(), 0), limit(tv.dims);
        start[dim] = offset;
        offset += avals[i].dims[dim];
        limit[dim] = offset;
        if (!active[i]) continue;
        XS_ASSIGN_OR_RETURN(Atom s, e.Op("slice", {*ct[0]},
                                         {{"start_indices", start},
                                          {"limit_indices", limit},
                                          {"strides", Param{}}}));
        slices.push_back({i, s});
      }
      for (const auto& [i, s] : slices) XS_RETURN_IF_ERROR(write(i, s));
      return OkStatus();
    });
  }};
  // dynamic_slice(operand, *starts): dynamic_update_slice of ct into zeros.
  t["dynamic_slice"] = {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    AVal operand = InAval(r, 0);
    operand.weak_type = false;
    std::vector<Atom> starts(r.in.begin() + 1, r.in.end());
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom zeros, e.Zeros(operand));
      std::vector<Atom> in = {zeros, *ct[0]};
      in.insert(in.end(), starts.begin(), starts.end());
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("dynamic_update_slice", in));
      return write(0, g);
    });
  }};
  // dynamic_update_slice(operand, update, *starts): operand gets ct with zeros over the
  // update window; update gets the window of ct.
  t["dynamic_update_slice"] = {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    AVal update = InAval(r, 1);
    update.weak_type = false;
    std::vector<Atom> starts(r.in.begin() + 2, r.in.end());
    std::vector<bool> active = r.active;
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      XS_ASSIGN_OR_RETURN(Atom zeros, e.Zeros(update));
      Ct op_t, up_t;
      if (active[0]) {
        std::vector<Atom> in = {*ct[0], zeros};
        in.insert(in.end(), starts.begin(), starts.end());
        XS_ASSIGN_OR_RETURN(op_t, e.Op("dynamic_update_slice", in));
      }
      if (active[1]) {
        std::vector<Atom> in = {*ct[0]};
        in.insert(in.end(), starts.begin(), starts.end());
        XS_ASSIGN_OR_RETURN(up_t, e.Op("dynamic_slice", in,
                                       {{"slice_sizes", IntList(update.dims)}}));
      }
      if (op_t) XS_RETURN_IF_ERROR(write(0, *op_t));
      if (up_t) XS_RETURN_IF_ERROR(write(1, *up_t));
      return OkStatus();
    });
  }};
  // reduce_window_sum: pad ct (interior stride - 1) and sum it over the window again.
  t["reduce_window_sum"] = Linear([](Emitter& e, const Atom& ct,
                                     const RuleInput& r) -> StatusOr<Atom> {
    XS_ASSIGN_OR_RETURN(IntList window, GetInts(*r.eqn, "window_dimensions"));
    XS_ASSIGN_OR_RETURN(IntList strides, GetInts(*r.eqn, "window_strides"));
    XS_ASSIGN_OR_RETURN(IntLists padding, GetIntLists(*r.eqn, "padding"));
    IntLists config =
        WindowTransposePadding(InAval(r, 0), window, strides, OutAval(r, 0), padding);
    XS_ASSIGN_OR_RETURN(Atom padded, e.Op("pad", {ct, Emitter::Lit(0.0, ct.aval().dtype)},
                                          {{"padding_config", config}}));
    IntList ones(window.size(), 1);
    IntLists no_pad(window.size(), IntList{0, 0});
    Params params = {{"window_dimensions", window}, {"window_strides", ones}, {"padding", no_pad}};
    // Dilation params (JAX's names) carried when the equation has them; only 1s are supported.
    for (const char* name : {"base_dilation", "window_dilation"}) {
      if (!r.eqn->params.count(name)) continue;
      XS_ASSIGN_OR_RETURN(IntList d, GetInts(*r.eqn, name));
      if (d != ones) {
        return Unimplemented("reduce_window_sum: gradient with ", name, " other than 1s");
      }
      params[name] = ones;
    }
    return e.Op("reduce_window_sum", {padded}, params);
  });
  // reduce_window_max: select_and_scatter_add of ct onto the windows' maxima.
  t["reduce_window_max"] = {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    Params params;
    for (const char* name : {"window_dimensions", "window_strides", "padding"}) {
      auto it = r.eqn->params.find(name);
      if (it == r.eqn->params.end()) {
        return InvalidArgument("reduce_window_max: param '", name, "' is missing");
      }
      params[name] = it->second;
    }
    params["select_prim"] = std::string("ge");
    Atom operand = r.in[0];
    AVal out = InAval(r, 0);
    out.weak_type = false;
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      return write(0, e.Raw(kSelectAndScatterAdd, {*ct[0], operand}, {out}, params)[0]);
    });
  }};
}

}  // namespace xs::fe::ad
