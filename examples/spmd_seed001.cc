// Seed 001's SPMD flow in C++: PyTorch/XLA HLO with sharding annotations, partitioned (here by
// hand, as XLA's SPMD partitioner would) into one per-device program keyed by partition-id, then
// compiled once for 2, 4 or 8 devices and executed on all of them at once with per-device inputs
// (execute_sharded_on_local_devices). Each result is checked; exits 1 on a wrong one.
#include "xshard/ir/module.h"
#include "xshard/kernels/dot.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"
#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/replica_groups.h"

#include <cstdio>
#include <iostream>

#include "xshard/runtime/spmd_executor.h"
#include "xshard/sharding/geometry.h"

namespace {

using xs::Array;
using xs::StatusOr;

// sharded_add on 2 devices, sharding={devices=[2,1]0,1}: each device adds its f32[1,2] rows and
// the replicated result f32[2,2] is all-gathered (the seed prints [[7,7],[7,7]] on both devices).
constexpr std::string_view kShardedAdd = R"(
HloModule IrToHlo.21.spmd, num_partitions=2
ENTRY IrToHlo.21 {
  p0.1 = f32[1,2] parameter(0)
  p1.7 = f32[1,2] parameter(1)
  add.18 = f32[1,2] add(p1.7, p0.1)
  all-gather = f32[2,2] all-gather(add.18), channel_id=1, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  ROOT tuple.20 = (f32[2,2]) tuple(all-gather)
})";

// sharded_mm on 4 devices, sharding={devices=[2,2]0,1,2,3} on x, y and x @ y, as XLA partitions
// it: gather x's row block over {0,1},{2,3} and y's column block over {0,2},{1,3}, multiply, and
// gather the [2,2]-tiled product to the replicated output. The seed's 8192x8192 becomes 128x128.
constexpr std::string_view kShardedMatMul = R"(
HloModule IrToHlo.21.spmd, num_partitions=4
ENTRY IrToHlo.21 {
  p0.1 = f32[64,64] parameter(0)
  p1.7 = f32[64,64] parameter(1)
  x_rows = f32[64,128] all-gather(p0.1), channel_id=1, replica_groups={{0,1},{2,3}}, dimensions={1}, use_global_device_ids=true
  y_cols = f32[128,64] all-gather(p1.7), channel_id=2, replica_groups={{0,2},{1,3}}, dimensions={0}, use_global_device_ids=true
  dot.18 = f32[64,64] dot(x_rows, y_cols), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  rows = f32[64,128] all-gather(dot.18), channel_id=3, replica_groups={{0,1},{2,3}}, dimensions={1}, use_global_device_ids=true
  full = f32[128,128] all-gather(rows), channel_id=4, replica_groups={{0,2},{1,3}}, dimensions={0}, use_global_device_ids=true
  ROOT tuple.20 = (f32[128,128]) tuple(full)
})";

// sharded_jit f(x, y) = x * y with in_parts = out_parts = P(2, 1) on 2 devices: no communication,
// the output stays split by rows ({devices=[2,1]0,1}).
constexpr std::string_view kShardedMultiply = R"(
HloModule xla_computation_f.16.spmd, num_partitions=2
ENTRY xla_computation_f.16 {
  parameter.1 = f32[1,2] parameter(0)
  parameter.2 = f32[1,2] parameter(1)
  multiply.10 = f32[1,2] multiply(parameter.1, parameter.2)
  ROOT tuple.15 = (f32[1,2]) tuple(multiply.10)
})";

// ShardedMultiply on 8 devices, sharding={devices=[2,4]0,1,2,3,4,5,6,7} on x, y and x * y: each
// device multiplies its block. The seed's f32[8192,16384] becomes f32[16,32] (blocks f32[8,8]).
constexpr std::string_view kShardedMultiply8 = R"(
HloModule IrToHlo.21.spmd, num_partitions=8
ENTRY IrToHlo.21 {
  p0.1 = f32[8,8] parameter(0)
  p1.7 = f32[8,8] parameter(1)
  multiply.18 = f32[8,8] multiply(p0.1, p1.7)
  ROOT tuple.20 = (f32[8,8]) tuple(multiply.18)
})";

// Parses and plans `text`, splits each global input by `sharding` and runs it on the client.
StatusOr<xs::SpmdResult> CompileAndRun(xs::Client& client, std::string_view text,
                                       const std::vector<Array>& inputs,
                                       const xs::HloSharding& sharding) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<xs::Module> module, xs::ParseHloModule(text));
  XS_ASSIGN_OR_RETURN(auto spmd, xs::SpmdExecutable::Create(*module));
  std::vector<std::vector<Array>> per_device(spmd->num_devices());
  for (const Array& x : inputs) {
    XS_ASSIGN_OR_RETURN(std::vector<Array> shards,
                        xs::DevicePut(x, sharding, spmd->num_devices()));
    for (size_t d = 0; d < shards.size(); ++d) per_device[d].push_back(std::move(shards[d]));
  }
  return spmd->Run(client, per_device);
}

xs::Status Expect(bool ok, const std::string& what) {
  if (!ok) return xs::Internal("unexpected result: ", what);
  std::cout << "ok: " << what << "\n";
  return xs::OkStatus();
}

