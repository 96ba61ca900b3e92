// Grad / ValueAndGrad / CustomVjp wired to the front end: seed 002's grad(sigmoid) jaxpr and
// values, jit(grad(sigmoid)), seed 001's custom Add backward, against hand-computed values.
#include "xshard/frontend/grad.h"
#include "xshard/frontend/seed002_jaxprs_test.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace xs::fe {
namespace {

using ::testing::HasSubstr;

Tensor Sigmoid(Tensor x) { return 1 / (1 + Exp(-x)); }

TEST(GradTest, MakeJaxprOfGradSigmoidAsSeed002) {
  StatusOr<Jaxpr> j = MakeJaxpr(Grad(Sigmoid))(1.0);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(PrintJaxpr(*j),
            testing::kGradSigmoidJaxpr);
}

TEST(GradTest, GradSigmoidValueByHand) {
  // sigma'(1) = sigma(1) (1 - sigma(1)) = 0.7310585786 * 0.2689414214 = 0.1966119332.
  Tensor g = Grad(Sigmoid)(1.0);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_NEAR(g.value()->GetDouble(0), 0.1966119332, 1e-6);
  JitFunction jg = Jit(Grad(Sigmoid), {.name = "sigmoid"});
  EXPECT_NEAR(jg(1.0).value()->GetDouble(0), 0.1966119332, 1e-6);
  StatusOr<Lowered> l = jg.Lower(Tensor::Scalar(1.0));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  // Seed 002's jit(grad(sigmoid)) HLO: integer_pow[y=-2] as multiply(d, d) and divide(1, .).
  EXPECT_THAT(l->AsText(), HasSubstr("multiply(add"));
  EXPECT_THAT(l->AsText(), HasSubstr("divide(constant"));
}

TEST(GradTest, ValueAndGradOfMeanSquaredErrorByHand) {
  // f(w) = mean((x w - y)^2) with x = [1, 2], y = [3, 1], w = 1: residuals [-2, 1], f = 2.5,
  // f'(w) = mean(2 r x) = (2 * -2 * 1 + 2 * 1 * 2) / 2 = 0.
  Tensor x = Tensor::FromArray(Array::FromVector<float>({2}, {1, 2}));
  Tensor y = Tensor::FromArray(Array::FromVector<float>({2}, {3, 1}));
  auto f = [&](Tensor w) { return Mean(IntegerPow(x * w - y, 2)); };
  StatusOr<std::vector<Tensor>> r = ValueAndGrad(f).Call({Tensor::Scalar(1.0)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR((*r)[0].value()->GetDouble(0), 2.5, 1e-6);
  EXPECT_NEAR((*r)[1].value()->GetDouble(0), 0.0, 1e-6);
  // At w = 2: r = [-1, 3], f = 5, f' = (2 * -1 * 1 + 2 * 3 * 2) / 2 = 5.
  r = ValueAndGrad(f).Call({Tensor::Scalar(2.0)});
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR((*r)[1].value()->GetDouble(0), 5.0, 1e-5);
}

// Seed 001's Add: forward x + y, backward returns ones for both inputs whatever the incoming
// gradient. With loss = sum(3 * Add(x, y)) native autodiff would give 3s; the custom rule gives 1s.
TEST(GradTest, CustomVjpUsesTheUserBackward) {
  TensorFn add = CustomVjp(
      [](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] + a[1]}; },
      [](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] + a[1]}; },
      [](const std::vector<Tensor>& a) {
        return std::vector<Tensor>{Ones(a[0].dims()), Ones(a[0].dims())};
      });
  auto loss = [&](Tensor x, Tensor y) { return Sum(3.0 * add({x, y})[0]); };
  Tensor x = Ones({1, 1});
  Tensor y = Tensor::FromArray(Array::FromVector<float>({1, 1}, {0.1028f}));
  Tensor out = add({x, y})[0];
  EXPECT_NEAR(out.value()->GetDouble(0), 1.1028, 1e-6);
  StatusOr<std::vector<Tensor>> g = Grad(loss, {0, 1}).Call({x, y});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(*(*g)[0].value(), Array::FromVector<float>({1, 1}, {1}));
  EXPECT_EQ(*(*g)[1].value(), Array::FromVector<float>({1, 1}, {1}));
  StatusOr<Jaxpr> j = MakeJaxpr(loss)(x, y);
  ASSERT_TRUE(j.ok());
  EXPECT_THAT(PrintJaxpr(*j), HasSubstr("custom_vjp_call["));
  EXPECT_THAT(PrintJaxpr(*j), HasSubstr("num_res=0"));
}

