// Communicator: the interface every collective goes through, called once per participating rank
// (a device thread, later an MPI process or a GPU stream), on raw device memory: a pointer, a
// dtype and dims. Semantics are XLA's (see each method); the in-process implementation is
// InProcessCommunicator, and an MPI or NCCL one implements the same calls.
//
// Contract for every call: every rank of the communicator makes the same sequence of collective
// calls (a rank in a group of one still calls). Ranks whose calls disagree (another op, channel,
// groups, dtype, shape or algorithm) all fail with an error naming both sides; ranks that do not
// arrive within the timeout make every waiting rank fail with an error naming the op, its channel
// and the ranks that arrived. Nothing ever blocks forever.
#ifndef XSHARD_COMM_COMMUNICATOR_H_
#define XSHARD_COMM_COMMUNICATOR_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/core/dtype.h"
#include "xshard/comm/replica_groups.h"

namespace xs {

// Element-wise reducers of all-reduce / reduce-scatter. and / or are logical for pred and bitwise
// for integers; floats take sum, product, min, max (min / max propagate NaN like HLO's maximum);
// complex types take sum and product.
enum class ReductionKind { kSum, kProduct, kMin, kMax, kAnd, kOr };
std::string_view ReductionKindName(ReductionKind kind);  // "sum", "product", "min", ...
StatusOr<ReductionKind> ParseReductionKind(std::string_view name);

// How the in-process communicator moves data. kDirect (default): one copy, each rank reads what it
// needs from its peers' buffers after a rendezvous. kRing: n-1 neighbour steps per phase.
// kRecursiveDoubling: log2(n) pairwise steps (recursive halving for reduce-scatter); groups whose
// size is not a power of two fall back to kRing. All three give identical results up to the
// order in which floating-point values are combined.
enum class CollectiveAlgorithm { kDirect, kRing, kRecursiveDoubling };
std::string_view CollectiveAlgorithmName(CollectiveAlgorithm a);  // "direct", "ring", ...
// Accepts "direct", "ring", "recursive-doubling" (or "rd").
StatusOr<CollectiveAlgorithm> ParseCollectiveAlgorithm(std::string_view name);

// The collective kinds, with XLA's op names.
enum class CollectiveKind {
  kAllGather, kAllReduce, kReduceScatter, kAllToAll, kCollectivePermute, kCollectiveBroadcast,
  kBarrier
};
std::string_view CollectiveKindName(CollectiveKind kind);  // "all-gather", ...

// Read-only device memory of one array: `data` holds product(dims) elements of `dtype`, row-major.
struct ConstBufferView {
  const std::byte* data = nullptr;
  DType dtype = DType::kF32;
  std::span<const int64_t> dims;

  static ConstBufferView Of(const Array& a) { return {a.data(), a.dtype(), a.dims()}; }
  int64_t num_elements() const;
  int64_t byte_size() const { return num_elements() * DTypeSize(dtype); }
  std::string ShapeString() const;  // "f32[4,8]"
};

// Writable device memory of one array.
struct BufferView {
  std::byte* data = nullptr;
  DType dtype = DType::kF32;
  std::span<const int64_t> dims;

  static BufferView Of(Array& a) { return {a.data(), a.dtype(), a.dims()}; }
  ConstBufferView AsConst() const { return {data, dtype, dims}; }
  int64_t num_elements() const { return AsConst().num_elements(); }
  int64_t byte_size() const { return AsConst().byte_size(); }
};

// Who is calling and what to call the op in messages: CollectiveCall(rank, "psum", 3).
struct CollectiveCall {
  CollectiveCall() = default;
  explicit CollectiveCall(int64_t rank, std::string_view op_name = "", int64_t channel_id = 0)
      : rank(rank), op_name(op_name), channel_id(channel_id) {}

