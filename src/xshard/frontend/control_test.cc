// Cond / Switch / WhileLoop / ForiLoop / Scan (control.h) against JAX 0.10.2: the jaxprs JAX
// traces, values and gradients JAX printed for the same programs, eager vs Jit, Jit with
// shardings over several devices, closures over tracers, and the errors.
#include "xshard/frontend/control.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "xshard/frontend/grad.h"

namespace xs::fe {
namespace {

using ::testing::HasSubstr;

Array F32(std::vector<int64_t> dims, std::vector<double> v) {
  Array a(DType::kF32, dims);
  for (size_t i = 0; i < v.size(); ++i) a.SetDouble(static_cast<int64_t>(i), v[i]);
  return a;
}

// The JAX script's inputs: x = [[0.5, -1.2, 2.0], [1.5, 0.3, -0.7]], w the loss weights.
Tensor X() { return Tensor::FromArray(F32({2, 3}, {0.5, -1.2, 2.0, 1.5, 0.3, -0.7})); }
Tensor W() { return Tensor::FromArray(F32({2, 3}, {1.0, -2.0, 0.5, 0.25, 3.0, -1.5})); }

void ExpectValues(const Tensor& t, const std::vector<double>& want, double tol, const std::string& what) {
  StatusOr<Array> v = t.value();
  ASSERT_TRUE(v.ok()) << what << ": " << v.status().ToString();
  ASSERT_EQ(v->num_elements(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(v->GetDouble(static_cast<int64_t>(i)), want[i], tol * (1 + std::fabs(want[i])))
        << what << " element " << i;
  }
}

std::string JaxprText(const StatusOr<Jaxpr>& j) { return j.ok() ? PrintJaxpr(*j) : j.status().ToString(); }

// JAX prints one-line sub-jaxprs where they fit; this printer always breaks them (as for the
// top-level jaxpr). JAX: lax.cond(jnp.sum(x) > 0, lambda v: jnp.sin(v) * 2.0, lambda v: jnp.cos(v), x)
Tensor CondProgram(Tensor x) {
  return Cond(
      Sum(x) > 0.0, [](Tensor v) { return Sin(v) * 2.0; }, [](Tensor v) { return Cos(v); }, {x})[0];
}

TEST(ControlTest, CondJaxprMatchesJax) {
  StatusOr<Jaxpr> j = MakeJaxpr([](Tensor x) {
    return Cond(
        Sum(x) > 0.0, [](Tensor v) { return Sin(v); }, [](Tensor v) { return Cos(v); }, {x})[0];
  })(Ones({2, 3}));
  EXPECT_EQ(JaxprText(j),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:f32[] = reduce_sum[axes=(0, 1)] a\n"
            "    c:bool[] = gt b 0.0\n"
            "    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c\n"
            "    e:f32[2,3] = cond[\n"
            "      branches=(\n"
            "        { lambda ; f:f32[2,3]. let\n"
            "            g:f32[2,3] = cos f\n"
            "          in (g,) }\n"
            "        { lambda ; h:f32[2,3]. let\n"
            "            i:f32[2,3] = sin h\n"
            "          in (i,) }\n"
            "      )\n"
            "    ] d a\n"
            "  in (e,) }");
}

TEST(ControlTest, CondValuesAndGradientsMatchJax) {
  auto loss = [](Tensor x) { return Sum(CondProgram(x) * W()); };
  ExpectValues(CondProgram(X()),
               {0.9588510990142822, -1.864078164100647, 1.8185948133468628, 1.9949899911880493, 0.5910404324531555,
                -1.2884353399276733},
               2e-6, "cond, true branch");
  ExpectValues(Grad(loss)(X()),
               {1.7551651000976562, -1.4494308233261108, -0.416146844625473, 0.035368598997592926, 5.732018947601318,
                -2.2945265769958496},
               2e-5, "grad, true branch");
  ExpectValues(CondProgram(-X()),
               {0.8775825500488281, 0.3623577058315277, -0.416146844625473, 0.07073719799518585, 0.9553365111351013,
                0.7648422122001648},
               2e-6, "cond, false branch");
  ExpectValues(Grad(loss)(-X()),
               {0.4794255495071411, 1.864078164100647, 0.4546487033367157, 0.24937374889850616, 0.8865606784820557,
                0.9663264751434326},
               2e-5, "grad, false branch");
  // The same under Jit (one program for both branches).
  JitFunction jitted = Jit(loss, {.name = "cond_loss"});
  ExpectValues(Jit(Grad(loss))(-X()),
               {0.4794255495071411, 1.864078164100647, 0.4546487033367157, 0.24937374889850616, 0.8865606784820557,
                0.9663264751434326},
               2e-5, "jit(grad)");
  ExpectValues(jitted(X()),
               {0.9588510990142822 * 1.0 - 1.864078164100647 * -2.0 + 1.8185948133468628 * 0.5 +
                1.9949899911880493 * 0.25 + 0.5910404324531555 * 3.0 - 1.2884353399276733 * -1.5},
               1e-5, "jit value");
}

// JAX's make_jaxpr(grad(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x)))(1.0): a forward cond
// returning each branch's residual in one shared slot, and a backward cond on the same index.
// (JAX's forward branches also hold a dead `empty2` equation each, left out here.)
TEST(ControlTest, GradOfCondJaxprMatchesJax) {
  StatusOr<Jaxpr> j = MakeJaxpr(Grad([](Tensor x) {
    return Cond(
        x > 0.0, [](Tensor v) { return Sin(v); }, [](Tensor v) { return Cos(v); }, {x})[0];
  }))(1.0);
  EXPECT_EQ(JaxprText(j),
            "{ lambda ; a:f32[]. let\n"
            "    b:bool[] = gt a 0.0\n"
            "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b\n"
            "    _:f32[] d:f32[] = cond[\n"
            "      branches=(\n"
            "        { lambda ; e:f32[]. let\n"
            "            f:f32[] = cos e\n"
            "            g:f32[] = sin e\n"
            "          in (f, g) }\n"
            "        { lambda ; h:f32[]. let\n"
            "            i:f32[] = sin h\n"
            "            j:f32[] = cos h\n"
            "          in (i, j) }\n"
            "      )\n"
            "    ] c a\n"
            "    k:f32[] = cond[\n"
            "      branches=(\n"
            "        { lambda ; l:f32[] m:f32[]. let\n"
            "            n:f32[] = neg m\n"
            "            o:f32[] = mul n l\n"
            "          in (o,) }\n"
            "        { lambda ; p:f32[] q:f32[]. let\n"
            "            r:f32[] = mul q p\n"
            "          in (r,) }\n"
            "      )\n"
            "    ] c d 1.0\n"
            "  in (k,) }");
}

TEST(ControlTest, SwitchClampsItsIndex) {
  std::vector<TensorFn> branches = {AsTensorFn([](Tensor v) { return v + 1.0; }),
                                    AsTensorFn([](Tensor v) { return v * 10.0; }),
                                    AsTensorFn([](Tensor v) { return -v; })};
  Tensor v = Tensor::FromArray(F32({2}, {1, 2}));
  ExpectValues(Switch(Tensor::Scalar(1, DType::kS32), branches, {v})[0], {10, 20}, 0, "1");
  ExpectValues(Switch(Tensor::Scalar(-4, DType::kS32), branches, {v})[0], {2, 3}, 0, "-4 -> 0");
  ExpectValues(Switch(Tensor::Scalar(9, DType::kS32), branches, {v})[0], {-1, -2}, 0, "9 -> 2");
  // Differentiable through the chosen branch.
  Tensor g = Grad([&](Tensor v) { return Sum(Switch(Tensor::Scalar(1, DType::kS32), branches, {v})[0]); })(v);
  ExpectValues(g, {10, 10}, 0, "d switch");
}

TEST(ControlTest, WhileLoopJaxprAndValueMatchJax) {
  auto loop = [](Tensor x) {
    return WhileLoop([](Tensor i, Tensor) { return i < 5; },
                     [](Tensor i, Tensor c) {
                       return std::vector<Tensor>{i + 1, c * 1.5 + 1.0};
                     },
                     {Tensor::Scalar(0, DType::kS32), x})[1];
  };
  ExpectValues(loop(X()), {16.984375, 4.074999809265137, 28.375, 24.578125, 15.465625762939453, 7.871875286102295},
               1e-6, "eager");
  ExpectValues(Jit(loop)(X()), {16.984375, 4.074999809265137, 28.375, 24.578125, 15.465625762939453, 7.871875286102295},
               1e-6, "jit");
  StatusOr<Jaxpr> j = MakeJaxpr([](Tensor x) {
    return WhileLoop([](Tensor i, Tensor) { return i < 3; },
                     [](Tensor i, Tensor c) {
                       return std::vector<Tensor>{i + 1, c * 2.0};
                     },
                     {Tensor::Scalar(0, DType::kS32), x});
  })(Ones({2, 3}));
  EXPECT_EQ(JaxprText(j),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:i32[] c:f32[2,3] = while[\n"
            "      body_jaxpr={ lambda ; d:i32[] e:f32[2,3]. let\n"
            "          f:i32[] = add d 1\n"
            "          g:f32[2,3] = mul e 2.0\n"
            "        in (f, g) }\n"
            "      body_nconsts=0\n"
            "      cond_jaxpr={ lambda ; h:i32[] i:f32[2,3]. let\n"
            "          j:bool[] = lt h 3\n"
            "        in (j,) }\n"
            "      cond_nconsts=0\n"
            "    ] 0 a\n"
            "  in (b, c) }");
}

TEST(ControlTest, WhileLoopIsNotReverseDifferentiable) {
  auto loss = [](Tensor x) {
    return Sum(WhileLoop([](Tensor i, Tensor) { return i < 3; },
                         [](Tensor i, Tensor c) {
                           return std::vector<Tensor>{i + 1, Sin(c)};
                         },
                         {Tensor::Scalar(0, DType::kS32), x})[1]);
  };
  Tensor g = Grad(loss)(X());
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().ToString(), HasSubstr("not reverse-differentiable"));
  EXPECT_THAT(g.status().ToString(), HasSubstr("ForiLoop"));
}

// JAX: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * (i + 1.0), x)
Tensor ForiProgram(Tensor x) {
  return ForiLoop(0, 3, [](Tensor i, Tensor c) { return Sin(c) * (i + 1.0); }, {x})[0];
}

TEST(ControlTest, ForiLoopIsAScanAndDifferentiableAsJax) {
  ExpectValues(ForiProgram(X()),
               {2.3914120197296143, -2.9981753826141357, 2.9999189376831055, 2.9820544719696045, 1.6502777338027954,
                -2.797361373901367},
               2e-6, "fori");
  ExpectValues(Grad([](Tensor x) { return Sum(ForiProgram(x) * W()); })(X()),
               {2.820862054824829, 0.09040170907974243, 0.005635520908981562, -0.006285625509917736, 13.737974166870117,
                -1.9885004758834839},
               2e-5, "grad fori");
  StatusOr<Jaxpr> j = MakeJaxpr(
      [](Tensor x) { return ForiLoop(0, 3, [](Tensor, Tensor c) { return c * 2.0; }, {x})[0]; })(Ones({2, 3}));
  EXPECT_EQ(JaxprText(j),
            "{ lambda ; a:f32[2,3]. let\n"
            "    _:i32[] b:f32[2,3] = scan[\n"
            "      jaxpr={ lambda ; c:i32[] d:f32[2,3]. let\n"
            "          e:i32[] = add c 1\n"
            "          f:f32[2,3] = mul d 2.0\n"
            "        in (e, f) }\n"
            "      length=3\n"
            "      num_carry=2\n"
            "      num_consts=0\n"
            "      reverse=False\n"
            "      unroll=1\n"
            "    ] 0 a\n"
            "  in (b,) }");
}

TEST(ControlTest, ScanJaxprAndValuesMatchJax) {
  auto step = [](Tensor c, Tensor x) { return std::vector<Tensor>{c + x, c * x}; };
  ScanResult s = Scan(step, {Zeros({3})}, {X()});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ExpectValues(s.carry[0], {2.0, -0.9000000357627869, 1.2999999523162842}, 1e-6, "carry");
  ExpectValues(s.ys[0], {0.0, -0.0, 0.0, 0.75, -0.36000001430511475, -1.399999976158142}, 1e-6, "ys");
  StatusOr<Jaxpr> j = MakeJaxpr([&](Tensor x) {
    ScanResult r = Scan(step, {Zeros({3})}, {x});
    return std::vector<Tensor>{r.carry[0], r.ys[0]};
  })(X());
  EXPECT_EQ(JaxprText(j),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] 0.0\n"
            "    c:f32[3] d:f32[2,3] = scan[\n"
            "      jaxpr={ lambda ; e:f32[3] f:f32[3]. let\n"
            "          g:f32[3] = add e f\n"
            "          h:f32[3] = mul e f\n"
            "        in (g, h) }\n"
            "      length=2\n"
            "      num_carry=1\n"
            "      num_consts=0\n"
            "      reverse=False\n"
            "      unroll=1\n"
            "    ] b a\n"
            "  in (c, d) }");
}

// JAX: c, ys = lax.scan(lambda c, xi: (jnp.tanh(c * v + xi), c * xi), init, xs, reverse=...);
// loss = sum(c) + sum(ys * ys), gradients with respect to v (closed over) and xs.
Tensor RnnLoss(Tensor v, Tensor xs, bool reverse) {
  ScanResult r = Scan(
      [v](Tensor c, Tensor x) {
        return std::vector<Tensor>{Tanh(c * v + x), c * x};
      },
      {reverse ? Ones({3}) : Zeros({3})}, {xs}, -1, reverse);
  return Sum(r.carry[0]) + Sum(r.ys[0] * r.ys[0]);
}

TEST(ControlTest, ScanGradientsMatchJax) {
  Tensor v = Tensor::FromArray(F32({3}, {0.3, -0.2, 0.1}));
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "reverse" : "forward");
    auto loss = [reverse](Tensor v, Tensor xs) { return RnnLoss(v, xs, reverse); };
    ExpectValues(loss(v, X()),
                 reverse ? std::vector<double>{4.997519493103027} : std::vector<double>{1.821653127670288}, 2e-6,
                 "loss");
    StatusOr<std::vector<Tensor>> g = Grad(loss, {0, 1}).Call({v, X()});
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    ExpectValues((*g)[0],
                 reverse ? std::vector<double>{0.6073397397994995, 0.255179226398468, -3.093719005584717}
                         : std::vector<double>{0.06476527452468872, -0.6755040884017944, 0.6833289265632629},
                 2e-5, "d/dv");
    ExpectValues((*g)[1],
                 reverse ? std::vector<double>{1.467389702796936, 0.2711728513240814, 1.232030987739563,
                                               3.066762685775757, 0.8257758617401123, -4.451645374298096}
                         : std::vector<double>{1.6685054302215576, -0.09520174562931061, 0.0717550665140152,
                                               0.7808058261871338, 1.2272804975509644, -0.5922616720199585},
                 2e-5, "d/dxs");
    // Jit(Grad) lowers both scans into one program.
    StatusOr<std::vector<Tensor>> jg = Jit(Grad(loss, {0, 1})).Call({v, X()});
    ASSERT_TRUE(jg.ok()) << jg.status().ToString();
    ExpectValues((*jg)[1],
                 reverse ? std::vector<double>{1.467389702796936, 0.2711728513240814, 1.232030987739563,
                                               3.066762685775757, 0.8257758617401123, -4.451645374298096}
                         : std::vector<double>{1.6685054302215576, -0.09520174562931061, 0.0717550665140152,
                                               0.7808058261871338, 1.2272804975509644, -0.5922616720199585},
                 2e-5, "jit d/dxs");
  }
}

