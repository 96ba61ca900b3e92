// Ops that move data without combining it: broadcast, transpose, reshape, reverse, slice, pad,
// concatenate, dynamic-slice, dynamic-update-slice, gather, scatter, sort, reduce-window,
// select-and-scatter, bitcast-convert. Dims an op keeps whole pass through with their sharding
// (reshape: a split or merged dim keeps it when the major-most factor carries it and splits
// evenly; a merge whose users want the minor dims' axes too moves them onto the major dim by
// all-to-all and keeps them all). Dims whose data moves (sliced, padded, concatenated, reversed,
// windowed, indexed, sorted) are made unsharded first: an all-gather along those dims only, never
// a full replication. Broadcast's new dims may be sharded for free (every slice is equal).
#include <algorithm>

#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {
namespace {

// Groups of a reshape's operand dims [in_begin, in_end) that make result dims [out_begin,
// out_end) (equal element counts; size-1 dims join the group before them).
struct ReshapeGroup {
  int in_begin, in_end, out_begin, out_end;
};
std::vector<ReshapeGroup> ReshapeGroups(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<ReshapeGroup> groups;
  int i = 0, o = 0;
  const int ni = static_cast<int>(in.size()), no = static_cast<int>(out.size());
  while (i < ni || o < no) {
    ReshapeGroup g{i, i, o, o};
    int64_t pi = 1, po = 1;
    do {
      if (pi <= po && g.in_end < ni) {
        pi *= in[g.in_end++];
      } else if (g.out_end < no) {
        po *= out[g.out_end++];
      } else if (g.in_end < ni) {
        pi *= in[g.in_end++];
      } else {
        break;
      }
    } while (pi != po || (g.in_end < ni && in[g.in_end] == 1) || (g.out_end < no && out[g.out_end] == 1));
    if (pi != po) return {};
    groups.push_back(g);
    i = g.in_end;
    o = g.out_end;
  }
  return groups;
}

bool StartsWith(const std::vector<int>& a, const std::vector<int>& prefix) {
  return prefix.size() <= a.size() && std::equal(prefix.begin(), prefix.end(), a.begin());
}

// The axes every user of `inst` wants on its result dim `r`; nullopt when some user is not an
// elementwise op or a reduce keeping dim r (whose wishes this cannot read).
std::optional<std::vector<std::vector<int>>> UserDemands(const Instruction& inst, int r, const Context& ctx) {
  std::vector<std::vector<int>> demands;
  if (inst.users().empty()) return std::nullopt;
  for (const Instruction* u : inst.users()) {
    if (u->shape().IsTuple()) return std::nullopt;
    int ur = r;
    if (u->opcode() == Opcode::kReduce && u->operand_count() == 2 && u->operand(0) == &inst) {
      for (int64_t d : *u->attrs().dimensions) {
        if (d == r) return std::nullopt;
        if (d < r) --ur;
      }
    } else if (!IsElementwise(u->opcode()) || u->shape().dims() != inst.shape().dims()) {
      return std::nullopt;
    }
    std::optional<AxesSharding> axes = ctx.state().mesh.ToAxes(ctx.TargetOf(*u), u->shape().rank());
    if (!axes || axes->manual != 0) return std::nullopt;
    demands.push_back(axes->dims[ur]);
  }
  return demands;
}

// A reshape merging operand dims whose minor ones are sharded (transpose(x, (1,0,..)).reshape):
// the rule keeps only the major dim's axes on the merged dim, so the target drops the others
// and the operand is gathered. When every user wants those axes back on the merged dim (or all
// want the same finer axes there), the operand's axes move onto its major dim instead (an
// all-to-all, after local slices of axes it does not use) and the result keeps them (a finer
// sharding than the target, which the users take as it is). False when that does not
// apply or costs more than the rule handler's plan.
StatusOr<bool> TryMergeKeepingAxes(const Instruction& inst, Context& ctx) {
  const PartitionedValue& x = ctx.Get(inst.operand(0));
  if (!x.sharding().IsTiled() || x.partial() || !x.sharding().subgroup_types().empty()) return false;
  const std::vector<int64_t>& in = x.global_shape().dims();
  const std::vector<int64_t>& out = inst.shape().dims();
  if (std::count(in.begin(), in.end(), 0) > 0) return false;
  const std::vector<ReshapeGroup> groups = ReshapeGroups(in, out);
  if (groups.empty()) return false;
  const TileMesh& mesh = ctx.state().mesh;
  const HloSharding target = ctx.TargetOf(inst);
  std::optional<AxesSharding> in_axes = mesh.ToAxes(x.sharding(), static_cast<int>(in.size()));
  std::optional<AxesSharding> res = mesh.ToAxes(target, static_cast<int>(out.size()));
  if (!in_axes || !res || in_axes->manual != 0 || res->manual != 0) return false;
  AxesSharding op;
  op.dims.resize(in.size());
  bool refined = false;
  for (const ReshapeGroup& g : groups) {
    const int gi = g.in_end - g.in_begin, go = g.out_end - g.out_begin;
    if (gi == 1 && go == 1) {
      op.dims[g.in_begin] = res->dims[g.out_begin];
      continue;
    }
    // A merge of several operand dims into result dim r (size-1 dims aside; a split: false).
    int r = -1;
    for (int o = g.out_begin; o < g.out_end; ++o) {
      if (out[o] != 1) r = r < 0 ? o : -2;
    }
    int major = -1;
    for (int i = g.in_begin; i < g.in_end && major < 0; ++i) {
      if (in[i] != 1) major = i;
    }
    if (r < 0 || major < 0) return false;
    std::vector<int> merged;
    for (int i = g.in_begin; i < g.in_end; ++i) {
      merged.insert(merged.end(), in_axes->dims[i].begin(), in_axes->dims[i].end());
    }
    const std::vector<int>& want = res->dims[r];
    // The users' common wish for the merged dim when they agree on one that extends the
    // target's (axes the operand does not use are sliced locally), else the merged dims' axes.
    const std::optional<std::vector<std::vector<int>>> demands = UserDemands(inst, r, ctx);
    std::vector<int> keep = merged;
    if (demands && !demands->empty() && StartsWith((*demands)[0], want) &&
        std::all_of(demands->begin(), demands->end(), [&](const std::vector<int>& d) { return d == (*demands)[0]; })) {
      keep = (*demands)[0];
    }
    if (demands && keep.size() > want.size() && StartsWith(keep, want)) {
      uint64_t extra = 0, others = 0;
      for (size_t k = want.size(); k < keep.size(); ++k) extra |= uint64_t{1} << keep[k];
      for (int o = 0; o < static_cast<int>(out.size()); ++o) {
        for (int a : res->dims[o]) others |= o == r ? 0 : uint64_t{1} << a;
      }
      bool wanted = (extra & others) == 0;
      for (const std::vector<int>& d : *demands) wanted = wanted && StartsWith(d, keep);
      if (wanted) {
        res->dims[r] = keep;
        refined = true;
      }
    }
    op.dims[major] = res->dims[r];
    if (in[major] % mesh.SizeOf([&] {
          uint64_t m = 0;
          for (int a : res->dims[r]) m |= uint64_t{1} << a;
          return m;
        }()) != 0) {
      return false;
    }
  }
  if (!refined) return false;
  const HloSharding op_sharding = mesh.ToHloSharding(op), res_sharding = mesh.ToHloSharding(*res);
  for (const auto& [sh, dims] : {std::pair{op_sharding, in}, std::pair{res_sharding, out}}) {
    XS_ASSIGN_OR_RETURN(ShardLayout l, ShardLayout::Create(sh, dims, ctx.em().num_partitions()));
    if (l.HasPadding()) return false;
  }
  const int64_t cost = ReshardCost(ctx.state(), x.global_shape(), x.sharding(), std::nullopt, op_sharding);
  if (cost >= RulePlanCost(inst, ctx, RuleConfig{})) return false;
  XS_ASSIGN_OR_RETURN(PartitionedValue v, x.Reshard(op_sharding, "operand 0: merged dims keep their axes"));
  XS_ASSIGN_OR_RETURN(ShardLayout l, ShardLayout::Create(res_sharding, out, ctx.em().num_partitions()));
  ctx.Set(&inst, PartitionedValue(ctx.em().Reshape(v.hlo(), l.shard_dims()), inst.shape(), res_sharding, &ctx.em()));
  return true;
}

}  // namespace

