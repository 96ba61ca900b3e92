// Seed 002's flows with the C++ front end: the jaxprs of sigmoid and grad(sigmoid), the HLO of
// jit(sigmoid) and jit(grad(sigmoid)), grad(sigmoid)(1.0), the flax CNN's forward pass written
// with Conv / AvgPool / Dense, pmap(jnp.sum) with in_axes 0 and 1 and each device's buffer, and
// the pjit flows (identity to P('x', 'y'), square's HLO, dot with P(('x', 'y'), None)). Exits 1
// unless every printed value equals the notebook's (or a hand-computed value).
#include <cmath>
#include <fstream>
#include <iostream>

#include "xshard/frontend/grad.h"

using namespace xs::fe;  // NOLINT: an example

namespace {

Tensor Sigmoid(Tensor x) { return 1 / (1 + Exp(-x)); }

xs::Status Expect(bool ok, const std::string& what) {
  return ok ? xs::OkStatus() : xs::Internal("mismatch: ", what);
}

// Deterministic parameters in [-0.1, 0.1) (a stand-in for flax's initializers).
Tensor Param(std::vector<int64_t> dims, uint32_t seed) {
  xs::Array a(xs::DType::kF32, dims);
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    a.SetDouble(i, (seed >> 8) / double(1 << 24) * 0.2 - 0.1);
  }
  return Tensor::FromArray(a);
}

// The notebook's CNN: Conv(32, 3x3) relu avg_pool Conv(64, 3x3) relu avg_pool flatten
// Dense(256) relu Dense(10) log_softmax, on one unbatched 28x28x1 image as flax treats it.
Tensor Cnn(const std::vector<Tensor>& p, Tensor image) {
  Tensor x = ExpandDims(image, 0);                                   // 1x28x28x1
  x = Relu(Conv(x, p[0]) + p[1]);                                    // 1x28x28x32
  x = AvgPool(x, {2, 2}, {2, 2});                                    // 1x14x14x32
  x = Relu(Conv(x, p[2]) + p[3]);                                    // 1x14x14x64
  x = AvgPool(x, {2, 2}, {2, 2});                                    // 1x7x7x64
  x = Reshape(Squeeze(x, {0}), {7, -1});                             // x.reshape((x.shape[0], -1))
  x = Relu(Matmul(x, p[4]) + p[5]);                                  // 7x256
  x = Matmul(x, p[6]) + p[7];                                        // 7x10
  return LogSoftmax(x);
}

// With a directory argument, the lowered modules are also written there (DIR/NAME.hlo) for
// tests/tools/check_frontend_hlo.py, which reads them with XLA.
std::string dump_dir;
void Dump(const std::string& name, const std::string& text) {
  if (!dump_dir.empty()) std::ofstream(dump_dir + "/" + name + ".hlo") << text;
}

