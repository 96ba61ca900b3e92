// Planning an SPMD module's collectives (group modes, reducers, shape checks against the group
// sizes) and running them for one rank through a Communicator.
#include "xshard/runtime/spmd_executor_collectives.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace xs {
namespace {

// What each collective opcode is to the communicator.
struct CollectiveOpInfo {
  Opcode opcode;
  CollectiveKind kind;
  bool takes_global_device_ids;  // XLA passes use_global_device_ids to GetCollectiveOpGroupMode
  bool start_wraps_result;       // -start form whose shape is (operands, result, ...)
};

constexpr CollectiveOpInfo kCollectiveOps[] = {
    {Opcode::kAllGather, CollectiveKind::kAllGather, true, false},
    {Opcode::kAllGatherStart, CollectiveKind::kAllGather, true, true},
    {Opcode::kAllReduce, CollectiveKind::kAllReduce, true, false},
    {Opcode::kAllReduceStart, CollectiveKind::kAllReduce, true, false},
    {Opcode::kReduceScatter, CollectiveKind::kReduceScatter, true, false},
    {Opcode::kAllToAll, CollectiveKind::kAllToAll, false, false},
    {Opcode::kRaggedAllToAll, CollectiveKind::kAllToAll, false, false},
    {Opcode::kCollectiveBroadcast, CollectiveKind::kCollectiveBroadcast, false, false},
    {Opcode::kCollectivePermute, CollectiveKind::kCollectivePermute, false, false},
    {Opcode::kCollectivePermuteStart, CollectiveKind::kCollectivePermute, false, true},
};

const CollectiveOpInfo* FindOp(Opcode op) {
  for (const CollectiveOpInfo& info : kCollectiveOps) {
    if (info.opcode == op) return &info;
  }
  return nullptr;
}

struct ReducerInfo {
  Opcode opcode;
  ReductionKind kind;
};
constexpr ReducerInfo kReducers[] = {
    {Opcode::kAdd, ReductionKind::kSum},     {Opcode::kMultiply, ReductionKind::kProduct},
    {Opcode::kMinimum, ReductionKind::kMin}, {Opcode::kMaximum, ReductionKind::kMax},
    {Opcode::kAnd, ReductionKind::kAnd},     {Opcode::kOr, ReductionKind::kOr},
};

void FlattenLeaves(const Shape& s, std::vector<Shape>& out) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes()) FlattenLeaves(e, out);
  } else if (s.IsArray()) {
    out.push_back(s.WithoutLayout());
  }
}

std::string DimsText(const Shape& s) { return s.ToString(false); }

