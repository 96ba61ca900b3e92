// Tracing, eager execution, Jit and lowering of Tensor functions, against seed 002's jaxprs and
// HLO and values computed by hand.
#include "xshard/frontend/tensor.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "xshard/frontend/jit.h"
#include "xshard/frontend/trace.h"
#include "xshard/frontend/seed002_jaxprs_test.h"

namespace xs::fe {
namespace {

using ::testing::HasSubstr;

Tensor Sigmoid(Tensor x) { return 1 / (1 + Exp(-x)); }

TEST(MakeJaxprTest, SigmoidOnScalarAsSeed002) {
  StatusOr<Jaxpr> j = MakeJaxpr(Sigmoid)(1.0);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(PrintJaxpr(*j),
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = neg a\n"
            "    c:f32[] = exp b\n"
            "    d:f32[] = add c 1.0\n"
            "    e:f32[] = div 1.0 d\n"
            "  in (e,) }");
}

TEST(MakeJaxprTest, SigmoidOnVectorAsSeed002) {
  StatusOr<Jaxpr> j = MakeJaxpr(Sigmoid)(Ones({10}));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(PrintJaxpr(*j),
            "{ lambda ; a:f32[10]. let\n"
            "    b:f32[10] = neg a\n"
            "    c:f32[10] = exp b\n"
            "    d:f32[10] = add c 1.0\n"
            "    e:f32[10] = div 1.0 d\n"
            "  in (e,) }");
}

TEST(MakeJaxprTest, JitInsideATraceIsAPjitEquation) {
  JitFunction f = Jit(Sigmoid, {.name = "sigmoid"});
  StatusOr<Jaxpr> j = MakeJaxpr([&](Tensor x) { return f(x); })(1.0);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(PrintJaxpr(*j),
            testing::kJitSigmoidJaxpr);
}

TEST(JitTest, NoArgumentFunctionTracesItsCreationOps) {
  JitFunction f = Jit([] { return Sum(Arange(0, 5)); }, {.name = "five"});
  EXPECT_EQ(*f().value(), Array::Scalar<int32_t>(10));
  StatusOr<Jaxpr> j = MakeJaxpr([] { return Arange(0, 5); })();
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(PrintJaxpr(*j),
            "{ lambda ; . let\n    a:i32[5] = iota[dimension=0 dtype=int32 shape=(5,)] \n"
            "  in (a,) }");
}

TEST(JitTest, SigmoidValuesByHand) {
  JitFunction f = Jit(Sigmoid, {.name = "sigmoid"});
  Tensor y = f(Ones({10}));
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  StatusOr<Array> v = y.value();
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->dims(), std::vector<int64_t>({10}));
  // 1 / (1 + e^-1) = 0.7310585786.
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(v->GetDouble(i), 0.7310585786, 1e-6);
  Tensor again = f(Full({10}, 0.0));  // same signature, cached: sigmoid(0) = 0.5
  EXPECT_NEAR(again.value()->GetDouble(3), 0.5, 1e-7);
}

// Seed 002's jit(sigmoid).lower(ones(10)): the same instructions (our ids differ).
TEST(JitTest, LowerPrintsSeed002sHlo) {
  JitFunction f = Jit(Sigmoid, {.name = "sigmoid"});
  StatusOr<Lowered> l = f.Lower(Ones({10}));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  std::string text = l->AsText();
  EXPECT_THAT(text, HasSubstr("HloModule jit_sigmoid"));
  EXPECT_THAT(text, HasSubstr("ENTRY main"));
  EXPECT_THAT(text, HasSubstr("f32[10]{0} parameter(0)"));
  EXPECT_THAT(text, HasSubstr("f32[10]{0} negate(Arg_0)"));
  EXPECT_THAT(text, HasSubstr("exponential("));
  EXPECT_THAT(text, HasSubstr("f32[] constant(1)"));
  EXPECT_THAT(text, HasSubstr("broadcast("));
  EXPECT_THAT(text, HasSubstr("ROOT"));
  EXPECT_THAT(text, HasSubstr("divide("));
}

TEST(EagerTest, OpsRunAtOnceWithNumpyBroadcasting) {
  Tensor a = Tensor::FromArray(Array::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  Tensor b = Tensor::FromArray(Array::FromVector<float>({3}, {10, 20, 30}));
  StatusOr<Array> s = (a + b).value();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s, Array::FromVector<float>({2, 3}, {11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(*Sum(a, {1}).value(), Array::FromVector<float>({2}, {6, 15}));
  EXPECT_EQ(*Mean(a).value(), Array::Scalar<float>(3.5f));
  EXPECT_EQ(*Max(a, {0}).value(), Array::FromVector<float>({3}, {4, 5, 6}));
  EXPECT_EQ(*Argmax(a, 1).value(), Array::FromVector<int32_t>({2}, {2, 2}));
  EXPECT_EQ(*Transpose(a).value(), Array::FromVector<float>({3, 2}, {1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(*Reshape(a, {3, -1}).value(), Array::FromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(*Slice(a, {0, 1}, {2, 3}).value(), Array::FromVector<float>({2, 2}, {2, 3, 5, 6}));
  // [[1,2,3],[4,5,6]] @ [[1],[0],[2]] = [[7],[16]].
  Tensor c = Tensor::FromArray(Array::FromVector<float>({3, 1}, {1, 0, 2}));
  EXPECT_EQ(*Matmul(a, c).value(), Array::FromVector<float>({2, 1}, {7, 16}));
  EXPECT_EQ(*Einsum("ij,jk->ki", a, c).value(), Array::FromVector<float>({1, 2}, {7, 16}));
  EXPECT_EQ(*Where(Gt(a, 3.0 * Ones({2, 3})), a, Zeros({2, 3})).value(),
            Array::FromVector<float>({2, 3}, {0, 0, 0, 4, 5, 6}));
  EXPECT_EQ(*Arange(2, 5).value(), Array::FromVector<int32_t>({3}, {2, 3, 4}));
  EXPECT_EQ(*Concatenate({b, b}, 0).value(), Array::FromVector<float>({6}, {10, 20, 30, 10, 20, 30}));
  EXPECT_EQ(*Astype(b, DType::kS32).value(), Array::FromVector<int32_t>({3}, {10, 20, 30}));
}

TEST(EagerTest, ConvAndPoolByHand) {
  // 1x3x3x1 image of ones, 3x3x1x1 kernel of ones, SAME: each output counts its neighbours.
  Tensor x = Ones({1, 3, 3, 1});
  Tensor k = Ones({3, 3, 1, 1});
  StatusOr<Array> y = Conv(x, k).value();
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(*y, Array::FromVector<float>({1, 3, 3, 1}, {4, 6, 4, 6, 9, 6, 4, 6, 4}));
  Tensor img = Tensor::FromArray(Array::FromVector<float>({1, 2, 2, 1}, {1, 2, 3, 6}));
  EXPECT_EQ(*AvgPool(img, {2, 2}, {2, 2}).value(), Array::FromVector<float>({1, 1, 1, 1}, {3}));
  EXPECT_EQ(*MaxPool(img, {2, 2}, {2, 2}).value(), Array::FromVector<float>({1, 1, 1, 1}, {6}));
}

TEST(ErrorTest, ShapeMismatchBecomesAnErrorTensorNamingTheShapes) {
  Tensor a = Ones({2, 3});
  Tensor b = Ones({4});
  Tensor c = Exp(a + b);  // the error flows through
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("add: shapes f32[2,3] and f32[4] do not broadcast"));
  EXPECT_FALSE(c.value().ok());
  JitFunction f = Jit([](Tensor x) { return x + Ones({4}); });
  StatusOr<std::vector<Tensor>> r = f.Call({Ones({2, 3})});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("do not broadcast"));
}

TEST(ErrorTest, LeakedTracerIsReportedNotAborted) {
  Tensor leaked;
  StatusOr<Jaxpr> j = MakeJaxpr([&](Tensor x) {
    leaked = Exp(x);
    return x;
  }, "leaky")(1.0);
  ASSERT_TRUE(j.ok());
  Tensor y = leaked + 1.0;
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("MakeJaxpr(leaky)"));
  EXPECT_THAT(y.status().message(), HasSubstr("leaked"));
}

// Seed 002: x = arange(32).reshape(8, 4); pmap(jnp.sum, in_axes=0)(x) gives row sums
// 6 + 16 i, one per device; in_axes=1 over x.T gives the same.
TEST(PmapTest, SumOverDevicesAsSeed002) {
  Tensor x = Reshape(Astype(Arange(0, 32), DType::kF32), {8, 4});
  auto sum = [](const std::vector<Tensor>& a) { return std::vector<Tensor>{Sum(a[0])}; };
  StatusOr<Tensor> r0 = Pmap(sum, x, 0, "sum");
  ASSERT_TRUE(r0.ok()) << r0.status().ToString();
  std::vector<float> want;
  for (int i = 0; i < 8; ++i) want.push_back(6.0f + 16.0f * i);
  EXPECT_EQ(*r0->value(), Array::FromVector<float>({8}, want));
  StatusOr<std::vector<Array>> shards = r0->AddressableShards();
  ASSERT_TRUE(shards.ok());
  ASSERT_EQ(shards->size(), 8u);
  EXPECT_EQ((*shards)[3], Array::Scalar<float>(54));
  StatusOr<Tensor> r1 = Pmap(sum, Transpose(x), 1, "sum");
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_EQ(*r1->value(), Array::FromVector<float>({8}, want));
  StatusOr<Tensor> bad = Pmap(sum, Ones({16, 2}), 0, "sum");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("has size 16 but there are 8 devices"));
}

// pmap(lambda x, w: (x @ w, sum(x)), in_axes=(0, None)) over 4 devices: x[i] = rows i of
// arange(8).reshape(4, 2), w = [[1], [10]] shared: x[i] @ w = 2i + 10 (2i + 1), sum = 4i + 1.
TEST(PmapTest, BroadcastArgumentAndTwoResults) {
  Tensor x = Reshape(Astype(Arange(0, 8), DType::kF32), {4, 2});
  Tensor w = Tensor::FromArray(Array::FromVector<float>({2, 1}, {1, 10}));
  auto fn = [](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{Matmul(Reshape(a[0], {1, 2}), a[1]), Sum(a[0])};
  };
  StatusOr<std::vector<Tensor>> r = PmapCall(fn, {x, w}, {0, std::nullopt}, "f");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(*(*r)[0].value(), Array::FromVector<float>({4, 1, 1}, {10, 32, 54, 76}));
  EXPECT_EQ(*(*r)[1].value(), Array::FromVector<float>({4}, {1, 5, 9, 13}));
  EXPECT_EQ((*(*r)[1].AddressableShards())[2], Array::Scalar<float>(9));
  StatusOr<std::vector<Tensor>> bad = PmapCall(fn, {x, Ones({3, 2})}, {0, 0}, "f");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("mapped axes have sizes 4 and 3"));
}

NamedSharding Named(const std::string& spec) {
  StatusOr<Mesh> mesh = Mesh::Create({"a", "b"}, {4, 2});
  StatusOr<NamedSharding> s = MakeSharding(*mesh, spec);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return *s;
}

// Seed 000's case 1 eagerly: x f32[4,16] P(None, 'a') @ y = x.T P('a', None) = 16 (i+1)(j+1).
TEST(ShardedTest, EagerMatmulOnShardedTensors) {
  Tensor x = BroadcastTo(Reshape(Astype(Arange(1, 5), DType::kF32), {4, 1}), {4, 16});
  Tensor xs = DevicePut(x, Named("P(None, 'a')"));
  Tensor ys = DevicePut(Transpose(x), Named("P('a', None)"));
  ASSERT_TRUE(xs.ok()) << xs.status().ToString();
  ASSERT_NE(xs.sharding(), nullptr);
  StatusOr<std::vector<Array>> pieces = xs.AddressableShards();
  ASSERT_TRUE(pieces.ok());
  ASSERT_EQ(pieces->size(), 8u);
  EXPECT_EQ((*pieces)[2].dims(), std::vector<int64_t>({4, 4}));  // x[:, 4:8] on device 2
  Tensor z = Matmul(xs, ys);
  StatusOr<Array> zv = z.value();
  ASSERT_TRUE(zv.ok()) << zv.status().ToString();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(zv->GetDouble(i * 4 + j), 16.0 * (i + 1) * (j + 1));
  JitFunction mm = Jit([](Tensor a, Tensor b) { return Matmul(a, b); }, {.name = "matmul"});
  StatusOr<Lowered> l = mm.Lower(xs, ys);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_THAT(l->AsText(), HasSubstr("num_partitions=8"));
  EXPECT_THAT(l->AsText(), HasSubstr("last_tile_dim_replicate"));
  EXPECT_THAT(l->Compile().AsText(), HasSubstr("all-reduce("));
}

TEST(ShardedTest, ShardingConstraintTracesAndLowersToTheShardingCustomCall) {
  NamedSharding s = Named("P('a', None)");
  auto f = [&](Tensor x) { return WithShardingConstraint(Exp(x), s) * 2.0; };
  StatusOr<Jaxpr> j = MakeJaxpr(f)(Ones({8, 2}));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_THAT(PrintJaxpr(*j), HasSubstr("sharding_constraint[\n      sharding=NamedSharding("
                                        "mesh=Mesh('a': 4, 'b': 2), spec=P('a', None))\n    ] b"));
  JitFunction jf = Jit(f, {.name = "f"});
  StatusOr<Lowered> l = jf.Lower(Ones({8, 2}));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_THAT(l->AsText(), HasSubstr("custom_call_target=\"Sharding\", sharding={devices=[4,1,2]<=[8] "
                                     "last_tile_dim_replicate}"));
  // e^0 * 2 on every element.
  EXPECT_EQ(*jf(Zeros({8, 2})).value(), Array::Full(DType::kF32, {8, 2}, 2));
}

TEST(ShardedTest, ShardingErrorsNameTheSpecAndShape) {
  Tensor bad = DevicePut(Ones({4}), Named("P('a', 'b')"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("f32[4]"));
  StatusOr<Mesh> other = Mesh::Create({"x"}, {2});
  Tensor a = DevicePut(Ones({4}), Named("P('a')"));
  Tensor b = DevicePut(Ones({4}), *MakeSharding(*other, "P('x')"));
  Tensor c = a + b;
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("two meshes"));
}

TEST(EagerTest, SlicingPaddingAndDims) {
  Tensor v = Astype(Arange(0, 6), DType::kF32);
  EXPECT_EQ(*DynamicSlice(v, {Tensor::Scalar(2, DType::kS32)}, {3}).value(),
            Array::FromVector<float>({3}, {2, 3, 4}));
  EXPECT_EQ(*DynamicUpdateSlice(v, Ones({2}), {Tensor::Scalar(4, DType::kS32)}).value(),
            Array::FromVector<float>({6}, {0, 1, 2, 3, 1, 1}));
  EXPECT_EQ(*Pad(Ones({2}), 0.0, {{1, 2, 1}}).value(),
            Array::FromVector<float>({6}, {0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(ExpandDims(v, 0).dims(), std::vector<int64_t>({1, 6}));
  EXPECT_EQ(Squeeze(Reshape(v, {1, 6, 1}), {0, -1}).dims(), std::vector<int64_t>({6}));
  EXPECT_EQ(*Min(v).value(), Array::Scalar<float>(0));
  EXPECT_NEAR(Logistic(Tensor::Scalar(0)).value()->GetDouble(0), 0.5, 1e-7);
}

TEST(ShardedTest, NestedJitKeepsItsShardingsAsConstraints) {
  NamedSharding s = Named("P('a')");
  JitFunction inner = Jit([](Tensor x) { return x * 2.0; },
                          {.out_shardings = {s}, .name = "double"});
  JitFunction outer = Jit([&](Tensor x) { return inner(x) + 1.0; }, {.name = "outer"});
  EXPECT_EQ(*inner(Ones({8})).value(), Array::Full(DType::kF32, {8}, 2));  // top level first
  StatusOr<Jaxpr> j = MakeJaxpr([&](Tensor x) { return inner(x); })(Ones({8}));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_THAT(PrintJaxpr(*j), HasSubstr("sharding_constraint"));
  StatusOr<Lowered> l = outer.Lower(Ones({8}));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_THAT(l->AsText(), HasSubstr("custom_call_target=\"Sharding\", sharding={devices=[4,2]<=[8] "
                                     "last_tile_dim_replicate}"));
  EXPECT_EQ(*outer(Ones({8})).value(), Array::Full(DType::kF32, {8}, 3));
}

TEST(MakeJaxprTest, IntLiteralsAreWeakLikeJax) {
  // JAX: make_jaxpr(lambda x: 1 / (1 + jnp.exp(-x)))(1.0) with Python ints prints 1.0 literals;
  // on an int32 array `x * 2` stays int32 and `x / 2` is true division in f32.
  StatusOr<Jaxpr> j = MakeJaxpr([](Tensor x) { return 1 / (1 + Exp(-x)); })(1.0);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_THAT(PrintJaxpr(*j), HasSubstr("d:f32[] = add c 1.0\n    e:f32[] = div 1.0 d"));
  Tensor i = Arange(0, 4);
  EXPECT_EQ((i * 2).dtype(), DType::kS32);
  EXPECT_EQ(*(i * 2).value(), Array::FromVector<int32_t>({4}, {0, 2, 4, 6}));
  EXPECT_EQ(*(i / 2).value(), Array::FromVector<float>({4}, {0, 0.5, 1, 1.5}));
  EXPECT_EQ((i * 2.0).dtype(), DType::kF32);
}

TEST(ErrorTest, MatmulAndJitShardingMessagesNameTheOperandsAndTheFix) {
  Tensor bad = Matmul(Ones({2, 3}), Ones({4, 5}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("Matmul: f32[2,3] @ f32[4,5]: the contracted dims 3 and 4 differ"));
  StatusOr<Mesh> mesh = Mesh::Create({"a", "b"}, {4, 2});
  JitFunction f = Jit([](Tensor x) { return x; },
                      {.in_shardings = {*MakeSharding(*mesh, "P('a', 'b')")}, .name = "ident"});
  Tensor r = f(Ones({4}));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("ident: input 0 f32[4]"));
  EXPECT_THAT(r.status().message(), HasSubstr("drop entries or reshape the array"));
}

// Regression: constvars were keyed by the concrete Tensor's address only, so a temporary freed
// during the trace and another allocated at the same address reused the first one's value.
TEST(MakeJaxprTest, TemporaryConstantsEachKeepTheirValue) {
  auto f = [](Tensor x) {
    for (int i = 1; i <= 3; ++i) {
      x = x + Tensor::FromArray(Array::Full(DType::kF32, {4}, i));  // freed after each add
    }
    return x;
  };
  StatusOr<Jaxpr> j = MakeJaxpr(f)(Zeros({4}));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->constvars.size(), 3u);
  JitFunction jf = Jit(f);
  EXPECT_EQ(*jf(Zeros({4})).value(), Array::Full(DType::kF32, {4}, 6));  // 1 + 2 + 3
}

// Results must own their data: arguments are passed as views, and a result that is (a reshape
// of) an argument must survive the argument.
TEST(JitTest, ResultsOutliveTheirArguments) {
  JitFunction identity = Jit([](Tensor x) { return x; });
  JitFunction reshape = Jit([](Tensor x) { return Reshape(x, {10, 100}); });
  Tensor a, b, c;
  {
    Tensor x = Tensor::FromArray(Array::Iota(DType::kF32, {1000}));
    a = identity(x);
    b = reshape(x);
    c = Reshape(x, {100, 10});  // eager
  }
  std::vector<Tensor> churn;
  for (int i = 0; i < 8; ++i) churn.push_back(Tensor::FromArray(Array::Full(DType::kF32, {1000}, -1)));
  EXPECT_EQ(*a.value(), Array::Iota(DType::kF32, {1000}));
  EXPECT_EQ(*b.value(), Array::Iota(DType::kF32, {1000}).Reshape({10, 100}));
  EXPECT_EQ(*c.value(), Array::Iota(DType::kF32, {1000}).Reshape({100, 10}));
  EXPECT_TRUE(a.impl()->value->owns_data());
  EXPECT_TRUE(b.impl()->value->owns_data());
  EXPECT_TRUE(c.impl()->value->owns_data());
}

TEST(ShardedTest, ShardsOutliveTheirArguments) {
  NamedSharding rep = Named("P()");
  NamedSharding rows = Named("P('a')");
  JitFunction identity = Jit([](Tensor x) { return x; },
                             {.in_shardings = {rep}, .out_shardings = {rep}, .name = "id"});
  JitFunction split = Jit([](Tensor x) { return x; },
                          {.in_shardings = {rep}, .out_shardings = {rows}, .name = "split"});
  Tensor a, b;
  {
    Tensor x = Tensor::FromArray(Array::Iota(DType::kF32, {8, 4}));
    a = identity(x);
    b = split(x);
  }
  std::vector<Tensor> churn;
  for (int i = 0; i < 8; ++i) churn.push_back(Tensor::FromArray(Array::Full(DType::kF32, {8, 4}, -1)));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  StatusOr<std::vector<Array>> sa = a.AddressableShards();
  StatusOr<std::vector<Array>> sb = b.AddressableShards();
  ASSERT_TRUE(sa.ok() && sb.ok());
  ASSERT_EQ(sa->size(), 8u);
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ((*sa)[d], Array::Iota(DType::kF32, {8, 4})) << d;
    EXPECT_EQ((*sb)[d], Array::Iota(DType::kF32, {8, 4}).Slice({2 * (d / 2), 0}, {2, 4})) << d;
    EXPECT_TRUE(a.impl()->shards[d].owns_data()) << d;
  }
}

// Sharded Tensors go to the devices as the buffers they hold; with 10 elements over 4 devices
// the pieces are padded (3, 3, 3, 1 + 2 padding), and reductions must not see the padding.
TEST(ShardedTest, UnevenShardsReusedAcrossCalls) {
  Tensor x = DevicePut(Astype(Arange(0, 10), DType::kF32), Named("P('a')"));
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(*Sum(x).value(), Array::Scalar<float>(45));
  EXPECT_EQ(Max(-x).value()->GetDouble(0), 0.0);  // -0.0, the negated 0
  Tensor y = x * 2.0;  // stays sharded
  ASSERT_NE(y.sharding(), nullptr);
  EXPECT_EQ(*Sum(y).value(), Array::Scalar<float>(90));
  EXPECT_EQ(*Min(y + 1.0).value(), Array::Scalar<float>(1));
  // 1..10: a min that saw the padding would be 0.
  Tensor w = DevicePut(Astype(Arange(1, 11), DType::kF32), Named("P('a')"));
  EXPECT_EQ(*Min(w).value(), Array::Scalar<float>(1));
  EXPECT_EQ(*Min(w * 2.0).value(), Array::Scalar<float>(2));
  EXPECT_EQ(*Min(Exp(w - 1.0)).value(), Array::Scalar<float>(1));
  JitFunction f = Jit([](Tensor a, Tensor b) { return Sum(a * b); }, {.name = "dot"});
  Tensor z = DevicePut(Ones({10}), Named("P('b')"));
  EXPECT_EQ(*f(x, z).value(), Array::Scalar<float>(45));
  EXPECT_EQ(*f(x, x).value(), Array::Scalar<float>(285));  // sum of squares 0..9
}

TEST(JitTest, OutputsThatAreInputsLiteralsOrRepeated) {
  JitFunction f = Jit([](Tensor x) {
    Tensor y = x + 1.0;
    return std::vector<Tensor>{x, y, y, Tensor::Scalar(7)};
  }, {.name = "outs"});
  StatusOr<std::vector<Tensor>> r = f.Call({Ones({2})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ(*(*r)[0].value(), Array::Full(DType::kF32, {2}, 1));
  EXPECT_EQ(*(*r)[1].value(), Array::Full(DType::kF32, {2}, 2));
  EXPECT_EQ(*(*r)[2].value(), Array::Full(DType::kF32, {2}, 2));
  EXPECT_EQ(*(*r)[3].value(), Array::Scalar<float>(7));
  StatusOr<Jaxpr> j = MakeJaxpr([](Tensor x) {
    return std::vector<Tensor>{x, Tensor::Scalar(7)};
  })(Ones({2}));
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(PrintJaxpr(*j), "{ lambda ; a:f32[2]. let in (a, 7.0) }");
  Tensor one = f(Ones({2}));  // four results through operator()
  ASSERT_FALSE(one.ok());
  EXPECT_THAT(one.status().message(), HasSubstr("returns 4 results; use Call()"));
}

}  // namespace
}  // namespace xs::fe
