// Programs an ML engineer writes with the C++ front end (training loops, norms, attention, CNNs,
// sharded Jit, custom gradients, mixed dtypes, error cases), each checked against values that
// JAX 0.10.2 computed (CPU, f32) for the same program written in Python. The reference script is
// reproduced in the comments: inputs come from Det(dims, seed), which is
//   np.round(np.sin(np.arange(n) * 0.7 + seed), 2).astype(np.float32).reshape(dims)
// in Python, and the expected numbers were printed by `.venv/bin/python ref.py` with "%.8g".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "xshard/frontend/grad.h"
#include "xshard/frontend/jit.h"
#include "xshard/frontend/tensor.h"

namespace xs::fe {
namespace user_programs_test {
namespace {

using ::testing::HasSubstr;

// The test inputs: round(sin(i * 0.7 + seed), 2) in row-major order, as f32.
Tensor Det(std::vector<int64_t> dims, double seed, double scale = 1.0) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) {
    float r = static_cast<float>(std::nearbyint(std::sin(i * 0.7 + seed) * 100) / 100);
    v.push_back(static_cast<float>(r * scale));
  }
  return Tensor::FromArray(Array::FromVector<float>(dims, v));
}

Tensor F32(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::FromArray(Array::FromVector<float>(dims, v));
}

// Checks `t` is OK, has `dims` (when given) and holds `want` within `tol` (scaled by max(1, |w|)).
void ExpectValues(const Tensor& t, const std::vector<double>& want, double tol = 2e-5,
                  std::vector<int64_t> dims = {-1}) {
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  StatusOr<Array> v = t.value();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  if (dims != std::vector<int64_t>{-1}) {
    EXPECT_EQ(v->dims(), dims);
  }
  ASSERT_EQ(v->num_elements(), static_cast<int64_t>(want.size())) << t.ToString();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(v->GetDouble(i), want[i], tol * std::max(1.0, std::abs(want[i])))
        << "element " << i << " of " << t.ToString();
  }
}

Tensor Row(const Tensor& t, int64_t r) {  // t[r] of a rank-2 tensor, as a vector
  if (t.rank() != 2) return t;
  return Reshape(Slice(t, {r, 0}, {r + 1, t.dims()[1]}), {t.dims()[1]});
}

// ---------------------------------------------------------------------------------------------
// 1. A two-layer tanh MLP trained with ValueAndGrad and SGD (lr 0.1) for 5 steps. JAX:
//   x = det((8, 4), 0.); y = det((8, 2), 1.); w1 = det((4, 16), 2.) * .5; b1 = zeros(16)
//   w2 = det((16, 2), 3.) * .5; b2 = zeros(2)
//   loss = mean((tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2); value_and_grad(argnums=(0, 1, 2, 3))
TEST(UserProgramsTest, MlpTrainingLoopMatchesJax) {
  Tensor x = Det({8, 4}, 0.0), y = Det({8, 2}, 1.0);
  std::vector<Tensor> params = {Det({4, 16}, 2.0, 0.5), Zeros({16}), Det({16, 2}, 3.0, 0.5), Zeros({2})};
  auto loss = [&](const std::vector<Tensor>& p) {
    Tensor h = Tanh(Matmul(x, p[0]) + p[1]);
    return Mean(IntegerPow(Matmul(h, p[2]) + p[3] - y, 2));
  };
  GradFunction vg = ValueAndGrad(loss, {0, 1, 2, 3});
  const std::vector<double> want_losses = {0.62097573, 0.57281232, 0.5564723, 0.5497874, 0.5465157};
  for (int step = 0; step < 5; ++step) {
    StatusOr<std::vector<Tensor>> r = vg.Call(params);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 5u);
    ExpectValues((*r)[0], {want_losses[step]}, 1e-5, {});
    for (int i = 0; i < 4; ++i) params[i] = params[i] - 0.1 * (*r)[i + 1];
  }
  ExpectValues(params[3], {0.015834332, -0.022678584}, 1e-4);
  ExpectValues(Slice(params[1], {0}, {4}), {0.007922872, -0.0014586881, -0.005068528, -0.0037987311}, 1e-4);
  // The same step jitted gives the same loss.
  JitFunction jstep = Jit(vg, {.name = "step"});
  StatusOr<std::vector<Tensor>> jr = jstep.Call(params);
  ASSERT_TRUE(jr.ok()) << jr.status().ToString();
  StatusOr<std::vector<Tensor>> er = vg.Call(params);
  ASSERT_TRUE(er.ok());
  EXPECT_NEAR((*jr)[0].value()->GetDouble(0), (*er)[0].value()->GetDouble(0), 1e-6);
}

// ---------------------------------------------------------------------------------------------
// 2. Softmax cross-entropy with one-hot labels built from an integer label vector. JAX:
//   logits = det((4, 5), .5) * 3; labels = [1, 0, 4, 2]
//   loss = -mean(sum(one_hot(labels, 5) * log_softmax(logits), -1)); value_and_grad
TEST(UserProgramsTest, SoftmaxCrossEntropyAndGradMatchJax) {
  Tensor logits = Det({4, 5}, 0.5, 3.0);
  Tensor labels = Tensor::FromArray(Array::FromVector<int32_t>({4}, {1, 0, 4, 2}));
  auto xent = [&](Tensor lg) {
    Tensor onehot = Astype(Eq(Reshape(labels, {4, 1}), Iota(DType::kS32, {4, 5}, 1)), DType::kF32);
    return -Mean(Sum(onehot * LogSoftmax(lg, -1), {-1}));
  };
  StatusOr<std::vector<Tensor>> r = ValueAndGrad(xent).Call({logits});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectValues((*r)[0], {3.6187501}, 1e-5);
  ExpectValues((*r)[1],
               {0.024443939,  -0.15570933,   0.10012128,   0.027560465, 0.0035836517, -0.24506666, 0.0024013128,
                0.0047875368, 0.028106924,   0.20977089,   0.10827924,  0.10827924,   0.02892521,  0.0038756505,
                -0.24935935,  0.00056199206, 0.0011545749, -0.24322166, 0.052129555,  0.18937555},
               1e-5, {4, 5});
  Tensor pred = Argmax(logits, -1);
  ASSERT_TRUE(pred.ok()) << pred.status().ToString();
  EXPECT_EQ(pred.dtype(), DType::kS32);
  EXPECT_EQ(*pred.value(), Array::FromVector<int32_t>({4}, {2, 4, 0, 4}));
  // Accuracy: mean of a bool comparison (jnp.mean(pred == labels) = 0.0 here: no hit).
  Tensor acc = Mean(Astype(Eq(pred, labels), DType::kF32));
  ExpectValues(acc, {0.0});
}