// The result and operand leaves must pair up with the expected dims for every group size.
Status CheckShapes(const PlannedCollective& op, const std::vector<Shape>& operands) {
  std::vector<int64_t> sizes;
  if (op.groups) {
    for (int64_t g = 0; g < op.groups->num_groups(); ++g) {
      const int64_t n = static_cast<int64_t>(op.groups->group(g).size());
      if (std::find(sizes.begin(), sizes.end(), n) == sizes.end()) sizes.push_back(n);
    }
  } else {
    sizes.push_back(1);
  }
  if (op.tuple_all_to_all) {
    for (int64_t n : sizes) {
      if (static_cast<int64_t>(operands.size()) != n || op.results.size() != operands.size()) {
        return InvalidArgument(op.name, ": the tuple form of all-to-all sends operand j to group "
                               "member j, so it needs one operand per member (groups of ", n,
                               "), but it has ", operands.size(), " operand(s) and ",
                               op.results.size(), " result(s)");
      }
    }
    for (size_t i = 1; i < operands.size(); ++i) {
      if (!operands[i].Compatible(operands[0])) {
        return InvalidArgument(op.name, ": every operand of a tuple all-to-all must have one "
                               "shape; operand 0 is ", DimsText(operands[0]), ", operand ", i,
                               " is ", DimsText(operands[i]));
      }
    }
    return OkStatus();
  }
  if (operands.size() != op.results.size()) {
    return InvalidArgument(op.name, " has ", operands.size(), " operand(s) but ",
                           op.results.size(), " result(s); each operand needs one result");
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    const Shape& in = operands[i];
    const Shape& out = op.results[i];
    if (in.dtype() != out.dtype() || in.rank() != out.rank()) {
      return InvalidArgument(op.name, ": operand ", i, " is ", DimsText(in), " but result ", i,
                             " is ", DimsText(out), "; they must have one element type and rank");
    }
    const bool uses_dim = op.kind == CollectiveKind::kAllGather ||
                          op.kind == CollectiveKind::kReduceScatter ||
                          op.kind == CollectiveKind::kAllToAll;
    if (uses_dim && (op.dim < 0 || op.dim >= in.rank())) {
      return InvalidArgument(op.name, ": dimensions={", op.dim, "} is out of range for operand ",
                             DimsText(in));
    }
    for (int64_t n : sizes) {
      std::vector<int64_t> want = in.dims();
      if (op.kind == CollectiveKind::kAllGather) want[op.dim] *= n;
      if (op.kind == CollectiveKind::kReduceScatter) {
        if (in.dims()[op.dim] % n != 0) {
          return InvalidArgument(op.name, ": reduce-scatter over groups of ", n, " splits dim ",
                                 op.dim, " of ", DimsText(in), ", which does not divide by ", n);
        }
        want[op.dim] /= n;
      }
      if (op.kind == CollectiveKind::kAllToAll && in.dims()[op.dim] % n != 0) {
        return InvalidArgument(op.name, ": all-to-all over groups of ", n, " splits dim ", op.dim,
                               " of ", DimsText(in), ", which does not divide by ", n);
      }
      if (want != out.dims()) {
        return InvalidArgument(op.name, " over groups of ", n, " turns ", DimsText(in), " into ",
                               DimsText(Shape(in.dtype(), want)), ", but its result ", i, " is ",
                               DimsText(out));
      }
    }
  }
  return OkStatus();
}

// ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets, recv_sizes): the
// result is `output`'s shape; input and output share a dtype and every dim but the first (the
// rows sent); the four index arrays are 1-D integers with one entry per group member.
Status CheckRaggedShapes(const PlannedCollective& op, const std::vector<Shape>& operands) {
  if (operands.size() != 6 || op.results.size() != 1) {
    return InvalidArgument(op.name, " needs (input, output, input_offsets, send_sizes, output_offsets, "
                           "recv_sizes) and an array result");
  }
  const Shape& in = operands[0];
  const Shape& out = operands[1];
  auto rest = [](const Shape& s) { return std::vector<int64_t>(s.dims().begin() + 1, s.dims().end()); };
  if (in.rank() < 1 || out.rank() != in.rank() || in.dtype() != out.dtype() || rest(in) != rest(out) ||
      !op.results[0].Compatible(out)) {
    return InvalidArgument(op.name, ": input ", DimsText(in), ", output ", DimsText(out), " and result ",
                           DimsText(op.results[0]), " must share a dtype and all dims but the first, the "
                           "result being the output's shape");
  }
  for (int64_t g = 0; op.groups && g < op.groups->num_groups(); ++g) {
    const int64_t n = static_cast<int64_t>(op.groups->group(g).size());
    for (size_t k = 2; k < 6; ++k) {
      const Shape& s = operands[k];
      if (s.rank() != 1 || s.dims()[0] != n || (s.dtype() != DType::kS32 && s.dtype() != DType::kS64)) {
        return InvalidArgument(op.name, ": operand ", k, " (", DimsText(s), ") must be s32[", n, "] or s64[", n,
                               "]: one offset or size per member of a group of ", n);
      }
    }
  }
  return OkStatus();
}

