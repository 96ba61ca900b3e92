// Array-level collectives: output shape, allocation, communicator call.
#include "xshard/comm/collectives.h"

#include "xshard/comm/collective_shapes.h"

namespace xs {
namespace {

std::string_view OpName(const CollectiveCall& call, CollectiveKind kind) {
  return call.op_name.empty() ? CollectiveKindName(kind) : call.op_name;
}

int64_t GroupSize(const DeviceGroups& groups, const CollectiveCall& call) {
  if (call.rank < 0 || call.rank >= groups.num_ranks()) return 0;
  return static_cast<int64_t>(groups.GroupOf(call.rank).size());
}

// Shape errors found before the call must still release the peers.
template <typename T>
StatusOr<T> AbortOnError(Communicator& comm, StatusOr<T> result) {
  if (!result.ok()) comm.Abort(result.status());
  return result;
}

}  // namespace

StatusOr<Array> AllGather(Communicator& comm, const CollectiveCall& call,
                          const DeviceGroups& groups, const Array& x, int dim) {
  auto dims = AbortOnError(comm, AllGatherDims(OpName(call, CollectiveKind::kAllGather), x.dims(),
                                               dim, GroupSize(groups, call)));
  XS_RETURN_IF_ERROR(dims.status());
  Array out(x.dtype(), *std::move(dims));
  XS_RETURN_IF_ERROR(
      comm.AllGather(call, groups, ConstBufferView::Of(x), BufferView::Of(out), dim));
  return out;
}

StatusOr<Array> AllReduce(Communicator& comm, const CollectiveCall& call,
                          const DeviceGroups& groups, const Array& x, ReductionKind reduction) {
  Array out(x.shape());
  XS_RETURN_IF_ERROR(
      comm.AllReduce(call, groups, ConstBufferView::Of(x), BufferView::Of(out), reduction));
  return out;
}

StatusOr<Array> ReduceScatter(Communicator& comm, const CollectiveCall& call,
                              const DeviceGroups& groups, const Array& x, int dim,
                              ReductionKind reduction) {
  auto dims = AbortOnError(
      comm, ReduceScatterDims(OpName(call, CollectiveKind::kReduceScatter), x.dims(), dim,
                              GroupSize(groups, call)));
  XS_RETURN_IF_ERROR(dims.status());
  Array out(x.dtype(), *std::move(dims));
  XS_RETURN_IF_ERROR(comm.ReduceScatter(call, groups, ConstBufferView::Of(x),
                                        BufferView::Of(out), dim, reduction));
  return out;
}

StatusOr<Array> AllToAll(Communicator& comm, const CollectiveCall& call,
                         const DeviceGroups& groups, const Array& x, int split_dim,
                         int concat_dim) {
  auto dims = AbortOnError(comm, AllToAllDims(OpName(call, CollectiveKind::kAllToAll), x.dims(),
                                              split_dim, concat_dim, GroupSize(groups, call)));
  XS_RETURN_IF_ERROR(dims.status());
  Array out(x.dtype(), *std::move(dims));
  XS_RETURN_IF_ERROR(comm.AllToAll(call, groups, ConstBufferView::Of(x), BufferView::Of(out),
                                   split_dim, concat_dim));
  return out;
}

StatusOr<std::vector<Array>> AllToAllTuple(Communicator& comm, const CollectiveCall& call,
                                           const DeviceGroups& groups,
                                           std::span<const Array> xs) {
  std::vector<Array> outs;
  std::vector<ConstBufferView> ins;
  for (const Array& x : xs) {
    outs.emplace_back(x.shape());
    ins.push_back(ConstBufferView::Of(x));
  }
  std::vector<BufferView> out_views;
  for (Array& o : outs) out_views.push_back(BufferView::Of(o));
  XS_RETURN_IF_ERROR(comm.AllToAllTuple(call, groups, ins, out_views));
  return outs;
}

StatusOr<Array> CollectivePermute(Communicator& comm, const CollectiveCall& call,
                                  const PermutePairs& pairs, const Array& x) {
  Array out(x.shape());
  XS_RETURN_IF_ERROR(
      comm.CollectivePermute(call, pairs, ConstBufferView::Of(x), BufferView::Of(out)));
  return out;
}

StatusOr<Array> CollectiveBroadcast(Communicator& comm, const CollectiveCall& call,
                                    const DeviceGroups& groups, const Array& x) {
  Array out(x.shape());
  XS_RETURN_IF_ERROR(
      comm.CollectiveBroadcast(call, groups, ConstBufferView::Of(x), BufferView::Of(out)));
  return out;
}

}  // namespace xs
