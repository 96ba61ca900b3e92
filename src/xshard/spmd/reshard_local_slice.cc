// LocalSliceRoute: every partition slices its own target piece out of its source piece, at
// offsets computed from partition-id; whether the pieces fit is worked out once per key.
#include <algorithm>

#include "xshard/spmd/reshard_routes.h"

namespace xs::spmd::internal {
namespace {

// The buffer dims a slice of every partition's own target piece out of its source piece needs
// (at least the target piece; more where a short trailing piece would make it run past), or
// nullopt when some partition's target piece is not inside its source piece. O(N * rank).
std::optional<std::vector<int64_t>> SelfSliceNeeds(const ShardLayout& s, const ShardLayout& t) {
  const int rank = s.rank();
  std::vector<int64_t> needed = t.shard_dims();
  std::vector<int64_t> ts(rank), ss(rank);
  for (int64_t p = 0; p < s.num_partitions(); ++p) {
    t.Starts(p, ts);
    bool empty = false;
    for (int d = 0; d < rank; ++d) empty = empty || std::min(ts[d] + t.shard_dims()[d], t.dims()[d]) <= ts[d];
    if (empty) continue;  // a piece of padding only fits anywhere (as Inside says)
    s.Starts(p, ss);
    for (int d = 0; d < rank; ++d) {
      if (ts[d] < ss[d] || std::min(ts[d] + t.shard_dims()[d], t.dims()[d]) >
                               std::min(ss[d] + s.shard_dims()[d], s.dims()[d])) {
        return std::nullopt;
      }
      needed[d] = std::max(needed[d], ts[d] - ss[d] + t.shard_dims()[d]);
    }
  }
  return needed;
}

// Slices, on each partition, its own target piece out of its source piece, the offsets computed
// from partition-id (TileStart) so that the program does not grow with the partition count.
// Partitions whose target piece is all padding may read any in-range window.
Instruction* SliceSelf(const PartitionedValue& v, const ShardLayout& s, const ShardLayout& t,
                       const std::vector<int64_t>& needed) {
  Emitter& em = v.emitter();
  const int rank = s.rank();
  Instruction* x = v.hlo();
  std::vector<int64_t> padded = x->shape().dims();
  for (int d = 0; d < rank; ++d) padded[d] = std::max(padded[d], needed[d]);
  if (padded != x->shape().dims()) x = em.PadHigh(x, em.ZeroOf(x->shape().dtype()), padded);
  // Per dim: the offset as arithmetic on partition-id, or (explicit device lists) a table.
  std::vector<std::optional<PartitionExpr>> exprs(rank);
  std::vector<std::vector<int64_t>> tables(rank);
  bool any_offset = false;
  for (int d = 0; d < rank; ++d) {
    std::optional<PartitionExpr> ti = TileIndexExpr(t, d), si = TileIndexExpr(s, d);
    if (ti && si) {
      exprs[d] = *ti * t.shard_dims()[d] - *si * s.shard_dims()[d];
      any_offset = any_offset || !(*exprs[d] == PartitionExpr{});
      continue;
    }
    tables[d].assign(em.num_partitions(), 0);
    for (int64_t p = 0; p < em.num_partitions(); ++p) {
      if (!t.RealEmpty(p)) tables[d][p] = t.start(p, d) - s.start(p, d);
    }
    any_offset = any_offset || std::any_of(tables[d].begin(), tables[d].end(), [](int64_t o) { return o != 0; });
  }
  if (!any_offset) return em.Slice(x, t.shard_dims());
  std::vector<Instruction*> starts;
  for (int d = 0; d < rank; ++d) starts.push_back(exprs[d] ? em.Evaluate(*exprs[d]) : em.PerPartition(tables[d]));
  return em.DynamicSlice(x, std::move(starts), t.shard_dims());
}

}  // namespace

StatusOr<RouteResult> LocalSliceRoute(const PartitionedValue& v, const HloSharding& target) {
  XS_ASSIGN_OR_RETURN(ShardLayout s, v.Layout());
  XS_ASSIGN_OR_RETURN(ShardLayout t, ShardLayout::Create(target, v.global_shape().dims(),
                                                         v.emitter().num_partitions()));
  // Whether every piece fits, and the padding that takes, is a property of the key: checked over
  // all partitions once per key.
  ModuleState& state = v.emitter().state();
  const ReshardKey key = MakeReshardKey(kLocalSliceDecision, state, v.global_shape(), v.sharding(),
                                        std::nullopt, target);
  auto it = state.reshard_memo.find(key);
  if (it == state.reshard_memo.end()) {
    ReshardDecision decision;
    std::optional<std::vector<int64_t>> needed = SelfSliceNeeds(s, t);
    decision.ok = needed.has_value();
    if (needed) decision.needed = std::move(*needed);
    it = state.reshard_memo.emplace(key, std::move(decision)).first;
  }
  if (!it->second.ok) return NotApplicable("some target piece is not inside its own partition's source piece");
  return PartitionedValue(SliceSelf(v, s, t, it->second.needed), v.global_shape(), target, &v.emitter());
}

}  // namespace xs::spmd::internal