// ---------------------------------------------------------------------------------------------
// 3. Layer norm over the last axis (eps 1e-5) and the gradients of sum(ln(x) * det((3, 6), 4.))
// with respect to x, gamma and beta. JAX:
//   x = det((3, 6), .2) * 2; gamma = 1 + det((6,), 1.3) * .1; beta = det((6,), 2.1) * .1
//   mu = mean(x, -1, keepdims); var = mean((x - mu) ** 2, -1, keepdims)
//   ln = (x - mu) * rsqrt(var + 1e-5) * gamma + beta
TEST(UserProgramsTest, LayerNormAndItsGradientsMatchJax) {
  Tensor x = Det({3, 6}, 0.2, 2.0);
  Tensor gamma = 1.0 + Det({6}, 1.3, 0.1), beta = Det({6}, 2.1, 0.1);
  Tensor probe = Det({3, 6}, 4.0);
  auto ln = [](Tensor x, Tensor g, Tensor b) {
    Tensor mu = Reshape(Mean(x, {-1}), {x.dims()[0], 1});
    Tensor var = Reshape(Mean(IntegerPow(x - mu, 2), {-1}), {x.dims()[0], 1});
    return (x - mu) * Rsqrt(var + 1e-5) * g + b;
  };
  ExpectValues(
      ln(x, gamma, beta),
      {-0.31740448, 0.85726285, 1.1975104, 0.59226286, -0.54258955, -1.667009, -1.1745343, -1.1937438, -0.57782578,
       0.25720143, 0.89882857, 1.1571579, 2.048418, 0.86932737, -0.39099601, -1.1061345, -0.99690074, -0.23421913},
      1e-5, {3, 6});
  auto loss = [&](Tensor x, Tensor g, Tensor b) { return Sum(ln(x, g, b) * probe); };
  StatusOr<std::vector<Tensor>> r = Grad(loss, {0, 1, 2}).Call({x, gamma, beta});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectValues(
      (*r)[0],
      {-0.74440348, -0.39312688, 0.11377183, 0.46270746, 0.43590829, 0.12514266, 0.28432429, -0.016413458, -0.22890452,
       -0.23236057, -0.034781434, 0.22813582, -0.11090076, 0.28366756, 0.391976, 0.1718207, -0.19590044, -0.54066277},
      1e-4, {3, 6});
  ExpectValues((*r)[1], {-1.1057718, -0.92677164, -1.1422712, -1.3707368, -1.8029835, -2.6695077}, 1e-4, {6});
  ExpectValues((*r)[2], {0.01, 0.01, 0, -0.02, -0.02, -0.01}, 1e-5, {6});
}

// ---------------------------------------------------------------------------------------------
// 4. RMSNorm (eps 1e-6) and the gradient of sum(sin(rms(x, g))). JAX:
//   rms = x * rsqrt(mean(x * x, -1, keepdims=True) + 1e-6) * g   (x, gamma as in test 3)
TEST(UserProgramsTest, RmsNormAndItsGradientsMatchJax) {
  Tensor x = Det({3, 6}, 0.2, 2.0);
  Tensor gamma = 1.0 + Det({6}, 1.3, 0.1);
  auto rms = [](Tensor x, Tensor g) { return x * Rsqrt(Reshape(Mean(x * x, {-1}), {-1, 1}) + 1e-6) * g; };
  ExpectValues(
      rms(x, gamma),
      {0.33881149, 1.3153365, 1.6121367, 1.1291139, 0.19864985, -0.73728585, -1.3346703, -1.3006114, -0.61500978,
       0.2746765, 0.92962903, 1.153672, 1.1692358, 0.19132632, -0.823089, -1.3664663, -1.2342389, -0.59186649},
      1e-5, {3, 6});
  auto loss = [&](Tensor x, Tensor g) { return Sum(Sin(rms(x, g))); };
  StatusOr<std::vector<Tensor>> r = Grad(loss, {0, 1}).Call({x, gamma});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectValues(
      (*r)[0],
      {0.77033031, 0.10173374, -0.17603907, 0.21472409, 0.6755299, 0.59055936, 0.180737, 0.20269758, 0.55394381,
       0.59706372, 0.33828175, 0.21642646, 0.45474392, 0.80594444, 0.41336972, -0.041971132, 0.042901501, 0.45840001},
      1e-4, {3, 6});
  ExpectValues((*r)[1], {0.42365158, 0.1586272, -1.0820851, 0.48230049, 0.37384403, -0.63289946}, 1e-4, {6});
}

// ---------------------------------------------------------------------------------------------
// 5. One head of causal self-attention on x f32[2, 4, 8] (batch, time, model), x @ W on rank-3
// x as jnp.matmul allows. JAX:
//   q, k, v = x @ wq, x @ wk, x @ wv   (wq = det((8, 8), 1.1) * .4, wk seed 2.2, wv seed 3.3)
//   s = einsum("bqd,bkd->bqk", q, k) / sqrt(8.); mask = arange(4)[:, None] >= arange(4)[None]
//   p = softmax(where(mask, s, -1e9), -1); out = einsum("bqk,bkd->bqd", p, v)
//   loss = sum(out ** 2); grad argnums (wq, x)
// (Softmax: the library's jax.nn.softmax, tensor.h.)

TEST(UserProgramsTest, CausalAttentionAndGradMatchJax) {
  Tensor x = Det({2, 4, 8}, 0.3);
  Tensor wq = Det({8, 8}, 1.1, 0.4), wk = Det({8, 8}, 2.2, 0.4), wv = Det({8, 8}, 3.3, 0.4);
  auto attn = [](Tensor x, Tensor wq, Tensor wk, Tensor wv) {
    Tensor q = Matmul(x, wq), k = Matmul(x, wk), v = Matmul(x, wv);
    Tensor s = Einsum("bqd,bkd->bqk", q, k) / std::sqrt(8.0);
    Tensor mask = Ge(Iota(DType::kS32, {4, 4}, 0), Iota(DType::kS32, {4, 4}, 1));
    Tensor p = Softmax(Where(mask, s, Tensor::Weak(-1e9)), -1);
    return Einsum("bqk,bkd->bqd", p, v);
  };
  Tensor out = attn(x, wq, wk, wv);
  ExpectValues(Reshape(Slice(out, {0, 0, 0}, {1, 2, 8}), {16}),
               {1.4476401, 0.46528, -0.74091995, -1.592, -1.6968801, -1.00692, 0.16271996, 1.248, 1.4866737, 1.0796216,
                0.16303223, -0.82547212, -1.4288287, -1.3604883, -0.65118384, 0.36100692},
               1e-5);
  auto loss = [&](Tensor x, Tensor wq, Tensor wk, Tensor wv) { return Sum(IntegerPow(attn(x, wq, wk, wv), 2)); };
  StatusOr<std::vector<Tensor>> r = Grad(loss, {1, 0}).Call({x, wq, wk, wv});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectValues(Row((*r)[0], 0),
               {1.0048124, 0.75668097, 0.15816365, -0.51898605, -0.94886005, -0.93336558, -0.48163357, 0.20204094},
               1e-4);
  ExpectValues(Reshape(Slice((*r)[1], {1, 3, 0}, {2, 4, 8}), {8}),
               {5.2549124, 3.3574677, -0.042996645, -3.4186285, -5.2709284, -4.7574611, -2.1035776, 1.4861467}, 1e-4);
}

