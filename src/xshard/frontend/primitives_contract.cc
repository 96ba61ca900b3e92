// Abstract evaluation of the contractions (dot_general, conv_general_dilated), the windowed
// reductions (reduce_window_sum / reduce_window_max), the call primitives (pjit,
// custom_vjp_call) and autodiff's rev / select_and_scatter_add, with JAX's parameter names.
#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/frontend/primitive_rules.h"

namespace xs::fe::internal {
namespace {

using Out = StatusOr<std::vector<AVal>>;

Out DotGeneral(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 2, 2));
  XS_ASSIGN_OR_RETURN(IntLists dn, GetIntLists(prim, p, "dimension_numbers"));
  XS_ASSIGN_OR_RETURN(std::optional<DType> pref, GetOptDType(prim, p, "preferred_element_type"));
  if (dn.size() != 4) {
    return InvalidArgument(prim, ": dimension_numbers must hold 4 lists (lhs contracting, rhs "
                           "contracting, lhs batch, rhs batch), got ", dn.size());
  }
  const AVal &l = in[0], &r = in[1];
  if (l.dtype != r.dtype) {
    return InvalidArgument(prim, ": operand dtypes differ ", AValsText(in),
                           "; convert one with Astype");
  }
  if (dn[0].size() != dn[1].size() || dn[2].size() != dn[3].size()) {
    return InvalidArgument(prim, ": lhs and rhs need as many contracting (", dn[0].size(), " vs ",
                           dn[1].size(), ") and batch (", dn[2].size(), " vs ", dn[3].size(),
                           ") dims");
  }
  auto in_range = [](const IntList& dims, const AVal& a) {
    return std::all_of(dims.begin(), dims.end(), [&](int64_t d) { return d >= 0 && d < a.rank(); });
  };
  if (!in_range(dn[0], l) || !in_range(dn[2], l) || !in_range(dn[1], r) || !in_range(dn[3], r)) {
    return InvalidArgument(prim, ": dimension_numbers name dims outside ", AValsText(in));
  }
  for (int k : {0, 2}) {
    for (size_t i = 0; i < dn[k].size(); ++i) {
      int64_t ls = l.dims[dn[k][i]], rs = r.dims[dn[k + 1][i]];
      if (ls != rs) {
        return InvalidArgument(prim, ": ", k == 0 ? "contracting" : "batch", " dims ", dn[k][i],
                               " (size ", ls, ") and ", dn[k + 1][i], " (size ", rs,
                               ") differ for ", AValsText(in));
      }
    }
  }
  AVal out{pref.value_or(l.dtype), {}, l.weak_type && r.weak_type};
  for (int64_t d : dn[2]) out.dims.push_back(l.dims[d]);
  for (int64_t i = 0; i < l.rank(); ++i)
    if (!std::count(dn[0].begin(), dn[0].end(), i) && !std::count(dn[2].begin(), dn[2].end(), i))
      out.dims.push_back(l.dims[i]);
  for (int64_t i = 0; i < r.rank(); ++i)
    if (!std::count(dn[1].begin(), dn[1].end(), i) && !std::count(dn[3].begin(), dn[3].end(), i))
      out.dims.push_back(r.dims[i]);
  return std::vector<AVal>{out};
}

// Output size of one windowed spatial dim.
int64_t WindowOut(int64_t size, int64_t lhs_dil, int64_t lo, int64_t hi, int64_t window,
                  int64_t win_dil, int64_t stride) {
  int64_t in = size == 0 ? 0 : (size - 1) * lhs_dil + 1;
  int64_t padded = in + lo + hi;
  int64_t w = (window - 1) * win_dil + 1;
  return padded < w ? 0 : (padded - w) / stride + 1;
}

Status CheckLen(const std::string& prim, const std::string& what, size_t got, size_t want) {
  if (got != want) {
    return InvalidArgument(prim, ": ", what, " has ", got, " entries, needs ", want);
  }
  return OkStatus();
}

