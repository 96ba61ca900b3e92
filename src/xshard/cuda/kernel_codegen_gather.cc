// gather and scatter kernels.
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {

StatusOr<GeneratedKernel> GenerateGatherKernel(const Instruction& inst) {
  return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), ") has no generated kernel");
}

StatusOr<std::vector<GeneratedKernel>> GenerateScatterKernels(const Instruction& inst, bool) {
  return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), ") has no generated kernel");
}

}  // namespace xs::cuda
