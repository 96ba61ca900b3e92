// The front end against JAX 0.10.2 (tests/data/frontend/jax_refs.txt, written by
// tests/tools/gen_frontend_refs.py): seed 002's CNN forward, and value_and_grad of an MLP loss with
// three SGD steps run sharded (data and tensor parallel) on 8 devices.
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "xshard/frontend/grad.h"

namespace xs::fe {
namespace {

std::map<std::string, std::vector<double>> LoadRefs() {
  std::map<std::string, std::vector<double>> refs;
  std::ifstream in(std::string(XSHARD_SOURCE_DIR) + "/tests/data/frontend/jax_refs.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string name;
    size_t n = 0;
    s >> name >> n;
    std::vector<double> v(n);
    for (double& x : v) s >> x;
    refs[name] = v;
  }
  return refs;
}

// The generator gen_frontend_refs.py uses.
Array Lcg(std::vector<int64_t> dims, uint32_t seed, double lo, double hi) {
  Array a(DType::kF32, dims);
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    a.SetDouble(i, static_cast<float>((seed >> 8) / double(1 << 24) * (hi - lo) + lo));
  }
  return a;
}

void ExpectClose(const Array& got, const std::vector<double>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got.GetDouble(static_cast<int64_t>(i)), want[i], tol * (1 + std::abs(want[i])))
        << what << " element " << i;
  }
}

TEST(JaxRefTest, Seed002CnnForward) {
  auto refs = LoadRefs();
  ASSERT_TRUE(refs.count("cnn_log_softmax")) << "tests/data/frontend/jax_refs.txt missing";
  std::vector<std::vector<int64_t>> shapes = {{3, 3, 1, 32}, {32}, {3, 3, 32, 64}, {64},
                                              {448, 256},    {256}, {256, 10},     {10}};
  std::vector<Tensor> args;
  for (size_t i = 0; i < shapes.size(); ++i)
    args.push_back(Tensor::FromArray(Lcg(shapes[i], static_cast<uint32_t>(i + 1), -0.1, 0.1)));
  args.push_back(Tensor::FromArray(Lcg({28, 28, 1}, 99, -1, 1)));
  JitFunction cnn = Jit([](const std::vector<Tensor>& p) {
    Tensor x = ExpandDims(p[8], 0);
    x = AvgPool(Relu(Conv(x, p[0]) + p[1]), {2, 2}, {2, 2});
    x = AvgPool(Relu(Conv(x, p[2]) + p[3]), {2, 2}, {2, 2});
    x = Reshape(Squeeze(x, {0}), {7, -1});
    x = Relu(Matmul(x, p[4]) + p[5]);
    return std::vector<Tensor>{LogSoftmax(Matmul(x, p[6]) + p[7])};
  }, {.name = "apply"});
  StatusOr<std::vector<Tensor>> out = cnn.Call(args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectClose(*(*out)[0].value(), refs["cnn_log_softmax"], 1e-4, "cnn");
}

TEST(JaxRefTest, ShardedMlpValueAndGradSteps) {
  auto refs = LoadRefs();
  ASSERT_TRUE(refs.count("mlp_loss_0"));
  StatusOr<Mesh> mesh = Mesh::Create({"data", "model"}, {4, 2});
  ASSERT_TRUE(mesh.ok());
  NamedSharding batch = *MakeSharding(*mesh, "P('data', None)");
  NamedSharding cols = *MakeSharding(*mesh, "P(None, 'model')");
  NamedSharding rows = *MakeSharding(*mesh, "P('model', None)");
  auto loss = [](Tensor w1, Tensor w2, Tensor x, Tensor y) {
    return Mean(IntegerPow(Matmul(Relu(Matmul(x, w1)), w2) - y, 2));
  };
  JitFunction step = Jit(
      [&](Tensor w1, Tensor w2, Tensor x, Tensor y) -> std::vector<Tensor> {
        StatusOr<std::vector<Tensor>> vg = ValueAndGrad(loss, {0, 1}).Call({w1, w2, x, y});
        if (!vg.ok()) return {Tensor::FromStatus(vg.status())};
        return {(*vg)[0], (*vg)[2], w1 - 0.1 * (*vg)[1], w2 - 0.1 * (*vg)[2]};
      },
      {.in_shardings = {cols, rows, batch, batch}, .name = "step"});
  Tensor w1 = DevicePut(Lcg({16, 64}, 11, -0.3, 0.3), cols);
  Tensor w2 = DevicePut(Lcg({64, 4}, 12, -0.3, 0.3), rows);
  Tensor x = DevicePut(Lcg({32, 16}, 13, -1, 1), batch);
  Tensor y = DevicePut(Lcg({32, 4}, 14, -1, 1), batch);
  for (int i = 0; i < 3; ++i) {
    StatusOr<std::vector<Tensor>> out = step.Call({w1, w2, x, y});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::string k = std::to_string(i);
    ExpectClose(*(*out)[0].value(), refs["mlp_loss_" + k], 1e-5, "loss " + k);
    ExpectClose(*(*out)[1].value(), refs["mlp_grad_w2_" + k], 1e-4, "grad w2 " + k);
    w1 = (*out)[2];
    w2 = (*out)[3];
  }
  ExpectClose(*w1.value(), refs["mlp_w1_after_3"], 1e-5, "w1 after 3 steps");
}

// Through the lowering of autodiff's rev (the input cotangent of a strided SAME conv).
TEST(JaxRefTest, ConvGradients) {
  auto refs = LoadRefs();
  ASSERT_TRUE(refs.count("conv_grad_x"));
  Tensor x = Tensor::FromArray(Lcg({1, 5, 5, 2}, 21, -1, 1));
  Tensor k = Tensor::FromArray(Lcg({3, 3, 2, 3}, 22, -1, 1));
  auto loss = [](Tensor x, Tensor k) { return Sum(IntegerPow(Conv(x, k, {2, 2}), 2)); };
  StatusOr<std::vector<Tensor>> g = Grad(loss, {0, 1}).Call({x, k});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ExpectClose(*(*g)[0].value(), refs["conv_grad_x"], 1e-4, "d/dx");
  ExpectClose(*(*g)[1].value(), refs["conv_grad_k"], 1e-4, "d/dk");
}

}  // namespace
}  // namespace xs::fe