// ---------------------------------------------------------------------------------------------
// 6. Conv (SAME, 3x3) + relu + 2x2 average and max pools, and the gradient of
// sum(avg * max) with respect to the kernel and the input. JAX:
//   x = det((2, 6, 6, 3), .4); k = det((3, 3, 3, 4), 1.7) * .3
//   h = relu(conv_general_dilated(x, k, (1, 1), "SAME", ("NHWC", "HWIO", "NHWC")))
//   a = reduce_window(h, 0., add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
//   m = reduce_window(h, -inf, max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"); loss = sum(a * m)
TEST(UserProgramsTest, ConvPoolingAndGradMatchJax) {
  Tensor x = Det({2, 6, 6, 3}, 0.4), k = Det({3, 3, 3, 4}, 1.7, 0.3);
  auto cnn = [](Tensor x, Tensor k) {
    Tensor h = Relu(Conv(x, k, {1, 1}, "SAME"));
    return Sum(AvgPool(h, {2, 2}, {2, 2}) * MaxPool(h, {2, 2}, {2, 2}));
  };
  StatusOr<std::vector<Tensor>> r = ValueAndGrad(cnn, {1, 0}).Call({x, k});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectValues((*r)[0], {0.58669162}, 1e-5);
  ExpectValues(Reshape(Slice((*r)[1], {0, 0, 0, 0}, {1, 1, 3, 4}), {12}),
               {0.79637682, 0.48502308, 0.082256474, 0.094318315, -0.38195324, 0.27109057, 0.025762446, 0.10860162,
                -1.3762347, -0.06902428, -0.043012571, 0.071637481},
               1e-4);
  ExpectValues(Reshape(Slice((*r)[2], {0, 0, 0, 0}, {1, 1, 1, 3}), {3}), {-0.090974942, 0.056290247, -0.015005185},
               1e-4);
  // Strided convolutions: VALID (2, 2) gives f32[2, 2, 2, 4], SAME (2, 2) f32[2, 3, 3, 4].
  Tensor valid = Conv(x, k, {2, 2}, "VALID");
  ExpectValues(Reshape(Slice(valid, {1, 1, 0, 0}, {2, 2, 1, 4}), {4}),
               {-0.0032999939, 0.013379987, 0.0091200201, 0.014129984}, 1e-4);
  EXPECT_EQ(valid.dims(), std::vector<int64_t>({2, 2, 2, 4}));
  Tensor same = Conv(x, k, {2, 2}, "SAME");
  EXPECT_EQ(same.dims(), std::vector<int64_t>({2, 3, 3, 4}));
  ExpectValues(Reshape(Slice(same, {1, 2, 2, 0}, {2, 3, 3, 4}), {4}),
               {0.18588002, 0.018449999, -0.14970003, -0.25089002}, 1e-4);
}

// ---------------------------------------------------------------------------------------------
// 7. A data-parallel x tensor-parallel layer jitted on a 4x2 mesh: x P('a', None) @ w
// P(None, 'b'), result constrained to P('a', 'b'). Values by numpy: x[i, j] = i + 1 (f32[8, 4]),
// w[j, k] = k + 1 (f32[4, 6]), so (x @ w)[i, k] = 4 (i + 1) (k + 1).
TEST(UserProgramsTest, JitWithShardingsOnA4x2Mesh) {
  StatusOr<Mesh> mesh = Mesh::Create({"a", "b"}, {4, 2});
  ASSERT_TRUE(mesh.ok());
  StatusOr<NamedSharding> xs = MakeSharding(*mesh, "P('a', None)");
  StatusOr<NamedSharding> ws = MakeSharding(*mesh, "P(None, 'b')");
  StatusOr<NamedSharding> os = MakeSharding(*mesh, "P('a', 'b')");
  ASSERT_TRUE(xs.ok() && ws.ok() && os.ok());
  Tensor x = BroadcastTo(Reshape(Astype(Arange(1, 9), DType::kF32), {8, 1}), {8, 4});
  Tensor w = BroadcastTo(Astype(Arange(1, 7), DType::kF32), {4, 6});
  JitFunction layer = Jit([](Tensor x, Tensor w) { return Relu(Matmul(x, w)); },
                          {.in_shardings = {*xs, *ws}, .out_shardings = {*os}, .name = "layer"});
  Tensor y = layer(x, w);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ASSERT_NE(y.sharding(), nullptr);
  EXPECT_EQ(*y.sharding(), *os);
  StatusOr<Array> v = y.value();
  ASSERT_TRUE(v.ok());
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 6; ++k) EXPECT_EQ(v->At({i, k}), 4.0 * (i + 1) * (k + 1));
  StatusOr<std::vector<Array>> shards = y.AddressableShards();
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  ASSERT_EQ(shards->size(), 8u);
  // Device 5 = (a=2, b=1): rows 4..5, columns 3..5.
  EXPECT_EQ((*shards)[5].dims(), std::vector<int64_t>({2, 3}));
  EXPECT_EQ((*shards)[5].At({0, 0}), 4.0 * 5 * 4);
  EXPECT_EQ((*shards)[5].At({1, 2}), 4.0 * 6 * 6);
  // Calling it on pre-sharded inputs (DevicePut) gives the same values.
  Tensor y2 = layer(DevicePut(x, *xs), DevicePut(w, *ws));
  ASSERT_TRUE(y2.ok()) << y2.status().ToString();
  EXPECT_EQ(*y2.value(), *v);
  // An eager op on the sharded result keeps computing the right values.
  ExpectValues(Sum(y2 / 4.0, {1}), {21, 42, 63, 84, 105, 126, 147, 168}, 1e-6);
}

// ---------------------------------------------------------------------------------------------
// 8. One jitted function called with different shapes and dtypes retraces; values by hand:
// normalize(x) = x / sum(x).
TEST(UserProgramsTest, JitRetracesOnNewShapesAndDtypes) {
  int traces = 0;
  JitFunction normalize = Jit(
      [&](Tensor x) {
        ++traces;
        return x / Sum(x);
      },
      {.name = "normalize"});
  ExpectValues(normalize(F32({4}, {1, 1, 1, 1})), {0.25, 0.25, 0.25, 0.25});
  ExpectValues(normalize(F32({4}, {1, 2, 3, 4})), {0.1, 0.2, 0.3, 0.4});
  EXPECT_EQ(traces, 1);
  ExpectValues(normalize(F32({2, 2}, {1, 1, 1, 5})), {0.125, 0.125, 0.125, 0.625}, 1e-6, {2, 2});
  EXPECT_EQ(traces, 2);
  // Integer input: jnp's true division gives f32.
  Tensor ints = normalize(Tensor::FromArray(Array::FromVector<int32_t>({2}, {1, 3})));
  ASSERT_TRUE(ints.ok()) << ints.status().ToString();
  EXPECT_EQ(ints.dtype(), DType::kF32);
  ExpectValues(ints, {0.25, 0.75});
  EXPECT_EQ(traces, 3);
}

