// dot and convolution. The rule gives batch, lhs-free, rhs-free and contracting factors (for
// convolutions also feature groups and spatial dims). Every combination of seed 000 falls out
// of the factor plan: batch / free dims sharded -> local dot on the pieces; the contracting dim
// sharded on both sides -> each device holds partial sums, combined by an all-reduce over those
// mesh axes, or a reduce-scatter when the output wants a dim sharded on the same axes; operands
// that disagree -> the cheaper operand (or the result) is resharded. Padding of uneven
// contracting dims is zeroed on both operands first. With the windowed einsum option, eligible
// dots become a collective-permute loop instead (windowed_einsum.h).
#include "xshard/spmd/handlers.h"
#include "xshard/spmd/window_halo.h"
#include "xshard/spmd/windowed_einsum.h"

namespace xs::spmd::internal {
namespace {

RuleConfig SumOfProducts(const Instruction& inst, Context& ctx) {
  RuleConfig config;
  const DType dtype = inst.shape().dtype();
  ModuleState* state = &ctx.state();
  config.reducer = [state, dtype] {
    return state->Reducer(dtype == DType::kPred ? Opcode::kOr : Opcode::kAdd, dtype);
  };
  return config;
}

}  // namespace

Status HandleDot(const Instruction& inst, Context& ctx) {
  XS_ASSIGN_OR_RETURN(bool windowed, TryWindowedEinsum(inst, ctx));
  if (windowed) return OkStatus();
  return PartitionByRule(inst, ctx, SumOfProducts(inst, ctx));
}

Status HandleConvolution(const Instruction& inst, Context& ctx) {
  RuleConfig config = SumOfProducts(inst, ctx);
  config.halo_windows = true;
  XS_ASSIGN_OR_RETURN(bool reduced, TryWindowReductionConv(inst, ctx, config));
  if (reduced) return OkStatus();
  return PartitionByRule(inst, ctx, config);
}

}  // namespace xs::spmd::internal
