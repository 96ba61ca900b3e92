// Seed 000's "inner axes" case through the jit API, like jax.jit(jnp.matmul) on sharded inputs:
// build the global program x @ y with x P(None, 'a') and y P('a', None) on mesh a=4, b=2, let
// ShardedProgram propagate, partition and run it on 8 virtual devices, and print z. Exits 1 unless
// z is the notebook's [[16 32 48 64] ...] (16 (i+1)(j+1)) and the partitioner inserted XLA's one
// all-reduce.
#include <cstdio>
#include <iostream>

#include "xshard/core/array.h"
#include "xshard/ir/builder.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/runtime/client.h"
#include "xshard/sharding/named_sharding.h"
#include "xshard/text/printer.h"

namespace {

xs::Status Run() {
  // [jit-seed000]
  // The mesh and the shardings of the notebook's case 1.
  XS_ASSIGN_OR_RETURN(xs::Mesh mesh, xs::Mesh::Create({"a", "b"}, {4, 2}));
  XS_ASSIGN_OR_RETURN(xs::PartitionSpec x_spec, xs::PartitionSpec::Parse("P(None, 'a')"));
  XS_ASSIGN_OR_RETURN(xs::PartitionSpec y_spec, xs::PartitionSpec::Parse("P('a', None)"));
  XS_ASSIGN_OR_RETURN(xs::NamedSharding x_named, xs::NamedSharding::Create(mesh, x_spec));
  XS_ASSIGN_OR_RETURN(xs::NamedSharding y_named, xs::NamedSharding::Create(mesh, y_spec));
  XS_ASSIGN_OR_RETURN(xs::HloSharding x_sharding, x_named.ToHloSharding(/*rank=*/2));
  XS_ASSIGN_OR_RETURN(xs::HloSharding y_sharding, y_named.ToHloSharding(/*rank=*/2));

  // The global program jax.jit(jnp.matmul) lowers: z = x @ y, z's sharding left to propagation.
  xs::ModuleBuilder mb("jit_matmul");
  mb.mutable_config().num_partitions = 8;
  xs::ComputationBuilder& main = mb.AddEntry("main");
  xs::Op x = main.WithSharding(x_sharding).Parameter(0, xs::Shape(xs::DType::kF16, {4, 16}), "x");
  xs::Op y = main.WithSharding(y_sharding).Parameter(1, xs::Shape(xs::DType::kF16, {16, 4}), "y");
  main.WithName("z").Dot(x, y);
  XS_ASSIGN_OR_RETURN(std::unique_ptr<xs::Module> global, mb.Build());

  // Propagate + partition + clean up once; print what every device runs.
  XS_ASSIGN_OR_RETURN(std::unique_ptr<xs::ShardedProgram> program,
                      xs::ShardedProgram::Compile(*global, /*num_devices=*/8));
  std::cout << xs::PrintHloModule(program->spmd_module(), xs::PrintOptions::Short());

  // x = rows of 1, 2, 3, 4 (16 wide), y = x.T; run on 8 virtual devices with global arrays.
  xs::Array x_value(xs::DType::kF16, {4, 16}), y_value(xs::DType::kF16, {16, 4});
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t k = 0; k < 16; ++k) {
      x_value.SetDouble(i * 16 + k, static_cast<double>(i + 1));
      y_value.SetDouble(k * 4 + i, static_cast<double>(i + 1));
    }
  }
  xs::ClientOptions options;
  options.num_devices = 8;
  XS_ASSIGN_OR_RETURN(std::unique_ptr<xs::Client> client, xs::Client::Create(options));
  XS_ASSIGN_OR_RETURN(xs::ShardedResult result, program->Run(*client, {x_value, y_value}));
  const xs::Array& z = result.outputs[0];
  std::cout << z.ToString() << "\n";  // [[ 16.  32.  48.  64.] [ 32.  64.  96. 128.] ...]
  // [jit-seed000]

  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      const double want = 16.0 * static_cast<double>((i + 1) * (j + 1));
      if (z.GetDouble(i * 4 + j) != want) {
        return xs::Internal("z[", i, ",", j, "] = ", z.GetDouble(i * 4 + j), ", want ", want);
      }
    }
  }
  const auto& collectives = program->report().collectives;
  if (collectives.size() != 1 || collectives[0].kind != "all-reduce" ||
      collectives[0].explicit_groups != "{{0,2,4,6},{1,3,5,7}}") {
    return xs::Internal("expected XLA's one all-reduce over {{0,2,4,6},{1,3,5,7}}, got ",
                        collectives.size(), " collectives");
  }
  return xs::OkStatus();
}

}  // namespace

int main() {
  xs::Status status = Run();
  if (!status.ok()) {
    std::fprintf(stderr, "jit_seed000: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
