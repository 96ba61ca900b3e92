// HaloWindow: per-shift used ranges, collective-permutes of the used parts, concatenation and a
// dynamic-slice at each tile's offset. FarWindow: the same by rounds of whole source tiles.
#include "xshard/spmd/halo.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "xshard/base/strings.h"

namespace xs::spmd::internal {

std::vector<std::pair<int64_t, int64_t>> ShiftPairs(const TileAssignment& ta, int dim, int64_t shift,
                                                     bool cyclic) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<int64_t> index(ta.num_dims(), 0);
  const int64_t tiles = ta.dim(dim);
  for (int64_t pos = 0; pos < ta.num_devices(); ++pos) {
    int64_t rem = pos;
    for (int k = ta.num_dims() - 1; k >= 0; --k) {
      index[k] = rem % ta.dim(k);
      rem /= ta.dim(k);
    }
    const int64_t target = ta(index);
    index[dim] += shift;
    if (cyclic) index[dim] = (index[dim] % tiles + tiles) % tiles;
    if (index[dim] >= 0 && index[dim] < tiles) pairs.push_back({ta(index), target});
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

namespace {

// A part [a, b) of a source tile.
using Part = std::pair<int64_t, int64_t>;

// HaloWindow when tiles want different parts of the tile at the same shift (a split of a dim:
// one tile needs the first half of its neighbour, the next the last half): per shift s, each
// tile's sender slices the part its receiver wants (a fixed width W_s from an offset looked up
// by the sender's tile index), one collective-permute moves it, and the receiver writes it at
// its global place in a zero buffer of the window plus margins. parts[s][k]: the part of tile
// k + s that tile k's window uses (empty when b <= a).
StatusOr<Instruction*> PieceWindow(const PartitionedValue& v, const DimWindow& w, std::string_view why,
                                   const ShardLayout& layout, const std::map<int64_t, std::vector<Part>>& parts) {
  Emitter& em = v.emitter();
  const int d = w.dim;
  const int64_t t = layout.tiles()[d], len = layout.shard_dims()[d];
  Instruction* x = v.hlo();
  const int rank = x->shape().rank();
  const TileAssignment& ta = v.sharding().tile_assignment();
  std::map<int64_t, int64_t> width;
  int64_t margin = len;
  for (const auto& [s, by_tile] : parts) {
    int64_t wmax = 0;
    for (const Part& p : by_tile) wmax = std::max(wmax, p.second - p.first);
    width[s] = s == 0 ? len : wmax;
    margin = std::max(margin, width[s]);
  }
  std::vector<int64_t> dims = x->shape().dims();
  dims[d] = w.size + 2 * margin;
  Instruction* buffer = em.Broadcast(em.ZeroOf(x->shape().dtype()), x->shape().WithDims(dims), {});
  for (const auto& [s, by_tile] : parts) {
    const int64_t ws = width[s];
    if (ws == 0) continue;
    // Receiver k: source offset off[k], placed at window position (k + s) * len + off[k] - lo[k]
    // (plus the margin); tiles that use nothing at this shift write into the left margin.
    std::vector<int64_t> off(t, 0), place(t, 0), send(t, 0);
    std::vector<bool> uses(t, false);
    for (int64_t k = 0; k < t; ++k) {
      const Part& p = by_tile[k];
      if (p.second <= p.first) continue;
      uses[k] = true;
      off[k] = s == 0 ? 0 : std::clamp<int64_t>(p.first, 0, len - ws);
      place[k] = (k + s) * len + off[k] - w.lo[k] + margin;
      if (k + s >= 0 && k + s < t) send[k + s] = off[k];
    }
    Instruction* piece = x;
    if (s != 0) {
      std::vector<Instruction*> starts(rank, em.ZeroOf(DType::kS32));
      starts[d] = em.PerTile(layout, d, send);
      std::vector<int64_t> sizes = x->shape().dims();
      sizes[d] = ws;
      piece = ws == len ? x : em.DynamicSlice(x, std::move(starts), std::move(sizes));
      std::vector<std::pair<int64_t, int64_t>> pairs;
      for (const auto& [src, dst] : ShiftPairs(ta, d, s)) {
        if (uses[layout.TileIndex(dst, d)]) pairs.push_back({src, dst});
      }
      piece = em.CollectivePermute(piece, std::move(pairs),
                                   StrCat(why, why.empty() ? "" : ": ", "halo exchange along dim ", d, ", ", ws,
                                          " of ", len, " elements from the tile ", s, s > 0 ? " after" : " before",
                                          " (each tile its own part)"));
    }
    std::vector<Instruction*> at(rank, em.ZeroOf(DType::kS32));
    at[d] = em.PerTile(layout, d, place);
    std::vector<Instruction*> operands = {buffer, piece};
    operands.insert(operands.end(), at.begin(), at.end());
    buffer = em.Add(Opcode::kDynamicUpdateSlice, buffer->shape(), std::move(operands));
  }
  std::vector<int64_t> starts(rank, 0), limits = dims;
  starts[d] = margin;
  limits[d] = margin + w.size;
  return em.Slice(buffer, std::move(starts), std::move(limits));
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
  {
    // Bytes of the union of the parts per shift (below) against each tile's own part.
    std::map<int64_t, std::vector<Part>> parts;
    for (int64_t k = 0; k < t; ++k) {
      const int64_t lo = std::max<int64_t>(w.lo[k], 0);
      const int64_t hi = std::min(w.lo[k] + w.needed[k], size);
      for (int64_t m = lo / len; lo < hi && m <= (hi - 1) / len; ++m) {
        std::vector<Part>& p = parts[m - k];
        p.resize(t, Part{0, 0});
        p[k] = {std::max(lo, m * len) - m * len, std::min(hi, (m + 1) * len) - m * len};
      }
    }
    int64_t union_len = 0, piece_len = 0;
    for (int64_t s = smin; s <= smax; ++s) {
      if (s == 0) continue;
      auto [a, b] = used.count(s) ? used[s] : Part{0, len};
      union_len += (s < smax ? len : b) - (s > smin ? 0 : a);
      int64_t wmax = 0;
      if (parts.count(s)) {
        for (const Part& p : parts[s]) wmax = std::max(wmax, p.second - p.first);
      }
      piece_len += wmax;
    }
    if (piece_len < union_len) return PieceWindow(v, w, why, layout, parts);
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
  // Slot c of tile k's buffer is source tile first[k] + c (when its window spans it).
  auto wants = [&](int64_t k, int64_t c) { return first[k] + c <= last[k]; };
  // One permute per slot when no source tile is wanted by two tiles in the same slot; else one
  // permute per shift (source tile - target tile), each slot picking its shift's result.
  bool by_slot = true;
  for (int64_t c = 0; c < rounds && by_slot; ++c) {
    std::vector<bool> taken(t, false);
    for (int64_t k = 0; k < t && by_slot; ++k) {
      if (!wants(k, c)) continue;
      by_slot = !taken[first[k] + c];
      taken[first[k] + c] = true;
    }
  }
  // Devices receiving source tile k + shift(k) for the tiles k with use(k).
  // The part [a, b) of source tile m that tile k's window uses.
  auto used_part = [&](int64_t k, int64_t m) {
    const int64_t lo = std::max<int64_t>(w.lo[k], 0), hi = std::min(w.lo[k] + w.needed[k], size);
    return std::pair<int64_t, int64_t>{std::max(lo, m * len) - m * len, std::min(hi, (m + 1) * len) - m * len};
  };
  auto fetch = [&](const std::function<std::optional<int64_t>(int64_t)>& source_tile, std::string reason) {
    int64_t a = len, b = 0;
    for (int64_t k = 0; k < t; ++k) {
      if (std::optional<int64_t> m = source_tile(k)) {
        const auto [ka, kb] = used_part(k, *m);
        a = std::min(a, ka);
        b = std::max(b, kb);
      }
    }
    std::vector<std::pair<int64_t, int64_t>> pairs;
    std::vector<int64_t> index(ta.num_dims(), 0);
    bool identity = true;
    for (int64_t pos = 0; pos < ta.num_devices(); ++pos) {
      int64_t rem = pos;
      for (int k = ta.num_dims() - 1; k >= 0; --k) {
        index[k] = rem % ta.dim(k);
        rem /= ta.dim(k);
      }
      const int64_t target = ta(index);
      std::optional<int64_t> m = source_tile(index[d]);
      if (!m) {
        identity = false;
        continue;
      }
      index[d] = *m;
      identity = identity && ta(index) == target;
      pairs.push_back({ta(index), target});
    }
    std::sort(pairs.begin(), pairs.end());
    if (identity) return x;
    // Only the used part travels; it is padded back into place in the slot.
    std::vector<int64_t> starts(rank, 0), limits = x->shape().dims();
    starts[d] = a;
    limits[d] = std::max(a, b);
    Instruction* piece = em.CollectivePermute(em.Slice(x, starts, limits), std::move(pairs), std::move(reason));
    if (a == 0 && b == len) return piece;
    std::vector<PaddingDim> padding(rank);
    padding[d] = PaddingDim{a, len - std::max(a, b), 0};
    return em.Pad(piece, em.ZeroOf(x->shape().dtype()), std::move(padding));
  };
  auto reason = [&](std::string_view what) {
    return StrCat(why, why.empty() ? "" : ": ", what, " along dim ", d);
  };
  std::vector<Instruction*> pieces;
  if (by_slot) {
    for (int64_t c = 0; c < rounds; ++c) {
      pieces.push_back(fetch([&](int64_t k) { return wants(k, c) ? std::optional<int64_t>(first[k] + c) : std::nullopt; },
                             reason(StrCat("fetch tile ", c, " of each window"))));
    }
  } else {
    std::map<int64_t, Instruction*> by_shift;
    for (int64_t c = 0; c < rounds; ++c) {
      for (int64_t k = 0; k < t; ++k) {
        if (wants(k, c)) by_shift[first[k] + c - k] = nullptr;
      }
    }
    for (auto& [shift, piece] : by_shift) {
      const int64_t sh = shift;
      auto uses = [&](int64_t k) {
        for (int64_t c = 0; c < rounds; ++c) {
          if (wants(k, c) && first[k] + c - k == sh) return true;
        }
        return false;
      };
      piece = fetch([&](int64_t k) { return uses(k) ? std::optional<int64_t>(k + sh) : std::nullopt; },
                    reason(StrCat("fetch the tile ", sh, " away")));
    }
    for (int64_t c = 0; c < rounds; ++c) {
      std::vector<int64_t> shift_of(t, 0);
      for (int64_t k = 0; k < t; ++k) shift_of[k] = wants(k, c) ? first[k] + c - k : by_shift.begin()->first;
      Instruction* mine = em.PerTile(layout, d, shift_of);
      Instruction* slot = nullptr;
      for (const auto& [shift, piece] : by_shift) {
        if (slot == nullptr) {
          slot = piece;
          continue;
        }
        Instruction* is = em.Compare(mine, em.Scalar(DType::kS32, static_cast<double>(shift)), ComparisonDirection::kEq);
        slot = em.Select(em.Broadcast(is, x->shape().WithDType(DType::kPred), {}), piece, slot);
      }
      pieces.push_back(slot);
    }
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
