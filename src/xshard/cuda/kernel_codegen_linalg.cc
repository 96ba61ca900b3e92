// Kernels for cholesky, triangular-solve and the lapack_?potrf / ?getrf / ?trsm custom-calls. Not generated yet: every call is Unimplemented.
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {

StatusOr<std::vector<GeneratedKernel>> GenerateLinalgKernels(const Instruction& inst) {
  return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), ") has no generated kernel");
}

}  // namespace xs::cuda
