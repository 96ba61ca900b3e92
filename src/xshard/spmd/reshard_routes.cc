// The reshard routes: slice + collective-permute, the full-replication fallback, partial-result
// reduction and the broadcast of a maximal value (the local slice is in reshard_local_slice.cc,
// the mesh-axes route in reshard_axes.cc).
#include "xshard/spmd/reshard_routes.h"

#include <algorithm>
#include <map>

#include "xshard/base/strings.h"

namespace xs::spmd::internal {
namespace {

using Axes = std::vector<int>;

bool Contains(const Axes& v, int a) { return std::find(v.begin(), v.end(), a) != v.end(); }

// Every axis of the mesh (all-reduces over all devices).
std::vector<int> AllAxes(const TileMesh& mesh) {
  std::vector<int> axes(mesh.num_axes());
  for (int a = 0; a < mesh.num_axes(); ++a) axes[a] = a;
  return axes;
}

std::string Why(std::string_view why, std::string_view what) {
  return why.empty() ? std::string(what) : StrCat(why, ": ", what);
}

// True when `p`'s real target box lies inside `q`'s real source box (an empty target box lies
// anywhere).
bool Inside(const ShardLayout& t, int64_t p, const ShardLayout& s, int64_t q) {
  if (t.RealEmpty(p)) return true;
  for (int d = 0; d < t.rank(); ++d) {
    if (t.start(p, d) < s.start(q, d) || t.real_limit(p, d) > s.real_limit(q, d)) return false;
  }
  return true;
}

// Slices, on each partition p, the target piece of partition send_to[p] out of p's buffer.
Instruction* SliceForPeers(const PartitionedValue& v, const ShardLayout& s, const ShardLayout& t,
                           const std::vector<int64_t>& send_to) {
  Emitter& em = v.emitter();
  const int rank = s.rank();
  const int64_t n = em.num_partitions();
  std::vector<std::vector<int64_t>> offsets(rank, std::vector<int64_t>(n, 0));
  std::vector<int64_t> needed = t.shard_dims();
  bool any_offset = false;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t q = send_to[p];
    for (int d = 0; d < rank; ++d) {
      if (!t.RealEmpty(q)) offsets[d][p] = t.start(q, d) - s.start(p, d);
      any_offset = any_offset || offsets[d][p] != 0;
      needed[d] = std::max(needed[d], offsets[d][p] + t.shard_dims()[d]);
    }
  }
  Instruction* x = v.hlo();
  std::vector<int64_t> padded = x->shape().dims();
  bool pad = false;
  for (int d = 0; d < rank; ++d) {
    if (needed[d] > padded[d]) {
      padded[d] = needed[d];
      pad = true;
    }
  }
  if (pad) x = em.PadHigh(x, em.ZeroOf(x->shape().dtype()), padded);
  if (!any_offset) return em.Slice(x, t.shard_dims());
  std::vector<Instruction*> starts;
  for (int d = 0; d < rank; ++d) starts.push_back(em.PerPartition(offsets[d]));
  return em.DynamicSlice(x, std::move(starts), t.shard_dims());
}

// Kuhn's augmenting-path matching of targets to sources, trying each target's own partition first.
// `seen[src] == stamp` marks sources visited in this search.
bool Augment(int64_t target, const std::vector<std::vector<int64_t>>& candidates,
             std::vector<int64_t>& source_of_target, std::vector<int64_t>& target_of_source,
             std::vector<int64_t>& seen, int64_t stamp) {
  for (int64_t src : candidates[target]) {
    if (seen[src] == stamp) continue;
    seen[src] = stamp;
    if (target_of_source[src] < 0 ||
        Augment(target_of_source[src], candidates, source_of_target, target_of_source, seen, stamp)) {
      target_of_source[src] = target;
      source_of_target[target] = src;
      return true;
    }
  }
  return false;
}

}  // namespace

