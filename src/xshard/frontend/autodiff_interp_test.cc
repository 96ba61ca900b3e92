// The f64 host interpreter of autodiff_interp_test.h (straightforward loops over multi-indices,
// no sharing with the front end's lowering) and the Xshard runner.
#include "xshard/frontend/autodiff_interp_test.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>

#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/tensor.h"

namespace xs::fe::adtest {
namespace {

using V = HostValue;

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}
std::vector<int64_t> Unravel(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (int64_t k = static_cast<int64_t>(dims.size()) - 1; k >= 0; --k) {
    idx[k] = i % dims[k];
    i /= dims[k];
  }
  return idx;
}
int64_t Ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t i = 0;
  for (size_t k = 0; k < dims.size(); ++k) i = i * dims[k] + idx[k];
  return i;
}
double At(const V& x, int64_t i) { return x.v.size() == 1 ? x.v[0] : x.v[i]; }

const IntList& Ints(const Eqn& e, const std::string& n) {
  return std::get<IntList>(e.params.at(n));
}
const IntLists& Lists(const Eqn& e, const std::string& n) {
  return std::get<IntLists>(e.params.at(n));
}
IntList IntsOr(const Eqn& e, const std::string& n, IntList fallback) {
  auto it = e.params.find(n);
  if (it == e.params.end() || !std::holds_alternative<IntList>(it->second)) return fallback;
  return std::get<IntList>(it->second);
}

