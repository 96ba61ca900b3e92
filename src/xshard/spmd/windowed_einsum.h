// Windowed einsum (XLA's collective matmul loop): a dot whose operand would be all-gathered, or
// whose result would be reduce-scattered, over one group of mesh axes becomes a while loop that
// passes pieces around the group's ring with collective-permute while each step multiplies the
// piece it holds, so communication can overlap compute and the whole gathered operand never exists.
#ifndef XSHARD_SPMD_WINDOWED_EINSUM_H_
#define XSHARD_SPMD_WINDOWED_EINSUM_H_

#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {

// Partitions dot `inst` as a windowed loop when ModuleState::windowed_einsum_threshold_bytes is
// >= 0 and the dot is eligible; returns false, emitting nothing, otherwise (the caller then runs
// PartitionByRule). Eligible (every sharding expressible on the module's tile mesh, no manual
// axes, every dim of both operands and the result divisible by its tile count):
//  - all-gather case: operand W is split along one free (non-contracting, non-batch) dim by mesh
//    axes G that the result does not split that dim by, W splits no other free dim the result
//    leaves whole, and W's global bytes >= threshold. Each of the n = |G| steps multiplies the
//    other operand by the W piece the device holds and writes the result columns it covers
//    (dynamic-update-slice), while the piece moves one place along the ring of G.
//  - reduce-scatter case: both operands split one contracting dim by the same axes G, the result
//    splits one free dim by exactly the axes G (any order), and the result's global bytes >=
//    threshold. Each step computes the partial result block that the accumulator it receives
//    is collecting, adds it, and passes the accumulator on; after n steps each device holds its
//    own fully reduced block.
// The loop runs n - 1 times (a collective-permute and a dot each); the remaining dot step sits
// before (reduce-scatter) or after (all-gather) the loop, so no permute is wasted. Other mesh
// axes may split batch and free dims as the result wants, and contracting dims (the result is
// then all-reduced over those axes). The report lists the loop's permutes with the reason
// "windowed einsum (all-gather of rhs overlapped with 4 dot steps)" or "windowed einsum
// (reduce-scatter of the result overlapped with 4 dot steps)".
StatusOr<bool> TryWindowedEinsum(const Instruction& inst, Context& ctx);

}  // namespace xs::spmd::internal

#endif  // XSHARD_SPMD_WINDOWED_EINSUM_H_
