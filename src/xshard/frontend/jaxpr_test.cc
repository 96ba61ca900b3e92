// Jaxpr printing and abstract evaluation against hand-written texts: seed 002's jaxprs of
// sigmoid on f32[] and f32[10] and of grad(sigmoid), JAX 0.10.2's dot_general layout, and shapes
// computed by hand for every primitive family.
#include "xshard/frontend/jaxpr.h"
#include "xshard/frontend/seed002_jaxprs_test.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace xs::fe {
namespace {

using ::testing::HasSubstr;

Atom F32Jaxpr(double v) { return Atom::OfLiteral(Array::Scalar<float>(static_cast<float>(v)), true); }

// sigmoid(x) = 1 / (1 + exp(-x)) as the notebook's JAX traced it.
Jaxpr SigmoidJaxpr(std::vector<int64_t> dims) {
  Jaxpr j;
  JaxprBuilder b(&j);
  Var a = b.NewVar(AVal{DType::kF32, dims});
  j.invars = {a};
  Atom x = *b.Bind1("neg", {Atom::OfVar(a)});
  x = *b.Bind1("exp", {x});
  x = *b.Bind1("add", {x, F32Jaxpr(1)});
  x = *b.Bind1("div", {F32Jaxpr(1), x});
  j.outvars = {x};
  return j;
}

TEST(PrintJaxprTest, SigmoidScalarAsSeed002) {
  EXPECT_EQ(PrintJaxpr(SigmoidJaxpr({})),
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = neg a\n"
            "    c:f32[] = exp b\n"
            "    d:f32[] = add c 1.0\n"
            "    e:f32[] = div 1.0 d\n"
            "  in (e,) }");
}

TEST(PrintJaxprTest, SigmoidVectorAsSeed002) {
  EXPECT_EQ(PrintJaxpr(SigmoidJaxpr({10})),
            "{ lambda ; a:f32[10]. let\n"
            "    b:f32[10] = neg a\n"
            "    c:f32[10] = exp b\n"
            "    d:f32[10] = add c 1.0\n"
            "    e:f32[10] = div 1.0 d\n"
            "  in (e,) }");
}

TEST(PrintJaxprTest, GradSigmoidWithUnusedOutputAsSeed002) {
  Jaxpr j;
  JaxprBuilder b(&j);
  Var a = b.NewVar(AVal{DType::kF32, {}});
  j.invars = {a};
  Atom nb = *b.Bind1("neg", {Atom::OfVar(a)});
  Atom c = *b.Bind1("exp", {nb});
  Atom d = *b.Bind1("add", {c, F32Jaxpr(1)});
  (void)*b.Bind1("div", {F32Jaxpr(1), d});
  Atom e = *b.Bind1("integer_pow", {d}, {{"y", int64_t{-2}}});
  Atom f = *b.Bind1("mul", {F32Jaxpr(1), e});
  Atom g = *b.Bind1("mul", {f, F32Jaxpr(1)});
  Atom h = *b.Bind1("neg", {g});
  Atom i = *b.Bind1("mul", {h, c});
  j.outvars = {*b.Bind1("neg", {i})};
  EXPECT_EQ(PrintJaxpr(j),
            testing::kGradSigmoidJaxpr);
}

// Seed 002's make_jaxpr(jit(sigmoid)) with today's primitive name (pjit[jaxpr name]): the nested
// jaxpr continues the outer naming and is indented under its parameter.
TEST(PrintJaxprTest, NestedPjitContinuesNames) {
  auto inner = std::make_shared<const Jaxpr>(SigmoidJaxpr({}));
  Jaxpr j;
  JaxprBuilder b(&j);
  Var a = b.NewVar(AVal{DType::kF32, {}});
  j.invars = {a};
  j.outvars = {*b.Bind1("pjit", {Atom::OfVar(a)},
                        {{"jaxpr", inner}, {"name", std::string("sigmoid")}})};
  EXPECT_EQ(PrintJaxpr(j),
            testing::kJitSigmoidJaxpr);
}

// JAX 0.10.2: make_jaxpr(jnp.dot)(ones((2,3)), ones((3,4))) breaks the long parameter list.
TEST(PrintJaxprTest, LongParamsBreakOnePerLine) {
  Jaxpr j;
  JaxprBuilder b(&j);
  Var x = b.NewVar(AVal{DType::kF32, {2, 3}});
  Var y = b.NewVar(AVal{DType::kF32, {3, 4}});
  j.invars = {x, y};
  j.outvars = {*b.Bind1("dot_general", {Atom::OfVar(x), Atom::OfVar(y)},
                        {{"dimension_numbers", IntLists{{1}, {0}, {}, {}}},
                         {"precision", std::monostate{}},
                         {"preferred_element_type", DType::kF32}})};
  EXPECT_EQ(PrintJaxpr(j),
            "{ lambda ; a:f32[2,3] b:f32[3,4]. let\n"
            "    c:f32[2,4] = dot_general[\n"
            "      dimension_numbers=(([1], [0]), ([], []))\n"
            "      precision=None\n"
            "      preferred_element_type=float32\n"
            "    ] a b\n"
            "  in (c,) }");
}

TEST(PrintJaxprTest, ConstvarsTuplesIntLiteralsAndNoEquations) {
  Jaxpr j;
  JaxprBuilder b(&j);
  Var k = b.NewVar(AVal{DType::kF32, {3}});
  Var x = b.NewVar(AVal{DType::kS32, {2, 3}});
  j.constvars = {k};
  j.consts = {Array::Full(DType::kF32, {3}, 0)};
  j.invars = {x};
  Atom s = *b.Bind1("reduce_sum", {Atom::OfVar(x)}, {{"axes", IntList{0}}});
  Atom m = *b.Bind1("mul", {s, Atom::OfLiteral(Array::Scalar<int32_t>(2), true)});
  j.outvars = {m, Atom::OfVar(k)};
  EXPECT_EQ(PrintJaxpr(j),
            "{ lambda a:f32[3]; b:i32[2,3]. let\n"
            "    c:i32[3] = reduce_sum[axes=(0,)] b\n"
            "    d:i32[3] = mul c 2\n"
            "  in (d, a) }");
  Jaxpr id;
  Var v{0, AVal{DType::kPred, {}}};
  id.invars = {v};
  id.outvars = {Atom::OfVar(v)};
  EXPECT_EQ(PrintJaxpr(id), "{ lambda ; a:bool[]. let in (a,) }");
}

TEST(PrintJaxprTest, VariableNamesPastZ) {
  Jaxpr j;
  JaxprBuilder b(&j);
  Var a = b.NewVar(AVal{DType::kF32, {}});
  j.invars = {a};
  Atom x = Atom::OfVar(a);
  for (int i = 0; i < 27; ++i) x = *b.Bind1("neg", {x});
  j.outvars = {x};
  std::string text = PrintJaxpr(j);
  EXPECT_THAT(text, HasSubstr("    z:f32[] = neg y\n    ba:f32[] = neg z\n    bb:f32[] = neg ba\n"));
  EXPECT_THAT(text, HasSubstr("in (bb,) }"));
}

std::vector<int64_t> Dims(const std::string& prim, const std::vector<AVal>& in, Params p) {
  auto out = AbstractEval(prim, in, p);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? (*out)[0].dims : std::vector<int64_t>{-1};
}

AVal F(std::vector<int64_t> dims) { return AVal{DType::kF32, std::move(dims)}; }

TEST(AbstractEvalTest, ShapesComputedByHand) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(Dims("add", {F({10}), AVal{DType::kF32, {}, true}}, {}), V({10}));
  EXPECT_EQ(Dims("broadcast_in_dim", {F({3})},
                 {{"shape", IntList{2, 3}}, {"broadcast_dimensions", IntList{1}}}), V({2, 3}));
  EXPECT_EQ(Dims("reshape", {F({2, 3})}, {{"new_sizes", IntList{6}},
                                          {"dimensions", std::monostate{}}}), V({6}));
  EXPECT_EQ(Dims("transpose", {F({2, 3, 4})}, {{"permutation", IntList{2, 0, 1}}}), V({4, 2, 3}));
  EXPECT_EQ(Dims("reduce_max", {F({2, 3, 4})}, {{"axes", IntList{0, 2}}}), V({3}));
  EXPECT_EQ(Dims("squeeze", {F({1, 3, 1})}, {{"dimensions", IntList{0, 2}}}), V({3}));
  EXPECT_EQ(Dims("expand_dims", {F({3})}, {{"dimensions", IntList{0, 2}}}), V({1, 3, 1}));
  EXPECT_EQ(Dims("slice", {F({10, 8})}, {{"start_indices", IntList{1, 0}},
                                         {"limit_indices", IntList{8, 8}},
                                         {"strides", IntList{3, 1}}}), V({3, 8}));
  AVal i32{DType::kS32, {}};
  EXPECT_EQ(Dims("dynamic_slice", {F({10, 8}), i32, i32}, {{"slice_sizes", IntList{2, 8}}}),
            V({2, 8}));
  EXPECT_EQ(Dims("concatenate", {F({2, 3}), F({2, 5})}, {{"dimension", int64_t{1}}}), V({2, 8}));
  // 3 + 1 + 2 + 2 interior gaps of 1.
  EXPECT_EQ(Dims("pad", {F({3}), F({})}, {{"padding_config", IntLists{{1, 2, 1}}}}), V({8}));
  // Batch 5, lhs free 2, rhs free 7.
  EXPECT_EQ(Dims("dot_general", {F({5, 2, 3}), F({5, 3, 7})},
                 {{"dimension_numbers", IntLists{{2}, {1}, {0}, {0}}},
                  {"precision", std::monostate{}}, {"preferred_element_type", std::monostate{}}}),
            V({5, 2, 7}));
  // flax Conv(32, (3, 3)) on NHWC 1x28x28x1 with SAME padding (1, 1): 1x28x28x32.
  Params conv{{"window_strides", IntList{1, 1}}, {"padding", IntLists{{1, 1}, {1, 1}}},
              {"lhs_dilation", IntList{1, 1}}, {"rhs_dilation", IntList{1, 1}},
              {"dimension_numbers", IntLists{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}}},
              {"feature_group_count", int64_t{1}}, {"batch_group_count", int64_t{1}},
              {"precision", std::monostate{}}, {"preferred_element_type", std::monostate{}}};
  EXPECT_EQ(Dims("conv_general_dilated", {F({1, 28, 28, 1}), F({3, 3, 1, 32})}, conv),
            V({1, 28, 28, 32}));
  // avg_pool window (2, 2) stride (2, 2), VALID: 28 -> 14.
  EXPECT_EQ(Dims("reduce_window_sum", {F({1, 28, 28, 32})},
                 {{"window_dimensions", IntList{1, 2, 2, 1}},
                  {"window_strides", IntList{1, 2, 2, 1}},
                  {"padding", IntLists{{0, 0}, {0, 0}, {0, 0}, {0, 0}}}}),
            V({1, 14, 14, 32}));
  auto iota = AbstractEval("iota", {}, {{"dtype", DType::kS32}, {"shape", IntList{4, 2}},
                                        {"dimension", int64_t{1}}});
  ASSERT_TRUE(iota.ok());
  EXPECT_EQ((*iota)[0], (AVal{DType::kS32, {4, 2}}));
  auto am = AbstractEval("argmax", {F({2, 3})}, {{"axes", IntList{1}},
                                                 {"index_dtype", DType::kS32}});
  ASSERT_TRUE(am.ok());
  EXPECT_EQ((*am)[0], (AVal{DType::kS32, {2}}));
  auto lt = AbstractEval("lt", {F({2}), F({2})}, {});
  ASSERT_TRUE(lt.ok());
  EXPECT_EQ((*lt)[0].dtype, DType::kPred);
}