xs::Status Run() {
  std::cout << "# make_jaxpr(sigmoid)(1.0)\n";
  XS_ASSIGN_OR_RETURN(Jaxpr j1, MakeJaxpr(Sigmoid)(1.0));
  std::cout << PrintJaxpr(j1) << "\n";
  XS_RETURN_IF_ERROR(Expect(PrintJaxpr(j1) ==
                                "{ lambda ; a:f32[]. let\n    b:f32[] = neg a\n    c:f32[] = exp b\n"
                                "    d:f32[] = add c 1.0\n    e:f32[] = div 1.0 d\n  in (e,) }",
                            "sigmoid jaxpr"));
  std::cout << "# make_jaxpr(grad(sigmoid))(1.0)\n";
  XS_ASSIGN_OR_RETURN(Jaxpr j2, MakeJaxpr(Grad(Sigmoid))(1.0));
  std::cout << PrintJaxpr(j2) << "\n";
  XS_RETURN_IF_ERROR(Expect(PrintJaxpr(j2).find("    e:f32[] = integer_pow[y=-2] d\n") !=
                                std::string::npos, "grad(sigmoid) jaxpr"));

  std::cout << "# jit(sigmoid).lower(ones(10)).compiler_ir('hlo')\n";
  JitFunction sigmoid = Jit(Sigmoid, {.name = "sigmoid"});
  XS_ASSIGN_OR_RETURN(Lowered lowered, sigmoid.Lower(Ones({10})));
  std::cout << lowered.AsText() << "\n";
  Dump("sigmoid", lowered.AsText());
  std::cout << "# jit(grad(sigmoid)).lower(1.0)\n";
  JitFunction grad_sigmoid = Jit(Grad(Sigmoid), {.name = "sigmoid"});
  XS_ASSIGN_OR_RETURN(Lowered lowered_grad, grad_sigmoid.Lower(Tensor::Scalar(1.0)));
  std::cout << lowered_grad.AsText() << "\n";
  Dump("grad_sigmoid", lowered_grad.AsText());
  XS_ASSIGN_OR_RETURN(xs::Array g, grad_sigmoid(1.0).value());
  std::cout << "grad(sigmoid)(1.0) = " << g.ToString() << "\n";
  // sigma(1) (1 - sigma(1)) = 0.19661193.
  XS_RETURN_IF_ERROR(Expect(std::abs(g.GetDouble(0) - 0.19661193) < 1e-6, "grad(sigmoid)(1.0)"));

  std::cout << "# the CNN, jitted, on zeros((28, 28, 1))\n";
  std::vector<Tensor> params = {Param({3, 3, 1, 32}, 1), Param({32}, 2), Param({3, 3, 32, 64}, 3),
                                Param({64}, 4), Param({448, 256}, 5), Param({256}, 6),
                                Param({256, 10}, 7), Param({10}, 8)};
  JitFunction apply = Jit([](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{Cnn(std::vector<Tensor>(a.begin(), a.end() - 1), a.back())};
  }, {.name = "apply"});
  std::vector<Tensor> args = params;
  args.push_back(Zeros({28, 28, 1}));
  XS_ASSIGN_OR_RETURN(std::vector<Tensor> logits, apply.Call(args));
  XS_ASSIGN_OR_RETURN(Lowered cnn_lowered, apply.Lower(args));
  Dump("cnn", cnn_lowered.AsText());
  XS_ASSIGN_OR_RETURN(xs::Array lp, logits[0].value());
  std::cout << "log_softmax output " << logits[0].aval().ToString() << ", row 0: ";
  double total = 0;
  for (int k = 0; k < 10; ++k) total += std::exp(lp.GetDouble(k));
  std::cout << "sum(exp) = " << total << "\n";
  XS_RETURN_IF_ERROR(Expect(lp.dims() == std::vector<int64_t>{7, 10} && std::abs(total - 1) < 1e-5,
                            "CNN output shape and normalisation"));

  std::cout << "# pmap(jnp.sum, in_axes=0)(ones((8, 4))) and in_axes=1\n";
  auto sum = [](const std::vector<Tensor>& a) { return std::vector<Tensor>{Sum(a[0])}; };
  for (int64_t axis : {0, 1}) {
    XS_ASSIGN_OR_RETURN(Tensor r, Pmap(sum, Ones({8, 4}), axis, "sum"));
    XS_ASSIGN_OR_RETURN(xs::Array rv, r.value());
    std::cout << "Result = " << rv.ToString() << "\n";
    XS_ASSIGN_OR_RETURN(std::vector<xs::Array> buffers, r.AddressableShards());
    for (size_t i = 0; i < buffers.size(); ++i) {
      std::cout << "Device " << i << ": " << buffers[i].ToString() << "\n";
      XS_RETURN_IF_ERROR(Expect(buffers[i].GetDouble(0) == (axis == 0 ? 4 : 8), "pmap buffer"));
    }
    XS_RETURN_IF_ERROR(Expect(buffers.size() == (axis == 0 ? 8u : 4u), "pmap device count"));
  }

  std::cout << "# pjit(lambda x: x, out P('x', 'y')) on mesh (x=4, y=2)\n";
  XS_ASSIGN_OR_RETURN(xs::Mesh mesh, xs::Mesh::Create({"x", "y"}, {4, 2}));
  XS_ASSIGN_OR_RETURN(auto pxy, MakeSharding(mesh, "P('x', 'y')"));
  Tensor data = Reshape(Arange(0, 32), {8, 4});
  JitFunction identity = Jit([](Tensor x) { return x; },
                             {.out_shardings = {pxy}, .name = "lambda"});
  Tensor out = identity(data);
  XS_ASSIGN_OR_RETURN(std::vector<xs::Array> buffers, out.AddressableShards());
  for (size_t d = 0; d < buffers.size(); ++d) {
    std::cout << "Device " << d << " has buffer:\n" << buffers[d].ToString() << "\n";
    // Device d holds rows 2 (d / 2) .. +2 and columns 2 (d % 2) .. +2: data[r][c] = 4 r + c.
    int64_t r0 = 2 * (d / 2), c0 = 2 * (d % 2);
    XS_RETURN_IF_ERROR(Expect(buffers[d].GetDouble(0) == 4 * r0 + c0 &&
                                  buffers[d].GetDouble(3) == 4 * (r0 + 1) + c0 + 1,
                              "pjit identity buffer"));
  }

  std::cout << "# pjit(square, in/out P('x', 'y')).lower(data)\n";
  JitFunction square = Jit([](Tensor x) { return x * x; },
                           {.in_shardings = {pxy}, .out_shardings = {pxy}, .name = "square"});
  XS_ASSIGN_OR_RETURN(Lowered sq, square.Lower(data));
  std::cout << sq.AsText() << "\n";
  Dump("square", sq.AsText());
  XS_RETURN_IF_ERROR(Expect(sq.AsText().find("sharding={devices=[4,2]<=[8]}") != std::string::npos,
                            "square's parameter sharding"));

  std::cout << "# pjit(jnp.dot, in (P(('x', 'y'), None), None), out the same)(eye(8), v)\n";
  XS_ASSIGN_OR_RETURN(auto spec, MakeSharding(mesh, "P(('x', 'y'), None)"));
  Tensor eye = Astype(Eq(Reshape(Arange(0, 8), {8, 1}), Reshape(Arange(0, 8), {1, 8})),
                      xs::DType::kF32);
  Tensor v = Reshape(Arange(0, 8), {8, 1});
  JitFunction dot = Jit([](Tensor a, Tensor b) { return Matmul(a, b); },
                        {.in_shardings = {spec, std::nullopt}, .out_shardings = {spec},
                         .name = "dot"});
  XS_ASSIGN_OR_RETURN(Lowered dl, dot.Lower(eye, v));
  std::cout << dl.AsText() << "\n";
  Dump("dot", dl.AsText());
  XS_ASSIGN_OR_RETURN(std::vector<xs::Array> dot_buffers, dot(eye, v).AddressableShards());
  for (size_t d = 0; d < dot_buffers.size(); ++d) {
    std::cout << d << " " << dot_buffers[d].ToString() << "\n";
    XS_RETURN_IF_ERROR(Expect(dot_buffers[d].GetDouble(0) == double(d), "pjit dot buffer"));
  }
  return xs::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) dump_dir = argv[1];
  xs::Status s = Run();
  if (!s.ok()) std::cerr << s.ToString() << "\n";
  return s.ok() ? 0 : 1;
}
