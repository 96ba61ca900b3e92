// ShardedProgram: compile (propagate, partition, clean up, plan) once; run with global arrays.
#include "xshard/jit/sharded_program.h"

#include <algorithm>
#include <cstring>

#include "xshard/base/strings.h"
#include "xshard/ir/attributes.h"
#include "xshard/ir/opcode.h"
#include "xshard/runtime/client.h"
#include "xshard/sharding/geometry.h"

namespace xs {
namespace {

// The array leaves of `shape`: tokens carry no data and are no argument or output, as in the
// executor's own argument and output lists.
void AppendLeaves(const Shape& shape, std::vector<Shape>* out) {
  if (shape.IsToken()) return;
  if (!shape.IsTuple()) {
    out->push_back(shape);
    return;
  }
  for (const Shape& e : shape.tuple_shapes()) AppendLeaves(e, out);
}

// One sharding per array leaf of `shape` (a non-tuple sharding of a tuple applies to every leaf;
// a token's element of a tuple sharding is skipped with it).
void AppendLeafShardings(const Shape& shape, const HloSharding& s, std::vector<HloSharding>* out) {
  if (shape.IsToken()) return;
  if (!shape.IsTuple()) {
    out->push_back(s);
    return;
  }
  const std::vector<Shape>& elements = shape.tuple_shapes();
  for (size_t i = 0; i < elements.size(); ++i) {
    AppendLeafShardings(elements[i], s.IsTuple() && i < s.tuple_elements().size() ? s.tuple_elements()[i] : s, out);
  }
}

// Where a leaf's data sits: the geometry for tiled / maximal shardings, none for replicated,
// unknown and pure manual ones (every device holds the whole array).
StatusOr<std::optional<ShardGeometry>> GeometryOf(const HloSharding& s, const Shape& shape, int64_t n) {
  if (!s.IsTiled() && !s.IsMaximal()) return std::optional<ShardGeometry>();
  XS_ASSIGN_OR_RETURN(ShardGeometry g, ShardGeometry::Create(s, shape.dims(), n));
  return std::optional<ShardGeometry>(std::move(g));
}

bool PerDeviceValues(const HloSharding& s, const std::optional<ShardGeometry>& g) {
  return s.IsManual() || s.IsUnreduced() || (g && g->HasPerDeviceValues());
}

}  // namespace

bool NeedsPartitioning(const Module& module) {
  if (module.config().is_scheduled) return false;
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (inst->has_sharding()) return true;
      // A shard_map in Shardy's form (its boundaries carry the shardings) means per-device code
      // even when no value is annotated.
      if (inst->opcode() == Opcode::kCustomCall) {
        const std::string& target = inst->attrs().custom_call_target.value_or("");
        if (target == "xla.sdy.GlobalToLocalShape" || target == "xla.sdy.LocalToGlobalShape") return true;
      }
      // Shardy's round-trip form: the sharding only in a frontend attribute (imported at partitioning).
      if (const auto& fa = inst->attrs().frontend_attributes) {
        for (const auto& [key, value] : *fa)
          if (key == "xla.sdy.sharding") return true;
      }
    }
  }
  return false;
}

namespace {

bool IsCustomCall(const Instruction& inst, std::string_view target) {
  return inst.opcode() == Opcode::kCustomCall && inst.attrs().custom_call_target.value_or("") == target;
}

// True when `s` (or one of its tuple elements) gives devices values of kind `type` (manual or
// unreduced): the whole value, or a subgroup of a tiled one.
bool HasDevicesOfKind(const HloSharding& s, SubgroupType type) {
  if (s.IsTuple()) {
    for (const HloSharding& e : s.tuple_elements()) {
      if (HasDevicesOfKind(e, type)) return true;
    }
    return false;
  }
  if (s.IsMeshAxes()) {
    StatusOr<HloSharding> tiled = s.ToTiled();
    return tiled.ok() && HasDevicesOfKind(*tiled, type);
  }
  if ((type == SubgroupType::kManual && s.IsManual()) || (type == SubgroupType::kUnreduced && s.IsUnreduced())) {
    return true;
  }
  const std::vector<SubgroupType>& types = s.subgroup_types();
  return std::find(types.begin(), types.end(), type) != types.end();
}

}  // namespace

