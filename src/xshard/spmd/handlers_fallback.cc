// Handlers that need no rule: manual values (the instruction is per-device code already and is
// copied as is), collectives written in the global program, and the fallback for ops without a
// partitioned form (computed on replicated operands, with a warning naming the op and the bytes
// gathered).
#include <algorithm>
#include <optional>

#include "xshard/base/strings.h"
#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {
namespace {

Instruction* CloneLocal(const Instruction& inst, Context& ctx, std::vector<Instruction*> operands) {
  std::unique_ptr<Instruction> clone = inst.CloneWithNewOperands(operands);
  clone->set_sharding(std::nullopt);
  std::vector<CalledComputation> calls;
  for (const CalledComputation& c : inst.calls()) calls.push_back({c.role, ctx.state().Clone(*c.computation)});
  clone->set_calls(std::move(calls));
  return ctx.em().AddInstruction(std::move(clone));
}

// Records the collectives of the computations `local` calls (copied verbatim from the program:
// a shard_map body called as one manual call), and of theirs, as the program's own.
void RecordWrittenInCallees(const Instruction& local, Emitter& em, std::vector<const Computation*>& seen) {
  for (const CalledComputation& c : local.calls()) {
    if (std::find(seen.begin(), seen.end(), c.computation) != seen.end()) continue;
    seen.push_back(c.computation);
    for (Instruction* inst : c.computation->instructions()) {
      em.RecordWritten(inst, "inside a manual region", c.computation);
      RecordWrittenInCallees(*inst, em, seen);
    }
  }
}

}  // namespace

Status HandleManual(const Instruction& inst, Context& ctx) {
  std::vector<Instruction*> operands;
  for (int i = 0; i < inst.operand_count(); ++i) {
    const PartitionedValue& v = ctx.Get(inst.operand(i));
    XS_ASSIGN_OR_RETURN(PartitionedValue m, v.Reshard(HloSharding::Manual(), StrCat("operand ", i)));
    operands.push_back(m.hlo());
  }
  Instruction* local = CloneLocal(inst, ctx, std::move(operands));
  ctx.em().RecordWritten(local, "inside a manual region");
  std::vector<const Computation*> seen;
  RecordWrittenInCallees(*local, ctx.em(), seen);
  ctx.Set(&inst, PartitionedValue(local, inst.shape(), ctx.TargetOf(inst), &ctx.em()));
  return OkStatus();
}

// The devices of `s` (tiled, with a manual subgroup dim) that hold the same tile: each device's
// tile index with the manual coordinate dropped. nullopt when `s` has no manual subgroup.
std::optional<std::vector<std::vector<int64_t>>> TileKeys(const HloSharding& s, int64_t num_devices) {
  if (!s.IsTiled()) return std::nullopt;
  const std::vector<SubgroupType>& types = s.subgroup_types();
  int manual = -1;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == SubgroupType::kManual) manual = s.TiledDataRank() + static_cast<int>(i);
  }
  if (manual < 0) return std::nullopt;
  std::vector<std::vector<int64_t>> keys(num_devices);
  for (int64_t d = 0; d < num_devices; ++d) {
    std::optional<std::vector<int64_t>> index = s.tile_assignment().IndexOf(d);
    if (!index) return std::nullopt;
    index->erase(index->begin() + manual);
    keys[d] = std::move(*index);
  }
  return keys;
}

// Why `inst`, a collective with sharding `s`, cannot run on the local pieces as written, or nullopt
// when it can: `s` must be partially manual (empty reason when it is not), the collective must be
// of one array and either keep its shape (all-reduce, collective-permute) or, along a dim
// (all-gather, reduce-scatter, all-to-all: psum_scatter / all_gather in a shard_map over some
// axes), have no data dim tiled over the free axes (each device then holds its subgroup's whole
// value, whose shape the collective was written for), and each of its groups / pairs must stay
// among devices that hold the same tile, the manual subgroup the code was written for.
std::optional<std::string> SubgroupManualProblem(const Instruction& inst, const HloSharding& s, int64_t n) {
  const std::optional<std::vector<std::vector<int64_t>>> keys = TileKeys(s, n);
  if (!keys) return "";
  const Opcode op = inst.opcode();
  const bool along_dim = op == Opcode::kAllGather || op == Opcode::kReduceScatter || op == Opcode::kAllToAll;
  if ((op != Opcode::kAllReduce && op != Opcode::kCollectivePermute && !along_dim) || !inst.shape().IsArray() ||
      inst.operand_count() != 1) {
    return "only all-reduce, collective-permute, all-gather, reduce-scatter and all-to-all of one "
           "array are partitioned in a partially manual region";
  }
  for (int d = 0; along_dim && d < s.TiledDataRank(); ++d) {
    if (s.tile_assignment().dim(d) != 1) {
      return StrCat("a collective along a dim runs on whole subgroup values: dim ", d, " is tiled over the free axes");
    }
  }
  auto same_tile = [&](int64_t a, int64_t b) {
    return a >= 0 && b >= 0 && a < n && b < n && (*keys)[a] == (*keys)[b];
  };
  if (op == Opcode::kCollectivePermute) {
    for (const auto& [from, to] : inst.attrs().source_target_pairs.value_or(std::vector<std::pair<int64_t, int64_t>>{})) {
      if (!same_tile(from, to)) return StrCat("the pair {", from, ",", to, "} joins devices holding different tiles");
    }
    return std::nullopt;
  }
  const std::vector<std::vector<int64_t>> groups =
      inst.attrs().replica_groups ? inst.attrs().replica_groups->Groups() : std::vector<std::vector<int64_t>>{};
  if (groups.empty()) return "it reduces over all devices, across different tiles";
  for (const std::vector<int64_t>& g : groups) {
    for (int64_t d : g) {
      if (!same_tile(g.front(), d)) return StrCat("its group {", StrJoin(g, ","), "} joins devices holding different tiles");
    }
  }
  return std::nullopt;
}

