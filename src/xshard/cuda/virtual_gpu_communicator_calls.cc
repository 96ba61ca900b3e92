// VirtualGpuCommunicator's construction, the calls that move no data (barrier, finish, abort),
// the two-phase all-reduce and the public collective methods (each builds an Op for Run).
#include "xshard/comm/inprocess_communicator.h"
#include "xshard/cuda/cuda_status.h"
#include "xshard/cuda/virtual_gpu_communicator_internal.h"

namespace xs::cuda {

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

// Large all-reduces: each member reduces its 1/m slice of everyone's input into its own output
// (reads 1x the input), then, after a rendezvous, copies the other slices from the peers'
// outputs: about 3 input sizes of memory traffic per member instead of m + 1.
Status VirtualGpuCommunicator::TwoPhaseAllReduce(const Op& op, Rank& me, const std::vector<Header>& members,
                                                 int64_t me_pos, cudaStream_t stream,
                                                 const std::function<Status()>& rendezvous) {
  const int64_t m = static_cast<int64_t>(members.size());
  const int64_t es = DTypeSize(op.in.dtype), count = op.in.num_elements();
  const int64_t unit = std::max<int64_t>(1, 16 / es);  // slices start 16-byte aligned
  const int64_t chunk = ((count + m - 1) / m + unit - 1) / unit * unit;
  auto lo = [&](int64_t j) { return std::min(count, j * chunk); };
  auto hi = [&](int64_t j) { return std::min(count, (j + 1) * chunk); };
  ReduceJob rs{op.reduction, op.in.dtype, {}, op.out.data + lo(me_pos) * es, 1,
               hi(me_pos) - lo(me_pos), 0};
  for (const Header& p : members) rs.srcs.push_back(p.in + lo(me_pos) * es);
  XS_RETURN_IF_ERROR(EnqueueReduce(rs, options_.gpu, stream));
  XS_CUDA_RETURN_IF_ERROR(cudaEventRecord(me.phase_done, stream));
  XS_RETURN_IF_ERROR(rendezvous());
  CopyJob full{{}, {}, {chunk}, {1}, {1}, es}, tail{{}, {}, {0}, {1}, {1}, es};
  for (int64_t j = 0; j < m; ++j) {
    if (j == me_pos || hi(j) <= lo(j)) continue;
    XS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, members[j].phase_done, 0));
    CopyJob& job = hi(j) - lo(j) == chunk ? full : tail;
    job.dims = {hi(j) - lo(j)};
    job.src.push_back(members[j].out + lo(j) * es);
    job.dst.push_back(op.out.data + lo(j) * es);
  }
  XS_RETURN_IF_ERROR(EnqueueCopy(full, options_.gpu, stream));
  return EnqueueCopy(tail, options_.gpu, stream);
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
