// Seed 004's Pallas kernels with the C++ kernel API (cmm/kernel.h, cmm/remote_copy.h):
//   1. the tiled matmul (grid (M/bm, N/bn, K/bk), BlockSpecs with index maps, an f32 scratch
//      accumulator zeroed at k == 0 and flushed at the last k under When) on bf16 inputs;
//   2. seed 004's distributed_gemm_kernel1 on the 2 x 2 mesh ('x', 'y'): the weights all-gathered
//      over 'x' by a ring kernel of remote copies addressed by mesh coordinates (the case JAX's
//      Pallas refuses: "Meshes with more than 1 named dimension not implemented in dma_start_p"),
//      sliced, multiplied by the tiled matmul and psum'd over 'y';
//   3. a kernel of one remote copy to the device at z + 1 on a 2x2x2 mesh, against ppermute;
//   4. the ring, recursive-doubling and direct all-gather kernels on 2x2, 4x4 and 2x2x2 meshes
//      against the runtime's all-gather.
// Shapes are the seed's divided by 8 so that ctest runs it in a second. Exits 1 on a mismatch.
// With --bench it also times (medians of interleaved runs) the tiled matmul against one GEMM call
// and each all-gather kernel against the runtime's all-gather.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/cmm/kernel.h"
#include "xshard/cmm/kernel_ops.h"
#include "xshard/cmm/pallas_kernels.h"
#include "xshard/cmm/remote_copy.h"
#include "xshard/kernels/dot.h"
#include "xshard/shard_map/shard_map.h"

namespace {

using xs::Array;
using xs::DType;
using Arrays = std::vector<Array>;
namespace cmm = xs::cmm;

// Values in [-1, 1) with 1/64 steps, exact in bf16.
Array Pattern(DType dtype, int64_t rows, int64_t cols, int seed) {
  Array a(DType::kF32, {rows, cols});
  for (int64_t i = 0; i < rows * cols; ++i) {
    a.values<float>()[i] = static_cast<float>(((i * 37 + seed * 11) % 128) - 64) / 64.0f;
  }
  return a.Convert(dtype);
}

// The largest |got - x @ y| over the elements, each divided by sum_k |x_ik y_kj| (the scale of the
// f32 rounding error), from a double-precision product.
double ScaledError(const Array& got, const Array& x, const Array& y) {
  const int64_t m = x.dims()[0], k = x.dims()[1], n = y.dims()[1];
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, scale = 1e-30;
      for (int64_t t = 0; t < k; ++t) {
        const double p = x.GetDouble(i * k + t) * y.GetDouble(t * n + j);
        want += p;
        scale += std::abs(p);
      }
      worst = std::max(worst, std::abs(got.GetDouble(i * n + j) - want) / scale);
    }
  }
  return worst;
}

