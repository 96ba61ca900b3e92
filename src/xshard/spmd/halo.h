// Halo exchange: gives each partition a window of a sharded dim that starts at a position of its
// choice (a slice, or a pad, of the dim), built from its own shard and pieces of its neighbours'
// shards moved by collective-permutes, instead of gathering the whole dim.
#ifndef XSHARD_SPMD_HALO_H_
#define XSHARD_SPMD_HALO_H_

#include <string_view>
#include <utility>
#include <vector>

#include "xshard/spmd/partitioned_value.h"

namespace xs::spmd::internal {

// The window each tile of dim `dim` needs: tile k (the tile index along `dim` of the value's
// sharding) wants global positions lo[k], lo[k] + 1, ..., lo[k] + size - 1 of the dim; only the
// first needed[k] of them matter (the rest land in padding). Positions outside [0, dim size)
// come back as zeros; the caller masks them.
struct DimWindow {
  int dim = 0;
  std::vector<int64_t> lo;
  std::vector<int64_t> needed;
  int64_t size = 0;
  // Windows with lhs dilation whose result tiles start their first window at different distances
  // before their first input element (result tiles of odd length over a dilation of 2): tile k's
  // local window starts shift[k] positions earlier than its own first window, so that one local
  // low padding (`local_pad_low`) serves every tile. Its local result then holds `extra` more
  // elements, its own starting at shift[k] / stride. Empty `shift`: every tile starts alike.
  std::vector<int64_t> shift;
  int64_t local_pad_low = 0;
  int64_t extra = 0;
};

// Pairs (source, target) that move tile k + shift of `dim` to the devices holding tile k, every
// other tile index (replicas included) unchanged; tiles past either end send nothing, unless
// `cyclic` (tile (k + shift) mod n, a rotation).
std::vector<std::pair<int64_t, int64_t>> ShiftPairs(const TileAssignment& ta, int dim, int64_t shift,
                                                     bool cyclic = false);

// The local buffer of `v` with dim `w.dim` replaced by the window: a collective-permute per
// neighbour shift the windows reach (sending only the part of the shard some window uses), a
// concatenation, and a dynamic-slice at each tile's offset. When tiles want different parts of
// the tile at the same shift (a split of the dim) and that moves more than each tile's own parts
// would, the parts go instead in rounds (one collective-permute each, every tile sending and
// receiving at most once per round), each sender slicing its receiver's part (an offset from its
// tile index) and each receiver writing it at its place in the window. Error (FailedPrecondition)
// when a window reaches more than `max_shift` tiles away, so that the caller gathers instead.
StatusOr<Instruction*> HaloWindow(const PartitionedValue& v, const DimWindow& w, std::string_view why,
                                  int64_t max_shift = 2);

// The same windows for windows that reach far, from whole source tiles: slot c of each tile's
// buffer is the c-th source tile its window touches. One collective-permute per slot when no
// source tile is wanted twice in a slot (a window far from its own tile then costs as many
// permutes as tiles it spans: concatenate's operands land far from where they start); else one
// per distinct shift (source tile - own tile), each slot selecting its own shift's result. Or,
// when that receives less, each tile's own parts in rounds as HaloWindow sends them.
StatusOr<Instruction*> FarWindow(const PartitionedValue& v, const DimWindow& w, std::string_view why);

}  // namespace xs::spmd::internal

#endif  // XSHARD_SPMD_HALO_H_