  int64_t rank = 0;              // the calling participant, 0 <= rank < num_ranks()
  std::string_view op_name;      // e.g. "all-reduce", "psum", "%all-gather.3"; "" = the kind name
  int64_t channel_id = 0;        // XLA's channel_id; shown in errors
  // Overrides the communicator's default algorithm for this call (every rank must agree).
  std::optional<CollectiveAlgorithm> algorithm;
  // Non-null: only start the call (XLA's -start half) and store a handle here for Finish. The
  // communicator may read `in` and write `out` until Finish(rank, handle) returns, so the caller
  // keeps both alive and leaves `in` unchanged until then. A communicator that cannot overlap
  // runs the whole call at once and stores 0.
  uint64_t* async_handle = nullptr;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int64_t num_ranks() const = 0;

  // Within each group, out = concatenation along `dim` of every member's `in`, in group order.
  // out.dims = in.dims with dims[dim] * group size.
  virtual Status AllGather(const CollectiveCall& call, const DeviceGroups& groups,
                           ConstBufferView in, BufferView out, int dim) = 0;
  // Within each group, out = element-wise reduction of the members' `in` (same dims as in).
  virtual Status AllReduce(const CollectiveCall& call, const DeviceGroups& groups,
                           ConstBufferView in, BufferView out, ReductionKind reduction) = 0;
  // Within each group, the element-wise reduction split along `dim` into group-size pieces; the
  // member at position i gets piece i. in.dims[dim] must divide by the group size.
  virtual Status ReduceScatter(const CollectiveCall& call, const DeviceGroups& groups,
                               ConstBufferView in, BufferView out, int dim,
                               ReductionKind reduction) = 0;
  // Each member splits `in` along `split_dim` into group-size pieces and sends piece j to member j;
  // out = the received pieces concatenated along `concat_dim` in sender order.
  virtual Status AllToAll(const CollectiveCall& call, const DeviceGroups& groups,
                          ConstBufferView in, BufferView out, int split_dim,
                          int concat_dim) = 0;
  // Tuple form: ins.size() == outs.size() == group size; ins[j] goes to member j, outs[i] comes
  // from member i. Every element has the same dims and dtype.
  virtual Status AllToAllTuple(const CollectiveCall& call, const DeviceGroups& groups,
                               std::span<const ConstBufferView> ins,
                               std::span<const BufferView> outs) = 0;
  // out = the source's `in` for a rank that is a target of a pair, zeros otherwise.
  virtual Status CollectivePermute(const CollectiveCall& call, const PermutePairs& pairs,
                                   ConstBufferView in, BufferView out) = 0;
  // Within each group, out = the first member's `in`; ranks in no group get zeros.
  virtual Status CollectiveBroadcast(const CollectiveCall& call, const DeviceGroups& groups,
                                     ConstBufferView in, BufferView out) = 0;
  // Returns once every rank has called Barrier (or fails like any collective).
  virtual Status Barrier(const CollectiveCall& call) = 0;

  // Completes a call started with CollectiveCall::async_handle on `rank` (XLA's -done half): on
  // return `out` holds the result and `in` is no longer read. Every started call must be finished
  // exactly once; the ranks of a call may finish their calls in another order than they started
  // them, but all in the same order (as one SPMD program does). Handle 0 is a no-op.
  virtual Status Finish(int64_t rank, uint64_t handle) {
    (void)rank;
    (void)handle;
    return OkStatus();
  }

  // Makes every pending and later call fail with `reason` until Reset(); the first reason wins.
  // A runner calls it when one rank's program fails, so that its peers do not wait for it.
  virtual void Abort(const Status& reason) = 0;
  // Declares that `rank` will make no more calls before Reset(), so peers waiting for it fail at
  // once instead of at the timeout.
  virtual void Leave(int64_t rank) = 0;
  // Starts a fresh run: clears the abort state, the call counters and departures. Only while no
  // rank is inside a call.
  virtual void Reset() = 0;
};

}  // namespace xs

#endif  // XSHARD_COMM_COMMUNICATOR_H_
