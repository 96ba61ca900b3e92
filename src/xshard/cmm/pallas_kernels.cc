// Seed 004's kernels on the Pallas-style API: the tiled matmul, the ring / recursive-doubling /
// direct all-gathers addressed by mesh coordinates, and the distributed GEMM built from them.
#include "xshard/cmm/pallas_kernels.h"

#include <utility>

#include "xshard/base/strings.h"
#include "xshard/cmm/kernel_ops.h"

namespace xs::cmm {

StatusOr<PallasKernel> TiledMatmulKernel(const Shape& x, const Shape& y, MatmulTiles tiles,
                                         DType out) {
  if (x.rank() != 2 || y.rank() != 2 || x.dims()[1] != y.dims()[0]) {
    return InvalidArgument("tiled matmul of ", x.ToString(false), " and ", y.ToString(false),
                           ": needs x [m, k] and y [k, n] with the same k");
  }
  const int64_t m = x.dims()[0], k = x.dims()[1], n = y.dims()[1];
  const int64_t bm = tiles.bm, bk = tiles.bk, bn = tiles.bn;
  if (bm < 1 || bk < 1 || bn < 1) {
    return InvalidArgument("tiled matmul: tiles (bm=", bm, ", bk=", bk, ", bn=", bn,
                           ") must be >= 1");
  }
  // seed 004's simple_matmul: zero the scratch at k == 0, accumulate, flush at the last k.
  KernelBody body = [](KernelContext& c) -> Status {
    XS_RETURN_IF_ERROR(When(c.ProgramId(2) == 0, [&] { return Fill(c.scratch(0), 0); }));
    XS_RETURN_IF_ERROR(DotAccumulate(c.in(0), c.in(1), c.scratch(0)));
    return When(c.ProgramId(2) == c.NumPrograms(2) - 1,
                [&] { return StoreConverted(c.scratch(0), c.out(0)); });
  };
  PallasOptions options;
  options.name = "tiled_matmul";
  return PallasCall(std::move(body), {(m + bm - 1) / bm, (n + bn - 1) / bn, (k + bk - 1) / bk},
                    {BlockSpec::Blocked({bm, bk},
                                        [](std::span<const int64_t> g) {
                                          return Index{g[0], g[2]};
                                        }),
                     BlockSpec::Blocked({bk, bn},
                                        [](std::span<const int64_t> g) {
                                          return Index{g[2], g[1]};
                                        })},
                    {BlockSpec::Blocked({bm, bn},
                                        [](std::span<const int64_t> g) {
                                          return Index{g[0], g[1]};
                                        })},
                    {Shape(out, {m, n})}, {ScratchShape::Buffer(DType::kF32, {bm, bn})}, options);
}

StatusOr<Array> TiledMatmul(const Array& x, const Array& y, MatmulTiles tiles, DType out) {
  XS_ASSIGN_OR_RETURN(PallasKernel kernel, TiledMatmulKernel(x.shape(), y.shape(), tiles, out));
  XS_ASSIGN_OR_RETURN(std::vector<Array> r, kernel.Run({x, y}));
  return std::move(r[0]);
}

std::string_view AllGatherKernelName(AllGatherKernelKind kind) {
  static constexpr std::string_view kNames[] = {"ring", "recursive-doubling", "direct"};
  return kNames[static_cast<int>(kind)];
}

namespace {

// The group of an all-gather: the mesh axes it runs over, this device's index and the size.
struct Group {
  const Mesh* mesh = nullptr;
  std::vector<int> axes;  // mesh axis numbers, as given
  int64_t self = 0, size = 1, device = 0;

