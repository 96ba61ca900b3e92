// What one in-process collective call publishes, how two ranks' calls are compared, the checks a
// rank makes on its own arguments before it publishes anything, and the public collective methods
// (each builds an OpSpec for InProcessCommunicator::Run).
#include <algorithm>

#include "xshard/comm/collective_shapes.h"
#include "xshard/comm/inprocess_internal.h"
#include "xshard/comm/reduction.h"

namespace xs::inprocess {
namespace {

std::string DimsText(std::span<const int64_t> dims) { return StrCat("[", StrJoin(dims, ","), "]"); }

}  // namespace

std::string Label(const Desc& d) {
  const std::string_view kind = CollectiveKindName(d.kind);
  if (d.op_name.empty() || d.op_name == kind) return StrCat(kind, " (channel ", d.channel_id, ")");
  return StrCat(d.op_name, " (", kind, ", channel ", d.channel_id, ")");
}

// "psum (all-reduce, channel 3) of f32[8] with sum over group {0,1,2,3}".
std::string Describe(const State& s, const Desc& d) {
  std::string out = StrCat(Label(d), " of ", DTypeName(d.dtype), DimsText(d.in_dims));
  if (!d.tuple_in.empty()) StrAppend(&out, " x", d.tuple_in.size());
  switch (d.kind) {
    case CollectiveKind::kAllReduce:
      StrAppend(&out, " with ", ReductionKindName(d.reduction));
      break;
    case CollectiveKind::kReduceScatter:
      StrAppend(&out, " with ", ReductionKindName(d.reduction), " along dim ", d.dim0);
      break;
    case CollectiveKind::kAllGather:
      StrAppend(&out, " along dim ", d.dim0);
      break;
    case CollectiveKind::kAllToAll:
      StrAppend(&out, " split dim ", d.dim0, ", concat dim ", d.dim1);
      break;
    default:
      break;
  }
  std::vector<int64_t> devices;
  for (int64_t r : d.group) devices.push_back(s.DeviceId(r));
  StrAppend(&out, d.kind == CollectiveKind::kCollectivePermute ? " with source/target {"
                                                                : " over group {",
            StrJoin(devices, ","), "}");
  if (d.algorithm != CollectiveAlgorithm::kDirect) {
    StrAppend(&out, " using ", CollectiveAlgorithmName(d.algorithm));
  }
  return out;
}

bool SameCall(const Desc& a, const Desc& b) {
  return a.kind == b.kind && a.channel_id == b.channel_id &&
         a.participants_fp == b.participants_fp && a.algorithm == b.algorithm &&
         a.reduction == b.reduction && a.dim0 == b.dim0 && a.dim1 == b.dim1 &&
         a.dtype == b.dtype && a.in_dims == b.in_dims &&
         a.tuple_in.size() == b.tuple_in.size() && a.eager == b.eager;
}

// Checks the calling rank's own arguments before it publishes anything.
Status CheckLocal(const OpSpec& spec, std::string_view op, int64_t num_ranks, int64_t rank,
                  std::span<const int64_t> group) {
  if (spec.groups != nullptr && spec.groups->num_ranks() != num_ranks) {
    return InvalidArgument(op, ": replica groups ", spec.groups->ToString(), " were built for ",
                           spec.groups->num_ranks(), " devices but the communicator has ",
                           num_ranks);
  }
  if (spec.pairs != nullptr && spec.pairs->num_ranks() != num_ranks) {
    return InvalidArgument(op, ": source_target_pairs ", spec.pairs->ToString(),
                           " were built for ", spec.pairs->num_ranks(),
                           " devices but the communicator has ", num_ranks);
  }
  const int64_t n = static_cast<int64_t>(group.size());
  std::vector<int64_t> expected;
  switch (spec.kind) {
    case CollectiveKind::kAllGather: {
      XS_ASSIGN_OR_RETURN(expected, AllGatherDims(op, spec.in.dims, spec.dim0, n));
      break;
    }
    case CollectiveKind::kReduceScatter: {
      XS_RETURN_IF_ERROR(CheckReduction(spec.reduction, spec.in.dtype, op));
      XS_ASSIGN_OR_RETURN(expected, ReduceScatterDims(op, spec.in.dims, spec.dim0, n));
      break;
    }
    case CollectiveKind::kAllReduce:
      XS_RETURN_IF_ERROR(CheckReduction(spec.reduction, spec.in.dtype, op));
      expected.assign(spec.in.dims.begin(), spec.in.dims.end());
      break;
    case CollectiveKind::kAllToAll: {
      if (!spec.tuple_in.empty() || !spec.tuple_out.empty()) {
        if (static_cast<int64_t>(spec.tuple_in.size()) != n ||
            static_cast<int64_t>(spec.tuple_out.size()) != n) {
          return InvalidArgument(op, ": the tuple all-to-all of device ", rank, " has ",
                                 spec.tuple_in.size(), " operands and ", spec.tuple_out.size(),
                                 " results but its group has ", n,
                                 " members; pass one operand per member");
        }
        for (int64_t j = 0; j < n; ++j) {
          const ConstBufferView& a = spec.tuple_in[j];
          if (a.dtype != spec.tuple_in[0].dtype ||
              !std::ranges::equal(a.dims, spec.tuple_in[0].dims)) {
            return InvalidArgument(op, ": tuple operand ", j, " is ", a.ShapeString(),
                                   " but operand 0 is ", spec.tuple_in[0].ShapeString(),
                                   "; every operand of a tuple all-to-all has the same shape");
          }
          XS_RETURN_IF_ERROR(CheckOutput(op, a, spec.tuple_out[j], a.dims));
        }
        return OkStatus();
      }
      XS_ASSIGN_OR_RETURN(expected,
                          AllToAllDims(op, spec.in.dims, spec.dim0, spec.dim1, n));
      break;
    }
    case CollectiveKind::kCollectivePermute:
    case CollectiveKind::kCollectiveBroadcast:
      expected.assign(spec.in.dims.begin(), spec.in.dims.end());
      break;
    case CollectiveKind::kBarrier:
      return OkStatus();
  }
  return CheckOutput(op, spec.in, spec.out, expected);
}

// Fills `d` from the call, including the members this rank waits for and reads from.
void Fill(const CollectiveCall& call, const OpSpec& spec, CollectiveAlgorithm algorithm,
          int64_t num_ranks, Desc& d) {
  d.kind = spec.kind;
  d.channel_id = call.channel_id;
  d.op_name.assign(call.op_name.begin(), call.op_name.end());
  d.group.clear();
  d.source = -1;
  d.target = -1;
  if (spec.kind == CollectiveKind::kBarrier) {
    for (int64_t r = 0; r < num_ranks; ++r) d.group.push_back(r);
    d.participants_fp = 0;
  } else if (spec.pairs != nullptr) {
    // Group order for a permute: this rank, then its source and target.
    d.group.push_back(call.rank);
    for (int64_t r : {spec.pairs->SourceOf(call.rank), spec.pairs->TargetOf(call.rank)}) {
      if (r >= 0 && std::find(d.group.begin(), d.group.end(), r) == d.group.end()) {
        d.group.push_back(r);
      }
    }
    d.participants_fp = spec.pairs->fingerprint();
    d.source = spec.pairs->SourceOf(call.rank);
    d.target = spec.pairs->TargetOf(call.rank);
  } else {
    const auto g = spec.groups->GroupOf(call.rank);
    d.group.assign(g.begin(), g.end());
    d.participants_fp = spec.groups->fingerprint();
  }
  const bool chooses = spec.kind == CollectiveKind::kAllGather ||
                       spec.kind == CollectiveKind::kAllReduce ||
                       spec.kind == CollectiveKind::kReduceScatter;
  d.algorithm = chooses ? algorithm : CollectiveAlgorithm::kDirect;
  d.reduction = spec.reduction;
  d.dim0 = spec.dim0;
  d.dim1 = spec.dim1;
  d.dtype = spec.tuple_in.empty() ? spec.in.dtype : spec.tuple_in[0].dtype;
  const auto in_dims = spec.tuple_in.empty() ? spec.in.dims : spec.tuple_in[0].dims;
  d.in_dims.assign(in_dims.begin(), in_dims.end());
  d.out_dims.assign(spec.out.dims.begin(), spec.out.dims.end());
  d.in = spec.in.data;
  d.out = spec.out.data;
  d.scratch = nullptr;
  d.tuple_in.clear();
  d.tuple_out.clear();
  for (const auto& v : spec.tuple_in) d.tuple_in.push_back(v.data);
  for (const auto& v : spec.tuple_out) d.tuple_out.push_back(v.data);
  // bf16 sums and products accumulate in f32 (ReduceMany), which the stepped algorithms' bf16
  // partials between steps would undo: they run direct.
  if (d.dtype == DType::kBF16 && (d.reduction == ReductionKind::kSum || d.reduction == ReductionKind::kProduct) &&
      d.kind != CollectiveKind::kAllGather) {
    d.algorithm = CollectiveAlgorithm::kDirect;
  }
}


}  // namespace xs::inprocess

