// VJP rules of the elementwise primitives (unary math, add sub mul div max min pow
// integer_pow, select_n, convert_element_type): JAX's JVP rules (jax/_src/lax/lax.py) split
// into the residuals they compute from primals and the transposes of their linear parts.
#include <cmath>

#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/autodiff_internal.h"

namespace xs::fe::ad {
namespace {

// `unary` rules whose JVP is `mul(g, jac)` with `jac` computed from primals in the forward part
// (x: the input, ans: the output).
using JacFn = std::function<StatusOr<Atom>(Emitter& e, const Atom& x, const Atom& ans)>;

VjpRule MulByJacobian(JacFn jac) {
  return {[jac](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(Atom j, jac(e, r.in[0], r.out[0]));
    return Backward([j](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("mul", {*ct[0], j}));
      return write(0, g);
    });
  }};
}

DType TypeOf(const Atom& a) { return a.aval().dtype; }

// _balanced_eq(x, z, y): 1 where x == z and y != z, 0.5 where both equal z, else 0.
StatusOr<Atom> BalancedEq(Emitter& e, const Atom& x, const Atom& z, const Atom& y) {
  AVal zt = z.aval();
  zt.weak_type = false;
  XS_ASSIGN_OR_RETURN(Atom ex, e.Op("eq", {x, z}));
  XS_ASSIGN_OR_RETURN(Atom ones, e.Full(zt, 1.0));
  XS_ASSIGN_OR_RETURN(Atom zeros, e.Full(zt, 0.0));
  XS_ASSIGN_OR_RETURN(Atom num, e.Op("select_n", {ex, zeros, ones}));
  XS_ASSIGN_OR_RETURN(Atom ey, e.Op("eq", {y, z}));
  XS_ASSIGN_OR_RETURN(Atom twos, e.Full(zt, 2.0));
  XS_ASSIGN_OR_RETURN(Atom ones2, e.Full(zt, 1.0));
  XS_ASSIGN_OR_RETURN(Atom den, e.Op("select_n", {ey, ones2, twos}));
  return e.Op("div", {num, den});
}

// Binary rules: per-operand residual makers and transposes, JAX's defjvp with two JVPs. The
// forward part runs operand 0's then operand 1's; the backward part transposes operand 1's
// linear part first (it was emitted last), as JAX's backward pass does.
struct Side {
  // Residuals for this side (x, y, ans); may return an empty vector.
  std::function<StatusOr<std::vector<Atom>>(Emitter&, const Atom&, const Atom&, const Atom&)>
      residuals;
  // Cotangent of this side from ct (and x, y, residuals), before unbroadcasting.
  std::function<StatusOr<Atom>(Emitter&, const Atom& ct, const Atom& x, const Atom& y,
                               const std::vector<Atom>& res)>
      transpose;
};

VjpRule Binary(Side lhs, Side rhs, bool lhs_first = false) {
  return {[lhs, rhs, lhs_first](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    std::vector<Atom> res[2];
    const Side* sides[2] = {&lhs, &rhs};
    for (int s = 0; s < 2; ++s) {
      if (r.active[s] && sides[s]->residuals) {
        XS_ASSIGN_OR_RETURN(res[s], sides[s]->residuals(e, r.in[0], r.in[1], r.out[0]));
      }
    }
    AVal avals[2] = {InAval(r, 0), InAval(r, 1)};
    Atom x = r.in[0], y = r.in[1];
    bool active[2] = {r.active[0], r.active[1]};
    // lhs_first: one linear equation whose transpose rule returns both cotangents before
    // either is written (add, sub); otherwise two linear terms, each written as transposed.
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      std::vector<std::pair<int, Atom>> pending;
      for (int k = 0; k < 2; ++k) {
        int s = lhs_first ? k : 1 - k;
        if (!active[s]) continue;
        const Side& side = s == 0 ? lhs : rhs;
        XS_ASSIGN_OR_RETURN(Atom g, side.transpose(e, *ct[0], x, y, res[s]));
        AVal target = avals[s];
        target.weak_type = false;
        XS_ASSIGN_OR_RETURN(Atom u, e.Unbroadcast(target, g));
        if (lhs_first) {
          pending.push_back({s, u});
        } else {
          XS_RETURN_IF_ERROR(write(s, u));
        }
      }
      for (const auto& [s, u] : pending) XS_RETURN_IF_ERROR(write(s, u));
      return OkStatus();
    });
  }};
}

