// Array-level collectives for one rank: work out the output shape (XLA's rules), allocate it, and
// run the collective through a Communicator. A shape error here aborts the communicator too, so
// the rank's peers fail at once instead of waiting for it.
//
//   XS_ASSIGN_OR_RETURN(Array sum, AllReduce(comm, CollectiveCall(rank, "all-reduce", 1),
//                                           DeviceGroups::All(comm.num_ranks()), x,
//                                           ReductionKind::kSum));
#ifndef XSHARD_COMM_COLLECTIVES_H_
#define XSHARD_COMM_COLLECTIVES_H_

#include <span>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/replica_groups.h"

namespace xs {

// Concatenation along `dim` of the group's operands: f32[2,3] over a group of 4 along dim 0 gives
// f32[8,3].
StatusOr<Array> AllGather(Communicator& comm, const CollectiveCall& call,
                          const DeviceGroups& groups, const Array& x, int dim);
// Element-wise reduction over the group; same shape as x.
StatusOr<Array> AllReduce(Communicator& comm, const CollectiveCall& call,
                          const DeviceGroups& groups, const Array& x, ReductionKind reduction);
// The reduction's piece `i` along `dim` for the group member at position i: f32[8,3] over 4 along
// dim 0 gives f32[2,3].
StatusOr<Array> ReduceScatter(Communicator& comm, const CollectiveCall& call,
                              const DeviceGroups& groups, const Array& x, int dim,
                              ReductionKind reduction);
// Split along split_dim, exchange, concatenate along concat_dim.
StatusOr<Array> AllToAll(Communicator& comm, const CollectiveCall& call,
                         const DeviceGroups& groups, const Array& x, int split_dim,
                         int concat_dim);
// Tuple all-to-all: xs[j] goes to group member j; result[i] came from member i.
StatusOr<std::vector<Array>> AllToAllTuple(Communicator& comm, const CollectiveCall& call,
                                           const DeviceGroups& groups,
                                           std::span<const Array> xs);
// The source's x for a target of a pair, zeros for every other rank.
StatusOr<Array> CollectivePermute(Communicator& comm, const CollectiveCall& call,
                                  const PermutePairs& pairs, const Array& x);
// The group's first member's x; zeros for ranks in no group.
StatusOr<Array> CollectiveBroadcast(Communicator& comm, const CollectiveCall& call,
                                    const DeviceGroups& groups, const Array& x);

}  // namespace xs

#endif  // XSHARD_COMM_COLLECTIVES_H_
