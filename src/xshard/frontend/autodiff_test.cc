// Structural tests of GradJaxpr / VjpJaxpr: seed 002's grad(sigmoid) text exactly, and
// `make_jaxpr(grad(f))` texts printed by JAX 0.10.2 for small lax functions
// (tests/data/autodiff/grad_jaxprs.txt, made by tests/tools/gen_autodiff_refs.py), compared
// after a normalisation of both sides; plus the error cases and the call primitives' shapes.
#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/seed002_jaxprs_test.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace xs::fe {
namespace {

using ::testing::HasSubstr;

Atom F32(double v) { return Atom::OfLiteral(Array::Scalar<float>(static_cast<float>(v)), true); }

// Builds a forward jaxpr equation by equation.
class Fn {
 public:
  Fn() : b_(&j_) {}
  Atom In(std::vector<int64_t> dims, DType t = DType::kF32) {
    Var v = b_.NewVar(AVal{t, std::move(dims)});
    j_.invars.push_back(v);
    return Atom::OfVar(v);
  }
  Atom Op(const std::string& prim, std::vector<Atom> in, Params p = {}) {
    auto r = b_.Bind1(prim, std::move(in), std::move(p));
    EXPECT_TRUE(r.ok()) << prim << ": " << r.status().ToString();
    return r.ok() ? *r : Atom();
  }
  Atom Sum(const Atom& x, IntList axes) { return Op("reduce_sum", {x}, {{"axes", axes}}); }
  Jaxpr Done(std::vector<Atom> outs) {
    j_.outvars = std::move(outs);
    return j_;
  }

 private:
  Jaxpr j_;
  JaxprBuilder b_;
};

std::string GradText(const Jaxpr& f, std::vector<int64_t> wrt) {
  auto g = GradJaxpr(f, wrt, /*with_value=*/false);
  if (!g.ok()) return "error: " + g.status().ToString();
  return PrintJaxpr(*g);
}

// The differences between JAX 0.10.2's printer and ours that carry no meaning: literal types
// (`1.0:f32[]`), `sharding=None` / `out_sharding=None`, `np.int64(1)`, broadcast_in_dim's shape
// (implied by the output type) and empty broadcast_dimensions, and line breaks in long params.
std::string Normalize(std::string s) {
  static const std::vector<std::pair<std::regex, std::string>> kRules = {
      {std::regex(R"(\s+)"), " "},
      {std::regex(R"((\d):(f|bf|s|u|i)\d+\[\])"), "$1"},
      {std::regex(R"( ?\bout_sharding=None)"), ""},
      {std::regex(R"( ?\bsharding=None)"), ""},
      {std::regex(R"(np\.int64\((-?\d+)\))"), "$1"},
      {std::regex(R"( ?\bshape=\([0-9, ]*\))"), ""},
      {std::regex(R"( ?\bbroadcast_dimensions=\(\))"), ""},
      {std::regex(R"(\[ *\])"), ""},
      {std::regex(R"(\[ )"), "["},
      {std::regex(R"( \])"), "]"},
      {std::regex(R"(^ +| +$)"), ""},
  };
  for (const auto& [re, with] : kRules) s = std::regex_replace(s, re, with);
  return s;
}

std::map<std::string, std::string> LoadJaxReferences() {
  std::ifstream in(std::string(XSHARD_SOURCE_DIR) + "/tests/data/autodiff/grad_jaxprs.txt");
  std::map<std::string, std::string> out;
  std::string line, name;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) {
      name = line.substr(4);
    } else if (!name.empty()) {
      out[name] += line + "\n";
    }
  }
  return out;
}

TEST(GradJaxprTest, SigmoidPrintsAsSeed002) {
  Fn f;
  Atom a = f.In({});
  Atom x = f.Op("neg", {a});
  x = f.Op("exp", {x});
  x = f.Op("add", {x, F32(1)});
  x = f.Op("div", {F32(1), x});
  EXPECT_EQ(GradText(f.Done({x}), {0}),
            testing::kGradSigmoidJaxpr);
}

