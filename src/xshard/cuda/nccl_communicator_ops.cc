// NcclCommunicator's collectives: per-group communicators (ncclCommSplit, cached), the NCCL calls,
// scratch-buffer packing where NCCL cannot address the layout, and the watchdog registration.
#include <cstring>

#include "xshard/base/strings.h"
#include "xshard/cuda/cuda_status.h"
#include "xshard/cuda/nccl_communicator_internal.h"
#include "xshard/cuda/virtual_gpu_kernels.h"

namespace xs::cuda {
namespace {

int64_t Product(std::span<const int64_t> dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= dims[i];
  return p;
}

std::vector<int64_t> RowMajorStrides(std::span<const int64_t> dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

// The communicator of `rank`'s group in `groups`: the world one for a single group of every rank
// in order, else a split made at the first use of these groups (every rank makes the same calls,
// so every rank splits) and cached. Null when the rank is in no group.
StatusOr<ncclComm_t> GroupComm(NcclCommunicator::Shared& sh, NcclCommunicator::Rank& me,
                               const DeviceGroups& groups, NcclClock::time_point deadline) {
  const int64_t n = groups.num_ranks();
  if (groups.fingerprint() == DeviceGroups::All(n).fingerprint()) return me.world;
  if (auto it = me.groups.find(groups.fingerprint()); it != me.groups.end()) return it->second;
  int color = NCCL_SPLIT_NOCOLOR;
  for (int64_t g = 0; g < groups.num_groups(); ++g) {
    const auto members = groups.group(g);
    if (std::find(members.begin(), members.end(), me.rank) != members.end()) color = static_cast<int>(g);
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t split = nullptr;
  XS_CUDA_RETURN_IF_ERROR(cudaSetDevice(me.gpu));
  XS_NCCL_RETURN_IF_ERROR(*sh.api, sh.api->CommSplit(me.world, color,
                                                     static_cast<int>(std::max<int64_t>(0, groups.IndexInGroup(me.rank))),
                                                     &split, &config));
  const std::string what = StrCat("splitting the NCCL communicator for groups ", groups.ToString());
  XS_RETURN_IF_ERROR(sh.Settle(split != nullptr ? split : me.world, deadline, what));
  if (split != nullptr) {
    std::lock_guard<std::mutex> lock(sh.mu);
    sh.comms.push_back(split);
  }
  me.groups[groups.fingerprint()] = split;
  return split;
}

}  // namespace

Status NcclCommunicator::Run(const CollectiveCall& call, Op& op) {
  Shared& sh = *shared_;
  const std::string name(call.op_name.empty() ? CollectiveKindName(op.kind) : call.op_name);
  const int64_t i = call.rank - options_.first_rank;
  if (i < 0 || i >= static_cast<int64_t>(ranks_.size())) {
    return InvalidArgument(name, ": rank ", call.rank, " is not one of this process's ranks ",
                           options_.first_rank, "..", options_.first_rank + ranks_.size() - 1);
  }
  if ((op.groups != nullptr && op.groups->num_ranks() != options_.num_ranks) ||
      (op.pairs != nullptr && op.pairs->num_ranks() != options_.num_ranks)) {
    return InvalidArgument(name, ": its groups or pairs were built for another number of devices "
                           "than the communicator's ", options_.num_ranks);
  }
  const std::span<const int64_t> group =
      op.groups != nullptr ? op.groups->GroupOf(call.rank) : std::span<const int64_t>();
  const int64_t m = static_cast<int64_t>(group.size());
  XS_RETURN_IF_ERROR(CheckCollectiveArgs({op.kind, op.reduction, op.dim0, op.dim1, op.in, op.out,
                                          op.tuple_in, op.tuple_out},
                                         name, std::max<int64_t>(m, 1)));
  std::optional<ncclRedOp_t> red;
  if (op.kind == CollectiveKind::kAllReduce || op.kind == CollectiveKind::kReduceScatter) {
    XS_ASSIGN_OR_RETURN(red, NcclReduction(op.reduction, op.in.dtype, name));
  }
  if (sh.aborted.load()) return sh.AbortStatus();
  Rank& me = *ranks_[i];
  const auto deadline = NcclClock::now() + options_.timeout;
  XS_CUDA_RETURN_IF_ERROR(cudaSetDevice(me.gpu));
  const bool async = call.async_handle != nullptr;
  cudaStream_t s = async ? me.comm : me.compute;
  if (async) {
    XS_CUDA_RETURN_IF_ERROR(cudaEventRecord(me.in_ready, me.compute));
    XS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(me.comm, me.in_ready, 0));
  }
  ncclComm_t comm = me.world;
  if (op.groups != nullptr) {
    XS_ASSIGN_OR_RETURN(comm, GroupComm(sh, me, *op.groups, deadline));
  }
  const NcclApi& api = *sh.api;
  const int64_t es = DTypeSize(op.in.dtype);
  const int64_t count = op.in.num_elements();
  const std::span<const int64_t> dims = op.in.dims;
  std::vector<int64_t> devices;
  if (op.pairs != nullptr) {
    devices = {call.rank, op.pairs->SourceOf(call.rank), op.pairs->TargetOf(call.rank)};
  } else {
    devices.assign(group.begin(), group.end());
  }
  const std::string what = StrCat(name, " (", CollectiveKindName(op.kind), ", channel ",
                                  call.channel_id, ") on device ", call.rank, " with devices {",
                                  StrJoin(devices, ","), "}");
  switch (op.kind) {
    case CollectiveKind::kAllGather: {
      const int64_t a = Product(dims, 0, op.dim0), b = count / std::max<int64_t>(a, 1);
      if (a <= 1) {
        XS_NCCL_RETURN_IF_ERROR(api, api.AllGather(op.in.data, op.out.data, count * es, ncclUint8, comm, s));
        break;
      }
      XS_ASSIGN_OR_RETURN(std::byte* tmp, me.Scratch(0, m * count * es));
      XS_NCCL_RETURN_IF_ERROR(api, api.AllGather(op.in.data, tmp, count * es, ncclUint8, comm, s));
      CopyJob job{{}, {}, {a, b}, {b, 1}, {m * b, 1}, es};
      for (int64_t j = 0; j < m; ++j) {
        job.src.push_back(tmp + j * count * es);
        job.dst.push_back(op.out.data + j * b * es);
      }
      XS_RETURN_IF_ERROR(EnqueueCopy(job, me.gpu, s));
      break;
    }
    case CollectiveKind::kAllReduce:
      XS_NCCL_RETURN_IF_ERROR(api, api.AllReduce(op.in.data, op.out.data, count, *NcclType(op.in.dtype),
                                                 *red, comm, s));
      break;
    case CollectiveKind::kReduceScatter: {
      const int64_t a = Product(dims, 0, op.dim0), c = count / std::max<int64_t>(a, 1) / m;
      const std::byte* src = op.in.data;
      if (a > 1) {  // [a, m, c] -> [m, a, c]
        XS_ASSIGN_OR_RETURN(std::byte* tmp, me.Scratch(0, count * es));
        CopyJob job{{}, {}, {a, c}, {m * c, 1}, {c, 1}, es};
        for (int64_t j = 0; j < m; ++j) {
          job.src.push_back(op.in.data + j * c * es);
          job.dst.push_back(tmp + j * a * c * es);
        }
        XS_RETURN_IF_ERROR(EnqueueCopy(job, me.gpu, s));
        src = tmp;
      }
      XS_NCCL_RETURN_IF_ERROR(api, api.ReduceScatter(src, op.out.data, count / m, *NcclType(op.in.dtype),
                                                     *red, comm, s));
      break;
    }
    case CollectiveKind::kAllToAll: {
      std::vector<const std::byte*> send(m);
      std::vector<std::byte*> recv(m);
      int64_t piece_bytes = count * es;
      CopyJob unpack;
      if (!op.tuple_in.empty()) {
        for (int64_t j = 0; j < m; ++j) {
          send[j] = op.tuple_in[j].data;
          recv[j] = op.tuple_out[j].data;
        }
      } else {
        std::vector<int64_t> piece(dims.begin(), dims.end());
        piece[op.dim0] /= m;
        std::vector<int64_t> out_dims = piece;
        out_dims[op.dim1] *= m;
        const int64_t piece_elems = count / m;
        piece_bytes = piece_elems * es;
        const std::vector<int64_t> si = RowMajorStrides(dims), so = RowMajorStrides(out_dims),
                                   sp = RowMajorStrides(piece);
        std::byte* packed = nullptr;
        if (Product(dims, 0, op.dim0) > 1) {
          XS_ASSIGN_OR_RETURN(packed, me.Scratch(0, count * es));
          CopyJob pack{{}, {}, piece, si, sp, es};
          for (int64_t j = 0; j < m; ++j) {
            pack.src.push_back(op.in.data + j * piece[op.dim0] * si[op.dim0] * es);
            pack.dst.push_back(packed + j * piece_bytes);
          }
          XS_RETURN_IF_ERROR(EnqueueCopy(pack, me.gpu, s));
        }
        const bool scatter = Product(out_dims, 0, op.dim1) > 1;
        std::byte* landing = nullptr;
        if (scatter) {
          XS_ASSIGN_OR_RETURN(landing, me.Scratch(1, count * es));
        }
        unpack = {{}, {}, piece, sp, so, es};
        for (int64_t j = 0; j < m; ++j) {
          send[j] = packed != nullptr ? packed + j * piece_bytes
                                      : op.in.data + j * piece[op.dim0] * si[op.dim0] * es;
          std::byte* dst = op.out.data + j * piece[op.dim1] * so[op.dim1] * es;
          recv[j] = scatter ? landing + j * piece_bytes : dst;
          if (scatter) {
            unpack.src.push_back(landing + j * piece_bytes);
            unpack.dst.push_back(dst);
          }
        }
      }
      XS_NCCL_RETURN_IF_ERROR(api, api.GroupStart());
      for (int64_t j = 0; j < m; ++j) {
        XS_NCCL_RETURN_IF_ERROR(api, api.Send(send[j], piece_bytes, ncclUint8, static_cast<int>(j), comm, s));
        XS_NCCL_RETURN_IF_ERROR(api, api.Recv(recv[j], piece_bytes, ncclUint8, static_cast<int>(j), comm, s));
      }
      XS_NCCL_RETURN_IF_ERROR(api, api.GroupEnd());
      if (!unpack.src.empty()) XS_RETURN_IF_ERROR(EnqueueCopy(unpack, me.gpu, s));
      break;
    }
    case CollectiveKind::kCollectivePermute: {
      const int64_t source = op.pairs->SourceOf(call.rank), target = op.pairs->TargetOf(call.rank);
      if (source < 0) XS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(op.out.data, 0, count * es, s));
      XS_NCCL_RETURN_IF_ERROR(api, api.GroupStart());
      if (target >= 0) {
        XS_NCCL_RETURN_IF_ERROR(api, api.Send(op.in.data, count * es, ncclUint8, static_cast<int>(target), comm, s));
      }
      if (source >= 0) {
        XS_NCCL_RETURN_IF_ERROR(api, api.Recv(op.out.data, count * es, ncclUint8, static_cast<int>(source), comm, s));
      }
      XS_NCCL_RETURN_IF_ERROR(api, api.GroupEnd());
      break;
    }
    default:  // collective-broadcast
      if (comm == nullptr || m == 0) {
        XS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(op.out.data, 0, count * es, s));
      } else {
        XS_NCCL_RETURN_IF_ERROR(api, api.Broadcast(op.in.data, op.out.data, count * es, ncclUint8, 0, comm, s));
      }
      break;
  }
  if (comm != nullptr) XS_RETURN_IF_ERROR(sh.Settle(comm, deadline, what));
  cudaEvent_t watched = nullptr;
  XS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&watched, cudaEventDisableTiming));
  XS_CUDA_RETURN_IF_ERROR(cudaEventRecord(watched, s));
  {
    std::lock_guard<std::mutex> lock(sh.mu);
    sh.pending.push_back({watched, deadline, what});
  }
  const uint64_t k = ++me.calls;
  XS_CUDA_RETURN_IF_ERROR(cudaEventRecord(me.finished[k % 16], s));
  if (async) {
    me.started.insert(k);
    *call.async_handle = k;
  }
  return OkStatus();
}

