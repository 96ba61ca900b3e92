// VirtualGpuCommunicator: the in-process rendezvous for agreement and timeouts, then stream-ordered
// kernels that read the peers' buffers (see the header for the event protocol).
#include "xshard/cuda/virtual_gpu_communicator.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "xshard/comm/inprocess_communicator.h"
#include "xshard/cuda/cuda_status.h"
#include "xshard/cuda/virtual_gpu_kernels.h"

namespace xs::cuda {

struct VirtualGpuCommunicator::Rank {
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
  cudaEvent_t in_ready = nullptr, read_done = nullptr;
  cudaEvent_t finished[16] = {};
  uint64_t calls = 0;
  std::set<uint64_t> started;  // asynchronous calls not finished yet
  std::vector<std::byte> descs, sync;

  ~Rank() {
    for (cudaEvent_t e : finished) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (in_ready != nullptr) cudaEventDestroy(in_ready);
    if (read_done != nullptr) cudaEventDestroy(read_done);
    if (comm != nullptr) cudaStreamDestroy(comm);
  }
};

struct VirtualGpuCommunicator::Op {
  CollectiveKind kind = CollectiveKind::kBarrier;
  const DeviceGroups* groups = nullptr;
  const PermutePairs* pairs = nullptr;
  ReductionKind reduction = ReductionKind::kSum;
  int dim0 = 0, dim1 = 0;
  ConstBufferView in;
  BufferView out;
  std::span<const ConstBufferView> tuple_in;
  std::span<const BufferView> tuple_out;
};

namespace {

constexpr int kMaxDims = kMaxCollectiveDims;

// What each rank publishes at the first rendezvous; followed by `ntuple` input pointers.
struct Header {
  int32_t kind, reduction, dtype, rank;
  int32_t dim0, dim1, ntuple, pad;
  int64_t dims[kMaxDims];
  const std::byte* in;
  cudaEvent_t in_ready, read_done;
};

bool SameCall(const Header& a, const Header& b) {
  return a.kind == b.kind && a.reduction == b.reduction && a.dtype == b.dtype && a.rank == b.rank &&
         a.dim0 == b.dim0 && a.dim1 == b.dim1 && a.ntuple == b.ntuple &&
         std::equal(a.dims, a.dims + a.rank, b.dims);
}

std::string Describe(const Header& h) {
  return StrCat(CollectiveKindName(static_cast<CollectiveKind>(h.kind)), " of ",
                DTypeName(static_cast<DType>(h.dtype)), "[",
                StrJoin(std::span<const int64_t>(h.dims, h.rank), ","), "] (reduction ",
                ReductionKindName(static_cast<ReductionKind>(h.reduction)), ", dims ", h.dim0, ",",
                h.dim1, ", ", h.ntuple, " tuple operands)");
}

// The host rendezvous is an all-gather of descriptors; its messages name the real op instead.
Status Relabel(const Status& s, CollectiveKind kind) {
  if (s.ok() || kind == CollectiveKind::kAllGather) return s;
  std::string m = s.message();
  const std::string from = "(all-gather, channel", to = StrCat("(", CollectiveKindName(kind), ", channel");
  for (size_t at = m.find(from); at != std::string::npos; at = m.find(from, at + to.size())) {
    m.replace(at, from.size(), to);
  }
  return Status(s.code(), m);
}

std::vector<int64_t> RowMajorStrides(std::span<const int64_t> dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

int64_t Product(std::span<const int64_t> dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= dims[i];
  return p;
}

}  // namespace

StatusOr<std::unique_ptr<VirtualGpuCommunicator>> VirtualGpuCommunicator::Create(
    VirtualGpuOptions options) {
  const int64_t n = static_cast<int64_t>(options.streams.size());
  if (n < 1 || n > kMaxCollectivePeers) {
    return InvalidArgument("a virtual-GPU communicator needs 1 to ", kMaxCollectivePeers,
                           " ranks (one compute stream each), got ", n);
  }
  InProcessOptions host;
  host.num_ranks = n;
  host.device_ids = options.device_ids;
  host.timeout = options.timeout;
  XS_ASSIGN_OR_RETURN(auto inner, InProcessCommunicator::Create(std::move(host)));
  std::unique_ptr<VirtualGpuCommunicator> c(new VirtualGpuCommunicator(std::move(options)));
  c->host_ = std::move(inner);
  for (int64_t r = 0; r < n; ++r) {
    c->ranks_.push_back(std::make_unique<Rank>());
    c->ranks_.back()->compute = c->options_.streams[r];
  }
  return c;
}

VirtualGpuCommunicator::VirtualGpuCommunicator(VirtualGpuOptions options)
    : options_(std::move(options)) {}
VirtualGpuCommunicator::~VirtualGpuCommunicator() = default;

int64_t VirtualGpuCommunicator::num_ranks() const { return static_cast<int64_t>(ranks_.size()); }
void VirtualGpuCommunicator::Abort(const Status& reason) { host_->Abort(reason); }
void VirtualGpuCommunicator::Leave(int64_t rank) { host_->Leave(rank); }

void VirtualGpuCommunicator::Reset() {
  host_->Reset();
  for (auto& r : ranks_) {
    r->calls = 0;
    r->started.clear();
  }
}

Status VirtualGpuCommunicator::Barrier(const CollectiveCall& call) { return host_->Barrier(call); }

Status VirtualGpuCommunicator::Finish(int64_t rank, uint64_t handle) {
  if (handle == 0) return OkStatus();
  if (rank < 0 || rank >= num_ranks()) {
    return InvalidArgument("finishing a collective: rank ", rank,
                           " is out of range for a communicator of ", num_ranks(), " ranks");
  }
  Rank& me = *ranks_[rank];
  if (me.started.erase(handle) == 0) {
    Status e = FailedPrecondition("device ", rank, " finishes collective #", handle,
                                  ", which it did not start or already finished");
    host_->Abort(e);
    return e;
  }
  // A later call re-recording this slot only makes the wait longer, never too short.
  XS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(me.compute, me.finished[handle % 16], 0));
  return OkStatus();
}

Status VirtualGpuCommunicator::Run(const CollectiveCall& call, Op& op) {
  // Any failure aborts the communicator (the first reason wins), so that no peer waits for this
  // rank at a later rendezvous.
  Status s = RunOnRank(call, op);
  if (!s.ok() && call.rank >= 0 && call.rank < num_ranks()) host_->Abort(s);
  return s;
}

Status VirtualGpuCommunicator::RunOnRank(const CollectiveCall& call, Op& op) {
  const int64_t n = num_ranks();
  const std::string name(call.op_name.empty() ? CollectiveKindName(op.kind) : call.op_name);
  if (call.rank < 0 || call.rank >= n) {
    return InvalidArgument(name, ": rank ", call.rank, " is out of range for a communicator of ",
                           n, " ranks");
  }
  if ((op.groups != nullptr && op.groups->num_ranks() != n) ||
      (op.pairs != nullptr && op.pairs->num_ranks() != n)) {
    Status e = InvalidArgument(name, ": its groups or pairs were built for ",
                               op.groups != nullptr ? op.groups->num_ranks() : op.pairs->num_ranks(),
                               " devices but the communicator has ", n);
    host_->Abort(e);
    return e;
  }
  // Permute and broadcast (whose ranks may be in no group) meet over every rank; the others over
  // their groups.
  const bool by_rank = op.pairs != nullptr || op.kind == CollectiveKind::kCollectiveBroadcast;
  const DeviceGroups all = DeviceGroups::All(n);
  const DeviceGroups& meet = by_rank ? all : *op.groups;
  const std::span<const int64_t> group =
      op.groups != nullptr ? op.groups->GroupOf(call.rank) : std::span<const int64_t>();
  const int64_t m = static_cast<int64_t>(group.size());
  if (Status s = CheckCollectiveArgs({op.kind, op.reduction, op.dim0, op.dim1, op.in, op.out,
                                       op.tuple_in, op.tuple_out},
                                      name, std::max<int64_t>(m, 1));
      !s.ok()) {
    host_->Abort(s);
    return s;
  }
  XS_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.gpu));
  Rank& me = *ranks_[call.rank];
  if (me.comm == nullptr) {  // first call of this rank: its stream and events
    XS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&me.comm, cudaStreamNonBlocking));
    XS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&me.in_ready, cudaEventDisableTiming));
    XS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&me.read_done, cudaEventDisableTiming));
    for (cudaEvent_t& e : me.finished) {
      XS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
  }
  const bool async = call.async_handle != nullptr;
  cudaStream_t stream = async ? me.comm : me.compute;
  XS_CUDA_RETURN_IF_ERROR(cudaEventRecord(me.in_ready, me.compute));
  if (async) XS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(me.comm, me.in_ready, 0));

  // Rendezvous 1: every member's descriptor, in meeting order.
  const int32_t ntuple = static_cast<int32_t>(op.tuple_in.size());
  const size_t bytes = sizeof(Header) + sizeof(void*) * ntuple;
  std::vector<std::byte> mine(bytes);
  Header h{};
  h.kind = static_cast<int32_t>(op.kind);
  h.reduction = static_cast<int32_t>(op.reduction);
  h.dtype = static_cast<int32_t>(op.in.dtype);
  h.rank = static_cast<int32_t>(op.in.dims.size());
  h.dim0 = op.dim0;
  h.dim1 = op.dim1;
  h.ntuple = ntuple;
  std::copy(op.in.dims.begin(), op.in.dims.end(), h.dims);
  h.in = op.in.data;
  h.in_ready = me.in_ready;
  h.read_done = me.read_done;
  std::memcpy(mine.data(), &h, sizeof(h));
  for (int32_t j = 0; j < ntuple; ++j) {
    std::memcpy(mine.data() + sizeof(Header) + j * sizeof(void*), &op.tuple_in[j].data, sizeof(void*));
  }
  const int64_t meet_size = static_cast<int64_t>(meet.GroupOf(call.rank).size());
  me.descs.resize(bytes * meet_size);
  const int64_t one[] = {static_cast<int64_t>(bytes)};
  const int64_t all_dims[] = {static_cast<int64_t>(bytes) * meet_size};
  CollectiveCall host_call(call.rank, name, call.channel_id);
  XS_RETURN_IF_ERROR(Relabel(host_->AllGather(host_call, meet, {mine.data(), DType::kU8, one},
                                              {me.descs.data(), DType::kU8, all_dims}, 0),
                             op.kind));
  auto header = [&](int64_t j) {
    Header x;
    std::memcpy(&x, me.descs.data() + j * bytes, sizeof(x));
    return x;
  };
  auto tuple_ptr = [&](int64_t j, int64_t i) {
    const std::byte* p;
    std::memcpy(&p, me.descs.data() + j * bytes + sizeof(Header) + i * sizeof(void*), sizeof(p));
    return p;
  };
  for (int64_t j = 0; j < meet_size; ++j) {
    const Header other = header(j);
    if (SameCall(h, other)) continue;
    Status e = InvalidArgument("collective mismatch: device ", call.rank, " called ", name, " as ",
                               Describe(h), " but device ", meet.GroupOf(call.rank)[j],
                               " called ", Describe(other), "; every device of a group must make "
                               "the same collective calls with the same shapes and dtypes");
    host_->Abort(e);
    return e;
  }
  // Position j of the meeting -> member j of the group (by_rank: position = rank).
  auto member = [&](int64_t j) { return by_rank ? header(group[j]) : header(j); };
  const int64_t me_pos = op.groups != nullptr ? op.groups->IndexInGroup(call.rank) : -1;
  const int64_t es = DTypeSize(op.in.dtype);
  const int64_t count = op.in.num_elements();

  // Which peers this rank reads, and which read this rank (their read_done gates its `in`).
  std::vector<Header> reads, readers;
  if (op.kind == CollectiveKind::kCollectivePermute) {
    if (int64_t s = op.pairs->SourceOf(call.rank); s >= 0) reads.push_back(header(s));
    if (int64_t t = op.pairs->TargetOf(call.rank); t >= 0) readers.push_back(header(t));
  } else if (op.kind == CollectiveKind::kCollectiveBroadcast) {
    if (m > 0) reads.push_back(member(0));
    if (m > 0 && me_pos == 0) {
      for (int64_t j = 1; j < m; ++j) readers.push_back(member(j));
    }
  } else {
    for (int64_t j = 0; j < m; ++j) {
      reads.push_back(member(j));
      if (j != me_pos) readers.push_back(member(j));
    }
  }
  for (const Header& p : reads) {
    if (p.in_ready != me.in_ready) XS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, p.in_ready, 0));
  }
  Status launched = OkStatus();
  switch (op.kind) {
    case CollectiveKind::kAllGather: {
      const int64_t a = Product(op.in.dims, 0, op.dim0), b = count / std::max<int64_t>(a, 1);
      CopyJob job{{}, {}, {a, b}, {b, 1}, {m * b, 1}, es};
      for (int64_t j = 0; j < m; ++j) {
        job.src.push_back(reads[j].in);
        job.dst.push_back(op.out.data + j * b * es);
      }
      launched = EnqueueCopy(job, options_.gpu, stream);
      break;
    }
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter: {
      ReduceJob job{op.reduction, op.in.dtype, {}, op.out.data, 1, count, 0};
      int64_t offset = 0;
      if (op.kind == CollectiveKind::kReduceScatter) {
        job.rows = Product(op.in.dims, 0, op.dim0);
        job.row_elements = count / std::max<int64_t>(job.rows, 1) / m;
        job.src_row_stride = job.row_elements * m;
        offset = me_pos * job.row_elements * es;
      }
      for (const Header& p : reads) job.srcs.push_back(p.in + offset);
      launched = EnqueueReduce(job, options_.gpu, stream);
      break;
    }
    case CollectiveKind::kAllToAll: {
      if (ntuple > 0) {
        CopyJob job{{}, {}, {count}, {1}, {1}, es};
        for (int64_t j = 0; j < m; ++j) {
          job.src.push_back(tuple_ptr(by_rank ? group[j] : j, me_pos));
          job.dst.push_back(op.tuple_out[j].data);
        }
        launched = EnqueueCopy(job, options_.gpu, stream);
        break;
      }
      std::vector<int64_t> piece(op.in.dims.begin(), op.in.dims.end());
      piece[op.dim0] /= m;
      std::vector<int64_t> out_dims = piece;
      out_dims[op.dim1] *= m;
      const std::vector<int64_t> si = RowMajorStrides(op.in.dims), so = RowMajorStrides(out_dims);
      CopyJob job{{}, {}, piece, si, so, es};
      for (int64_t j = 0; j < m; ++j) {
        job.src.push_back(reads[j].in + me_pos * piece[op.dim0] * si[op.dim0] * es);
        job.dst.push_back(op.out.data + j * piece[op.dim1] * so[op.dim1] * es);
      }
      launched = EnqueueCopy(job, options_.gpu, stream);
      break;
    }
    default: {  // permute, broadcast: one piece or zeros
      if (reads.empty()) {
        launched = CudaStatus(cudaMemsetAsync(op.out.data, 0, op.out.byte_size(), stream), "cudaMemsetAsync");
      } else {
        launched = EnqueueCopy({{reads[0].in}, {op.out.data}, {count}, {1}, {1}, es}, options_.gpu, stream);
      }
      break;
    }
  }
  if (!launched.ok()) {
    host_->Abort(launched);
    return launched;
  }
  XS_CUDA_RETURN_IF_ERROR(cudaEventRecord(me.read_done, stream));
  // Rendezvous 2: every read_done is recorded before anyone waits on it.
  const std::byte token{1};
  me.sync.resize(meet_size);
  const int64_t sync_dims[] = {meet_size};
  const int64_t token_dims[] = {1};
  XS_RETURN_IF_ERROR(Relabel(host_->AllGather(host_call, meet, {&token, DType::kU8, token_dims},
                                              {me.sync.data(), DType::kU8, sync_dims}, 0),
                             op.kind));
  for (const Header& p : readers) XS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, p.read_done, 0));
  const uint64_t k = ++me.calls;
  XS_CUDA_RETURN_IF_ERROR(cudaEventRecord(me.finished[k % 16], stream));
  if (async) {
    me.started.insert(k);
    *call.async_handle = k;
  }
  return OkStatus();
}