// `s` with tile dim `dim` folded into the replicated subgroup (each new group sorted, as
// PartialTile keeps them): the tile assignment with `dim` moved next to the replication dim and
// merged into it. O(rank) for iota forms.
StatusOr<HloSharding> ReplicateDim(const HloSharding& s, int dim, int rank) {
  const TileAssignment& ta = s.tile_assignment();
  std::vector<int> perm;
  for (int d = 0; d < rank; ++d) {
    if (d != dim) perm.push_back(d);
  }
  perm.push_back(dim);
  if (s.ReplicateOnLastTileDim()) perm.push_back(ta.num_dims() - 1);
  std::vector<int64_t> new_dims(ta.dims().begin(), ta.dims().begin() + rank);
  new_dims[dim] = 1;
  new_dims.push_back(ta.num_devices() / Product(new_dims));
  return HloSharding::Tile(ta.Transpose(perm).Reshape(std::move(new_dims)).ToIota(), true);
}

namespace {

// Groups along tile dim `dim`: the devices whose tile indices differ only there, in tile order.
ReplicaGroups LinesAlong(const TileAssignment& ta, int dim) {
  std::vector<int> perm;
  for (int d = 0; d < ta.num_dims(); ++d) {
    if (d != dim) perm.push_back(d);
  }
  perm.push_back(dim);
  return GroupsOf(ta.Transpose(perm).Reshape({ta.num_devices() / ta.dim(dim), ta.dim(dim)}));
}

}  // namespace

PartitionedValue GatherDim(const PartitionedValue& v, int dim, ReplicaGroups groups,
                           const HloSharding& after, const ShardLayout& after_layout, std::string reason) {
  Emitter& em = v.emitter();
  // A step of a longer route may reach what an earlier reshard of the same value produced (a value
  // gathered for one use, then gathered the same way on the way to another sharding): reuse it.
  if (!v.partial()) {
    if (const Emitter::CachedReshard* hit =
            em.FindReshard(v.hlo(), v.global_shape().dims(), v.sharding(), nullptr, after)) {
      return PartitionedValue(hit->result, v.global_shape(), hit->result_sharding, &em);
    }
  }
  Instruction* x = em.AllGather(v.hlo(), dim, std::move(groups), std::move(reason));
  if (x->shape().dim(dim) != after_layout.shard_dims()[dim]) {
    std::vector<int64_t> limits = x->shape().dims();
    limits[dim] = after_layout.shard_dims()[dim];
    x = em.Slice(x, limits);
  }
  if (!v.partial()) em.RememberReshard(v.hlo(), {v.global_shape().dims(), v.sharding(), std::nullopt, after, x, after});
  return PartitionedValue(x, v.global_shape(), after, &em);
}

std::string RouteReason(std::string_view why, std::string_view what) { return Why(why, what); }

bool GatherFits(const std::vector<int64_t>& local, int dim, int64_t count, const ShardLayout& after) {
  const int64_t gathered = local[dim] * count;
  return after.shard_dims()[dim] == gathered ||
         (after.tiles()[dim] == 1 && after.shard_dims()[dim] <= gathered);
}

PartitionedValue AllToAllAxes(const PartitionedValue& v, const Axes& axes, int i, int j,
                              const HloSharding& after, const ShardLayout& after_layout,
                              std::string reason) {
  Emitter& em = v.emitter();
  const int64_t n = AxesSize(em.mesh(), axes);
  std::vector<int64_t> local = v.hlo()->shape().dims();
  const int rank = static_cast<int>(local.size());
  std::vector<int64_t> split = local;
  split[j] = local[j] / n;
  split.insert(split.begin() + j, n);
  Instruction* x = em.Reshape(v.hlo(), split);
  std::vector<int64_t> perm = {j};
  for (int k = 0; k <= rank; ++k) {
    if (k != j) perm.push_back(k);
  }
  x = em.Transpose(x, perm);  // [n, local dims with dim j divided by n]
  x = em.AllToAll(x, 0, em.GroupsOver(axes), std::move(reason));
  std::vector<int64_t> back;
  for (int k = 1; k <= rank; ++k) {
    if (k == i + 1) back.push_back(0);
    back.push_back(k);
  }
  x = em.Transpose(x, back);  // chunk index just before dim i
  std::vector<int64_t> merged = split;
  merged.erase(merged.begin() + j);
  merged[i] = local[i] * n;
  x = em.Reshape(x, merged);
  if (merged[i] != after_layout.shard_dims()[i]) {
    merged[i] = after_layout.shard_dims()[i];
    x = em.Slice(x, merged);
  }
  return PartitionedValue(x, v.global_shape(), after, &em);
}