// Process CPU time in milliseconds (every thread of the process).
double CpuMs() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Medians over `runs` interleaved calls of each function (A B A B ...): {wall ms, process CPU ms}
// per function. On a loaded machine the CPU time is the steadier figure.
std::vector<std::pair<double, double>> MedianMs(const std::vector<std::function<xs::Status()>>& fns,
                                                int runs) {
  std::vector<std::vector<double>> wall(fns.size()), cpu(fns.size());
  for (int r = 0; r < runs; ++r) {
    for (size_t f = 0; f < fns.size(); ++f) {
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = CpuMs();
      xs::Status st = fns[f]();
      if (!st.ok()) std::fprintf(stderr, "bench: %s\n", st.ToString().c_str());
      cpu[f].push_back(CpuMs() - cpu_start);
      wall[f].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  std::vector<std::pair<double, double>> out;
  for (size_t f = 0; f < fns.size(); ++f) {
    std::sort(wall[f].begin(), wall[f].end());
    std::sort(cpu[f].begin(), cpu[f].end());
    out.emplace_back(wall[f][runs / 2], cpu[f][runs / 2]);
  }
  return out;
}

xs::Status Bench(xs::Client& client) {
  // Tiled matmul (128-blocks) vs one DotGeneral, bf16 [s,s] @ [s,s] -> f32; s = 1024 is one
  // device's product in seed 004 (grid (8, 8, 8)).
  xs::DotDimensionNumbers dn;
  dn.lhs_contracting = {1};
  dn.rhs_contracting = {0};
  for (int64_t size : {512, 1024}) {
    const Array x = Pattern(DType::kBF16, size, size, 1), w = Pattern(DType::kBF16, size, size, 2);
    const int runs = size == 512 ? 21 : 11;
    const auto mm =
        MedianMs({[&] { return cmm::TiledMatmul(x, w, {}).status(); },
                  [&] { return xs::kernels::DotGeneral(x, w, dn, DType::kF32).status(); }},
                 runs);
    std::printf(
        "bench bf16[%ld,%ld] @ bf16[%ld,%ld] -> f32, medians of %d interleaved runs: tiled "
        "matmul kernel %.3f ms wall / %.3f ms CPU, one GEMM %.3f ms wall / %.3f ms CPU\n",
        static_cast<long>(size), static_cast<long>(size), static_cast<long>(size),
        static_cast<long>(size), runs, mm[0].first, mm[0].second, mm[1].first, mm[1].second);
  }
  // All-gather of f32[256,256] shards over all three axes of a 2x2x2 mesh.
  XS_ASSIGN_OR_RETURN(xs::Mesh m, xs::Mesh::Create({"x", "y", "z"}, {2, 2, 2}));
  cmm::InProcessTransport t(m.num_devices());
  const xs::PartitionSpec spec(std::vector<xs::PartitionSpec::Entry>{m.axis_names(), {}});
  const std::vector<std::string> axes = {"x", "y", "z"};
  const Array data = Array::Iota(DType::kF32, {256 * 8, 256});
  std::vector<std::function<xs::Status()>> fns;
  for (int which = 0; which < 4; ++which) {
    fns.push_back([&, which]() -> xs::Status {
      XS_ASSIGN_OR_RETURN(
          xs::ShardMapped f,
          xs::ShardMap(m, {spec}, {spec},
                       [&](xs::ShardMapContext& ctx, Arrays in) -> xs::StatusOr<Arrays> {
                         if (which == 3) {
                           XS_RETURN_IF_ERROR(ctx.AllGather(in[0], axes, 0, true).status());
                         } else {
                           XS_RETURN_IF_ERROR(
                               cmm::AllGatherKernel(ctx, t, in[0], axes,
                                                    static_cast<cmm::AllGatherKernelKind>(which))
                                   .status());
                         }
                         return Arrays{in[0]};
                       }));
      return f(client, Arrays{data}).status();
    });
  }
  const auto ag = MedianMs(fns, 21);
  std::printf(
      "bench all-gather of f32[256,256] shards over ('x','y','z') of 2x2x2, per shard_map "
      "call, medians of 21 interleaved runs (wall / process CPU ms): ring %.3f / %.3f, "
      "recursive-doubling %.3f / %.3f, direct %.3f / %.3f, runtime %.3f / %.3f\n",
      ag[0].first, ag[0].second, ag[1].first, ag[1].second, ag[2].first, ag[2].second, ag[3].first,
      ag[3].second);
  return xs::OkStatus();
}

xs::StatusOr<bool> Run(bool bench) {
  bool ok = true;
  // 1. make_matmul on one device: bf16 [256, 256] @ [256, 128], 64 x 64 blocks, f32 out.
  const Array x = Pattern(DType::kBF16, 256, 256, 1), w = Pattern(DType::kBF16, 256, 128, 2);
  // [pallas-matmul]
  // Seed 004's simple_matmul: zero the f32 scratch at k == 0, accumulate, flush at the last k.
  cmm::KernelBody simple_matmul = [](cmm::KernelContext& c) -> xs::Status {
    XS_RETURN_IF_ERROR(cmm::When(c.ProgramId(2) == 0, [&] { return cmm::Fill(c.scratch(0), 0); }));
    XS_RETURN_IF_ERROR(cmm::DotAccumulate(c.in(0), c.in(1), c.scratch(0)));
    return cmm::When(c.ProgramId(2) == c.NumPrograms(2) - 1,
                     [&] { return cmm::StoreConverted(c.scratch(0), c.out(0)); });
  };
  // make_matmul: grid (m/bm, n/bn, k/bk), BlockSpecs with index maps, an f32 scratch block.
  const int64_t m = 256, k = 256, n = 128, bm = 64, bk = 64, bn = 64;
  const cmm::IndexMap x_map = [](cmm::GridIndex g) { return cmm::Index{g[0], g[2]}; };  // (i, k)
  const cmm::IndexMap y_map = [](cmm::GridIndex g) { return cmm::Index{g[2], g[1]}; };  // (k, j)
  const cmm::IndexMap o_map = [](cmm::GridIndex g) { return cmm::Index{g[0], g[1]}; };  // (i, j)
  XS_ASSIGN_OR_RETURN(
      cmm::PallasKernel make_matmul,
      cmm::PallasCall(
          simple_matmul, {m / bm, n / bn, k / bk},
          {cmm::BlockSpec::Blocked({bm, bk}, x_map), cmm::BlockSpec::Blocked({bk, bn}, y_map)},
          {cmm::BlockSpec::Blocked({bm, bn}, o_map)}, {xs::Shape(DType::kF32, {m, n})},
          {cmm::ScratchShape::Buffer(DType::kF32, {bm, bn})}));
  XS_ASSIGN_OR_RETURN(std::vector<Array> c, make_matmul.Run({x, w}));  // one device, no peers
  // [pallas-matmul]
  const double e1 = ScaledError(c[0], x, w);
  std::printf("tiled matmul bf16[256,256] @ bf16[256,128], grid (4, 2, 4): scaled error %.2e\n",
              e1);
  XS_ASSIGN_OR_RETURN(Array lib, cmm::TiledMatmul(x, w, {.bm = 64, .bk = 64, .bn = 64}));
  ok = ok && lib == c[0];  // the library's TiledMatmul is the same kernel
  ok = ok && e1 < 1e-5;

  // 2. distributed_gemm_kernel1 on Mesh(2x2, ('x', 'y')): inputs P('x', 'y'), weights P('x',
  // None), out P('x', None); the all-gather is a Pallas-style ring kernel.
  XS_ASSIGN_OR_RETURN(xs::Mesh mesh, xs::Mesh::Create({"x", "y"}, {2, 2}));
  xs::ClientOptions options;
  options.num_devices = 16;
  XS_ASSIGN_OR_RETURN(std::unique_ptr<xs::Client> client, xs::Client::Create(options));
  cmm::InProcessTransport transport(4);
  XS_ASSIGN_OR_RETURN(xs::PartitionSpec pxy, xs::PartitionSpec::Parse("P('x', 'y')"));
  XS_ASSIGN_OR_RETURN(xs::PartitionSpec px, xs::PartitionSpec::Parse("P('x', None)"));
  XS_ASSIGN_OR_RETURN(
      xs::ShardMapped gemm,
      xs::ShardMap(
          mesh, {pxy, px}, {px}, [&](xs::ShardMapContext& ctx, Arrays in) -> xs::StatusOr<Arrays> {
            XS_ASSIGN_OR_RETURN(Array out, cmm::DistributedGemm(ctx, transport, in[0], in[1],
                                                                {.bm = 32, .bk = 64, .bn = 64},
                                                                cmm::AllGatherKernelKind::kRing));
            return Arrays{std::move(out)};
          }));
  XS_ASSIGN_OR_RETURN(std::vector<xs::ShardedArray> d, gemm(*client, Arrays{x, w}));
  XS_ASSIGN_OR_RETURN(Array dc, d[0].ToArray());
  const double e2 = ScaledError(dc, x, w);
  std::printf("distributed GEMM on %s (ring all-gather kernel over 'x'): scaled error %.2e\n",
              mesh.ToString().c_str(), e2);
  ok = ok && e2 < 1e-5;

  // 3. a kernel of one remote copy on the 2x2x2 mesh ('x', 'y', 'z'), the destination given by
  // mesh coordinates: every device sends its block to z + 1; checked against ppermute over 'z'.
  XS_ASSIGN_OR_RETURN(xs::Mesh mesh3, xs::Mesh::Create({"x", "y", "z"}, {2, 2, 2}));
  cmm::InProcessTransport transport3(mesh3.num_devices());
  // [pallas-remote]
  // Copy my block into the output of the device one step along 'z', then wait for my send and
  // for the block my -z neighbour sent me.
  cmm::KernelBody shift_z = [](cmm::KernelContext& c) -> xs::Status {
    std::vector<int64_t> to = c.mesh()->CoordsOf(c.device());
    to[2] = (to[2] + 1) % c.mesh()->AxisSize(2);
    XS_ASSIGN_OR_RETURN(
        cmm::AsyncCopy copy,
        cmm::MakeAsyncRemoteCopy(c.in(0), c.out(0), c.sem(0), c.sem(1), cmm::DeviceId::Mesh(to)));
    XS_RETURN_IF_ERROR(copy.Start());
    return copy.Wait();  // WaitSend, then WaitRecv
  };
  cmm::PallasOptions remote;
  remote.name = "shift_z";
  remote.transport = &transport3;  // shared by the 8 device threads
  XS_ASSIGN_OR_RETURN(
      cmm::PallasKernel shift,
      cmm::PallasCall(shift_z, {1}, {cmm::BlockSpec::Any()}, {cmm::BlockSpec::Any()},
                      {xs::Shape(DType::kF32, {4, 8})},
                      {cmm::ScratchShape::Semaphores(cmm::SemaphoreType::kDma, 2)}, remote));
  // [pallas-remote]
  const xs::PartitionSpec p3(std::vector<xs::PartitionSpec::Entry>{mesh3.axis_names(), {}});
  XS_ASSIGN_OR_RETURN(
      xs::ShardMapped shifted,
      xs::ShardMap(mesh3, {p3}, {p3},
                   [&](xs::ShardMapContext& ctx, Arrays in) -> xs::StatusOr<Arrays> {
                     XS_ASSIGN_OR_RETURN(Arrays got, shift(ctx, {in[0]}));
                     XS_ASSIGN_OR_RETURN(Array want, ctx.Ppermute(in[0], "z", {{0, 1}, {1, 0}}));
                     if (!(got[0] == want)) return xs::Internal("shift_z on device ", ctx.device());
                     return got;
                   }));
  auto s3 = shifted(*client, Arrays{Array::Iota(DType::kF32, {32, 8})});
  std::printf("remote copy to z + 1 by mesh coordinates on %s: %s\n", mesh3.ToString().c_str(),
              s3.ok() ? "matches ppermute" : s3.status().ToString().c_str());
  ok = ok && s3.ok();

  // 4. every all-gather kernel against the runtime's all-gather.
  struct Case {
    std::vector<std::string> names;
    std::vector<int64_t> sizes;
    std::vector<std::string> axes;
  };
  const std::vector<Case> cases = {{{"x", "y"}, {2, 2}, {"x"}},
                                   {{"x", "y"}, {4, 4}, {"x", "y"}},
                                   {{"x", "y", "z"}, {2, 2, 2}, {"x", "z"}}};
  for (const Case& cs : cases) {
    XS_ASSIGN_OR_RETURN(xs::Mesh m, xs::Mesh::Create(cs.names, cs.sizes));
    cmm::InProcessTransport t(m.num_devices());
    const xs::PartitionSpec spec(std::vector<xs::PartitionSpec::Entry>{cs.names, {}});
    for (auto kind : {cmm::AllGatherKernelKind::kRing, cmm::AllGatherKernelKind::kRecursiveDoubling,
                      cmm::AllGatherKernelKind::kDirect}) {
      int mismatches = 0;
      XS_ASSIGN_OR_RETURN(
          xs::ShardMapped f,
          xs::ShardMap(
              m, {spec}, {spec}, [&](xs::ShardMapContext& ctx, Arrays in) -> xs::StatusOr<Arrays> {
                XS_ASSIGN_OR_RETURN(Array want, ctx.AllGather(in[0], cs.axes, 0, true));
                XS_ASSIGN_OR_RETURN(Array got, cmm::AllGatherKernel(ctx, t, in[0], cs.axes, kind));
                if (!(got == want)) return xs::Internal("mismatch on device ", ctx.device());
                return Arrays{in[0]};
              }));
      auto r = f(*client, Arrays{Array::Iota(DType::kF32, {4 * m.num_devices(), 8})});
      if (!r.ok()) {
        ++mismatches;
        std::printf("  %s\n", r.status().ToString().c_str());
      }
      std::printf("all-gather kernel %-18s over (%s) on %s: %s\n",
                  std::string(cmm::AllGatherKernelName(kind)).c_str(),
                  xs::StrJoin(cs.axes, ", ").c_str(), m.ToString().c_str(),
                  mismatches == 0 ? "matches the runtime" : "MISMATCH");
      ok = ok && mismatches == 0;
    }
  }
  if (bench) XS_RETURN_IF_ERROR(Bench(*client));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  xs::StatusOr<bool> ok = Run(argc > 1 && std::string(argv[1]) == "--bench");
  if (!ok.ok()) {
    std::fprintf(stderr, "error: %s\n", ok.status().ToString().c_str());
    return 1;
  }
  if (!*ok) {
    std::fprintf(stderr, "mismatch\n");
    return 1;
  }
  std::printf("all match\n");
  return 0;
}