TEST(AbstractEvalTest, WeakTypeOnlyWhenAllOperandsAreWeak) {
  AVal weak{DType::kF32, {}, true};
  EXPECT_TRUE((*AbstractEval("mul", {weak, weak}, {}))[0].weak_type);
  EXPECT_FALSE((*AbstractEval("mul", {weak, F({4})}, {}))[0].weak_type);
}

TEST(AbstractEvalTest, ErrorsNameThePrimitiveShapesAndFix) {
  auto bad_add = AbstractEval("add", {F({2, 3}), F({3, 2})}, {});
  ASSERT_FALSE(bad_add.ok());
  EXPECT_THAT(bad_add.status().message(), HasSubstr("add: operand shapes differ (f32[2,3], f32[3,2])"));
  EXPECT_THAT(bad_add.status().message(), HasSubstr("broadcast"));
  auto bad_dot = AbstractEval("dot_general", {F({2, 3}), F({4, 5})},
                              {{"dimension_numbers", IntLists{{1}, {0}, {}, {}}}});
  ASSERT_FALSE(bad_dot.ok());
  EXPECT_THAT(bad_dot.status().message(),
              HasSubstr("dot_general: contracting dims 1 (size 3) and 0 (size 4) differ"));
  auto bad_dtype = AbstractEval("mul", {F({2}), AVal{DType::kS32, {2}}}, {});
  ASSERT_FALSE(bad_dtype.ok());
  EXPECT_THAT(bad_dtype.status().message(), HasSubstr("Astype"));
  auto unknown = AbstractEval("frobnicate", {F({2})}, {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown primitive 'frobnicate'"));
  auto bad_reshape = AbstractEval("reshape", {F({2, 3})}, {{"new_sizes", IntList{4}}});
  ASSERT_FALSE(bad_reshape.ok());
  EXPECT_THAT(bad_reshape.status().message(), HasSubstr("6 elements"));
  auto missing = AbstractEval("integer_pow", {F({2})}, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("missing parameter 'y'"));
}

TEST(AValTest, ToStringAndCount) {
  EXPECT_EQ((AVal{DType::kF32, {10, 3}}).ToString(), "f32[10,3]");
  EXPECT_EQ((AVal{DType::kS32, {}}).ToString(), "i32[]");
  EXPECT_EQ((AVal{DType::kBF16, {2}}).ToString(), "bf16[2]");
  EXPECT_EQ((AVal{DType::kF32, {10, 3}}).num_elements(), 30);
  EXPECT_EQ((AVal{DType::kF32, {}}).num_elements(), 1);
}

}  // namespace
}  // namespace xs::fe