StatusOr<RouteResult> PermuteRoute(const PartitionedValue& v, const HloSharding& target,
                                   std::string_view why) {
  XS_ASSIGN_OR_RETURN(ShardLayout s, v.Layout());
  XS_ASSIGN_OR_RETURN(ShardLayout t, ShardLayout::Create(target, v.global_shape().dims(),
                                                         v.emitter().num_partitions()));
  const int64_t n = v.emitter().num_partitions();
  const int rank = s.rank();
  // The piece at tile 0 has data (when no dim is empty); if it is longer along some dim than any
  // source piece can be, no source piece holds it: a cheap early no.
  const std::vector<int64_t>& dims = s.dims();
  if (std::none_of(dims.begin(), dims.end(), [](int64_t d) { return d == 0; })) {
    for (int d = 0; d < rank; ++d) {
      if (std::min(t.shard_dims()[d], dims[d]) > std::min(s.shard_dims()[d], dims[d])) {
        return NotApplicable("a target piece spans several sources");
      }
    }
  }
  // The devices holding each source piece, keyed by the piece's start.
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders;
  for (int64_t p = 0; p < n; ++p) {
    std::vector<int64_t> key(rank);
    for (int d = 0; d < rank; ++d) key[d] = s.start(p, d);
    holders[key].push_back(p);
  }
  // Each target piece with data can come from the holders of the source piece containing its start.
  std::vector<std::vector<int64_t>> candidates(n);
  std::vector<int64_t> empty;
  for (int64_t q = 0; q < n; ++q) {
    if (t.RealEmpty(q)) {
      empty.push_back(q);
      continue;
    }
    std::vector<int64_t> key(rank);
    for (int d = 0; d < rank; ++d) {
      const int64_t len = s.shard_dims()[d];
      key[d] = len == 0 ? 0 : t.start(q, d) / len * len;
    }
    auto it = holders.find(key);
    if (it != holders.end()) {
      if (Inside(t, q, s, q) && std::find(it->second.begin(), it->second.end(), q) != it->second.end()) {
        candidates[q].push_back(q);
      }
      for (int64_t p : it->second) {
        if (p != q && Inside(t, q, s, p)) candidates[q].push_back(p);
      }
    }
    if (candidates[q].empty()) return NotApplicable("a target piece spans several sources");
  }
  std::vector<int64_t> source_of_target(n, -1), target_of_source(n, -1), seen(n, -1);
  for (int64_t q = 0; q < n; ++q) {
    if (candidates[q].empty()) continue;
    if (!Augment(q, candidates, source_of_target, target_of_source, seen, q)) {
      return NotApplicable("no one-to-one matching of pieces");
    }
  }
  // Pieces without data take any source left over (their own partition when it is free).
  std::vector<int64_t> unused;
  for (int64_t p = n - 1; p >= 0; --p) {
    if (target_of_source[p] < 0) unused.push_back(p);
  }
  for (int64_t q : empty) {
    int64_t src = -1;
    if (target_of_source[q] < 0) {
      src = q;
    } else {
      while (!unused.empty() && target_of_source[unused.back()] >= 0) unused.pop_back();
      src = unused.back();
    }
    target_of_source[src] = q;
    source_of_target[q] = src;
  }
  Instruction* piece = SliceForPeers(v, s, t, target_of_source);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  bool identity = true;
  for (int64_t p = 0; p < n; ++p) {
    pairs.push_back({p, target_of_source[p]});
    identity = identity && target_of_source[p] == p;
  }
  Emitter& em = v.emitter();
  if (!identity) piece = em.CollectivePermute(piece, std::move(pairs), Why(why, "move pieces to their new devices"));
  return PartitionedValue(piece, v.global_shape(), target, &em);
}

