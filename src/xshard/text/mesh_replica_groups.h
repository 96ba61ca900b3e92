// The mesh-axes form of replica_groups that XLA (and JAX 0.10's compiled HLO) prints, e.g.
//   replica_groups=mesh['x'=4,'y'=2] {'y'}         -> {0,1},{2,3},{4,5},{6,7}
//   replica_groups=mesh['x'=4,'y'=2] {'x'}         -> {0,2,4,6},{1,3,5,7}
//   replica_groups=mesh['a'=8] {'a':(2)2}          -> {0,2},{1,3},{4,6},{5,7}
//   replica_groups=mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'y'}      -> {0,2},{1,3}
//   replica_groups=mesh['x'=2,'y'=4], device_ids=([2,2,2]T(0,2,1)) {'y':(2)2}
//                                                  -> {0,2},{1,3},{4,6},{5,7}
// expanded to explicit groups as XLA's MeshAxesReplicaGroupList does: the mesh's ids (iota, or
// `, device_ids=(...)` after the axes: a list, or an iota `[reshape]T(perm)`) reshaped to the axis
// sizes, each axis named in the braces split into its sub-axes `name:(pre_size)size` (pre_size:
// the product of the axis's pieces before it), the named (sub-)axes moved last in the order given,
// one group per index of the remaining ones. The parser reads it like the other forms, so every
// consumer sees explicit groups.
#ifndef XSHARD_TEXT_MESH_REPLICA_GROUPS_H_
#define XSHARD_TEXT_MESH_REPLICA_GROUPS_H_

#include "xshard/base/status.h"
#include "xshard/ir/attributes.h"
#include "xshard/text/lexer.h"

namespace xs {

// Parses the mesh-axes value of replica_groups= at the lexer position (at `mesh`) and leaves the
// lexer after its closing '}'. Returns the explicit groups, with `mesh_form` holding the text as
// written (printed back verbatim). Errors are parse errors at the offending character that name
// the rule and the fix: an axis the mesh lacks, an axis (or sub-axis) named twice or overlapping,
// a sub-axis whose pre_size * size does not divide its axis, device_ids that are not a
// permutation of 0..N-1, a mesh of more than kMaxDevices (base/limits.h) devices.
StatusOr<ReplicaGroups> ParseMeshAxesReplicaGroups(Lexer& lex);

}  // namespace xs

#endif  // XSHARD_TEXT_MESH_REPLICA_GROUPS_H_