namespace xs {

Status InProcessCommunicator::AllGather(const CollectiveCall& call, const DeviceGroups& groups,
                                        ConstBufferView in, BufferView out, int dim) {
  inprocess::OpSpec spec;
  spec.kind = CollectiveKind::kAllGather;
  spec.groups = &groups;
  spec.in = in;
  spec.out = out;
  spec.dim0 = dim;
  return Run(call, spec);
}

Status InProcessCommunicator::AllReduce(const CollectiveCall& call, const DeviceGroups& groups,
                                        ConstBufferView in, BufferView out,
                                        ReductionKind reduction) {
  inprocess::OpSpec spec;
  spec.kind = CollectiveKind::kAllReduce;
  spec.groups = &groups;
  spec.in = in;
  spec.out = out;
  spec.reduction = reduction;
  return Run(call, spec);
}

Status InProcessCommunicator::ReduceScatter(const CollectiveCall& call,
                                            const DeviceGroups& groups, ConstBufferView in,
                                            BufferView out, int dim, ReductionKind reduction) {
  inprocess::OpSpec spec;
  spec.kind = CollectiveKind::kReduceScatter;
  spec.groups = &groups;
  spec.in = in;
  spec.out = out;
  spec.dim0 = dim;
  spec.reduction = reduction;
  return Run(call, spec);
}

Status InProcessCommunicator::AllToAll(const CollectiveCall& call, const DeviceGroups& groups,
                                       ConstBufferView in, BufferView out, int split_dim,
                                       int concat_dim) {
  inprocess::OpSpec spec;
  spec.kind = CollectiveKind::kAllToAll;
  spec.groups = &groups;
  spec.in = in;
  spec.out = out;
  spec.dim0 = split_dim;
  spec.dim1 = concat_dim;
  return Run(call, spec);
}

Status InProcessCommunicator::AllToAllTuple(const CollectiveCall& call,
                                            const DeviceGroups& groups,
                                            std::span<const ConstBufferView> ins,
                                            std::span<const BufferView> outs) {
  inprocess::OpSpec spec;
  spec.kind = CollectiveKind::kAllToAll;
  spec.groups = &groups;
  spec.tuple_in = ins;
  spec.tuple_out = outs;
  return Run(call, spec);
}

Status InProcessCommunicator::CollectivePermute(const CollectiveCall& call,
                                                const PermutePairs& pairs, ConstBufferView in,
                                                BufferView out) {
  inprocess::OpSpec spec;
  spec.kind = CollectiveKind::kCollectivePermute;
  spec.pairs = &pairs;
  spec.in = in;
  spec.out = out;
  return Run(call, spec);
}

Status InProcessCommunicator::CollectiveBroadcast(const CollectiveCall& call,
                                                  const DeviceGroups& groups,
                                                  ConstBufferView in, BufferView out) {
  inprocess::OpSpec spec;
  spec.kind = CollectiveKind::kCollectiveBroadcast;
  spec.groups = &groups;
  spec.in = in;
  spec.out = out;
  return Run(call, spec);
}

Status InProcessCommunicator::Barrier(const CollectiveCall& call) {
  inprocess::OpSpec spec;
  spec.kind = CollectiveKind::kBarrier;
  return Run(call, spec);
}

}  // namespace xs
