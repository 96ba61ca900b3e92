// Demo section for seed 002 (pjit on mesh x=4, y=2 with per-device buffers) and the helpers every
// section uses to show a sharding and per-device buffers.
#include <iostream>

#include "xshard/sharding/geometry.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/demo.h"

namespace xs::tools {

StatusOr<NamedSharding> Named(const Mesh& mesh, std::string_view spec) {
  XS_ASSIGN_OR_RETURN(PartitionSpec p, PartitionSpec::Parse(spec));
  return NamedSharding::Create(mesh, std::move(p));
}

namespace {

Status Seed002Pjit(DemoContext& ctx) {
  XS_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create({"x", "y"}, {4, 2}));
  std::cout << "device_mesh = " << mesh.ToString() << "\n\n";
  Array data = Array::Iota(DType::kS32, {8, 4});
  std::cout << "data = jnp.arange(8 * 4).reshape(8, 4)\n" << data.ToString() << "\n\n";
  XS_ASSIGN_OR_RETURN(NamedSharding xy, Named(mesh, "P('x', 'y')"));
  std::cout << "pjit(lambda x: x, out_axis_resources=P('x', 'y')):\n";
  XS_RETURN_IF_ERROR(ShowSharding(ctx, "output", data.shape(), xy));
  XS_RETURN_IF_ERROR(ShowDeviceBuffers(data, xy));

  XS_ASSIGN_OR_RETURN(NamedSharding rows, Named(mesh, "P(('x', 'y'), None)"));
  Array eye(DType::kF32, {8, 8});
  for (int64_t i = 0; i < 8; ++i) eye.SetDouble(i * 8 + i, 1.0);
  std::cout << "\nM = jnp.eye(8) with spec = P(('x', 'y'), None):\n";
  XS_RETURN_IF_ERROR(ShowSharding(ctx, "M", eye.shape(), rows));
  XS_RETURN_IF_ERROR(ShowDeviceBuffers(eye, rows));
  return OkStatus();
}

}  // namespace

Status ShowSharding(DemoContext& ctx, const std::string& name, const Shape& shape,
                    const NamedSharding& sharding, const VisualizeOptions* options) {
  XS_ASSIGN_OR_RETURN(HloSharding hlo, sharding.ToHloSharding(shape.rank()));
  std::ostream& out = *ctx.out;
  out << name << ": " << shape.ToString() << "  " << sharding.ToString() << "\n";
  out << "  sharding=" << Retile(hlo, /*iota=*/false).ToString();
  HloSharding iota = Retile(hlo, /*iota=*/true);
  if (!(iota.ToString() == Retile(hlo, false).ToString())) out << "  = " << iota.ToString();
  out << "\n";
  XS_ASSIGN_OR_RETURN(std::string drawing,
                      VisualizeSharding(shape.dims(), sharding, options ? *options : ctx.visualize));
  out << drawing;
  return OkStatus();
}

Status ShowDeviceBuffers(const Array& array, const NamedSharding& sharding) {
  XS_ASSIGN_OR_RETURN(std::vector<Array> pieces, DevicePut(array, sharding));
  for (size_t d = 0; d < pieces.size(); ++d) {
    std::cout << "Device " << d << " has buffer:\n" << pieces[d].ToString() << "\n";
  }
  XS_ASSIGN_OR_RETURN(Array back, Gather(pieces, sharding, array.dims()));
  if (!(back == array)) return Internal("gathered array differs from the original");
  std::cout << "(gathered back from the " << pieces.size() << " devices: equal to the original)\n";
  return OkStatus();
}

std::vector<DemoSection> ShardingDemoSections() {
  return {
      {"seed002-pjit", "Seed 002 (pjit): out_axis_resources on mesh x=4, y=2, per-device buffers",
       Seed002Pjit},
  };
}

}  // namespace xs::tools
