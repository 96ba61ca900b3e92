// The ways Reshard can move a value between two tiled (or replicated) shardings. Each route
// either emits the whole transformation and returns the value with the target sharding, or says
// that it does not apply (a RouteResult value, not an error); errors are kept for real failures
// (shardings that do not fit the value, internal inconsistencies), which callers pass on. Reshard
// dry-runs the routes on a scratch emitter and emits the cheapest. Internal to the partitioner.
#ifndef XSHARD_SPMD_RESHARD_ROUTES_H_
#define XSHARD_SPMD_RESHARD_ROUTES_H_

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xshard/spmd/partitioned_value.h"

namespace xs::spmd::internal {

// What a route gives back when nothing failed: the value with the target sharding, or that the
// route does not apply to this pair of shardings, with the reason (for error messages of callers
// that have no other route). A route that does not apply may have emitted instructions that
// nothing uses; callers only let that happen on scratch emitters.
class RouteResult {
 public:
  RouteResult(PartitionedValue value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  // The route does not apply; `reason` says why ("a target piece spans several sources").
  static RouteResult NotApplicable(std::string reason) {
    RouteResult r;
    r.reason_ = std::move(reason);
    return r;
  }

  bool applies() const { return value_.has_value(); }
  // The resharded value; XS_CHECKs applies().
  const PartitionedValue& value() const& {
    XS_CHECK(applies(), "the value of a route that does not apply (", reason_, ")");
    return *value_;
  }
  PartitionedValue&& value() && {
    XS_CHECK(applies(), "the value of a route that does not apply (", reason_, ")");
    return std::move(*value_);
  }
  // Why the route does not apply; empty when it applies.
  const std::string& reason() const { return reason_; }

 private:
  RouteResult() = default;
  std::optional<PartitionedValue> value_;
  std::string reason_;
};

// Shorthand for RouteResult::NotApplicable inside the routes.
inline RouteResult NotApplicable(std::string reason) { return RouteResult::NotApplicable(std::move(reason)); }

// No communication: applies when every partition's target piece lies inside its own source
// piece (replicated -> tiled, tiled -> finer tiled along the same axes). A dynamic-slice at
// offsets computed from partition-id (Emitter::TileStart; a table only for explicit device lists
// without an iota form), padding the buffer first when a short trailing piece would make the
// slice run past it. Whether the pieces fit is checked over all partitions once per key.
StatusOr<RouteResult> LocalSliceRoute(const PartitionedValue& v, const HloSharding& target);

// One collective-permute: applies when each target piece lies inside some source piece and the
// partitions can be matched one to one (same tiling in another device order, or a finer tiling
// along other mesh axes). Each partition slices the piece its peer needs, then sends it.
StatusOr<RouteResult> PermuteRoute(const PartitionedValue& v, const HloSharding& target,
                                   std::string_view why);

// Over the module's TileMesh axes: a local slice first for the axes a dim gains that the value
// does not use (it shrinks what moves), all-to-all for a mesh axis that moves from the minor end of one
// dim's axes to the minor end of another's (after gathering the axes of the receiving dim that
// leave it anyway, when they stand in the way), all-gather of the axes a dim must lose, then a
// local slice for the axes it must gain. Needs both shardings expressible on the mesh
// (reshard_axes.cc). Error (InvalidArgument, a user error) when the two are manual over
// different mesh axes: no route can join them.
StatusOr<RouteResult> AxesRoute(const PartitionedValue& v, const HloSharding& target,
                                std::string_view why);

// Mesh axes that change dims by swapping places (P('y','x') -> P('x','y'), a transpose of sharded
// dims): all-to-alls that give every dim the target's tile count on other axes, then one
// collective-permute to the target's devices (reshard_swap.cc). When the last all-to-all's
// receiving dim only needs the moved axes in another order (P(('x','y','z')) ->
// P(None, ('z','y','x'))), its chunks are sent in the order of the devices that need them and no
// permute follows.
StatusOr<RouteResult> AllToAllPermuteRoute(const PartitionedValue& v, const HloSharding& target,
                                           std::string_view why);
// The same where an all-to-all merges uneven tiles into blocks longer than the new shard (f32[10]
// in 4 tiles of 3 merged in pairs: blocks of 6, shards of 5): a halo exchange then moves the
// elements each block is off by, instead of an extra all-to-all (does not apply when no move
// needs it, or when a block is off by more than the halo exchange reaches).
StatusOr<RouteResult> AllToAllHaloPermuteRoute(const PartitionedValue& v, const HloSharding& target,
                                               std::string_view why);

// Fewer tiles along one dim whose tiles do not line up with the new ones (uneven: f32[10] in 8
// tiles of 2 to 2 tiles of 5, replicated over 4): each source tile first takes, by a halo exchange
// (HaloWindow, else FarWindow), its share of the target tile its gather group builds (5 positions
// in pieces of 2: tile 4 takes global 5-6 from tiles 2 and 3), then one all-gather within each
// group and a slice to the target shard. XLA's plan for such merges; the mesh-axes route covers
// aligned merges of consecutive tiles, where its gather alone fits. Aligned tiles that regroup
// out of order (target tile = source tile mod 2) take one permute of whole tiles first.
StatusOr<RouteResult> RealignGatherRoute(const PartitionedValue& v, const HloSharding& target, std::string_view why);

// Uneven dims whose source and target tiles do not line up (f32[29,37] from P('y','x') to
// P('x','y') on (x=2, y=4): shards of 8 x 19 to 15 x 10): a halo exchange moves each source tile
// to its block of the dims padded to a multiple of the device count (`device_multiple`) or of
// the dim's two tile counts, the even routes reshard the padded value, and a last halo exchange
// moves each target tile to its real place (reshard_repad.cc). Does not apply when the tiles
// already line up, or when a block is further off than the halo exchanges reach.
StatusOr<RouteResult> RepadRoute(const PartitionedValue& v, const HloSharding& target, std::string_view why,
                                 bool device_multiple);

// Helpers shared by the routes.
// The local dims after gathering `count` pieces along `dim` are consistent with `after` when the
// gathered buffer is exactly the new shard, or the dim ends up whole (the excess is padding).
bool GatherFits(const std::vector<int64_t>& local, int dim, int64_t count, const ShardLayout& after);
// Moves mesh axes `axes` from the minor end of dim i's axes to the minor end of dim j's (the
// value becomes `after`, laid out as `after_layout`): split dim j into as many chunks as the axes
// have devices, all-to-all them over the axes, concatenate the received chunks along dim i.
PartitionedValue AllToAllAxes(const PartitionedValue& v, const std::vector<int>& axes, int i, int j,
                              const HloSharding& after, const ShardLayout& after_layout,
                              std::string reason);

// `s` (tiled over `rank` data dims) with tile dim `dim` folded into the replicated subgroup.
StatusOr<HloSharding> ReplicateDim(const HloSharding& s, int dim, int rank);
// all-gather along `dim` over `groups` (the value becomes `after`, laid out as `after_layout`),
// then drops the excess padding when the dim is now whole.
PartitionedValue GatherDim(const PartitionedValue& v, int dim, ReplicaGroups groups, const HloSharding& after,
                           const ShardLayout& after_layout, std::string reason);
// A collective's reason: `what`, after the caller's `why` when there is one.
std::string RouteReason(std::string_view why, std::string_view what);

// Last resort: all-gather every tiled dim (groups along the tile assignment's lines, any device
// order) to full replication, then a local slice. Applies to every sharding without manual
// subgroups.
StatusOr<RouteResult> FullRoute(const PartitionedValue& v, const HloSharding& target,
                                std::string_view why);

// Gathers dims by summing: each device zeroes its padding, places its piece at its offset in a
// zero buffer of the gathered dims' (padded) global size, and one all-reduce over the devices
// that split those dims sums them. Cheaper than gathering when the pieces are mostly padding (a
// row sliced out of a dim split over more devices than it has rows: XLA's plan for `x[0]`).
// Applies to a replicated target when every element lives on exactly one device, and on the
// mesh's axes to a target that drops the axes of some dims and keeps the others' as they are.
StatusOr<RouteResult> MaskedAllReduceRoute(const PartitionedValue& v, const HloSharding& target,
                                           std::string_view why);

// The two steps below always apply (they are not alternatives Reshard chooses between), so they
// return the value itself; an error is a real failure.
// Partial results: reduce-scatter over the partial axes that the target puts next on some dim,
// all-reduce over the rest. Returns the value without partial results.
StatusOr<PartitionedValue> ResolvePartial(const PartitionedValue& v, const HloSharding& target,
                                          std::string_view why);

// A maximal value (held by one device) made replicated: every other device's copy is zeroed and
// an all-reduce sums them.
StatusOr<PartitionedValue> BroadcastFromMaximal(const PartitionedValue& v, std::string_view why);

// True when the axis list `a` starts `b`.
inline bool IsPrefix(const std::vector<int>& a, const std::vector<int>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace xs::spmd::internal

#endif  // XSHARD_SPMD_RESHARD_ROUTES_H_