StatusOr<Atom> Pass(Emitter&, const Atom& ct, const Atom&, const Atom&,
                    const std::vector<Atom>&) {
  return ct;
}
StatusOr<Atom> Negate(Emitter& e, const Atom& ct, const Atom&, const Atom&,
                      const std::vector<Atom>&) {
  return e.Op("neg", {ct});
}
StatusOr<Atom> MulByRes(Emitter& e, const Atom& ct, const Atom&, const Atom&,
                        const std::vector<Atom>& res) {
  return e.Op("mul", {ct, res[0]});
}

// select_n(which, *cases): JAX's _select_jvp makes zeros for the cases without a tangent (in the
// forward part, even when every case has one); the transpose routes ct to each active case with
// zeros elsewhere (a bool `which` selects directly, an int one through eq(which, i)).
VjpRule SelectN() {
  return {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    AVal zt = OutAval(r, 0);
    zt.weak_type = false;
    XS_RETURN_IF_ERROR(e.Zeros(zt).status());
    Atom which = r.in[0];
    std::vector<bool> active = r.active;
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      XS_ASSIGN_OR_RETURN(Atom zeros, e.Full(zt, 0.0));
      bool is_bool = which.aval().dtype == DType::kPred;
      std::vector<std::pair<size_t, Atom>> outs;
      for (size_t i = 1; i < active.size(); ++i) {
        if (!active[i]) continue;
        Atom s;
        if (is_bool) {
          XS_ASSIGN_OR_RETURN(s, e.Op("select_n", {which, i == 1 ? *ct[0] : zeros,
                                                   i == 1 ? zeros : *ct[0]}));
        } else {
          XS_ASSIGN_OR_RETURN(Atom p, e.Op("eq", {which, Emitter::Lit(static_cast<double>(i - 1),
                                                                      which.aval().dtype)}));
          XS_ASSIGN_OR_RETURN(s, e.Op("select_n", {p, zeros, *ct[0]}));
        }
        outs.push_back({i, s});
      }
      for (auto& [i, s] : outs) XS_RETURN_IF_ERROR(write(i, s));
      return OkStatus();
    });
  }};
}

}  // namespace