IntLists Dn(IntList lc, IntList rc, IntList lb, IntList rb) { return {lc, rc, lb, rb}; }

// The functions of gen_autodiff_refs.py's JAXPRS, equation for equation.
// custom_add(x, y) * x, where custom_add is a custom_vjp_call of x + y whose user backward is
// (2g, 3g) (deliberately not the true derivative).
Jaxpr CustomAddTimesX() {
  auto call = std::make_shared<Jaxpr>();
  {
    Fn c;
    Atom x = c.In({}), y = c.In({});
    *call = c.Done({c.Op("add", {x, y})});
  }
  auto bwd = std::make_shared<Jaxpr>();
  {
    Fn c;
    Atom g = c.In({});
    *bwd = c.Done({c.Op("mul", {F32(2), g}), c.Op("mul", {F32(3), g})});
  }
  Fn f;
  Atom x = f.In({}), y = f.In({});
  Atom s = f.Op("custom_vjp_call", {x, y},
                {{"call_jaxpr", std::shared_ptr<const Jaxpr>(call)},
                 {"fwd_jaxpr", std::shared_ptr<const Jaxpr>(call)},
                 {"bwd_jaxpr", std::shared_ptr<const Jaxpr>(bwd)},
                 {"num_res", int64_t{0}}});
  return f.Done({f.Op("mul", {s, x})});
}

