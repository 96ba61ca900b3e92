// Emitter: checked instruction creation, per-partition tables and recorded collectives.
#include "xshard/spmd/emitter.h"

#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/ir/shape_inference.h"

namespace xs::spmd {
namespace {

std::string GroupsText(const ReplicaGroups& groups) {
  if (groups.iota) {
    std::string out = StrCat("[", groups.num_groups, ",", groups.group_size, "]<=[",
                             StrJoin(groups.reshape_dims, ","), "]");
    if (!groups.transpose_perm.empty()) StrAppend(&out, "T(", StrJoin(groups.transpose_perm, ","), ")");
    return out;
  }
  std::vector<std::string> parts;
  for (const auto& g : groups.Groups()) parts.push_back(StrCat("{", StrJoin(g, ","), "}"));
  return StrCat("{", StrJoin(parts, ","), "}");
}

int64_t GroupSize(const ReplicaGroups& groups) {
  return groups.Groups().empty() ? 1 : static_cast<int64_t>(groups.Groups()[0].size());
}

// Bytes a device receives when a group of g exchanges `bytes` (the (g-1)/g ring share).
int64_t Share(int64_t bytes, int64_t g) { return g <= 1 ? 0 : bytes * (g - 1) / g; }

}  // namespace

size_t ReshardKeyHash::operator()(const ReshardKey& k) const {
  size_t h = HashCombine(static_cast<size_t>(k.kind), static_cast<size_t>(k.dtype));
  for (int64_t d : k.dims) h = HashCombine(h, static_cast<size_t>(d));
  h = HashCombine(HashCombine(h, k.from.Hash()), k.to.Hash());
  h = HashCombine(h, k.partial.has_value());
  if (k.partial) {
    for (int a : *k.partial) h = HashCombine(h, static_cast<size_t>(a));
  }
  for (int64_t s : k.mesh) h = HashCombine(h, static_cast<size_t>(s));
  return h;
}

Computation* ModuleState::Reducer(Opcode op, DType dtype) {
  const std::string name = StrCat(OpcodeName(op), ".", DTypeName(dtype));
  auto it = reducers.find({name, dtype});
  if (it != reducers.end()) return it->second;
  auto comp = std::make_unique<Computation>(StrCat("spmd_", OpcodeName(op), "_", DTypeName(dtype)));
  const Shape scalar(dtype, {});
  std::unique_ptr<Instruction> px = Instruction::Create(Opcode::kParameter, scalar, {}, "x");
  px->mutable_attrs().parameter_number = 0;
  std::unique_ptr<Instruction> py = Instruction::Create(Opcode::kParameter, scalar, {}, "y");
  py->mutable_attrs().parameter_number = 1;
  Instruction* x = comp->AddInstruction(std::move(px));
  Instruction* y = comp->AddInstruction(std::move(py));
  Instruction* r = comp->AddInstruction(Instruction::Create(op, scalar, {x, y}, std::string(OpcodeName(op))));
  comp->set_root(r);
  Computation* added = module->AddComputation(std::move(comp));
  reducers[{name, dtype}] = added;
  return added;
}

Computation* ModuleState::Clone(const Computation& global) {
  auto it = clones.find(&global);
  if (it != clones.end()) return it->second;
  auto comp = std::make_unique<Computation>(global.name());
  comp->set_execution_thread(global.execution_thread());
  std::unordered_map<const Instruction*, Instruction*> map;
  for (const Instruction* inst : global.MakeInstructionPostOrder()) {
    std::vector<Instruction*> ops;
    for (const Instruction* o : inst->operands()) ops.push_back(map.at(o));
    std::unique_ptr<Instruction> copy = inst->CloneWithNewOperands(ops);
    copy->set_sharding(std::nullopt);
    std::vector<CalledComputation> calls;
    for (const CalledComputation& c : inst->calls()) calls.push_back({c.role, Clone(*c.computation)});
    copy->set_calls(std::move(calls));
    map[inst] = comp->AddInstruction(std::move(copy));
  }
  comp->set_root(map.at(global.root()));
  Computation* added = module->AddComputation(std::move(comp));
  clones[&global] = added;
  return added;
}

std::string ModuleState::CauseName() const { return cause == nullptr ? "" : cause->name(); }

Emitter::Emitter(ModuleState* state, Computation* computation)
    : state_(state), computation_(computation) {}

Emitter::Emitter(ModuleState* state, std::unique_ptr<Computation> owned)
    : state_(state), owned_(std::move(owned)), computation_(owned_.get()) {}

Emitter::~Emitter() = default;

std::unique_ptr<Emitter> Emitter::Scratch(ModuleState* state) {
  return std::unique_ptr<Emitter>(new Emitter(state, std::make_unique<Computation>("scratch")));
}

Status Emitter::CheckShape(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(Shape inferred, InferInstructionShape(inst));
  if (!inferred.Compatible(inst.shape().WithoutLayout())) {
    return Internal("shape ", inst.shape().ToString(false), " of ", OpcodeName(inst.opcode()),
                    " differs from the inferred ", inferred.ToString(false));
  }
  return OkStatus();
}

Instruction* Emitter::AddInstruction(std::unique_ptr<Instruction> inst) {
  // The emitter writes every shape itself and Verify at the end of PartitionModule infers them
  // all again, so release builds do not infer each one here too. Debug builds do, to name the
  // global instruction whose handler built a bad one. (Collectives are built with shapes taken
  // from their groups; checking them here would scan the O(N) group lists a second time.)
#ifndef NDEBUG
  if (!scratch() && !IsCollective(inst->opcode())) {
    Status s = CheckShape(*inst);
    XS_CHECK(s.ok(), "partitioner built a bad instruction for '", state_->CauseName(), "': ",
             inst->ShortString(), ": ", s.message());
  }
#endif
  return computation_->AddInstruction(std::move(inst));
}

Instruction* Emitter::Add(Opcode opcode, Shape shape, std::vector<Instruction*> operands,
                          Attributes attrs, std::vector<CalledComputation> calls,
                          std::string name) {
  if (name.empty()) name = FreshName(OpcodeName(opcode));
  std::unique_ptr<Instruction> inst =
      Instruction::Create(opcode, std::move(shape), std::move(operands), std::move(name));
  inst->mutable_attrs() = std::move(attrs);
  inst->set_calls(std::move(calls));
  return AddInstruction(std::move(inst));
}

std::string Emitter::FreshName(std::string_view base) {
  // Names are never freed while partitioning, so the smallest free N only grows.
  auto it = name_counters_.find(base);
  if (it == name_counters_.end()) it = name_counters_.emplace(std::string(base), 0).first;
  for (int64_t& n = it->second;; ++n) {
    std::string candidate = n == 0 ? std::string(base) : StrCat(base, ".", n);
    if (computation_->GetInstruction(candidate) == nullptr) return candidate;
  }
}

Instruction* Emitter::ScratchParameter(const Shape& shape) {
  XS_CHECK(scratch(), "ScratchParameter on a real emitter");
  Attributes attrs;
  attrs.parameter_number = computation_->num_parameters();
  return Add(Opcode::kParameter, shape, {}, std::move(attrs));
}

Instruction* Emitter::PartitionId() {
  if (partition_id_ == nullptr) partition_id_ = Add(Opcode::kPartitionId, Shape(DType::kU32, {}), {});
  return partition_id_;
}

Instruction* Emitter::Constant(Array value) {
  Attributes attrs;
  Shape shape = value.shape();
  attrs.literal = Literal{std::move(value), {}, false};
  return Add(Opcode::kConstant, std::move(shape), {}, std::move(attrs));
}

Instruction* Emitter::Scalar(DType dtype, double value) {
  auto key = std::make_pair(dtype, value);
  auto it = scalars_.find(key);
  if (it != scalars_.end()) return it->second;
  Array a = Array::Full(dtype, {}, value);
  return scalars_[key] = Constant(std::move(a));
}

Instruction* Emitter::Reshape(Instruction* x, std::vector<int64_t> dims) {
  if (x->shape().dims() == dims) return x;
  return Add(Opcode::kReshape, x->shape().WithDims(std::move(dims)), {x});
}

Instruction* Emitter::Transpose(Instruction* x, std::vector<int64_t> perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(x->shape().dim(static_cast<int>(p)));
  Attributes attrs;
  attrs.dimensions = std::move(perm);
  return Add(Opcode::kTranspose, x->shape().WithDims(dims), {x}, std::move(attrs));
}

Instruction* Emitter::Slice(Instruction* x, std::vector<int64_t> limits) {
  if (x->shape().dims() == limits) return x;
  Attributes attrs;
  attrs.slice.emplace();
  for (int64_t l : limits) attrs.slice->push_back(SliceDim{0, l, 1});
  return Add(Opcode::kSlice, x->shape().WithDims(limits), {x}, std::move(attrs));
}

Instruction* Emitter::Slice(Instruction* x, std::vector<int64_t> starts, std::vector<int64_t> limits) {
  bool whole = true;
  std::vector<int64_t> dims;
  Attributes attrs;
  attrs.slice.emplace();
  for (size_t d = 0; d < limits.size(); ++d) {
    whole = whole && starts[d] == 0 && limits[d] == x->shape().dim(static_cast<int>(d));
    attrs.slice->push_back(SliceDim{starts[d], limits[d], 1});
    dims.push_back(limits[d] - starts[d]);
  }
  if (whole) return x;
  return Add(Opcode::kSlice, x->shape().WithDims(dims), {x}, std::move(attrs));
}

Instruction* Emitter::Concatenate(std::vector<Instruction*> pieces, int64_t dim) {
  if (pieces.size() == 1) return pieces[0];
  std::vector<int64_t> dims = pieces[0]->shape().dims();
  dims[dim] = 0;
  for (Instruction* p : pieces) dims[dim] += p->shape().dim(static_cast<int>(dim));
  Attributes attrs;
  attrs.dimensions = std::vector<int64_t>{dim};
  Shape shape = pieces[0]->shape().WithDims(dims);
  return Add(Opcode::kConcatenate, std::move(shape), std::move(pieces), std::move(attrs));
}

Instruction* Emitter::Pad(Instruction* x, Instruction* value, std::vector<PaddingDim> padding) {
  std::vector<int64_t> dims = x->shape().dims();
  bool none = true;
  for (size_t d = 0; d < dims.size(); ++d) {
    const PaddingDim& p = padding[d];
    dims[d] = p.low + dims[d] + p.high + std::max<int64_t>(dims[d] - 1, 0) * p.interior;
    none = none && p.low == 0 && p.high == 0 && p.interior == 0;
  }
  if (none) return x;
  Attributes attrs;
  attrs.padding = std::move(padding);
  return Add(Opcode::kPad, x->shape().WithDims(dims), {x, value}, std::move(attrs));
}

Instruction* Emitter::DynamicSlice(Instruction* x, std::vector<Instruction*> starts,
                                   std::vector<int64_t> sizes) {
  Attributes attrs;
  attrs.dynamic_slice_sizes = sizes;
  std::vector<Instruction*> ops = {x};
  ops.insert(ops.end(), starts.begin(), starts.end());
  return Add(Opcode::kDynamicSlice, x->shape().WithDims(sizes), std::move(ops), std::move(attrs));
}

Instruction* Emitter::PadHigh(Instruction* x, Instruction* value, const std::vector<int64_t>& dims) {
  if (x->shape().dims() == dims) return x;
  Attributes attrs;
  attrs.padding.emplace();
  for (int d = 0; d < x->shape().rank(); ++d) {
    attrs.padding->push_back(PaddingDim{0, dims[d] - x->shape().dim(d), 0});
  }
  return Add(Opcode::kPad, x->shape().WithDims(dims), {x, value}, std::move(attrs));
}

Instruction* Emitter::Broadcast(Instruction* x, const Shape& shape, std::vector<int64_t> dims) {
  Attributes attrs;
  attrs.dimensions = std::move(dims);
  return Add(Opcode::kBroadcast, shape.WithDType(x->shape().dtype()), {x}, std::move(attrs));
}

Instruction* Emitter::Iota(DType dtype, std::vector<int64_t> dims, int64_t iota_dim) {
  Attributes attrs;
  attrs.iota_dimension = iota_dim;
  return Add(Opcode::kIota, Shape(dtype, std::move(dims)), {}, std::move(attrs));
}

Instruction* Emitter::Binary(Opcode op, Instruction* a, Instruction* b) {
  return Add(op, a->shape().WithoutLayout(), {a, b});
}

Instruction* Emitter::Compare(Instruction* a, Instruction* b, ComparisonDirection dir) {
  Attributes attrs;
  attrs.comparison_direction = dir;
  return Add(Opcode::kCompare, a->shape().WithDType(DType::kPred), {a, b}, std::move(attrs));
}

Instruction* Emitter::Select(Instruction* pred, Instruction* on_true, Instruction* on_false) {
  return Add(Opcode::kSelect, on_true->shape().WithoutLayout(), {pred, on_true, on_false});
}

Instruction* Emitter::Convert(Instruction* x, DType dtype) {
  if (x->shape().dtype() == dtype) return x;
  return Add(Opcode::kConvert, x->shape().WithDType(dtype), {x});
}

Instruction* Emitter::Tuple(std::vector<Instruction*> elements) {
  std::vector<Shape> shapes;
  for (Instruction* e : elements) shapes.push_back(e->shape());
  return Add(Opcode::kTuple, Shape::Tuple(std::move(shapes)), std::move(elements));
}

Instruction* Emitter::GetTupleElement(Instruction* tuple, int64_t index) {
  if (tuple->opcode() == Opcode::kTuple) return tuple->operand(static_cast<int>(index));
  Attributes attrs;
  attrs.tuple_index = index;
  return Add(Opcode::kGetTupleElement, tuple->shape().tuple_shape(static_cast<int>(index)),
             {tuple}, std::move(attrs));
}

void Emitter::Record(Instruction* inst, std::string kind, int64_t bytes, const ReplicaGroups* groups,
                     std::string pairs, std::string reason) {
  cost_ += bytes + 1;
  bytes_ += bytes;
  latency_us_ += state_->machine.LatencyUs(kind);
  if (scratch()) return;
  CollectiveRecord r;
  r.kind = std::move(kind);
  r.name = inst->name();
  if (computation_ != nullptr) r.computation = computation_->name();
  r.shape = inst->shape();
  r.bytes = bytes;
  r.groups = groups != nullptr ? GroupsText(*groups) : pairs;
  r.explicit_groups = groups != nullptr ? ExplicitGroups(*groups) : ExplicitGroups(pairs);
  if (!inst->dimensions().empty()) r.dimension = inst->dimensions()[0];
  r.cause = state_->CauseName();
  r.reason = std::move(reason);
  state_->report.collectives.push_back(std::move(r));
}

namespace {
// Scratch emitters take channel id 0 so that dry runs leave no gaps in the real numbering.
Attributes CollectiveAttrs(ModuleState& state, bool scratch, ReplicaGroups groups, bool global_ids) {
  Attributes attrs;
  attrs.replica_groups = std::move(groups);
  attrs.channel_id = scratch ? 0 : state.next_channel_id++;
  attrs.use_global_device_ids = global_ids;
  return attrs;
}
}  // namespace

Instruction* Emitter::AllGather(Instruction* x, int64_t dim, ReplicaGroups groups, std::string reason) {
  const int64_t g = GroupSize(groups);
  std::vector<int64_t> dims = x->shape().dims();
  dims[dim] *= g;
  Attributes attrs = CollectiveAttrs(*state_, scratch(), std::move(groups), true);
  attrs.dimensions = std::vector<int64_t>{dim};
  Instruction* out = Add(Opcode::kAllGather, x->shape().WithDims(dims), {x}, std::move(attrs));
  Record(out, "all-gather", Share(out->shape().byte_size(), g), &*out->attrs().replica_groups, "",
         std::move(reason));
  return out;
}

Instruction* Emitter::AllReduce(Instruction* x, Computation* reducer, ReplicaGroups groups,
                                std::string reason) {
  const int64_t g = GroupSize(groups);
  std::vector<CalledComputation> calls;
  if (reducer != nullptr) calls.push_back({CallRole::kToApply, reducer});
  Instruction* out = Add(Opcode::kAllReduce, x->shape().WithoutLayout(), {x},
                         CollectiveAttrs(*state_, scratch(), std::move(groups), true), std::move(calls));
  // 2(g-1)/g of the operand, rounded once (2 * Share() rounded twice: a scalar f32 over 8 devices
  // was 6 B where the program's ring model gives 7 B).
  Record(out, "all-reduce", Share(2 * x->shape().byte_size(), g), &*out->attrs().replica_groups, "",
         std::move(reason));
  return out;
}

Instruction* Emitter::ReduceScatter(Instruction* x, Computation* reducer, int64_t dim,
                                    ReplicaGroups groups, std::string reason) {
  const int64_t g = GroupSize(groups);
  std::vector<int64_t> dims = x->shape().dims();
  dims[dim] /= g;
  Attributes attrs = CollectiveAttrs(*state_, scratch(), std::move(groups), true);
  attrs.dimensions = std::vector<int64_t>{dim};
  std::vector<CalledComputation> calls;
  if (reducer != nullptr) calls.push_back({CallRole::kToApply, reducer});
  Instruction* out = Add(Opcode::kReduceScatter, x->shape().WithDims(dims), {x}, std::move(attrs),
                         std::move(calls));
  Record(out, "reduce-scatter", Share(x->shape().byte_size(), g), &*out->attrs().replica_groups, "",
         std::move(reason));
  return out;
}

Instruction* Emitter::AllToAll(Instruction* x, int64_t dim, ReplicaGroups groups, std::string reason) {
  const int64_t g = GroupSize(groups);
  Attributes attrs = CollectiveAttrs(*state_, scratch(), std::move(groups), false);
  attrs.dimensions = std::vector<int64_t>{dim};
  Instruction* out = Add(Opcode::kAllToAll, x->shape().WithoutLayout(), {x}, std::move(attrs));
  Record(out, "all-to-all", Share(x->shape().byte_size(), g), &*out->attrs().replica_groups, "",
         std::move(reason));
  return out;
}

Instruction* Emitter::CollectivePermute(Instruction* x, std::vector<std::pair<int64_t, int64_t>> pairs,
                                        std::string reason) {
  std::vector<std::string> parts;
  for (const auto& [s, t] : pairs) parts.push_back(StrCat("{", s, ",", t, "}"));
  Attributes attrs;
  attrs.channel_id = scratch() ? 0 : state_->next_channel_id++;
  attrs.source_target_pairs = std::move(pairs);
  Instruction* out = Add(Opcode::kCollectivePermute, x->shape().WithoutLayout(), {x}, std::move(attrs));
  Record(out, "collective-permute", x->shape().byte_size(), nullptr,
         StrCat("{", StrJoin(parts, ","), "}"), std::move(reason));
  return out;
}

}  // namespace xs::spmd