// ---------------------------------------------------------------------------------------------
// 9. Jit inside Grad, Grad inside Jit with a closed-over array, and grad of grad. JAX:
//   inner = sin(x) * x; outer = sum(jit(inner)(x) ** 2); grad(outer)(det((5,), .9) * 2)
//   jit(grad(lambda x: sum(tanh(x * c))))(x) with c = det((5,), 1.9)
//   grad(grad(lambda x: sin(x) * x ** 3))(1.3)
TEST(UserProgramsTest, NestedJitAndGradMatchJax) {
  Tensor x = Det({5}, 0.9, 2.0);
  JitFunction inner = Jit([](Tensor x) { return Sin(x) * x; }, {.name = "inner"});
  auto outer = [&](Tensor x) { return Sum(IntegerPow(inner(x), 2)); };
  ExpectValues(Grad(outer)(x), {3.1721802, 0.2800771, 3.3025088, 0.084413566, -2.5716925}, 1e-5);
  Tensor c = Det({5}, 1.9);
  JitFunction jg = Jit(Grad([&](Tensor x) { return Sum(Tanh(x * c)); }), {.name = "jg"});
  ExpectValues(jg(x), {0.17734696, 0.20534287, -0.15112668, -0.72659725, -0.38273233}, 1e-5);
  GradFunction d2 = Grad(Grad([](Tensor x) { return Sin(x) * IntegerPow(x, 3); }));
  ExpectValues(d2(1.3), {8.1112556}, 1e-5);
  ExpectValues(Jit(d2)(1.3), {8.1112556}, 1e-5);
}

// ---------------------------------------------------------------------------------------------
// 10. Custom VJPs: gradient clipping (identity forward, clip(g, -1, 1) backward) and softplus
// with a residual. JAX (custom_vjp, defvjp):
//   grad(lambda x: sum(clip_grad(x) ** 3))(det((6,), .1) * 2)
//   grad(lambda x: sum(softplus(x) * x))(same x), softplus bwd = g * sigmoid(x)
TEST(UserProgramsTest, CustomVjpClippingAndSoftplusMatchJax) {
  Tensor x = Det({6}, 0.1, 2.0);
  TensorFn clip = CustomVjp([](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] * 1.0}; },
                            [](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] * 1.0}; },
                            [](const std::vector<Tensor>& a) {
                              return std::vector<Tensor>{Minimum(Maximum(a[0], Tensor::Weak(-1)), Tensor::Weak(1))};
                            });
  auto cg_loss = [&](Tensor x) { return Sum(IntegerPow(clip({x})[0], 3)); };
  ExpectValues(Grad(cg_loss)(x), {0.12, 1, 1, 1, 0.69120002, 1}, 1e-5);
  auto softplus_fn = [](const std::vector<Tensor>& a) { return std::vector<Tensor>{Log(1.0 + Exp(a[0]))}; };
  TensorFn softplus = CustomVjp(
      softplus_fn,
      [&](const std::vector<Tensor>& a) {
        return std::vector<Tensor>{softplus_fn(a)[0], a[0]};
      },
      [](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[1] * Logistic(a[0])}; });
  auto sp_loss = [&](Tensor x) { return Sum(softplus({x})[0] * x); };
  ExpectValues(Grad(sp_loss)(x), {0.90810561, 2.8168054, 3.8885221, 3.1529369, 1.2581939, 0.088979632}, 1e-5);
  ExpectValues(Jit(Grad(sp_loss))(x), {0.90810561, 2.8168054, 3.8885221, 3.1529369, 1.2581939, 0.088979632}, 1e-5);
  // A backward returning a cotangent shaped unlike its input is an error (JAX: "Custom VJP bwd
  // rule must produce an output with the same shape/dtypes as the args tuple of the primal
  // function"), not a wrongly shaped gradient.
  TensorFn bad = CustomVjp([](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] * 2.0}; },
                           [](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] * 2.0}; },
                           [](const std::vector<Tensor>&) { return std::vector<Tensor>{Ones({5})}; });
  Tensor g = Grad([&](Tensor x) { return Sum(bad({x})[0]); })(Ones({3}));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("returns f32[5] as the cotangent of input 0 f32[3]"));
}

// ---------------------------------------------------------------------------------------------
// 11. Pmap over 4 devices with a broadcast weight: per-device normalized logits' row max, and
// each device's buffer. Values by numpy: x[i] = det((4, 3), .3)[i], w = det((3, 2), 1.)
//   out[i] = max(x[i] @ w) over the 2 columns.
TEST(UserProgramsTest, PmapWithBroadcastWeight) {
  Tensor x = Det({4, 3}, 0.3), w = Det({3, 2}, 1.0);
  auto fn = [](const std::vector<Tensor>& a) { return std::vector<Tensor>{Max(Matmul(a[0], a[1]))}; };
  StatusOr<std::vector<Tensor>> r = PmapCall(fn, {x, w}, {0, std::nullopt}, "rowmax");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Tensor want = Max(Matmul(x, w), {1});
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(*(*r)[0].value(), *want.value());
  EXPECT_EQ((*(*r)[0].AddressableShards())[2], Array::Scalar<float>(want.value()->GetDouble(2)));
}

