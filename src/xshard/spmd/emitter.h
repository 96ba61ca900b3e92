// Emitter: adds instructions to one computation of the SPMD module being built (every new
// instruction's shape is checked by shape inference; collectives by the final Verify), keeps the
// per-computation caches (partition-id, per-partition offsets) and records each collective it
// inserts. A scratch emitter
// builds into a throw-away computation and only sums collective costs: the partitioner dry-runs
// candidate plans with it to pick the cheapest. ModuleState holds what all emitters of one
// partitioning share.
#ifndef XSHARD_SPMD_EMITTER_H_
#define XSHARD_SPMD_EMITTER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "xshard/ir/module.h"
#include "xshard/sharding/tile_mesh.h"
#include "xshard/spmd/cost_model.h"
#include "xshard/spmd/report.h"
#include "xshard/spmd/shard_layout.h"

namespace xs {
struct PropagationResult;
}  // namespace xs

namespace xs::spmd {

// What a reshard decision depends on besides the partition count: the value's global shape, its
// sharding and pending partial-reduction axes, the target, and the mesh the axes refer to (its
// TileMesh::Signature). `kind` names the decision (the caller's numbering).
struct ReshardKey {
  int kind = 0;
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  HloSharding from, to;
  std::optional<std::vector<int>> partial;
  std::vector<int64_t> mesh;
  friend bool operator==(const ReshardKey&, const ReshardKey&) = default;
};
struct ReshardKeyHash {
  size_t operator()(const ReshardKey& k) const;
};
// A memoized decision: dry-run cost, bytes and fixed costs, the chosen route, or a local slice's geometry.
struct ReshardDecision {
  int64_t cost = 0, bytes = 0;
  double latency_us = 0;
  int route = -1;
  bool ok = false;
  std::vector<int64_t> needed;  // local slice: padded buffer dims the slice needs
};

// State shared by every emitter of one Partition() call.
struct ModuleState {
  Module* module = nullptr;  // the SPMD module under construction
  int64_t num_partitions = 1;
  TileMesh mesh;
  PartitionReport report;
  int64_t next_channel_id = 1;
  const Instruction* cause = nullptr;  // the global instruction being partitioned
  // PartitionOptions::windowed_einsum_threshold_bytes (-1: off).
  int64_t windowed_einsum_threshold_bytes = -1;
  // PartitionOptions::machine: what plans are scored with.
  MachineModel machine;
  // Propagation's record of the global module (its per-value axes views on `mesh`),
  // when propagation ran on it; nullptr otherwise.
  const PropagationResult* propagated = nullptr;
  std::map<std::pair<std::string, DType>, Computation*> reducers;
  std::unordered_map<const Computation*, Computation*> clones;
  // Reshard decisions are pure functions of their key, and a module repeats the same few
  // (shape, sharding, target) triples, so each is worked out (O(N) host work) once.
  std::unordered_map<ReshardKey, ReshardDecision, ReshardKeyHash> reshard_memo;
  // GroupsOverAxes results by (mesh signature, axes): the explicit lists are O(N) to build.
  std::map<std::pair<std::vector<int64_t>, std::vector<int>>, ReplicaGroups> groups_over_axes;

  // A scalar reducer computation "(x, y) -> x <op> y" in the SPMD module (one per op and type).
  Computation* Reducer(Opcode op, DType dtype);
  // A verbatim copy of a global computation (reducers, comparators, scatter updates) in the SPMD
  // module, with its callees; shardings dropped. Copied once.
  Computation* Clone(const Computation& global);
  std::string CauseName() const;
};

class Emitter {
 public:
  // Emits into `computation` (owned by state->module).
  Emitter(ModuleState* state, Computation* computation);
  // A scratch emitter: owns a detached computation; collectives are costed, not recorded.
  static std::unique_ptr<Emitter> Scratch(ModuleState* state);
  ~Emitter();
  Emitter(const Emitter&) = delete;
  Emitter& operator=(const Emitter&) = delete;