std::map<std::string, std::pair<Jaxpr, std::vector<int64_t>>> JaxCases() {
  std::map<std::string, std::pair<Jaxpr, std::vector<int64_t>>> c;
  {
    Fn f;
    Atom a = f.In({});
    c["tanh_times_x"] = {f.Done({f.Op("mul", {f.Op("tanh", {a}), a})}), {0}};
  }
  {
    Fn f;
    Atom a = f.In({3}), b = f.In({3});
    Atom d = f.Op("add", {f.Op("mul", {a, b}), a});
    c["mul_add_sum"] = {f.Done({f.Sum(d, {0})}), {0, 1}};
  }
  {
    Fn f;
    Atom a = f.In({});
    c["abs"] = {f.Done({f.Op("abs", {a})}), {0}};
  }
  {
    Fn f;
    Atom a = f.In({3}), b = f.In({3});
    c["sub_then_mul"] = {f.Done({f.Sum(f.Op("mul", {f.Op("sub", {a, b}), a}), {0})}), {0, 1}};
  }
  {
    Fn f;
    Atom a = f.In({}), b = f.In({});
    c["div_both"] = {f.Done({f.Op("div", {a, b})}), {0, 1}};
  }
  {
    Fn f;
    Atom a = f.In({3}), b = f.In({3});
    c["max_sum"] = {f.Done({f.Sum(f.Op("max", {a, b}), {0})}), {0}};
  }
  {
    Fn f;
    Atom a = f.In({4});
    Atom s = f.Op("sqrt", {a});
    Atom g = f.Op("add", {f.Op("cos", {a}), f.Op("log", {a})});
    c["unary_chain"] = {f.Done({f.Sum(f.Op("mul", {s, g}), {0})}), {0}};
  }
  {
    Fn f;
    Atom a = f.In({4});
    Atom r = f.Op("rsqrt", {a});
    Atom m = f.Op("mul", {f.Op("logistic", {a}), f.Op("sin", {a})});
    c["rsqrt_logistic_sin"] = {f.Done({f.Sum(f.Op("sub", {r, m}), {0})}), {0}};
  }
  {
    Fn f;
    Atom a = f.In({2});
    c["integer_pow_3"] = {f.Done({f.Sum(f.Op("integer_pow", {a}, {{"y", int64_t{3}}}), {0})}),
                          {0}};
  }
  {
    Fn f;
    Atom a = f.In({}), b = f.In({});
    c["pow_both"] = {f.Done({f.Op("pow", {a, b})}), {0, 1}};
  }
  {
    Fn f;
    Atom a = f.In({3});
    Atom p = f.Op("gt", {a, F32(0)});
    Atom s = f.Op("select_n", {p, f.Op("mul", {a, F32(2)}), a});
    c["select_n"] = {f.Done({f.Sum(s, {0})}), {0}};
  }
  {
    Fn f;
    Atom w = f.In({3, 4}), x = f.In({2, 3});
    Atom d = f.Op("dot_general", {x, w}, {{"dimension_numbers", Dn({1}, {0}, {}, {})}});
    c["dot_general"] = {f.Done({f.Sum(d, {0, 1})}), {0, 1}};
  }
  {
    Fn f;
    Atom a = f.In({2, 3, 4}), b = f.In({2, 4, 5});
    Atom d = f.Op("dot_general", {a, b}, {{"dimension_numbers", Dn({2}, {1}, {0}, {0})}});
    c["dot_general_batch"] = {f.Done({f.Sum(d, {0, 1, 2})}), {0, 1}};
  }
  {
    Fn f;
    Atom a = f.In({3});
    Atom b = f.Op("broadcast_in_dim", {a},
                  {{"shape", IntList{2, 3, 4}}, {"broadcast_dimensions", IntList{1}}});
    Atom t = f.Op("transpose", {b}, {{"permutation", IntList{2, 0, 1}}});
    Atom r = f.Op("reshape", {t}, {{"new_sizes", IntList{4, 6}}, {"dimensions", Param{}}});
    c["broadcast_transpose_reshape"] = {f.Done({f.Sum(r, {0, 1})}), {0}};
  }
  {
    Fn f;
    Atom a = f.In({3});
    f.In({3});
    c["no_path_zeros"] = {f.Done({f.Sum(a, {0})}), {0, 1}};
  }
  {
    Fn f;
    Atom a = f.In({4});
    Atom p = f.Op("pad", {a, F32(0)}, {{"padding_config", IntLists{{1, 2, 1}}}});
    c["pad"] = {f.Done({f.Sum(p, {0})}), {0}};
  }
  {
    Fn f;
    Atom a = f.In({7});
    Atom s = f.Op("slice", {a}, {{"limit_indices", IntList{6}}, {"start_indices", IntList{1}},
                                 {"strides", IntList{2}}});
    c["slice"] = {f.Done({f.Sum(s, {0})}), {0}};
  }
  {
    Fn f;
    Atom a = f.In({6}), u = f.In({2});
    Atom one = Atom::OfLiteral(Array::Scalar<int32_t>(1), false);
    Atom two = Atom::OfLiteral(Array::Scalar<int32_t>(2), false);
    Atom d = f.Op("dynamic_update_slice", {a, u, one});
    Atom s = f.Op("dynamic_slice", {d, two}, {{"slice_sizes", IntList{3}}});
    c["dynamic_slices"] = {f.Done({f.Sum(s, {0})}), {0, 1}};
  }
  const Params window_sum = {{"base_dilation", IntList{1, 1}},
                             {"padding", IntLists{{0, 0}, {1, 1}}},
                             {"window_dilation", IntList{1, 1}},
                             {"window_dimensions", IntList{1, 3}},
                             {"window_strides", IntList{1, 2}}};
  {
    Fn f;
    Atom a = f.In({2, 6});
    c["reduce_window_sum"] = {f.Done({f.Sum(f.Op("reduce_window_sum", {a}, window_sum), {0, 1})}),
                              {0}};
  }
  {
    Fn f;
    Atom a = f.In({2, 6});
    Params p = window_sum;
    p["padding"] = IntLists{{0, 0}, {0, 0}};
    p["window_dimensions"] = IntList{1, 2};
    c["reduce_window_max"] = {f.Done({f.Sum(f.Op("reduce_window_max", {a}, p), {0, 1})}), {0}};
  }
  {
    Fn f;
    Atom k = f.In({3, 2, 1, 2}), x = f.In({1, 4, 4, 1});
    Atom y = f.Op("conv_general_dilated", {x, k},
                  {{"batch_group_count", int64_t{1}},
                   {"dimension_numbers", IntLists{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}}},
                   {"feature_group_count", int64_t{1}},
                   {"lhs_dilation", IntList{1, 1}},
                   {"padding", IntLists{{1, 1}, {0, 0}}},
                   {"precision", Param{}},
                   {"preferred_element_type", Param{}},
                   {"rhs_dilation", IntList{1, 1}},
                   {"window_strides", IntList{1, 1}}});
    c["conv"] = {f.Done({f.Sum(y, {0, 1, 2, 3})}), {0, 1}};
  }
  {
    Fn f;
    Atom a = f.In({2, 1, 3});
    Atom t = f.Op("transpose", {a}, {{"permutation", IntList{1, 0, 2}}});
    Atom q = f.Op("squeeze", {t}, {{"dimensions", IntList{0}}});
    c["transpose_squeeze"] = {f.Done({f.Sum(q, {0, 1})}), {0}};
  }
  c["custom_vjp"] = {CustomAddTimesX(), {0, 1}};
  {
    // grad(grad(sigmoid)): the function differentiated is grad(sigmoid)'s jaxpr.
    Fn f;
    Atom a = f.In({});
    Atom x = f.Op("div", {F32(1), f.Op("add", {f.Op("exp", {f.Op("neg", {a})}), F32(1)})});
    auto g = GradJaxpr(f.Done({x}), {0}, false);
    EXPECT_TRUE(g.ok());
    if (g.ok()) c["grad_grad_sigmoid"] = {*g, {0}};
  }
  return c;
}