// Finite differences in f64 through cond inside scan, and a carry that only becomes active
// through the body (c2 starts constant, picks up x).
TEST(ControlTest, NestedControlFlowGradientsMatchFiniteDifferences) {
  auto loss = [](Tensor xs, Tensor w) {
    ScanResult r = Scan(
        [w](Tensor c1, Tensor c2, Tensor x) {
          Tensor y = Cond(
              Sum(x) > 0.0, [&](Tensor a) { return Sin(a) * w; }, [](Tensor a) { return a * a; }, {x})[0];
          return std::vector<Tensor>{c1 * 0.9 + y, c2 + c1 * x, Exp(c2 * 0.1)};
        },
        {Zeros({2}, DType::kF64), Zeros({2}, DType::kF64)}, {xs});
    return Sum(r.carry[0] * r.carry[1]) + Sum(r.ys[0]);
  };
  Array xs(DType::kF64, {4, 2});
  const double v[] = {0.4, -0.3, -0.8, -0.2, 0.6, 0.9, -0.1, 0.5};
  for (int i = 0; i < 8; ++i) xs.SetDouble(i, v[i]);
  Tensor w = Tensor::FromArray(Array::Full(DType::kF64, {2}, 1.3));
  StatusOr<std::vector<Tensor>> g = Grad(loss, {0, 1}).Call({Tensor::FromArray(xs), w});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  StatusOr<Array> gx = (*g)[0].value(), gw = (*g)[1].value();
  ASSERT_TRUE(gx.ok() && gw.ok());
  JitFunction f = Jit(loss);
  const double h = 1e-6;
  for (int64_t i = 0; i < 8; ++i) {
    Array p = xs, m = xs;
    p.SetDouble(i, v[i] + h);
    m.SetDouble(i, v[i] - h);
    double fd =
        (f(Tensor::FromArray(p), w).value()->GetDouble(0) - f(Tensor::FromArray(m), w).value()->GetDouble(0)) / (2 * h);
    EXPECT_NEAR(gx->GetDouble(i), fd, 1e-6) << "d/dxs " << i;
  }
  Array wp = Array::Full(DType::kF64, {2}, 1.3), wm = wp;
  wp.SetDouble(1, 1.3 + h);
  wm.SetDouble(1, 1.3 - h);
  double fd = (f(Tensor::FromArray(xs), Tensor::FromArray(wp)).value()->GetDouble(0) -
               f(Tensor::FromArray(xs), Tensor::FromArray(wm)).value()->GetDouble(0)) /
              (2 * h);
  EXPECT_NEAR(gw->GetDouble(1), fd, 1e-6) << "d/dw";
}

