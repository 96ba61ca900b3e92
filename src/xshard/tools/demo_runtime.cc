// Demo sections that run programs on the devices: seed 001 (PyTorch/XLA HLO with shardings,
// partitioned into per-device SPMD programs and executed sharded) and seed 003's matmul_basic
// (shard_map with a psum on a 4x2 mesh).
#include "xshard/ir/attributes.h"
#include "xshard/ir/module.h"
#include "xshard/ir/verifier.h"
#include "xshard/kernels/dot.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"
#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/replica_groups.h"

#include <iostream>

#include "xshard/shard_map/shard_map.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/sharding/geometry.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/demo.h"

namespace xs::tools {
namespace {

// One seed-001 program: the annotated op, its hand-partitioned per-device HLO, the global
// inputs, and how the inputs and the output are split.
struct SpmdCase {
  const char* title;
  const char* sharding;         // of both inputs
  const char* output_sharding;  // of the result
  const char* hlo;
  std::vector<Array> inputs;
  std::vector<int64_t> output_dims;
};

// A 4x4 x @ y with every operand tiled {devices=[2,2]0,1,2,3}, partitioned as XLA does it (the
// seed's SPMD log): all-gather x's row block and y's column block, dot, all-gather the tiles.
constexpr char kMatMul[] = R"(HloModule IrToHlo.21.spmd, num_partitions=4
ENTRY IrToHlo.21 {
  p0.1 = f32[2,2] parameter(0)
  p1.7 = f32[2,2] parameter(1)
  x_rows = f32[2,4] all-gather(p0.1), channel_id=1, replica_groups={{0,1},{2,3}}, dimensions={1}, use_global_device_ids=true
  y_cols = f32[4,2] all-gather(p1.7), channel_id=2, replica_groups={{0,2},{1,3}}, dimensions={0}, use_global_device_ids=true
  dot.18 = f32[2,2] dot(x_rows, y_cols), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  rows = f32[2,4] all-gather(dot.18), channel_id=3, replica_groups={{0,1},{2,3}}, dimensions={1}, use_global_device_ids=true
  full = f32[4,4] all-gather(rows), channel_id=4, replica_groups={{0,2},{1,3}}, dimensions={0}, use_global_device_ids=true
  ROOT tuple.20 = (f32[4,4]) tuple(full)
}
)";

constexpr char kAdd[] = R"(HloModule IrToHlo.21.spmd, num_partitions=2
ENTRY IrToHlo.21 {
  p0.1 = f32[1,2] parameter(0)
  p1.7 = f32[1,2] parameter(1)
  add.18 = f32[1,2] add(p1.7, p0.1)
  all-gather = f32[2,2] all-gather(add.18), channel_id=1, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  ROOT tuple.20 = (f32[2,2]) tuple(all-gather)
}
)";

constexpr char kMultiply[] = R"(HloModule xla_computation_f.16.spmd, num_partitions=2
ENTRY xla_computation_f.16 {
  parameter.1 = f32[1,2] parameter(0)
  parameter.2 = f32[1,2] parameter(1)
  multiply.10 = f32[1,2] multiply(parameter.1, parameter.2)
  ROOT tuple.15 = (f32[1,2]) tuple(multiply.10)
}
)";

Status RunSpmdCase(DemoContext& ctx, Client& client, const SpmdCase& c) {
  std::cout << "\n--- " << c.title << "\n";
  XS_ASSIGN_OR_RETURN(HloSharding in_sharding, HloSharding::Parse(c.sharding));
  XS_ASSIGN_OR_RETURN(HloSharding out_sharding, HloSharding::Parse(c.output_sharding));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, ParseHloModule(c.hlo));
  XS_ASSIGN_OR_RETURN(auto spmd, SpmdExecutable::Create(*module));
  const int64_t n = spmd->num_devices();
  std::cout << "inputs sharded as " << in_sharding.ToString() << " over " << n << " devices:\n";
  XS_ASSIGN_OR_RETURN(std::string drawing,
                      VisualizeSharding(c.inputs[0].dims(), in_sharding, n, ctx.visualize));
  std::cout << drawing << "per-device SPMD program (partitioned by hand, as XLA would):\n"
            << c.hlo;
  std::vector<std::vector<Array>> args(n);
  for (const Array& x : c.inputs) {
    XS_ASSIGN_OR_RETURN(std::vector<Array> shards, DevicePut(x, in_sharding, n));
    for (int64_t d = 0; d < n; ++d) args[d].push_back(std::move(shards[d]));
  }
  XS_ASSIGN_OR_RETURN(SpmdResult r, spmd->Run(client, args));
  std::vector<Array> outs;
  for (int64_t d = 0; d < n; ++d) {
    std::cout << "Device " << d << " has buffer:\n" << r.outputs[d][0].ToString() << "\n";
    outs.push_back(r.outputs[d][0]);
  }
  XS_ASSIGN_OR_RETURN(Array global, Gather(outs, out_sharding, c.output_dims));
  std::cout << "result sharding " << out_sharding.ToString() << ":\n";
  XS_ASSIGN_OR_RETURN(drawing, VisualizeSharding(c.output_dims, out_sharding, n, ctx.visualize));
  std::cout << drawing << "result:\n" << global.ToString() << "\n" << FormatSpmdMemory(r.memory);
  return OkStatus();
}