TEST(GradJaxprTest, MatchesJaxPrintedJaxprs) {
  auto refs = LoadJaxReferences();
  ASSERT_GE(refs.size(), 24u) << "tests/data/autodiff/grad_jaxprs.txt missing or short";
  int compared = 0;
  for (auto& [name, fw] : JaxCases()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(refs.count(name));
    EXPECT_EQ(Normalize(GradText(fw.first, fw.second)), Normalize(refs[name]));
    ++compared;
  }
  EXPECT_EQ(compared, 24);
}

TEST(GradJaxprTest, ValueAndGradKeepsTheValue) {
  Fn f;
  Atom a = f.In({});
  auto g = GradJaxpr(f.Done({f.Op("sin", {a})}), {0}, /*with_value=*/true);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(PrintJaxpr(*g),
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = sin a\n"
            "    c:f32[] = cos a\n"
            "    d:f32[] = mul 1.0 c\n"
            "  in (b, d) }");
}

TEST(GradJaxprTest, IdentityAndConstantGiveLiterals) {
  // JAX: make_jaxpr(grad(lambda x, y: x, argnums=(0, 1)))(1., 2.) is `in (1.0, 0.0)`.
  Fn f;
  Atom a = f.In({});
  f.In({});
  auto g = GradJaxpr(f.Done({a}), {0, 1}, false);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(Normalize(PrintJaxpr(*g)),
            Normalize("{ lambda ; a:f32[] b:f32[]. let  in (1.0, 0.0) }"));
}

TEST(GradJaxprTest, Errors) {
  Fn f;
  Atom x = f.In({3});
  Atom n = f.In({}, DType::kS32);
  Jaxpr j = f.Done({f.Sum(x, {0})});
  auto r = GradJaxpr(j, {1}, false);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("argnum 1 has dtype int32"));
  r = GradJaxpr(j, {2}, false);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("argnum 2 is out of range"));
  r = GradJaxpr(j, {0, 0}, false);
  EXPECT_THAT(r.status().message(), HasSubstr("repeated"));
  Fn g;
  Atom v = g.In({3});
  r = GradJaxpr(g.Done({g.Op("exp", {v})}), {0}, false);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("must return a float scalar, but it returns f32[3]"));
  (void)n;
}

