// Seed 003's Wang et al. collective matmuls: each device's operand (or partial result) is split
// in two halves that travel a bidirectional ppermute ring, one half up and one down. Each step
// starts the two shifts asynchronously (collective-permute-start), multiplies the blocks it
// already holds while they travel, then waits (-done): the transfer overlaps the dot. The
// indices are the seed's.
#include "xshard/cmm/algorithms.h"

namespace xs::cmm {

namespace {

// Starts the up and down shifts of (lo, hi) along `axis`.
Status StartBoth(Dev& dev, const char* axis, Array lo, Array hi, Transfer& up, Transfer& dn) {
  XS_ASSIGN_OR_RETURN(up, dev.ShiftStart(std::move(lo), axis, +1));
  XS_ASSIGN_OR_RETURN(dn, dev.ShiftStart(std::move(hi), axis, -1));
  return OkStatus();
}

// Reduce-scatter ring (Wang IS, and WS splitting the output): accumulators lo / hi for output
// blocks travel up / down the ring over `axis`; at every step each device adds its partial
// product for the block an accumulator currently stands for. partial(i, half) is this device's
// contribution to output block 2*i + half. Returns concat(lo, hi) along `dim`.
template <typename Partial>
StatusOr<Array> ReduceScatterRing(Dev& dev, const char* axis, int dim, Partial partial) {
  XS_ASSIGN_OR_RETURN(int64_t size, dev.Size(axis));
  XS_ASSIGN_OR_RETURN(int64_t idx, dev.Index(axis));
  XS_ASSIGN_OR_RETURN(Array lo, partial(Mod(idx - 1, size), 0));
  XS_ASSIGN_OR_RETURN(Array hi, partial(Mod(idx + 1, size), 1));
  for (int64_t ii = 1; ii < size; ++ii) {
    Transfer up, dn;
    XS_RETURN_IF_ERROR(StartBoth(dev, axis, std::move(lo), std::move(hi), up, dn));
    // The next partial products do not depend on the accumulators in flight.
    XS_ASSIGN_OR_RETURN(Array p_lo, partial(Mod(idx - ii - 1, size), 0));
    XS_ASSIGN_OR_RETURN(Array p_hi, partial(Mod(idx + ii + 1, size), 1));
    XS_ASSIGN_OR_RETURN(lo, dev.Finish(up));
    XS_ASSIGN_OR_RETURN(hi, dev.Finish(dn));
    AddInto(lo, p_lo);
    AddInto(hi, p_hi);
  }
  return Concat(lo, hi, dim);
}

}  // namespace

// Wang_OS: W gathered over 'row'; X's column halves travel the 'col' ring (lo up, hi down) and
// each step adds x_lo @ W rows of the block it came from, and likewise x_hi.
StatusOr<Array> WangOs(Dev& dev, const CmmSpec&, const Array& a, const Array& b) {
  XS_ASSIGN_OR_RETURN(Array wj, dev.AllGather(b, "row", 0));
  XS_ASSIGN_OR_RETURN(int64_t size, dev.Size("col"));
  XS_ASSIGN_OR_RETURN(int64_t idx, dev.Index("col"));
  const int64_t half = wj.dims()[0] / size / 2;
  Array x_lo = Cols(a, 0, half), x_hi = Cols(a, half, half);
  Array out(DType::kF32, {a.dims()[0], wj.dims()[1]});
  for (int64_t i = 0; i < size; ++i) {
    Transfer up, dn;
    const bool more = i + 1 < size;
    if (more) XS_RETURN_IF_ERROR(StartBoth(dev, "col", x_lo, x_hi, up, dn));
    XS_RETURN_IF_ERROR(dev.DotAdd(out, x_lo, RowsView(wj, (2 * Mod(idx - i, size)) * half, half)));
    XS_RETURN_IF_ERROR(dev.DotAdd(out, x_hi, RowsView(wj, (2 * Mod(idx + i, size) + 1) * half, half)));
    if (more) {
      XS_ASSIGN_OR_RETURN(x_lo, dev.Finish(up));
      XS_ASSIGN_OR_RETURN(x_hi, dev.Finish(dn));
    }
  }
  return out;
}

// Wang_IS: W^T gathered over 'row'; the partial sums of this device's two output half-blocks
// travel the 'col' ring and collect every device's einsum('bi,oi->bo') term.
StatusOr<Array> WangIs(Dev& dev, const CmmSpec&, const Array& a, const Array& b) {
  XS_ASSIGN_OR_RETURN(Array wj, dev.AllGather(b, "row", 0));
  XS_ASSIGN_OR_RETURN(int64_t size, dev.Size("col"));
  const int64_t half = wj.dims()[0] / size / 2;
  return ReduceScatterRing(dev, "col", 1, [&](int64_t i, int hi) {
    return dev.Dot(a, RowsView(wj, (2 * i + hi) * half, half), 1, 1);
  });
}

bool WangWsSplitsOutput(const CmmSpec& spec) {
  return spec.cols * (spec.dims.k / spec.rows) > spec.rows * (spec.dims.n / spec.cols);
}

// Wang_WS. When the gathered input is the bigger traffic, X^T is gathered over 'col' and the
// output's row half-blocks are reduce-scattered around the 'row' ring. Otherwise X^T's column
// halves travel the 'col' ring (an all-gather overlapped with the products), each product fills
// its rows of the full-height partial Yj, and Yj is psum_scattered over 'row'.
StatusOr<Array> WangWs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b) {
  if (WangWsSplitsOutput(spec)) {
    XS_ASSIGN_OR_RETURN(Array xi, dev.AllGather(a, "col", 1));
    XS_ASSIGN_OR_RETURN(int64_t size, dev.Size("row"));
    const int64_t half = xi.dims()[1] / size / 2;
    return ReduceScatterRing(dev, "row", 0, [&](int64_t i, int hi) {
      return dev.Dot(Cols(xi, (2 * i + hi) * half, half), b, 0, 0);
    });
  }
  XS_ASSIGN_OR_RETURN(int64_t size, dev.Size("col"));
  XS_ASSIGN_OR_RETURN(int64_t idx, dev.Index("col"));
  const int64_t half = a.dims()[1] / 2;
  Array yj(DType::kF32, {a.dims()[1] * size, b.dims()[1]});
  Array lo = Cols(a, 0, half), hi = Cols(a, half, half);
  for (int64_t ii = 0; ii < size; ++ii) {
    Transfer up, dn;
    const bool more = ii + 1 < size;
    if (more) XS_RETURN_IF_ERROR(StartBoth(dev, "col", lo, hi, up, dn));
    XS_ASSIGN_OR_RETURN(Array y_lo, dev.Dot(lo, b, 0, 0));
    yj.UpdateSlice(y_lo, {2 * Mod(idx - ii, size) * half, 0});
    XS_ASSIGN_OR_RETURN(Array y_hi, dev.Dot(hi, b, 0, 0));
    yj.UpdateSlice(y_hi, {2 * Mod(idx + ii, size) * half + half, 0});
    if (more) {
      XS_ASSIGN_OR_RETURN(lo, dev.Finish(up));
      XS_ASSIGN_OR_RETURN(hi, dev.Finish(dn));
    }
  }
  return dev.PsumScatter(yj, "row", 0);
}

}  // namespace xs::cmm