std::optional<std::string> PerDeviceSemantics(const Module& global) {
  for (const Computation* c : global.computations()) {
    for (const Instruction* inst : c->instructions()) {
      const std::string name = StrCat("'", inst->name(), "' (", OpcodeName(inst->opcode()), ")");
      if (IsCollective(inst->opcode())) return StrCat(name, " communicates between devices");
      if (inst->opcode() == Opcode::kPartitionId || inst->opcode() == Opcode::kReplicaId) {
        return StrCat(name, " differs on every device");
      }
      if (IsCustomCall(*inst, "SPMDFullToShardShape") || IsCustomCall(*inst, "SPMDShardToFullShape")) {
        return StrCat(name, " enters or leaves a manual (per-device) region");
      }
      if (inst->sharding() && HasDevicesOfKind(*inst->sharding(), SubgroupType::kManual)) {
        return StrCat(name, " is manually sharded (per-device values)");
      }
      if (inst->sharding() && HasDevicesOfKind(*inst->sharding(), SubgroupType::kUnreduced)) {
        return StrCat(name, " holds unreduced (per-device) partial values");
      }
    }
  }
  return std::nullopt;
}

namespace {

// Shardings that say what a value means per device, which a reference must keep.
bool DefinesPerDeviceMeaning(const Instruction& inst) {
  const HloSharding& s = *inst.sharding();
  if (HasDevicesOfKind(s, SubgroupType::kManual) || HasDevicesOfKind(s, SubgroupType::kUnreduced)) return true;
  if (IsCustomCall(inst, "SPMDShardToFullShape")) return true;
  for (const Instruction* user : inst.users()) {
    if (IsCustomCall(*user, "SPMDFullToShardShape")) return true;
  }
  return false;
}

HloSharding ReplicatedLike(const HloSharding& s) {
  if (!s.IsTuple()) return HloSharding::Replicate();
  std::vector<HloSharding> elements;
  for (const HloSharding& e : s.tuple_elements()) elements.push_back(ReplicatedLike(e));
  return HloSharding::Tuple(std::move(elements));
}

}  // namespace

std::unique_ptr<Module> ReplicatedReference(const Module& global) {
  std::unique_ptr<Module> copy = global.Clone();
  for (Computation* c : copy->computations()) {
    for (Instruction* inst : c->instructions()) {
      if (inst->sharding() && !DefinesPerDeviceMeaning(*inst)) inst->set_sharding(ReplicatedLike(*inst->sharding()));
    }
  }
  return copy;
}

StatusOr<std::unique_ptr<ShardedProgram>> ShardedProgram::Compile(const Module& global, int64_t num_devices,
                                                                  const CompileOptions& options) {
  // CompileModule checks the device count and replica_count.
  std::unique_ptr<ShardedProgram> p(new ShardedProgram());
  p->num_devices_ = num_devices;
  XS_ASSIGN_OR_RETURN(CompiledModule compiled, CompileModule(global, num_devices, options));
  p->global_ = std::move(compiled.global);
  PartitionResult& r = compiled.partitioned;
  r.module->mutable_config().is_scheduled = true;
  p->spmd_ = std::move(r.module);
  p->report_ = std::move(r.report);
  const Computation& entry = *p->global_->entry();
  for (size_t i = 0; i < entry.parameters().size(); ++i) {
    const Shape& shape = entry.parameters()[i]->shape();
    AppendLeaves(shape, &p->argument_shapes_);
    AppendLeafShardings(shape, r.parameter_shardings[i], &p->argument_shardings_);
  }
  AppendLeaves(entry.root()->shape(), &p->output_shapes_);
  AppendLeafShardings(entry.root()->shape(), r.output_sharding, &p->output_shardings_);
  for (size_t i = 0; i < p->output_shapes_.size(); ++i) {
    // A sharding whose geometry fails here fails again, with its error, in OutputBlocks.
    StatusOr<std::optional<ShardGeometry>> g = GeometryOf(p->output_shardings_[i], p->output_shapes_[i], num_devices);
    p->output_per_device_.push_back(g.ok() && PerDeviceValues(p->output_shardings_[i], *g));
  }
  XS_ASSIGN_OR_RETURN(p->executable_, SpmdExecutable::Create(*p->spmd_));
  return p;
}

