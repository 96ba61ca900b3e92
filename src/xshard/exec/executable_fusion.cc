// Runs a fused elementwise loop (fusion_plan.h): the output shape is cut into tiles of
// kFusedTile elements; chunks of tiles run on the process pool (kernels/parallel.h), each with
// its own tile buffers, uniform values computed once per chunk.
#include <algorithm>
#include <cstring>
#include <memory>

#include "xshard/exec/executable_plan.h"
#include "xshard/exec/fusion_plan.h"
#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/fill_simd.h"
#include "xshard/kernels/parallel.h"

namespace xs {
namespace {

// Loops smaller than this run on the calling thread alone.
constexpr int64_t kParallelElements = int64_t{1} << 16;

using kernels::FillRun;  // vector stores (kernels/fill_simd.h)

// Elements [off, off + n) of broadcast(operand) along the loop dims, in `out`, or where the
// operand already holds them as one run: runs along the last dim are copied (stride 1), filled
// (stride 0) or gathered. Returns where the elements are.
const std::byte* Gather(const FusedOp& op, const std::vector<int64_t>& dims, const std::byte* base, int esize,
                        int64_t off, int64_t n, std::byte* out) {
  const int r = static_cast<int>(dims.size());
  // A periodic operand (op.period): the elements are the operand's from (off mod period) on,
  // wrapping around. One copy of the operand, then the tile doubles itself: a few large copies
  // instead of one per row.
  if (op.period > 1) {
    const int64_t period = op.period, phase = off % period;
    if (phase + n <= period) return base + phase * esize;
    const int64_t head = period - phase;
    std::memcpy(out, base + phase * esize, static_cast<size_t>(head * esize));
    const int64_t whole = std::min(period, n - head);
    std::memcpy(out + head * esize, base, static_cast<size_t>(whole * esize));
    // out[head, head + have) holds whole periods from phase 0; copy it forward, doubling.
    for (int64_t have = whole, done = head + whole; done < n;) {
      const int64_t c = std::min(have, n - done);
      std::memcpy(out + done * esize, out + head * esize, static_cast<size_t>(c * esize));
      done += c;
      have += c;
    }
    return out;
  }
  int64_t idx[16];
  std::vector<int64_t> big;
  int64_t* index = idx;
  if (r > 16) {
    big.resize(r);
    index = big.data();
  }
  int64_t src = 0, rest = off;
  for (int d = r - 1; d >= 0; --d) {
    index[d] = rest % dims[d];
    rest /= dims[d];
    src += index[d] * op.strides[d];
  }
  const int64_t last = dims[r - 1], s = op.strides[r - 1];
  // The whole tile is one contiguous run of the operand (a [B, D] bias over [B, S, D] with D at
  // least a tile): read it in place.
  if (s == 1 && last - index[r - 1] >= n) return base + src * esize;
  int64_t i = 0;
  while (i < n) {
    const int64_t run = std::min(n - i, last - index[r - 1]);
    std::byte* o = out + i * esize;
    if (s == 1) {
      std::memcpy(o, base + src * esize, static_cast<size_t>(run * esize));
    } else if (s == 0) {
      FillRun(o, base + src * esize, run, esize);
    } else {
      for (int64_t k = 0; k < run; ++k) {
        std::memcpy(o + k * esize, base + (src + k * s) * esize, static_cast<size_t>(esize));
      }
    }
    i += run;
    index[r - 1] += run;
    src += run * s;
    for (int d = r - 1; d > 0 && index[d] == dims[d]; --d) {
      index[d] = 0;
      src -= dims[d] * op.strides[d];
      ++index[d - 1];
      src += op.strides[d - 1];
    }
  }
  return out;
}

// Row `row` of a row gather's table: ids[row] clamped to [0, rows - 1] (IsRowGather).
int64_t TableRow(const std::byte* ids, DType t, int64_t row, int64_t rows) {
  auto clamp_signed = [&](int64_t v) { return std::clamp<int64_t>(v, 0, rows - 1); };
  auto clamp_unsigned = [&](uint64_t v) { return static_cast<int64_t>(std::min<uint64_t>(v, rows - 1)); };
  switch (t) {
    case DType::kS8: return clamp_signed(reinterpret_cast<const int8_t*>(ids)[row]);
    case DType::kS16: return clamp_signed(reinterpret_cast<const int16_t*>(ids)[row]);
    case DType::kS32: return clamp_signed(reinterpret_cast<const int32_t*>(ids)[row]);
    case DType::kS64: return clamp_signed(reinterpret_cast<const int64_t*>(ids)[row]);
    case DType::kU8: return clamp_unsigned(reinterpret_cast<const uint8_t*>(ids)[row]);
    case DType::kU16: return clamp_unsigned(reinterpret_cast<const uint16_t*>(ids)[row]);
    case DType::kU32: return clamp_unsigned(reinterpret_cast<const uint32_t*>(ids)[row]);
    default: return clamp_unsigned(reinterpret_cast<const uint64_t*>(ids)[row]);
  }
}

// Elements [off, off + n) of a row gather into `out`, or where the table holds them as one run
// (a tile inside one row: an embedding row of 512 or more elements is read in place, never
// copied). Returns where the elements are.
// The table rows sit anywhere, where the hardware prefetchers cannot follow: a tile that ends a
// row asks for the first lines of the row that comes `kRowsAhead` tiles of rows later
// (`count`: the loop's elements).
const std::byte* RowGather(const FusedOp& op, const std::byte* table, const std::byte* ids, int esize, int64_t off,
                           int64_t n, int64_t count, std::byte* out) {
  constexpr int64_t kRowsAhead = 4;
  const DType t = op.inst->operand(1)->shape().dtype();
  int64_t row = off / op.inner, col = off % op.inner;
  if (col + n == op.inner && (row + kRowsAhead) * op.inner < count) {
    const char* next =
        reinterpret_cast<const char*>(table + TableRow(ids, t, row + kRowsAhead, op.size) * op.inner * esize);
    const int64_t bytes = std::min<int64_t>(op.inner * esize, 4096);
    for (int64_t at = 0; at < bytes; at += 64) __builtin_prefetch(next + at, 0, 3);
  }
  if (col + n <= op.inner) return table + (TableRow(ids, t, row, op.size) * op.inner + col) * esize;
  for (int64_t i = 0; i < n; ++row, col = 0) {
    const int64_t run = std::min(n - i, op.inner - col);
    std::memcpy(out + i * esize, table + (TableRow(ids, t, row, op.size) * op.inner + col) * esize,
                static_cast<size_t>(run * esize));
    i += run;
  }
  return out;
}

// A periodic broadcast's tile, kept between tiles: most loops start every tile at the same phase
// (a multiple of kFusedTile), so a period that divides the tile is expanded once per chunk, not
// once per tile ((x - m[c]) * r[c] * g[c] + b[c] over [N, H, W, 128]: four expansions of three
// copies each per 2 KiB tile cost as much as the arithmetic).
struct GatherTile {
  std::byte* data = nullptr;
  int64_t phase = -1, n = 0;
};

// Runs of `inner` equal values, v = (linear / inner) % size, each start + step * v; an iota along
// the last dim (inner 1) is one ramp per row.
void Iota(const FusedOp& op, int64_t off, int64_t n, int64_t* out) {
  int64_t r = off % op.inner, v = (off / op.inner) % op.size;
  for (int64_t i = 0; i < n;) {
    if (op.inner == 1) {
      const int64_t len = std::min(n - i, op.size - v), a = op.start + op.step * v;
      for (int64_t k = 0; k < len; ++k) out[i + k] = a + op.step * k;
      i += len;
      v = 0;
      continue;
    }
    const int64_t len = std::min(n - i, op.inner - r), value = op.start + op.step * v;
    std::fill(out + i, out + i + len, value);
    i += len;
    r = 0;
    if (++v == op.size) v = 0;
  }
}

// Elements [off, off + n) of a kConcat: a pointer into the piece that holds them all, else the
// runs of each piece copied into `out`.
const std::byte* Concat(const FusedOp& op, const std::vector<const std::byte*>& inputs, int esize, int64_t off,
                        int64_t n, std::byte* out) {
  size_t k = static_cast<size_t>(std::upper_bound(op.bounds.begin(), op.bounds.end(), off) - op.bounds.begin()) - 1;
  if (off + n <= op.bounds[k + 1]) return inputs[op.pieces[k]] + (off - op.bounds[k]) * esize;
  for (int64_t i = 0; i < n; ++k) {
    const int64_t at = off + i, len = std::min(n - i, op.bounds[k + 1] - at);
    std::memcpy(out + i * esize, inputs[op.pieces[k]] + (at - op.bounds[k]) * esize, static_cast<size_t>(len * esize));
    i += len;
  }
  return out;
}

// Runs `op` on elements [off, off + n). A broadcast (kGather) may point p[op.out] into its operand
// or at its kept tile (`kept`, for periodic ones) instead of filling the value's buffer, `home`.
void RunOp(const FusedLoop& f, const FusedOp& op, std::byte** p, std::byte* const* home, GatherTile* kept,
           const std::vector<const std::byte*>& inputs, int64_t off, int64_t n, int64_t* iota) {
  std::byte* out = p[op.out];
  switch (op.kind) {
    case FusedOpKind::kUnary: op.unary(p[op.in[0]], out, n); return;
    case FusedOpKind::kBinary:
    case FusedOpKind::kRotateLeft: op.binary(p[op.in[0]], p[op.in[1]], out, n); return;
    case FusedOpKind::kTernary: op.ternary(p[op.in[0]], p[op.in[1]], p[op.in[2]], out, n); return;
    case FusedOpKind::kCopy:
      std::memcpy(out, p[op.in[0]], static_cast<size_t>(n * f.values[op.out].esize));
      return;
    case FusedOpKind::kFill:
      FillRun(out, inputs[op.in[0]], n, f.values[op.out].esize);
      return;
    case FusedOpKind::kIota:
      if (op.unary == nullptr) {
        Iota(op, off, n, reinterpret_cast<int64_t*>(out));
      } else {
        Iota(op, off, n, iota);
        op.unary(reinterpret_cast<const std::byte*>(iota), out, n);
      }
      return;
    case FusedOpKind::kConcat: {
      const int esize = f.values[op.out].esize;
      std::byte* buffer = home != nullptr ? home[op.out] : out;
      const std::byte* at = Concat(op, inputs, esize, off, n, buffer);
      if (home != nullptr) {
        p[op.out] = const_cast<std::byte*>(at);
      } else if (at != buffer) {
        std::memcpy(buffer, at, static_cast<size_t>(n * esize));
      }
      return;
    }
    case FusedOpKind::kRowGather: {
      const int esize = f.values[op.out].esize;
      std::byte* buffer = home != nullptr ? home[op.out] : out;
      const std::byte* at = RowGather(op, inputs[op.in[0]], inputs[op.in[1]], esize, off, n, f.count, buffer);
      if (home != nullptr) {
        p[op.out] = const_cast<std::byte*>(at);
      } else if (at != buffer) {
        std::memcpy(buffer, at, static_cast<size_t>(n * esize));
      }
      return;
    }
    case FusedOpKind::kGather: {
      const int esize = f.values[op.out].esize;
      if (kept != nullptr && op.period > 1) {
        const int64_t phase = off % op.period;
        if (phase + n <= op.period) {
          p[op.out] = const_cast<std::byte*>(inputs[op.in[0]]) + phase * esize;
        } else {
          if (kept->phase != phase || kept->n < n) {
            Gather(op, f.dims, inputs[op.in[0]], esize, off, n, kept->data);
            kept->phase = phase;
            kept->n = n;
          }
          p[op.out] = kept->data;
        }
        return;
      }
      // Values read by the loop's ops only (not outputs) may point into the operand; the
      // elements are never written through them.
      std::byte* buffer = home != nullptr ? home[op.out] : out;
      const std::byte* at = Gather(op, f.dims, inputs[op.in[0]], esize, off, n, buffer);
      if (home != nullptr) {
        p[op.out] = const_cast<std::byte*>(at);
      } else if (at != buffer) {
        std::memcpy(buffer, at, static_cast<size_t>(n * esize));
      }
      return;
    }
  }
}

// A chunk of a loop: `rows` runs of `width` elements, run k starting at element first + k * stride.
struct Runs {
  int64_t first = 0, stride = 0, rows = 1, width = 0;
};

// The elements of `runs` in tiles, in order, with one set of per-thread buffers; `reduced`: the
// reduce's result (when the loop has one).
// With `stream`, each tile of an output is computed in a buffer of its own and then written with
// non-temporal stores (kernels::StreamCopy): the outputs are larger than the caches.
void RunChunk(const FusedLoop& f, const std::vector<const std::byte*>& inputs,
              const std::vector<std::byte*>& outputs, std::byte* reduced, const Runs& runs,
              bool stream) {
  // A reduce of a group input and nothing else (x.sum(0)): each run in one call, not tile by tile.
  if (f.has_reduce && f.body.empty() && f.outputs.empty() && f.values[f.reduce.value].kind == FusedValueKind::kInput) {
    const FusedValue& in = f.values[f.reduce.value];
    for (int64_t row = 0; row < runs.rows; ++row) {
      const int64_t begin = runs.first + row * runs.stride;
      f.reduce.fn(inputs[in.input] + begin * in.esize, reduced, f.dims, f.reduce.ostride, begin, runs.width);
    }
    return;
  }
  const int64_t buffer_bytes = kFusedTile * f.max_esize;
  const int64_t stream_buffers = stream ? static_cast<int64_t>(f.outputs.size()) : 0;
  // Broadcasts (values the ops only read) may be pointed elsewhere; periodic ones keep a tile.
  auto redirectable = [&](const FusedOp& op) {
    return (op.kind == FusedOpKind::kGather || op.kind == FusedOpKind::kRowGather || op.kind == FusedOpKind::kConcat) &&
           f.values[op.out].kind == FusedValueKind::kScratch;
  };
  int64_t kept_buffers = 0;
  for (const FusedOp& op : f.body) {
    kept_buffers += redirectable(op) && op.kind == FusedOpKind::kGather && op.period > 1 ? 1 : 0;
  }
  const size_t total =
      static_cast<size_t>(buffer_bytes * (f.num_buffers + stream_buffers + kept_buffers) + kFusedTile * 8);
  struct AlignedDelete {
    void operator()(std::byte* b) const { ::operator delete[](b, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte[], AlignedDelete> scratch(
      static_cast<std::byte*>(::operator new[](total, std::align_val_t{64})));
  int64_t* iota = reinterpret_cast<int64_t*>(scratch.get() + buffer_bytes * (f.num_buffers + stream_buffers));
  std::byte* stream_base = scratch.get() + buffer_bytes * f.num_buffers;
  std::vector<std::byte*> p(f.values.size(), nullptr);
  for (size_t v = 0; v < f.values.size(); ++v) {
    if (f.values[v].buffer >= 0) p[v] = scratch.get() + f.values[v].buffer * buffer_bytes;
  }
  const std::vector<std::byte*> home = p;
  std::vector<GatherTile> kept(f.body.size());
  std::byte* next_kept = scratch.get() + kFusedTile * 8 + buffer_bytes * (f.num_buffers + stream_buffers);
  for (size_t i = 0; i < f.body.size(); ++i) {
    if (redirectable(f.body[i]) && f.body[i].kind == FusedOpKind::kGather && f.body[i].period > 1) {
      kept[i].data = next_kept;
      next_kept += buffer_bytes;
    }
  }
  const int64_t prologue_n = std::min(kFusedTile, f.count);
  for (const FusedOp& op : f.prologue) RunOp(f, op, p.data(), nullptr, nullptr, inputs, 0, prologue_n, iota);
  // What changes from tile to tile, found once: the values read or written in place (their base
  // pointers and element sizes) and, per op, where a broadcast may point.
  struct InPlace {
    int value;
    std::byte* base;
    int64_t esize;
  };
  std::vector<InPlace> in_place, streamed;
  for (size_t v = 0; v < f.values.size(); ++v) {
    const FusedValue& fv = f.values[v];
    if (fv.kind == FusedValueKind::kInput) {
      in_place.push_back({static_cast<int>(v), const_cast<std::byte*>(inputs[fv.input]), fv.esize});
    } else if (fv.kind == FusedValueKind::kOutput) {
      if (stream) {
        p[v] = stream_base + fv.output * buffer_bytes;
        streamed.push_back({static_cast<int>(v), outputs[fv.output], fv.esize});
      } else {
        in_place.push_back({static_cast<int>(v), outputs[fv.output], fv.esize});
      }
    }
  }
  std::vector<std::byte* const*> op_home(f.body.size(), nullptr);
  std::vector<GatherTile*> op_kept(f.body.size(), nullptr);
  for (size_t i = 0; i < f.body.size(); ++i) {
    if (redirectable(f.body[i])) op_home[i] = home.data();
    if (kept[i].data != nullptr) op_kept[i] = &kept[i];
  }
  for (int64_t row = 0; row < runs.rows; ++row) {
    const int64_t begin = runs.first + row * runs.stride, end = begin + runs.width;
    for (int64_t off = begin; off < end; off += kFusedTile) {
      const int64_t n = std::min(kFusedTile, end - off);
      for (const InPlace& v : in_place) p[v.value] = v.base + off * v.esize;
      for (size_t i = 0; i < f.body.size(); ++i) {
        RunOp(f, f.body[i], p.data(), op_home[i], op_kept[i], inputs, off, n, iota);
      }
      if (f.has_reduce) f.reduce.fn(p[f.reduce.value], reduced, f.dims, f.reduce.ostride, off, n);
      for (const InPlace& v : streamed) kernels::StreamCopy(v.base + off * v.esize, p[v.value], n * v.esize);
    }
  }
  if (stream) kernels::StreamFence();
}

}  // namespace

Status RunFusedLoop(const Step& step, Frame& frame, RunContext& ctx) {
  const FusedPayload& payload = step.fused();
  const FusedLoop& f = *payload.loop;
  const std::vector<int64_t>& output_offsets = payload.output_offsets;
  std::vector<const std::byte*> inputs(step.operands.size());
  for (size_t k = 0; k < inputs.size(); ++k) inputs[k] = OperandArray(step, frame, static_cast<int>(k)).data();
  std::vector<std::shared_ptr<Array>> out_arrays(f.outputs.size());
  std::vector<std::byte*> outputs(f.outputs.size());
  for (size_t o = 0; o < f.outputs.size(); ++o) {
    const bool primary = !f.has_reduce && o + 1 == f.outputs.size();
    if (primary && f.donor >= 0 && CanTakeOverOperand(step, frame, f.donor)) {
      out_arrays[o] = ResultBuffer(step, frame, ctx, f.donor);
    } else if (primary) {
      out_arrays[o] = NewArray(f.outputs[o].inst->shape(), ctx);  // the planned buffer
    } else if (o < output_offsets.size() && output_offsets[o] >= 0 && ctx.frame_arena != nullptr) {
      out_arrays[o] = std::make_shared<Array>(Array::View(f.outputs[o].inst->shape().WithoutLayout(),
                                                          ctx.frame_arena + output_offsets[o]));
    } else if (const int d = f.outputs[o].donor; d >= 0 && CanTakeOverOperand(step, frame, d)) {
      // Written over its dying input (the plan checked dtype, dims and read order); the shared
      // owner now counts two, so no other output takes the same buffer.
      out_arrays[o] = frame.slots[step.operands[d]].array;
    } else {
      // The loop writes every element: no zero-fill pass over the output.
      out_arrays[o] = AdoptArray(Array::Uninitialized(f.outputs[o].inst->shape().WithoutLayout()), ctx);
    }
    outputs[o] = out_arrays[o]->data();
  }
  std::shared_ptr<Array> reduced;
  if (f.has_reduce) {
    reduced = NewArray(f.reduce.inst->shape(), ctx);  // the planned buffer, filled below
    FillRun(reduced->data(), inputs[f.reduce.init], reduced->num_elements(),
                 static_cast<int>(DTypeSize(reduced->dtype())));
  }
  int threads = IntraOpThreads(ctx);
  if (f.count < kParallelElements) threads = 1;
  // Chunks of whole tiles. With a reduce, each result element must be combined by one thread in
  // row-major order: chunks of outer rows when the outer dim is kept, else of columns when the
  // last dim is kept (every row's slice of those columns, rows in order), else one chunk.
  const int64_t last = f.dims.back();
  int64_t units = (f.count + kFusedTile - 1) / kFusedTile, unit = kFusedTile;
  bool columns = false;
  if (f.has_reduce) {
    if (f.reduce.ostride[0] != 0) {
      units = f.dims[0];
      unit = f.count / units;
    } else if (f.reduce.ostride.back() != 0 && f.dims.size() > 1) {
      columns = true;
      units = (last + 63) / 64;  // column blocks of 64 elements
      unit = 64;
    } else {
      units = 1;
      unit = f.count;
    }
  }
  // Column chunks whose rows are at least 4 KiB: each row of a chunk is one call of the reduce
  // loop, and narrower runs cost more in calls and strided reads than they gain in threads. f32
  // [8192,1024] summed over rows, one chunk per thread (512 columns) took 5.9-6.3 ms, chunks of
  // 256 columns 7.3-7.6 ms, the whole array in order on one thread 2.3-2.7 ms (JAX 1.7 ms).
  const int64_t units_per_chunk = columns ? std::max<int64_t>(1, 4096 / (64 * f.max_esize)) : 1;
  const int64_t chunks =
      threads <= 1 ? 1 : std::max<int64_t>(1, std::min<int64_t>(units / units_per_chunk, int64_t{threads} * 4));
  // One chunk of every column is the whole array in order: contiguous tiles of many rows, not
  // one call per row (the batch statistics of [25088, 128] activations).
  if (columns && chunks == 1) {
    columns = false;
    units = 1;
    unit = f.count;
  }
  // Outputs larger than the caches bypass them (no reduce: its loop order is not tile-major).
  const bool stream = StreamsOutputs(f);
  std::byte* reduced_data = reduced ? reduced->data() : nullptr;
  const kernels::ColumnBlocks& cb = f.reduce.blocks;
  if (f.has_reduce && cb.blocks > 1) {
    // A column sum in blocks of rows (kernels::PlanColumnBlocks): block 0 into the result, the
    // others into partials of their own, then the partials added in order.
    const DType dtype = reduced->dtype();
    const int64_t n = reduced->num_elements(), es = DTypeSize(dtype);
    // An Array: repeated calls reuse a large buffer instead of faulting in fresh pages.
    Array partials = Array::Uninitialized(Shape(dtype, {(cb.blocks - 1) * n}));
    kernels::ParallelFor(cb.blocks, threads, [&](int64_t b) {
      std::byte* target = reduced_data;
      if (b > 0) {
        target = partials.data() + (b - 1) * n * es;
        kernels::InitColumnPartials(dtype, target, n, 1);
      }
      Runs runs;
      runs.first = b * cb.block_rows * cb.slab;
      runs.width = std::min(cb.block_rows, cb.rows - b * cb.block_rows) * cb.slab;
      RunChunk(f, inputs, outputs, target, runs, /*stream=*/false);
    });
    kernels::AddColumnPartials(dtype, reduced_data, partials.data(), n, cb.blocks - 1);
  } else {
    kernels::ParallelFor(chunks, threads, [&](int64_t c) {
      Runs runs;
      if (columns) {
        runs.first = units * c / chunks * unit;
        runs.width = std::min(last, units * (c + 1) / chunks * unit) - runs.first;
        runs.stride = last;
        runs.rows = f.count / last;
      } else {
        runs.first = units * c / chunks * unit;
        runs.width = std::min(f.count, units * (c + 1) / chunks * unit) - runs.first;
      }
      RunChunk(f, inputs, outputs, reduced_data, runs, stream);
    });
  }
  for (size_t o = 0; o < f.outputs.size(); ++o) {
    frame.slots[f.outputs[o].slot] = OwnedSlot(std::move(out_arrays[o]));
  }
  if (reduced) frame.slots[step.out] = OwnedSlot(std::move(reduced));
  ctx.instructions_run += f.members + (f.has_reduce ? 1 : 0) - 1;
  return OkStatus();
}

}  // namespace xs
