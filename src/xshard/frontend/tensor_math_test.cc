// The jnp / jax.nn / lax math of tensor_math.cc against JAX 0.10.2: values and gradients (numbers
// printed by JAX for the same inputs), the jaxprs JAX traces, finite-difference gradients in f64,
// and the functions under Jit with a NamedSharding over several devices.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "xshard/frontend/grad.h"
#include "xshard/frontend/jit.h"
#include "xshard/frontend/tensor.h"

namespace xs::fe {
namespace {

using ::testing::HasSubstr;

Array F32(std::vector<int64_t> dims, std::vector<double> v) {
  Array a(DType::kF32, dims);
  for (size_t i = 0; i < v.size(); ++i) a.SetDouble(static_cast<int64_t>(i), v[i]);
  return a;
}
Array S32(std::vector<int64_t> dims, std::vector<double> v) {
  Array a(DType::kS32, dims);
  for (size_t i = 0; i < v.size(); ++i) a.SetDouble(static_cast<int64_t>(i), v[i]);
  return a;
}

// The inputs of the JAX script: x = [[0.5, -1.2, 2.0], [1.5, 0.3, -0.7]] and the weights w of
// the gradients' loss sum(f(x) * w), w's values repeated to f(x)'s size (np.resize).
Tensor X() { return Tensor::FromArray(F32({2, 3}, {0.5, -1.2, 2.0, 1.5, 0.3, -0.7})); }
Tensor WeightsLike(const std::vector<int64_t>& dims) {
  const double w[] = {1.0, -2.0, 0.5, 0.25, 3.0, -1.5};
  Array a(DType::kF32, dims);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, w[i % 6]);
  return Tensor::FromArray(a);
}

void ExpectValues(const Tensor& t, const std::vector<double>& want, double tol, const std::string& what) {
  StatusOr<Array> v = t.value();
  ASSERT_TRUE(v.ok()) << what << ": " << v.status().ToString();
  ASSERT_EQ(v->num_elements(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    double got = v->GetDouble(static_cast<int64_t>(i));
    EXPECT_NEAR(got, want[i], tol * (1 + std::fabs(want[i]))) << what << " element " << i;
  }
}

struct MathCase {
  const char* name;
  std::function<Tensor(Tensor)> fn;
  std::vector<double> value, grad;  // JAX's
};

std::vector<MathCase> Cases() {
  return {
      {"square",
       [](Tensor x) { return Square(x); },
       {0.25, 1.440000057220459, 4.0, 2.25, 0.09000000357627869, 0.4899999797344208},
       {1.0, 4.800000190734863, 2.0, 0.75, 1.8000000715255737, 2.0999999046325684}},
      {"log1p",
       [](Tensor x) { return Log1p(Abs(x)); },
       {0.40546509623527527, 0.7884573936462402, 1.0986123085021973, 0.9162907600402832, 0.2623642683029175,
        0.5306282639503479},
       {0.6666666865348816, 0.9090908765792847, 0.1666666716337204, 0.10000000149011612, 2.307692289352417,
        0.882352888584137}},
      {"expm1",
       [](Tensor x) { return Expm1(x); },
       {0.6487212777137756, -0.6988058090209961, 6.389056205749512, 3.481688976287842, 0.3498587906360626,
        -0.5034146904945374},
       {1.6487212181091309, -0.6023883819580078, 3.694528102874756, 1.1204222440719604, 4.049576282501221,
        -0.7448779344558716}},
      {"erf",
       [](Tensor x) { return Erf(x); },
       {0.5204998850822449, -0.9103140234947205, 0.9953222274780273, 0.966105043888092, 0.328626811504364,
        -0.6778011322021484},
       {0.8787826299667358, -0.5346887111663818, 0.01033349335193634, 0.02973257377743721, 3.093782901763916,
        -1.0369123220443726}},
      {"erfc",
       [](Tensor x) { return Erfc(x); },
       {0.4795001745223999, 1.9103139638900757, 0.004677734803408384, 0.0338948555290699, 0.6713732481002808,
        1.6778011322021484},
       {-0.8787826299667358, 0.5346887111663818, -0.01033349335193634, -0.02973257377743721, -3.093782901763916,
        1.0369123220443726}},
      {"clip",
       [](Tensor x) { return Clip(x, -1.0, 1.0); },
       {0.5, -1.0, 1.0, 1.0, 0.30000001192092896, -0.699999988079071},
       {1.0, -0.0, 0.0, 0.0, 3.0, -1.5}},
      {"softmax",
       [](Tensor x) { return Softmax(x, -1); },
       {0.17654205858707428, 0.03225132077932358, 0.7912065982818604, 0.708216667175293, 0.21331074833869934,
        0.07847264409065247},
       {0.08692177385091782, -0.08087479323148727, -0.006046950817108154, -0.3181857764720917, 0.4907688498497009,
        -0.17258311808109283}},
      {"logsumexp",
       [](Tensor x) { return Logsumexp(x, {1}); },
       {2.234196186065674, 1.8450052738189697},
       {0.17654205858707428, 0.03225132077932358, 0.7912065982818604, -1.416433334350586, -0.4266214966773987,
        -0.15694528818130493}},
      {"var",
       [](Tensor x) { return Variance(x, {0}, 1); },
       {0.5, 1.125, 3.6449997425079346},
       {-1.0, 3.0, 1.3499999046325684, 1.0, -3.0, -1.3499999046325684}},
      {"std",
       [](Tensor x) { return Std(x); },
       {1.1224972009658813},
       {0.014847848564386368, -0.2375655472278595, 0.2375655472278595, 0.16332630813121796, -0.01484784297645092,
        -0.16332629323005676}},
      {"prod",
       [](Tensor x) { return Prod(x, {1}); },
       {-1.2000000476837158, -0.3149999976158142},
       {-2.4000000953674316, 1.0, -0.6000000238418579, 0.42000001668930054, 2.0999999046325684, -0.9000000357627869}},
      {"gelu",
       [](Tensor x) { return Gelu(x); },
       {0.3457140028476715, -0.1382972002029419, 1.9545977115631104, 1.3995715379714966, 0.18537092208862305,
        -0.16942983865737915},
       {0.8673699498176575, 0.23545223474502563, 0.543049693107605, 0.2819277048110962, 2.1968865394592285,
        -0.03546416014432907}},
      {"gelu_exact",
       [](Tensor x) { return Gelu(x, false); },
       {0.3457312285900116, -0.13808365166187286, 1.9544997215270996, 1.3997892141342163, 0.1853734254837036,
        -0.16937457025051117},
       {0.8674951195716858, 0.2359071522951126, 0.5426158905029297, 0.28186729550361633, 2.1969833374023438,
        -0.035078853368759155}},
      {"silu",
       [](Tensor x) { return Silu(x); },
       {0.3112296760082245, -0.2777702808380127, 1.7615940570831299, 1.226361632347107, 0.172332763671875,
        -0.2322685569524765},
       {0.7399612069129944, -0.03600376844406128, 0.5453921556472778, 0.26032352447509766, 1.9433400630950928,
        -0.26491984724998474}},
      {"softplus",
       [](Tensor x) { return Softplus(x); },
       {0.9740769863128662, 0.26328244805336, 2.1269280910491943, 1.7014132738113403, 0.8543552756309509,
        0.4031860828399658},
       {0.622459352016449, -0.4629504382610321, 0.44039851427078247, 0.20439362525939941, 1.7233275175094604,
        -0.49771830439567566}},
      {"cumsum",
       [](Tensor x) { return Cumsum(x, 1); },
       {0.5, -0.7000000476837158, 1.2999999523162842, 1.5, 1.7999999523162842, 1.0999999046325684},
       {-0.5, -1.5, 0.5, 1.75, 1.5, -1.5}},
      {"cumsum_rev",
       [](Tensor x) { return Cumsum(x, 1, true); },
       {1.2999999523162842, 0.7999999523162842, 2.0, 1.0999999046325684, -0.3999999761581421, -0.699999988079071},
       {1.0, -1.0, -0.5, 0.25, 3.25, 1.75}},
      {"cumprod",
       [](Tensor x) { return Cumprod(x, 1); },
       {0.5, -0.6000000238418579, -1.2000000476837158, 1.5, 0.45000001788139343, -0.3149999976158142},
       {2.200000047683716, -0.5, -0.30000001192092896, 1.4650001525878906, 6.075000286102295, -0.675000011920929}},
      {"cummax",
       [](Tensor x) { return Cummax(x, 1); },
       {0.5, 0.5, 2.0, 1.5, 1.5, 1.5},
       {-1.0, 0.0, 0.5, 1.75, 0.0, 0.0}},
      {"cummax_rev0",
       [](Tensor x) { return Cummax(x, 0, true); },
       {1.5, 0.30000001192092896, 2.0, 1.5, 0.30000001192092896, -0.699999988079071},
       {0.0, 0.0, 0.5, 1.25, 1.0, -1.5}},
      {"cummin",
       [](Tensor x) { return Cummin(x, -1); },
       {0.5, -1.2000000476837158, -1.2000000476837158, 1.5, 0.30000001192092896, -0.699999988079071},
       {1.0, -1.5, 0.0, 0.25, 3.0, -1.5}},
      {"take",
       [](Tensor x) {
         return Take(x, Tensor::FromArray(S32({3}, {2, 0, -1})), 1);
       },
       {2.0, 0.5, 2.0, -0.699999988079071, 1.5, -0.699999988079071},
       {-2.0, 0.0, 1.5, 3.0, 0.0, -1.25}},
      {"take_along",
       [](Tensor x) {
         return TakeAlongAxis(x, Tensor::FromArray(S32({2, 3}, {2, 0, 1, 1, 1, 0})), 1);
       },
       {2.0, 0.5, -1.2000000476837158, 0.30000001192092896, 0.30000001192092896, 1.5},
       {-2.0, 0.5, 1.0, -1.5, 3.25, 0.0}},
      {"sort",
       [](Tensor x) { return Sort(x, 1); },
       {-1.2000000476837158, 0.5, 2.0, -0.699999988079071, 0.30000001192092896, 1.5},
       {-2.0, 1.0, 0.5, -1.5, 3.0, 0.25}},
      {"sort0",
       [](Tensor x) { return Sort(x, 0); },
       {0.5, -1.2000000476837158, -0.699999988079071, 1.5, 0.30000001192092896, 2.0},
       {1.0, -2.0, -1.5, 0.25, 3.0, 0.5}},
      {"topk",
       [](Tensor x) { return TopK(x, 2).first; },
       {2.0, 0.5, 1.5, 0.30000001192092896},
       {-2.0, 0.0, 1.0, 0.5, 0.25, 0.0}},
  };
}

TEST(TensorMathTest, ValuesAndGradientsMatchJax) {
  for (const MathCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    Tensor eager = c.fn(X());
    ExpectValues(eager, c.value, 2e-6, "eager");
    JitFunction jitted = Jit(c.fn, {.name = c.name});
    ExpectValues(jitted(X()), c.value, 2e-6, "jit");
    Tensor w = WeightsLike(eager.dims());
    auto fn = c.fn;
    Tensor g = Grad([fn, w](Tensor x) { return Sum(fn(x) * w); })(X());
    ExpectValues(g, c.grad, 2e-5, "grad");
  }
}

TEST(TensorMathTest, IntegerResultsMatchJax) {
  ExpectValues(Argmin(X(), 1), {1, 2}, 0, "argmin");
  ExpectValues(Argsort(X(), 1), {1, 0, 2, 2, 1, 0}, 0, "argsort");
  ExpectValues(TopK(X(), 2).second, {2, 0, 0, 1}, 0, "top_k indices");
  Tensor hot = OneHot(Tensor::FromArray(S32({4}, {0, 2, 1, 5})), 4);
  EXPECT_EQ(hot.dims(), (std::vector<int64_t>{4, 4}));
  ExpectValues(hot, {1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}, 0, "one_hot");
  EXPECT_EQ(Argmin(X(), 1).dtype(), DType::kS32);
  // Integers: cumsum accumulates in int32, as jnp.
  Tensor c = Cumsum(Tensor::FromArray(S32({4}, {1, 2, 3, 4})));
  ExpectValues(c, {1, 3, 6, 10}, 0, "int cumsum");
  ExpectValues(Prod(Tensor::FromArray(S32({4}, {1, 2, 3, 4}))), {24}, 0, "int prod");
}

// JAX: jnp.sort([3, -nan, -0.0, 0.0, -1, nan]) = [-1, -0, 0, 3, nan, nan] (NaNs of either sign
// last, -0.0 and 0.0 equal, the stable order kept); argsort [4, 2, 3, 0, 1, 5].
TEST(TensorMathTest, SortPutsNaNsLastAndKeepsSignedZerosInOrder) {
  Tensor x = Tensor::FromArray(F32({6}, {3, std::copysign(NAN, -1.0), -0.0, 0.0, -1, NAN}));
  StatusOr<Array> s = Sort(x).value();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->GetDouble(0), -1);
  EXPECT_TRUE(std::signbit(s->GetDouble(1)) && s->GetDouble(1) == 0);
  EXPECT_TRUE(!std::signbit(s->GetDouble(2)) && s->GetDouble(2) == 0);
  EXPECT_EQ(s->GetDouble(3), 3);
  EXPECT_TRUE(std::isnan(s->GetDouble(4)) && std::isnan(s->GetDouble(5)));
  ExpectValues(Argsort(x), {4, 2, 3, 0, 1, 5}, 0, "argsort");
  // lax.top_k compares the raw total order: +NaN first, -NaN last (JAX: indices [5, 0]).
  ExpectValues(TopK(x, 2).second, {5, 0}, 0, "top_k of NaNs");
}

// JAX: grad(jnp.prod)([2, 0, 3, 4]) = [0, 24, 0, 0] (no division by the zero).
TEST(TensorMathTest, ProdGradientWithAZeroMatchesJax) {
  Tensor x = Tensor::FromArray(F32({4}, {2, 0, 3, 4}));
  ExpectValues(Grad([](Tensor x) { return Prod(x); })(x), {0, 24, 0, 0}, 0, "d prod");
  Tensor m = Tensor::FromArray(F32({2, 3}, {1, 2, 3, 4, 0, 6}));
  // d/dx of prod over both axes: prod of the others (only the zero's entry is non-zero).
  ExpectValues(Grad([](Tensor x) { return Prod(x); })(m), {0, 0, 0, 0, 144, 0}, 0, "d prod 2d");
  ExpectValues(Grad([](Tensor x) { return Sum(Prod(x, {0})); })(m), {4, 0, 6, 1, 2, 3}, 0, "d prod axis 0");
}

// The gradients of f64 programs against central differences of the same programs.
void CheckNumericGradient(const std::string& what, const std::function<Tensor(Tensor)>& f, const Array& x0,
                          double tol = 1e-6) {
  SCOPED_TRACE(what);
  auto loss = [f](Tensor x) {
    Tensor y = f(x);
    Array w(DType::kF64, y.dims());
    for (int64_t i = 0; i < w.num_elements(); ++i) w.SetDouble(i, 0.5 + 0.37 * i);
    return Sum(y * Tensor::FromArray(w));
  };
  StatusOr<Array> g = Grad(loss)(Tensor::FromArray(x0)).value();
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  JitFunction jl = Jit(loss, {.name = "loss"});
  const double h = 1e-6;
  for (int64_t i = 0; i < x0.num_elements(); ++i) {
    Array plus = x0, minus = x0;
    plus.SetDouble(i, x0.GetDouble(i) + h);
    minus.SetDouble(i, x0.GetDouble(i) - h);
    StatusOr<Array> fp = jl(Tensor::FromArray(plus)).value();
    StatusOr<Array> fm = jl(Tensor::FromArray(minus)).value();
    ASSERT_TRUE(fp.ok() && fm.ok());
    double fd = (fp->GetDouble(0) - fm->GetDouble(0)) / (2 * h);
    EXPECT_NEAR(g->GetDouble(i), fd, tol * std::max(1.0, std::fabs(fd))) << "element " << i;
  }
}

TEST(TensorMathTest, GradientsMatchFiniteDifferences) {
  Array x(DType::kF64, {3, 4});
  const double v[] = {0.3, -1.1, 2.2, 0.7, -0.4, 1.6, -2.3, 0.9, 1.2, -0.6, 0.1, 2.5};
  for (int i = 0; i < 12; ++i) x.SetDouble(i, v[i]);
  CheckNumericGradient(
      "square", [](Tensor x) { return Square(x); }, x);
  CheckNumericGradient(
      "log1p", [](Tensor x) { return Log1p(Square(x)); }, x);
  CheckNumericGradient(
      "expm1", [](Tensor x) { return Expm1(x); }, x);
  CheckNumericGradient(
      "erf", [](Tensor x) { return Erf(x); }, x);
  CheckNumericGradient(
      "softmax", [](Tensor x) { return Softmax(x, 0); }, x);
  CheckNumericGradient(
      "logsumexp",
      [](Tensor x) {
        return Logsumexp(x, {0, 1});
      },
      x);
  CheckNumericGradient(
      "std", [](Tensor x) { return Std(x, {1}, 1); }, x);
  CheckNumericGradient(
      "prod", [](Tensor x) { return Prod(x, {0}); }, x);
  CheckNumericGradient(
      "gelu", [](Tensor x) { return Gelu(x) + Gelu(x, false); }, x);
  CheckNumericGradient(
      "silu softplus", [](Tensor x) { return Silu(x) * Softplus(x); }, x);
  CheckNumericGradient(
      "cumsum", [](Tensor x) { return Cumsum(x, 1, true); }, x);
  CheckNumericGradient(
      "cumprod", [](Tensor x) { return Cumprod(x, 0); }, x);
  CheckNumericGradient(
      "cumprod reverse", [](Tensor x) { return Cumprod(x, 1, true); }, x);
  Array z = x;
  z.SetDouble(5, 0.0);  // a zero: JAX's cumprod gradient is exact there, and so is this one
  CheckNumericGradient(
      "cumprod with a zero", [](Tensor x) { return Cumprod(x, 1); }, z);
  CheckNumericGradient(
      "cumprod reverse with a zero", [](Tensor x) { return Cumprod(x, 0, true); }, z);
  CheckNumericGradient(
      "cummin", [](Tensor x) { return Cummin(x, 1); }, x);
  CheckNumericGradient(
      "take",
      [](Tensor x) {
        return Take(x, Tensor::FromArray(S32({2, 2}, {3, 0, 0, -2})), 1);
      },
      x);
  CheckNumericGradient(
      "sort", [](Tensor x) { return Sort(x, 0) * Sort(x, 1); }, x);
  CheckNumericGradient(
      "top_k", [](Tensor x) { return TopK(x, 3).first; }, x);
}

// Second derivatives through Take: the gradient's scatter-add is differentiated as a gather.
// f(x) = sum(take(x, idx)^3) has d f / dx_j = 3 sum_{i: idx_i = j} x_j^2, so the gradient of
// sum(w * df/dx) is 6 w_j x_j times the count of j in idx.
TEST(TensorMathTest, SecondDerivativeThroughTake) {
  Tensor idx = Tensor::FromArray(S32({4}, {2, 0, 2, -1}));
  auto f = [idx](Tensor x) { return Sum(IntegerPow(Take(x, idx), 3)); };
  Tensor x = Tensor::FromArray(F32({3}, {0.5, -1.0, 2.0}));
  Tensor w = Tensor::FromArray(F32({3}, {1.0, 2.0, 3.0}));
  ExpectValues(Grad(f)(x), {0.75, 0, 36}, 1e-6, "first");
  Tensor h = Grad([&](Tensor x) { return Sum(Grad(f)(x) * w); })(x);
  // counts: index 0 once, 1 never, 2 three times (2, 2, -1).
  ExpectValues(h, {6 * 1.0 * 0.5 * 1, 0, 6 * 3.0 * 2.0 * 3}, 1e-6, "second");
}

// The jaxprs JAX 0.10.2 prints for the same calls (make_jaxpr), in this printer's conventions
// (literals without their type suffix, one-equation jaxprs on several lines).
TEST(TensorMathTest, JaxprsMatchJax) {
  auto text = [](auto fn, Tensor x) {
    StatusOr<Jaxpr> j = MakeJaxpr(fn)(x);
    return j.ok() ? PrintJaxpr(*j) : j.status().ToString();
  };
  Tensor x = Ones({2, 3});
  EXPECT_EQ(text([](Tensor x) { return TopK(x, 2).first; }, x),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:f32[2,2] _:i32[2,2] = top_k[axis=1 k=2] a\n"
            "  in (b,) }");
  EXPECT_EQ(text([](Tensor x) { return Argsort(x, 1); }, x),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:i32[2,3] = iota[dimension=1 dtype=int32 shape=(2, 3)] \n"
            "    _:f32[2,3] c:i32[2,3] = sort[dimension=1 is_stable=True num_keys=1] a b\n"
            "  in (c,) }");
  EXPECT_EQ(text([](Tensor x) { return Cumsum(x, 1, true); }, x),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:f32[2,3] = cumsum[axis=1 reverse=True] a\n"
            "  in (b,) }");
  EXPECT_EQ(text([](Tensor x) { return Prod(x, {1}); }, x),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:f32[2] = reduce_prod[axes=(1,)] a\n"
            "  in (b,) }");
  EXPECT_EQ(text([](Tensor x) { return Softmax(x); }, x),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:f32[2] = reduce_max[axes=(1,)] a\n"
            "    c:f32[2] = max -inf b\n"
            "    d:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] c\n"
            "    e:f32[2,1] = stop_gradient d\n"
            "    f:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3)] e\n"
            "    g:f32[2,3] = sub a f\n"
            "    h:f32[2,3] = exp g\n"
            "    i:f32[2] = reduce_sum[axes=(1,)] h\n"
            "    j:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] i\n"
            "    k:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3)] j\n"
            "    l:f32[2,3] = div h k\n"
            "  in (l,) }");
  EXPECT_EQ(text([](Tensor x) { return Gelu(x); }, x),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:f32[2,3] = integer_pow[y=3] a\n"
            "    c:f32[2,3] = mul 0.044715 b\n"
            "    d:f32[2,3] = add a c\n"
            "    e:f32[2,3] = mul 0.7978846 d\n"
            "    f:f32[2,3] = tanh e\n"
            "    g:f32[2,3] = add 1.0 f\n"
            "    h:f32[2,3] = mul 0.5 g\n"
            "    i:f32[2,3] = mul a h\n"
            "  in (i,) }");
  StatusOr<Jaxpr> take =
      MakeJaxpr([](Tensor x, Tensor i) { return Take(x, i, 1); })(x, Tensor::FromArray(S32({2}, {2, 0})));
  ASSERT_TRUE(take.ok()) << take.status().ToString();
  EXPECT_THAT(PrintJaxpr(*take), HasSubstr("gather[\n"
                                           "      dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), "
                                           "collapsed_slice_dims=(1,), start_index_map=(1,), "
                                           "operand_batching_dims=(), start_indices_batching_dims=())\n"
                                           "      fill_value=nan\n"
                                           "      indices_are_sorted=False\n"
                                           "      mode=GatherScatterMode.FILL_OR_DROP\n"
                                           "      slice_sizes=(2, 1)\n"
                                           "      unique_indices=False\n"
                                           "    ]"));
}

// Each family under Jit on 4 devices with x split by rows (P('a', None)): reductions along the
// split dim, scans along both dims, gathers, sorts and top_k.
TEST(TensorMathTest, JitWithShardingsOnFourDevices) {
  StatusOr<Mesh> mesh = Mesh::Create({"a"}, {4});
  ASSERT_TRUE(mesh.ok());
  NamedSharding rows = *MakeSharding(*mesh, "P('a', None)");
  Array xa(DType::kF32, {8, 6});
  for (int64_t i = 0; i < 48; ++i) xa.SetDouble(i, std::sin(0.7 * i) * 2);
  Tensor x = DevicePut(xa, rows);
  auto program = [](Tensor x) -> std::vector<Tensor> {
    Tensor idx = Tensor::FromArray(S32({3}, {5, 0, 2}));
    return {Softmax(x, 0),
            Logsumexp(x, {1}),
            Std(x, {0}, 1),
            Prod(x, {1}),
            Gelu(x) + Silu(x),
            Cumsum(x, 0),
            Cummax(x, 1, true),
            Take(x, idx, 1),
            Sort(x, 0),
            TopK(x, 2).first,
            Argmin(x, 0),
            Grad([](Tensor x) { return Sum(Cumprod(x, 1) * Sort(x, 0)); })(x),
            Clip(x, -0.5, 0.5) + Softplus(x) + Erf(x) + Log1p(Square(x)) + Expm1(x),
            OneHot(Argmin(x, 1), 6),
            TakeAlongAxis(x, Argsort(x, 0), 0),
            Variance(x, {0, 1})};
  };
  JitFunction sharded = Jit(program, {.in_shardings = {rows}, .name = "sharded_math"});
  JitFunction single = Jit(program, {.name = "single_math"});
  StatusOr<std::vector<Tensor>> got = sharded.Call({x});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  StatusOr<std::vector<Tensor>> want = single.Call({Tensor::FromArray(xa)});
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_EQ(got->size(), want->size());
  for (size_t k = 0; k < got->size(); ++k) {
    StatusOr<Array> w = (*want)[k].value();
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    std::vector<double> wv;
    for (int64_t i = 0; i < w->num_elements(); ++i) wv.push_back(w->GetDouble(i));
    ExpectValues((*got)[k], wv, 1e-5, "result " + std::to_string(k));
  }
  // Spot checks against values computed by hand: column 0's cumsum and row 0's top 2.
  StatusOr<Array> cs = (*got)[5].value();
  ASSERT_TRUE(cs.ok());
  double acc = 0;
  for (int64_t r = 0; r < 8; ++r) {
    acc += xa.GetDouble(r * 6);
    EXPECT_NEAR(cs->GetDouble(r * 6), acc, 1e-5);
  }
  StatusOr<Lowered> lowered = sharded.Lower(x);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  EXPECT_THAT(lowered->AsText(), HasSubstr("reduce-window("));
  EXPECT_THAT(lowered->AsText(), HasSubstr("gather("));
  EXPECT_THAT(lowered->AsText(), HasSubstr("sort("));
}

// JAX's cumred_reduce_window_impl: a window spanning the axis, padded n - 1 before (after when
// reverse), which the CPU executor runs as a one-pass prefix scan (the forward form).
TEST(TensorMathTest, CumulativeReductionsLowerToPrefixScanWindows) {
  JitFunction f = Jit([](Tensor x) { return std::vector<Tensor>{Cumsum(x, 1), Cummax(x, 1, true)}; }, {.name = "cum"});
  StatusOr<Lowered> l = f.Lower(X());
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  std::string hlo = l->AsText();
  EXPECT_THAT(hlo, HasSubstr("window={size=1x3 pad=0_0x2_0}")) << hlo;
  EXPECT_THAT(hlo, HasSubstr("window={size=1x3 pad=0_0x0_2}")) << hlo;
  Array big(DType::kF32, {2, 1000});
  for (int64_t i = 0; i < 2000; ++i) big.SetDouble(i, 1.0);
  StatusOr<Array> c = Cumsum(Tensor::FromArray(big), 1).value();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->GetDouble(999), 1000.0);
  EXPECT_EQ(c->GetDouble(1500), 501.0);
}

TEST(TensorMathTest, MistakesAreClearErrors) {
  EXPECT_THAT(Softmax(X(), 2).status().ToString(), HasSubstr("axis 2 is outside f32[2,3]"));
  EXPECT_THAT(Cumsum(X(), -3).status().ToString(), HasSubstr("Cumsum: axis -3"));
  EXPECT_THAT(TopK(X(), 4).first.status().ToString(), HasSubstr("k=4 must be in 0..3"));
  EXPECT_THAT(Take(X(), X()).status().ToString(), HasSubstr("must be integers"));
  EXPECT_THAT(TakeAlongAxis(X(), Tensor::FromArray(S32({1, 3}, {0, 1, 2})), 1).status().ToString(),
              HasSubstr("must have the rank of x"));
  EXPECT_THAT(OneHot(X(), 3).status().ToString(), HasSubstr("OneHot: ids f32[2,3]"));
  EXPECT_THAT(Variance(X(), {5}).status().ToString(), HasSubstr("Variance: axis 5"));
}

}  // namespace
}  // namespace xs::fe
