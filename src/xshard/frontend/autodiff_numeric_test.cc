// Numerical tests of GradJaxpr: every differentiated primitive against central finite
// differences in f64, evaluated by the front end's own path (ExpandAutodiffPrimitives, then
// LowerJaxpr + ShardedProgram through CompileJaxpr / RunCompiled) and, as a cross-check, by the
// independent host interpreter of autodiff_interp_test.h; and composite
// functions (MLP loss, softmax cross-entropy, max + avg pooling, a custom_vjp) against the values
// and gradients JAX 0.10.2 computed (tests/data/autodiff/grad_values.txt, made by
// tests/tools/gen_autodiff_refs.py).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/autodiff_interp_test.h"
#include "xshard/frontend/tensor.h"
#include "xshard/frontend/trace.h"

namespace xs::fe {
namespace {

using testing::HostValue;
using testing::Interpret;

Atom F64(double v) { return Atom::OfLiteral(Array::Scalar<double>(v), true); }
Atom S32(int32_t v) { return Atom::OfLiteral(Array::Scalar<int32_t>(v), false); }

// gen_autodiff_refs.py's fill(): sin(0.7 i + seed) * 1.5 + 0.1 seed.
HostValue Fill(std::vector<int64_t> dims, int seed) {
  HostValue h{dims, {}};
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  for (int64_t i = 0; i < n; ++i) h.v.push_back(std::sin(0.7 * i + seed) * 1.5 + 0.1 * seed);
  return h;
}
HostValue Positive(std::vector<int64_t> dims, int seed) {
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

// Runs `j` through the front end: autodiff's primitives expanded, lowered, compiled, run.
class Xshard {
 public:
  explicit Xshard(const Jaxpr& j) {
    auto x = ExpandAutodiffPrimitives(j);
    EXPECT_TRUE(x.ok()) << x.status().ToString();
    if (!x.ok()) return;
    auto c = CompileJaxpr(*x, "autodiff_test", {}, {});
    EXPECT_TRUE(c.ok()) << c.status().ToString() << "\n" << PrintJaxpr(*x);
    if (c.ok()) compiled_ = *c;
  }
  StatusOr<std::vector<HostValue>> Run(const std::vector<HostValue>& args) const {
    if (!compiled_) return Internal("not compiled");
    std::vector<Tensor> in;
    for (const HostValue& a : args) in.push_back(Tensor::FromArray(Array::FromVector<double>(a.dims, a.v)));
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

 private:
  std::shared_ptr<CompiledJaxpr> compiled_;
};

double First(const StatusOr<std::vector<HostValue>>& r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[0].v[0] : NAN;
}

// GradJaxpr's value and gradients against f itself and central differences of f, both run by
// the front end; the interpreter's gradients must agree too.
// h and tol are loosened for f32 stretches (the interpreter computes those in f64).
void CheckFiniteDifferences(const Case& c, double tol = 1e-6, double h = 1e-6,
                            double interp_tol = 1e-12) {
  auto g = GradJaxpr(c.jaxpr(), c.wrt(), /*with_value=*/true);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Xshard f_run(c.jaxpr()), g_run(*g);
  auto out = g_run.Run(c.args());
  ASSERT_TRUE(out.ok()) << out.status().ToString() << "\n" << PrintJaxpr(*g);
  auto host = Interpret(*g, c.args());
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  ASSERT_EQ(out->size(), 1 + c.wrt().size());
  EXPECT_NEAR((*out)[0].v[0], First(f_run.Run(c.args())), 1e-12);
  for (size_t k = 0; k < c.wrt().size(); ++k) {
    int64_t w = c.wrt()[k];
    const HostValue& grad = (*out)[1 + k];
    ASSERT_EQ(grad.dims, c.args()[w].dims) << "argnum " << w;
    for (size_t i = 0; i < c.args()[w].v.size(); ++i) {
      std::vector<HostValue> plus = c.args(), minus = c.args();
      plus[w].v[i] += h;
      minus[w].v[i] -= h;
      double fd = (First(f_run.Run(plus)) - First(f_run.Run(minus))) / (2 * h);
      double got = grad.v.size() == 1 ? grad.v[0] : grad.v[i];
      double interp = (*host)[1 + k].v.size() == 1 ? (*host)[1 + k].v[0] : (*host)[1 + k].v[i];
      EXPECT_NEAR(got, fd, tol * std::max(1.0, std::fabs(fd)))
          << "argnum " << w << " element " << i << "\n" << PrintJaxpr(*g);
      EXPECT_NEAR(interp, got, interp_tol * std::max(1.0, std::fabs(got)))
          << "interpreter vs xshard, argnum " << w << " element " << i;
    }
  }
}

TEST(AutodiffNumericTest, UnaryPrimitives) {
  for (const char* op : {"neg", "exp", "log", "tanh", "logistic", "sqrt", "rsqrt", "abs", "sign",
                         "sin", "cos"}) {
    SCOPED_TRACE(op);
    Case c;
    Atom x = c.In(std::string(op) == "abs" || std::string(op) == "sign" ? Fill({2, 3}, 1)
                                                                        : Positive({2, 3}, 1));
    c.Loss(c.Op(op, {x}));
    CheckFiniteDifferences(c);
  }
  for (int64_t y : {-2, 0, 1, 2, 3}) {
    SCOPED_TRACE(y);
    Case c;
    Atom x = c.In(Positive({4}, 2));
    c.Loss(c.Op("integer_pow", {x}, {{"y", y}}));
    CheckFiniteDifferences(c);
  }
}

TEST(AutodiffNumericTest, BinaryPrimitives) {
  for (const char* op : {"add", "sub", "mul", "div", "max", "min", "pow"}) {
    SCOPED_TRACE(op);
    Case c;
    Atom x = c.In(Positive({2, 3}, 1));
    Atom y = c.In(Fill({2, 3}, 2));
    c.Loss(c.Op(op, {x, y}));
    CheckFiniteDifferences(c);
  }
  {
    SCOPED_TRACE("scalar operand and literals");  // unbroadcast to rank 0
    Case c;
    Atom x = c.In(Fill({2, 3}, 1));
    Atom s = c.In(Fill({}, 3));
    Atom a = c.Op("mul", {c.Op("add", {x, s}), F64(2.0)});
    c.Loss(c.Op("div", {F64(1.0), c.Op("add", {c.Op("mul", {a, a}), F64(1.0)})}));
    CheckFiniteDifferences(c);
  }
  {
    SCOPED_TRACE("fan-out: x used four times");
    Case c;
    Atom x = c.In(Fill({3}, 1));
    c.Loss(c.Op("mul", {c.Op("mul", {x, x}), c.Op("sin", {c.Op("add", {x, x})})}));
    CheckFiniteDifferences(c);
  }
}

TEST(AutodiffNumericTest, SelectCompareConvert) {
  Case c;
  Atom x = c.In(Fill({2, 3}, 1));
  Atom y = c.In(Fill({2, 3}, 2));
  Atom p = c.Op("gt", {x, y});
  Atom s = c.Op("select_n", {p, x, c.Op("mul", {y, y})});
  Atom f32 = c.Op("convert_element_type", {s}, {{"new_dtype", DType::kF32}, {"weak_type", false}});
  c.Loss(c.Op("convert_element_type", {f32}, {{"new_dtype", DType::kF64}, {"weak_type", false}}));
  CheckFiniteDifferences(c, /*tol=*/1e-3, /*h=*/1e-2, /*interp_tol=*/1e-6);
}

TEST(AutodiffNumericTest, ShapePrimitives) {
  {
    SCOPED_TRACE("broadcast_in_dim with a size-1 operand dim");
    Case c;
    Atom x = c.In(Fill({3, 1}, 1));
    c.Loss(c.Op("broadcast_in_dim", {x}, {{"shape", IntList{2, 3, 4}},
                                          {"broadcast_dimensions", IntList{1, 2}}}));
    CheckFiniteDifferences(c);
  }
  {
    SCOPED_TRACE("reshape squeeze expand_dims transpose");
    Case c;
    Atom x = c.In(Fill({2, 1, 3}, 1));
    Atom s = c.Op("squeeze", {x}, {{"dimensions", IntList{1}}});
    Atom r = c.Op("reshape", {s}, {{"new_sizes", IntList{3, 2}}, {"dimensions", Param{}}});
    Atom e = c.Op("expand_dims", {r}, {{"dimensions", IntList{0}}});
    c.Loss(c.Op("transpose", {e}, {{"permutation", IntList{2, 0, 1}}}));
    CheckFiniteDifferences(c);
  }
  for (const char* op : {"reduce_sum", "reduce_max", "reduce_min"}) {
    SCOPED_TRACE(op);
    Case c;
    Atom x = c.In(Fill({2, 3, 4}, 1));
    c.Loss(c.Op(op, {x}, {{"axes", IntList{0, 2}}}));
    CheckFiniteDifferences(c);
  }
}

TEST(AutodiffNumericTest, ReduceMaxTiesSplitEvenly) {
  // JAX's rule: the cotangent is divided among equal maxima (hand-computed: 0.5 each).
  Case c;
  Atom x = c.In(HostValue{{3}, {2.0, 5.0, 5.0}});
  c.Scalar(c.Op("reduce_max", {x}, {{"axes", IntList{0}}}));
  auto g = GradJaxpr(c.jaxpr(), {0}, false);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto out = Xshard(*g).Run(c.args());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].v, (std::vector<double>{0.0, 0.5, 0.5}));
  out = Interpret(*g, c.args());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].v, (std::vector<double>{0.0, 0.5, 0.5}));
}

