// Constant expressions split per use before sharding propagation.
#ifndef XSHARD_PASSES_CONSTANT_SPLIT_H_
#define XSHARD_PASSES_CONSTANT_SPLIT_H_

#include "xshard/ir/module.h"

namespace xs {

// Gives every use of a constant expression its own copy, as Shardy's constant splitter does
// before propagation (JAX's default partitioner; XLA's GSPMD pipeline splits literal constants
// the same way): a value computed only from constants and iotas (a constant, an iota, and the
// broadcasts, reshapes, slices and side-effect-free elementwise ops of such values), and any
// broadcast (of a scalar, or of an array: only the broadcast is copied), is cloned, with what it
// is computed from, for each instruction outside such expressions that reads it. One shared copy
// would otherwise carry the sharding one user wants to the others (JAX writes one broadcast of 0
// for a whole program's comparisons with 0; global CSE merges the broadcasts of a weight that
// vmap wrote for each use, and one split for a dot then had to be resharded for a transpose):
// each copy is now computed locally in the sharding of its own user, and the CSE after
// partitioning merges the copies that end up alike.
//
// Scalars are not copied (they are never sharded), nor is anything with control edges, nor a
// constant whose literal is over 1 MiB (what is computed from it is, reading the one literal). The
// originals left without users are removed. Returns true when anything was copied.
// Example: `z = broadcast(0); a = compare(x, z); b = compare(y, z)` becomes
// `z = broadcast(0); a = compare(x, z); z.1 = broadcast(0); b = compare(y, z.1)`.
StatusOr<bool> SplitConstantExpressions(Module& module);

}  // namespace xs

#endif  // XSHARD_PASSES_CONSTANT_SPLIT_H_