Status VirtualGpuCommunicator::AllGather(const CollectiveCall& call, const DeviceGroups& groups,
                                         ConstBufferView in, BufferView out, int dim) {
  Op op{CollectiveKind::kAllGather, &groups, nullptr, ReductionKind::kSum, dim, 0, in, out, {}, {}};
  return Run(call, op);
}

Status VirtualGpuCommunicator::AllReduce(const CollectiveCall& call, const DeviceGroups& groups,
                                         ConstBufferView in, BufferView out,
                                         ReductionKind reduction) {
  Op op{CollectiveKind::kAllReduce, &groups, nullptr, reduction, 0, 0, in, out, {}, {}};
  return Run(call, op);
}

Status VirtualGpuCommunicator::ReduceScatter(const CollectiveCall& call, const DeviceGroups& groups,
                                             ConstBufferView in, BufferView out, int dim,
                                             ReductionKind reduction) {
  Op op{CollectiveKind::kReduceScatter, &groups, nullptr, reduction, dim, 0, in, out, {}, {}};
  return Run(call, op);
}

Status VirtualGpuCommunicator::AllToAll(const CollectiveCall& call, const DeviceGroups& groups,
                                        ConstBufferView in, BufferView out, int split_dim,
                                        int concat_dim) {
  Op op{CollectiveKind::kAllToAll, &groups, nullptr, ReductionKind::kSum, split_dim, concat_dim,
        in, out, {}, {}};
  return Run(call, op);
}