TEST(AutodiffNumericTest, SlicingPrimitives) {
  {
    SCOPED_TRACE("slice with strides");
    Case c;
    Atom x = c.In(Fill({6, 5}, 1));
    c.Loss(c.Op("slice", {x}, {{"start_indices", IntList{1, 0}},
                               {"limit_indices", IntList{6, 5}},
                               {"strides", IntList{2, 2}}}));
    CheckFiniteDifferences(c);
  }
  {
    SCOPED_TRACE("pad: interior, negative, padding value");
    Case c;
    Atom x = c.In(Fill({3, 4}, 1));
    Atom v = c.In(Fill({}, 2));
    c.Loss(c.Op("pad", {x, v}, {{"padding_config", IntLists{{1, 2, 1}, {-1, 1, 0}}}}));
    CheckFiniteDifferences(c);
  }
  {
    SCOPED_TRACE("concatenate");
    Case c;
    Atom a = c.In(Fill({2, 1}, 1));
    Atom b = c.In(Fill({2, 3}, 2), /*wrt=*/false);
    Atom d = c.In(Fill({2, 2}, 3));
    c.Loss(c.Op("concatenate", {a, b, d}, {{"dimension", int64_t{1}}}));
    CheckFiniteDifferences(c);
  }
  {
    SCOPED_TRACE("dynamic_slice");
    Case c;
    Atom x = c.In(Fill({5, 4}, 1));
    c.Loss(c.Op("dynamic_slice", {x, S32(2), S32(1)}, {{"slice_sizes", IntList{2, 3}}}));
    CheckFiniteDifferences(c);
  }
  {
    SCOPED_TRACE("dynamic_update_slice");
    Case c;
    Atom x = c.In(Fill({5, 4}, 1));
    Atom u = c.In(Fill({2, 3}, 2));
    c.Loss(c.Op("dynamic_update_slice", {x, u, S32(3), S32(0)}));
    CheckFiniteDifferences(c);
  }
}