// A jitted step with sharded inputs on 4 devices: a scan over time steps whose carry and xs are
// split along the feature dim, a cond on a sharded operand and a while loop; against the same
// function run on one device, and its gradient.
TEST(ControlTest, JitWithShardingsOnFourDevices) {
  StatusOr<Mesh> mesh = Mesh::Create({"a"}, {4});
  ASSERT_TRUE(mesh.ok());
  NamedSharding feat = *MakeSharding(*mesh, "P(None, 'a')");
  NamedSharding vec = *MakeSharding(*mesh, "P('a')");
  Array xa(DType::kF32, {5, 8});
  for (int64_t i = 0; i < 40; ++i) xa.SetDouble(i, std::cos(0.9 * i));
  Array va(DType::kF32, {8});
  for (int64_t i = 0; i < 8; ++i) va.SetDouble(i, 0.1 * (i - 4));
  auto program = [](Tensor xs, Tensor v) -> std::vector<Tensor> {
    ScanResult r = Scan(
        [v](Tensor c, Tensor x) {
          return std::vector<Tensor>{Tanh(c * v + x), c * x};
        },
        {Zeros({8})}, {xs});
    Tensor picked = Cond(
        Sum(r.carry[0]) > 0.0, [](Tensor a) { return a * 2.0; }, [](Tensor a) { return -a; }, {r.carry[0]})[0];
    Tensor doubled = WhileLoop([](Tensor i, Tensor) { return i < 3; },
                               [](Tensor i, Tensor c) {
                                 return std::vector<Tensor>{i + 1, c + c};
                               },
                               {Tensor::Scalar(0, DType::kS32), picked})[1];
    Tensor g = Grad([](Tensor v, Tensor xs) {
      ScanResult s = Scan(
          [v](Tensor c, Tensor x) {
            return std::vector<Tensor>{Tanh(c * v + x), c * x};
          },
          {Zeros({8})}, {xs});
      return Sum(s.carry[0]) + Sum(s.ys[0] * s.ys[0]);
    })(v, xs);
    return {r.ys[0], doubled, g};
  };
  JitFunction sharded = Jit(program, {.in_shardings = {feat, vec}, .name = "sharded_scan"});
  JitFunction single = Jit(program, {.name = "single_scan"});
  StatusOr<std::vector<Tensor>> got = sharded.Call({DevicePut(xa, feat), DevicePut(va, vec)});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  StatusOr<std::vector<Tensor>> want = single.Call({Tensor::FromArray(xa), Tensor::FromArray(va)});
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  for (size_t k = 0; k < got->size(); ++k) {
    StatusOr<Array> w = (*want)[k].value();
    ASSERT_TRUE(w.ok());
    std::vector<double> wv;
    for (int64_t i = 0; i < w->num_elements(); ++i) wv.push_back(w->GetDouble(i));
    ExpectValues((*got)[k], wv, 1e-5, "result " + std::to_string(k));
  }
  // ys[0] = c0 * x0 = 0; ys[1] = tanh(x0) * x1 (c1 = tanh(0 * v + x0)).
  StatusOr<Array> ys = (*got)[0].value();
  ASSERT_TRUE(ys.ok());
  for (int64_t f = 0; f < 8; ++f) {
    EXPECT_EQ(ys->GetDouble(f), 0.0);
    EXPECT_NEAR(ys->GetDouble(8 + f), std::tanh(xa.GetDouble(f)) * xa.GetDouble(8 + f), 1e-6);
  }
  // Eagerly on the sharded arrays: the scan equation runs partitioned and keeps a sharding.
  ScanResult eager = Scan(
      [](Tensor c, Tensor x) {
        return std::vector<Tensor>{c + x, c * x};
      },
      {DevicePut(Zeros({8}), vec)}, {DevicePut(xa, feat)});
  ASSERT_TRUE(eager.ok()) << eager.status().ToString();
  StatusOr<Array> total = eager.carry[0].value();
  ASSERT_TRUE(total.ok()) << total.status().ToString();
  for (int64_t f = 0; f < 8; ++f) {
    double sum = 0;
    for (int64_t t = 0; t < 5; ++t) sum += xa.GetDouble(t * 8 + f);
    EXPECT_NEAR(total->GetDouble(f), sum, 1e-5) << f;
  }
  EXPECT_NE(eager.carry[0].sharding(), nullptr);
  StatusOr<Lowered> lowered = sharded.Lower(DevicePut(xa, feat), DevicePut(va, vec));
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  EXPECT_THAT(lowered->AsText(), HasSubstr("while("));
  EXPECT_THAT(lowered->AsText(), HasSubstr("conditional("));
}