Status NcclCommunicator::AllGather(const CollectiveCall& call, const DeviceGroups& groups,
                                   ConstBufferView in, BufferView out, int dim) {
  Op op{CollectiveKind::kAllGather, &groups, nullptr, ReductionKind::kSum, dim, 0, in, out, {}, {}};
  return Run(call, op);
}

Status NcclCommunicator::AllReduce(const CollectiveCall& call, const DeviceGroups& groups,
                                   ConstBufferView in, BufferView out, ReductionKind reduction) {
  Op op{CollectiveKind::kAllReduce, &groups, nullptr, reduction, 0, 0, in, out, {}, {}};
  return Run(call, op);
}

Status NcclCommunicator::ReduceScatter(const CollectiveCall& call, const DeviceGroups& groups,
                                       ConstBufferView in, BufferView out, int dim,
                                       ReductionKind reduction) {
  Op op{CollectiveKind::kReduceScatter, &groups, nullptr, reduction, dim, 0, in, out, {}, {}};
  return Run(call, op);
}

Status NcclCommunicator::AllToAll(const CollectiveCall& call, const DeviceGroups& groups,
                                  ConstBufferView in, BufferView out, int split_dim, int concat_dim) {
  Op op{CollectiveKind::kAllToAll, &groups, nullptr, ReductionKind::kSum, split_dim, concat_dim,
        in, out, {}, {}};
  return Run(call, op);
}

