// Call inlining: every `call` whose callee can be partitioned as part of its caller is replaced by
// a copy of the callee's body, as XLA inlines calls before it propagates shardings and partitions.
#ifndef XSHARD_PASSES_CALL_INLINE_H_
#define XSHARD_PASSES_CALL_INLINE_H_

#include "xshard/ir/module.h"

namespace xs {

// Replaces each `call` instruction, in every computation the entry reaches, by a copy of its
// callee's instructions (the callee's parameters become the call's operands; users of the call
// read the copy of the callee's root). Nested calls are inlined too (callees first). A callee
// called from several places is copied at each; callees no longer called by anything are removed
// from the module. Copies keep the callee's instruction names (made unique in the caller) and
// shardings; the call's own sharding moves to the copy of the root.
//
// Left as calls (partitioned as called computations): calls with control edges, calls on another
// execution thread, calls whose callee is, or calls, a manual (shard_map) region (any manual
// sharding inside it or on the call: the partitioner keeps those boundaries), calls inside such a
// region (a body, a loop in a body, what they call: their values are manual by position, which a
// copy elsewhere would lose), and calls with a
// sharding whose callee root is a parameter or carries a different sharding (the call is then the
// only place that sharding is written). Returns true when anything was inlined.
StatusOr<bool> InlineCalls(Module& module);

// Gives every control-flow computation the entry reaches (a while body or condition, a
// conditional branch, a called computation) one call site: a computation called from a second
// place is copied for it, with its own callees copied in turn, as XLA's FlattenCallGraph does
// before propagation. Two loops running one body (JAX writes a threefry loop once and calls it
// for every random draw) then take each its own shardings, instead of one loop's reshards
// around the other. Computations applied per element (reducers, comparators, scatter
// combiners) stay shared, and so do the sites left when the copies would pass four times the
// module's instructions or computations (nested shared loops multiply them). Returns true when
// anything was copied.
StatusOr<bool> FlattenCallGraph(Module& module);

}  // namespace xs

#endif  // XSHARD_PASSES_CALL_INLINE_H_