// ---------------------------------------------------------------------------------------------
// 12. Integer and bool arithmetic with jnp's promotion. JAX:
//   a = int32([3, -7, 8, 0, 5]); a / 2 -> f32 [1.5 -3.5 4 0 2.5]; sum(a > 0) -> int32 3
//   mean(a) -> f32 1.8; int8 + int32 -> int32; int8 * 2 -> int8 [-56 56 14] (wraps)
//   sum(int8) -> int32 7; relu(a) int32 [3 0 8 0 5]; a * 2.5 -> f32; where(a > 0, a, 0) int32
TEST(UserProgramsTest, IntegerAndBoolPromotionMatchesJax) {
  Tensor a = Tensor::FromArray(Array::FromVector<int32_t>({5}, {3, -7, 8, 0, 5}));
  Tensor half = a / 2;
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  EXPECT_EQ(half.dtype(), DType::kF32);
  ExpectValues(half, {1.5, -3.5, 4, 0, 2.5});
  Tensor count = Sum(Gt(a, Tensor::WeakInt(0)));
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(count.dtype(), DType::kS32);
  ExpectValues(count, {3});
  Tensor mean = Mean(a);
  ASSERT_TRUE(mean.ok()) << mean.status().ToString();
  EXPECT_EQ(mean.dtype(), DType::kF32);
  ExpectValues(mean, {1.8});
  Tensor i8 = Tensor::FromArray(Array::FromVector<int8_t>({3}, {100, -100, 7}));
  Tensor wide = i8 + Tensor::FromArray(Array::FromVector<int32_t>({3}, {1, 2, 3}));
  EXPECT_EQ(wide.dtype(), DType::kS32);
  ExpectValues(wide, {101, -98, 10});
  Tensor twice = i8 * 2;
  ASSERT_TRUE(twice.ok()) << twice.status().ToString();
  EXPECT_EQ(twice.dtype(), DType::kS8);
  EXPECT_EQ(*twice.value(), Array::FromVector<int8_t>({3}, {-56, 56, 14}));
  Tensor s8 = Sum(i8);
  ASSERT_TRUE(s8.ok()) << s8.status().ToString();
  EXPECT_EQ(s8.dtype(), DType::kS32);
  ExpectValues(s8, {7});
  Tensor relu = Relu(a);
  ASSERT_TRUE(relu.ok()) << relu.status().ToString();
  EXPECT_EQ(relu.dtype(), DType::kS32);
  EXPECT_EQ(*relu.value(), Array::FromVector<int32_t>({5}, {3, 0, 8, 0, 5}));
  Tensor scaled = a * 2.5;
  EXPECT_EQ(scaled.dtype(), DType::kF32);
  ExpectValues(scaled, {7.5, -17.5, 20, 0, 12.5});
  Tensor kept = Where(Gt(a, Tensor::WeakInt(0)), a, Tensor::WeakInt(0));
  EXPECT_EQ(kept.dtype(), DType::kS32);
  EXPECT_EQ(*kept.value(), Array::FromVector<int32_t>({5}, {3, 0, 8, 0, 5}));
  // Mixed signedness: u8 [200, 3] + s8 [-1, 2] -> s16 [199, 5]; u8 * 2 stays u8 (wraps to
  // [144, 6]); sum(u8) -> u32 203; bool * 2 -> s32, bool * 2.0 -> f32; mean(bool) -> f32 .75;
  // f16 + s32 -> f16.
  Tensor u8 = Tensor::FromArray(Array::FromVector<uint8_t>({2}, {200, 3}));
  Tensor sgn8 = Tensor::FromArray(Array::FromVector<int8_t>({2}, {-1, 2}));
  Tensor mixed = u8 + sgn8;
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_EQ(mixed.dtype(), DType::kS16);
  EXPECT_EQ(*mixed.value(), Array::FromVector<int16_t>({2}, {199, 5}));
  EXPECT_EQ((u8 + Tensor::FromArray(Array::FromVector<int32_t>({2}, {1, 1}))).dtype(), DType::kS32);
  EXPECT_EQ(*(u8 * 2).value(), Array::FromVector<uint8_t>({2}, {144, 6}));
  Tensor su8 = Sum(u8);
  EXPECT_EQ(su8.dtype(), DType::kU32);
  ExpectValues(su8, {203});
  Tensor flags = Tensor::FromArray(Array::FromVector<bool>({4}, {true, false, true, true}));
  EXPECT_EQ((flags * 2).dtype(), DType::kS32);
  EXPECT_EQ((flags * 2.0).dtype(), DType::kF32);
  ExpectValues(Mean(flags), {0.75});
  EXPECT_EQ((Ones({2}, DType::kF16) + Ones({2}, DType::kS32)).dtype(), DType::kF16);
  // Transcendental functions of integers are f32, as jnp's: exp(arange(3)) =
  // [1, 2.7182817, 7.389056], sqrt(arange(3)) = [0, 1, 1.4142135],
  // log_softmax(arange(3)) = [-2.407606, -1.4076059, -0.40760595].
  Tensor e = Exp(Arange(0, 3));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e.dtype(), DType::kF32);
  ExpectValues(e, {1, 2.7182817, 7.389056}, 1e-6);
  ExpectValues(Sqrt(Arange(0, 3)), {0, 1, 1.4142135}, 1e-6);
  ExpectValues(LogSoftmax(Arange(0, 3)), {-2.407606, -1.4076059, -0.40760595}, 1e-6);
  // jnp.argmax picks the first of tied maxima: [[1, 5, 5], [7, 2, 7]] -> [1, 0].
  Tensor am = Argmax(F32({2, 3}, {1, 5, 5, 7, 2, 7}), 1);
  EXPECT_EQ(*am.value(), Array::FromVector<int32_t>({2}, {1, 0}));
}

// ---------------------------------------------------------------------------------------------
// 13. Half-precision tensors. JAX:
//   f16 [1.5, 2.25, -3] + bf16 [.5, 1, 2] -> f32 [2, 3.25, -1]; bf16 * 2.0 stays bf16
//   f32 scalar (strong) + bf16 vector -> f32
//   sum(full((1000,), .01, bf16)) -> bf16 10 (summed in f32, then rounded)
//   mean(full((1000,), .01, bf16)) -> bf16 0.0100098; sum(ones(4096, f16)) -> f16 4096
//   bf16 [[1, 2], [3, 4]] @ itself -> bf16 [[7, 10], [15, 22]]
//   grad(lambda x: sum(x * x))(f16 [1.5, 2.25, -3]) -> f16 [3, 4.5, -6]
TEST(UserProgramsTest, HalfPrecisionMatchesJax) {
  Tensor h = Astype(F32({3}, {1.5, 2.25, -3}), DType::kF16);
  Tensor b = Astype(F32({3}, {0.5, 1, 2}), DType::kBF16);
  Tensor mixed = h + b;
  EXPECT_EQ(mixed.dtype(), DType::kF32);
  ExpectValues(mixed, {2, 3.25, -1});
  EXPECT_EQ((b * 2.0).dtype(), DType::kBF16);
  EXPECT_EQ((Tensor::Scalar(2.0) + b).dtype(), DType::kF32);
  Tensor s = Sum(Full({1000}, 0.01, DType::kBF16));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s.dtype(), DType::kBF16);
  ExpectValues(s, {10}, 1e-6);
  Tensor m = Mean(Full({1000}, 0.01, DType::kBF16));
  EXPECT_EQ(m.dtype(), DType::kBF16);
  ExpectValues(m, {0.0100098}, 1e-5);
  ExpectValues(Sum(Ones({4096}, DType::kF16)), {4096}, 0);
  Tensor hb = Astype(F32({2, 2}, {1, 2, 3, 4}), DType::kBF16);
  Tensor mm = Matmul(hb, hb);
  EXPECT_EQ(mm.dtype(), DType::kBF16);
  ExpectValues(mm, {7, 10, 15, 22}, 0);
  Tensor g = Grad([](Tensor x) { return Sum(x * x); })(h);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g.dtype(), DType::kF16);
  ExpectValues(g, {3, 4.5, -6}, 0);
}

// ---------------------------------------------------------------------------------------------
// 14. Broadcasting corner cases and their gradients (the cotangent of a broadcast operand is
// summed back to its shape). JAX:
//   a31 = det((3, 1), .1); a14 = det((1, 4), .2); a4 = det((4,), .3); a31 * a14 + a4
//   grad(lambda u: sum((u * a14 + a4) ** 2))(a31); grad(lambda u: sum((a31 * a14 + u) ** 2))(a4)
TEST(UserProgramsTest, BroadcastingAndItsGradientsMatchJax) {
  Tensor a31 = Det({3, 1}, 0.1), a14 = Det({1, 4}, 0.2), a4 = Det({4}, 0.3);
  ExpectValues(a31 * a14 + a4,
               {0.32000002, 0.91799998, 1.09, 0.755, 0.44400001, 1.4016, 1.71, 1.22, 0.5, 1.6199999, 1.99, 1.4300001},
               1e-6, {3, 4});
  ExpectValues(Grad([&](Tensor u) { return Sum(IntegerPow(u * a14 + a4, 2)); })(a31), {4.8725796, 7.6140957, 8.8521996},
               1e-5, {3, 1});
  ExpectValues(Grad([&](Tensor u) { return Sum(IntegerPow(a31 * a14 + u, 2)); })(a4),
               {2.5280001, 7.8792, 9.5799999, 6.8100004}, 1e-5, {4});
  // A strongly typed f32 scalar broadcasts like a literal (a14 = [.2, .78, 1, .75]).
  ExpectValues(Tensor::Scalar(2.0) * a14, {0.4, 1.56, 2, 1.5}, 1e-6, {1, 4});
}

