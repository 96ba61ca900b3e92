// shard_map: run a per-device function on each device's local shards and get global sharded
// arrays back, with JAX's named-axis collectives inside (jax.shard_map semantics, checked against
// JAX 0.10). Example, seed 003's matmul_basic on a 4x2 mesh ('x', 'y'):
//
//   XS_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create({"x", "y"}, {4, 2}));
//   XS_ASSIGN_OR_RETURN(PartitionSpec pxy, PartitionSpec::Parse("P('x', 'y')"));
//   XS_ASSIGN_OR_RETURN(PartitionSpec py, PartitionSpec::Parse("P('y', None)"));
//   XS_ASSIGN_OR_RETURN(PartitionSpec px, PartitionSpec::Parse("P('x', None)"));
//   XS_ASSIGN_OR_RETURN(ShardMapped f, ShardMap(mesh, {pxy, py}, {px},
//       [](ShardMapContext& ctx, std::vector<Array> in) -> StatusOr<std::vector<Array>> {
//         Array partial = MatMul(in[0], in[1]);            // f32[2,8] @ f32[8,4]
//         XS_ASSIGN_OR_RETURN(Array c, ctx.Psum(partial, "y"));
//         return std::vector<Array>{std::move(c)};        // f32[2,4] on each device
//       }));
//   XS_ASSIGN_OR_RETURN(std::vector<ShardedArray> c, f(*client, {a, b}));  // c[0]: f32[8,4]
//
// Collectives over several axes order the group by the axes as given, major to minor
// (axis_index(('y','x')) = y * size(x) + x), except Ppermute, whose indices count devices in mesh
// order whatever the order given (as JAX lowers ppermute).
#ifndef XSHARD_SHARD_MAP_SHARD_MAP_H_
#define XSHARD_SHARD_MAP_SHARD_MAP_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/runtime/client.h"
#include "xshard/comm/communicator.h"
#include "xshard/shard_map/sharded_array.h"
#include "xshard/sharding/mesh.h"
#include "xshard/sharding/partition_spec.h"

namespace xs {

// One mesh axis name ("x") or several ({"x", "y"}), as a collective's axis_name.
class AxisNames {
 public:
  AxisNames(const char* name) : names_{name} {}                  // NOLINT: implicit by design
  AxisNames(std::string name) : names_{std::move(name)} {}       // NOLINT
  AxisNames(std::initializer_list<std::string> names) : names_(names) {}  // NOLINT
  AxisNames(std::vector<std::string> names) : names_(std::move(names)) {}  // NOLINT
  const std::vector<std::string>& names() const { return names_; }
  // "'x'" or "('x', 'y')".
  std::string ToString() const;

 private:
  std::vector<std::string> names_;
};

// An asynchronous collective in flight (XLA's -start / -done pair), from a ShardMapContext's
// *Start method: it owns the input and the output buffer until ShardMapContext::Done.
class PendingCollective {
 public:
  PendingCollective() = default;
  PendingCollective(PendingCollective&&) noexcept = default;
  PendingCollective& operator=(PendingCollective&&) noexcept = default;
  bool active() const { return active_; }

 private:
  friend class ShardMapContext;
  uint64_t handle_ = 0;
  bool active_ = false;
  Array in_, out_;
};

// What fn can do on its device. Every device must make the same collective calls in the same
// order (the collective's channel id is its position in that order).
class ShardMapContext {
 public:
  ShardMapContext(const Mesh& mesh, int64_t device, Communicator& comm, int64_t intra_op_threads);
  ~ShardMapContext();

  const Mesh& mesh() const { return mesh_; }
  // The device this instance runs on (a mesh device id).
  int64_t device() const { return device_; }
  // Threads a kernel may use inside fn (cores / devices).
  int64_t intra_op_threads() const { return intra_op_threads_; }

  // This device's index along `axes` (row-major over the axes as given).
  StatusOr<int64_t> AxisIndex(const AxisNames& axes);
  // Product of the sizes of `axes`.
  StatusOr<int64_t> AxisSize(const AxisNames& axes);

