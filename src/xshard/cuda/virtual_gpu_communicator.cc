// VirtualGpuCommunicator: the in-process rendezvous for agreement and timeouts, then stream-ordered
// kernels that read the peers' buffers (see the header for the event protocol).
#include "xshard/cuda/virtual_gpu_communicator.h"

#include <algorithm>
#include <cstring>

#include "xshard/comm/inprocess_communicator.h"
#include "xshard/cuda/cuda_status.h"
#include "xshard/cuda/virtual_gpu_communicator_internal.h"
#include "xshard/cuda/virtual_gpu_kernels.h"

namespace xs::cuda {

namespace {

using Header = VirtualGpuCommunicator::Header;
// All-reduces of at least this many bytes per member take two phases (TwoPhaseAllReduce).
constexpr int64_t kTwoPhaseBytes = 256 << 10;

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
    XS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&me.phase_done, cudaEventDisableTiming));
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
  h.out = op.out.data;
  h.in_ready = me.in_ready;
  h.phase_done = me.phase_done;
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
  // Later host rendezvous: every event a peer waits on after it is recorded before the wait.
  const std::byte token{1};
  const int64_t token_dims[] = {1};
  const int64_t sync_dims[] = {meet_size};
  me.sync.resize(meet_size);
  auto rendezvous = [&]() {
    return Relabel(host_->AllGather(host_call, meet, {&token, DType::kU8, token_dims},
                                    {me.sync.data(), DType::kU8, sync_dims}, 0),
                   op.kind);
  };
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
      if (m > 1 && count * es >= kTwoPhaseBytes) {
        launched = TwoPhaseAllReduce(op, me, reads, me_pos, stream, rendezvous);
        break;
      }
      [[fallthrough]];
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
  // Every read_done is recorded before anyone waits on it.
  XS_RETURN_IF_ERROR(rendezvous());
  for (const Header& p : readers) XS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, p.read_done, 0));
  const uint64_t k = ++me.calls;
  XS_CUDA_RETURN_IF_ERROR(cudaEventRecord(me.finished[k % 16], stream));
  if (async) {
    me.started.insert(k);
    *call.async_handle = k;
  }
  return OkStatus();
}

}  // namespace xs::cuda