const std::map<std::string, std::function<double(double)>>& Unary() {
  static const auto* t = new std::map<std::string, std::function<double(double)>>{
      {"neg", [](double x) { return -x; }},
      {"exp", [](double x) { return std::exp(x); }},
      {"log", [](double x) { return std::log(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"logistic", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"sqrt", [](double x) { return std::sqrt(x); }},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
      {"abs", [](double x) { return std::fabs(x); }},
      {"sign", [](double x) { return static_cast<double>((x > 0) - (x < 0)); }},
      {"sin", [](double x) { return std::sin(x); }},
      {"cos", [](double x) { return std::cos(x); }},
      {"sharding_constraint", [](double x) { return x; }},
      {"convert_element_type", [](double x) { return x; }},
      {"not", [](double x) { return x != 0 ? 0.0 : 1.0; }},  // pred only
  };
  return *t;
}

const std::map<std::string, std::function<double(double, double)>>& Binary() {
  static const auto* t = new std::map<std::string, std::function<double(double, double)>>{
      {"add", [](double a, double b) { return a + b; }},
      {"add_any", [](double a, double b) { return a + b; }},
      {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},
      {"div", [](double a, double b) { return a / b; }},
      {"max", [](double a, double b) { return std::max(a, b); }},
      {"min", [](double a, double b) { return std::min(a, b); }},
      {"pow", [](double a, double b) { return std::pow(a, b); }},
      {"eq", [](double a, double b) { return double(a == b); }},
      {"ne", [](double a, double b) { return double(a != b); }},
      {"lt", [](double a, double b) { return double(a < b); }},
      {"le", [](double a, double b) { return double(a <= b); }},
      {"gt", [](double a, double b) { return double(a > b); }},
      {"ge", [](double a, double b) { return double(a >= b); }},
      {"and", [](double a, double b) { return double(a != 0 && b != 0); }},  // pred only
      {"or", [](double a, double b) { return double(a != 0 || b != 0); }},
  };
  return *t;
}

// Windows of reduce_window_* / select_and_scatter_add: calls fn(out_linear, in_linear or -1
// for padding) for each window element, in row-major window order.
void ForWindows(const Eqn& e, const std::vector<int64_t>& in_dims,
                const std::vector<int64_t>& out_dims,
                const std::function<void(int64_t, int64_t)>& fn) {
  const IntList& win = Ints(e, "window_dimensions");
  const IntList& str = Ints(e, "window_strides");
  const IntLists& pad = Lists(e, "padding");
  for (int64_t o = 0; o < Count(out_dims); ++o) {
    std::vector<int64_t> oi = Unravel(o, out_dims);
    for (int64_t w = 0; w < Count(win); ++w) {
      std::vector<int64_t> wi = Unravel(w, win), ii(in_dims.size());
      bool inside = true;
      for (size_t k = 0; k < in_dims.size(); ++k) {
        ii[k] = oi[k] * str[k] + wi[k] - pad[k][0];
        inside = inside && ii[k] >= 0 && ii[k] < in_dims[k];
      }
      fn(o, inside ? Ravel(ii, in_dims) : -1);
    }
  }
}

StatusOr<V> Eval(const Eqn& e, const std::vector<V>& in, const std::vector<int64_t>& od) {
  V out{od, std::vector<double>(Count(od), 0.0)};
  const std::string& p = e.primitive;
  int64_t n = Count(od);
  if (auto it = Unary().find(p); it != Unary().end()) {
    for (int64_t i = 0; i < n; ++i) out.v[i] = it->second(At(in[0], i));
  } else if (auto it2 = Binary().find(p); it2 != Binary().end()) {
    for (int64_t i = 0; i < n; ++i) out.v[i] = it2->second(At(in[0], i), At(in[1], i));
  } else if (p == "integer_pow") {
    int64_t y = std::get<int64_t>(e.params.at("y"));
    for (int64_t i = 0; i < n; ++i) out.v[i] = std::pow(At(in[0], i), static_cast<double>(y));
  } else if (p == "select_n") {
    for (int64_t i = 0; i < n; ++i) out.v[i] = At(in[1 + static_cast<int64_t>(At(in[0], i))], i);
  } else if (p == "broadcast_in_dim") {
    const IntList& bd = Ints(e, "broadcast_dimensions");
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> oi = Unravel(i, od), ii(in[0].dims.size());
      for (size_t k = 0; k < ii.size(); ++k) ii[k] = in[0].dims[k] == 1 ? 0 : oi[bd[k]];
      out.v[i] = in[0].v[Ravel(ii, in[0].dims)];
    }
  } else if (p == "reshape" || p == "squeeze" || p == "expand_dims") {
    out.v = in[0].v;
  } else if (p == "transpose") {
    const IntList& perm = Ints(e, "permutation");
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> oi = Unravel(i, od), ii(od.size());
      for (size_t k = 0; k < od.size(); ++k) ii[perm[k]] = oi[k];
      out.v[i] = in[0].v[Ravel(ii, in[0].dims)];
    }
  } else if (p == "reduce_sum" || p == "reduce_max" || p == "reduce_min") {
    const IntList& axes = Ints(e, "axes");
    double init = p == "reduce_sum"   ? 0.0
                  : p == "reduce_max" ? -std::numeric_limits<double>::infinity()
                                      : std::numeric_limits<double>::infinity();
    std::fill(out.v.begin(), out.v.end(), init);
    for (int64_t i = 0; i < Count(in[0].dims); ++i) {
      std::vector<int64_t> ii = Unravel(i, in[0].dims), oi;
      for (size_t k = 0; k < ii.size(); ++k) {
        if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(k)) == axes.end()) {
          oi.push_back(ii[k]);
        }
      }
      double& o = out.v[Ravel(oi, od)];
      o = p == "reduce_sum"   ? o + in[0].v[i]
          : p == "reduce_max" ? std::max(o, in[0].v[i])
                              : std::min(o, in[0].v[i]);
    }
  } else if (p == "slice") {
    const IntList& start = Ints(e, "start_indices");
    IntList str = IntsOr(e, "strides", IntList(od.size(), 1));
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> oi = Unravel(i, od);
      for (size_t k = 0; k < od.size(); ++k) oi[k] = start[k] + oi[k] * str[k];
      out.v[i] = in[0].v[Ravel(oi, in[0].dims)];
    }
  } else if (p == "pad") {
    const IntLists& cfg = Lists(e, "padding_config");
    std::fill(out.v.begin(), out.v.end(), in[1].v[0]);
    for (int64_t i = 0; i < Count(in[0].dims); ++i) {
      std::vector<int64_t> ii = Unravel(i, in[0].dims);
      bool inside = true;
      for (size_t k = 0; k < ii.size(); ++k) {
        ii[k] = cfg[k][0] + ii[k] * (cfg[k][2] + 1);
        inside = inside && ii[k] >= 0 && ii[k] < od[k];
      }
      if (inside) out.v[Ravel(ii, od)] = in[0].v[i];
    }
  } else if (p == "concatenate") {
    int64_t dim = std::get<int64_t>(e.params.at("dimension"));
    int64_t offset = 0;
    for (const V& x : in) {
      for (int64_t i = 0; i < Count(x.dims); ++i) {
        std::vector<int64_t> ii = Unravel(i, x.dims);
        ii[dim] += offset;
        out.v[Ravel(ii, od)] = x.v[i];
      }
      offset += x.dims[dim];
    }
  } else if (p == "dynamic_slice" || p == "dynamic_update_slice") {
    bool update = p == "dynamic_update_slice";
    const V& op = in[0];
    const std::vector<int64_t>& wd = update ? in[1].dims : od;
    std::vector<int64_t> start;
    for (size_t k = 0; k < op.dims.size(); ++k) {
      int64_t s = static_cast<int64_t>(in[(update ? 2 : 1) + k].v[0]);
      start.push_back(std::clamp<int64_t>(s, 0, op.dims[k] - wd[k]));
    }
    if (update) out.v = op.v;
    for (int64_t i = 0; i < Count(wd); ++i) {
      std::vector<int64_t> wi = Unravel(i, wd);
      for (size_t k = 0; k < wi.size(); ++k) wi[k] += start[k];
      if (update) {
        out.v[Ravel(wi, od)] = in[1].v[i];
      } else {
        out.v[i] = op.v[Ravel(wi, op.dims)];
      }
    }
  } else if (p == "dot_general") {
    const IntLists& dn = Lists(e, "dimension_numbers");
    const V& a = in[0];
    const V& b = in[1];
    auto free_dims = [](size_t rank, const IntList& c, const IntList& bt) {
      IntList f;
      for (int64_t k = 0; k < static_cast<int64_t>(rank); ++k) {
        if (std::find(c.begin(), c.end(), k) == c.end() &&
            std::find(bt.begin(), bt.end(), k) == bt.end()) {
          f.push_back(k);
        }
      }
      return f;
    };
    IntList af = free_dims(a.dims.size(), dn[0], dn[2]);
    IntList bf = free_dims(b.dims.size(), dn[1], dn[3]);
    std::vector<int64_t> cdims;
    for (int64_t c : dn[0]) cdims.push_back(a.dims[c]);
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> oi = Unravel(i, od), ai(a.dims.size()), bi(b.dims.size());
      size_t k = 0;
      for (size_t q = 0; q < dn[2].size(); ++q, ++k) ai[dn[2][q]] = bi[dn[3][q]] = oi[k];
      for (int64_t d : af) ai[d] = oi[k++];
      for (int64_t d : bf) bi[d] = oi[k++];
      double s = 0;
      for (int64_t c = 0; c < Count(cdims); ++c) {
        std::vector<int64_t> ci = Unravel(c, cdims);
        for (size_t q = 0; q < ci.size(); ++q) ai[dn[0][q]] = bi[dn[1][q]] = ci[q];
        s += a.v[Ravel(ai, a.dims)] * b.v[Ravel(bi, b.dims)];
      }
      out.v[i] = s;
    }
  } else if (p == "reduce_window_sum" || p == "reduce_window_max") {
    bool mx = p == "reduce_window_max";
    std::fill(out.v.begin(), out.v.end(), mx ? -std::numeric_limits<double>::infinity() : 0.0);
    ForWindows(e, in[0].dims, od, [&](int64_t o, int64_t i) {
      double x = i < 0 ? (mx ? -std::numeric_limits<double>::infinity() : 0.0) : in[0].v[i];
      out.v[o] = mx ? std::max(out.v[o], x) : out.v[o] + x;
    });
  } else if (p == "select_and_scatter_add") {
    const V& src = in[0];
    std::vector<int64_t> best(Count(src.dims), -1);
    ForWindows(e, in[1].dims, src.dims, [&](int64_t o, int64_t i) {
      if (i >= 0 && (best[o] < 0 || in[1].v[i] > in[1].v[best[o]])) best[o] = i;
    });
    for (size_t o = 0; o < best.size(); ++o) {
      if (best[o] >= 0) out.v[best[o]] += src.v[o];
    }
  } else if (p == "rev") {
    const IntList& dims = Ints(e, "dimensions");
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> ii = Unravel(i, od);
      for (int64_t d : dims) ii[d] = od[d] - 1 - ii[d];
      out.v[i] = in[0].v[Ravel(ii, od)];
    }
  } else if (p == "conv_general_dilated") {
    // XLA's semantics with groups: output feature f reads lhs features of group
    // f / (O / fgc) and lhs batch (f / (O / bgc)) * (N / bgc) + n.
    const int64_t fgc = std::get<int64_t>(e.params.at("feature_group_count"));
    const int64_t bgc = std::get<int64_t>(e.params.at("batch_group_count"));
    const IntLists& dn = Lists(e, "dimension_numbers");
    const IntList &ls = dn[0], &rs = dn[1], &os = dn[2];
    size_t ns = ls.size() - 2;
    const IntList& str = Ints(e, "window_strides");
    const IntLists& pad = Lists(e, "padding");
    IntList ld = IntsOr(e, "lhs_dilation", IntList(ns, 1));
    IntList rd = IntsOr(e, "rhs_dilation", IntList(ns, 1));
    const V& l = in[0];
    const V& r = in[1];
    const int64_t n_lhs = l.dims[ls[0]], o_feat = od[os[1]];
    std::vector<int64_t> kdims;  // (in features per group, spatial...)
    kdims.push_back(r.dims[rs[1]]);
    for (size_t i = 0; i < ns; ++i) kdims.push_back(r.dims[rs[2 + i]]);
    for (int64_t o = 0; o < n; ++o) {
      std::vector<int64_t> oi = Unravel(o, od), li(l.dims.size()), ri(r.dims.size());
      const int64_t f = oi[os[1]];
      li[ls[0]] = (f / (o_feat / bgc)) * (n_lhs / bgc) + oi[os[0]];
      ri[rs[0]] = f;
      const int64_t feature_base = (f / (o_feat / fgc)) * kdims[0];
      double s = 0;
      for (int64_t k = 0; k < Count(kdims); ++k) {
        std::vector<int64_t> ki = Unravel(k, kdims);
        li[ls[1]] = feature_base + ki[0];
        ri[rs[1]] = ki[0];
        bool ok = true;
        for (size_t i = 0; i < ns && ok; ++i) {
          int64_t pos = oi[os[2 + i]] * str[i] + ki[1 + i] * rd[i] - pad[i][0];
          ok = pos >= 0 && pos % ld[i] == 0 && pos / ld[i] < l.dims[ls[2 + i]];
          li[ls[2 + i]] = pos / std::max<int64_t>(ld[i], 1);
          ri[rs[2 + i]] = ki[1 + i];
        }
        if (ok) s += l.v[Ravel(li, l.dims)] * r.v[Ravel(ri, r.dims)];
      }
      out.v[o] = s;
    }
  } else if (p == "iota") {
    int64_t dim = std::get<int64_t>(e.params.at("dimension"));
    for (int64_t i = 0; i < n; ++i) out.v[i] = static_cast<double>(Unravel(i, od)[dim]);
  } else if (p == "pjit" || p == "custom_vjp_call") {
    const auto& j =
        std::get<std::shared_ptr<const Jaxpr>>(e.params.at(p == "pjit" ? "jaxpr" : "call_jaxpr"));
    XS_ASSIGN_OR_RETURN(std::vector<V> r, Interpret(*j, in));
    return r[0];
  } else {
    return Unimplemented("interpreter: primitive ", p);
  }
  return out;
}

}  // namespace

