// ShardLayout: where each partition's padded local buffer sits in a value's global index space
// under one leaf sharding (the partitioner's view of XLA's ceil-division geometry), and helpers
// that turn sets of TileMesh axes into replica groups and per-partition indices.
#ifndef XSHARD_SPMD_SHARD_LAYOUT_H_
#define XSHARD_SPMD_SHARD_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/ir/attributes.h"
#include "xshard/sharding/tile_mesh.h"
#include "xshard/sharding/hlo_sharding.h"

namespace xs::spmd {

// The padded layout of an array of `dims` under a leaf sharding over N partitions: dim d is cut
// into tiles(d) tiles of shard(d) = ceil(dims[d] / tiles(d)) elements, and partition p's local
// buffer (shard_dims()) covers global [start(p,d), start(p,d) + shard(d)) along d, with
// start = tile index * shard(d). Positions at or past dims[d] are padding. Example: f32[5] under
// {devices=[4]<=[4]}: shard 2; partition 2 covers [4,6) (5 is padding), partition 3 [6,8) (all
// padding). Replicated, maximal and manual shardings have one tile per dim.
class ShardLayout {
 public:
  // Errors for tuple shardings and tilings whose data rank is not dims.size().
  static StatusOr<ShardLayout> Create(const HloSharding& sharding, const std::vector<int64_t>& dims,
                                      int64_t num_partitions);

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t num_partitions() const { return num_partitions_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  const std::vector<int64_t>& tiles() const { return tiles_; }
  const std::vector<int64_t>& shard_dims() const { return shard_; }
  // The tile assignment behind the layout (nullptr when not tiled: one tile per dim). Partition p
  // holds tile TileIndex(p, d) along d.
  const TileAssignment* tile_assignment() const { return tiled_ ? &ta_ : nullptr; }
  // Index along d of the tile partition p holds, computed from the tile assignment (O(rank) for
  // iota forms, O(log N) for explicit lists): the layout stores nothing per partition.
  int64_t TileIndex(int64_t partition, int d) const;
  int64_t start(int64_t partition, int d) const { return TileIndex(partition, d) * shard_[d]; }
  // start(partition, d) for every d at once (one tile-assignment lookup); out has rank() entries.
  void Starts(int64_t partition, std::span<int64_t> out) const;
  // End of the real (non-padding) data of `partition` along d; <= start when it holds none.
  int64_t real_limit(int64_t partition, int d) const;
  bool RealEmpty(int64_t partition) const;
  // True when some partition's buffer has padding along d (dims[d] is not a multiple of tiles).
  bool HasPadding(int d) const { return tiles_[d] * shard_[d] != dims_[d]; }
  bool HasPadding() const;

 private:
  std::vector<int64_t> dims_, tiles_, shard_;
  TileAssignment ta_;
  std::vector<int64_t> position_strides_;  // row-major strides of ta_'s dims
  bool tiled_ = false;
  int64_t num_partitions_ = 1;
};

// A per-partition integer computed from partition-id p alone: constant + sum of coef * digit,
// digit = (p / stride) % size (a mixed-radix digit of p). Tile indices and piece offsets of iota
// tile assignments have this form, so the program computes them with a few scalar divides,
// remainders and multiplies by constants instead of a table with one entry per partition.
// Example: {devices=[4,1,2]<=[8] last_tile_dim_replicate}, dim 0 of f32[12,..] (shards of 3):
// start = 3 * ((p / 2) % 4), i.e. terms {stride 2, size 4, coef 3}.
struct PartitionExpr {
  struct Term {
    int64_t stride = 1, size = 1, coef = 0;
    friend bool operator==(const Term&, const Term&) = default;
    friend auto operator<=>(const Term&, const Term&) = default;
  };
  int64_t constant = 0;
  std::vector<Term> terms;  // normalized: largest stride first, no zero coefs, no mergeable pairs

  int64_t Eval(int64_t partition) const;
  bool IsConstant() const { return terms.empty(); }
  // a + b, a - b, a * c (results normalized).
  friend PartitionExpr operator+(const PartitionExpr& a, const PartitionExpr& b);
  friend PartitionExpr operator-(const PartitionExpr& a, const PartitionExpr& b);
  friend PartitionExpr operator*(const PartitionExpr& a, int64_t c);
  friend bool operator==(const PartitionExpr&, const PartitionExpr&) = default;
  // "3 * (p / 2 % 4) + (p % 2) + 1" (for tests and messages).
  std::string ToString() const;
};

// The tile index along d of each partition under `layout` as arithmetic on partition-id; nullopt
// when the tile assignment is an explicit list without an iota form, or when its reshape dims do
// not split at the boundaries of tile dim d (then callers fall back to per-partition tables).
std::optional<PartitionExpr> TileIndexExpr(const ShardLayout& layout, int d);
// `values` (one per partition) as constant + sum of coef * (index along a mesh axis), when they
// are that (every axis of the row-major mesh contributes linearly); nullopt otherwise. O(N * axes).
std::optional<PartitionExpr> AffineOverMesh(const TileMesh& mesh, const std::vector<int64_t>& values);

// Logical-position strides of a mesh's axes (row-major: the last axis has stride 1); device ids
// when the mesh is not permuted.
std::vector<int64_t> MeshStrides(const TileMesh& mesh);
// Index of `device` (its logical position) along `axes` read as one mixed-radix number, first
// axis major.
int64_t IndexAlongAxes(const TileMesh& mesh, int64_t device, const std::vector<int>& axes);
// Replica groups over `axes`: the devices that agree on every other axis, each group ordered by
// IndexAlongAxes(axes), groups ordered by their smallest device. Stored both as explicit lists
// and as the iota form XLA prints (`[2,4]<=[4,2]T(1,0)`), which is derived from the axes alone:
// iota(N).reshape(mesh sizes).transpose(other axes, axes). On a permuted mesh the groups hold the
// devices at those logical positions (explicit lists, unless they happen to have an iota form).
ReplicaGroups GroupsOverAxes(const TileMesh& mesh, const std::vector<int>& axes);
// The rows of a 2-D assignment [groups, group size] as replica groups: the iota form when it has
// one, as MakeReplicaGroups would find it, without sorting or searching the lists.
ReplicaGroups GroupsOf(const TileAssignment& rows);
// Explicit groups as replica groups (iota form when the lists have one).
ReplicaGroups MakeReplicaGroups(std::vector<std::vector<int64_t>> groups);
// Product of the sizes of `axes`.
int64_t AxesSize(const TileMesh& mesh, const std::vector<int>& axes);

}  // namespace xs::spmd

#endif  // XSHARD_SPMD_SHARD_LAYOUT_H_
