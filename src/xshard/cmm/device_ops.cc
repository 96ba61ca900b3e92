// One device's operations for the collective matmuls: timed and counted wrappers over the dot
// kernel and shard_map's collectives, block slicing, and the Chrome trace writer.
#include "xshard/cmm/device_ops.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

#include "xshard/kernels/dot.h"

namespace xs::cmm {

void TraceLog::Add(std::string name, int pid, int64_t device, double ts_us, double dur_us) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back({std::move(name), pid, device, ts_us, dur_us});
}

void TraceLog::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
}

Status TraceLog::Write(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return InvalidArgument("--trace ", path, ": cannot open the file for writing; give a path in "
                           "a writable directory");
  }
  double t0 = events_.empty() ? 0 : events_[0].ts_us;
  for (const Event& e : events_) t0 = std::min(t0, e.ts_us);
  std::fprintf(f, "{\"traceEvents\":[\n");
  std::fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":"
                  "\"compute and blocking collectives\"}},\n");
  std::fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":"
                  "\"asynchronous transfers in flight\"}}");
  for (const Event& e : events_) {
    std::fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%lld,\"ts\":%.3f,"
                    "\"dur\":%.3f}",
                 e.name.c_str(), e.pid, static_cast<long long>(e.tid), e.ts_us - t0, e.dur_us);
  }
  std::fprintf(f, "\n]}\n");
  if (std::fclose(f) != 0) return Internal("--trace ", path, ": writing the file failed");
  return OkStatus();
}