TEST(AutodiffNumericTest, DotGeneral) {
  struct Dot {
    std::vector<int64_t> a, b;
    IntLists dn;
  };
  for (const Dot& d : {Dot{{4, 3}, {3, 5}, {{1}, {0}, {}, {}}},
                       Dot{{3, 4}, {3, 5}, {{0}, {0}, {}, {}}},
                       Dot{{2, 3, 4}, {2, 4, 5}, {{2}, {1}, {0}, {0}}},
                       Dot{{4, 2, 3}, {3, 5, 2}, {{2}, {0}, {1}, {2}}}}) {
    Case c;
    Atom a = c.In(Fill(d.a, 1));
    Atom b = c.In(Fill(d.b, 2));
    c.Loss(c.Op("dot_general", {a, b}, {{"dimension_numbers", d.dn},
                                        {"precision", Param{}},
                                        {"preferred_element_type", DType::kF64}}));
    CheckFiniteDifferences(c);
  }
}

TEST(AutodiffNumericTest, ReduceWindows) {
  {
    SCOPED_TRACE("reduce_window_sum, strided and padded");
    Case c;
    Atom x = c.In(Fill({1, 5, 6, 1}, 1));
    c.Loss(c.Op("reduce_window_sum", {x},
                {{"window_dimensions", IntList{1, 3, 2, 1}},
                 {"window_strides", IntList{1, 2, 2, 1}},
                 {"padding", IntLists{{0, 0}, {1, 1}, {0, 1}, {0, 0}}}}));
    CheckFiniteDifferences(c);
  }
  {
    SCOPED_TRACE("reduce_window_max, overlapping");
    Case c;
    Atom x = c.In(Fill({1, 4, 6, 1}, 1));
    c.Loss(c.Op("reduce_window_max", {x},
                {{"window_dimensions", IntList{1, 2, 3, 1}},
                 {"window_strides", IntList{1, 1, 2, 1}},
                 {"padding", IntLists{{0, 0}, {0, 0}, {1, 0}, {0, 0}}}}));
    CheckFiniteDifferences(c);
  }
}