// As XLA: a cross-replica all-reduce (no channel) sums over replicas, not partitions, so it is
// elementwise here; a cross-partition collective is kept as written on replicated operands when
// its sharding is replicated, or on the local pieces when its sharding is partially manual and its
// groups stay inside the manual subgroups. Other tiled collectives have no meaning xshard supports.
Status HandleCollective(const Instruction& inst, Context& ctx) {
  if (inst.opcode() == Opcode::kAllReduce && !inst.attrs().channel_id && inst.operand_count() == 1) {
    return HandleElementwise(inst, ctx);
  }
  const HloSharding target = ctx.TargetOf(inst);
  if (target.IsReplicated()) {
    std::vector<Instruction*> operands;
    for (int i = 0; i < inst.operand_count(); ++i) {
      XS_ASSIGN_OR_RETURN(PartitionedValue r, ctx.Get(inst.operand(i)).Replicate(StrCat("operand ", i)));
      operands.push_back(r.hlo());
    }
    Instruction* local = CloneLocal(inst, ctx, std::move(operands));
    ctx.em().RecordWritten(local, "on replicated operands");
    ctx.Set(&inst, PartitionedValue(local, inst.shape(), target, &ctx.em()));
    return OkStatus();
  }
  const int64_t n = ctx.state().num_partitions;
  if (std::optional<std::string> problem = SubgroupManualProblem(inst, target, n)) {
    return Unsupported("the collective has sharding ", target.ToString(),
                       "; a collective written in the global program must be replicated, inside a fully "
                       "manual region (sharding={manual}), or inside a partially manual region with each "
                       "group on one manual subgroup", problem->empty() ? "" : StrCat(" (", *problem, ")"));
  }
  XS_ASSIGN_OR_RETURN(PartitionedValue operand, ctx.Get(inst.operand(0)).Reshard(target, "operand 0"));
  XS_ASSIGN_OR_RETURN(Shape local_shape, LocalShape(inst.shape(), target, n));
  Instruction* local = CloneLocal(inst, ctx, {operand.hlo()});
  local->set_shape(local_shape);
  ctx.em().RecordWritten(local, "inside a partially manual region");
  ctx.Set(&inst, PartitionedValue(local, inst.shape(), target, &ctx.em()));
  return OkStatus();
}

Status HandleReplicated(const Instruction& inst, Context& ctx) {
  std::vector<Instruction*> operands;
  int64_t gathered = 0;
  std::vector<std::string> sharded;
  for (int i = 0; i < inst.operand_count(); ++i) {
    const PartitionedValue& v = ctx.Get(inst.operand(i));
    if (!v.sharding().IsReplicated() && !v.global_shape().IsToken()) {
      int64_t bytes = 0;
      ReshardCost(ctx.state(), v.global_shape(), v.sharding(), std::nullopt, HloSharding::Replicate(), &bytes);
      gathered += bytes;
      sharded.push_back(StrCat("operand ", i, " ", v.sharding().ToString()));
    }
    XS_ASSIGN_OR_RETURN(PartitionedValue r, v.Replicate(StrCat("operand ", i, " (no partitioned form)")));
    operands.push_back(r.hlo());
  }
  if (!sharded.empty()) {
    ctx.Warn(StrCat("%", inst.name(), " (", OpcodeName(inst.opcode()),
                    "): no partitioned form; computed on fully replicated operands (",
                    StrJoin(sharded, ", "), "; ", FormatBytes(gathered), " received per device)"));
  } else if (HasReplicatedForm(inst.opcode()) && !inst.shape().IsToken() &&
             !ctx.TargetOf(inst).IsReplicated()) {
    // Declared kOpReplicatedForm (ir/opcode.h): say so even when only the result is sharded.
    ctx.Warn(StrCat("%", inst.name(), " (", OpcodeName(inst.opcode()),
                    "): no partitioned form yet; computed replicated and resharded to ",
                    ctx.TargetOf(inst).ToString()));
  }
  Instruction* local = CloneLocal(inst, ctx, std::move(operands));
  return ctx.Finish(inst, PartitionedValue(local, inst.shape(), HloSharding::Replicate(), &ctx.em()));
}

}  // namespace xs::spmd::internal