Status Seed001Spmd(DemoContext& ctx) {
  ClientOptions options;
  options.num_devices = 8;
  XS_ASSIGN_OR_RETURN(auto client, CliCreateClient(options));
  std::cout << "PyTorch/XLA dumps HLO with sharding annotations; XLA's SPMD partitioner turns it "
               "into one program\nthat every device runs with its own partition-id; "
               "execute_sharded_on_local_devices feeds\neach device its own shard.\n";
  Array y(DType::kF32, {4, 4});
  for (int64_t k = 0; k < 16; ++k) y.SetDouble(k, (k % 3) - 1);
  const SpmdCase cases[] = {
      {"ShardedAddForwardWithCustomCall: x + y, {devices=[2,1]0,1} (x = 3s, y = 4s)",
       "{devices=[2,1]0,1}", "{replicated}", kAdd,
       {Array::Full(DType::kF32, {2, 2}, 3), Array::Full(DType::kF32, {2, 2}, 4)}, {2, 2}},
      {"ShardedMatMul: x @ y, {devices=[2,2]0,1,2,3} (x = arange(16), y = k % 3 - 1)",
       "{devices=[2,2]0,1,2,3}", "{replicated}", kMatMul,
       {Array::Iota(DType::kF32, {4, 4}), y}, {4, 4}},
      {"sharded_jit(f, in_parts=(P(2,1), P(2,1)), out_parts=P(2,1)): x * y, x = y = arange(4)",
       "{devices=[2,1]0,1}", "{devices=[2,1]0,1}", kMultiply,
       {Array::Iota(DType::kF32, {2, 2}), Array::Iota(DType::kF32, {2, 2})}, {2, 2}},
  };
  for (const SpmdCase& c : cases) XS_RETURN_IF_ERROR(RunSpmdCase(ctx, *client, c));
  return OkStatus();
}

Status Seed003MatmulBasic(DemoContext& ctx) {
  ClientOptions options;
  options.num_devices = 8;
  XS_ASSIGN_OR_RETURN(auto client, CliCreateClient(options));
  XS_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create({"x", "y"}, {4, 2}));
  const Array a = Array::Iota(DType::kF32, {8, 16});
  const Array b = Array::Iota(DType::kF32, {16, 4});
  std::cout << "mesh = " << mesh.ToString() << "\na = jnp.arange(8 * 16.).reshape(8, 16); "
            << "b = jnp.arange(16 * 4.).reshape(16, 4)\n\n"
            << "@partial(shard_map, mesh=mesh, in_specs=(P('x', 'y'), P('y', None)), "
               "out_specs=P('x', None))\n"
               "def matmul_basic(a_block, b_block):   # f32[2,8], f32[8,4]\n"
               "  return jax.lax.psum(jnp.dot(a_block, b_block), 'y')   # f32[2,4]\n\n";
  XS_ASSIGN_OR_RETURN(NamedSharding xy, Named(mesh, "P('x', 'y')"));
  XS_ASSIGN_OR_RETURN(NamedSharding y_none, Named(mesh, "P('y', None)"));
  XS_ASSIGN_OR_RETURN(NamedSharding x_none, Named(mesh, "P('x', None)"));
  auto fn = [](ShardMapContext& c, std::vector<Array> in) -> StatusOr<std::vector<Array>> {
    DotDimensionNumbers dn;
    dn.lhs_contracting = {1};
    dn.rhs_contracting = {0};
    XS_ASSIGN_OR_RETURN(Array partial, kernels::DotGeneral(in[0], in[1], dn, DType::kF32));
    XS_ASSIGN_OR_RETURN(Array block, c.Psum(partial, "y"));
    return std::vector<Array>{std::move(block)};
  };
  XS_ASSIGN_OR_RETURN(ShardMapped f, ShardMap(mesh, {xy.spec(), y_none.spec()}, {x_none.spec()},
                                              fn));
  XS_ASSIGN_OR_RETURN(std::vector<ShardedArray> c, f(*client, {a, b}));
  std::cout << "a blocks:\n";
  XS_RETURN_IF_ERROR(ShowSharding(ctx, "a", a.shape(), xy));
  std::cout << "b blocks:\n";
  XS_RETURN_IF_ERROR(ShowSharding(ctx, "b", b.shape(), y_none));
  std::cout << "c blocks:\n";
  XS_RETURN_IF_ERROR(ShowSharding(ctx, "c", c[0].shape(), c[0].sharding()));
  for (int64_t d = 0; d < c[0].num_shards(); ++d) {
    std::cout << "Device " << d << " has buffer:\n" << c[0].shard(d).array().ToString() << "\n";
  }
  XS_ASSIGN_OR_RETURN(Array got, c[0].ToArray());
  DotDimensionNumbers dn;
  dn.lhs_contracting = {1};
  dn.rhs_contracting = {0};
  XS_ASSIGN_OR_RETURN(Array want, kernels::DotGeneral(a, b, dn, DType::kF32));
  std::cout << "c = matmul_basic(a, b):\n" << got.ToString() << "\n";
  // Every value is an integer below 2^24, so the sharded sum is exact.
  if (!(got == want)) return Internal("matmul_basic differs from jnp.dot(a, b)");
  std::cout << "allclose(c, jnp.dot(a, b)) = True\n";
  return OkStatus();
}

}  // namespace

std::vector<DemoSection> RuntimeDemoSections() {
  return {
      {"seed001-spmd",
       "Seed 001 (PyTorch/XLA SPMD): sharded add, matmul and multiply as per-device programs",
       Seed001Spmd},
      {"seed003-matmul-basic",
       "Seed 003 (shard_map): matmul_basic with psum over 'y' on mesh x=4, y=2",
       Seed003MatmulBasic},
  };
}

}  // namespace xs::tools
