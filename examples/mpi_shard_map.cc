// Seed 003's matmul_basic on 8 devices spread over MPI processes: `mpirun -np 4
// example_mpi_shard_map` runs 2 devices in each of 4 processes, and the psum over 'y' crosses
// processes through MPI. Started without mpirun it is a one-process MPI job (8 devices in it);
// a build without MPI prints why and exits 0. Every process checks c against a one-device matmul
// and exits 1 on a wrong result.
#include <cstdio>
#include <iostream>

#include "xshard/kernels/dot.h"
#include "xshard/mpi/mpi_process.h"
#include "xshard/platform/platform.h"
#include "xshard/runtime/client.h"
#include "xshard/shard_map/shard_map.h"

namespace {

using xs::Array;
using xs::ShardMapContext;
using xs::StatusOr;

StatusOr<Array> Dot(const Array& lhs, const Array& rhs) {
  xs::DotDimensionNumbers d;
  d.lhs_contracting = {1};
  d.rhs_contracting = {0};
  return xs::kernels::DotGeneral(lhs, rhs, d, xs::DType::kF32);
}

xs::Status Run() {
  // [mpi-client]
  // 8 devices over the processes of this mpirun job (8 / processes each): process p runs devices
  // p*L .. p*L+L-1, and the same shard_map call works as with Client::Create.
  xs::ClientOptions options;
  options.num_devices = 8;
  XS_ASSIGN_OR_RETURN(auto client, xs::CreateMpiClient(options));
  XS_ASSIGN_OR_RETURN(xs::Mesh mesh, xs::Mesh::Create({"x", "y"}, {4, 2}));
  XS_ASSIGN_OR_RETURN(xs::PartitionSpec xy, xs::PartitionSpec::Parse("P('x', 'y')"));
  XS_ASSIGN_OR_RETURN(xs::PartitionSpec y_none, xs::PartitionSpec::Parse("P('y', None)"));
  XS_ASSIGN_OR_RETURN(xs::PartitionSpec x_none, xs::PartitionSpec::Parse("P('x', None)"));
  auto matmul_basic = [](ShardMapContext& ctx, std::vector<Array> in) -> StatusOr<std::vector<Array>> {
    XS_ASSIGN_OR_RETURN(Array partial, Dot(in[0], in[1]));
    XS_ASSIGN_OR_RETURN(Array c_block, ctx.Psum(partial, "y"));
    return std::vector<Array>{std::move(c_block)};
  };
  XS_ASSIGN_OR_RETURN(xs::ShardMapped f, xs::ShardMap(mesh, {xy, y_none}, {x_none}, matmul_basic));
  const Array a = Array::Iota(xs::DType::kF32, {8, 16});
  const Array b = Array::Iota(xs::DType::kF32, {16, 4});
  XS_ASSIGN_OR_RETURN(std::vector<xs::ShardedArray> c, f(*client, {a, b}));
  XS_ASSIGN_OR_RETURN(Array got, c[0].ToArray());  // every process has the whole result
  // [mpi-client]
  XS_ASSIGN_OR_RETURN(Array want, Dot(a, b));
  for (int64_t k = 0; k < want.num_elements(); ++k) {
    if (got.GetDouble(k) != want.GetDouble(k)) {
      return xs::Internal("element ", k, " is ", got.GetDouble(k), ", expected ",
                          want.GetDouble(k));
    }
  }
  std::printf("process %lld of %lld: matmul_basic on 8 devices equals the one-device matmul\n",
              static_cast<long long>(xs::mpi::ProcessRank()),
              static_cast<long long>(xs::mpi::ProcessCount()));
  return xs::OkStatus();
}

}  // namespace

int main() {
  if (!xs::mpi::BuiltWithMpi()) {
    std::printf("skipped: this build has no MPI support\n");
    return 0;
  }
  xs::Status st = Run();
  if (!st.ok()) {
    std::cerr << "example_mpi_shard_map: " << st.message() << "\n";
    return 1;
  }
  xs::mpi::Finalize();
  return 0;
}