std::shared_ptr<const Jaxpr> Closed(const Case& c) { return std::make_shared<Jaxpr>(c.jaxpr()); }

TEST(AutodiffNumericTest, PjitWithTwoOutputsAndAnInactiveInput) {
  Case k;  // inner(v, w, s) = (sin(v) * w, exp(v) * s)
  Atom v = k.In(Fill({3}, 0));
  Atom w = k.In(Fill({3}, 0));
  Atom s = k.In(Fill({3}, 0));
  k.Outs({k.Op("mul", {k.Op("sin", {v}), w}), k.Op("mul", {k.Op("exp", {v}), s})});
  Case c;
  Atom x = c.In(Fill({3}, 1));
  Atom y = c.In(Fill({3}, 2));
  Atom z = c.In(Fill({3}, 3), /*wrt=*/false);
  std::vector<Atom> p = c.OpN("pjit", {x, y, z}, {{"jaxpr", Closed(k)},
                                                  {"name", std::string("inner")}});
  ASSERT_EQ(p.size(), 2u);
  c.Loss(c.Op("add", {c.Op("mul", {p[0], p[1]}), p[0]}));
  CheckFiniteDifferences(c);
}

TEST(AutodiffNumericTest, CustomVjpWithTrueDerivativeAndShardingConstraint) {
  Case call;  // x * y
  Atom cx = call.In(Fill({3}, 0));
  Atom cy = call.In(Fill({3}, 0));
  call.Outs({call.Op("mul", {cx, cy})});
  Case fwd;  // (x * y, x, y)
  Atom fx = fwd.In(Fill({3}, 0));
  Atom fy = fwd.In(Fill({3}, 0));
  fwd.Outs({fwd.Op("mul", {fx, fy}), fx, fy});
  Case bwd;  // (x, y, g) -> (g * y, g * x)
  Atom bx = bwd.In(Fill({3}, 0));
  Atom by = bwd.In(Fill({3}, 0));
  Atom g = bwd.In(Fill({3}, 0));
  bwd.Outs({bwd.Op("mul", {g, by}), bwd.Op("mul", {g, bx})});
  Case c;
  Atom x = c.In(Fill({3}, 1));
  Atom y = c.In(Fill({3}, 2));
  Atom m = c.Op("custom_vjp_call", {x, y}, {{"call_jaxpr", Closed(call)},
                                             {"fwd_jaxpr", Closed(fwd)},
                                             {"bwd_jaxpr", Closed(bwd)},
                                             {"num_res", int64_t{2}}});
  Atom sc = c.Op("sharding_constraint", {c.Op("sin", {m})},
                 {{"sharding", std::string("NamedSharding(mesh=Mesh('x': 3), spec=P('x'))")}});
  c.Loss(sc);
  CheckFiniteDifferences(c);
}

