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

// Systolic_OS_: for each of the K chunks of the contraction dim, gather X's chunk over 'col' and
// W's chunk over 'row' and accumulate their product. The strided chunks line up: element (q, b)
// of a gathered chunk k is global index q*K*B + k*B + b on both sides.
StatusOr<Array> SystolicOs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b) {
  Array y(DType::kF32, {a.dims()[0], b.dims()[1]});
  for (int64_t k = 0; k < spec.chunks; ++k) {
    XS_ASSIGN_OR_RETURN(Array xk, dev.AllGather(Chunk(a, 1, k, spec.chunks, spec.block), "col", 1));
    XS_ASSIGN_OR_RETURN(Array wk, dev.AllGather(Chunk(b, 0, k, spec.chunks, spec.block), "row", 0));
    XS_RETURN_IF_ERROR(dev.DotAdd(y, xk, wk));
  }
  return y;
}

// Systolic_IS_: for each chunk of the output columns, gather W^T's chunk rows over 'row',
// multiply, psum_scatter over 'col' and write the piece into the chunk's output columns.
StatusOr<Array> SystolicIs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b) {
  XS_ASSIGN_OR_RETURN(int64_t cols, dev.Size("col"));
  Array y(DType::kF32, {a.dims()[0], spec.dims.n / cols});
  for (int64_t k = 0; k < spec.chunks; ++k) {
    XS_ASSIGN_OR_RETURN(Array wk, dev.AllGather(Chunk(b, 0, k, spec.chunks, spec.block), "row", 0));
    XS_ASSIGN_OR_RETURN(Array yk, dev.Dot(a, wk, 1, 1));
    XS_ASSIGN_OR_RETURN(Array piece, dev.PsumScatter(yk, "col", 1));
    PutChunk(y, piece, 1, k, spec.chunks, spec.block);
  }
  return y;
}

// Systolic_WS_: for each chunk of the output rows, gather X^T's chunk columns over 'col',
// multiply (einsum 'inkb,io->nkbo'), psum_scatter over 'row' into the chunk's output rows.
StatusOr<Array> SystolicWs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b) {
  XS_ASSIGN_OR_RETURN(int64_t rows, dev.Size("row"));
  Array y(DType::kF32, {spec.dims.m / rows, b.dims()[1]});
  for (int64_t k = 0; k < spec.chunks; ++k) {
    XS_ASSIGN_OR_RETURN(Array xk, dev.AllGather(Chunk(a, 1, k, spec.chunks, spec.block), "col", 1));
    XS_ASSIGN_OR_RETURN(Array yk, dev.Dot(xk, b, 0, 0));
    XS_ASSIGN_OR_RETURN(Array piece, dev.PsumScatter(yk, "row", 0));
    PutChunk(y, piece, 0, k, spec.chunks, spec.block);
  }
  return y;
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