StatusOr<PlannedCollective> PlanOne(const Instruction& inst, const CollectiveOpInfo& info,
                                    int64_t replicas, int64_t partitions) {
  const Attributes& attrs = inst.attrs();
  PlannedCollective op;
  op.kind = info.kind;
  op.name = StrCat(OpcodeName(inst.opcode()), " '", inst.name(), "'");
  op.call_name = inst.name();
  op.channel_id = attrs.channel_id.value_or(0);
  const Shape& shape = inst.shape();
  const Shape& core = info.start_wraps_result && shape.IsTuple() && shape.tuple_size() >= 2
                          ? shape.tuple_shape(1)
                          : shape;
  FlattenLeaves(core, op.results);
  std::vector<Shape> operands;
  for (const Instruction* o : inst.operands()) FlattenLeaves(o->shape(), operands);

  if (info.kind == CollectiveKind::kCollectivePermute) {
    // Four operands (input, output, input and output start indices) are XLA's in-place form, as
    // shape inference reads them; other counts are the combined form (XLA's collective-permute
    // combiner), one result per operand, each moved as a one-operand permute would move it
    // (CheckShapes below pairs them up).
    if (inst.operand_count() == 4) {
      return UnsupportedInstruction(inst,
                                    "the in-place form of collective-permute (input, output "
                                    "and start indices) is not supported; only the one-operand "
                                    "and combined (one result per operand) forms are");
    }
    XS_ASSIGN_OR_RETURN(op.pairs, ResolvePermutePairs(attrs.channel_id.has_value(),
                                                      attrs.source_target_pairs.value_or(
                                                          std::vector<std::pair<int64_t, int64_t>>{}),
                                                      replicas, partitions, op.name));
  } else {
    std::optional<bool> global;
    if (info.takes_global_device_ids) global = attrs.use_global_device_ids;
    StatusOr<GroupMode> mode = GroupModeFor(attrs.channel_id.has_value(), global);
    if (!mode.ok()) return Annotate(mode.status(), StrCat(op.name, ": "));
    op.mode = *mode;
    // Every replica_groups form (explicit, iota, mesh axes) arrives expanded from text/.
    const std::vector<std::vector<int64_t>> none;
    const std::vector<std::vector<int64_t>>& given =
        attrs.replica_groups ? attrs.replica_groups->Groups() : none;
    XS_ASSIGN_OR_RETURN(op.groups, ResolveGroupMode(op.mode, given, replicas, partitions,
                                                    op.name));
  }
  if (info.kind == CollectiveKind::kAllReduce || info.kind == CollectiveKind::kReduceScatter) {
    XS_ASSIGN_OR_RETURN(op.reduction, DetectReduction(inst));
  }
  if (inst.opcode() == Opcode::kRaggedAllToAll) {
    op.ragged = true;
    XS_RETURN_IF_ERROR(CheckRaggedShapes(op, operands));
    return op;
  }
  const size_t num_dims = attrs.dimensions ? attrs.dimensions->size() : 0;
  if (info.kind == CollectiveKind::kAllToAll && num_dims == 0) {
    op.tuple_all_to_all = true;
  } else if (info.kind == CollectiveKind::kAllGather ||
             info.kind == CollectiveKind::kReduceScatter ||
             info.kind == CollectiveKind::kAllToAll) {
    if (num_dims != 1) {
      return InvalidArgument(op.name, " needs dimensions={d} naming one dim, got ", num_dims);
    }
    op.dim = static_cast<int>((*attrs.dimensions)[0]);
  }
  XS_RETURN_IF_ERROR(CheckShapes(op, operands));
  return op;
}

// ---- running, one function per kind ----

// With `handles`, each communicator call of the op only starts and appends its handle (Leaf).
using RunKindFn = Status (*)(const PlannedCollective& op, Communicator& comm,
                             const CollectiveCall& call, std::span<const Array* const> in,
                             std::vector<Array>& out, std::vector<uint64_t>* handles);

// The call for one communicator call of an op: when starting, with a fresh handle appended to the
// op's handles.
class Leaf {
 public:
  Leaf(const CollectiveCall& call, std::vector<uint64_t>* handles)
      : call_(call), handles_(handles) {
    call_.async_handle = handles_ ? &handle_ : nullptr;
  }
  ~Leaf() {
    if (handles_ != nullptr && handle_ != 0) handles_->push_back(handle_);
  }
  operator const CollectiveCall&() const { return call_; }