xs::Status Run() {
  xs::ClientOptions options;
  options.num_devices = 8;
  XS_ASSIGN_OR_RETURN(auto client, xs::Client::Create(options));

  // [spmd-seed001]
  // The add: x = 3s and y = 4s, f32[2,2] split by rows over 2 devices; every device gets 7s.
  XS_ASSIGN_OR_RETURN(xs::HloSharding rows2, xs::HloSharding::Parse("{devices=[2,1]0,1}"));
  XS_ASSIGN_OR_RETURN(xs::SpmdResult add,
                      CompileAndRun(*client, kShardedAdd,
                                    {Array::Full(xs::DType::kF32, {2, 2}, 3),
                                     Array::Full(xs::DType::kF32, {2, 2}, 4)},
                                    rows2));
  std::cout << "device 1: " << add.outputs[1][0].ToString() << "\n";  // [[7. 7.] [7. 7.]]
  // [spmd-seed001]
  for (int d = 0; d < 2; ++d) {
    XS_RETURN_IF_ERROR(Expect(add.outputs[d][0] == Array::Full(xs::DType::kF32, {2, 2}, 7),
                              xs::StrCat("sharded add on device ", d, " is 7 everywhere")));
  }

  // The matmul on 4 devices: 3s @ 4s over k = 128 gives 3 * 4 * 128 = 1536 everywhere.
  XS_ASSIGN_OR_RETURN(xs::HloSharding tiles, xs::HloSharding::Parse("{devices=[2,2]0,1,2,3}"));
  XS_ASSIGN_OR_RETURN(xs::SpmdResult mm,
                      CompileAndRun(*client, kShardedMatMul,
                                    {Array::Full(xs::DType::kF32, {128, 128}, 3),
                                     Array::Full(xs::DType::kF32, {128, 128}, 4)},
                                    tiles));
  for (int d = 0; d < 4; ++d) {
    XS_RETURN_IF_ERROR(Expect(mm.outputs[d][0] == Array::Full(xs::DType::kF32, {128, 128}, 1536),
                              xs::StrCat("sharded matmul on device ", d, " is 1536 everywhere")));
  }
  // And with distinct values, against the single-device product.
  const Array x = Array::Iota(xs::DType::kF32, {128, 128});
  Array y(xs::DType::kF32, {128, 128});
  for (int64_t k = 0; k < y.num_elements(); ++k) y.SetDouble(k, (k % 7) - 3);
  XS_ASSIGN_OR_RETURN(xs::SpmdResult mm2, CompileAndRun(*client, kShardedMatMul, {x, y}, tiles));
  xs::DotDimensionNumbers dn;
  dn.lhs_contracting = {1};
  dn.rhs_contracting = {0};
  XS_ASSIGN_OR_RETURN(Array want, xs::kernels::DotGeneral(x, y, dn, xs::DType::kF32));
  XS_RETURN_IF_ERROR(Expect(mm2.outputs[3][0] == want,
                            "sharded matmul of iota @ (k % 7 - 3) equals the one-device dot"));

  // sharded_jit's multiply: x = y = arange(4).reshape(2,2); z = [[0,1],[4,9]] split by rows.
  const Array a = Array::Iota(xs::DType::kF32, {2, 2});
  XS_ASSIGN_OR_RETURN(xs::SpmdResult mul, CompileAndRun(*client, kShardedMultiply, {a, a}, rows2));
  std::vector<Array> shards = {mul.outputs[0][0], mul.outputs[1][0]};
  XS_ASSIGN_OR_RETURN(Array z, xs::Gather(shards, rows2, {2, 2}));
  std::cout << z.ToString() << "\n";
  XS_RETURN_IF_ERROR(Expect(z == Array::FromVector<float>({2, 2}, {0, 1, 4, 9}),
                            "sharded_jit multiply gives [[0,1],[4,9]]"));

  // ShardedMultiply on 8 devices: 3s * 4s = 12s, gathered from the [2,4] tiles.
  XS_ASSIGN_OR_RETURN(xs::HloSharding tiles8,
                      xs::HloSharding::Parse("{devices=[2,4]0,1,2,3,4,5,6,7}"));
  XS_ASSIGN_OR_RETURN(xs::SpmdResult mul8,
                      CompileAndRun(*client, kShardedMultiply8,
                                    {Array::Full(xs::DType::kF32, {16, 32}, 3),
                                     Array::Full(xs::DType::kF32, {16, 32}, 4)},
                                    tiles8));
  std::vector<Array> blocks;
  for (auto& out : mul8.outputs) blocks.push_back(out[0]);
  XS_ASSIGN_OR_RETURN(Array product, xs::Gather(blocks, tiles8, {16, 32}));
  XS_RETURN_IF_ERROR(Expect(product == Array::Full(xs::DType::kF32, {16, 32}, 12),
                            "sharded multiply over [2,4] tiles is 12 everywhere"));
  std::cout << xs::FormatSpmdMemory(mm.memory);
  return xs::OkStatus();
}

}  // namespace

int main() {
  xs::Status status = Run();
  if (!status.ok()) {
    std::fprintf(stderr, "spmd_seed001: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