TEST(ControlTest, ClosuresOverTracersAndConstantsBecomeOperands) {
  Tensor table = Tensor::FromArray(F32({3}, {1, 2, 3}));  // a concrete array: a constvar
  auto f = [&](Tensor x, Tensor s) {
    return Cond(
        s > 0.0, [&](Tensor a) { return a * s + table; }, [&](Tensor a) { return a - table; }, {x})[0];
  };
  Tensor x = Tensor::FromArray(F32({3}, {1, 1, 1}));
  ExpectValues(f(x, Tensor::Scalar(2)), {3, 4, 5}, 0, "eager");
  ExpectValues(Jit(f)(x, Tensor::Scalar(2)), {3, 4, 5}, 0, "jit");
  ExpectValues(Jit(f)(x, Tensor::Scalar(-2)), {0, -1, -2}, 0, "jit, false branch");
  // d/ds of sum(x * s + table) = sum(x) = 3, through a captured tracer.
  ExpectValues(Grad([&](Tensor x, Tensor s) { return Sum(f(x, s)); }, {1})(x, Tensor::Scalar(2)), {3}, 0, "d/ds");
  StatusOr<Jaxpr> j = MakeJaxpr(f)(x, Tensor::Scalar(2));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  // Each branch's closure becomes leading operands of cond: the table (a constvar of the outer
  // jaxpr, once per branch that uses it) and the captured tracer s (d), then the operand x (c).
  EXPECT_THAT(PrintJaxpr(*j), HasSubstr("{ lambda a:f32[3] b:f32[3]; c:f32[3] d:f32[]. let\n"));
  EXPECT_THAT(PrintJaxpr(*j), HasSubstr("] f a b d c\n"));
}