TEST(VjpJaxprTest, TakesOneCotangentPerOutput) {
  Fn f;
  Atom a = f.In({2});
  Atom e = f.Op("exp", {a});
  auto v = VjpJaxpr(f.Done({e, f.Op("neg", {a})}), {0});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(PrintJaxpr(*v),
            "{ lambda ; a:f32[2] b:f32[2] c:f32[2]. let\n"
            "    d:f32[2] = exp a\n"
            "    e:f32[2] = neg a\n"
            "    f:f32[2] = neg c\n"
            "    g:f32[2] = mul b d\n"
            "    h:f32[2] = add_any f g\n"
            "  in (d, e, h) }");
}

// custom_vjp_call: the user's forward inlined before the backward part, the user's backward
// (deliberately 2*g, 3*g, not the true derivative) after it.
TEST(GradJaxprTest, CustomVjpCallInlinesUserRules) {
  auto g = GradJaxpr(CustomAddTimesX(), {0, 1}, false);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(PrintJaxpr(*g),
            "{ lambda ; a:f32[] b:f32[]. let\n"
            "    c:f32[] = add a b\n"
            "    _:f32[] = mul c a\n"
            "    d:f32[] = mul c 1.0\n"
            "    e:f32[] = mul 1.0 a\n"
            "    f:f32[] = mul 2.0 e\n"
            "    g:f32[] = mul 3.0 e\n"
            "    h:f32[] = add_any d f\n"
            "  in (h, g) }");
}

// pjit stays a pjit: a forward call returning the residuals and a backward call.
TEST(GradJaxprTest, PjitIsSplitIntoForwardAndBackwardCalls) {
  auto inner = std::make_shared<Jaxpr>();
  {
    Fn c;
    Atom v = c.In({3});
    *inner = c.Done({c.Op("mul", {c.Op("sin", {v}), v})});
  }
  Fn f;
  Atom a = f.In({3});
  Atom p = f.Op("pjit", {a}, {{"jaxpr", std::shared_ptr<const Jaxpr>(inner)},
                              {"name", std::string("inner")}});
  auto g = GradJaxpr(f.Done({f.Sum(p, {0})}), {0}, false);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(PrintJaxpr(*g),
            "{ lambda ; a:f32[3]. let\n"
            "    b:f32[3] c:f32[3] d:f32[3] = pjit[\n"
            "      jaxpr={ lambda ; e:f32[3]. let\n"
            "          f:f32[3] = sin e\n"
            "          g:f32[3] = cos e\n"
            "          h:f32[3] = mul f e\n"
            "        in (h, f, g) }\n"
            "      name=inner\n"
            "    ] a\n"
            "    _:f32[] = reduce_sum[axes=(0,)] b\n"
            "    i:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] 1.0\n"
            "    j:f32[3] = pjit[\n"
            "      jaxpr={ lambda ; k:f32[3] l:f32[3] m:f32[3] n:f32[3]. let\n"
            "          o:f32[3] = mul k n\n"
            "          p:f32[3] = mul n l\n"
            "          q:f32[3] = mul p m\n"
            "          r:f32[3] = add_any o q\n"
            "        in (r,) }\n"
            "      name=inner\n"
            "    ] c a d i\n"
            "  in (j,) }");
}

TEST(GradJaxprTest, StopGradientAndConstvars) {
  // f(x) = sum(stop_gradient(x) * x * c) with c a constvar: df/dx = x * c (hand-derived), so
  // the backward part is one broadcast of the seed and two muls; stop_gradient gets no work.
  Jaxpr j;
  JaxprBuilder b(&j);
  Var c = b.NewVar(AVal{DType::kF32, {2}});
  j.constvars = {c};
  j.consts = {Array::FromVector<float>({2}, {3, 4})};
  Var x = b.NewVar(AVal{DType::kF32, {2}});
  j.invars = {x};
  Atom sg = *b.Bind1("stop_gradient", {Atom::OfVar(x)});
  Atom m = *b.Bind1("mul", {*b.Bind1("mul", {sg, Atom::OfVar(x)}), Atom::OfVar(c)});
  j.outvars = {*b.Bind1("reduce_sum", {m}, {{"axes", IntList{0}}})};
  auto g = GradJaxpr(j, {0}, false);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(PrintJaxpr(*g),
            "{ lambda a:f32[2]; b:f32[2]. let\n"
            "    c:f32[2] = stop_gradient b\n"
            "    d:f32[2] = mul c b\n"
            "    e:f32[2] = mul d a\n"
            "    _:f32[] = reduce_sum[axes=(0,)] e\n"
            "    f:f32[2] = broadcast_in_dim[broadcast_dimensions=() shape=(2,)] 1.0\n"
            "    g:f32[2] = mul f a\n"
            "    h:f32[2] = mul c g\n"
            "  in (h,) }");
  EXPECT_EQ(g->consts.size(), 1u);
}

