// One device's operations for the collective matmuls: timed and counted wrappers over the dot
// kernel and shard_map's collectives, block slicing, and the Chrome trace writer.
#include "xshard/cmm/device_ops.h"

#include <chrono>
#include <cstdio>
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

// a's 2-D dims with dim `dim` split into [P, chunks, block], and the box of chunk k.
struct ChunkView {
  std::vector<int64_t> dims4, start, sizes, piece;
};

ChunkView ViewOf(const std::vector<int64_t>& dims, int dim, int64_t k, int64_t chunks,
                 int64_t block) {
  const int64_t p = dims[dim] / (chunks * block);
  ChunkView v;
  if (dim == 0) {
    v.dims4 = {p, chunks, block, dims[1]};
    v.start = {0, k, 0, 0};
    v.sizes = {p, 1, block, dims[1]};
    v.piece = {p * block, dims[1]};
  } else {
    v.dims4 = {dims[0], p, chunks, block};
    v.start = {0, 0, k, 0};
    v.sizes = {dims[0], p, 1, block};
    v.piece = {dims[0], p * block};
  }
  return v;
}

}  // namespace

Array Chunk(const Array& a, int dim, int64_t k, int64_t chunks, int64_t block) {
  const ChunkView v = ViewOf(a.dims(), dim, k, chunks, block);
  return a.Reshape(v.dims4).Slice(v.start, v.sizes).Reshape(v.piece);
}

void PutChunk(Array& acc, const Array& piece, int dim, int64_t k, int64_t chunks,
              int64_t block) {
  const ChunkView v = ViewOf(acc.dims(), dim, k, chunks, block);
  Array acc4 = acc.Reshape(v.dims4);
  acc4.UpdateSlice(piece.Reshape(v.sizes), v.start);
  acc = acc4.Reshape(acc.dims());
}

}  // namespace xs::cmm
