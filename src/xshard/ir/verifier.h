// The HLO verifier: structural invariants (entry, roots, parameters, names, operands, no cycles,
// called computations) and, for every instruction, that its declared shape is the one shape
// inference gives (layouts ignored) and that its sharding fits its shape. Mirrors XLA's
// HloVerifier (xla/service/hlo_verifier.cc) without layout checks.
//
// Errors name the place and the rule, e.g.
//   instruction 'dot.3' (dot): lhs contracting dim 2 is out of range for f32[4,16]
//   instruction 'add.1' (add) in computation 'body': declared shape f32[8] differs from the
//     inferred shape f32[4] (operands: f32[4] x, f32[4] y)
#ifndef XSHARD_IR_VERIFIER_H_
#define XSHARD_IR_VERIFIER_H_

#include <cstdint>

#include "xshard/base/status.h"
#include "xshard/ir/module.h"

namespace xs {

// The deepest nesting of computations Verify accepts (entry -> callee -> its callee ...): passes
// descend into callees recursively, and this bounds their stack use. JAX programs nest a few
// dozen levels at most.
inline constexpr int64_t kMaxCallDepth = 256;

// Verifies the whole module; returns the first problem found (computations in post order, callees
// first; instructions in text order). Shardings are validated against the module's
// num_partitions when it is above 1, else each leaf against its own device count.
Status Verify(const Module& module);

// Verifies one computation's structure and instructions (`module` gives num_partitions and owns
// the called computations; may be null for a detached computation).
Status VerifyComputation(const Computation& computation, const Module* module);

// Checks one instruction: operand count, shape inference against the declared shape, sharding.
// The message is prefixed with "instruction '<name>' (<opcode>): ".
Status VerifyInstruction(const Instruction& inst, int64_t num_partitions);

}  // namespace xs

#endif  // XSHARD_IR_VERIFIER_H_