TEST(GradJaxprTest, PrimitiveWithoutRuleIsNamed) {
  Fn f;
  Atom a = f.In({3}), b = f.In({3});
  Jaxpr j = f.Done({f.Sum(f.Op("rem", {a, b}), {0})});
  auto g = GradJaxpr(j, {0}, false);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("primitive 'rem' (equation 0) has no VJP rule"));
  // Differentiating only inputs that do not reach it is fine.
  Fn h;
  Atom x = h.In({3}), y = h.In({3});
  Atom r = h.Op("rem", {y, y});
  EXPECT_TRUE(GradJaxpr(h.Done({h.Sum(h.Op("mul", {x, r}), {0})}), {0}, false).ok());
}

// A 3000-equation chain of sin: 2 forward equations per sin (sin, cos residual), one mul per
// sin backward; checks the size and gives the transform's cost in the test timing.
TEST(GradJaxprTest, LongChainIsLinear) {
  Fn f;
  Atom x = f.In({});
  for (int i = 0; i < 3000; ++i) x = f.Op("sin", {x});
  Jaxpr j = f.Done({x});
  auto g = GradJaxpr(j, {0}, false);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->eqns.size(), 3u * 3000);
}

// bf16 operands with preferred_element_type=f32: the f32 cotangent meets a bf16 operand. JAX
// binds the mixed dot_general; our dot_general needs equal operand dtypes, so the other operand
// is converted to the cotangent's dtype first, and the result converted back as JAX does.
TEST(GradJaxprTest, DotGeneralPreferredElementTypeConverts) {
  Fn f;
  Atom w = f.In({3, 4}, DType::kBF16), x = f.In({2, 3}, DType::kBF16);
  Atom d = f.Op("dot_general", {x, w}, {{"dimension_numbers", Dn({1}, {0}, {}, {})},
                                        {"preferred_element_type", DType::kF32}});
  auto g = GradJaxpr(f.Done({f.Sum(d, {0, 1})}), {0, 1}, false);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(PrintJaxpr(*g),
            "{ lambda ; a:bf16[3,4] b:bf16[2,3]. let\n"
            "    c:f32[2,4] = dot_general[\n"
            "      dimension_numbers=(([1], [0]), ([], []))\n"
            "      preferred_element_type=float32\n"
            "    ] b a\n"
            "    _:f32[] = reduce_sum[axes=(0, 1)] c\n"
            "    d:f32[2,4] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 4)] 1.0\n"
            "    e:f32[2,3] = convert_element_type[new_dtype=float32 weak_type=False] b\n"
            "    f:f32[4,3] = dot_general[\n"
            "      dimension_numbers=(([0], [0]), ([], []))\n"
            "      preferred_element_type=float32\n"
            "    ] d e\n"
            "    g:f32[3,4] = transpose[permutation=(1, 0)] f\n"
            "    h:bf16[3,4] = convert_element_type[new_dtype=bfloat16 weak_type=False] g\n"
            "    i:f32[3,4] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
            "    j:f32[2,3] = dot_general[\n"
            "      dimension_numbers=(([1], [1]), ([], []))\n"
            "      preferred_element_type=float32\n"
            "    ] d i\n"
            "    k:bf16[2,3] = convert_element_type[new_dtype=bfloat16 weak_type=False] j\n"
            "  in (h, k) }");
}

}  // namespace
}  // namespace xs::fe