StatusOr<ShardedProgram::DeviceArguments> ShardedProgram::PlaceArguments(const std::vector<Array>& args) const {
  const std::string& name = global_->entry()->name();
  if (args.size() != argument_shapes_.size()) {
    std::string shapes;
    for (const Shape& s : argument_shapes_) StrAppend(&shapes, shapes.empty() ? "" : ", ", s.ToString(false));
    return InvalidArgument("'", name, "' takes ", argument_shapes_.size(), " argument(s) (", shapes, ") but ",
                           args.size(), " were given");
  }
  const int64_t n = num_devices_;
  DeviceArguments placed;
  placed.per_device.assign(n, {});
  for (size_t i = 0; i < args.size(); ++i) {
    const Shape& want = argument_shapes_[i];
    if (args[i].dtype() != want.dtype() || args[i].dims() != want.dims()) {
      return InvalidArgument("argument ", i, " of '", name, "' is ", want.ToString(false), " but ",
                             args[i].shape().ToString(false), " was given");
    }
    const HloSharding& s = argument_shardings_[i];
    XS_ASSIGN_OR_RETURN(std::optional<ShardGeometry> g, GeometryOf(s, want, n));
    if (!g) {
      for (int64_t d = 0; d < n; ++d) placed.per_device[d].push_back(&args[i]);
      continue;
    }
    if (s.IsMaximal()) {
      const Array& zeros = placed.owned.emplace_back(want);
      for (int64_t d = 0; d < n; ++d) placed.per_device[d].push_back(d == s.device() ? &args[i] : &zeros);
      continue;
    }
    const std::vector<int64_t> padded = g->PaddedShardShape();
    for (int64_t d = 0; d < n; ++d) {
      Array& shard = placed.owned.emplace_back(want.dtype(), padded);
      const Box& box = g->shard(d).box;
      if (box.num_elements() > 0) {
        shard.UpdateSlice(args[i].Slice(box.start, box.sizes()), std::vector<int64_t>(padded.size(), 0));
      }
      placed.per_device[d].push_back(&shard);
    }
  }
  return placed;
}

StatusOr<std::vector<std::vector<Array>>> ShardedProgram::ShardArguments(const std::vector<Array>& args) const {
  XS_ASSIGN_OR_RETURN(DeviceArguments placed, PlaceArguments(args));
  std::vector<std::vector<Array>> shards(placed.per_device.size());
  for (size_t d = 0; d < shards.size(); ++d) {
    for (const Array* a : placed.per_device[d]) shards[d].push_back(*a);
  }
  return shards;
}

StatusOr<std::vector<OutputBlock>> ShardedProgram::OutputBlocks(
    size_t i, const std::vector<std::vector<Array>>& device_outputs) const {
  const int64_t n = num_devices_;
  if (static_cast<int64_t>(device_outputs.size()) != n) {
    return InvalidArgument("outputs of ", device_outputs.size(), " devices given; the program runs on ", n);
  }
  if (i >= output_shapes_.size()) {
    return InvalidArgument("output ", i, " does not exist; the program has ", output_shapes_.size());
  }
  const Shape& shape = output_shapes_[i];
  const HloSharding& s = output_shardings_[i];
  XS_ASSIGN_OR_RETURN(std::optional<ShardGeometry> g, GeometryOf(s, shape, n));
  if (PerDeviceValues(s, g)) {
    return InvalidArgument("output ", i, " (sharding ", s.ToString(), ") holds per-device values; it has no global array");
  }
  const std::vector<int64_t> padded = g ? g->PaddedShardShape() : shape.dims();
  auto held = [&](int64_t d) -> StatusOr<const Array*> {
    if (device_outputs[d].size() != output_shapes_.size()) {
      return InvalidArgument("device ", d, " has ", device_outputs[d].size(), " outputs; the program has ",
                             output_shapes_.size());
    }
    const Array& a = device_outputs[d][i];
    if (a.dims() != padded || a.dtype() != shape.dtype()) {
      return Internal("device ", d, " output ", i, " is ", a.shape().ToString(false), "; its shard of ",
                      shape.ToString(false), " under ", s.ToString(), " is ", DTypeName(shape.dtype()), "[",
                      JoinDims(padded), "]");
    }
    return &a;
  };
  std::vector<OutputBlock> blocks;
  if (!g) {
    XS_ASSIGN_OR_RETURN(const Array* a, held(0));
    blocks.push_back({a, std::vector<int64_t>(padded.size(), 0), shape.dims()});
    return blocks;
  }
  for (const Piece& piece : g->pieces()) {
    if (piece.box.num_elements() == 0) continue;
    XS_ASSIGN_OR_RETURN(const Array* a, held(piece.devices.front()));
    blocks.push_back({a, piece.box.start, piece.box.sizes()});
  }
  return blocks;
}