StatusOr<std::vector<V>> Interpret(const Jaxpr& j, const std::vector<V>& args) {
  std::map<int64_t, V> env;
  for (size_t i = 0; i < j.constvars.size(); ++i) {
    V c{j.consts[i].dims(), {}};
    for (int64_t k = 0; k < j.consts[i].num_elements(); ++k)
      c.v.push_back(j.consts[i].GetDouble(k));
    env[j.constvars[i].id] = c;
  }
  for (size_t i = 0; i < args.size(); ++i) env[j.invars[i].id] = args[i];
  auto get = [&](const Atom& a) {
    if (a.is_literal()) return V{{}, {a.literal->GetDouble(0)}};
    return env.at(a.var.id);
  };
  for (const Eqn& e : j.eqns) {
    std::vector<V> in;
    for (const Atom& a : e.inputs) in.push_back(get(a));
    if (e.outputs.size() > 1) {  // multi-output calls
      const auto& sub = std::get<std::shared_ptr<const Jaxpr>>(
          e.params.at(e.primitive == "pjit" ? "jaxpr" : "call_jaxpr"));
      XS_ASSIGN_OR_RETURN(std::vector<V> r, Interpret(*sub, in));
      for (size_t k = 0; k < r.size(); ++k) env[e.outputs[k].id] = r[k];
      continue;
    }
    XS_ASSIGN_OR_RETURN(V r, Eval(e, in, e.outputs[0].aval.dims));
    env[e.outputs[0].id] = r;
  }
  std::vector<V> out;
  for (const Atom& a : j.outvars) {
    V v = get(a);
    out.push_back(v);
  }
  return out;
}