void AddElementwiseRules(RuleTable& t) {
  t["neg"] = {[](Emitter&, RuleInput&) -> StatusOr<Backward> {
    return Backward([](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("neg", {*ct[0]}));
      return write(0, g);
    });
  }};
  t["exp"] = MulByJacobian([](Emitter&, const Atom&, const Atom& ans) -> StatusOr<Atom> {
    return ans;
  });
  // log: div(g, x), transposed as div(ct, x).
  t["log"] = {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    Atom x = r.in[0];
    return Backward([x](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("div", {*ct[0], x}));
      return write(0, g);
    });
  }};
  // tanh: mul(add(g, mul(g, ans)), sub(1, ans)).
  t["tanh"] = {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    Atom ans = r.out[0];
    XS_ASSIGN_OR_RETURN(Atom one_minus, e.Op("sub", {Emitter::Lit(1.0, TypeOf(ans)), ans}));
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      XS_ASSIGN_OR_RETURN(Atom s, e.Op("mul", {*ct[0], one_minus}));
      XS_RETURN_IF_ERROR(write(0, s));
      XS_ASSIGN_OR_RETURN(Atom m, e.Op("mul", {s, ans}));
      return write(0, m);
    });
  }};
  // logistic: mul(g, mul(ans, sub(1, ans))).
  t["logistic"] = MulByJacobian([](Emitter& e, const Atom&, const Atom& ans) -> StatusOr<Atom> {
    XS_ASSIGN_OR_RETURN(Atom s, e.Op("sub", {Emitter::Lit(1.0, TypeOf(ans)), ans}));
    return e.Op("mul", {ans, s});
  });
  // sqrt: mul(g, div(0.5, ans)).
  t["sqrt"] = MulByJacobian([](Emitter& e, const Atom&, const Atom& ans) -> StatusOr<Atom> {
    return e.Op("div", {Emitter::Lit(0.5, TypeOf(ans)), ans});
  });
  // rsqrt: mul(g, mul(-0.5, div(ans, x))).
  t["rsqrt"] = MulByJacobian([](Emitter& e, const Atom& x, const Atom& ans) -> StatusOr<Atom> {
    XS_ASSIGN_OR_RETURN(Atom d, e.Op("div", {ans, x}));
    return e.Op("mul", {Emitter::Lit(-0.5, TypeOf(x)), d});
  });
  t["sin"] = MulByJacobian([](Emitter& e, const Atom& x, const Atom&) -> StatusOr<Atom> {
    return e.Op("cos", {x});
  });
  // cos: neg(mul(g, sin(x))).
  t["cos"] = {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(Atom s, e.Op("sin", {r.in[0]}));
    return Backward([s](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      XS_ASSIGN_OR_RETURN(Atom n, e.Op("neg", {*ct[0]}));
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("mul", {n, s}));
      return write(0, g);
    });
  }};
  // abs (real): select(ge(x, 0), g, neg(g)) = select_n(ge(x, 0), neg(g), g).
  t["abs"] = {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    if (IsComplex(InAval(r, 0).dtype)) return Unimplemented("abs of a complex input");
    XS_ASSIGN_OR_RETURN(Atom p, e.Op("ge", {r.in[0], Emitter::Lit(0.0, TypeOf(r.in[0]))}));
    return Backward([p](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      AVal zt = ct[0]->aval();
      zt.weak_type = false;
      XS_ASSIGN_OR_RETURN(Atom z, e.Full(zt, 0.0));
      XS_ASSIGN_OR_RETURN(Atom neg_branch, e.Op("select_n", {p, *ct[0], z}));
      XS_ASSIGN_OR_RETURN(Atom pos_branch, e.Op("select_n", {p, z, *ct[0]}));
      XS_RETURN_IF_ERROR(write(0, pos_branch));
      XS_ASSIGN_OR_RETURN(Atom n, e.Op("neg", {neg_branch}));
      return write(0, n);
    });
  }};
  // integer_pow[y]: mul(g, mul(y, integer_pow(x, y - 1))) (y == 2: mul(g, mul(2, x))).
  t["integer_pow"] = {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(int64_t y, GetInt(*r.eqn, "y"));
    Atom x = r.in[0];
    if (y == 0) {
      return Backward([](Emitter&, const std::vector<Ct>&, const CtWriter&) {
        return OkStatus();
      });
    }
    if (y == 1) {
      return Backward([](Emitter&, const std::vector<Ct>& ct, const CtWriter& write) {
        return write(0, *ct[0]);
      });
    }
    Atom base = x;
    if (y != 2) {
      XS_ASSIGN_OR_RETURN(base, e.Op("integer_pow", {x}, {{"y", y - 1}}));
    }
    XS_ASSIGN_OR_RETURN(Atom jac, e.Op("mul", {Emitter::Lit(static_cast<double>(y),
                                                            TypeOf(x)), base}));
    return Backward([jac](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("mul", {*ct[0], jac}));
      return write(0, g);
    });
  }};
  // convert_element_type: the transpose converts back to the operand's type.
  t["convert_element_type"] = {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    AVal in = InAval(r, 0);
    return Backward([in](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("convert_element_type", {*ct[0]},
                                       {{"new_dtype", in.dtype}, {"weak_type", in.weak_type}}));
      return write(0, g);
    });
  }};
  t["select_n"] = SelectN();

  // add / sub: one linear equation whose transpose writes lhs then rhs.
  t["add"] = Binary({nullptr, Pass}, {nullptr, Pass}, /*lhs_first=*/true);
  t["sub"] = Binary({nullptr, Pass}, {nullptr, Negate}, /*lhs_first=*/true);
  // add_any (in a gradient being differentiated again): JAX's deflinear2, ct to both.
  t[kAddAny] = Binary({nullptr, Pass}, {nullptr, Pass}, /*lhs_first=*/true);
  // mul: lhs mul(ct, y), rhs mul(x, ct).
  t["mul"] = Binary(
      {nullptr, [](Emitter& e, const Atom& ct, const Atom&, const Atom& y,
                   const std::vector<Atom>&) { return e.Op("mul", {ct, y}); }},
      {nullptr, [](Emitter& e, const Atom& ct, const Atom& x, const Atom&,
                   const std::vector<Atom>&) { return e.Op("mul", {x, ct}); }});
  // div: lhs div(g, y); rhs mul(mul(neg(g), x), integer_pow(y, -2)).
  t["div"] = Binary(
      {nullptr, [](Emitter& e, const Atom& ct, const Atom&, const Atom& y,
                   const std::vector<Atom>&) { return e.Op("div", {ct, y}); }},
      {[](Emitter& e, const Atom&, const Atom& y, const Atom&) -> StatusOr<std::vector<Atom>> {
         XS_ASSIGN_OR_RETURN(Atom p, e.Op("integer_pow", {y}, {{"y", int64_t{-2}}}));
         return std::vector<Atom>{p};
       },
       [](Emitter& e, const Atom& ct, const Atom& x, const Atom&,
          const std::vector<Atom>& res) -> StatusOr<Atom> {
         XS_ASSIGN_OR_RETURN(Atom a, e.Op("mul", {ct, res[0]}));
         XS_ASSIGN_OR_RETURN(Atom b, e.Op("mul", {a, x}));
         return e.Op("neg", {b});
       }});
  // max / min: mul(g, _balanced_eq(x, ans, y)) and mul(g, _balanced_eq(y, ans, x)).
  for (const char* name : {"max", "min"}) {
    t[name] = Binary(
        {[](Emitter& e, const Atom& x, const Atom& y, const Atom& ans)
             -> StatusOr<std::vector<Atom>> {
           XS_ASSIGN_OR_RETURN(Atom j, BalancedEq(e, x, ans, y));
           return std::vector<Atom>{j};
         },
         MulByRes},
        {[](Emitter& e, const Atom& x, const Atom& y, const Atom& ans)
             -> StatusOr<std::vector<Atom>> {
           XS_ASSIGN_OR_RETURN(Atom j, BalancedEq(e, y, ans, x));
           return std::vector<Atom>{j};
         },
         MulByRes});
  }
  // pow (float exponent): lhs mul(g, mul(y, pow(x, sub(y, 1)))); rhs
  // mul(g, mul(log(_replace_zero(x)), ans)).
  t["pow"] = Binary(
      {[](Emitter& e, const Atom& x, const Atom& y, const Atom&) -> StatusOr<std::vector<Atom>> {
         if (!IsFloating(TypeOf(y))) {
           return Unimplemented("pow with an integer exponent of type ", y.aval().ToString(),
                                "; use integer_pow for constant integer powers");
         }
         XS_ASSIGN_OR_RETURN(Atom s, e.Op("sub", {y, Emitter::Lit(1.0, TypeOf(y))}));
         XS_ASSIGN_OR_RETURN(Atom p, e.Op("pow", {x, s}));
         XS_ASSIGN_OR_RETURN(Atom j, e.Op("mul", {y, p}));
         return std::vector<Atom>{j};
       },
       MulByRes},
      {[](Emitter& e, const Atom& x, const Atom&, const Atom& ans)
           -> StatusOr<std::vector<Atom>> {
         AVal xt = x.aval();
         xt.weak_type = false;
         XS_ASSIGN_OR_RETURN(Atom is0, e.Op("eq", {x, Emitter::Lit(0.0, TypeOf(x))}));
         XS_ASSIGN_OR_RETURN(Atom ones, e.Full(xt, 1.0));
         XS_ASSIGN_OR_RETURN(Atom safe, e.Op("select_n", {is0, x, ones}));
         XS_ASSIGN_OR_RETURN(Atom l, e.Op("log", {safe}));
         XS_ASSIGN_OR_RETURN(Atom j, e.Op("mul", {l, ans}));
         return std::vector<Atom>{j};
       },
       MulByRes});
}

}  // namespace xs::fe::ad