StatusOr<RouteResult> FullRoute(const PartitionedValue& v, const HloSharding& target,
                                std::string_view why) {
  const int rank = v.global_shape().rank();
  PartitionedValue value = v;
  for (int d = 0; d < rank; ++d) {
    const HloSharding& s = value.sharding();
    if (!s.IsTiled()) break;
    if (!s.subgroup_types().empty()) return NotApplicable("the sharding has subgroups (last_tile_dims)");
    if (s.tile_assignment().dim(d) == 1) continue;
    XS_ASSIGN_OR_RETURN(HloSharding after, ReplicateDim(s, d, rank));
    XS_ASSIGN_OR_RETURN(ShardLayout layout, ShardLayout::Create(after, v.global_shape().dims(),
                                                                v.emitter().num_partitions()));
    value = GatherDim(value, d, LinesAlong(s.tile_assignment(), d), after, layout,
                   Why(why, StrCat("gather dim ", d)));
  }
  return LocalSliceRoute(value, target);
}

StatusOr<RouteResult> MaskedAllReduceRoute(const PartitionedValue& v, const HloSharding& target,
                                           std::string_view why) {
  const HloSharding& s = v.sharding();
  Emitter& em = v.emitter();
  const int rank = v.global_shape().rank();
  // The dims gathered and the mesh axes the all-reduce runs over: every dim and every device for
  // a replicated target and a source with each element on one device (any device order); else,
  // on the mesh's axes, the dims whose axes the target drops (the others keep theirs).
  std::vector<bool> gathered(rank, true);
  std::vector<int> over;
  if (target.IsReplicated() && s.IsTiled() && s.subgroup_types().empty() && !s.ReplicateOnLastTileDim() &&
      s.tile_assignment().num_devices() == em.num_partitions()) {
    over = AllAxes(em.mesh());
  } else {
    const std::optional<AxesSharding> c = em.mesh().ToAxes(s, rank);
    const std::optional<AxesSharding> want = em.mesh().ToAxes(target, rank);
    if (!c || !want || c->manual != 0 || want->manual != 0) {
      return NotApplicable("needs every element on one device of each group and a target that drops whole dims' axes");
    }
    for (int d = 0; d < rank; ++d) {
      gathered[d] = want->dims[d] != c->dims[d];
      if (!gathered[d]) continue;
      if (!want->dims[d].empty()) return NotApplicable("a dim keeps some of its axes or takes others");
      over.insert(over.end(), c->dims[d].begin(), c->dims[d].end());
    }
    if (over.empty()) return NotApplicable("no dim is gathered");
  }
  XS_ASSIGN_OR_RETURN(ShardLayout layout, v.Layout());
  const Shape& local = v.hlo()->shape();
  const DType dtype = local.dtype();
  std::vector<int> padded_dims;
  std::vector<int64_t> padded = local.dims();
  for (int d = 0; d < rank; ++d) {
    if (!gathered[d]) continue;
    padded_dims.push_back(d);
    // Room for the last piece that holds real elements (it starts before dims[d]); pieces that
    // start past it are all zeros, and the clamped start dynamic-update-slice gives them lands
    // them on the buffer's end, where they add nothing.
    padded[d] = layout.tiles()[d] > 1 ? layout.dims()[d] + layout.shard_dims()[d] - 1 : layout.dims()[d];
  }
  // Zeros (false) in the padding, placed at the piece's offset in a zero buffer of about the
  // gathered dims' global size, then summed (or-ed) over the group and cut to the global size.
  XS_ASSIGN_OR_RETURN(Instruction* piece, v.PadWithValue(nullptr, padded_dims));
  const Shape full_shape(dtype, padded);
  Instruction* full = em.Broadcast(em.ZeroOf(dtype), full_shape, {});
  std::vector<Instruction*> operands = {full, piece};
  for (int d = 0; d < rank; ++d) operands.push_back(gathered[d] ? em.TileStart(layout, d) : em.ZeroOf(DType::kS32));
  Instruction* placed = em.Add(Opcode::kDynamicUpdateSlice, full_shape, std::move(operands));
  Computation* reducer =
      em.scratch() ? nullptr : em.state().Reducer(dtype == DType::kPred ? Opcode::kOr : Opcode::kAdd, dtype);
  Instruction* x = em.AllReduce(placed, reducer, em.GroupsOver(over),
                                Why(why, "sum the zero-padded pieces (cheaper than gathering them)"));
  std::vector<int64_t> cut = local.dims();
  for (int d = 0; d < rank; ++d) {
    if (gathered[d]) cut[d] = v.global_shape().dim(d);
  }
  x = em.Slice(x, cut);
  return PartitionedValue(x, v.global_shape(), target, &em);
}

