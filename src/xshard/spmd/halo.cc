// HaloWindow: per-shift used ranges (or per-tile parts in rounds), collective-permutes of them,
// concatenation and a dynamic-slice at each tile's offset. FarWindow: the same by rounds of whole
// source tiles, or of per-tile parts.
#include "xshard/spmd/halo.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "xshard/base/strings.h"

namespace xs::spmd::internal {

namespace {

// (source, target) pairs that move tile source[k] along `dim` to the devices holding tile k,
// other tile indices unchanged (tiles k with source[k] < 0 receive nothing).
std::vector<std::pair<int64_t, int64_t>> TilePairs(const TileAssignment& ta, int dim,
                                                   const std::vector<int64_t>& source) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<int64_t> index(ta.num_dims(), 0);
  for (int64_t pos = 0; pos < ta.num_devices(); ++pos) {
    int64_t rem = pos;
    for (int k = ta.num_dims() - 1; k >= 0; --k) {
      index[k] = rem % ta.dim(k);
      rem /= ta.dim(k);
    }
    const int64_t target = ta(index), m = source[index[dim]];
    if (m < 0) continue;
    index[dim] = m;
    pairs.push_back({ta(index), target});
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> ShiftPairs(const TileAssignment& ta, int dim, int64_t shift,
                                                     bool cyclic) {
  const int64_t tiles = ta.dim(dim);
  std::vector<int64_t> source(tiles);
  for (int64_t k = 0; k < tiles; ++k) {
    source[k] = cyclic ? ((k + shift) % tiles + tiles) % tiles : (k + shift < 0 || k + shift >= tiles ? -1 : k + shift);
  }
  return TilePairs(ta, dim, source);
}

namespace {

// One tile's use of another: receiver tile k wants [a, b) of source tile m.
struct Transfer {
  int64_t k, m, a, b;
};

// Every part of another tile some window uses (m != k; empty parts left out).
std::vector<Transfer> Transfers(const DimWindow& w, int64_t t, int64_t len, int64_t size) {
  std::vector<Transfer> out;
  for (int64_t k = 0; k < t; ++k) {
    const int64_t lo = std::max<int64_t>(w.lo[k], 0), hi = std::min(w.lo[k] + w.needed[k], size);
    for (int64_t m = lo / len; lo < hi && m <= (hi - 1) / len; ++m) {
      if (m != k) out.push_back({k, m, std::max(lo, m * len) - m * len, std::min(hi, (m + 1) * len) - m * len});
    }
  }
  return out;
}

// The transfers grouped into rounds in which every tile sends at most once and receives at most
// once (one collective-permute each), widest first; a round moves its widest part's width.
std::vector<std::vector<Transfer>> Rounds(std::vector<Transfer> transfers, int64_t t) {
  std::stable_sort(transfers.begin(), transfers.end(),
                   [](const Transfer& x, const Transfer& y) { return x.b - x.a > y.b - y.a; });
  std::vector<std::vector<Transfer>> rounds;
  std::vector<std::vector<bool>> sends, receives;
  for (const Transfer& tr : transfers) {
    size_t r = 0;
    while (r < rounds.size() && (sends[r][tr.m] || receives[r][tr.k])) ++r;
    if (r == rounds.size()) {
      rounds.emplace_back();
      sends.emplace_back(t, false);
      receives.emplace_back(t, false);
    }
    rounds[r].push_back(tr);
    sends[r][tr.m] = receives[r][tr.k] = true;
  }
  return rounds;
}

int64_t Width(const std::vector<Transfer>& round) {
  int64_t width = 0;
  for (const Transfer& tr : round) width = std::max(width, tr.b - tr.a);
  return width;
}

// Elements each receiver gets by PieceWindow.
int64_t PieceLength(const DimWindow& w, int64_t t, int64_t len, int64_t size) {
  int64_t total = 0;
  for (const std::vector<Transfer>& round : Rounds(Transfers(w, t, len, size), t)) total += Width(round);
  return total;
}

// The window when tiles want different parts of other tiles (a split of a dim: one tile needs
// the first half of its neighbour, the next the last half): per round, each sender slices the
// part its receiver wants (a fixed width from an offset looked up by the sender's tile index),
// one collective-permute moves it, and the receiver writes it at its global place in a zero
// buffer of the window plus margins (its own tile too, whole).
StatusOr<Instruction*> PieceWindow(const PartitionedValue& v, const DimWindow& w, std::string_view why) {
  Emitter& em = v.emitter();
  XS_ASSIGN_OR_RETURN(ShardLayout layout, v.Layout());
  const int d = w.dim;
  const int64_t t = layout.tiles()[d], len = layout.shard_dims()[d], size = layout.dims()[d];
  if (!v.sharding().IsTiled() || t <= 1 || len == 0) return FailedPrecondition("the dim is not sharded");
  Instruction* x = v.hlo();
  const int rank = x->shape().rank();
  const TileAssignment& ta = v.sharding().tile_assignment();
  const std::vector<std::vector<Transfer>> rounds = Rounds(Transfers(w, t, len, size), t);
  int64_t margin = len;
  for (const std::vector<Transfer>& round : rounds) margin = std::max(margin, Width(round));
  std::vector<int64_t> dims = x->shape().dims();
  dims[d] = w.size + 2 * margin;
  Instruction* buffer = em.Broadcast(em.ZeroOf(x->shape().dtype()), x->shape().WithDims(dims), {});
  auto place = [&](Instruction* piece, const std::vector<int64_t>& at_tile) {
    std::vector<Instruction*> operands = {buffer, piece};
    for (int i = 0; i < rank; ++i) operands.push_back(i == d ? em.PerTile(layout, d, at_tile) : em.ZeroOf(DType::kS32));
    buffer = em.Add(Opcode::kDynamicUpdateSlice, buffer->shape(), std::move(operands));
  };
  // The own tile, where the window overlaps it (else into the left margin).
  std::vector<int64_t> own(t, 0);
  for (int64_t k = 0; k < t; ++k) {
    const int64_t lo = std::max<int64_t>(w.lo[k], 0), hi = std::min(w.lo[k] + w.needed[k], size);
    if (lo < std::min(hi, (k + 1) * len) && std::max(lo, k * len) < hi) own[k] = k * len - w.lo[k] + margin;
  }
  place(x, own);
  for (const std::vector<Transfer>& round : rounds) {
    const int64_t width = Width(round);
    std::vector<int64_t> send(t, 0), at(t, 0), source(t, -1);
    for (const Transfer& tr : round) {
      const int64_t off = std::clamp<int64_t>(tr.a, 0, len - width);
      send[tr.m] = off;
      at[tr.k] = tr.m * len + off - w.lo[tr.k] + margin;
      source[tr.k] = tr.m;
    }
    std::vector<Instruction*> starts(rank, em.ZeroOf(DType::kS32));
    starts[d] = em.PerTile(layout, d, send);
    std::vector<int64_t> sizes = x->shape().dims();
    sizes[d] = width;
    Instruction* piece = width == len ? x : em.DynamicSlice(x, std::move(starts), std::move(sizes));
    piece = em.CollectivePermute(piece, TilePairs(ta, d, source),
                                 StrCat(why, why.empty() ? "" : ": ", "halo exchange along dim ", d, ", ", width,
                                        " of ", len, " elements, each tile its own part"));
    place(piece, at);
  }
  std::vector<int64_t> starts(rank, 0), limits = dims;
  starts[d] = margin;
  limits[d] = margin + w.size;
  return em.Slice(buffer, std::move(starts), std::move(limits));
}

StatusOr<Instruction*> TileWindow(const PartitionedValue& v, const DimWindow& w, std::string_view why);

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
    // Elements received with the union of the parts per shift (below) against each tile's own.
    int64_t union_len = 0;
    for (int64_t s = smin; s <= smax; ++s) {
      if (s == 0) continue;
      auto [a, b] = used.count(s) ? used[s] : std::pair<int64_t, int64_t>{0, len};
      union_len += (s < smax ? len : b) - (s > smin ? 0 : a);
    }
    if (PieceLength(w, t, len, size) < union_len) return PieceWindow(v, w, why);
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
  // Whole source tiles, or each tile's own parts when that receives less.
  std::unique_ptr<Emitter> tiles = Emitter::Scratch(&v.emitter().state());
  std::unique_ptr<Emitter> parts = Emitter::Scratch(&v.emitter().state());
  auto dry = [&](Emitter& em) {
    return PartitionedValue(em.ScratchParameter(v.hlo()->shape()), v.global_shape(), v.sharding(), &em);
  };
  const bool by_tiles = TileWindow(dry(*tiles), w, why).ok(), by_parts = PieceWindow(dry(*parts), w, why).ok();
  if (by_parts && (!by_tiles || parts->cost() < tiles->cost())) return PieceWindow(v, w, why);
  return TileWindow(v, w, why);
}

namespace {

StatusOr<Instruction*> TileWindow(const PartitionedValue& v, const DimWindow& w, std::string_view why) {
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
    std::vector<int64_t> source(t, -1);
    bool identity = true;
    for (int64_t k = 0; k < t; ++k) {
      source[k] = source_tile(k).value_or(-1);
      identity = identity && source[k] == k;
    }
    if (identity) return x;
    std::vector<std::pair<int64_t, int64_t>> pairs = TilePairs(ta, d, source);
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

}  // namespace

}  // namespace xs::spmd::internal