Out ConvGeneralDilated(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 2, 2));
  const AVal &l = in[0], &r = in[1];
  if (l.rank() != r.rank() || l.rank() < 2 || l.dtype != r.dtype) {
    return InvalidArgument(prim, ": lhs and rhs must have one dtype and one rank >= 2, got ",
                           AValsText(in));
  }
  size_t ns = static_cast<size_t>(l.rank() - 2);
  XS_ASSIGN_OR_RETURN(IntList strides, GetInts(prim, p, "window_strides"));
  XS_ASSIGN_OR_RETURN(IntLists padding, GetIntLists(prim, p, "padding"));
  XS_ASSIGN_OR_RETURN(IntList lhs_dil, GetIntsOr(prim, p, "lhs_dilation", IntList(ns, 1)));
  XS_ASSIGN_OR_RETURN(IntList rhs_dil, GetIntsOr(prim, p, "rhs_dilation", IntList(ns, 1)));
  XS_ASSIGN_OR_RETURN(IntLists dn, GetIntLists(prim, p, "dimension_numbers"));
  XS_ASSIGN_OR_RETURN(int64_t fgc, GetInt(prim, p, "feature_group_count"));
  XS_ASSIGN_OR_RETURN(int64_t bgc, GetInt(prim, p, "batch_group_count"));
  XS_ASSIGN_OR_RETURN(std::optional<DType> pref, GetOptDType(prim, p, "preferred_element_type"));
  XS_RETURN_IF_ERROR(CheckLen(prim, "window_strides", strides.size(), ns));
  XS_RETURN_IF_ERROR(CheckLen(prim, "padding", padding.size(), ns));
  XS_RETURN_IF_ERROR(CheckLen(prim, "lhs_dilation", lhs_dil.size(), ns));
  XS_RETURN_IF_ERROR(CheckLen(prim, "rhs_dilation", rhs_dil.size(), ns));
  XS_RETURN_IF_ERROR(CheckLen(prim, "dimension_numbers", dn.size(), 3));
  for (const IntList& spec : dn) {
    XS_RETURN_IF_ERROR(CheckLen(prim, "a dimension_numbers spec", spec.size(), ns + 2));
    for (int64_t d : spec) {
      if (d < 0 || d >= l.rank()) {
        return InvalidArgument(prim, ": dimension_numbers name dim ", d, " outside rank ",
                               l.rank());
      }
    }
  }
  const IntList &ls = dn[0], &rs = dn[1], &os = dn[2];
  int64_t in_features = l.dims[ls[1]];
  if (fgc < 1 || bgc < 1 || in_features % fgc != 0 || r.dims[rs[1]] * fgc != in_features) {
    return InvalidArgument(prim, ": lhs features ", in_features, " must equal rhs input features ",
                           r.dims[rs[1]], " times feature_group_count ", fgc, " for ",
                           AValsText(in));
  }
  AVal out{pref.value_or(l.dtype), std::vector<int64_t>(l.rank()), false};
  out.dims[os[0]] = l.dims[ls[0]] / bgc;
  out.dims[os[1]] = r.dims[rs[0]];
  for (size_t i = 0; i < ns; ++i) {
    if (padding[i].size() != 2 || strides[i] < 1) {
      return InvalidArgument(prim, ": padding entries are (low, high) pairs and strides >= 1");
    }
    out.dims[os[i + 2]] = WindowOut(l.dims[ls[i + 2]], lhs_dil[i], padding[i][0], padding[i][1],
                                    r.dims[rs[i + 2]], rhs_dil[i], strides[i]);
  }
  return std::vector<AVal>{out};
}

Out ReduceWindow(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  size_t r = in[0].dims.size();
  XS_ASSIGN_OR_RETURN(IntList window, GetInts(prim, p, "window_dimensions"));
  XS_ASSIGN_OR_RETURN(IntList strides, GetInts(prim, p, "window_strides"));
  XS_ASSIGN_OR_RETURN(IntLists padding, GetIntLists(prim, p, "padding"));
  XS_ASSIGN_OR_RETURN(IntList base_dil, GetIntsOr(prim, p, "base_dilation", IntList(r, 1)));
  XS_ASSIGN_OR_RETURN(IntList win_dil, GetIntsOr(prim, p, "window_dilation", IntList(r, 1)));
  for (auto [what, n] : {std::pair{"window_dimensions", window.size()},
                         {"window_strides", strides.size()}, {"padding", padding.size()},
                         {"base_dilation", base_dil.size()}, {"window_dilation", win_dil.size()}})
    XS_RETURN_IF_ERROR(CheckLen(prim, what, n, r));
  AVal out = in[0];
  for (size_t i = 0; i < r; ++i) {
    if (padding[i].size() != 2 || strides[i] < 1 || window[i] < 1) {
      return InvalidArgument(prim, ": padding entries are (low, high) pairs, strides and windows "
                             ">= 1");
    }
    out.dims[i] = WindowOut(in[0].dims[i], base_dil[i], padding[i][0], padding[i][1], window[i],
                            win_dil[i], strides[i]);
  }
  return std::vector<AVal>{out};
}