  // Mesh coordinates of member j (this device's coordinates on the other axes).
  std::vector<int64_t> Coords(int64_t j) const {
    std::vector<int64_t> c = mesh->CoordsOf(device);
    for (int a = static_cast<int>(axes.size()) - 1; a >= 0; --a) {
      c[axes[a]] = j % mesh->AxisSize(axes[a]);
      j /= mesh->AxisSize(axes[a]);
    }
    return c;
  }
  // Member j addressed the way `kind` shows off.
  DeviceId Id(int64_t j, AllGatherKernelKind kind) const {
    const std::vector<int64_t> c = Coords(j);
    if (kind == AllGatherKernelKind::kRing) return DeviceId::Mesh(c);
    if (kind == AllGatherKernelKind::kDirect) return DeviceId::Logical(mesh->DeviceAt(c));
    std::vector<std::pair<std::string, int64_t>> named;
    for (int a : axes) named.emplace_back(mesh->axis_names()[a], c[a]);
    return DeviceId::Axes(std::move(named));
  }
};

// out.at[..., ds(j * chunk, count * chunk), ...] along `dim`.
StatusOr<Ref> Slot(const Ref& out, int dim, int64_t j, int64_t count, int64_t chunk) {
  std::vector<Ds> s(dim + 1, Ds{0, -1});
  s[dim] = Ds{j * chunk, count * chunk};
  return out.At(s);
}

// Copies this device's shard into its own slot of the output (seed 004's local_hbm_copy).
Status LocalCopy(KernelContext& k, const Group& g, int dim, int64_t chunk) {
  XS_ASSIGN_OR_RETURN(Ref mine, Slot(k.out(0), dim, g.self, 1, chunk));
  XS_ASSIGN_OR_RETURN(AsyncCopy local, MakeAsyncCopy(k.in(0), mine, k.sem(0)));
  XS_RETURN_IF_ERROR(local.Start());
  return local.Wait();
}

// Sends out[slot j .. j + count) to the same slots of member `to` and waits for the matching
// incoming copy on `recv`.
Status Exchange(KernelContext& k, const Group& g, AllGatherKernelKind kind, int dim, int64_t chunk,
                int64_t j, int64_t count, int64_t to, Semaphore recv) {
  XS_ASSIGN_OR_RETURN(Ref block, Slot(k.out(0), dim, j, count, chunk));
  XS_ASSIGN_OR_RETURN(AsyncCopy c,
                      MakeAsyncRemoteCopy(block, block, k.sem(1), recv, g.Id(to, kind)));
  XS_RETURN_IF_ERROR(c.Start());
  return c.Wait();
}

}  // namespace

StatusOr<Array> AllGatherKernel(ShardMapContext& ctx, RemoteTransport& transport, const Array& x,
                                const std::vector<std::string>& axes, AllGatherKernelKind kind,
                                int dim) {
  const std::string what =
      StrCat(AllGatherKernelName(kind), " all-gather kernel over (", StrJoin(axes, ", "), ")");
  if (dim < 0 || dim >= x.rank()) {
    return InvalidArgument(what, ": dim ", dim, " is outside 0..", x.rank() - 1, " of ",
                           x.shape().ToString(false));
  }
  if (axes.empty()) return InvalidArgument(what, ": name at least one mesh axis");
  Group g;
  g.mesh = &ctx.mesh();
  g.device = ctx.device();
  const std::vector<int64_t> coords = g.mesh->CoordsOf(g.device);
  g.self = 0;
  g.size = 1;
  for (const std::string& name : axes) {
    XS_ASSIGN_OR_RETURN(int a, g.mesh->AxisIndex(name));
    g.axes.push_back(a);
    g.self = g.self * g.mesh->AxisSize(a) + coords[a];
    g.size *= g.mesh->AxisSize(a);
  }
  int64_t steps = 1;
  if (kind == AllGatherKernelKind::kRing) steps = std::max<int64_t>(1, g.size - 1);
  if (kind == AllGatherKernelKind::kRecursiveDoubling) {
    if ((g.size & (g.size - 1)) != 0) {
      return InvalidArgument(what, ": the group has ", g.size, " devices; recursive doubling ",
                             "needs a power of two (use the ring or direct kernel)");
    }
    steps = 0;
    while ((int64_t{1} << steps) < g.size) ++steps;
    steps = std::max<int64_t>(1, steps);
  }
  const int64_t chunk = x.dims()[dim];
  std::vector<int64_t> out_dims = x.dims();
  out_dims[dim] *= g.size;

  KernelBody body = [g, kind, dim, chunk](KernelContext& k) -> Status {
    const int64_t s = k.ProgramId(0), n = g.size, i = g.self;
    if (s == 0) {
      XS_RETURN_IF_ERROR(LocalCopy(k, g, dim, chunk));
      if (kind == AllGatherKernelKind::kRing && n > 1) {
        // Meet both neighbours on the barrier semaphore before the first copy.
        XS_RETURN_IF_ERROR(SemaphoreSignal(k.BarrierSemaphore(), 1, g.Id((i + 1) % n, kind)));
        XS_RETURN_IF_ERROR(SemaphoreSignal(k.BarrierSemaphore(), 1, g.Id((i + n - 1) % n, kind)));
        XS_RETURN_IF_ERROR(SemaphoreWait(k.BarrierSemaphore(), 2));
      }
    }
    if (n == 1) return OkStatus();
    switch (kind) {
      case AllGatherKernelKind::kRing:
        // Step s forwards the shard received at step s - 1 (our own at step 0) to the right.
        return Exchange(k, g, kind, dim, chunk, ((i - s) % n + n) % n, 1, (i + 1) % n, k.sem(2));
      case AllGatherKernelKind::kRecursiveDoubling: {
        const int64_t block = int64_t{1} << s;
        // One receive semaphore per step: DMA semaphores count bytes, and the partner of step
        // s + 1 may already send its (twice as large) block while this step's has not landed.
        return Exchange(k, g, kind, dim, chunk, (i / block) * block, block, i ^ block,
                        k.sem(2 + s));
      }
      case AllGatherKernelKind::kDirect: {
        XS_ASSIGN_OR_RETURN(Ref mine, Slot(k.out(0), dim, i, 1, chunk));
        std::vector<AsyncCopy> copies;
        for (int64_t j = 1; j < n; ++j) {
          XS_ASSIGN_OR_RETURN(AsyncCopy c, MakeAsyncRemoteCopy(k.in(0), mine, k.sem(1), k.sem(2),
                                                               g.Id((i + j) % n, kind)));
          XS_RETURN_IF_ERROR(c.Start());
          copies.push_back(std::move(c));
        }
        for (const AsyncCopy& c : copies) XS_RETURN_IF_ERROR(c.WaitSend());
        for (const AsyncCopy& c : copies) XS_RETURN_IF_ERROR(c.WaitRecv());
        return OkStatus();
      }
    }
    return OkStatus();
  };
  PallasOptions options;
  options.name = StrCat(AllGatherKernelName(kind), "_all_gather");
  options.transport = &transport;
  XS_ASSIGN_OR_RETURN(
      PallasKernel kernel,
      PallasCall(std::move(body), {steps}, {BlockSpec::Any()}, {BlockSpec::Any()},
                 {Shape(x.dtype(), out_dims)},
                 {ScratchShape::Semaphores(SemaphoreType::kDma, 2 + static_cast<int>(steps))},
                 options));
  XS_ASSIGN_OR_RETURN(std::vector<Array> r, kernel(ctx, {x}));
  return std::move(r[0]);
}

StatusOr<Array> DistributedGemm(ShardMapContext& ctx, RemoteTransport& transport, const Array& x,
                                const Array& w, MatmulTiles tiles, AllGatherKernelKind kind,
                                const std::string& row, const std::string& col) {
  XS_ASSIGN_OR_RETURN(Array w_full, AllGatherKernel(ctx, transport, w, {row}, kind, 0));
  XS_ASSIGN_OR_RETURN(int64_t c, ctx.AxisIndex(col));
  if (x.rank() != 2 || w_full.rank() != 2 || w_full.dims()[0] % x.dims()[1] != 0) {
    return InvalidArgument("distributed GEMM: x ", x.shape().ToString(false),
                           " and gathered weights ", w_full.shape().ToString(false),
                           " do not fit P(", row, ", ", col, ") x P(", row, ", None)");
  }
  const int64_t kc = x.dims()[1];
  const Array w_slice = w_full.Slice({c * kc, 0}, {kc, w_full.dims()[1]});
  XS_ASSIGN_OR_RETURN(Array local, TiledMatmul(x, w_slice, tiles, DType::kF32));
  return ctx.Psum(local, col);
}

}  // namespace xs::cmm
