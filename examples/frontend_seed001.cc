// Seed 001's custom `Add` (a torch.autograd.Function whose backward returns ones for both
// inputs) with the C++ front end's CustomVjp, checked like the notebook: the output x + y, and
// the gradients of loss = sum(Add(x, y)) are the backward's ones. A second loss, sum(3 Add(x, y)),
// shows the custom rule is the one used: native autodiff would give 3s, the custom backward 1s;
// the same loss with a plain `+` gives 3s.
#include <cmath>
#include <iostream>

#include "xshard/frontend/grad.h"

using namespace xs::fe;  // NOLINT: an example

xs::Status Run() {
  TensorFn add = CustomVjp(
      [](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] + a[1]}; },  // forward
      [](const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] + a[1]}; },  // fwd: no residuals
      [](const std::vector<Tensor>& a) {  // bwd(grad_output): ones like the inputs
        return std::vector<Tensor>{Ones(a[0].dims()), Ones(a[0].dims())};
      });
  Tensor x = Ones({1, 1});
  Tensor y = Tensor::FromArray(xs::Array::FromVector<float>({1, 1}, {0.1028f}));
  XS_ASSIGN_OR_RETURN(xs::Array out, add({x, y})[0].value());
  for (double scale : {1.0, 3.0}) {
    auto custom = [&](Tensor a, Tensor b) { return Sum(scale * add({a, b})[0]); };
    auto native = [&](Tensor a, Tensor b) { return Sum(scale * (a + b)); };
    XS_ASSIGN_OR_RETURN(std::vector<Tensor> g, Grad(custom, {0, 1}).Call({x, y}));
    XS_ASSIGN_OR_RETURN(std::vector<Tensor> n, Grad(native, {0, 1}).Call({x, y}));
    XS_ASSIGN_OR_RETURN(xs::Array gx, g[0].value());
    XS_ASSIGN_OR_RETURN(xs::Array gy, g[1].value());
    XS_ASSIGN_OR_RETURN(xs::Array nx, n[0].value());
    std::cout << "loss = sum(" << scale << " * Add(x, y)): x.grad " << gx.ToString() << " y.grad "
              << gy.ToString() << " (native autodiff: " << nx.ToString() << ")\n";
    if (gx.GetDouble(0) != 1 || gy.GetDouble(0) != 1 || nx.GetDouble(0) != scale) {
      return xs::Internal("gradients differ from the custom backward's ones / native ", scale);
    }
  }
  std::cout << "output: " << out.ToString() << "\n";
  if (std::abs(out.GetDouble(0) - 1.1028) > 1e-6) return xs::Internal("x + y is not 1.1028");
  return xs::OkStatus();
}

int main() {
  xs::Status s = Run();
  if (!s.ok()) std::cerr << s.ToString() << "\n";
  return s.ok() ? 0 : 1;
}