 private:
  CollectiveCall call_;
  std::vector<uint64_t>* handles_;
  uint64_t handle_ = 0;
};

Status RunAllGather(const PlannedCollective& op, Communicator& comm, const CollectiveCall& call,
                    std::span<const Array* const> in, std::vector<Array>& out, std::vector<uint64_t>* handles) {
  for (size_t i = 0; i < in.size(); ++i) {
    XS_RETURN_IF_ERROR(comm.AllGather(Leaf(call, handles), *op.groups, ConstBufferView::Of(*in[i]),
                                      BufferView::Of(out[i]), op.dim));
  }
  return OkStatus();
}

// A tuple all-reduce (passes/all_reduce_combine.h makes them of small independent ones) whose
// leaves share one element type and total at most this many bytes goes through the communicator
// as one buffer when it runs synchronously: one synchronization of the devices instead of one per
// leaf, for a copy of bytes that small.
constexpr int64_t kPackAllReduceBytes = int64_t{1} << 20;

Status RunAllReduce(const PlannedCollective& op, Communicator& comm, const CollectiveCall& call,
                    std::span<const Array* const> in, std::vector<Array>& out, std::vector<uint64_t>* handles) {
  if (handles == nullptr && in.size() > 1 && out.size() == in.size()) {
    const DType t = in[0]->dtype();
    int64_t bytes = 0;
    bool same = true;
    for (size_t i = 0; i < in.size(); ++i) {
      same = same && in[i]->dtype() == t && out[i].dtype() == t && out[i].byte_size() == in[i]->byte_size();
      bytes += in[i]->byte_size();
    }
    if (same && bytes <= kPackAllReduceBytes && DTypeSize(t) > 0) {
      const int64_t n = bytes / DTypeSize(t);
      Array packed(Shape(t, {n})), reduced(Shape(t, {n}));
      int64_t at = 0;
      for (const Array* a : in) {
        if (a->byte_size() > 0) std::memcpy(packed.data() + at, a->data(), static_cast<size_t>(a->byte_size()));
        at += a->byte_size();
      }
      XS_RETURN_IF_ERROR(
          comm.AllReduce(call, *op.groups, ConstBufferView::Of(packed), BufferView::Of(reduced), op.reduction));
      at = 0;
      for (Array& o : out) {
        if (o.byte_size() > 0) std::memcpy(o.data(), reduced.data() + at, static_cast<size_t>(o.byte_size()));
        at += o.byte_size();
      }
      return OkStatus();
    }
  }
  for (size_t i = 0; i < in.size(); ++i) {
    XS_RETURN_IF_ERROR(comm.AllReduce(Leaf(call, handles), *op.groups, ConstBufferView::Of(*in[i]),
                                      BufferView::Of(out[i]), op.reduction));
  }
  return OkStatus();
}

Status RunReduceScatter(const PlannedCollective& op, Communicator& comm,
                        const CollectiveCall& call, std::span<const Array* const> in,
                        std::vector<Array>& out, std::vector<uint64_t>* handles) {
  for (size_t i = 0; i < in.size(); ++i) {
    XS_RETURN_IF_ERROR(comm.ReduceScatter(Leaf(call, handles), *op.groups, ConstBufferView::Of(*in[i]),
                                          BufferView::Of(out[i]), op.dim, op.reduction));
  }
  return OkStatus();
}

Status RunRaggedAllToAll(const PlannedCollective& op, Communicator& comm, const CollectiveCall& call,
                         std::span<const Array* const> in, std::vector<Array>& out);

