// Propagation setup from the module's annotations: the device count, the common TileMesh, each
// annotation's leaves (validated, on the mesh or kept verbatim), the closed entry boundary, and
// the final even-split rule for entry parameters and outputs.
#include <algorithm>
#include <deque>

#include "xshard/propagation/engine.h"

namespace xs::propagation_internal {
namespace {

std::string Name(const Instruction* inst) {
  return inst == nullptr ? "?" : "%" + inst->name();
}

// "unspecified_dims=[0,2]" inside a Sharding custom-call's backend_config, as a bit set.
uint64_t UnspecifiedDims(const Instruction& inst) {
  const std::string cfg = inst.attrs().backend_config.value_or("");
  const size_t at = cfg.find("unspecified_dims=[");
  if (at == std::string::npos) return 0;
  uint64_t bits = 0;
  const size_t end = cfg.find(']', at);
  std::string_view list(cfg.data() + at + 18,
                        (end == std::string::npos ? cfg.size() : end) - at - 18);
  for (std::string_view piece : StrSplit(list, ',')) {
    int64_t d = 0;
    if (ParseInt64(StripWhitespace(piece), &d) && d >= 0 && d < 64) bits |= uint64_t{1} << d;
  }
  return bits;
}

bool IsBoundary(const Instruction& inst) {
  if (inst.opcode() != Opcode::kCustomCall) return false;
  const std::string target = inst.attrs().custom_call_target.value_or("");
  return target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape";
}

// The dims a Sharding custom-call may leave open for propagation: a manual-region boundary
// (SPMDFullToShardShape / SPMDShardToFullShape) cuts the region's local pieces from (or joins
// them into) the value in exactly this sharding, so a dim stays open only where every boundary
// it feeds is open too (unspecified_dims on the boundary, as JAX writes it): propagation then
// refines both alike (infer.cc, BoundaryFromOperand), and the region works on the finer pieces
// instead of the value being gathered at the boundary (XLA merges the operand's tiling there).
uint64_t OpenAlongBoundaries(const Instruction& inst) {
  uint64_t open = ~uint64_t{0};
  for (const Instruction* user : inst.users()) {
    if (IsBoundary(*user)) open &= UnspecifiedDims(*user);
  }
  return open;
}

bool AllowedAt(const std::vector<bool>& flags, std::optional<bool> override_value, size_t i) {
  if (override_value) return *override_value;
  if (flags.empty()) return false;
  if (flags.size() == 1) return flags[0];
  return i < flags.size() && flags[i];
}

}  // namespace

Engine::LeafFit& Engine::FitOf(const HloSharding& leaf, const Shape& shape) {
  // Keyed by text: iota forms print in O(rank), so repeated annotations cost O(1) devices each.
  std::string key = StrCat(leaf.ToString(false), "#", shape.ToString(false));
  auto it = fits_.find(key);
  if (it == fits_.end())
    it = fits_
             .emplace(std::move(key),
                      LeafFit{leaf.Validate(shape, num_devices_), false, false, std::nullopt})
             .first;
  return it->second;
}

Status Engine::ApplyAnnotation(int id, const HloSharding& s, bool fixed, ShardingOrigin origin,
                               uint64_t open_dims) {
  Node& n = nodes_[id];
  const std::vector<const Shape*> shapes = ShapeLeaves(n.inst->shape());
  if (s.IsTuple() && s.tuple_elements().size() != shapes.size()) {
    // Kept verbatim (e.g. an outfeed's sharding describes its operand and token): not read.
    for (Leaf& leaf : n.leaves) {
      leaf.fixed = true;
      leaf.origin = origin;
    }
    n.annotated = true;
    return OkStatus();
  }
  for (size_t l = 0; l < shapes.size(); ++l) {
    const HloSharding& ls = s.IsTuple() ? s.tuple_elements()[l] : s;
    if (ls.IsUnknown()) continue;  // {unknown}: left to propagation
    Leaf& leaf = n.leaves[l];
    const int rank = shapes[l]->IsArray() ? shapes[l]->rank() : 0;
    LeafFit& fit = FitOf(ls, *shapes[l]);
    if (!fit.axes_done) {
      fit.axes = fit.status.ok() ? mesh_.ToAxes(ls, rank) : std::nullopt;
      fit.axes_done = true;
    }
    std::optional<AxesSharding> axes = fit.axes;
    if (axes && axes->manual == mesh_.AllAxes() && axes->DimAxes() == 0 && mesh_.num_axes() > 0) {
      leaf.kind = Leaf::Kind::kManual;
    } else if (axes) {
      leaf.kind = Leaf::Kind::kAxes;
      leaf.axes = std::move(*axes);
    } else {
      leaf.kind = Leaf::Kind::kOpaque;
      leaf.opaque = static_cast<int>(opaque_.size());
      opaque_.push_back(ls);
    }
    leaf.fixed = fixed;
    leaf.open_dims = leaf.kind == Leaf::Kind::kAxes ? open_dims : 0;
    leaf.origin = origin;
  }
  n.annotated = true;
  return OkStatus();
}

Status Engine::CheckAnnotation(int id, const HloSharding& s, bool explicit_count,
                               TileMesh::Builder& builder) {
  const Instruction* inst = nodes_[id].inst;
  const std::vector<const Shape*> shapes = ShapeLeaves(inst->shape());
  if (s.IsTuple() && s.tuple_elements().size() != shapes.size()) {
    if (nodes_[id].rule.barrier) {
      notes_.push_back(StrCat("sharding of ", Name(inst), " has ", s.tuple_elements().size(),
                              " elements for ", shapes.size(),
                              " leaves; kept as written, not propagated"));
      return OkStatus();
    }
    return InvalidArgument("sharding of ", Name(inst), " has ", s.tuple_elements().size(),
                           " tuple elements but its shape ", inst->shape().ToString(false), " has ",
                           shapes.size(), " leaves; give one sharding per leaf");
  }
  for (size_t l = 0; l < shapes.size(); ++l) {
    const HloSharding& ls = s.IsTuple() ? s.tuple_elements()[l] : s;
    const int rank = shapes[l]->IsArray() ? shapes[l]->rank() : 0;
    if (ls.IsTiled() && ls.TiledDataRank() != rank && nodes_[id].rule.barrier) {
      notes_.push_back(StrCat("sharding ", ls.ToString(false), " of ", Name(inst),
                              " does not describe its ", shapes[l]->ToString(false),
                              " value; kept as written, not propagated"));
      continue;
    }
    if (ls.IsTiled() && ls.TiledDataRank() != rank) {
      return InvalidArgument(
          "sharding ", ls.ToString(false), " of ", Name(inst), " tiles ", ls.TiledDataRank(),
          " dims but the value ", shapes[l]->ToString(false), " has ", rank,
          "; give one tile count per dim (plus last_tile_dim_replicate for replicas)");
    }
    LeafFit& fit = FitOf(ls, *shapes[l]);
    const Status& st = fit.status;
    if (!st.ok()) {
      if (explicit_count) {
        return InvalidArgument("sharding ", ls.ToString(false), " of ", Name(inst),
                               " does not fit ", num_devices_, " devices: ", st.message(),
                               " (the device count comes from num_partitions or --devices)");
      }
      notes_.push_back(StrCat("sharding ", ls.ToString(false), " of ", Name(inst),
                              " does not fit the ", num_devices_,
                              " devices of the other annotations (", st.message(),
                              "); it is kept but only copied through ops that keep every dim"));
      continue;
    }
    if (fit.added) continue;
    fit.added = true;
    if (!builder.Add(ls)) {
      notes_.push_back(
          StrCat("sharding ", ls.ToString(false), " of ", Name(inst),
                 " is not an iota tile assignment consistent with the other annotations;"
                 " it is kept but only copied through ops that keep every dim"));
    }
  }
  return OkStatus();
}

Status Engine::ReadAnnotations() {
  // The device count: the option, the module's partitions, else the first tiled annotation's.
  const bool explicit_count = options_.num_devices > 0 || module_.config().num_partitions > 1;
  num_devices_ = options_.num_devices > 0 ? options_.num_devices : module_.config().num_partitions;
  // Annotations point into the instructions (copying a sharding copies its device list);
  // converted named-axis forms live in `converted`.
  std::deque<HloSharding> converted;
  std::vector<std::pair<int, const HloSharding*>> annotations;
  int64_t first_tiled = 0, max_device = 0;
  for (Computation* c : module_.computations()) {
    for (Instruction* inst : c->instructions()) {
      const int id = IdOf(inst);
      if (id < 0 || !inst->has_sharding()) continue;
      const HloSharding* s = &*inst->sharding();
      const bool named =
          s->IsMeshAxes() ||
          (s->IsTuple() && std::any_of(s->tuple_elements().begin(), s->tuple_elements().end(),
                                       [](const HloSharding& e) { return e.IsMeshAxes(); }));
      if (named) {
        StatusOr<HloSharding> tiled = s->ToTiled();
        if (!tiled.ok()) return Annotate(tiled.status(), StrCat("sharding of ", Name(inst), ": "));
        converted.push_back(*std::move(tiled));
        s = &converted.back();
      }
      if (s->IsUnknown()) continue;
      auto note_devices = [&](const HloSharding& l) {
        if (l.IsTiled() && first_tiled == 0) first_tiled = l.tile_assignment().num_devices();
        if (l.IsMaximal()) max_device = std::max(max_device, l.device() + 1);
      };
      if (s->IsTuple()) {
        for (const HloSharding& l : s->tuple_elements()) note_devices(l);
      } else {
        note_devices(*s);
      }
      annotations.push_back({id, s});
    }
  }
  if (!explicit_count) num_devices_ = first_tiled > 0 ? first_tiled : max_device;
  num_devices_ = std::max<int64_t>(1, num_devices_);
  // The device order comes from the leaves in the order CheckAnnotation adds them.
  std::vector<HloSharding> hints;
  for (const auto& [id, s] : annotations) {
    if (!s->IsTuple()) hints.push_back(*s);
    for (const HloSharding& l : s->tuple_elements()) hints.push_back(l);
  }
  TileMesh::Builder builder(num_devices_, hints);
  for (const auto& [id, s] : annotations) {
    XS_RETURN_IF_ERROR(CheckAnnotation(id, *s, explicit_count, builder));
  }
  mesh_ = builder.Build();
  for (const auto& [id, s] : annotations) {
    const Instruction* inst = nodes_[id].inst;
    const bool is_sharding_cc = inst->opcode() == Opcode::kCustomCall &&
                                inst->attrs().custom_call_target.value_or("") == "Sharding";
    const uint64_t written_open = is_sharding_cc ? UnspecifiedDims(*inst) : 0;
    uint64_t open = is_sharding_cc ? written_open & OpenAlongBoundaries(*inst) : 0;
    // A boundary's open dims follow its operand's (a Sharding custom-call with the same ones).
    if (IsBoundary(*inst) && inst->operand_count() == 1) open = UnspecifiedDims(*inst) & UnspecifiedDims(*inst->operand(0));
    XS_RETURN_IF_ERROR(ApplyAnnotation(
        id, *s, true, ShardingOrigin{ShardingOrigin::Kind::kUser, nullptr, 0}, open));
    // GSPMD folds a fully specified Sharding custom-call into an unannotated operand.
    if (is_sharding_cc && written_open == 0 && inst->operand_count() == 1) {
      const int op = IdOf(inst->operand(0));
      if (op >= 0 && !nodes_[op].annotated) {
        XS_RETURN_IF_ERROR(
            ApplyAnnotation(op, *s, true, ShardingOrigin{ShardingOrigin::Kind::kUser, inst, 0}, 0));
      }
    }
  }
  return OkStatus();
}

void Engine::CloseEntryBoundary() {
  const Computation* entry = module_.entry();
  const ModuleConfig& cfg = module_.config();
  for (int i = 0; i < entry->num_parameters(); ++i) {
    const int id = IdOf(entry->parameter(i));
    if (id < 0 || nodes_[id].annotated) continue;
    if (AllowedAt(cfg.allow_spmd_sharding_propagation_to_parameters, options_.allow_to_parameters,
                  i))
      continue;
    for (Leaf& l : nodes_[id].leaves) {
      l.fixed = true;
      l.origin = ShardingOrigin{ShardingOrigin::Kind::kClosed, nullptr, 0};
    }
  }
  const int root = IdOf(entry->root());
  if (root < 0) return;
  const Shape& shape = entry->root()->shape();
  size_t leaf = 0;
  const int elements = shape.IsTuple() ? shape.tuple_size() : 1;
  for (int e = 0; e < elements; ++e) {
    const int count = shape.IsTuple() ? LeafCount(shape.tuple_shape(e)) : 1;
    // As under JAX's jit, an unannotated output is open whatever the header says (JAX compiles
    // with allow_spmd_sharding_propagation_to_output=true but does not print it); only the
    // option closes it.
    // A collective written in the global program at the root computes on whole arrays: its
    // output stays closed (replicated), as it was under XLA's default.
    const bool allowed = options_.allow_to_output.value_or(true) && !IsCollective(entry->root()->opcode());
    for (int k = 0; k < count; ++k, ++leaf) {
      Leaf& l = nodes_[root].leaves[leaf];
      if (allowed || l.kind != Leaf::Kind::kNone) continue;
      l.fixed = true;
      l.origin = ShardingOrigin{ShardingOrigin::Kind::kClosed, nullptr, 0};
    }
  }
}

void Engine::OutputProducerFollows(int root, int leaf) {
  // An output whose uneven split was replicated (or cut to its even prefix) is built that way when
  // it is a concatenate or pad the output alone reads: its operands are then resharded (an input
  // several such outputs read, once, through the reshard cache) instead of the padded result
  // (bench/xla_compare pad_modes: three f32[19,3] outputs were each gathered as 8 tiles of 3 rows).
  const Instruction* r = nodes_[root].inst;
  if (r->opcode() != Opcode::kTuple || leaf >= r->operand_count()) return;
  const Instruction* producer = r->operand(leaf);
  if (producer->opcode() != Opcode::kConcatenate && producer->opcode() != Opcode::kPad) return;
  const int id = IdOf(producer);
  if (id < 0 || producer->user_count() != 1 || nodes_[id].leaves.size() != 1) return;
  Leaf& p = nodes_[id].leaves[0];
  const Leaf& out = nodes_[root].leaves[leaf];
  if (p.fixed || p.kind != Leaf::Kind::kAxes || p.axes.manual != 0 || out.axes.rank() != p.axes.rank()) return;
  p.axes = out.axes;
  p.origin = ShardingOrigin{ShardingOrigin::Kind::kOutput, r, p.origin.level};
}

void Engine::ReplicateUnevenBoundaries() {
  // As XLA: a propagated sharding of an entry parameter or output must split every dim evenly
  // (the caller allocates those buffers). GSPMD replicates an uneven sharding whole; a module
  // JAX lowered with Shardy (an xla.sdy.meshes frontend attribute) gets Shardy's
  // update-non-divisible-input-output-shardings: each dim keeps the longest prefix of its mesh
  // axes that splits it evenly (xshard has no sub-axes), so only the uneven dims are replicated
  // (XLA's compiled program for such a module returns f32[5,7] pieces of an f32[10,7] output
  // sharded P('b','a') on a 4 x 2 mesh). Shardings inside the program may be uneven.
  bool per_dim = false;
  for (const auto& [name, value] : module_.config().other) {
    per_dim = per_dim || (name == "frontend_attributes" && value.find("xla.sdy.meshes") != std::string::npos);
  }
  std::vector<int> boundary;
  const Computation* entry = module_.entry();
  for (int i = 0; i < entry->num_parameters(); ++i) {
    if (entry->parameter(i)) boundary.push_back(IdOf(entry->parameter(i)));
  }
  boundary.push_back(IdOf(entry->root()));
  for (int id : boundary) {
    if (id < 0) continue;
    const std::vector<const Shape*> shapes = ShapeLeaves(nodes_[id].inst->shape());
    for (size_t l = 0; l < nodes_[id].leaves.size(); ++l) {
      Leaf& leaf = nodes_[id].leaves[l];
      // Manual subgroups hold per-device values: nothing to split evenly.
      if (leaf.fixed || leaf.kind != Leaf::Kind::kAxes || !shapes[l]->IsArray() ||
          leaf.axes.manual != 0)
        continue;
      bool even = true, sharded = false;
      for (int d = 0; d < leaf.axes.rank(); ++d) {
        std::vector<int>& axes = leaf.axes.dims[d];
        int64_t tiles = 1;
        size_t keep = 0;
        for (; keep < axes.size() && shapes[l]->dim(d) % (tiles * mesh_.axis_size(axes[keep])) == 0; ++keep) {
          tiles *= mesh_.axis_size(axes[keep]);
        }
        even &= keep == axes.size();
        if (per_dim) axes.resize(keep);
        sharded |= per_dim && keep > 0;
      }
      if (even) continue;
      if (!per_dim) leaf.axes = AxesSharding{std::vector<std::vector<int>>(leaf.axes.rank()), leaf.axes.manual};
      // Replicated when nothing is left; else the origin stays and only the uneven dims changed.
      if (!sharded) {
        leaf.origin = ShardingOrigin{ShardingOrigin::Kind::kUneven, leaf.origin.from, leaf.origin.level};
      }
      OutputProducerFollows(id, static_cast<int>(l));
    }
  }
}

}  // namespace xs::propagation_internal