TEST(GradTest, NonScalarOutputIsAnError) {
  Tensor g = Grad([](Tensor x) { return Exp(x); })(Ones({3}));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("scalar"));
}

TEST(GradTest, MaxPoolGradientGoesToEachWindowsMaximum) {
  // One 2x2 window over [[1, 2], [3, 6]]: d sum(max_pool) / dx is 1 at the 6, 0 elsewhere.
  Tensor x = Tensor::FromArray(Array::FromVector<float>({1, 2, 2, 1}, {1, 2, 3, 6}));
  Tensor g = Grad([](Tensor x) { return Sum(MaxPool(x, {2, 2}, {2, 2})); })(x);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(*g.value(), Array::FromVector<float>({1, 2, 2, 1}, {0, 0, 0, 1}));
}

TEST(GradTest, VjpOfSquareIsTwiceXTimesCotangent) {
  Tensor x = Tensor::FromArray(Array::FromVector<float>({3}, {1, -2, 3}));
  StatusOr<VjpResult> r = Vjp([](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{a[0] * a[0]};
  }, {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r->outputs[0].value(), Array::FromVector<float>({3}, {1, 4, 9}));
  StatusOr<std::vector<Tensor>> ct =
      r->backward({Tensor::FromArray(Array::FromVector<float>({3}, {1, 1, 0.5}))});
  ASSERT_TRUE(ct.ok()) << ct.status().ToString();
  EXPECT_EQ(*(*ct)[0].value(), Array::FromVector<float>({3}, {2, -4, 3}));
  EXPECT_FALSE(r->backward({}).ok());
}

TEST(GradTest, JitOfGradOfTwoArgumentsKeepsBothArguments) {
  // d/dx (x * y) = y, d/dy = x at (3, 5).
  JitFunction f = Jit(Grad([](Tensor x, Tensor y) { return x * y; }, {0, 1}));
  StatusOr<std::vector<Tensor>> g = f.Call({Tensor::Scalar(3), Tensor::Scalar(5)});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((*g)[0].value()->GetDouble(0), 5);
  EXPECT_EQ((*g)[1].value()->GetDouble(0), 3);
}

TEST(GradTest, GradThroughAJittedFunction) {
  JitFunction f = Jit(Sigmoid, {.name = "sigmoid"});
  Tensor g = Grad(f)(1.0);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_NEAR(g.value()->GetDouble(0), 0.1966119332, 1e-6);
  StatusOr<Jaxpr> j = MakeJaxpr(Grad(f))(1.0);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_THAT(PrintJaxpr(*j), HasSubstr("pjit["));
}

// JAX's closure conversion: a loss closing over tracers of the enclosing jit (here x and y)
// differentiates only w.r.t. its argument. d/dw mean((x w - y)^2) at x = [1, 2], y = [3, 1],
// w = 2 is 5 (see ValueAndGradOfMeanSquaredErrorByHand).
TEST(GradTest, GradInsideJitClosesOverOuterTracers) {
  JitFunction step = Jit([](Tensor w, Tensor x, Tensor y) {
    return Grad([&](Tensor v) { return Mean(IntegerPow(x * v - y, 2)); })(w);
  }, {.name = "step"});
  Tensor x = Tensor::FromArray(Array::FromVector<float>({2}, {1, 2}));
  Tensor y = Tensor::FromArray(Array::FromVector<float>({2}, {3, 1}));
  Tensor g = step(Tensor::Scalar(2.0), x, y);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_NEAR(g.value()->GetDouble(0), 5.0, 1e-5);
  StatusOr<Jaxpr> j = MakeJaxpr([&](Tensor a, Tensor b) {
    return Jit([&](Tensor v) { return v * b; }, {.name = "closure"})(a);
  })(Ones({2}), Ones({2}));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  // The closed-over b is the pjit's second operand.
  EXPECT_THAT(PrintJaxpr(*j), HasSubstr("name=closure\n    ] a b"));
}

}  // namespace
}  // namespace xs::fe
