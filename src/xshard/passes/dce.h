// Dead code elimination: instructions whose values nothing uses, and computations nothing calls.
#ifndef XSHARD_PASSES_DCE_H_
#define XSHARD_PASSES_DCE_H_

#include <unordered_set>

#include "xshard/ir/module.h"

namespace xs {

// Removes, in every computation, instructions that have no users and are neither the root, a
// parameter, nor side-effecting (custom-calls marked custom_call_has_side_effect, send / recv,
// infeed / outfeed, rng state, ops with control edges), then computations the entry does not
// reach. Returns true when anything was removed. Collectives without users are removed: every
// device runs the same program, so all of them drop it.
StatusOr<bool> RemoveDeadCode(Module& module);

// The computations `root` reaches through the computations its instructions call (itself
// included); the set RemoveDeadCode keeps when `root` is the entry.
std::unordered_set<Computation*> ReachableComputations(Computation* root);

}  // namespace xs

#endif  // XSHARD_PASSES_DCE_H_
