// Seed 000's case 1 with the C++ front end: z = x @ y on NamedSharding'd arrays (mesh a=4, b=2,
// x P(None, 'a'), y P('a', None)), like the notebook's jax.device_put + `x @ y`. Exits 1 unless
// z is the notebook's [[16 32 48 64] ...] = 16 (i+1)(j+1) and z has one buffer per device.
#include <iostream>

#include "xshard/frontend/jit.h"

using namespace xs::fe;  // NOLINT: an example

xs::Status Run() {
  XS_ASSIGN_OR_RETURN(xs::Mesh mesh, xs::Mesh::Create({"a", "b"}, {4, 2}));
  Tensor v = Astype(Arange(1, 5), xs::DType::kF16);                  // [1 2 3 4]
  Tensor x = BroadcastTo(Reshape(v, {4, 1}), {4, 16});              // rows of 1, 2, 3, 4
  Tensor y = Transpose(x);
  XS_ASSIGN_OR_RETURN(auto x_sharding, MakeSharding(mesh, "P(None, 'a')"));
  XS_ASSIGN_OR_RETURN(auto y_sharding, MakeSharding(mesh, "P('a', None)"));
  x = DevicePut(x, x_sharding);
  y = DevicePut(y, y_sharding);
  Tensor z = Matmul(x, y);                                           // z = x @ y, partitioned
  XS_ASSIGN_OR_RETURN(xs::Array zv, z.value());
  std::cout << zv.ToString() << "\n";
  XS_ASSIGN_OR_RETURN(std::vector<xs::Array> shards, z.AddressableShards());
  std::cout << "z: " << shards.size() << " device buffers, sharding "
            << (z.sharding() ? z.sharding()->ToString() : "none") << "\n";
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      if (zv.GetDouble(i * 4 + j) != 16.0 * (i + 1) * (j + 1))
        return xs::Internal("z[", i, ",", j, "] = ", zv.GetDouble(i * 4 + j));
  if (shards.size() != 8) return xs::Internal("expected 8 device buffers");
  return xs::OkStatus();
}

int main() {
  xs::Status s = Run();
  if (!s.ok()) std::cerr << s.ToString() << "\n";
  return s.ok() ? 0 : 1;
}
