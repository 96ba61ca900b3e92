// Numerical tests of GradJaxpr: every differentiated primitive against central finite
// differences in f64, evaluated by the front end's own path (ExpandAutodiffPrimitives, then
// LowerJaxpr + ShardedProgram through CompileJaxpr / RunCompiled) and, as a cross-check, by the
// independent host interpreter of autodiff_interp_test.h. JAX references: autodiff_jax_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/autodiff_interp_test.h"

namespace xs::fe {
namespace {

using namespace adtest;  // NOLINT: test support

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
          << "argnum " << w << " element " << i << "\n"
          << PrintJaxpr(*g);
      EXPECT_NEAR(interp, got, interp_tol * std::max(1.0, std::fabs(got)))
          << "interpreter vs xshard, argnum " << w << " element " << i;
    }
  }
}

TEST(AutodiffNumericTest, UnaryPrimitives) {
  for (const char* op :
       {"neg", "exp", "log", "tanh", "logistic", "sqrt", "rsqrt", "abs", "sign", "sin", "cos"}) {
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
    c.Loss(c.Op("broadcast_in_dim", {x},
                {{"shape", IntList{2, 3, 4}}, {"broadcast_dimensions", IntList{1, 2}}}));
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
    c.Loss(c.Op("slice", {x},
                {{"start_indices", IntList{1, 0}},
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
  for (const Dot& d :
       {Dot{{4, 3}, {3, 5}, {{1}, {0}, {}, {}}}, Dot{{3, 4}, {3, 5}, {{0}, {0}, {}, {}}},
        Dot{{2, 3, 4}, {2, 4, 5}, {{2}, {1}, {0}, {0}}},
        Dot{{4, 2, 3}, {3, 5, 2}, {{2}, {0}, {1}, {2}}}}) {
    Case c;
    Atom a = c.In(Fill(d.a, 1));
    Atom b = c.In(Fill(d.b, 2));
    c.Loss(c.Op("dot_general", {a, b},
                {{"dimension_numbers", d.dn},
                 {"precision", Param{}},
                 {"preferred_element_type", DType::kF64}}));
    CheckFiniteDifferences(c);
  }
}

TEST(AutodiffNumericTest, ConvGeneralDilated) {
  struct ConvCase {
    std::string name;
    std::vector<int64_t> lhs, rhs;
    IntLists dn;  // lhs, rhs, out specs
    IntList strides, lhs_dil, rhs_dil;
    IntLists padding;
    int64_t fgc = 1, bgc = 1;
  };
  const IntLists nchw = {{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}};
  const IntLists nhwc = {{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}};  // NHWC, HWIO, NHWC
  // clang-format off
  const std::vector<ConvCase> cases = {
      {"NCHW valid", {2, 3, 5, 4}, {4, 3, 3, 2}, nchw, {1, 1}, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}},
      {"NHWC strided padded", {1, 6, 5, 2}, {3, 2, 2, 3}, nhwc, {2, 1}, {1, 1}, {1, 1},
       {{1, 1}, {0, 1}}},
      {"NHWC rhs-dilated", {1, 7, 6, 2}, {2, 2, 2, 3}, nhwc, {1, 2}, {1, 1}, {2, 1},
       {{1, 0}, {1, 1}}},
      {"NCHW lhs-dilated (transposed conv)", {1, 2, 3, 3}, {2, 2, 2, 2}, nchw, {1, 1}, {2, 2},
       {1, 1}, {{1, 1}, {0, 1}}},
      {"NHWC feature groups", {2, 5, 4, 4}, {3, 2, 2, 6}, nhwc, {1, 1}, {1, 1}, {1, 1},
       {{1, 1}, {0, 0}}, /*fgc=*/2},
      {"NCHW batch groups", {4, 2, 4, 3}, {6, 2, 2, 2}, nchw, {1, 1}, {1, 1}, {1, 1},
       {{0, 0}, {1, 0}}, /*fgc=*/1, /*bgc=*/2},
  };
  // clang-format on
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(k.name);
    Case c;
    Atom lhs = c.In(Fill(k.lhs, 1));
    Atom rhs = c.In(Fill(k.rhs, 2));
    c.Loss(c.Op("conv_general_dilated", {lhs, rhs},
                {{"window_strides", k.strides}, {"padding", k.padding},
                 {"lhs_dilation", k.lhs_dil}, {"rhs_dilation", k.rhs_dil},
                 {"dimension_numbers", k.dn}, {"feature_group_count", k.fgc},
                 {"batch_group_count", k.bgc}, {"precision", Param{}},
                 {"preferred_element_type", Param{}}}));
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
  std::vector<Atom> p =
      c.OpN("pjit", {x, y, z}, {{"jaxpr", Closed(k)}, {"name", std::string("inner")}});
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
  Atom m = c.Op("custom_vjp_call", {x, y},
                {{"call_jaxpr", Closed(call)},
                 {"fwd_jaxpr", Closed(fwd)},
                 {"bwd_jaxpr", Closed(bwd)},
                 {"num_res", int64_t{2}}});
  Atom sc = c.Op("sharding_constraint", {c.Op("sin", {m})},
                 {{"sharding", std::string("NamedSharding(mesh=Mesh('x': 3), spec=P('x'))")}});
  c.Loss(sc);
  CheckFiniteDifferences(c);
}

TEST(AutodiffNumericTest, SecondDerivativeOfSigmoid) {
  // grad(grad(sigmoid)): the first gradient's add_any / integer_pow / div equations are
  // differentiated again. Hand-derived: s''(x) = s(1 - s)(1 - 2s) with s = sigmoid(x).
  Case c;
  Atom x = c.In(HostValue{{}, {0.7}});
  Atom d = c.Op("add", {c.Op("exp", {c.Op("neg", {x})}), F64(1.0)});
  c.Scalar(c.Op("div", {F64(1.0), d}));
  auto g1 = GradJaxpr(c.jaxpr(), {0}, false);
  ASSERT_TRUE(g1.ok()) << g1.status().ToString();
  auto g2 = GradJaxpr(*g1, {0}, false);
  ASSERT_TRUE(g2.ok()) << g2.status().ToString();
  double s = 1 / (1 + std::exp(-0.7));
  EXPECT_NEAR(First(Xshard(*g2).Run({HostValue{{}, {0.7}}})), s * (1 - s) * (1 - 2 * s), 1e-12);
  // And a fan-out function whose first gradient has add_any: f = x^2 sin(x) on a vector.
  Case f;
  Atom v = f.In(Fill({3}, 1));
  f.Scalar(f.Sum(f.Op("mul", {f.Op("mul", {v, v}), f.Op("sin", {v})})));
  auto h1 = GradJaxpr(f.jaxpr(), {0}, false);
  ASSERT_TRUE(h1.ok());
  // d/dx of sum(grad) is f''(x) per element: 2 sin + 4x cos - x^2 sin.
  Jaxpr summed = *h1;
  {
    JaxprBuilder b(&summed);
    summed.outvars = {*b.Bind1("reduce_sum", {summed.outvars[0]}, {{"axes", IntList{0}}})};
  }
  auto h2 = GradJaxpr(summed, {0}, false);
  ASSERT_TRUE(h2.ok()) << h2.status().ToString();
  auto out = Xshard(*h2).Run(f.args());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (size_t i = 0; i < 3; ++i) {
    double xi = f.args()[0].v[i];
    EXPECT_NEAR((*out)[0].v[i], 2 * std::sin(xi) + 4 * xi * std::cos(xi) - xi * xi * std::sin(xi),
                1e-12);
  }
}

TEST(AutodiffNumericTest, VjpOfTwoOutputs) {
  // f(x, y) = (exp(x) * y, sum(x * x)); vjp with cotangents (u, w) is
  // (u * exp(x) * y + 2 w x, u * exp(x)) by hand.
  Case c;
  Atom x = c.In(Fill({3}, 1));
  Atom y = c.In(Fill({3}, 2));
  c.Outs({c.Op("mul", {c.Op("exp", {x}), y}), c.Sum(c.Op("mul", {x, x}))});
  auto v = VjpJaxpr(c.jaxpr(), {0, 1});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  HostValue u = Fill({3}, 5), w{{}, {0.25}};
  std::vector<HostValue> args = c.args();
  args.push_back(u);
  args.push_back(w);
  auto out = Xshard(*v).Run(args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    double xi = c.args()[0].v[i], yi = c.args()[1].v[i];
    EXPECT_NEAR((*out)[0].v[i], std::exp(xi) * yi, 1e-12);
    EXPECT_NEAR((*out)[2].v[i], u.v[i] * std::exp(xi) * yi + 2 * 0.25 * xi, 1e-12);
    EXPECT_NEAR((*out)[3].v[i], u.v[i] * std::exp(xi), 1e-12);
  }
}

TEST(AutodiffNumericTest, Bf16WithPreferredF32) {
  // sum(x @ w) and sum(conv(x, k)) on small-integer bf16 data with f32 accumulation: the
  // gradients are integer sums (exact in bf16), computed by hand: d/dw[k][j] = sum_i x[i][k],
  // d/dx[i][k] = sum_j w[k][j]; for the 1x1-kernel conv, d/dk[c][o] = sum of x[..., c].
  Case c;
  Atom w = c.In(HostValue{{2, 3}, {1, 2, 3, 4, 5, 6}}, true, DType::kBF16);
  Atom x = c.In(HostValue{{2, 2}, {1, -1, 2, 3}}, true, DType::kBF16);
  c.Scalar(c.Sum(c.Op("dot_general", {x, w}, {{"dimension_numbers", IntLists{{1}, {0}, {}, {}}},
                                              {"preferred_element_type", DType::kF32}})));
  auto g = GradJaxpr(c.jaxpr(), {0, 1}, false);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto out = Xshard(*g).Run(c.args());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].v, (std::vector<double>{3, 3, 3, 2, 2, 2}));
  EXPECT_EQ((*out)[1].v, (std::vector<double>{6, 15, 6, 15}));

  Case k;
  Atom kern = k.In(HostValue{{1, 1, 2, 2}, {1, 2, 3, 4}}, true, DType::kBF16);  // HWIO
  Atom img = k.In(HostValue{{1, 2, 1, 2}, {1, 2, 3, 4}}, true, DType::kBF16);   // NHWC
  k.Scalar(k.Sum(k.Op("conv_general_dilated", {img, kern},
                      {{"window_strides", IntList{1, 1}}, {"padding", IntLists{{0, 0}, {0, 0}}},
                       {"lhs_dilation", IntList{1, 1}}, {"rhs_dilation", IntList{1, 1}},
                       {"dimension_numbers", IntLists{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}}},
                       {"feature_group_count", int64_t{1}}, {"batch_group_count", int64_t{1}},
                       {"precision", Param{}}, {"preferred_element_type", DType::kF32}})));
  auto gk = GradJaxpr(k.jaxpr(), {0, 1}, false);
  ASSERT_TRUE(gk.ok()) << gk.status().ToString();
  auto outk = Xshard(*gk).Run(k.args());
  ASSERT_TRUE(outk.ok()) << outk.status().ToString();
  EXPECT_EQ((*outk)[0].v, (std::vector<double>{4, 4, 6, 6}));  // x channels sum to 4 and 6
  EXPECT_EQ((*outk)[1].v, (std::vector<double>{3, 7, 3, 7}));  // kernel rows sum to 3 and 7
}

}  // namespace
}  // namespace xs::fe