// JAX's value and gradients: "### name", "value v", "grad argnum g0 g1 ...".
struct JaxValues {
  double value = NAN;
  std::map<int64_t, std::vector<double>> grads;
};
std::map<std::string, JaxValues> LoadJaxValues() {
  std::ifstream in(std::string(XSHARD_SOURCE_DIR) + "/tests/data/autodiff/grad_values.txt");
  std::map<std::string, JaxValues> out;
  std::string line, name;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string tag;
    ls >> tag;
    if (tag == "###") {
      ls >> name;
    } else if (tag == "value") {
      ls >> out[name].value;
    } else if (tag == "grad") {
      int64_t a;
      ls >> a;
      double v;
      while (ls >> v) out[name].grads[a].push_back(v);
    }
  }
  return out;
}

void CheckAgainstJax(const Case& c, const JaxValues& ref) {
  ASSERT_EQ(ref.grads.size(), c.wrt().size()) << "reference missing";
  auto g = GradJaxpr(c.jaxpr(), c.wrt(), /*with_value=*/true);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (bool host : {false, true}) {
  SCOPED_TRACE(host ? "host interpreter" : "xshard");
  auto out = host ? Interpret(*g, c.args()) : Xshard(*g).Run(c.args());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_NEAR((*out)[0].v[0], ref.value, 1e-10 * std::max(1.0, std::fabs(ref.value)));
  for (size_t k = 0; k < c.wrt().size(); ++k) {
    const std::vector<double>& want = ref.grads.at(c.wrt()[k]);
    const std::vector<double>& got = (*out)[1 + k].v;
    ASSERT_EQ(got.size(), want.size()) << "argnum " << c.wrt()[k];
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-10 * std::max(1.0, std::fabs(want[i])))
          << "argnum " << c.wrt()[k] << " element " << i;
    }
  }
  }
}

IntLists kMatmul = {{1}, {0}, {}, {}};

TEST(AutodiffJaxTest, MlpLoss) {
  Case c;  // mlp_loss(w1, b1, w2, x)
  Atom w1 = c.In(Fill({3, 5}, 0));
  Atom b1 = c.In(Fill({5}, 1));
  Atom w2 = c.In(Fill({5, 2}, 2));
  Atom x = c.In(Fill({4, 3}, 3), /*wrt=*/false);
  Atom pre = c.Op("add", {c.Op("dot_general", {x, w1}, {{"dimension_numbers", kMatmul}}),
                          c.Op("broadcast_in_dim", {b1}, {{"shape", IntList{4, 5}},
                                                          {"broadcast_dimensions", IntList{1}}})});
  Atom out = c.Op("dot_general", {c.Op("tanh", {pre}), w2}, {{"dimension_numbers", kMatmul}});
  c.Scalar(c.Op("div", {c.Sum(c.Op("integer_pow", {out}, {{"y", int64_t{2}}})), F64(8.0)}));
  CheckAgainstJax(c, LoadJaxValues()["mlp"]);
}