double Dev::Now() const {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Dev::Record(const std::string& name, double t0) {
  if (trace_ != nullptr) trace_->Add(name, 0, ctx_.device(), t0, Now() - t0);
}

StatusOr<Array> Dev::Dot(const Array& lhs, const Array& rhs, int64_t lc, int64_t rc) {
  const double t0 = Now();
  DotDimensionNumbers d;
  d.lhs_contracting = {lc};
  d.rhs_contracting = {rc};
  XS_ASSIGN_OR_RETURN(Array out, kernels::DotGeneral(lhs, rhs, d, DType::kF32));
  if (cost_ != nullptr) {
    cost_->flops += 2 * out.num_elements() * lhs.dims()[lc];
    ++cost_->dots;
  }
  if (trace_ != nullptr) {
    Record(StrCat("dot ", lhs.shape().ToString(false), " x ", rhs.shape().ToString(false)), t0);
  }
  return out;
}

Status Dev::DotAdd(Array& acc, const Array& lhs, const Array& rhs, int64_t lc, int64_t rc) {
  XS_ASSIGN_OR_RETURN(Array p, Dot(lhs, rhs, lc, rc));
  AddInto(acc, p);
  return OkStatus();
}

StatusOr<Array> Dev::AllGather(const Array& x, const char* axis, int dim) {
  const double t0 = Now();
  XS_ASSIGN_OR_RETURN(Array out, ctx_.AllGather(x, axis, dim, /*tiled=*/true));
  if (cost_ != nullptr) {
    cost_->bytes_in += out.byte_size() - x.byte_size();
    ++cost_->collectives;
  }
  Record(StrCat("all_gather '", axis, "' ", out.byte_size() - x.byte_size(), " B"), t0);
  return out;
}

StatusOr<Array> Dev::PsumScatter(const Array& x, const char* axis, int dim) {
  const double t0 = Now();
  XS_ASSIGN_OR_RETURN(Array out, ctx_.PsumScatter(x, axis, dim, /*tiled=*/true));
  if (cost_ != nullptr) {
    cost_->bytes_in += x.byte_size() - out.byte_size();
    ++cost_->collectives;
  }
  Record(StrCat("psum_scatter '", axis, "' ", x.byte_size() - out.byte_size(), " B"), t0);
  return out;
}

StatusOr<Array> Dev::Psum(const Array& x, const char* axis) {
  const double t0 = Now();
  XS_ASSIGN_OR_RETURN(int64_t n, ctx_.AxisSize(axis));
  XS_ASSIGN_OR_RETURN(Array out, ctx_.Psum(x, axis));
  // A ring all-reduce receives 2 (n-1)/n of the array.
  const int64_t bytes = 2 * (n - 1) * x.byte_size() / n;
  if (cost_ != nullptr) {
    cost_->bytes_in += bytes;
    ++cost_->collectives;
  }
  Record(StrCat("psum '", axis, "' ", bytes, " B"), t0);
  return out;
}

StatusOr<Transfer> Dev::ShiftStart(Array x, const char* axis, int shift) {
  const double t0 = Now();
  XS_ASSIGN_OR_RETURN(int64_t n, ctx_.AxisSize(axis));
  std::vector<std::pair<int64_t, int64_t>> perm;
  for (int64_t i = 0; i < n; ++i) perm.emplace_back(i, Mod(i + shift, n));
  Transfer t;
  t.bytes = x.byte_size();
  t.name = StrCat("ppermute '", axis, "' ", shift > 0 ? "up " : "down ", t.bytes, " B");
  XS_ASSIGN_OR_RETURN(t.pending, ctx_.PpermuteStart(std::move(x), axis, perm));
  t.start_us = t0;
  if (cost_ != nullptr) {
    cost_->bytes_async += t.bytes;
    ++cost_->collectives;
  }
  Record(t.name + " start", t0);
  return t;
}

StatusOr<Transfer> Dev::AllGatherStart(Array x, const char* axis, int dim) {
  const double t0 = Now();
  XS_ASSIGN_OR_RETURN(int64_t n, ctx_.AxisSize(axis));
  Transfer t;
  t.bytes = x.byte_size() * (n - 1);
  t.name = StrCat("all_gather '", axis, "' ", t.bytes, " B");
  XS_ASSIGN_OR_RETURN(t.pending, ctx_.AllGatherStart(std::move(x), axis, dim));
  t.start_us = t0;
  if (cost_ != nullptr) {
    cost_->bytes_async += t.bytes;
    ++cost_->collectives;
  }
  Record(t.name + " start", t0);
  return t;
}

StatusOr<Array> Dev::Finish(Transfer& t) {
  const double t0 = Now();
  XS_ASSIGN_OR_RETURN(Array out, ctx_.Done(t.pending));
  Record(t.name + " done", t0);
  if (trace_ != nullptr) trace_->Add(t.name, 1, ctx_.device(), t.start_us, Now() - t.start_us);
  return out;
}

Array Rows(const Array& a, int64_t start, int64_t size) {
  return a.Slice({start, 0}, {size, a.dims()[1]});
}

Array Cols(const Array& a, int64_t start, int64_t size) {
  return a.Slice({0, start}, {a.dims()[0], size});
}

Array Concat(const Array& a, const Array& b, int dim) {
  std::vector<int64_t> dims = a.dims();
  dims[dim] += b.dims()[dim];
  Array out(a.dtype(), dims);
  out.UpdateSlice(a, {0, 0});
  out.UpdateSlice(b, dim == 0 ? std::vector<int64_t>{a.dims()[0], 0}
                              : std::vector<int64_t>{0, a.dims()[1]});
  return out;
}

void AddInto(Array& acc, const Array& x) {
  XS_CHECK(acc.dims() == x.dims() && acc.dtype() == DType::kF32 && x.dtype() == DType::kF32,
           "AddInto: ", acc.shape().ToString(), " += ", x.shape().ToString());
  float* a = acc.values<float>().data();
  const float* b = x.values<float>().data();
  const int64_t n = acc.num_elements();
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

namespace {

// Copies the elements of chunk k of dim `dim` between a 2-D array of `dims` (at `full`) and the
// packed piece (at `piece`): runs of `block` elements (dim 1) or of `block` whole rows (dim 0).
void CopyChunk(const std::vector<int64_t>& dims, int64_t elem, int dim, int64_t k, int64_t chunks,
               int64_t block, std::byte* full, std::byte* piece, bool to_piece) {
  const int64_t p = dims[dim] / (chunks * block);
  const int64_t row_bytes = dims[1] * elem;
  auto copy = [&](std::byte* f, std::byte* q, int64_t bytes) {
    if (to_piece) {
      std::memcpy(q, f, bytes);
    } else {
      std::memcpy(f, q, bytes);
    }
  };
  if (dim == 0) {
    for (int64_t i = 0; i < p; ++i) {
      copy(full + (i * chunks + k) * block * row_bytes, piece + i * block * row_bytes,
           block * row_bytes);
    }
    return;
  }
  const int64_t piece_row = p * block * elem;
  for (int64_t r = 0; r < dims[0]; ++r) {
    for (int64_t i = 0; i < p; ++i) {
      copy(full + r * row_bytes + (i * chunks + k) * block * elem,
           piece + r * piece_row + i * block * elem, block * elem);
    }
  }
}

}  // namespace

Array Chunk(const Array& a, int dim, int64_t k, int64_t chunks, int64_t block) {
  std::vector<int64_t> dims = a.dims();
  dims[dim] /= chunks;
  Array piece = Array::Uninitialized(Shape(a.dtype(), dims));
  CopyChunk(a.dims(), DTypeSize(a.dtype()), dim, k, chunks, block,
            const_cast<std::byte*>(a.data()), piece.data(), /*to_piece=*/true);
  return piece;
}

void PutChunk(Array& acc, const Array& piece, int dim, int64_t k, int64_t chunks,
              int64_t block) {
  XS_CHECK(piece.dtype() == acc.dtype() && piece.num_elements() * chunks == acc.num_elements(),
           "PutChunk: ", piece.shape().ToString(), " into ", acc.shape().ToString());
  CopyChunk(acc.dims(), DTypeSize(acc.dtype()), dim, k, chunks, block, acc.data(),
            const_cast<std::byte*>(piece.data()), /*to_piece=*/false);
}

Array RowsView(const Array& a, int64_t start, int64_t size) {
  XS_CHECK(start >= 0 && start + size <= a.dims()[0], "RowsView: rows ", start, "+", size,
           " of ", a.shape().ToString());
  const int64_t offset = start * a.dims()[1] * DTypeSize(a.dtype());
  // Arrays promise 64-byte aligned data to the kernels; other offsets get a copy.
  if (offset % 64 != 0) return Rows(a, start, size);
  return Array::View(Shape(a.dtype(), {size, a.dims()[1]}),
                     const_cast<std::byte*>(a.data()) + offset);
}

}  // namespace xs::cmm