  ModuleState& state() const { return *state_; }
  const TileMesh& mesh() const { return state_->mesh; }
  int64_t num_partitions() const { return state_->num_partitions; }
  Computation* computation() const { return computation_; }
  bool scratch() const { return owned_ != nullptr; }
  // Bytes received per device by the collectives emitted so far (plus 1 per collective, so that
  // fewer collectives win ties).
  int64_t cost() const { return cost_; }
  // Bytes received per device by the collectives emitted so far.
  int64_t bytes() const { return bytes_; }
  // The fixed costs (MachineModel::LatencyUs) of the collectives emitted so far, in us.
  double latency_us() const { return latency_us_; }

  // Any instruction; checks `shape` against shape inference (XS_CHECK: a partitioner bug).
  Instruction* Add(Opcode opcode, Shape shape, std::vector<Instruction*> operands,
                   Attributes attrs = {}, std::vector<CalledComputation> calls = {},
                   std::string name = "");
  // Adds a prepared instruction (e.g. a clone of a global one with local operands), checked.
  Instruction* AddInstruction(std::unique_ptr<Instruction> inst);
  // Shape inference check only: OK when `inst` (detached, operands set) would be accepted.
  static Status CheckShape(const Instruction& inst);
  // A detached parameter for dry runs (scratch emitters only).
  Instruction* ScratchParameter(const Shape& shape);

  Instruction* PartitionId();
  Instruction* Constant(Array value);
  Instruction* Scalar(DType dtype, double value);
  Instruction* ZeroOf(DType dtype) { return Scalar(dtype, 0); }
  // This partition's entry of `values` (one per partition) as an s32 scalar, cached: a constant
  // when all are equal; arithmetic on partition-id when the values are linear in the mesh axis
  // indices (AffineOverMesh); else table[partition-id] (dynamic-slice of a constant table).
  // O(N) host work: hot paths use the layout-based forms below.
  Instruction* PerPartition(const std::vector<int64_t>& values);
  // `e` evaluated at this partition's id, as an s32 scalar (cached).
  Instruction* Evaluate(const PartitionExpr& e);
  // Where this partition's piece of `layout` starts along d, as an s32 scalar: arithmetic on
  // partition-id for iota tile assignments (TileIndexExpr), so the program stays O(1) in the
  // partition count; a per-partition table only for explicit device lists without an iota form.
  Instruction* TileStart(const ShardLayout& layout, int d);
  // by_tile[tile index along d of this partition] as an s32 scalar: a constant, arithmetic when
  // the values step evenly, else a table with one entry per tile (not per partition).
  Instruction* PerTile(const ShardLayout& layout, int d, const std::vector<int64_t>& by_tile);

  Instruction* Reshape(Instruction* x, std::vector<int64_t> dims);
  Instruction* Transpose(Instruction* x, std::vector<int64_t> perm);
  Instruction* Slice(Instruction* x, std::vector<int64_t> limits);  // [0:limit] per dim
  Instruction* Slice(Instruction* x, std::vector<int64_t> starts, std::vector<int64_t> limits);
  Instruction* Concatenate(std::vector<Instruction*> pieces, int64_t dim);
  // pad(x, value) with `padding` per dim.
  Instruction* Pad(Instruction* x, Instruction* value, std::vector<PaddingDim> padding);
  Instruction* DynamicSlice(Instruction* x, std::vector<Instruction*> starts,
                            std::vector<int64_t> sizes);
  // Pads the high end of each dim to `dims` with `value` (a scalar of x's type).
  Instruction* PadHigh(Instruction* x, Instruction* value, const std::vector<int64_t>& dims);
  Instruction* Broadcast(Instruction* x, const Shape& shape, std::vector<int64_t> dims);
  Instruction* Iota(DType dtype, std::vector<int64_t> dims, int64_t iota_dim);
  Instruction* Binary(Opcode op, Instruction* a, Instruction* b);
  Instruction* Compare(Instruction* a, Instruction* b, ComparisonDirection dir);
  Instruction* Select(Instruction* pred, Instruction* on_true, Instruction* on_false);
  Instruction* Convert(Instruction* x, DType dtype);
  Instruction* Tuple(std::vector<Instruction*> elements);
  Instruction* GetTupleElement(Instruction* tuple, int64_t index);

  // GroupsOverAxes(mesh(), axes), cached in the module state.
  ReplicaGroups GroupsOver(const std::vector<int>& axes);