Status RunAllToAll(const PlannedCollective& op, Communicator& comm, const CollectiveCall& call,
                   std::span<const Array* const> in, std::vector<Array>& out, std::vector<uint64_t>* handles) {
  if (op.ragged) return RunRaggedAllToAll(op, comm, call, in, out);  // synchronous: sizes first
  if (!op.tuple_all_to_all) {
    for (size_t i = 0; i < in.size(); ++i) {
      XS_RETURN_IF_ERROR(comm.AllToAll(Leaf(call, handles), *op.groups, ConstBufferView::Of(*in[i]),
                                       BufferView::Of(out[i]), op.dim, op.dim));
    }
    return OkStatus();
  }
  std::vector<ConstBufferView> ins;
  std::vector<BufferView> outs;
  for (const Array* a : in) ins.push_back(ConstBufferView::Of(*a));
  for (Array& a : out) outs.push_back(BufferView::Of(a));
  return comm.AllToAllTuple(Leaf(call, handles), *op.groups, ins, outs);
}

// ragged-all-to-all as XLA defines it: member i sends rows [input_offsets[j], + send_sizes[j]) of
// its input to member j, which writes them at rows [output_offsets[j], + send_sizes[j]) of its
// copy of `output` (the offsets are the sender's view of the receiver's buffer); rows nobody
// writes keep `output`'s values. The sizes the sender gives decide (recv_sizes is not read).
// Built from two collectives every communicator has: an all-gather of each member's send sizes
// and output offsets, then a tuple all-to-all of the pieces padded to the largest one.
Status RunRaggedAllToAll(const PlannedCollective& op, Communicator& comm, const CollectiveCall& call,
                         std::span<const Array* const> in, std::vector<Array>& out) {
  const Array& input = *in[0];
  const Array& output = *in[1];
  const int64_t n = in[2]->num_elements();
  const int64_t me = op.groups->IndexInGroup(call.rank);
  const int64_t row_bytes = input.dims().empty() ? 0 : input.byte_size() / std::max<int64_t>(1, input.dims()[0]);
  auto read = [](const Array& a, int64_t i) {
    return a.dtype() == DType::kS32 ? int64_t{reinterpret_cast<const int32_t*>(a.data())[i]}
                                    : reinterpret_cast<const int64_t*>(a.data())[i];
  };
  // This member's (send_sizes, output_offsets), gathered from every member of the group.
  Array mine(Shape(DType::kS64, {1, 2 * n}));
  for (int64_t j = 0; j < n; ++j) {
    const int64_t start = read(*in[2], j), size = read(*in[3], j);
    if (size < 0 || start < 0 || start + size > input.dims()[0]) {
      return InvalidArgument(op.name, " on device ", call.rank, ": rows [", start, ", ", start + size,
                             ") for member ", j, " are outside the input's ", input.dims()[0], " rows");
    }
    reinterpret_cast<int64_t*>(mine.data())[j] = size;
    reinterpret_cast<int64_t*>(mine.data())[n + j] = read(*in[4], j);
  }
  Array all(Shape(DType::kS64, {n, 2 * n}));
  XS_RETURN_IF_ERROR(comm.AllGather(call, *op.groups, ConstBufferView::Of(mine), BufferView::Of(all), 0));
  const int64_t* meta = reinterpret_cast<const int64_t*>(all.data());
  int64_t largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) largest = std::max(largest, meta[i * 2 * n + j]);
  }
  std::memcpy(out[0].data(), output.data(), static_cast<size_t>(output.byte_size()));
  if (largest == 0) return OkStatus();
  std::vector<int64_t> piece_dims = input.dims();
  piece_dims[0] = largest;
  std::vector<Array> sends, receives;
  for (int64_t j = 0; j < n; ++j) {
    sends.emplace_back(Shape(input.dtype(), piece_dims));
    receives.emplace_back(Shape(input.dtype(), piece_dims));
    std::memcpy(sends.back().data(), input.data() + read(*in[2], j) * row_bytes,
                static_cast<size_t>(read(*in[3], j) * row_bytes));
  }
  std::vector<ConstBufferView> send_views;
  std::vector<BufferView> receive_views;
  for (const Array& a : sends) send_views.push_back(ConstBufferView::Of(a));
  for (Array& a : receives) receive_views.push_back(BufferView::Of(a));
  XS_RETURN_IF_ERROR(comm.AllToAllTuple(call, *op.groups, send_views, receive_views));
  const int64_t out_rows = output.dims()[0];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t size = meta[i * 2 * n + me], offset = meta[i * 2 * n + n + me];
    if (size == 0) continue;
    if (offset < 0 || offset + size > out_rows) {
      return InvalidArgument(op.name, ": member ", i, " writes rows [", offset, ", ", offset + size,
                             ") of device ", call.rank, "'s output, which has ", out_rows, " rows");
    }
    std::memcpy(out[0].data() + offset * row_bytes, receives[i].data(), static_cast<size_t>(size * row_bytes));
  }
  return OkStatus();
}