Status VirtualGpuCommunicator::AllToAllTuple(const CollectiveCall& call, const DeviceGroups& groups,
                                             std::span<const ConstBufferView> ins,
                                             std::span<const BufferView> outs) {
  if (ins.empty()) {
    return InvalidArgument(call.op_name, ": a tuple all-to-all needs one operand per group member");
  }
  Op op{CollectiveKind::kAllToAll, &groups, nullptr, ReductionKind::kSum, 0, 0, ins[0],
        outs.empty() ? BufferView{} : outs[0], ins, outs};
  return Run(call, op);
}

Status VirtualGpuCommunicator::CollectivePermute(const CollectiveCall& call,
                                                 const PermutePairs& pairs, ConstBufferView in,
                                                 BufferView out) {
  Op op{CollectiveKind::kCollectivePermute, nullptr, &pairs, ReductionKind::kSum, 0, 0, in, out, {}, {}};
  return Run(call, op);
}

Status VirtualGpuCommunicator::CollectiveBroadcast(const CollectiveCall& call,
                                                   const DeviceGroups& groups, ConstBufferView in,
                                                   BufferView out) {
  Op op{CollectiveKind::kCollectiveBroadcast, &groups, nullptr, ReductionKind::kSum, 0, 0, in, out, {}, {}};
  return Run(call, op);
}

}  // namespace xs::cuda
