// Seed 003's shard_map matmuls on a 4x2 mesh of virtual CPU devices: matmul_basic (partial sums
// psum'ed over 'y') and the three GSPMD layouts of a sharded linear layer, GSPMD_OS (gather X's
// columns and W's rows, multiply), GSPMD_IS (gather W, multiply by its transpose,
// psum_scatter over 'col') and GSPMD_WS (gather X^T, multiply, psum_scatter over 'row'). Each is
// checked against a single-device matmul; exits 1 on a wrong result.
#include "xshard/ir/module.h"
#include "xshard/kernels/dot.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"
#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/replica_groups.h"

#include <cmath>
#include <cstdio>
#include <iostream>

#include "xshard/shard_map/shard_map.h"

namespace {

using xs::Array;
using xs::ShardMapContext;
using xs::StatusOr;

// lhs @ rhs contracting lhs dim `lc` with rhs dim `rc` (jnp.einsum with one contracted index).
StatusOr<Array> Dot(const Array& lhs, const Array& rhs, int64_t lc = 1, int64_t rc = 0) {
  xs::DotDimensionNumbers d;
  d.lhs_contracting = {lc};
  d.rhs_contracting = {rc};
  return xs::kernels::DotGeneral(lhs, rhs, d, xs::DType::kF32);
}

// jnp.arange(n, dtype=f32).reshape(dims) / n, as the seed's later cells scale X and W.
Array Ramp(std::vector<int64_t> dims) {
  Array a = Array::Iota(xs::DType::kF32, std::move(dims));
  const double n = static_cast<double>(a.num_elements());
  for (int64_t k = 0; k < a.num_elements(); ++k) a.SetDouble(k, a.GetDouble(k) / n);
  return a;
}

Array Transpose(const Array& a) {
  Array t(a.dtype(), {a.dims()[1], a.dims()[0]});
  for (int64_t i = 0; i < a.dims()[0]; ++i) {
    for (int64_t j = 0; j < a.dims()[1]; ++j) {
      t.SetDouble(j * a.dims()[0] + i, a.GetDouble(i * a.dims()[1] + j));
    }
  }
  return t;
}

// jnp.allclose(got, want, atol=tol, rtol=tol), naming the first bad element. The seed uses 1e-2;
// 1e-4 still leaves room for the different summation order of the sharded products.
xs::Status CheckClose(const std::string& name, const Array& got, const Array& want,
                      double tol = 1e-4) {
  if (got.dims() != want.dims()) {
    return xs::Internal(name, ": result is ", got.shape().ToString(false), ", expected ",
                        want.shape().ToString(false));
  }
  double worst = 0;
  for (int64_t k = 0; k < want.num_elements(); ++k) {
    const double g = got.GetDouble(k), w = want.GetDouble(k);
    if (!(std::abs(g - w) <= tol + tol * std::abs(w))) {
      return xs::Internal(name, ": element ", k, " is ", g, ", expected ", w);
    }
    worst = std::max(worst, std::abs(g - w) / std::max(1.0, std::abs(w)));
  }
  std::printf("%-13s %-13s allclose to the single-device matmul (max rel. error %.1e)\n",
              name.c_str(), got.shape().ToString(false).c_str(), worst);
  return xs::OkStatus();
}

// Runs `fn` with shard_map over `mesh` (both inputs and the output P(a0, a1) unless given).
StatusOr<Array> Map(xs::Client& client, const xs::Mesh& mesh, std::vector<xs::PartitionSpec> in,
                    xs::PartitionSpec out, xs::ShardMapFn fn, std::vector<Array> args) {
  XS_ASSIGN_OR_RETURN(xs::ShardMapped f, xs::ShardMap(mesh, std::move(in), {std::move(out)},
                                                      std::move(fn)));
  XS_ASSIGN_OR_RETURN(std::vector<xs::ShardedArray> r, f(client, args));
  return r[0].ToArray();
}

xs::Status Run() {
  xs::ClientOptions options;
  options.num_devices = 8;
  XS_ASSIGN_OR_RETURN(auto client, xs::Client::Create(options));
  using P = xs::PartitionSpec;
  XS_ASSIGN_OR_RETURN(P xy, P::Parse("P('x', 'y')"));
  XS_ASSIGN_OR_RETURN(P y_none, P::Parse("P('y', None)"));
  XS_ASSIGN_OR_RETURN(P x_none, P::Parse("P('x', None)"));
  XS_ASSIGN_OR_RETURN(P rc, P::Parse("P('row', 'col')"));

  // [matmul-basic]
  // matmul_basic: a f32[8,16] as P('x','y'), b f32[16,4] as P('y',None) on mesh x=4, y=2; each
  // device multiplies its f32[2,8] block by its f32[8,4] block, and psum over 'y' adds the two
  // partial sums of every row block. c f32[8,4] comes back as P('x', None).
  XS_ASSIGN_OR_RETURN(xs::Mesh mesh, xs::Mesh::Create({"x", "y"}, {4, 2}));
  const Array a = Array::Iota(xs::DType::kF32, {8, 16});
  const Array b = Array::Iota(xs::DType::kF32, {16, 4});
  auto matmul_basic = [](ShardMapContext& ctx, std::vector<Array> in) -> StatusOr<std::vector<Array>> {
    XS_ASSIGN_OR_RETURN(Array partial, Dot(in[0], in[1]));
    XS_ASSIGN_OR_RETURN(Array c_block, ctx.Psum(partial, "y"));
    return std::vector<Array>{std::move(c_block)};
  };
  XS_ASSIGN_OR_RETURN(Array c, Map(*client, mesh, {xy, y_none}, x_none, matmul_basic, {a, b}));
  // [matmul-basic]
  XS_ASSIGN_OR_RETURN(Array c_ref, Dot(a, b));
  XS_RETURN_IF_ERROR(CheckClose("matmul_basic", c, c_ref));

  // The three GSPMD layouts on mesh row=4, col=2 with B,S,H,D = 4,16,12,32.
  XS_ASSIGN_OR_RETURN(xs::Mesh rc_mesh, xs::Mesh::Create({"row", "col"}, {4, 2}));
  const int64_t bs = 4 * 16, hd = 12 * 32;
  // GSPMD_OS: Y = X @ W; X f32[64,384], W f32[384,1536], everything P('row','col').
  const Array x = Ramp({bs, hd}), w = Ramp({hd, 4 * hd});
  auto gspmd_os = [](ShardMapContext& ctx, std::vector<Array> in) -> StatusOr<std::vector<Array>> {
    XS_ASSIGN_OR_RETURN(Array xi, ctx.AllGather(in[0], "col", /*axis=*/1, /*tiled=*/true));
    XS_ASSIGN_OR_RETURN(Array wj, ctx.AllGather(in[1], "row", /*axis=*/0, /*tiled=*/true));
    XS_ASSIGN_OR_RETURN(Array y, Dot(xi, wj));
    return std::vector<Array>{std::move(y)};
  };
  XS_ASSIGN_OR_RETURN(Array y_os, Map(*client, rc_mesh, {rc, rc}, rc, gspmd_os, {x, w}));
  XS_ASSIGN_OR_RETURN(Array y_ref, Dot(x, w));
  XS_RETURN_IF_ERROR(CheckClose("GSPMD_OS", y_os, y_ref));

  // GSPMD_IS: Y = X1 @ W1.T; X1 f32[64,1536], W1 f32[384,1536] (the transpose of a [1536,384]).
  const Array x1 = Ramp({bs, 4 * hd}), w1 = Transpose(Ramp({4 * hd, hd}));
  auto gspmd_is = [](ShardMapContext& ctx, std::vector<Array> in) -> StatusOr<std::vector<Array>> {
    XS_ASSIGN_OR_RETURN(Array wj, ctx.AllGather(in[1], "row", 0, true));
    XS_ASSIGN_OR_RETURN(Array yp, Dot(in[0], wj, 1, 1));  // einsum('mn,kn->mk')
    XS_ASSIGN_OR_RETURN(Array y, ctx.PsumScatter(yp, "col", /*scatter_dimension=*/1, true));
    return std::vector<Array>{std::move(y)};
  };
  XS_ASSIGN_OR_RETURN(Array y_is, Map(*client, rc_mesh, {rc, rc}, rc, gspmd_is, {x1, w1}));
  XS_ASSIGN_OR_RETURN(Array y_is_ref, Dot(x1, w1, 1, 1));
  XS_RETURN_IF_ERROR(CheckClose("GSPMD_IS", y_is, y_is_ref));

  // GSPMD_WS: Y = X @ W from X.T f32[384,64] and W f32[384,1536], both P('row','col').
  auto gspmd_ws = [](ShardMapContext& ctx, std::vector<Array> in) -> StatusOr<std::vector<Array>> {
    XS_ASSIGN_OR_RETURN(Array xi, ctx.AllGather(in[0], "col", 1, true));
    XS_ASSIGN_OR_RETURN(Array yp, Dot(xi, in[1], 0, 0));  // einsum('ib,io->bo')
    XS_ASSIGN_OR_RETURN(Array y, ctx.PsumScatter(yp, "row", 0, true));
    return std::vector<Array>{std::move(y)};
  };
  XS_ASSIGN_OR_RETURN(Array y_ws, Map(*client, rc_mesh, {rc, rc}, rc, gspmd_ws,
                                      {Transpose(x), w}));
  XS_RETURN_IF_ERROR(CheckClose("GSPMD_WS", y_ws, y_ref));
  return xs::OkStatus();
}

}  // namespace

int main() {
  xs::Status status = Run();
  if (!status.ok()) {
    std::fprintf(stderr, "shard_map_matmul: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