StatusOr<PartitionedValue> ResolvePartial(const PartitionedValue& v, const HloSharding& target,
                                          std::string_view why) {
  Emitter& em = v.emitter();
  const TileMesh& mesh = em.mesh();
  const int rank = v.global_shape().rank();
  Axes pending = v.partial()->axes;
  Computation* reducer = v.partial()->reducer;
  Instruction* x = v.hlo();
  HloSharding sharding = v.sharding();
  std::optional<AxesSharding> c = mesh.ToAxes(v.sharding(), rank);
  std::optional<AxesSharding> want = mesh.ToAxes(target, rank);
  if (c && want && c->manual == want->manual) {
    for (int i = 0; i < rank; ++i) {
      if (!IsPrefix(c->dims[i], want->dims[i])) continue;
      Axes next_axes;
      for (size_t k = c->dims[i].size(); k < want->dims[i].size() && Contains(pending, want->dims[i][k]); ++k) {
        next_axes.push_back(want->dims[i][k]);
      }
      if (next_axes.empty()) continue;
      AxesSharding next = *c;
      next.dims[i].insert(next.dims[i].end(), next_axes.begin(), next_axes.end());
      const HloSharding after = mesh.ToHloSharding(next);
      XS_ASSIGN_OR_RETURN(ShardLayout layout, ShardLayout::Create(after, v.global_shape().dims(), em.num_partitions()));
      const int64_t g = AxesSize(mesh, next_axes);
      if (x->shape().dim(i) % g != 0 || x->shape().dim(i) / g != layout.shard_dims()[i]) continue;
      x = em.ReduceScatter(x, reducer, i, em.GroupsOver(next_axes),
                           Why(why, StrCat("combine the partial results of the sharded reduction "
                                           "dims, leaving dim ", i, " sharded")));
      sharding = after;
      for (int a : next_axes) pending.erase(std::find(pending.begin(), pending.end(), a));
      break;
    }
  }
  if (!pending.empty()) {
    x = em.AllReduce(x, reducer, em.GroupsOver(pending),
                     Why(why, "combine the partial results of the sharded reduction dims"));
  }
  return PartitionedValue(x, v.global_shape(), sharding, &em);
}

StatusOr<PartitionedValue> BroadcastFromMaximal(const PartitionedValue& v, std::string_view why) {
  Emitter& em = v.emitter();
  const Shape& local = v.hlo()->shape();
  const DType dtype = local.dtype();
  Instruction* here = em.Compare(em.PartitionId(), em.Scalar(DType::kU32, static_cast<double>(v.sharding().device())),
                                 ComparisonDirection::kEq);
  Instruction* mask = em.Broadcast(here, local.WithDType(DType::kPred), {});
  Instruction* kept = em.Select(mask, v.hlo(), em.Broadcast(em.ZeroOf(dtype), local, {}));
  Computation* reducer =
      em.scratch() ? nullptr : em.state().Reducer(dtype == DType::kPred ? Opcode::kOr : Opcode::kAdd, dtype);
  Instruction* x = em.AllReduce(kept, reducer, em.GroupsOver(AllAxes(em.mesh())),
                                Why(why, StrCat("broadcast the value held by device ", v.sharding().device())));
  return PartitionedValue(x, v.global_shape(), HloSharding::Replicate(), &em);
}

}  // namespace xs::spmd::internal
