// HaloWindow: per-shift used ranges, collective-permutes of the used parts, concatenation and a
// dynamic-slice at each tile's offset. FarWindow: the same by rounds of whole source tiles.
#include "xshard/spmd/halo.h"

#include <algorithm>
#include <map>

#include "xshard/base/strings.h"

namespace xs::spmd::internal {
namespace {

// Pairs (source, target) that move tile k + shift of `dim` to the devices holding tile k, every
// other tile index (replicas included) unchanged.
std::vector<std::pair<int64_t, int64_t>> ShiftPairs(const TileAssignment& ta, int dim, int64_t shift) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<int64_t> index(ta.num_dims(), 0);
  for (int64_t pos = 0; pos < ta.num_devices(); ++pos) {
    int64_t rem = pos;
    for (int k = ta.num_dims() - 1; k >= 0; --k) {
      index[k] = rem % ta.dim(k);
      rem /= ta.dim(k);
    }
    const int64_t target = ta(index);
    index[dim] += shift;
    if (index[dim] >= 0 && index[dim] < ta.dim(dim)) pairs.push_back({ta(index), target});
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

}  // namespace

StatusOr<Instruction*> HaloWindow(const PartitionedValue& v, const DimWindow& w, std::string_view why,
                                  int64_t max_shift) {
  Emitter& em = v.emitter();
  XS_ASSIGN_OR_RETURN(ShardLayout layout, v.Layout());
  const int d = w.dim;
  const int64_t t = layout.tiles()[d], len = layout.shard_dims()[d], size = layout.dims()[d];
  if (!v.sharding().IsTiled() || t <= 1 || len == 0) return FailedPrecondition("the dim is not sharded");
  // Per shift s: the part [a, b) of tile k + s that some tile k's window uses.
  std::map<int64_t, std::pair<int64_t, int64_t>> used;
  for (int64_t k = 0; k < t; ++k) {
    const int64_t lo = std::max<int64_t>(w.lo[k], 0);
    const int64_t hi = std::min(w.lo[k] + w.needed[k], size);
    for (int64_t m = lo / len; lo < hi && m <= (hi - 1) / len; ++m) {
      const int64_t a = std::max(lo, m * len) - m * len, b = std::min(hi, (m + 1) * len) - m * len;
      auto it = used.find(m - k);
      if (it == used.end()) {
        used[m - k] = {a, b};
      } else {
        it->second = {std::min(it->second.first, a), std::max(it->second.second, b)};
      }
    }
  }
  if (used.empty()) used[0] = {0, len};
  const int64_t smin = used.begin()->first, smax = used.rbegin()->first;
  if (-smin > max_shift || smax > max_shift) {
    return FailedPrecondition("windows reach more than ", max_shift, " tiles away");
  }
  Instruction* x = v.hlo();
  const int rank = x->shape().rank();
  std::vector<Instruction*> pieces;
  for (int64_t s = smin; s <= smax; ++s) {
    auto [a, b] = used.count(s) ? used[s] : std::pair<int64_t, int64_t>{0, len};
    if (s > smin) a = 0;  // the window runs on into the next tile
    if (s < smax) b = len;
    std::vector<int64_t> starts(rank, 0), limits = x->shape().dims();
    starts[d] = a;
    limits[d] = b;
    Instruction* piece = em.Slice(x, starts, limits);
    if (s != 0) {
      piece = em.CollectivePermute(piece, ShiftPairs(v.sharding().tile_assignment(), d, s),
                                   StrCat(why, why.empty() ? "" : ": ", "halo exchange along dim ", d,
                                          ", ", b - a, " of ", len, " elements from the tile ", s,
                                          s > 0 ? " after" : " before"));
    }
    pieces.push_back(piece);
  }
  Instruction* buffer = em.Concatenate(std::move(pieces), d);
  // The buffer of tile k starts at global position (k + smin) * len + used[smin].first.
  const int64_t first = used.count(smin) ? used[smin].first : 0;
  std::vector<int64_t> offset(t);
  int64_t low = 0, high = 0;
  for (int64_t k = 0; k < t; ++k) {
    offset[k] = w.needed[k] > 0 ? w.lo[k] - ((k + smin) * len + first) : 0;
    low = std::max(low, -offset[k]);
  }
  const int64_t buffer_len = buffer->shape().dim(d);
  for (int64_t k = 0; k < t; ++k) high = std::max(high, offset[k] + low + w.size - (buffer_len + low));
  if (low > 0 || high > 0) {
    std::vector<PaddingDim> padding(rank);
    padding[d] = PaddingDim{low, std::max<int64_t>(high, 0), 0};
    buffer = em.Pad(buffer, em.ZeroOf(buffer->shape().dtype()), std::move(padding));
  }
  // Each tile's window offset, looked up by this partition's tile index along d (arithmetic on
  // partition-id, no per-partition table).
  std::vector<int64_t> by_tile(t);
  for (int64_t k = 0; k < t; ++k) by_tile[k] = offset[k] + low;
  std::vector<Instruction*> starts(rank, em.ZeroOf(DType::kS32));
  starts[d] = em.PerTile(layout, d, by_tile);
  std::vector<int64_t> sizes = x->shape().dims();
  sizes[d] = w.size;
  return em.DynamicSlice(buffer, std::move(starts), std::move(sizes));
}


StatusOr<Instruction*> FarWindow(const PartitionedValue& v, const DimWindow& w, std::string_view why) {
  Emitter& em = v.emitter();
  XS_ASSIGN_OR_RETURN(ShardLayout layout, v.Layout());
  const int d = w.dim;
  const int64_t t = layout.tiles()[d], len = layout.shard_dims()[d], size = layout.dims()[d];
  if (!v.sharding().IsTiled() || t <= 1 || len == 0) return FailedPrecondition("the dim is not sharded");
  // Tile k's needed positions lie in source tiles first[k] .. last[k] (none when last < first).
  std::vector<int64_t> first(t, 0), last(t, -1);
  int64_t rounds = 1;
  for (int64_t k = 0; k < t; ++k) {
    const int64_t lo = std::max<int64_t>(w.lo[k], 0);
    const int64_t hi = std::min(w.lo[k] + w.needed[k], size);
    if (lo >= hi) continue;
    first[k] = lo / len;
    last[k] = (hi - 1) / len;
    rounds = std::max(rounds, last[k] - first[k] + 1);
  }
  const TileAssignment& ta = v.sharding().tile_assignment();
  Instruction* x = v.hlo();
  const int rank = x->shape().rank();
  std::vector<Instruction*> pieces;
  std::vector<int64_t> index(ta.num_dims(), 0);
  for (int64_t c = 0; c < rounds; ++c) {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    std::vector<bool> sends(ta.num_devices(), false);
    bool identity = true;
    for (int64_t pos = 0; pos < ta.num_devices(); ++pos) {
      int64_t rem = pos;
      for (int k = ta.num_dims() - 1; k >= 0; --k) {
        index[k] = rem % ta.dim(k);
        rem /= ta.dim(k);
      }
      const int64_t k = index[d];
      const int64_t target = ta(index);
      if (first[k] + c > last[k]) {
        identity = false;
        continue;
      }
      index[d] = first[k] + c;
      const int64_t source = ta(index);
      if (sends[source]) return FailedPrecondition("two tiles need one source tile in the same round");
      sends[source] = true;
      identity = identity && source == target;
      pairs.push_back({source, target});
    }
    std::sort(pairs.begin(), pairs.end());
    pieces.push_back(identity ? x
                              : em.CollectivePermute(x, std::move(pairs),
                                                     StrCat(why, why.empty() ? "" : ": ", "fetch tile ", c,
                                                            " of each window along dim ", d)));
  }
  Instruction* buffer = pieces.size() == 1 ? pieces[0] : em.Concatenate(std::move(pieces), d);
  // Tile k's buffer starts at global position first[k] * len.
  std::vector<int64_t> offset(t, 0);
  int64_t low = 0, high = 0;
  for (int64_t k = 0; k < t; ++k) {
    if (last[k] >= first[k]) offset[k] = w.lo[k] - first[k] * len;
    low = std::max(low, -offset[k]);
  }
  const int64_t buffer_len = rounds * len;
  for (int64_t k = 0; k < t; ++k) high = std::max(high, offset[k] + w.size - buffer_len);
  if (low > 0 || high > 0) {
    std::vector<PaddingDim> padding(rank);
    padding[d] = PaddingDim{low, high, 0};
    buffer = em.Pad(buffer, em.ZeroOf(buffer->shape().dtype()), std::move(padding));
  }
  std::vector<int64_t> by_tile(t);
  for (int64_t k = 0; k < t; ++k) by_tile[k] = offset[k] + low;
  std::vector<Instruction*> starts(rank, em.ZeroOf(DType::kS32));
  starts[d] = em.PerTile(layout, d, by_tile);
  std::vector<int64_t> sizes = x->shape().dims();
  sizes[d] = w.size;
  return em.DynamicSlice(buffer, std::move(starts), std::move(sizes));
}

}  // namespace xs::spmd::internal
