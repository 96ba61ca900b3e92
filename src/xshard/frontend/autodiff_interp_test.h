// Test support for autodiff_numeric_test.cc and autodiff_jax_test.cc: a small host interpreter
// of Jaxprs in double precision (every dtype computed as f64, pred as 0/1), written independently
// of the front end's evaluation, covering the primitives autodiff differentiates and the ones it
// emits (add_any, rev, select_and_scatter_add); a builder of test functions (Case); and a runner
// of jaxprs through the front end's own lowering and runtime (Xshard).
#ifndef XSHARD_FRONTEND_AUTODIFF_INTERP_TEST_H_
#define XSHARD_FRONTEND_AUTODIFF_INTERP_TEST_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/frontend/jaxpr.h"
#include "xshard/frontend/trace.h"

namespace xs::fe::adtest {

struct HostValue {
  std::vector<int64_t> dims;
  std::vector<double> v;
};

// Evaluates `j` on `args` (one per invar); an unknown primitive is an Unimplemented error.
StatusOr<std::vector<HostValue>> Interpret(const Jaxpr& j, const std::vector<HostValue>& args);

inline Atom F64(double v) { return Atom::OfLiteral(Array::Scalar<double>(v), true); }
inline Atom S32(int32_t v) { return Atom::OfLiteral(Array::Scalar<int32_t>(v), false); }

// gen_autodiff_refs.py's fill(): sin(0.7 i + seed) * 1.5 + 0.1 seed.
inline HostValue Fill(std::vector<int64_t> dims, int seed) {
  HostValue h{dims, {}};
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  for (int64_t i = 0; i < n; ++i) h.v.push_back(std::sin(0.7 * i + seed) * 1.5 + 0.1 * seed);
  return h;
}
inline HostValue Positive(std::vector<int64_t> dims, int seed) {
  HostValue h = Fill(dims, seed);
  for (double& x : h.v) x = 0.6 + std::fabs(x);
  return h;
}

// A function under test: the jaxpr, its arguments and the argnums to differentiate.
class Case {
 public:
  Case() : b_(&j_) {}
  Atom In(HostValue v, bool wrt = true, DType t = DType::kF64) {
    Var var = b_.NewVar(AVal{t, v.dims});
    if (wrt) wrt_.push_back(static_cast<int64_t>(j_.invars.size()));
    j_.invars.push_back(var);
    args_.push_back(std::move(v));
    return Atom::OfVar(var);
  }
  Atom Op(const std::string& prim, std::vector<Atom> in, Params p = {}) {
    auto r = b_.Bind1(prim, std::move(in), std::move(p));
    EXPECT_TRUE(r.ok()) << prim << ": " << r.status().ToString();
    return r.ok() ? *r : Atom();
  }
  Atom Sum(const Atom& x) {
    IntList axes;
    for (int64_t i = 0; i < x.aval().rank(); ++i) axes.push_back(i);
    return Op("reduce_sum", {x}, {{"axes", axes}});
  }
  // Ends with loss = sum(out * W), W a non-differentiated input, so cotangents are not uniform.
  void Loss(const Atom& out) {
    Atom w = In(Fill(out.aval().dims, 7), /*wrt=*/false);
    j_.outvars = {Sum(Op("mul", {out, w}))};
  }
  void Scalar(const Atom& out) { j_.outvars = {out}; }
  void Outs(std::vector<Atom> outs) { j_.outvars = std::move(outs); }
  std::vector<Atom> OpN(const std::string& prim, std::vector<Atom> in, Params p = {}) {
    auto r = b_.Bind(prim, std::move(in), std::move(p));
    EXPECT_TRUE(r.ok()) << prim << ": " << r.status().ToString();
    std::vector<Atom> out;
    if (r.ok()) {
      for (const Var& v : *r) out.push_back(Atom::OfVar(v));
    }
    return out;
  }
  const Jaxpr& jaxpr() const { return j_; }
  const std::vector<HostValue>& args() const { return args_; }
  const std::vector<int64_t>& wrt() const { return wrt_; }

 private:
  Jaxpr j_;
  JaxprBuilder b_;
  std::vector<HostValue> args_;
  std::vector<int64_t> wrt_;
};

// Runs `j` through the front end: autodiff's primitives expanded (ExpandAutodiffPrimitives),
// lowered and compiled once (CompileJaxpr), run per call (RunCompiled on the default client).
class Xshard {
 public:
  explicit Xshard(const Jaxpr& j);
  StatusOr<std::vector<HostValue>> Run(const std::vector<HostValue>& args) const;

 private:
  std::shared_ptr<CompiledJaxpr> compiled_;
  std::vector<DType> in_dtypes_;  // arguments are converted from f64 to these
};

inline std::shared_ptr<const Jaxpr> Closed(const Case& c) {
  return std::make_shared<Jaxpr>(c.jaxpr());
}

}  // namespace xs::fe::adtest

#endif  // XSHARD_FRONTEND_AUTODIFF_INTERP_TEST_H_
