// sort and top-k kernels.
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {

StatusOr<GeneratedKernel> GenerateSortKernel(const Instruction& inst) {
  return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), ") has no generated kernel");
}

}  // namespace xs::cuda