  StatusOr<Array> Psum(const Array& x, const AxisNames& axes);
  StatusOr<Array> Pmax(const Array& x, const AxisNames& axes);
  StatusOr<Array> Pmin(const Array& x, const AxisNames& axes);
  // Psum divided by the axis size; integer inputs give f32 (as JAX's true division).
  StatusOr<Array> Pmean(const Array& x, const AxisNames& axes);
  // Gathers the group's x: stacked along a new dim `axis` (tiled = false; 0 <= axis <= rank) or
  // concatenated along dim `axis` (tiled = true; 0 <= axis < rank). Negative axes count from the
  // end.
  StatusOr<Array> AllGather(const Array& x, const AxisNames& axes, int axis = 0,
                            bool tiled = false);
  // The psum, scattered along `scatter_dimension`: the member at index i gets piece i; without
  // tiled, x.dims[scatter_dimension] must equal the axis size and the dim is removed.
  StatusOr<Array> PsumScatter(const Array& x, const AxisNames& axes, int scatter_dimension = 0,
                              bool tiled = false);
  // perm = (source index, destination index) pairs over the axes; indices no pair sends to get
  // zeros. Sources and destinations must be unique.
  StatusOr<Array> Ppermute(const Array& x, const AxisNames& axes,
                           const std::vector<std::pair<int64_t, int64_t>>& perm);
  // Splits x along split_axis into axis-size pieces, sends piece j to member j, and joins the
  // received pieces along concat_axis. Without tiled, x.dims[split_axis] must equal the axis size;
  // the split dim disappears and a new dim of that size appears at concat_axis.
  StatusOr<Array> AllToAll(const Array& x, const AxisNames& axes, int split_axis,
                           int concat_axis, bool tiled = false);

  // Asynchronous Ppermute (collective-permute-start): the transfer may proceed while this device
  // computes; Done(pending) returns the received array (collective-permute-done). Same
  // arguments and errors as Ppermute. Every device starts and finishes the same calls in the
  // same order; at most 15 may be in flight per device.
  StatusOr<PendingCollective> PpermuteStart(Array x, const AxisNames& axes,
                                            const std::vector<std::pair<int64_t, int64_t>>& perm);
  // Asynchronous tiled AllGather (all-gather-start): x concatenated over the group along dim
  // `axis`, returned by Done. Same errors as AllGather with tiled = true.
  StatusOr<PendingCollective> AllGatherStart(Array x, const AxisNames& axes, int axis);
  // Completes `pending` (once; it is inactive afterwards) and returns its result.
  StatusOr<Array> Done(PendingCollective& pending);

 private:
  // Ppermute's index pairs over `axes` as device pairs of every group, validated.
  StatusOr<PermutePairs> PermutePairsOf(const AxisNames& axes,
                                        const std::vector<std::pair<int64_t, int64_t>>& perm);
  struct Axes;  // resolved groups of one axis tuple
  StatusOr<const Axes*> Resolve(const AxisNames& axes, std::string_view op);
  StatusOr<Array> Reduce(const Array& x, const AxisNames& axes, ReductionKind kind,
                         std::string_view op);
  CollectiveCall Call(std::string_view op);
  // Aborts the run with `status` (so the other devices do not wait) and returns it.
  Status Fail(Status status);

  const Mesh& mesh_;
  int64_t device_;
  Communicator& comm_;
  int64_t intra_op_threads_;
  int64_t channel_ = 0;
  std::map<std::vector<std::string>, std::unique_ptr<Axes>> axes_;
};

using ShardMapFn =
    std::function<StatusOr<std::vector<Array>>(ShardMapContext& ctx, std::vector<Array> args)>;

// A function mapped over a mesh; call it with global arrays.
class ShardMapped {
 public:
  // Splits each argument by its in_spec (dims must divide evenly, as JAX requires), runs fn once
  // per mesh device (mesh device d on client device d), and assembles each result by its
  // out_spec: its dims are fn's local dims times the sizes of the mesh axes the spec names; mesh
  // axes the spec leaves out mean the result is replicated over them. Errors: argument count,
  // ranks, uneven dims, fn's results not matching out_specs (count, rank, or differing shapes
  // across devices), and any device's failure, which stops every device.
  StatusOr<std::vector<ShardedArray>> operator()(Client& client,
                                                 const std::vector<Array>& args) const;
  // The same with arguments already on the devices; shards whose sharding is the in_spec's are
  // used as they are, others are resharded through the host.
  StatusOr<std::vector<ShardedArray>> operator()(Client& client,
                                                 const std::vector<ShardedArray>& args) const;

  const Mesh& mesh() const { return mesh_; }

 private:
  friend StatusOr<ShardMapped> ShardMap(Mesh mesh, std::vector<PartitionSpec> in_specs,
                                        std::vector<PartitionSpec> out_specs, ShardMapFn fn);
  ShardMapped() = default;
  StatusOr<std::vector<ShardedArray>> Run(Client& client,
                                          std::vector<std::vector<Array>> shards) const;

  Mesh mesh_;
  std::vector<NamedSharding> in_, out_;
  ShardMapFn fn_;
};

// Validates the specs against the mesh (axes exist, none used twice in one spec).
StatusOr<ShardMapped> ShardMap(Mesh mesh, std::vector<PartitionSpec> in_specs,
                               std::vector<PartitionSpec> out_specs, ShardMapFn fn);

}  // namespace xs

#endif  // XSHARD_SHARD_MAP_SHARD_MAP_H_