TEST(ControlTest, MistakesAreClearErrors) {
  Tensor x = X();
  auto bad_types = Cond(
      Sum(x) > 0.0, [](Tensor a) { return a; }, [](Tensor a) { return Sum(a); }, {x});
  EXPECT_THAT(bad_types[0].status().ToString(),
              HasSubstr("Cond: branch 1 returns (f32[2,3]) but branch 0 returns (f32[])"));
  EXPECT_THAT(Cond(
                  x, [](Tensor a) { return a; }, [](Tensor a) { return a; }, {x})[0]
                  .status()
                  .ToString(),
              HasSubstr("the predicate f32[2,3] must be a bool scalar"));
  auto bad_carry =
      WhileLoop([](Tensor c) { return Sum(c) < 10.0; }, [](Tensor c) { return Astype(c, DType::kS32); }, {x});
  EXPECT_THAT(bad_carry[0].status().ToString(),
              HasSubstr("WhileLoop: body_fn returns (i32[2,3]) but the carry is (f32[2,3])"));
  ScanResult s = Scan([](Tensor c, Tensor xi) { return std::vector<Tensor>{Sum(c + xi)}; }, {Zeros({3})}, {x});
  EXPECT_THAT(s.status().ToString(), HasSubstr("must be the carry (f32[3])"));
  ScanResult lengths =
      Scan([](Tensor c, Tensor, Tensor) { return std::vector<Tensor>{c}; }, {Zeros({3})}, {x, Zeros({3, 3})});
  EXPECT_THAT(lengths.status().ToString(), HasSubstr("leading dim of one length"));
  // Inside a trace the error surfaces at MakeJaxpr even when the result is dropped.
  StatusOr<Jaxpr> j = MakeJaxpr([](Tensor x) {
    (void)WhileLoop([](Tensor c) { return c; }, [](Tensor c) { return c; }, {x});
    return x;
  })(x);
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.status().ToString(), HasSubstr("cond_fn must return one bool scalar"));
}

