// Seed 003's GSPMD and systolic collective matmuls (OS / IS / WS) and seed 004's all-gather
// variants, one device's body each, written as the seed's shard_map functions are.
#include "xshard/cmm/algorithms.h"

namespace xs::cmm {

// GSPMD_OS: gather X's columns over 'col' and W's rows over 'row', then one matmul.
StatusOr<Array> GspmdOs(Dev& dev, const CmmSpec&, const Array& a, const Array& b) {
  XS_ASSIGN_OR_RETURN(Array xi, dev.AllGather(a, "col", 1));
  XS_ASSIGN_OR_RETURN(Array wj, dev.AllGather(b, "row", 0));
  return dev.Dot(xi, wj);
}

// GSPMD_IS: gather W^T's rows over 'row', multiply (einsum 'mn,kn->mk'), psum_scatter the
// partial sums over 'col' along the output columns.
StatusOr<Array> GspmdIs(Dev& dev, const CmmSpec&, const Array& a, const Array& b) {
  XS_ASSIGN_OR_RETURN(Array wj, dev.AllGather(b, "row", 0));
  XS_ASSIGN_OR_RETURN(Array yp, dev.Dot(a, wj, 1, 1));
  return dev.PsumScatter(yp, "col", 1);
}

// GSPMD_WS: gather X^T's columns over 'col', multiply (einsum 'ib,io->bo'), psum_scatter over
// 'row' along the output rows.
StatusOr<Array> GspmdWs(Dev& dev, const CmmSpec&, const Array& a, const Array& b) {
  XS_ASSIGN_OR_RETURN(Array xi, dev.AllGather(a, "col", 1));
  XS_ASSIGN_OR_RETURN(Array yp, dev.Dot(xi, b, 0, 0));
  return dev.PsumScatter(yp, "row", 0);
}

// The systolic loops interleave the all-gathers with the matmuls: chunk k+1's all-gather starts
// (all-gather-start) before chunk k's matmul and is finished (-done) after it.

// Systolic_OS_: for each of the K chunks of the contraction dim, gather X's chunk over 'col' and
// W's chunk over 'row' and accumulate their product. The strided chunks line up: element (q, b)
// of a gathered chunk k is global index q*K*B + k*B + b on both sides.
StatusOr<Array> SystolicOs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b) {
  const int64_t kc = spec.chunks, bl = spec.block;
  auto start = [&](int64_t k, Transfer& x, Transfer& w) -> Status {
    XS_ASSIGN_OR_RETURN(x, dev.AllGatherStart(Chunk(a, 1, k, kc, bl), "col", 1));
    XS_ASSIGN_OR_RETURN(w, dev.AllGatherStart(Chunk(b, 0, k, kc, bl), "row", 0));
    return OkStatus();
  };
  Array y(DType::kF32, {a.dims()[0], b.dims()[1]});
  Transfer x_next, w_next;
  XS_RETURN_IF_ERROR(start(0, x_next, w_next));
  for (int64_t k = 0; k < kc; ++k) {
    XS_ASSIGN_OR_RETURN(Array xk, dev.Finish(x_next));
    XS_ASSIGN_OR_RETURN(Array wk, dev.Finish(w_next));
    if (k + 1 < kc) XS_RETURN_IF_ERROR(start(k + 1, x_next, w_next));
    XS_RETURN_IF_ERROR(dev.DotAdd(y, xk, wk));
  }
  return y;
}

// Systolic_IS_ / Systolic_WS_: for each chunk of the output's columns (IS) or rows (WS), gather
// the chunk of the operand that spans it (W^T's rows over 'row', or X^T's columns over 'col'),
// multiply (einsum 'ni,okbi->nokb' / 'inkb,io->nkbo'), psum_scatter the partial sums over the
// other axis and write the piece into the chunk's place in the output.
StatusOr<Array> SystolicScatter(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b,
                                bool is) {
  const int64_t kc = spec.chunks, bl = spec.block;
  XS_ASSIGN_OR_RETURN(int64_t rows, dev.Size("row"));
  XS_ASSIGN_OR_RETURN(int64_t cols, dev.Size("col"));
  auto start = [&](int64_t k) {
    return is ? dev.AllGatherStart(Chunk(b, 0, k, kc, bl), "row", 0)
              : dev.AllGatherStart(Chunk(a, 1, k, kc, bl), "col", 1);
  };
  Array y(DType::kF32, is ? std::vector<int64_t>{a.dims()[0], spec.dims.n / cols}
                          : std::vector<int64_t>{spec.dims.m / rows, b.dims()[1]});
  XS_ASSIGN_OR_RETURN(Transfer next, start(0));
  for (int64_t k = 0; k < kc; ++k) {
    XS_ASSIGN_OR_RETURN(Array gathered, dev.Finish(next));
    if (k + 1 < kc) {
      XS_ASSIGN_OR_RETURN(next, start(k + 1));
    }
    XS_ASSIGN_OR_RETURN(Array yk, is ? dev.Dot(a, gathered, 1, 1) : dev.Dot(gathered, b, 0, 0));
    XS_ASSIGN_OR_RETURN(Array piece, dev.PsumScatter(yk, is ? "col" : "row", is ? 1 : 0));
    PutChunk(y, piece, is ? 1 : 0, k, kc, bl);
  }
  return y;
}

StatusOr<Array> SystolicIs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b) {
  return SystolicScatter(dev, spec, a, b, /*is=*/true);
}

StatusOr<Array> SystolicWs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b) {
  return SystolicScatter(dev, spec, a, b, /*is=*/false);
}

// Seed 004's xla_matmul: inputs P('x','y'), weights P('x',None); gather the input's columns over
// 'col' and the weights' rows over 'row', then one matmul; the result is P('row', None).
StatusOr<Array> AgDot(Dev& dev, const CmmSpec&, const Array& a, const Array& b) {
  XS_ASSIGN_OR_RETURN(Array xi, dev.AllGather(a, "col", 1));
  XS_ASSIGN_OR_RETURN(Array wf, dev.AllGather(b, "row", 0));
  return dev.Dot(xi, wf);
}

// Seed 004's xla_matmul3: gather the weights over 'row', slice the rows that meet this device's
// input columns (dynamic_slice at col_index * k/cols), multiply with f32 accumulation, psum the
// partial sums over 'col'.
StatusOr<Array> SlicePsum(Dev& dev, const CmmSpec&, const Array& a, const Array& b) {
  XS_ASSIGN_OR_RETURN(int64_t idx, dev.Index("col"));
  XS_ASSIGN_OR_RETURN(Array wf, dev.AllGather(b, "row", 0));
  const int64_t kc = a.dims()[1];
  XS_ASSIGN_OR_RETURN(Array local, dev.Dot(a, Rows(wf, idx * kc, kc)));
  return dev.Psum(local, "col");
}

}  // namespace xs::cmm