Status RunPermute(const PlannedCollective& op, Communicator& comm, const CollectiveCall& call,
                  std::span<const Array* const> in, std::vector<Array>& out, std::vector<uint64_t>* handles) {
  for (size_t i = 0; i < in.size(); ++i) {
    XS_RETURN_IF_ERROR(comm.CollectivePermute(Leaf(call, handles), *op.pairs, ConstBufferView::Of(*in[i]),
                                              BufferView::Of(out[i])));
  }
  return OkStatus();
}

Status RunBroadcast(const PlannedCollective& op, Communicator& comm, const CollectiveCall& call,
                    std::span<const Array* const> in, std::vector<Array>& out, std::vector<uint64_t>* handles) {
  for (size_t i = 0; i < in.size(); ++i) {
    XS_RETURN_IF_ERROR(comm.CollectiveBroadcast(Leaf(call, handles), *op.groups, ConstBufferView::Of(*in[i]),
                                                BufferView::Of(out[i])));
  }
  return OkStatus();
}

Status RunUnexpected(const PlannedCollective& op, Communicator&, const CollectiveCall&,
                     std::span<const Array* const>, std::vector<Array>&, std::vector<uint64_t>*) {
  return Internal(op.name, " has no runner");
}

// Indexed by CollectiveKind.
constexpr std::array<RunKindFn, 7> kRunners = {&RunAllGather,   &RunAllReduce, &RunReduceScatter,
                                               &RunAllToAll,    &RunPermute,   &RunBroadcast,
                                               &RunUnexpected};

}  // namespace

StatusOr<ReductionKind> DetectReduction(const Instruction& inst) {
  const Computation* f = inst.to_apply();
  if (f == nullptr) return InvalidArgument(OpcodeName(inst.opcode()), " '", inst.name(), "' has no to_apply");
  const Instruction* root = f->root();
  // JAX's GSPMD lowering of a partially manual shard_map annotates the reducer's result with a
  // Sharding custom-call ({manual, replicated}): an annotation, its value is its operand.
  if (root != nullptr && root->opcode() == Opcode::kCustomCall && root->operand_count() == 1 &&
      root->attrs().custom_call_target.value_or("") == "Sharding") {
    root = root->operand(0);
  }
  auto is_param = [](const Instruction* x, int64_t n) {
    return x->opcode() == Opcode::kParameter && x->parameter_number() == n;
  };
  if (root != nullptr && root->operand_count() == 2 && root->shape().IsArray() &&
      root->shape().num_elements() == 1 &&
      ((is_param(root->operand(0), 0) && is_param(root->operand(1), 1)) ||
       (is_param(root->operand(0), 1) && is_param(root->operand(1), 0)))) {
    for (const ReducerInfo& r : kReducers) {
      if (r.opcode == root->opcode()) return r.kind;
    }
  }
  return UnsupportedInstruction(
      inst, StrCat("its to_apply computation '", f->name(), "' computes ",
                   root ? StrCat(OpcodeName(root->opcode()), " '", root->name(), "'") : "nothing",
                   "; supported reducers are add, multiply, minimum, maximum, and, or of the two "
                   "scalar parameters"));
}