TEST(AutodiffJaxTest, SoftmaxCrossEntropy) {
  Case c;  // softmax_xent(w, x, labels)
  Atom w = c.In(Fill({3, 3}, 0));
  Atom x = c.In(Fill({4, 3}, 1));
  HostValue one_hot{{4, 3}, std::vector<double>(12, 0.0)};
  for (int r = 0; r < 4; ++r) one_hot.v[r * 3 + std::vector<int>{0, 2, 1, 2}[r]] = 1.0;
  Atom labels = c.In(one_hot, /*wrt=*/false);
  Atom logits = c.Op("dot_general", {x, w}, {{"dimension_numbers", kMatmul}});
  auto back = [&](const Atom& v) {
    return c.Op("broadcast_in_dim", {v}, {{"shape", IntList{4, 3}},
                                          {"broadcast_dimensions", IntList{0}}});
  };
  Atom m = c.Op("reduce_max", {logits}, {{"axes", IntList{1}}});
  Atom z = c.Op("sub", {logits, back(m)});
  Atom lse = c.Op("log", {c.Op("reduce_sum", {c.Op("exp", {z})}, {{"axes", IntList{1}}})});
  Atom logp = c.Op("sub", {z, back(lse)});
  c.Scalar(c.Op("neg", {c.Op("div", {c.Sum(c.Op("mul", {labels, logp})), F64(4.0)})}));
  CheckAgainstJax(c, LoadJaxValues()["softmax_xent"]);
}

TEST(AutodiffJaxTest, MaxAndAvgPool) {
  Case c;  // pool_loss(x, c)
  Atom x = c.In(Fill({1, 4, 6, 1}, 0));
  Atom w = c.In(Fill({1, 2, 3, 1}, 1), /*wrt=*/false);
  Atom mx = c.Op("reduce_window_max", {x}, {{"window_dimensions", IntList{1, 2, 2, 1}},
                                            {"window_strides", IntList{1, 2, 2, 1}},
                                            {"padding", IntLists{{0, 0}, {0, 0}, {0, 0}, {0, 0}}}});
  Atom av = c.Op("reduce_window_sum", {x}, {{"window_dimensions", IntList{1, 3, 3, 1}},
                                            {"window_strides", IntList{1, 1, 1, 1}},
                                            {"padding", IntLists{{0, 0}, {1, 1}, {1, 1}, {0, 0}}}});
  c.Scalar(c.Op("add", {c.Sum(c.Op("mul", {mx, w})),
                        c.Sum(c.Op("integer_pow", {av}, {{"y", int64_t{2}}}))}));
  CheckAgainstJax(c, LoadJaxValues()["pool"]);
}

TEST(AutodiffJaxTest, CustomVjpUsesTheUserBackward) {
  // Seed 001's pattern: a custom Add whose backward is user code (here 2g, 3g on purpose, so
  // the gradients differ from the true ones and only the user rule can produce JAX's numbers).
  Case add;
  Atom ax = add.In(Fill({3}, 0));
  Atom ay = add.In(Fill({3}, 0));
  add.Outs({add.Op("add", {ax, ay})});
  Case bwd;
  Atom g = bwd.In(Fill({3}, 0));
  bwd.Outs({bwd.Op("mul", {F64(2.0), g}), bwd.Op("mul", {F64(3.0), g})});
  Case c;
  Atom x = c.In(Fill({3}, 0));
  Atom y = c.In(Fill({3}, 1));
  Atom s = c.Op("custom_vjp_call", {x, y}, {{"call_jaxpr", Closed(add)},
                                             {"fwd_jaxpr", Closed(add)},
                                             {"bwd_jaxpr", Closed(bwd)},
                                             {"num_res", int64_t{0}}});
  c.Scalar(c.Sum(c.Op("mul", {s, x})));
  CheckAgainstJax(c, LoadJaxValues()["custom_vjp"]);
}

}  // namespace
}  // namespace xs::fe