  // The reshards already emitted into this computation, so that one value resharded the same
  // way for two users is moved once (XLA's PartitionedHlo reshard cache): `from` (an instruction
  // of this computation) with sharding `from_sharding` and pending partial axes `partial`
  // (nullptr: none) resharded to `to` gave `result` with `result_sharding`. Scratch emitters
  // remember nothing (their dry runs cost each reshard on its own). Instructions are never
  // removed while partitioning, so the pointers stay valid for the emitter's lifetime.
  // Keyed by the value's instruction and global dims (a route may reshard the same instruction
  // as a value of a padded shape: reshard_repad.cc).
  struct CachedReshard {
    std::vector<int64_t> global_dims;
    HloSharding from_sharding;
    std::optional<std::vector<int>> partial;
    HloSharding to;
    Instruction* result = nullptr;
    HloSharding result_sharding;
  };
  const CachedReshard* FindReshard(const Instruction* from, const std::vector<int64_t>& global_dims,
                                   const HloSharding& from_sharding, const std::vector<int>* partial,
                                   const HloSharding& to) const {
    auto [begin, end] = reshards_.equal_range(from);
    for (auto it = begin; it != end; ++it) {
      const CachedReshard& c = it->second;
      if (c.global_dims == global_dims && c.from_sharding == from_sharding && c.to == to &&
          c.partial.has_value() == (partial != nullptr) && (partial == nullptr || *c.partial == *partial)) {
        return &c;
      }
    }
    return nullptr;
  }
  void RememberReshard(const Instruction* from, CachedReshard entry) {
    if (!scratch()) reshards_.emplace(from, std::move(entry));
  }

  // Collectives (channel_id set; all-gather / all-reduce / reduce-scatter use global device ids).
  // `reason` says why, for the report.
  Instruction* AllGather(Instruction* x, int64_t dim, ReplicaGroups groups, std::string reason);
  Instruction* AllReduce(Instruction* x, Computation* reducer, ReplicaGroups groups,
                         std::string reason);
  Instruction* ReduceScatter(Instruction* x, Computation* reducer, int64_t dim,
                             ReplicaGroups groups, std::string reason);
  Instruction* AllToAll(Instruction* x, int64_t dim, ReplicaGroups groups, std::string reason);
  Instruction* CollectivePermute(Instruction* x, std::vector<std::pair<int64_t, int64_t>> pairs,
                                 std::string reason);
  // Records `inst`, a collective of the input program copied into this computation as written
  // (inside a manual region, or on replicated operands), in the report as the program's own
  // (CollectiveRecord::written), with the bytes of the report's ring model on its result shape.
  // Async -start / -done halves are not recorded; scratch emitters record nothing. `in`: the
  // computation holding `inst` when it is not this one (a called computation copied verbatim);
  // a collective already recorded there is not recorded twice.
  void RecordWritten(Instruction* inst, std::string reason, const Computation* in = nullptr);

 private:
  Emitter(ModuleState* state, std::unique_ptr<Computation> owned);
  void Record(Instruction* inst, std::string kind, int64_t bytes, const ReplicaGroups* groups,
              std::string pairs, std::string reason);

  ModuleState* state_;
  std::unique_ptr<Computation> owned_;  // scratch only
  Computation* computation_;
  int64_t cost_ = 0;
  int64_t bytes_ = 0;
  double latency_us_ = 0;
  Instruction* partition_id_ = nullptr;
  Instruction* partition_id_s32_ = nullptr;
  Instruction* Digit(int64_t stride, int64_t size);
  // `base`, or base.N with the smallest free N, as Computation::AddInstruction would pick, but
  // without probing .1, .2, ... from the start for every instruction.
  std::string FreshName(std::string_view base);
  std::map<std::string, int64_t, std::less<>> name_counters_;
  std::map<std::vector<int64_t>, Instruction*> tables_;
  std::map<std::pair<int64_t, int64_t>, Instruction*> digits_;
  std::map<std::pair<int64_t, std::vector<PartitionExpr::Term>>, Instruction*> exprs_;
  std::map<std::pair<DType, double>, Instruction*> scalars_;
  std::unordered_multimap<const Instruction*, CachedReshard> reshards_;
};

}  // namespace xs::spmd

#endif  // XSHARD_SPMD_EMITTER_H_