StatusOr<std::unique_ptr<SpmdCollectivePlan>> SpmdCollectivePlan::Create(const Module& module,
                                                                         int64_t replica_count,
                                                                         int64_t num_partitions) {
  auto plan = std::make_unique<SpmdCollectivePlan>();
  plan->num_ranks_ = replica_count * num_partitions;
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      const CollectiveOpInfo* info = FindOp(inst->opcode());
      if (info == nullptr) continue;
      XS_ASSIGN_OR_RETURN(PlannedCollective op,
                          PlanOne(*inst, *info, replica_count, num_partitions));
      plan->ops_.emplace(inst, std::move(op));
    }
  }
  return plan;
}

const PlannedCollective* SpmdCollectivePlan::Find(const Instruction* inst) const {
  auto it = ops_.find(inst);
  return it == ops_.end() ? nullptr : &it->second;
}

StatusOr<std::vector<Array>> CommunicatorCollectiveRunner::RunCollective(
    const Instruction& inst, std::span<const Array* const> operands, std::span<Array* const> into) {
  return Call(inst, operands, nullptr, into);
}

StatusOr<std::vector<Array>> CommunicatorCollectiveRunner::Start(
    const Instruction& inst, const void* key, std::span<const Array* const> operands,
    std::vector<std::shared_ptr<const void>> keep) {
  Pending p;
  p.keep = std::move(keep);
  // The communicator holds a bounded number of unfinished calls per device; past half of them a
  // start runs at once (same results, no overlap).
  const size_t leaves = std::max<size_t>(operands.size(), 1);
  StatusOr<std::vector<Array>> out =
      outstanding_ + leaves <= kMaxOutstanding ? Call(inst, operands, &p.handles)
                                               : Call(inst, operands, nullptr);
  if (!out.ok()) return out.status();
  outstanding_ += p.handles.size();
  pending_[key].push_back(std::move(p));
  return out;
}

Status CommunicatorCollectiveRunner::Finish(const void* key) {
  auto it = pending_.find(key);
  if (it == pending_.end() || it->second.empty()) {
    return Internal("a collective -done on device ", rank_, " has no matching -start");
  }
  Pending p = std::move(it->second.front());
  it->second.pop_front();
  outstanding_ -= p.handles.size();
  Status first = OkStatus();
  for (uint64_t h : p.handles) {
    Status st = comm_.Finish(rank_, h);
    if (first.ok() && !st.ok()) first = st;
  }
  return first;
}

StatusOr<std::vector<Array>> CommunicatorCollectiveRunner::Call(
    const Instruction& inst, std::span<const Array* const> operands,
    std::vector<uint64_t>* handles, std::span<Array* const> into) {
  const PlannedCollective* op = plan_.Find(&inst);
  if (op == nullptr) return Internal("collective '", inst.name(), "' was not planned");
  if (!op->tuple_all_to_all && !op->ragged && operands.size() != op->results.size()) {
    return Internal(op->name, " got ", operands.size(), " operand leaves for ",
                    op->results.size(), " results");
  }
  std::vector<Array> out;
  out.reserve(op->results.size());
  for (size_t i = 0; i < op->results.size(); ++i) {
    const Shape& s = op->results[i];
    Array* given = i < into.size() ? into[i] : nullptr;
    if (given != nullptr && given->dtype() == s.dtype() && given->dims() == s.dims()) {
      // Zeroed like a new Array where a device may receive nothing (collective-permute: it keeps
      // zeros); every algorithm of all-reduce and all-gather writes the whole result, so those skip
      // the pass (transformer_fwd: 8 MiB of memset per call).
      if (op->kind != CollectiveKind::kAllReduce && op->kind != CollectiveKind::kAllGather) {
        std::memset(given->data(), 0, static_cast<size_t>(given->byte_size()));
      }
      out.push_back(Array::View(s.WithoutLayout(), given->data()));
    } else {
      out.emplace_back(s);
    }
  }
  CollectiveCall call(rank_, op->call_name, op->channel_id);
  XS_RETURN_IF_ERROR(kRunners[static_cast<int>(op->kind)](*op, comm_, call, operands, out, handles));
  return out;
}

}  // namespace xs