// ---------------------------------------------------------------------------------------------
// 15. jnp.matmul with batch dims on one side only (x[b, t, d] @ w[d, h], v[d] @ x[b, d, h]). JAX:
//   xb = det((2, 3, 4), .5); wb = det((4, 5), .7); (xb @ wb)[1]; (det((3,), 0.) @ xb)[1]
TEST(UserProgramsTest, MatmulBroadcastsBatchDimsAsJnp) {
  Tensor xb = Det({2, 3, 4}, 0.5), wb = Det({4, 5}, 0.7);
  Tensor y = Matmul(xb, wb);
  ExpectValues(Reshape(Slice(y, {1, 0, 0}, {2, 3, 5}), {15}),
               {0.68560004, 0.62709999, 0.26070002, -0.22350001, -0.59960008, -0.75479996, -0.73509997, -0.35509998,
                0.1869, 0.63560003, 0.74519998, 0.76259995, 0.40690005, -0.13559997, -0.60709995},
               1e-5);
  EXPECT_EQ(y.dims(), std::vector<int64_t>({2, 3, 5}));
  Tensor v = Matmul(Det({3}, 0.0), xb);
  ExpectValues(Row(v, 1), {0.43430004, 0.37630001, 0.13829999, -0.17059998}, 1e-5);
  EXPECT_EQ(v.dims(), std::vector<int64_t>({2, 4}));
  // grad(lambda w: sum(sin(xb @ w)))(wb)[2]
  ExpectValues(Row(Grad([&](Tensor w) { return Sum(Sin(Matmul(xb, w))); })(wb), 2),
               {0.44532228, 0.43864372, 0.43104938, 0.43520477, 0.44407028}, 1e-5);
  // Both batched, batch dims broadcast: det((2, 1, 3, 4), .1) @ det((5, 4, 6), .2) is
  // f32[2, 5, 3, 6]; [1, 4, 2] and grad(lambda b: sum((a @ b) ** 2))(b)[3, 1].
  Tensor a4 = Det({2, 1, 3, 4}, 0.1), b3 = Det({5, 4, 6}, 0.2);
  Tensor z = Matmul(a4, b3);
  EXPECT_EQ(z.dims(), std::vector<int64_t>({2, 5, 3, 6}));
  ExpectValues(Reshape(Slice(z, {1, 4, 2, 0}, {2, 5, 3, 6}), {6}),
               {0.039100032, -0.3046, -0.51190001, -0.46880004, -0.2192, 0.15009999}, 1e-5);
  Tensor gb = Grad([&](Tensor b) { return Sum(IntegerPow(Matmul(a4, b), 2)); })(b3);
  EXPECT_EQ(gb.dims(), std::vector<int64_t>({5, 4, 6}));
  ExpectValues(Reshape(Slice(gb, {3, 1, 0}, {4, 2, 6}), {6}),
               {-0.74848819, -0.32499215, 0.31121013, 0.74194992, 0.88405216, 0.55015814}, 1e-5);
  // einsum("ij,j->i", arange(6).reshape(2, 3), arange(3)) = [5, 14];
  // einsum("ij,jk->ki", arange(6).reshape(2, 3), arange(12).reshape(3, 4)) =
  // [[20, 56], [23, 68], [26, 80], [29, 92]].
  Tensor m23 = Reshape(Astype(Arange(0, 6), DType::kF32), {2, 3});
  ExpectValues(Einsum("ij,j->i", m23, Astype(Arange(0, 3), DType::kF32)), {5, 14}, 0, {2});
  ExpectValues(Einsum("ij,jk->ki", m23, Reshape(Astype(Arange(0, 12), DType::kF32), {3, 4})),
               {20, 56, 23, 68, 26, 80, 29, 92}, 0, {4, 2});
  Tensor bad = Matmul(Ones({2, 3, 4}), Ones({5, 4, 6}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("batch dims"));
}

// ---------------------------------------------------------------------------------------------
// 16. Reductions over several axes (negative axes too). JAX, r = det((2, 3, 4), .6):
//   sum(r, (0, 2)); max(r, -1); mean(r, (0, 1), keepdims=True); min(r)
TEST(UserProgramsTest, MultiAxisReductionsMatchJax) {
  Tensor r = Det({2, 3, 4}, 0.6);
  ExpectValues(Sum(r, {0, 2}), {1.1800003, -1.99, 2.53}, 1e-6, {3});
  ExpectValues(Sum(r, {2, 0}), {1.1800003, -1.99, 2.53}, 1e-6, {3});
  ExpectValues(Max(r, {-1}), {0.96, -0.26, 0.97, 0.41, 0.97, 0.89}, 1e-6, {2, 3});
  ExpectValues(Reshape(Mean(r, {0, 1}), {1, 1, 4}), {0.13833334, 0.13, 0.058333345, -0.039999992}, 1e-6, {1, 1, 4});
  ExpectValues(Mean(r, {-3, -2}), {0.13833334, 0.13, 0.058333345, -0.039999992}, 1e-6, {4});
  ExpectValues(Min(r), {-1}, 0, {});
}

// ---------------------------------------------------------------------------------------------
// 17. Gradients at kinks and ties, as JAX defines them:
//   grad(max)([1, 3, 3, 2]) = [0, .5, .5, 0]; grad(sum(maximum(x, 0.)))([-1, 0, 2]) = [0, .5, 1]
//   grad(sum(relu(x)))([-1, 0, 2]) = [0, 0, 1] (jax.nn.relu); grad(sum(abs))([-1, 0, 2]) =
//   [-1, 1, 1]; grad(sum(sqrt))([.25, 4]) = [1, .25]; grad(sum(minimum(x, 1.)))([.5, 1, 2]) =
//   [1, .5, 0]; grad(sum(x ** y), (0, 1))([2, 3], [3, .5]) = ([12, .28867513],
//   [5.5451775, 1.9028523])
TEST(UserProgramsTest, GradientsAtKinksMatchJax) {
  ExpectValues(Grad([](Tensor x) { return Max(x); })(F32({4}, {1, 3, 3, 2})), {0, 0.5, 0.5, 0});
  Tensor kink = F32({3}, {-1, 0, 2});
  ExpectValues(Grad([](Tensor x) { return Sum(Maximum(x, Tensor::Weak(0))); })(kink), {0, 0.5, 1});
  ExpectValues(Grad([](Tensor x) { return Sum(Relu(x)); })(kink), {0, 0, 1});
  ExpectValues(Grad([](Tensor x) { return Sum(Abs(x)); })(kink), {-1, 1, 1});
  ExpectValues(Grad([](Tensor x) { return Sum(Sqrt(x)); })(F32({2}, {0.25, 4})), {1, 0.25});
  ExpectValues(Grad([](Tensor x) { return Sum(Minimum(x, Tensor::Weak(1))); })(F32({3}, {0.5, 1, 2})), {1, 0.5, 0});
  // relu keeps NaN: relu([-1, nan, 2]) = [0, nan, 2].
  Tensor rn = Relu(F32({3}, {-1, NAN, 2}));
  ASSERT_TRUE(rn.ok());
  EXPECT_EQ(rn.value()->GetDouble(0), 0);
  EXPECT_TRUE(std::isnan(rn.value()->GetDouble(1)));
  // A max pool's gradient goes to the first of tied maxima in each window: x = [[1, 2, 2, 0],
  // [2, 1, 0, 2]] as f32[1, 2, 4, 1], grad(sum(reduce_window max (1, 2, 2, 1))) =
  // [[0, 1, 1, 0], [0, 0, 0, 0]].
  ExpectValues(Grad([](Tensor x) {
                 return Sum(MaxPool(x, {2, 2}, {2, 2}));
               })(F32({1, 2, 4, 1}, {1, 2, 2, 0, 2, 1, 0, 2})),
               {0, 1, 1, 0, 0, 0, 0, 0});
  StatusOr<std::vector<Tensor>> p =
      Grad([](Tensor x, Tensor y) { return Sum(Pow(x, y)); }, {0, 1}).Call({F32({2}, {2, 3}), F32({2}, {3, 0.5})});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ExpectValues((*p)[0], {12, 0.28867513}, 1e-6);
  ExpectValues((*p)[1], {5.5451775, 1.9028523}, 1e-6);
}

// ---------------------------------------------------------------------------------------------
// 18. Slicing, dynamic slicing, updating, concatenation and padding, with the gradient. JAX:
//   s = det((4, 6), .8)
//   a = lax.slice(s, (1, 0), (4, 6), (2, 3)); b = lax.dynamic_slice(s, (2, 1), (2, 3))
//   c = lax.dynamic_update_slice(s, zeros((1, 2)), (3, 4)); d = concatenate([a, b[:, :2]], 1)
//   e = lax.pad(s[:2, :2], 0., ((1, 0, 1), (0, 2, 0)))
//   f = sum(d * d) + sum(c * 2) + sum(e ** 3); value and grad
//   lax.dynamic_slice(s, (3, 5), (2, 2)) clamps the start to (2, 4).
TEST(UserProgramsTest, SlicingUpdatesAndPaddingMatchJax) {
  Tensor s = Det({4, 6}, 0.8);
  auto i32 = [](int32_t v) { return Tensor::FromArray(Array::Scalar<int32_t>(v)); };
  auto f = [&](Tensor s) {
    Tensor a = Slice(s, {1, 0}, {4, 6}, {2, 3});
    Tensor b = DynamicSlice(s, {i32(2), i32(1)}, {2, 3});
    Tensor c = DynamicUpdateSlice(s, Zeros({1, 2}), {i32(3), i32(4)});
    Tensor d = Concatenate({a, Slice(b, {0, 0}, {2, 2})}, 1);
    Tensor e = Pad(Slice(s, {0, 0}, {2, 2}), 0.0, {{1, 0, 1}, {0, 2, 0}});
    return Sum(d * d) + Sum(c * 2.0) + Sum(IntegerPow(e, 3));
  };
  StatusOr<std::vector<Tensor>> r = ValueAndGrad(f).Call({s});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectValues((*r)[0], {10.590437}, 1e-5);
  ExpectValues((*r)[1], {3.5552001, 5,         2,          2, 2, 2, 2.8448, 2.9075, 2,         3.46,      2, 2,
                         2,         1.0799999, 0.15999997, 2, 2, 2, 3.48,   4,      3.5799999, 2.4200001, 0, 0},
               1e-5, {4, 6});
  ExpectValues(DynamicSlice(s, {i32(3), i32(5)}, {2, 2}), {-0.54, 0.13, -0.47, -0.93}, 1e-6, {2, 2});
}

// ---------------------------------------------------------------------------------------------
// 18b. Negative dynamic indices count from the end (lax's allow_negative_indices). JAX:
//   dynamic_slice(arange(5.), (-2,), (2,)) = [3, 4]
//   dynamic_update_slice(arange(5.), [9, 8], (-3,)) = [0, 1, 9, 8, 4]
//   jit(grad(lambda s, i: sum(dynamic_slice(s, (i, 1), (2, 3)) ** 2)))(s, int32(-1)): row -1 is
//   row 3, clamped to 2 (s = det((4, 6), .8))
TEST(UserProgramsTest, NegativeDynamicIndicesCountFromTheEnd) {
  auto i32 = [](int32_t v) { return Tensor::FromArray(Array::Scalar<int32_t>(v)); };
  Tensor v5 = Astype(Arange(0, 5), DType::kF32);
  ExpectValues(DynamicSlice(v5, {i32(-2)}, {2}), {3, 4}, 0);
  ExpectValues(DynamicUpdateSlice(v5, F32({2}, {9, 8}), {i32(-3)}), {0, 1, 9, 8, 4}, 0);
  Tensor s = Det({4, 6}, 0.8);
  auto f = [&](Tensor s, Tensor i) { return Sum(IntegerPow(DynamicSlice(s, {i, i32(1)}, {2, 3}), 2)); };
  Tensor g = Jit(Grad(f))(s, i32(-1));
  ExpectValues(g, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.92, -1.84, -1.9, 0, 0, 0, 2, 1.58, 0.42, 0, 0}, 1e-6,
               {4, 6});
}

