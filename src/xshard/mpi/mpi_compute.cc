// What one local device's call is (its bytes, hash and description) and how its output follows
// from its peers' inputs once they are all at hand: the in-process direct algorithms' order (group
// order for reductions), so results match the in-process communicator bitwise.
#include <cstring>
#include <vector>

#include "xshard/comm/chunking.h"
#include "xshard/comm/reduction.h"
#include "xshard/mpi/mpi_internal.h"

namespace xs::mpi {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

int64_t LocalOp::InBytes() const { return in.byte_size(); }

int64_t LocalOp::SendBytes() const {
  return tuple_in.empty() ? InBytes() : InBytes() * static_cast<int64_t>(tuple_in.size());
}

uint64_t LocalOp::Hash() const {
  uint64_t h = Mix(0, static_cast<uint64_t>(kind));
  h = Mix(h, static_cast<uint64_t>(channel_id));
  h = Mix(h, groups != nullptr ? groups->fingerprint() : 0);
  h = Mix(h, pairs != nullptr ? pairs->fingerprint() : 0);
  if (kind == CollectiveKind::kBarrier) return h;
  h = Mix(h, static_cast<uint64_t>(reduction));
  h = Mix(h, static_cast<uint64_t>(dim0));
  h = Mix(h, static_cast<uint64_t>(dim1));
  h = Mix(h, static_cast<uint64_t>(in.dtype));
  h = Mix(h, tuple_in.size());
  for (int64_t d : in.dims) h = Mix(h, static_cast<uint64_t>(d));
  return h;
}

std::string LocalOp::Label() const {
  const std::string_view k = CollectiveKindName(kind);
  if (op_name.empty() || op_name == k) return StrCat(k, " (channel ", channel_id, ")");
  return StrCat(op_name, " (", k, ", channel ", channel_id, ")");
}

std::string LocalOp::Describe(const std::vector<int64_t>& device_ids) const {
  std::string out = Label();
  if (kind == CollectiveKind::kBarrier) return out;
  StrAppend(&out, " of ", in.ShapeString());
  if (!tuple_in.empty()) StrAppend(&out, " x", tuple_in.size());
  switch (kind) {
    case CollectiveKind::kAllReduce:
      StrAppend(&out, " with ", ReductionKindName(reduction));
      break;
    case CollectiveKind::kReduceScatter:
      StrAppend(&out, " with ", ReductionKindName(reduction), " along dim ", dim0);
      break;
    case CollectiveKind::kAllGather:
      StrAppend(&out, " along dim ", dim0);
      break;
    case CollectiveKind::kAllToAll:
      StrAppend(&out, " split dim ", dim0, ", concat dim ", dim1);
      break;
    default:
      break;
  }
  std::vector<int64_t> ids;
  if (groups != nullptr) {
    for (int64_t r : groups->GroupOf(rank)) ids.push_back(device_ids[r]);
    StrAppend(&out, " over group {", StrJoin(ids, ","), "}");
  } else if (pairs != nullptr) {
    StrAppend(&out, " with source/target pairs ", pairs->ToString(), " (ranks)");
  }
  return out;
}

void ComputeOutput(const LocalOp& op,
                   const std::function<const std::byte*(int64_t rank, int64_t elem)>& input) {
  if (op.kind == CollectiveKind::kBarrier) return;
  const int64_t es = DTypeSize(op.in.dtype);
  const int64_t bytes = op.InBytes();
  if (op.kind == CollectiveKind::kCollectivePermute) {
    const int64_t source = op.pairs->SourceOf(op.rank);
    if (source < 0) {
      std::memset(op.out.data, 0, static_cast<size_t>(bytes));
    } else {
      CopyBytes(op.out.data, input(source, 0), bytes);
    }
    return;
  }
  const auto group = op.groups->GroupOf(op.rank);
  const int64_t n = static_cast<int64_t>(group.size());
  const int64_t me = op.groups->IndexInGroup(op.rank);
  switch (op.kind) {
    case CollectiveKind::kCollectiveBroadcast:
      if (me < 0) {
        std::memset(op.out.data, 0, static_cast<size_t>(bytes));
      } else {
        CopyBytes(op.out.data, input(group[0], 0), bytes);
      }
      return;
    case CollectiveKind::kAllGather: {
      const Chunking ch = Chunking::AlongDim(op.out.dims, op.dim0, n, es);
      for (int64_t j = 0; j < n; ++j) CopyChunk(ch, j, {op.out.data, false}, {input(group[j], 0), true});
      return;
    }
    case CollectiveKind::kAllReduce: {
      std::vector<const std::byte*> ptrs;
      for (int64_t m : group) ptrs.push_back(input(m, 0));
      ReduceMany(op.reduction, op.in.dtype, op.out.data, ptrs, op.in.num_elements());
      return;
    }
    case CollectiveKind::kReduceScatter: {
      const Chunking ch = Chunking::AlongDim(op.in.dims, op.dim0, n, es);
      std::vector<ChunkRef> refs;
      for (int64_t m : group) refs.push_back({input(m, 0), false});
      std::vector<const std::byte*> scratch;
      ReduceChunk(ch, me, op.reduction, op.in.dtype, {op.out.data, true}, refs, scratch);
      return;
    }
    case CollectiveKind::kAllToAll: {
      if (!op.tuple_in.empty()) {
        for (int64_t j = 0; j < n; ++j) CopyBytes(op.tuple_out[j].data, input(group[j], me), bytes);
        return;
      }
      const size_t rank = op.in.dims.size();
      std::vector<int64_t> in_dims(op.in.dims.begin(), op.in.dims.end());
      std::vector<int64_t> out_dims(op.out.dims.begin(), op.out.dims.end());
      std::vector<int64_t> box(in_dims), src_start(rank, 0), dst_start(rank, 0);
      box[op.dim0] /= n;
      src_start[op.dim0] = me * box[op.dim0];
      for (int64_t j = 0; j < n; ++j) {
        dst_start[op.dim1] = j * box[op.dim1];
        CopyBox(input(group[j], 0), in_dims, src_start, op.out.data, out_dims, dst_start, box, es);
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace xs::mpi
