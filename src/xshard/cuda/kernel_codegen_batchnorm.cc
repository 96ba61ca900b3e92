// Kernels for batch-norm-training, batch-norm-inference and batch-norm-grad. Not generated yet: every call is Unimplemented.
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {

StatusOr<std::vector<GeneratedKernel>> GenerateBatchNormKernels(const Instruction& inst) {
  return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), ") has no generated kernel");
}

}  // namespace xs::cuda