Status NcclCommunicator::AllToAllTuple(const CollectiveCall& call, const DeviceGroups& groups,
                                       std::span<const ConstBufferView> ins,
                                       std::span<const BufferView> outs) {
  if (ins.empty()) {
    return InvalidArgument(call.op_name, ": a tuple all-to-all needs one operand per group member");
  }
  Op op{CollectiveKind::kAllToAll, &groups, nullptr, ReductionKind::kSum, 0, 0, ins[0],
        outs.empty() ? BufferView{} : outs[0], ins, outs};
  return Run(call, op);
}

Status NcclCommunicator::CollectivePermute(const CollectiveCall& call, const PermutePairs& pairs,
                                           ConstBufferView in, BufferView out) {
  Op op{CollectiveKind::kCollectivePermute, nullptr, &pairs, ReductionKind::kSum, 0, 0, in, out, {}, {}};
  return Run(call, op);
}

Status NcclCommunicator::CollectiveBroadcast(const CollectiveCall& call, const DeviceGroups& groups,
                                             ConstBufferView in, BufferView out) {
  Op op{CollectiveKind::kCollectiveBroadcast, &groups, nullptr, ReductionKind::kSum, 0, 0, in, out, {}, {}};
  return Run(call, op);
}

}  // namespace xs::cuda