namespace {

// Copies elements [0, block.sizes) of *block.held to [block.start, + sizes) of `out`, one
// contiguous row of the innermost dim at a time.
void CopyBlock(const OutputBlock& block, Array& out) {
  const int rank = static_cast<int>(block.sizes.size());
  for (int64_t s : block.sizes) {
    if (s == 0) return;
  }
  const int64_t elem = DTypeSize(out.dtype());
  if (rank == 0) {
    std::memcpy(out.data(), block.held->data(), static_cast<size_t>(elem));
    return;
  }
  const std::vector<int64_t> from = RowMajorStrides(block.held->dims());
  const std::vector<int64_t> to = RowMajorStrides(out.dims());
  const size_t row = static_cast<size_t>(block.sizes[rank - 1] * elem);
  std::vector<int64_t> at(rank, 0);
  for (;;) {
    int64_t f = 0, t = 0;
    for (int d = 0; d < rank; ++d) {
      f += at[d] * from[d];
      t += (block.start[d] + at[d]) * to[d];
    }
    std::memcpy(out.data() + t * elem, block.held->data() + f * elem, row);
    int d = rank - 2;
    while (d >= 0 && ++at[d] == block.sizes[d]) at[d--] = 0;
    if (d < 0) return;
  }
}

}  // namespace

StatusOr<Array> ShardedProgram::AssembleOutput(size_t i, const std::vector<std::vector<Array>>& device_outputs) const {
  XS_ASSIGN_OR_RETURN(std::vector<OutputBlock> blocks, OutputBlocks(i, device_outputs));
  const Shape& shape = output_shapes_[i];
  int64_t covered = 0;
  for (const OutputBlock& b : blocks) covered += Product(b.sizes);
  // Every element comes from a block when the pieces tile the array (they do): no zero-fill, and
  // the pages are touched once, by the copy.
  Array global = covered == shape.num_elements() ? Array::Uninitialized(shape) : Array(shape);
  for (const OutputBlock& b : blocks) CopyBlock(b, global);
  return global;
}

StatusOr<ShardedResult> ShardedProgram::AssembleOutputs(std::vector<std::vector<Array>> device_outputs) const {
  const int64_t n = num_devices_;
  if (static_cast<int64_t>(device_outputs.size()) != n) {
    return InvalidArgument("outputs of ", device_outputs.size(), " devices given; the program runs on ", n);
  }
  for (int64_t d = 0; d < n; ++d) {
    if (device_outputs[d].size() != output_shapes_.size()) {
      return InvalidArgument("device ", d, " has ", device_outputs[d].size(), " outputs; the program has ",
                             output_shapes_.size());
    }
  }
  ShardedResult result;
  for (size_t i = 0; i < output_shapes_.size(); ++i) {
    const Shape& shape = output_shapes_[i];
    XS_ASSIGN_OR_RETURN(std::optional<ShardGeometry> g, GeometryOf(output_shardings_[i], shape, n));
    if (PerDeviceValues(output_shardings_[i], g)) {
      result.outputs.push_back(Array(DType::kF32, {0}));
      result.assembled.push_back(false);
      continue;
    }
    XS_ASSIGN_OR_RETURN(Array global, AssembleOutput(i, device_outputs));
    result.outputs.push_back(std::move(global));
    result.assembled.push_back(true);
  }
  result.device_outputs = std::move(device_outputs);
  return result;
}

StatusOr<const SpmdExecutable*> ShardedProgram::Planned(const Client& client) const {
  if (client.num_devices() < num_devices_) {
    return InvalidArgument("the program runs on ", num_devices_, " devices but the client has ",
                           client.num_devices());
  }
  return executable_.get();
}

StatusOr<SpmdResult> ShardedProgram::RunWithoutGather(Client& client, const std::vector<Array>& args,
                                                      const SpmdRunOptions& options) const {
  // Planned before the arguments are placed: an unsupported program fails without allocating.
  XS_ASSIGN_OR_RETURN(const SpmdExecutable* executable, Planned(client));
  XS_ASSIGN_OR_RETURN(DeviceArguments placed, PlaceArguments(args));
  return executable->Run(client, placed.per_device, options);
}

StatusOr<ShardedResult> ShardedProgram::Run(Client& client, const std::vector<Array>& args,
                                            const SpmdRunOptions& options) const {
  XS_ASSIGN_OR_RETURN(SpmdResult ran, RunWithoutGather(client, args, options));
  XS_ASSIGN_OR_RETURN(ShardedResult result, AssembleOutputs(std::move(ran.outputs)));
  result.memory = std::move(ran.memory);
  return result;
}

StatusOr<SpmdResult> ShardedProgram::RunPlaced(Client& client, const std::vector<std::vector<Array>>& shards,
                                               const SpmdRunOptions& options) const {
  XS_ASSIGN_OR_RETURN(const SpmdExecutable* executable, Planned(client));
  return executable->Run(client, shards, options);
}

}  // namespace xs
