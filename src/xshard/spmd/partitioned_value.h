// PartitionedValue: one value of the global program as the SPMD program holds it (XLA's
// PartitionedHlo): the per-device instruction, the global shape and the sharding that says which
// piece each partition holds, optionally with partial results still to be reduced over some mesh
// axes. Reshard(target) emits the cheapest way to get the target sharding: nothing; a local slice
// (dynamic-slice at offsets computed from partition-id); all-to-all to move a
// sharded mesh axis between dims; all-gather over a subgroup (uneven dims: the padded shards are
// gathered and the padding sliced off); a slice + collective-permute when every target piece sits
// inside some source piece (a different device order, or a finer tiling); all-to-alls then one
// collective-permute when dims trade mesh axes (P('y','x') -> P('x','y')); reduce-scatter /
// all-reduce for partial results. Gathering to full replication and slicing is the last resort and
// leaves a warning naming the instruction, both shardings and the bytes moved. Decisions (which
// route, what a dry run costs) are remembered per (shape, sharding, target) in the ModuleState;
// results per (value, sharding, target) in the computation's Emitter, so a value resharded the
// same way for two users is moved once.
#ifndef XSHARD_SPMD_PARTITIONED_VALUE_H_
#define XSHARD_SPMD_PARTITIONED_VALUE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xshard/spmd/emitter.h"
#include "xshard/spmd/shard_layout.h"

namespace xs::spmd {

// A value holding partial results: the true value is the reduction (by `reducer`, a scalar
// computation of the SPMD module; nullptr in dry runs) of the local values over the devices that
// differ only along `axes` (mesh axes of the module's TileMesh).
struct PartialReduction {
  std::vector<int> axes;
  Computation* reducer = nullptr;
};

class PartitionedValue {
 public:
  PartitionedValue() = default;
  // `hlo` has the padded local shape of `global_shape` under `sharding` (tuples: per leaf).
  PartitionedValue(Instruction* hlo, Shape global_shape, HloSharding sharding, Emitter* emitter,
                   std::optional<PartialReduction> partial = std::nullopt);

  Instruction* hlo() const { return hlo_; }
  const Shape& global_shape() const { return global_shape_; }
  const HloSharding& sharding() const { return sharding_; }
  const std::optional<PartialReduction>& partial() const { return partial_; }
  Emitter& emitter() const { return *emitter_; }
  bool valid() const { return hlo_ != nullptr; }

  // The value with `target` sharding (a leaf sharding for arrays, a tuple sharding for tuples).
  // `why` ends up in the report next to each collective. Errors: manual <-> non-manual, shardings
  // that do not fit the value (rank, device count), and pairs no route can join (Unimplemented,
  // saying why each route does not apply).
  StatusOr<PartitionedValue> Reshard(const HloSharding& target, std::string_view why = "") const;
  StatusOr<PartitionedValue> Replicate(std::string_view why = "") const {
    return Reshard(HloSharding::Replicate(), why);
  }
  // Element `i` of a tuple value.
  PartitionedValue TupleElement(int i) const;
  // The local array with its padding (positions past the global dims) along `dims` replaced by
  // `value` (a scalar of the element type; null: zero), so that it cannot reach a reduction or
  // an output.
  // Dims without padding are left alone; returns hlo() when nothing needs masking.
  StatusOr<Instruction*> PadWithValue(Instruction* value, const std::vector<int>& dims) const;
  StatusOr<ShardLayout> Layout() const;

  // This value, remembered as broadcast(operand, dims) of the global program (`operand` as the
  // SPMD program holds it, before the broadcast's own reshard). Reshard may then reshard the
  // smaller operand and broadcast it again locally instead of moving the broadcast result, when
  // that costs less: a bias f32[16] over y added to x f32[16,8,16] over x moves 16 elements, not
  // the 3-D array.
  PartitionedValue WithBroadcastSource(const PartitionedValue& operand, std::vector<int64_t> dims) const;
  // ReshardCost of this value to `target` (no partial results), the rebroadcast counted: the
  // figure a plan that reshards it should be charged. `bytes` / `latency_us` as ReshardCost's.
  int64_t ReshardCostTo(const HloSharding& target, int64_t* bytes = nullptr, double* latency_us = nullptr) const;
  bool has_broadcast_source() const { return broadcast_ != nullptr; }

 private:
  struct BroadcastSource {
    std::shared_ptr<const PartitionedValue> operand;
    std::vector<int64_t> dims;  // operand dim i is result dim dims[i]
  };
  // The operand's target sharding (`operand_target`) and the result's sharding with the dims the
  // broadcast adds unsplit (`wide`), or false when the rebroadcast does not apply to `target`.
  bool RebroadcastShardings(const HloSharding& target, HloSharding* operand_target, HloSharding* wide) const;
  // The rebroadcast's cost (ReshardCost units), kImpossibleCost when it does not apply.
  int64_t RebroadcastCost(const HloSharding& target, int64_t* bytes, double* latency_us) const;
  StatusOr<PartitionedValue> Rebroadcast(const HloSharding& target, std::string_view why) const;

  // Reshard of an array value to a canonical leaf `target`, without the per-computation cache.
  StatusOr<PartitionedValue> ReshardArray(const HloSharding& target, std::string_view why) const;

  Instruction* hlo_ = nullptr;
  Shape global_shape_;
  HloSharding sharding_;
  Emitter* emitter_ = nullptr;
  std::optional<PartialReduction> partial_;
  std::shared_ptr<const BroadcastSource> broadcast_;
};

// Padded per-device shape of `global` under `sharding` (tuples element-wise).
StatusOr<Shape> LocalShape(const Shape& global, const HloSharding& sharding, int64_t num_partitions);
// Element i of a tuple value's sharding (XLA's tuple shardings list every leaf, flattened; a
// leaf sharding stands for all leaves).
HloSharding SubSharding(const Shape& tuple_shape, const HloSharding& sharding, int i);
// The flat tuple sharding of a tuple value from its elements' shardings.
HloSharding JoinTuple(const Shape& tuple_shape, const std::vector<HloSharding>& elements);
// Unknown -> replicated, mesh-axes text -> tiled; tuples element-wise.
StatusOr<HloSharding> CanonicalSharding(const HloSharding& sharding);

// Dry run: the cost of resharding a value of `global` shape from `from` (with `partial`) to `to`:
// the bytes per device it would receive plus one per collective (fewer collectives win ties);
// kImpossibleCost when it cannot be done. `bytes` (optional) gets the bytes alone, `latency_us`
// (optional) the collectives' fixed costs (MachineModel::LatencyUs).
int64_t ReshardCost(ModuleState& state, const Shape& global, const HloSharding& from,
                    const std::optional<PartialReduction>& partial, const HloSharding& to,
                    int64_t* bytes = nullptr, double* latency_us = nullptr);
inline constexpr int64_t kImpossibleCost = int64_t{1} << 60;

// The decisions ModuleState::reshard_memo remembers, and the key of one for a value of `global`
// (array) shape on the state's current mesh.
enum ReshardDecisionKind { kCostDecision = 1, kRouteDecision = 2, kLocalSliceDecision = 3 };
ReshardKey MakeReshardKey(ReshardDecisionKind kind, const ModuleState& state, const Shape& global,
                          const HloSharding& from, const std::optional<PartialReduction>& partial,
                          const HloSharding& to);

}  // namespace xs::spmd

#endif  // XSHARD_SPMD_PARTITIONED_VALUE_H_