// The README's example of the jnp / lax additions (C++ API section), checked.
TEST(ControlTest, ReadmeExample) {
  // clang-format off
  Tensor x = Tensor::FromArray(F32({2, 3}, {0.5, -1.2, 2.0, 1.5, 0.3, -0.7}));
  Tensor p = Softmax(x, -1);                                    // jax.nn.softmax
  auto [top, idx] = TopK(x, 2);                                 // [[2 0.5] [1.5 0.3]], [[2 0] [0 1]]
  Tensor y = Cond(Sum(x) > 0.0, [](Tensor v) { return Sin(v) * 2.0; },
                  [](Tensor v) { return Cos(v); }, {x})[0];     // lax.cond: sin(x) * 2
  ScanResult s = Scan([](Tensor c, Tensor xi) { return std::vector<Tensor>{c + xi, c * xi}; },
                      {Zeros({3})}, {x});                       // carry [2 -0.9 1.3], ys [[0 0 0] [...]]
  Tensor g = Grad([](Tensor x) { return Sum(Cumsum(x, 1) * Gelu(x)); })(x);
  // clang-format on
  ExpectValues(p,
               {0.17654205858707428, 0.03225132077932358, 0.7912065982818604, 0.708216667175293, 0.21331074833869934,
                0.07847264409065247},
               2e-6, "softmax");
  ExpectValues(top, {2, 0.5, 1.5, 0.3}, 1e-7, "top");
  ExpectValues(idx, {2, 0, 0, 1}, 0, "idx");
  ExpectValues(y,
               {0.9588510990142822, -1.864078164100647, 1.8185948133468628, 1.9949899911880493, 0.5910404324531555,
                -1.2884353399276733},
               2e-6, "cond");
  ExpectValues(s.carry[0], {2.0, -0.9, 1.3}, 1e-6, "scan carry");
  ExpectValues(s.ys[0], {0, 0, 0, 0.75, -0.36, -1.4}, 1e-6, "scan ys");
  ExpectValues(g,
               {2.5956995487213135, 1.8987088203430176, 3.3665268421173096, 3.107078790664673, 1.3340728282928467,
                -0.14342278242111206},
               2e-5, "grad");
}

}  // namespace
}  // namespace xs::fe