Status CheckCallInputs(const std::string& prim, const std::vector<AVal>& in, const Jaxpr& j) {
  bool ok = in.size() == j.invars.size();
  for (size_t i = 0; ok && i < in.size(); ++i)
    ok = in[i].dtype == j.invars[i].aval.dtype && in[i].dims == j.invars[i].aval.dims;
  if (!ok) {
    std::vector<AVal> want;
    for (const Var& v : j.invars) want.push_back(v.aval);
    return InvalidArgument(prim, ": operands ", AValsText(in), " do not match the jaxpr's inputs ",
                           AValsText(want));
  }
  return OkStatus();
}

std::vector<AVal> OutAVals(const Jaxpr& j) {
  std::vector<AVal> out;
  for (const Atom& a : j.outvars) out.push_back(a.aval());
  return out;
}

Out Pjit(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_ASSIGN_OR_RETURN(auto j, GetJaxpr(prim, p, "jaxpr"));
  XS_RETURN_IF_ERROR(CheckCallInputs(prim, in, *j));
  return OutAVals(*j);
}

Out CustomVjpCall(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_ASSIGN_OR_RETURN(auto call, GetJaxpr(prim, p, "call_jaxpr"));
  XS_ASSIGN_OR_RETURN(auto fwd, GetJaxpr(prim, p, "fwd_jaxpr"));
  XS_ASSIGN_OR_RETURN(auto bwd, GetJaxpr(prim, p, "bwd_jaxpr"));
  XS_ASSIGN_OR_RETURN(int64_t num_res, GetInt(prim, p, "num_res"));
  XS_RETURN_IF_ERROR(CheckCallInputs(prim, in, *call));
  XS_RETURN_IF_ERROR(CheckCallInputs(prim, in, *fwd));
  size_t n_out = call->outvars.size();
  if (num_res < 0 || fwd->outvars.size() != n_out + static_cast<size_t>(num_res) ||
      bwd->invars.size() != n_out + static_cast<size_t>(num_res) ||
      bwd->outvars.size() != in.size()) {
    return InvalidArgument(prim, ": fwd_jaxpr must return the ", n_out, " outputs and num_res=",
                           num_res, " residuals (returns ", fwd->outvars.size(),
                           "); bwd_jaxpr must take residuals + output cotangents (takes ",
                           bwd->invars.size(), ") and return one cotangent per input (",
                           bwd->outvars.size(), " for ", in.size(), ")");
  }
  // As jax.custom_vjp: the cotangent of a float input is typed like it (an integer input's is
  // ignored).
  for (size_t i = 0; i < in.size(); ++i) {
    const AVal& ct = bwd->outvars[i].aval();
    if ((IsFloating(in[i].dtype) || IsComplex(in[i].dtype)) && (ct.dtype != in[i].dtype || ct.dims != in[i].dims)) {
      return InvalidArgument(prim, ": bwd_jaxpr returns ", ct.ToString(),
                             " as the cotangent of "
                             "input ",
                             i, " ", in[i].ToString(),
                             "; the backward function must "
                             "return one cotangent per input with that input's shape and dtype");
    }
  }
  return OutAVals(*call);
}

// autodiff's own primitives (autodiff.h): rev[dimensions] and select_and_scatter_add (typed
// like its operand, the second input).
Out Rev(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(IntList dims, GetInts(prim, p, "dimensions"));
  for (int64_t d : dims) {
    if (d < 0 || d >= in[0].rank()) {
      return InvalidArgument(prim, ": dimension ", d, " is not a dim of ", in[0].ToString());
    }
  }
  return std::vector<AVal>{in[0]};
}

Out SelectAndScatterAdd(const std::string& prim, const std::vector<AVal>& in, const Params&) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 2, 2));
  AVal out = in[1];
  out.weak_type = false;
  return std::vector<AVal>{out};
}

}  // namespace

void AddContractionRules(std::map<std::string, Rule>& table) {
  table["dot_general"] = DotGeneral;
  table["conv_general_dilated"] = ConvGeneralDilated;
  table["reduce_window_sum"] = ReduceWindow;
  table["reduce_window_max"] = ReduceWindow;
  table["pjit"] = Pjit;
  table["custom_vjp_call"] = CustomVjpCall;
  table["rev"] = Rev;
  table["select_and_scatter_add"] = SelectAndScatterAdd;
}

}  // namespace xs::fe::internal