// Runs `j` through the front end: autodiff's primitives expanded, lowered, compiled, run.
Xshard::Xshard(const Jaxpr& j) {
  for (const Var& v : j.invars) in_dtypes_.push_back(v.aval.dtype);
  auto x = ExpandAutodiffPrimitives(j);
  EXPECT_TRUE(x.ok()) << x.status().ToString();
  if (!x.ok()) return;
  auto c = CompileJaxpr(*x, "autodiff_test", {}, {});
  EXPECT_TRUE(c.ok()) << c.status().ToString() << "\n" << PrintJaxpr(*x);
  if (c.ok()) compiled_ = *c;
}
StatusOr<std::vector<HostValue>> Xshard::Run(const std::vector<HostValue>& args) const {
  if (!compiled_) return Internal("not compiled");
  std::vector<Tensor> in;
  for (size_t i = 0; i < args.size(); ++i) {
    Array a = Array::FromVector<double>(args[i].dims, args[i].v);
    if (i < in_dtypes_.size() && in_dtypes_[i] != DType::kF64) a = a.Convert(in_dtypes_[i]);
    in.push_back(Tensor::FromArray(std::move(a)));
  }
  XS_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunCompiled(*compiled_, in));
  std::vector<HostValue> result;
  for (const Tensor& t : out) {
    XS_ASSIGN_OR_RETURN(Array a, t.value());
    HostValue h{a.dims(), {}};
    for (int64_t i = 0; i < a.num_elements(); ++i) h.v.push_back(a.GetDouble(i));
    result.push_back(std::move(h));
  }
  return result;
}

}  // namespace xs::fe::adtest