Status HandleShapeOp(const Instruction& inst, Context& ctx) {
  if (inst.opcode() == Opcode::kReshape && !inst.shape().IsTuple()) {
    XS_ASSIGN_OR_RETURN(bool done, TryMergeKeepingAxes(inst, ctx));
    if (done) return OkStatus();
  }
  return PartitionByRule(inst, ctx, RuleConfig{});
}

Status HandleBroadcast(const Instruction& inst, Context& ctx) {
  RuleConfig config;
  config.allow_result_only = true;
  const PartitionedValue operand = ctx.Get(inst.operand(0));
  XS_RETURN_IF_ERROR(PartitionByRule(inst, ctx, config));
  // Users that need another sharding may reshard the operand and broadcast it again.
  if (inst.shape().IsArray() && operand.global_shape().IsArray() && inst.attrs().dimensions.has_value()) {
    ctx.Set(&inst, ctx.Get(&inst).WithBroadcastSource(operand, *inst.attrs().dimensions));
  }
  return OkStatus();
}

// reduce-window: windowed dims may stay sharded (halo exchange, window_halo.h).
Status HandleReduceWindow(const Instruction& inst, Context& ctx) {
  RuleConfig config;
  config.halo_windows = true;
  return PartitionByRule(inst, ctx, config);
}

RuleConfig PositionalConfig(const Instruction& inst) {
  RuleConfig config;
  if (inst.opcode() == Opcode::kDynamicUpdateSlice) {
    config.required_operands = {0, 1};
  } else {
    const int n = (inst.operand_count() - 1) / 2;
    for (int i = 0; i < n; ++i) {
      config.required_operands.push_back(i);
      config.required_operands.push_back(n + 1 + i);
    }
  }
  return config;
}

// dynamic-update-slice and scatter write at global positions: a dim may stay sharded only when
// the base and the update (updates) share it whole.
Status HandlePositional(const Instruction& inst, Context& ctx) {
  return PartitionByRule(inst, ctx, PositionalConfig(inst));
}

}  // namespace xs::spmd::internal
