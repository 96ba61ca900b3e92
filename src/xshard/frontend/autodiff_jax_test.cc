// Gradients of composite functions (MLP loss, softmax cross-entropy, max + avg pooling,
// conv + relu + max pool, a custom_vjp with a user backward) against the f64 values and gradients
// JAX 0.10.2 computed on the same inputs (tests/data/autodiff/grad_values.txt, made by
// tests/tools/gen_autodiff_refs.py), run by the front end and by the host interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/autodiff_interp_test.h"
#include "xshard/frontend/jit.h"
#include "xshard/frontend/tensor.h"

namespace xs::fe {
namespace {

using namespace adtest;  // NOLINT: test support

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
                          c.Op("broadcast_in_dim", {b1},
                               {{"shape", IntList{4, 5}}, {"broadcast_dimensions", IntList{1}}})});
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
    return c.Op("broadcast_in_dim", {v},
                {{"shape", IntList{4, 3}}, {"broadcast_dimensions", IntList{0}}});
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
  Atom mx = c.Op("reduce_window_max", {x},
                 {{"window_dimensions", IntList{1, 2, 2, 1}},
                  {"window_strides", IntList{1, 2, 2, 1}},
                  {"padding", IntLists{{0, 0}, {0, 0}, {0, 0}, {0, 0}}}});
  Atom av = c.Op("reduce_window_sum", {x},
                 {{"window_dimensions", IntList{1, 3, 3, 1}},
                  {"window_strides", IntList{1, 1, 1, 1}},
                  {"padding", IntLists{{0, 0}, {1, 1}, {1, 1}, {0, 0}}}});
  c.Scalar(c.Op(
      "add", {c.Sum(c.Op("mul", {mx, w})), c.Sum(c.Op("integer_pow", {av}, {{"y", int64_t{2}}}))}));
  CheckAgainstJax(c, LoadJaxValues()["pool"]);
}

TEST(AutodiffJaxTest, ConvReluMaxPool) {
  Case c;  // conv_pool(k, x, c): NHWC / HWIO conv, SAME padding, relu, 2x2 max pool
  Atom k = c.In(Fill({3, 3, 3, 4}, 0));
  Atom x = c.In(Fill({2, 6, 6, 3}, 1));
  Atom w = c.In(Fill({2, 3, 3, 4}, 2), /*wrt=*/false);
  Atom y = c.Op("conv_general_dilated", {x, k},
                {{"window_strides", IntList{1, 1}},
                 {"padding", IntLists{{1, 1}, {1, 1}}},
                 {"lhs_dilation", IntList{1, 1}},
                 {"rhs_dilation", IntList{1, 1}},
                 {"dimension_numbers", IntLists{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}}},
                 {"feature_group_count", int64_t{1}},
                 {"batch_group_count", int64_t{1}},
                 {"precision", Param{}},
                 {"preferred_element_type", Param{}}});
  Atom relu = c.Op("max", {y, F64(0.0)});
  Atom p = c.Op("reduce_window_max", {relu},
                {{"window_dimensions", IntList{1, 2, 2, 1}},
                 {"window_strides", IntList{1, 2, 2, 1}},
                 {"padding", IntLists{{0, 0}, {0, 0}, {0, 0}, {0, 0}}}});
  c.Scalar(c.Sum(c.Op("mul", {p, w})));
  CheckAgainstJax(c, LoadJaxValues()["conv_pool"]);
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
  Atom s = c.Op("custom_vjp_call", {x, y},
                {{"call_jaxpr", Closed(add)},
                 {"fwd_jaxpr", Closed(add)},
                 {"bwd_jaxpr", Closed(bwd)},
                 {"num_res", int64_t{0}}});
  c.Scalar(c.Sum(c.Op("mul", {s, x})));
  CheckAgainstJax(c, LoadJaxValues()["custom_vjp"]);
}

// The front end's Tensor ops traced (TraceJaxpr), then GradJaxpr on that trace: the rules meet
// the parameters and broadcasting the tracer really emits (SAME conv pads, pools, numpy
// broadcasting in LogSoftmax, Mean's division).
TEST(AutodiffJaxTest, CnnTracedFromTensorOps) {
  TensorFn fn = [](const std::vector<Tensor>& a) -> std::vector<Tensor> {
    Tensor y = AvgPool(Relu(Conv(a[3], a[0])), {2, 2}, {2, 2});
    y = MaxPool(Relu(Conv(y, a[1])), {2, 2}, {2, 2});
    Tensor logp = LogSoftmax(Matmul(Reshape(y, {2, 16}), a[2]), -1);
    return {-Mean(Sum(a[4] * logp, {1}))};
  };
  std::vector<HostValue> host = {Fill({3, 3, 1, 4}, 0), Fill({3, 3, 4, 4}, 1), Fill({16, 3}, 2),
                                 Fill({2, 8, 8, 1}, 3),
                                 HostValue{{2, 3}, {0, 0, 1, 1, 0, 0}}};
  std::vector<Tensor> args;
  for (const HostValue& h : host) {
    args.push_back(Tensor::FromArray(Array::FromVector<double>(h.dims, h.v)));
  }
  auto f = TraceJaxpr(fn, args, "cnn");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto g = GradJaxpr(*f, {0, 1, 2}, /*with_value=*/true);
  ASSERT_TRUE(g.ok()) << g.status().ToString() << "\n" << PrintJaxpr(*f);
  const JaxValues ref = LoadJaxValues()["cnn"];
  ASSERT_EQ(ref.grads.size(), 3u);
  for (bool on_host : {false, true}) {
    SCOPED_TRACE(on_host ? "host interpreter" : "xshard");
    auto out = on_host ? Interpret(*g, host) : Xshard(*g).Run(host);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_NEAR((*out)[0].v[0], ref.value, 1e-10);
    for (int64_t a = 0; a < 3; ++a) {
      const std::vector<double>& want = ref.grads.at(a);
      ASSERT_EQ((*out)[1 + a].v.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR((*out)[1 + a].v[i], want[i], 1e-10 * std::max(1.0, std::fabs(want[i])))
            << "argnum " << a << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace xs::fe