// ---------------------------------------------------------------------------------------------
// 19. jax.vjp of a two-output function with explicit cotangents. JAX:
//   vf(x, w) = (tanh(x @ w), sum(w)); x = det((2, 3), 1.4); w = det((3, 2), 2.4)
//   bwd(([[1, -1], [.5, 2]], 3.))
TEST(UserProgramsTest, VjpWithTwoOutputsMatchesJax) {
  auto vf = [](const std::vector<Tensor>& a) { return std::vector<Tensor>{Tanh(Matmul(a[0], a[1])), Sum(a[1])}; };
  StatusOr<VjpResult> r = Vjp(vf, {Det({2, 3}, 1.4), Det({3, 2}, 2.4)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectValues(r->outputs[0], {-0.14085717, -0.7283951, 0.81943661, 0.83402026}, 1e-6);
  StatusOr<std::vector<Tensor>> ct = r->backward({F32({2, 2}, {1, -1, 0.5, 2}), Tensor::Scalar(3.0)});
  ASSERT_TRUE(ct.ok()) << ct.status().ToString();
  ExpectValues((*ct)[0], {0.64773071, -0.1378454, -0.68884718, 0.13605085, -0.69684374, -0.36981395}, 1e-5, {2, 3});
  ExpectValues((*ct)[1], {3.9128661, 2.3221667, 3.7000291, 2.0666072, 3.1624761, 2.2484405}, 1e-5, {3, 2});
  // A cotangent that does not match its output is an error naming both (JAX: "Shape of
  // cotangent input to vjp pullback function ... must be the same as ...").
  StatusOr<std::vector<Tensor>> wrong_shape = r->backward({Ones({2, 3}), Tensor::Scalar(3.0)});
  ASSERT_FALSE(wrong_shape.ok());
  EXPECT_THAT(wrong_shape.status().message(), HasSubstr("cotangent 0 is f32[2,3]"));
  EXPECT_THAT(wrong_shape.status().message(), HasSubstr("output 0 is f32[2,2]"));
  StatusOr<std::vector<Tensor>> wrong_dtype = r->backward({Ones({2, 2}, DType::kBF16), Tensor::Scalar(3.0)});
  ASSERT_FALSE(wrong_dtype.ok());
  EXPECT_THAT(wrong_dtype.status().message(), HasSubstr("cotangent 0 is bf16[2,2]"));
}

// ---------------------------------------------------------------------------------------------
// 20. Mistakes give Status errors naming the problem, never an abort.
TEST(UserProgramsTest, MistakesAreClearErrors) {
  Tensor a = Ones({3, 4}), b = Ones({5});
  Tensor bad_add = a + b;
  ASSERT_FALSE(bad_add.ok());
  EXPECT_THAT(bad_add.status().message(), HasSubstr("do not broadcast"));
  Tensor bad_mm = Matmul(a, Ones({3, 2}));
  ASSERT_FALSE(bad_mm.ok());
  EXPECT_THAT(bad_mm.status().message(), HasSubstr("contracted dims 4 and 3"));
  // The error travels through later ops and out of Jit and Grad.
  JitFunction f = Jit([](Tensor x) { return Sum(x + Ones({5})); }, {.name = "bad"});
  Tensor y = f(a);
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("do not broadcast"));
  Tensor g = Grad([](Tensor x) { return Sum(x + Ones({5})); })(a);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("do not broadcast"));
  // Grad of a non-scalar function and with respect to an integer argument.
  Tensor ns = Grad([](Tensor x) { return x * 2.0; })(Ones({3}));
  ASSERT_FALSE(ns.ok());
  EXPECT_THAT(ns.status().message(), HasSubstr("scalar"));
  Tensor gi = Grad([](Tensor x) { return Sum(Astype(x, DType::kF32)); })(Arange(0, 3));
  ASSERT_FALSE(gi.ok());
  EXPECT_THAT(gi.status().message(), HasSubstr("int"));
  // A tracer stored outside its Jit and used afterwards.
  Tensor leaked;
  JitFunction leaky = Jit(
      [&](Tensor x) {
        leaked = x * 2.0;
        return x;
      },
      {.name = "leaky"});
  ASSERT_TRUE(leaky(Ones({2})).ok());
  Tensor use = leaked + 1.0;
  ASSERT_FALSE(use.ok());
  EXPECT_THAT(use.status().message(), HasSubstr("leaky"));
  EXPECT_FALSE(leaked.value().ok());
  // Lax-level ops do not promote: a dtype mismatch is named.
  Tensor dus = DynamicUpdateSlice(Ones({4}), Ones({2}, DType::kS32), {Tensor::FromArray(Array::Scalar<int32_t>(0))});
  ASSERT_FALSE(dus.ok());
  EXPECT_THAT(dus.status().message(), HasSubstr("dynamic_update_slice"));
  // Reshape to a size that does not fit, a bad reduction axis, a bad transpose.
  Tensor rs = Reshape(a, {5, -1});
  ASSERT_FALSE(rs.ok());
  EXPECT_THAT(rs.status().message(), HasSubstr("reshape"));
  Tensor ax = Sum(a, {2});
  ASSERT_FALSE(ax.ok());
  EXPECT_THAT(ax.status().message(), HasSubstr("reduce_sum"));
  Tensor tr = Transpose(a, {0, 0});
  ASSERT_FALSE(tr.ok());
  // A tracer leaked from one Jit and used inside another trace, or leaked from Grad and used
  // eagerly, names the trace it came from.
  JitFunction later = Jit([&](Tensor x) { return x + leaked; }, {.name = "later"});
  Tensor in_later = later(Ones({2}));
  ASSERT_FALSE(in_later.ok());
  EXPECT_THAT(in_later.status().message(), HasSubstr("Jit(leaky)"));
  Tensor from_grad;
  ASSERT_TRUE(Grad([&](Tensor x) {
                from_grad = x;
                return Sum(x);
              })(Ones({2}))
                  .ok());
  Tensor eager = from_grad * 2.0;
  ASSERT_FALSE(eager.ok());
  EXPECT_THAT(eager.status().message(), HasSubstr("used after that trace ended"));
  // An uninitialized Tensor, repeated reduction axes, a slice past the end, squeezing a dim
  // that is not 1.
  EXPECT_THAT((Tensor() + 1.0).status().message(), HasSubstr("uninitialized Tensor"));
  EXPECT_THAT(Sum(a, {0, 0}).status().message(), HasSubstr("not distinct"));
  EXPECT_THAT(Slice(Ones({4}), {2}, {6}).status().message(), HasSubstr("outside f32[4]"));
  EXPECT_THAT(Squeeze(a, {0}).status().message(), HasSubstr("only size-1 dims"));
  // Eager arrays on two different meshes; Pmap inside a trace.
  StatusOr<Mesh> m42 = Mesh::Create({"a", "b"}, {4, 2});
  StatusOr<Mesh> m8 = Mesh::Create({"x"}, {8});
  ASSERT_TRUE(m42.ok() && m8.ok());
  Tensor on42 = DevicePut(Ones({8, 2}), *MakeSharding(*m42, "P('a')"));
  Tensor on8 = DevicePut(Ones({8, 2}), *MakeSharding(*m8, "P('x')"));
  EXPECT_THAT((on42 + on8).status().message(), HasSubstr("two meshes"));
  Tensor pm = Jit([](Tensor x) {
    StatusOr<Tensor> r = Pmap([](const std::vector<Tensor>& v) { return v; }, x, 0);
    return r.ok() ? *r : Tensor::FromStatus(r.status());
  })(Ones({2}));
  EXPECT_THAT(pm.status().message(), HasSubstr("inside a trace"));
  // A Jit called with the wrong number of arguments.
  JitFunction two = Jit([](Tensor x, Tensor y) { return x + y; }, {.name = "two"});
  Tensor one = two(a);
  ASSERT_FALSE(one.ok());
  EXPECT_THAT(one.status().message(), HasSubstr("takes 2 arguments"));
}

}  // namespace
}  // namespace user_programs_test
}  // namespace xs::fe
