// `xshard demo` sections seed002 and seed001-custom-add: seed 002's notebook through the C++
// front end (jaxprs of sigmoid and grad(sigmoid), the HLO of jit(sigmoid) on ones(10),
// grad(sigmoid)(1.0), pmap(jnp.sum) with each device's buffer, pjit per-device buffers) and seed
// 001's custom Add with its own backward.
#include <cmath>
#include <iostream>

#include "xshard/frontend/grad.h"
#include "xshard/tools/demo.h"

namespace xs::tools {
namespace {

using fe::Tensor;

Tensor Sigmoid(Tensor x) { return 1 / (1 + fe::Exp(-x)); }

Status Seed002(DemoContext& ctx) {
  std::ostream& out = *ctx.out;
  out << "def sigmoid(x): return 1 / (1 + jnp.exp(-x))   // C++: 1 / (1 + Exp(-x))\n\n";
  out << "make_jaxpr(sigmoid)(1.0)\n";
  XS_ASSIGN_OR_RETURN(fe::Jaxpr j, fe::MakeJaxpr(Sigmoid)(1.0));
  out << fe::PrintJaxpr(j) << "\n\nmake_jaxpr(sigmoid)(jnp.ones(10))\n";
  XS_ASSIGN_OR_RETURN(j, fe::MakeJaxpr(Sigmoid)(fe::Ones({10})));
  out << fe::PrintJaxpr(j) << "\n\nmake_jaxpr(grad(sigmoid))(1.0)\n";
  XS_ASSIGN_OR_RETURN(j, fe::MakeJaxpr(fe::Grad(Sigmoid))(1.0));
  out << fe::PrintJaxpr(j) << "\n\njit(sigmoid).lower(jnp.ones(10)).compiler_ir('hlo')\n";
  fe::JitFunction sigmoid = fe::Jit(Sigmoid, {.name = "sigmoid"});
  XS_ASSIGN_OR_RETURN(fe::Lowered lowered, sigmoid.Lower(fe::Ones({10})));
  out << lowered.AsText() << "\njit(grad(sigmoid)).lower(1.0).compiler_ir('hlo')\n";
  XS_ASSIGN_OR_RETURN(fe::Lowered lowered_grad,
                      fe::Jit(fe::Grad(Sigmoid), {.name = "sigmoid"}).Lower(Tensor::Scalar(1.0)));
  out << lowered_grad.AsText() << "\n";
  XS_ASSIGN_OR_RETURN(Array g, fe::Grad(Sigmoid)(1.0).value());
  out << "grad(sigmoid)(1.0) = " << g.ToString() << "\n\n";

  auto sum = [](const std::vector<Tensor>& a) { return std::vector<Tensor>{fe::Sum(a[0])}; };
  for (int64_t axis : {0, 1}) {
    out << "jax.pmap(jnp.sum, in_axes=" << axis << ")(np.ones((8, 4)))\n";
    XS_ASSIGN_OR_RETURN(Tensor r, fe::Pmap(sum, fe::Ones({8, 4}), axis, "sum"));
    XS_ASSIGN_OR_RETURN(Array rv, r.value());
    out << "Result = " << rv.ToString() << "\n";
    XS_ASSIGN_OR_RETURN(std::vector<Array> buffers, r.AddressableShards());
    for (size_t i = 0; i < buffers.size(); ++i) {
      out << "Device " << i << ": " << buffers[i].ToString() << "\n";
    }
    out << "\n";
  }

  out << "pjit(lambda x: x, out_axis_resources=P('x', 'y'))(jnp.arange(32).reshape(8, 4)) "
         "on mesh x=4, y=2\n";
  XS_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create({"x", "y"}, {4, 2}));
  XS_ASSIGN_OR_RETURN(NamedSharding pxy, fe::MakeSharding(mesh, "P('x', 'y')"));
  fe::JitFunction identity = fe::Jit([](Tensor x) { return x; },
                                     {.out_shardings = {pxy}, .name = "lambda"});
  Tensor data = fe::Reshape(fe::Arange(0, 32), {8, 4});
  XS_ASSIGN_OR_RETURN(std::vector<Array> buffers, identity(data).AddressableShards());
  for (size_t d = 0; d < buffers.size(); ++d) {
    out << "Device " << d << " has buffer:\n" << buffers[d].ToString() << "\n\n";
  }
  if (std::abs(g.GetDouble(0) - 0.19661193) > 1e-6) {
    return Internal("grad(sigmoid)(1.0) = ", g.GetDouble(0), ", want 0.19661193");
  }
  return OkStatus();
}

Status Seed001CustomAdd(DemoContext& ctx) {
  std::ostream& out = *ctx.out;
  out << "class Add(torch.autograd.Function): forward x + y, backward ones for both inputs\n"
      << "C++: CustomVjp(fn, fwd, bwd) binds one custom_vjp_call equation\n\n";
  fe::TensorFn add = fe::CustomVjp(
      [](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] + a[1]}; },
      [](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] + a[1]}; },
      [](const std::vector<Tensor>& a) {
        return std::vector<Tensor>{fe::Ones(a[0].dims()), fe::Ones(a[0].dims())};
      });
  auto loss = [&](Tensor x, Tensor y) { return fe::Sum(add({x, y})[0]); };
  Tensor x = fe::Ones({1, 1});
  Tensor y = Tensor::FromArray(Array::FromVector<float>({1, 1}, {0.1028f}));
  XS_ASSIGN_OR_RETURN(fe::Jaxpr j, fe::MakeJaxpr(loss)(x, y));
  out << "make_jaxpr(lambda x, y: Add(x, y).sum())\n" << fe::PrintJaxpr(j) << "\n\n";
  XS_ASSIGN_OR_RETURN(Array o, add({x, y})[0].value());
  XS_ASSIGN_OR_RETURN(std::vector<Tensor> grads, fe::Grad(loss, {0, 1}).Call({x, y}));
  XS_ASSIGN_OR_RETURN(Array gx, grads[0].value());
  XS_ASSIGN_OR_RETURN(Array gy, grads[1].value());
  XS_ASSIGN_OR_RETURN(Array yv, y.value());
  out << "x: " << Array::Full(DType::kF32, {1, 1}, 1).ToString() << "\nx.grad: " << gx.ToString()
      << "\ny: " << yv.ToString() << "\ny.grad: " << gy.ToString() << "\noutput: " << o.ToString()
      << "\n";
  if (gx.GetDouble(0) != 1 || gy.GetDouble(0) != 1) return Internal("custom Add gradients not 1");
  return OkStatus();
}

}  // namespace

std::vector<DemoSection> FrontendDemoSections() {
  return {{"seed002", "Seed 002 through the C++ front end: jaxprs, jit HLO, grad, pmap, pjit",
           Seed002},
          {"seed001-custom-add", "Seed 001's custom Add with its own backward (CustomVjp)",
           Seed001CustomAdd}};
}

}  // namespace xs::tools
