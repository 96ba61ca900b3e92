// Common subexpression elimination: identical instructions computed twice.
#ifndef XSHARD_PASSES_CSE_H_
#define XSHARD_PASSES_CSE_H_

#include "xshard/ir/module.h"

namespace xs {

// Within each computation, replaces an instruction by an earlier one with the same opcode,
// shape, operands, attributes (constants: the same literal), called computations (the same one,
// or two that compute the same function instruction by instruction: JAX writes a reducer per
// reduce) and sharding.
// Parameters, side-effecting ops, random number ops and async collectives are never merged; two
// synchronous collectives (all-reduce, all-gather, reduce-scatter, all-to-all,
// collective-permute) are when their operands and attributes, channel included, are equal: every
// device runs both on the same values (a shard_map that takes `pmax` of one value twice).
// The duplicates are left without users (run RemoveDeadCode afterwards). Returns true when
// anything was merged. Example: two `partition-id()` become one.
struct CseOptions {
  // Leaves values computed from constants and iotas alone (an iota, a constant, and the
  // broadcasts, converts, reshapes, transposes, slices and elementwise ops of such values only):
  // on the global module, before propagation, two uses of one such value may want different
  // shardings, and each copy is computed locally in its own, where one shared value would be
  // moved for one of them (XLA's propagation keeps such copies apart before its CSE for the same
  // reason).
  bool keep_generated_values = false;
};
StatusOr<bool> EliminateCommonSubexpressions(Module& module, const CseOptions& options = {});

}  // namespace xs

#endif  // XSHARD_PASSES_CSE_H_
