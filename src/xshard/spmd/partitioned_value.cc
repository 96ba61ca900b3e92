// PartitionedValue::Reshard: decides between the routes of reshard_routes.h by dry-running them,
// plus the tuple, manual and maximal cases and padding masks.
#include "xshard/spmd/partitioned_value.h"

#include <algorithm>
#include <functional>

#include "xshard/base/strings.h"
#include "xshard/rules/sharding_rule.h"
#include "xshard/spmd/reshard_routes.h"

namespace xs::spmd {
namespace {

bool HasManualPart(const HloSharding& s) {
  if (s.IsManual()) return true;
  for (SubgroupType t : s.subgroup_types()) {
    if (t == SubgroupType::kManual) return true;
  }
  return false;
}

using Route = std::function<StatusOr<internal::RouteResult>(const PartitionedValue&, const HloSharding&,
                                                           std::string_view)>;

// The cost of `route` run on a scratch copy of `v`, kImpossibleCost when it does not apply
// (`reason` then says why); `bytes` gets the bytes it receives. A route's error is returned.
StatusOr<int64_t> DryRun(const Route& route, const PartitionedValue& v, const HloSharding& target,
                         std::string_view why, int64_t* bytes, std::string* reason) {
  std::unique_ptr<Emitter> scratch = Emitter::Scratch(&v.emitter().state());
  PartitionedValue pv(scratch->ScratchParameter(v.hlo()->shape()), v.global_shape(), v.sharding(),
                      scratch.get(), v.partial());
  XS_ASSIGN_OR_RETURN(internal::RouteResult r, route(pv, target, why));
  *bytes = scratch->bytes();
  if (!r.applies()) {
    *reason = r.reason();
    return kImpossibleCost;
  }
  return scratch->cost();
}

const std::vector<std::pair<std::string, Route>>& TiledRoutes() {
  static const std::vector<std::pair<std::string, Route>> routes = {
      {"axes", internal::AxesRoute},
      {"permute", internal::PermuteRoute},
      {"all-to-all + permute", internal::AllToAllPermuteRoute},
      {"all-to-all + halo + permute", internal::AllToAllHaloPermuteRoute},
      {"halo + gather", internal::RealignGatherRoute},
      {"repad to the tile counts",
       [](const PartitionedValue& v, const HloSharding& t, std::string_view why) {
         return internal::RepadRoute(v, t, why, /*device_multiple=*/false);
       }},
      {"repad to the device count",
       [](const PartitionedValue& v, const HloSharding& t, std::string_view why) {
         return internal::RepadRoute(v, t, why, /*device_multiple=*/true);
       }},
      {"full", internal::FullRoute},
      {"masked all-reduce", internal::MaskedAllReduceRoute}};
  return routes;
}

// The error for a value no route can reshard, with each route's reason (dry-run again: this is
// the rare path, and the memo keeps only the decision).
Status NoRoute(const PartitionedValue& v, const HloSharding& target, std::string_view why,
               const std::string& local_reason) {
  std::string reasons = StrCat("local slice: ", local_reason);
  for (const auto& [name, route] : TiledRoutes()) {
    int64_t bytes = 0;
    std::string reason;
    XS_ASSIGN_OR_RETURN(const int64_t cost, DryRun(route, v, target, why, &bytes, &reason));
    reasons += StrCat("; ", name, ": ", cost == kImpossibleCost ? reason : "applies");
  }
  return Unimplemented("cannot reshard ", v.global_shape().ToString(false), " from ", v.sharding().ToString(),
                       " to ", target.ToString(), why.empty() ? "" : StrCat(" (", why, ")"),
                       ": no route applies (", reasons, ")");
}

StatusOr<PartitionedValue> ReshardTiled(const PartitionedValue& v, const HloSharding& target,
                                        std::string_view why) {
  XS_ASSIGN_OR_RETURN(internal::RouteResult local, internal::LocalSliceRoute(v, target));
  if (local.applies()) return std::move(local).value();
  const std::vector<std::pair<std::string, Route>>& routes = TiledRoutes();
  ModuleState& state = v.emitter().state();
  // The cheapest route depends only on the key: dry-run the routes once per key.
  const ReshardKey key = MakeReshardKey(kRouteDecision, state, v.global_shape(), v.sharding(),
                                        v.partial(), target);
  auto it = state.reshard_memo.find(key);
  if (it == state.reshard_memo.end()) {
    ReshardDecision decision;
    int64_t best_cost = kImpossibleCost;
    for (int i = 0; i < static_cast<int>(routes.size()); ++i) {
      int64_t bytes = 0;
      std::string reason;
      XS_ASSIGN_OR_RETURN(const int64_t cost, DryRun(routes[i].second, v, target, why, &bytes, &reason));
      if (cost < best_cost) {
        decision.route = i;
        best_cost = cost;
        decision.bytes = bytes;
      }
    }
    it = state.reshard_memo.emplace(key, std::move(decision)).first;
  }
  const int best = it->second.route;
  const int64_t best_bytes = it->second.bytes;
  if (best < 0) return NoRoute(v, target, why, local.reason());
  if (routes[best].first == "full" && !target.IsReplicated() && !v.emitter().scratch()) {
    state.report.warnings.push_back(StrCat(
        "%", state.CauseName(), ": resharding ", v.global_shape().ToString(false), " from ",
        v.sharding().ToString(), " to ", target.ToString(),
        " goes through full replication (", FormatBytes(best_bytes), " received per device)",
        why.empty() ? "" : StrCat(" for ", why)));
  }
  XS_ASSIGN_OR_RETURN(internal::RouteResult r, routes[best].second(v, target, why));
  if (!r.applies()) {
    return Internal("the ", routes[best].first, " route resharding ", v.global_shape().ToString(false), " from ",
                    v.sharding().ToString(), " to ", target.ToString(),
                    " applied in its dry run but not when emitted: ", r.reason());
  }
  return std::move(r).value();
}

}  // namespace

ReshardKey MakeReshardKey(ReshardDecisionKind kind, const ModuleState& state, const Shape& global,
                          const HloSharding& from, const std::optional<PartialReduction>& partial,
                          const HloSharding& to) {
  ReshardKey key;
  key.kind = kind;
  key.dtype = global.dtype();
  key.dims = global.dims();
  key.from = from;
  key.to = to;
  if (partial) key.partial = partial->axes;
  key.mesh = state.mesh.Signature();
  return key;
}

PartitionedValue::PartitionedValue(Instruction* hlo, Shape global_shape, HloSharding sharding,
                                   Emitter* emitter, std::optional<PartialReduction> partial)
    : hlo_(hlo), global_shape_(std::move(global_shape)), sharding_(std::move(sharding)),
      emitter_(emitter), partial_(std::move(partial)) {}

StatusOr<HloSharding> CanonicalSharding(const HloSharding& sharding) {
  if (sharding.IsTuple()) {
    std::vector<HloSharding> elements;
    for (const HloSharding& e : sharding.tuple_elements()) {
      XS_ASSIGN_OR_RETURN(HloSharding c, CanonicalSharding(e));
      elements.push_back(std::move(c));
    }
    return HloSharding::Tuple(std::move(elements));
  }
  if (sharding.IsUnknown() || sharding.IsUnreduced()) return HloSharding::Replicate();
  if (sharding.IsMeshAxes()) {
    XS_ASSIGN_OR_RETURN(HloSharding tiled, sharding.ToTiled());
    return CanonicalSharding(tiled);
  }
  std::vector<SubgroupType> types = sharding.subgroup_types();
  if (std::find(types.begin(), types.end(), SubgroupType::kUnreduced) != types.end()) {
    for (SubgroupType& t : types) {
      if (t == SubgroupType::kUnreduced) t = SubgroupType::kReplicated;
    }
    return HloSharding::Subgroup(sharding.tile_assignment(), std::move(types));
  }
  return sharding;
}

HloSharding SubSharding(const Shape& tuple_shape, const HloSharding& s, int i) {
  if (!s.IsTuple()) return s;
  int begin = 0;
  for (int k = 0; k < i; ++k) begin += LeafCount(tuple_shape.tuple_shape(k));
  const Shape& element = tuple_shape.tuple_shape(i);
  const std::vector<HloSharding>& leaves = s.tuple_elements();
  if (!element.IsTuple()) {
    return begin < static_cast<int>(leaves.size()) ? leaves[begin] : HloSharding::Replicate();
  }
  std::vector<HloSharding> sub;
  for (int k = 0; k < LeafCount(element); ++k) {
    sub.push_back(begin + k < static_cast<int>(leaves.size()) ? leaves[begin + k] : HloSharding::Replicate());
  }
  return HloSharding::Tuple(std::move(sub));
}

HloSharding JoinTuple(const Shape& tuple_shape, const std::vector<HloSharding>& elements) {
  std::vector<HloSharding> leaves;
  for (int i = 0; i < tuple_shape.tuple_size(); ++i) {
    if (tuple_shape.tuple_shape(i).IsTuple()) {
      const std::vector<HloSharding>& sub = elements[i].tuple_elements();
      if (elements[i].IsTuple()) {
        leaves.insert(leaves.end(), sub.begin(), sub.end());
      } else {
        for (int k = 0; k < LeafCount(tuple_shape.tuple_shape(i)); ++k) leaves.push_back(elements[i]);
      }
    } else {
      leaves.push_back(elements[i]);
    }
  }
  return HloSharding::Tuple(std::move(leaves));
}

StatusOr<Shape> LocalShape(const Shape& global, const HloSharding& sharding, int64_t num_partitions) {
  if (global.IsTuple()) {
    std::vector<Shape> elements;
    for (int i = 0; i < global.tuple_size(); ++i) {
      XS_ASSIGN_OR_RETURN(Shape e, LocalShape(global.tuple_shape(i), SubSharding(global, sharding, i),
                                              num_partitions));
      elements.push_back(std::move(e));
    }
    return Shape::Tuple(std::move(elements));
  }
  if (!global.IsArray()) return global;
  XS_ASSIGN_OR_RETURN(ShardLayout layout, ShardLayout::Create(sharding, global.dims(), num_partitions));
  return Shape(global.dtype(), layout.shard_dims());
}

StatusOr<ShardLayout> PartitionedValue::Layout() const {
  return ShardLayout::Create(sharding_, global_shape_.dims(), emitter_->num_partitions());
}

PartitionedValue PartitionedValue::TupleElement(int i) const {
  return PartitionedValue(emitter_->GetTupleElement(hlo_, i), global_shape_.tuple_shape(i),
                          SubSharding(global_shape_, sharding_, i), emitter_);
}

StatusOr<PartitionedValue> PartitionedValue::Reshard(const HloSharding& target_in,
                                                     std::string_view why) const {
  XS_ASSIGN_OR_RETURN(HloSharding target, CanonicalSharding(target_in));
  if (global_shape_.IsTuple()) {
    std::vector<Instruction*> elements;
    std::vector<HloSharding> shardings;
    bool changed = false;
    for (int i = 0; i < global_shape_.tuple_size(); ++i) {
      PartitionedValue e = TupleElement(i);
      XS_ASSIGN_OR_RETURN(PartitionedValue r, e.Reshard(SubSharding(global_shape_, target, i), why));
      changed = changed || r.hlo() != e.hlo();
      elements.push_back(r.hlo());
      shardings.push_back(r.sharding());
    }
    const HloSharding joined = JoinTuple(global_shape_, shardings);
    if (!changed) return PartitionedValue(hlo_, global_shape_, joined, emitter_);
    return PartitionedValue(emitter_->Tuple(std::move(elements)), global_shape_, joined, emitter_);
  }
  if (!global_shape_.IsArray()) return PartitionedValue(hlo_, global_shape_, target, emitter_);
  if (target.IsTuple()) {
    return InvalidArgument("tuple sharding ", target.ToString(), " for the array ",
                           global_shape_.ToString(false));
  }
  if (!partial_ && sharding_ == target) {
    PartitionedValue same = *this;
    same.sharding_ = target;
    return same;
  }
  // The same value resharded the same way before in this computation: reuse that result.
  const std::vector<int>* partial_axes = partial_ ? &partial_->axes : nullptr;
  if (const Emitter::CachedReshard* hit =
          emitter_->FindReshard(hlo_, global_shape_.dims(), sharding_, partial_axes, target)) {
    PartitionedValue r(hit->result, global_shape_, hit->result_sharding, emitter_);
    if (!partial_) r.broadcast_ = broadcast_;
    return r;
  }
  PartitionedValue r;
  if (broadcast_ && !partial_ &&
      RebroadcastCost(target, nullptr, nullptr) <
          ReshardCost(emitter_->state(), global_shape_, sharding_, std::nullopt, target)) {
    XS_ASSIGN_OR_RETURN(r, Rebroadcast(target, why));
  } else {
    XS_ASSIGN_OR_RETURN(r, ReshardArray(target, why));
  }
  // The result is still the broadcast of the same operand.
  if (broadcast_ && !r.partial_ && r.emitter_ == emitter_) r.broadcast_ = broadcast_;
  if (r.hlo_ != hlo_ && !r.partial_ && r.emitter_ == emitter_) {
    emitter_->RememberReshard(
        hlo_, {global_shape_.dims(), sharding_, partial_ ? std::optional(partial_->axes) : std::nullopt, target, r.hlo_,
               r.sharding_});
  }
  return r;
}

PartitionedValue PartitionedValue::WithBroadcastSource(const PartitionedValue& operand,
                                                       std::vector<int64_t> dims) const {
  PartitionedValue v = *this;
  v.broadcast_ = std::make_shared<const BroadcastSource>(
      BroadcastSource{std::make_shared<const PartitionedValue>(operand), std::move(dims)});
  return v;
}

bool PartitionedValue::RebroadcastShardings(const HloSharding& target, HloSharding* operand_target,
                                            HloSharding* wide) const {
  if (!broadcast_ || partial_ || !global_shape_.IsArray() || target.IsTuple() || target.IsMaximal() ||
      HasManualPart(target) || HasManualPart(sharding_)) {
    return false;
  }
  const PartitionedValue& operand = *broadcast_->operand;
  if (operand.emitter_ != emitter_ || !operand.global_shape_.IsArray() || HasManualPart(operand.sharding_) ||
      operand.sharding_.IsMaximal() || operand.global_shape_.rank() != static_cast<int>(broadcast_->dims.size())) {
    return false;
  }
  const TileMesh& mesh = emitter_->mesh();
  const int rank = global_shape_.rank();
  const std::optional<AxesSharding> t = mesh.ToAxes(target, rank);
  if (!t || t->manual != 0) return false;
  AxesSharding o, w;
  o.dims.resize(broadcast_->dims.size());
  w.dims.resize(rank);
  for (size_t i = 0; i < broadcast_->dims.size(); ++i) {
    const int64_t d = broadcast_->dims[i];
    if (d < 0 || d >= rank || operand.global_shape_.dims()[i] != global_shape_.dims()[d]) return false;
    o.dims[i] = t->dims[d];
    w.dims[d] = t->dims[d];
  }
  *operand_target = mesh.ToHloSharding(o);
  *wide = mesh.ToHloSharding(w);
  // The operand's local dims must be the broadcast's along the dims it keeps (same axes, same
  // sizes: the same padded tiles).
  StatusOr<Shape> lo = LocalShape(operand.global_shape_, *operand_target, emitter_->num_partitions());
  StatusOr<Shape> lw = LocalShape(global_shape_, *wide, emitter_->num_partitions());
  if (!lo.ok() || !lw.ok()) return false;
  for (size_t i = 0; i < broadcast_->dims.size(); ++i) {
    if (lo->dims()[i] != lw->dims()[broadcast_->dims[i]]) return false;
  }
  return true;
}

int64_t PartitionedValue::RebroadcastCost(const HloSharding& target, int64_t* bytes, double* latency_us) const {
  HloSharding operand_target, wide;
  if (!RebroadcastShardings(target, &operand_target, &wide)) return kImpossibleCost;
  const PartitionedValue& operand = *broadcast_->operand;
  const std::vector<int>* partial_axes = operand.partial_ ? &operand.partial_->axes : nullptr;
  if (emitter_->FindReshard(operand.hlo_, operand.global_shape_.dims(), operand.sharding_, partial_axes,
                            operand_target) != nullptr ||
      (!operand.partial_ && operand.sharding_ == operand_target)) {
    if (bytes != nullptr) *bytes = 0;
    if (latency_us != nullptr) *latency_us = 0;
    return 0;
  }
  return ReshardCost(emitter_->state(), operand.global_shape_, operand.sharding_, operand.partial_, operand_target,
                     bytes, latency_us);
}

StatusOr<PartitionedValue> PartitionedValue::Rebroadcast(const HloSharding& target, std::string_view why) const {
  HloSharding operand_target, wide;
  if (!RebroadcastShardings(target, &operand_target, &wide)) {
    return Internal("rebroadcast of ", global_shape_.ToString(false), " to ", target.ToString(), " does not apply");
  }
  XS_ASSIGN_OR_RETURN(
      PartitionedValue operand,
      broadcast_->operand->Reshard(
          operand_target, StrCat(why, why.empty() ? "" : ": ", "the broadcast's operand, broadcast again locally")));
  XS_ASSIGN_OR_RETURN(Shape local, LocalShape(global_shape_, wide, emitter_->num_partitions()));
  PartitionedValue w(emitter_->Broadcast(operand.hlo(), local, broadcast_->dims), global_shape_, wide, emitter_);
  return w.Reshard(target, why);
}

int64_t PartitionedValue::ReshardCostTo(const HloSharding& target, int64_t* bytes, double* latency_us) const {
  int64_t direct_bytes = 0;
  double direct_latency = 0;
  int64_t cost =
      ReshardCost(emitter_->state(), global_shape_, sharding_, partial_, target, &direct_bytes, &direct_latency);
  int64_t again_bytes = 0;
  double again_latency = 0;
  const int64_t again = partial_ ? kImpossibleCost : RebroadcastCost(target, &again_bytes, &again_latency);
  if (again < cost) {
    cost = again;
    direct_bytes = again_bytes;
    direct_latency = again_latency;
  }
  if (bytes != nullptr) *bytes = direct_bytes;
  if (latency_us != nullptr) *latency_us = direct_latency;
  return cost;
}

StatusOr<PartitionedValue> PartitionedValue::ReshardArray(const HloSharding& target,
                                                          std::string_view why) const {
  PartitionedValue v = *this;
  if (v.partial_) {
    XS_ASSIGN_OR_RETURN(v, internal::ResolvePartial(v, target, why));
  }
  if (v.sharding_ == target) return PartitionedValue(v.hlo_, global_shape_, target, emitter_);
  if (HasManualPart(v.sharding_) || HasManualPart(target)) {
    if (v.sharding_.IsReplicated() && target.IsManual()) {
      return PartitionedValue(v.hlo_, global_shape_, target, emitter_);
    }
    if (!v.sharding_.IsManual() && !target.IsManual()) {
      XS_ASSIGN_OR_RETURN(internal::RouteResult local, internal::LocalSliceRoute(v, target));
      if (local.applies()) return std::move(local).value();
      XS_ASSIGN_OR_RETURN(internal::RouteResult r, internal::AxesRoute(v, target, why));
      if (r.applies()) return std::move(r).value();
      return Unimplemented("cannot reshard ", global_shape_.ToString(false), " from ", v.sharding_.ToString(),
                           " to ", target.ToString(), why.empty() ? "" : StrCat(" (", why, ")"),
                           ": of two partially manual shardings, only a local slice or a move over the "
                           "mesh axes is supported (local slice: ", local.reason(), "; axes: ", r.reason(), ")");
    }
    return Unimplemented("cannot reshard ", global_shape_.ToString(false), " from ",
                         v.sharding_.ToString(), " to ", target.ToString(),
                         ": manual values only meet manual uses (enter and leave manual regions "
                         "through SPMDFullToShardShape / SPMDShardToFullShape custom-calls)");
  }
  if (v.sharding_.IsMaximal()) {
    XS_ASSIGN_OR_RETURN(v, internal::BroadcastFromMaximal(v, why));
  }
  if (target.IsMaximal()) {
    XS_ASSIGN_OR_RETURN(v, v.Replicate(why));
    return PartitionedValue(v.hlo_, global_shape_, target, emitter_);
  }
  if (v.sharding_ == target) return PartitionedValue(v.hlo_, global_shape_, target, emitter_);
  return ReshardTiled(v, target, why);
}

StatusOr<Instruction*> PartitionedValue::PadWithValue(Instruction* value,
                                                      const std::vector<int>& dims) const {
  XS_ASSIGN_OR_RETURN(ShardLayout layout, Layout());
  Emitter& em = *emitter_;
  const Shape& local = hlo_->shape();
  const Shape s32 = local.WithDType(DType::kS32);
  Instruction* mask = nullptr;
  for (int d : dims) {
    if (!layout.HasPadding(d)) continue;
    Instruction* pos = em.Iota(DType::kS32, local.dims(), d);
    pos = em.Binary(Opcode::kAdd, pos, em.Broadcast(em.TileStart(layout, d), s32, {}));
    Instruction* limit = em.Broadcast(em.Scalar(DType::kS32, static_cast<double>(layout.dims()[d])), s32, {});
    Instruction* m = em.Compare(pos, limit, ComparisonDirection::kLt);
    mask = mask == nullptr ? m : em.Binary(Opcode::kAnd, mask, m);
  }
  if (mask == nullptr) return hlo_;
  if (value == nullptr) value = em.ZeroOf(local.dtype());
  return em.Select(mask, hlo_, em.Broadcast(value, local, {}));
}

int64_t ReshardCost(ModuleState& state, const Shape& global, const HloSharding& from,
                    const std::optional<PartialReduction>& partial, const HloSharding& to,
                    int64_t* bytes, double* latency_us) {
  // Plans of every op ask for the same few costs: remember them (array values only).
  std::optional<ReshardKey> key;
  if (global.IsArray()) {
    key = MakeReshardKey(kCostDecision, state, global, from, partial, to);
    auto it = state.reshard_memo.find(*key);
    if (it != state.reshard_memo.end()) {
      if (bytes != nullptr) *bytes = it->second.bytes;
      if (latency_us != nullptr) *latency_us = it->second.latency_us;
      return it->second.cost;
    }
  }
  ReshardDecision decision;
  decision.cost = kImpossibleCost;
  StatusOr<Shape> local = LocalShape(global, from, state.num_partitions);
  if (local.ok()) {
    std::unique_ptr<Emitter> scratch = Emitter::Scratch(&state);
    PartitionedValue pv(scratch->ScratchParameter(*local), global, from, scratch.get(), partial);
    StatusOr<PartitionedValue> r = pv.Reshard(to);
    decision.bytes = scratch->bytes();
    decision.latency_us = scratch->latency_us();
    if (r.ok()) decision.cost = scratch->cost();
  }
  if (bytes != nullptr) *bytes = decision.bytes;
  if (latency_us != nullptr) *latency_us = decision.latency_us;
  if (key) state.reshard_memo.emplace(std::move(*key), decision);
  return decision.cost;
}

}  // namespace xs::spmd
