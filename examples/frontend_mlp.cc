// An MLP training step with data and tensor parallelism on mesh (data=4, model=2): the batch is
// split over 'data', the hidden layer over 'model' (W1 P(None, 'model'), W2 P('model', None)),
// and one jitted step computes the loss and its gradients (ValueAndGrad) and applies SGD. Exits 1
// unless the first loss equals the one computed here by plain loops, the loss goes down by more
// than half in 30 steps, and the weights keep their shardings.
#include <cmath>
#include <fstream>
#include <iostream>

#include "xshard/frontend/grad.h"

using namespace xs::fe;  // NOLINT: an example

namespace {

constexpr int64_t kBatch = 32, kIn = 16, kHidden = 64, kOut = 4;

xs::Array Random(std::vector<int64_t> dims, uint32_t seed, double scale) {
  xs::Array a(xs::DType::kF32, dims);
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    a.SetDouble(i, ((seed >> 8) / double(1 << 24) * 2 - 1) * scale);
  }
  return a;
}

// mean((relu(x W1) W2 - y)^2) by loops.
double LoopLoss(const xs::Array& w1, const xs::Array& w2, const xs::Array& x, const xs::Array& y) {
  double total = 0;
  for (int64_t b = 0; b < kBatch; ++b) {
    std::vector<double> h(kHidden, 0);
    for (int64_t j = 0; j < kHidden; ++j) {
      for (int64_t i = 0; i < kIn; ++i) h[j] += x.GetDouble(b * kIn + i) * w1.GetDouble(i * kHidden + j);
      h[j] = std::max(h[j], 0.0);
    }
    for (int64_t k = 0; k < kOut; ++k) {
      double o = 0;
      for (int64_t j = 0; j < kHidden; ++j) o += h[j] * w2.GetDouble(j * kOut + k);
      double d = o - y.GetDouble(b * kOut + k);
      total += d * d;
    }
  }
  return total / (kBatch * kOut);
}

Tensor Loss(Tensor w1, Tensor w2, Tensor x, Tensor y) {
  Tensor pred = Matmul(Relu(Matmul(x, w1)), w2);
  return Mean(IntegerPow(pred - y, 2));
}

// With a directory argument, the train step's global module is written to DIR/train_step.hlo
// (for tests/tools/check_frontend_hlo.py).
xs::Status Run(const char* dump_dir) {
  XS_ASSIGN_OR_RETURN(xs::Mesh mesh, xs::Mesh::Create({"data", "model"}, {4, 2}));
  XS_ASSIGN_OR_RETURN(auto batch, MakeSharding(mesh, "P('data', None)"));
  XS_ASSIGN_OR_RETURN(auto cols, MakeSharding(mesh, "P(None, 'model')"));
  XS_ASSIGN_OR_RETURN(auto rows, MakeSharding(mesh, "P('model', None)"));
  XS_ASSIGN_OR_RETURN(auto replicated, MakeSharding(mesh, "P()"));

  xs::Array w1v = Random({kIn, kHidden}, 1, 0.3), w2v = Random({kHidden, kOut}, 2, 0.3);
  xs::Array xv = Random({kBatch, kIn}, 3, 1.0), teacher = Random({kIn, kOut}, 4, 0.5);
  xs::Array yv(xs::DType::kF32, {kBatch, kOut});  // a linear teacher: y = x T
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t k = 0; k < kOut; ++k) {
      double s = 0;
      for (int64_t i = 0; i < kIn; ++i) s += xv.GetDouble(b * kIn + i) * teacher.GetDouble(i * kOut + k);
      yv.SetDouble(b * kOut + k, s);
    }
  double want_first = LoopLoss(w1v, w2v, xv, yv);

  Tensor w1 = DevicePut(w1v, cols), w2 = DevicePut(w2v, rows);
  Tensor x = DevicePut(xv, batch), y = DevicePut(yv, batch);
  JitFunction step = Jit(
      [](Tensor w1, Tensor w2, Tensor x, Tensor y) -> std::vector<Tensor> {
        xs::StatusOr<std::vector<Tensor>> vg = ValueAndGrad(Loss, {0, 1}).Call({w1, w2, x, y});
        if (!vg.ok()) return {Tensor::FromStatus(vg.status())};
        const std::vector<Tensor>& r = *vg;
        return {r[0], w1 - 0.1 * r[1], w2 - 0.1 * r[2]};
      },
      {.in_shardings = {cols, rows, batch, batch},
       .out_shardings = {replicated, cols, rows},
       .name = "train_step"});

  XS_ASSIGN_OR_RETURN(Lowered lowered, step.Lower(w1, w2, x, y));
  if (dump_dir != nullptr) std::ofstream(std::string(dump_dir) + "/train_step.hlo") << lowered.AsText();
  std::string spmd = lowered.Compile().AsText();
  size_t all_reduces = 0;
  for (size_t at = spmd.find("all-reduce("); at != std::string::npos;
       at = spmd.find("all-reduce(", at + 1)) {
    ++all_reduces;
  }
  std::cout << "train step SPMD program: " << all_reduces << " all-reduces\n";

  std::vector<double> losses;
  for (int i = 0; i < 30; ++i) {
    XS_ASSIGN_OR_RETURN(std::vector<Tensor> out, step.Call({w1, w2, x, y}));
    XS_ASSIGN_OR_RETURN(xs::Array loss, out[0].value());
    losses.push_back(loss.GetDouble(0));
    w1 = out[1];
    w2 = out[2];
    if (i % 5 == 0 || i == 29) std::cout << "step " << i << " loss " << losses.back() << "\n";
  }
  std::cout << "first loss " << losses[0] << " (loops: " << want_first << ")\n";
  if (std::abs(losses[0] - want_first) > 1e-4 * want_first) {
    return xs::Internal("first loss ", losses[0], " differs from the loops' ", want_first);
  }
  if (!(losses.back() < 0.5 * losses[0])) {
    return xs::Internal("loss did not halve: ", losses[0], " -> ", losses.back());
  }
  if (!w1.sharding() || w1.sharding()->spec().ToString() != "P(None, 'model')") {
    return xs::Internal("W1 lost its sharding");
  }
  XS_ASSIGN_OR_RETURN(std::vector<xs::Array> shards, w1.AddressableShards());
  std::cout << "W1 " << w1.sharding()->ToString() << ", device 0 holds "
            << xs::Shape(shards[0].dtype(), shards[0].dims()).ToString() << "\n";
  if (all_reduces == 0) return xs::Internal("expected all-reduces in the SPMD step");
  return xs::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  xs::Status s = Run(argc > 1 ? argv[1] : nullptr);
  if (!s.ok()) std::cerr << s.ToString() << "\n";
  return s.ok() ? 0 : 1;
}
