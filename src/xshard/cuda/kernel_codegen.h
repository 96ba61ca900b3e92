// CUDA C++ kernels generated from the executor's plan: one kernel per fused loop of the fusion
// plan (exec/fusion_plan.h), per single elementwise op, and per shape op (transpose, slice, pad,
// concatenate, broadcast, reverse, iota, dynamic-slice / -update-slice, reduce, reduce-window).
// Shapes, strides and attributes are compiled into the source; the kernel is compiled with
// NVRTC (kernel_source.h) and launched with the geometry returned here. No GPU is needed to
// generate or compile; op semantics are the CPU executor's (kernels/scalar_ops.h: XLA's).
//
// Parameter convention (every generator): the kernel takes ONE parameter by value,
//   struct KernelArgs { void* p[num_pointers]; };
// the device addresses of its buffers, in this order:
//   - fused loop: the fused step's operands (Step::operands order, i.e. FusedValue::input /
//     FusedOp::in[0] of kFill / kGather / FusedReduce::init), then one per FusedLoop::outputs
//     entry in order, then (has_reduce) the reduce's result;
//   - any other op: the instruction's operands in order, then its result (a tuple result, as
//     a variadic reduce's: one pointer per element, in order).
// Rank-0 operands (scalars, start indices, init values) are read from device memory by the
// kernel. Buffers are dense row-major arrays of their shape (layouts are ignored, as on the CPU).
// An output may be the same buffer as an operand of its dtype and dims (in-place elementwise):
// each element is read before it is written, by the same thread.
//
// Numerics: every elementwise op rounds to its result type as the CPU does (f16 / bf16 are
// computed in f32 and rounded to nearest even per op, bit-identical conversions; NVRTC runs with
// --fmad=false). Transcendentals use CUDA's libdevice (within 2 ulp of the CPU's libm). Row
// reduces (warp / block per row) accumulate f16 / bf16 in f32 and combine in a tree, not the
// CPU's order: sums agree within n * eps * sum|x| (eps of the 16-bit type for the CPU's per-step
// rounding, n the reduced count); max / min / and / or / integer reduces are exact. General
// reduces (one thread per output) combine in the CPU's order with its rounding: bit-identical.
#ifndef XSHARD_CUDA_KERNEL_CODEGEN_H_
#define XSHARD_CUDA_KERNEL_CODEGEN_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/cuda/kernel_source.h"

namespace xs {
class Computation;
class Instruction;
struct FusedLoop;
}  // namespace xs

namespace xs::cuda {

// One-dimensional launch: `grid` blocks of `block` threads (grid <= 2^31 - 1), dynamic shared
// memory `shared_bytes`. Kernels loop (grid-stride) over whatever the grid does not cover.
struct LaunchDims {
  int64_t grid = 1;
  int block = 256;
  int64_t shared_bytes = 0;
};

struct GeneratedKernel {
  KernelSource source;    // prelude + body; source.name = "xs_<kind>_<hash of the body>"
  std::string body;       // the kernel without the prelude (CombineKernels)
  LaunchDims launch;
  int num_pointers = 0;   // entries of KernelArgs::p
  // What the generator chose: "elementwise", "elementwise_vec<N>" (N elements per 16-byte access),
  // "reduce_row_warp", "reduce_row_block", "reduce_general", "transpose_tiled", "index_map",
  // "dynamic_update_slice_in_place", "reduce_window", "gather", scatter's combine
  // ("scatter_unique", "scatter_overwrite", "scatter_atomic", "scatter_atomic_cas",
  // "scatter_ordered_windows", "scatter_serial"), "sort_bitonic_shared", "sort_bitonic_index",
  // "sort_ranked_chunks", "topk_chunked", "select_scatter_atomic_cas", "select_scatter_serial",
  // the direct kernels for what cuDNN / cuBLASLt do not take: "conv_direct", "dot_direct";
  // "rng_bit_generator_philox_blocks", "rng_bit_generator_threefry_blocks",
  // "rng_uniform_philox", "rng_normal_philox", "rng_state_per_executable";
  // "linalg_cholesky_shared" / "_global", "linalg_lu_shared" / "_global",
  // "linalg_substitution_shared" / "_global" (the working matrix in shared or global memory);
  // "ragged_dot_tiled", "block_scaled_dot_tiled"; "batch_norm_training_block_per_feature",
  // "batch_norm_grad_block_per_feature"; "scan_thread_per_position"; "fft_shared_radix2",
  // "fft_shared_dft", "fft_slab".
  std::string strategy;
};

// Host side of the parameter convention: LaunchKernel(k, grid, block, args.get(), ...).
struct KernelArgs {
  std::vector<void*> pointers;
  void* block = nullptr;
  void** get() {
    block = pointers.data();
    return &block;
  }
};

// The kernel of a fused loop (exec/fusion_plan.h): one kernel for the whole loop, grid-stride,
// 16-byte vector loads / stores when every input and output is aligned (checked at run time;
// a scalar loop covers the tail and unaligned buffers); a loop ending in a reduce becomes a
// reduction kernel (row reduce with a warp or a block per output row when the reduced dims are
// minor, else one thread per output element walking its reduced elements in row-major order).
// Complex values (c64, c128) take add, subtract, multiply, divide, negate, abs, sign, exp, real,
// imag, complex, convert, compare EQ / NE and select; shape ops and gather move them.
// Unimplemented (naming the instruction and why) for what it does not generate: other complex ops,
// sub-byte or fp8 types, a reduce the plan could not type.
StatusOr<GeneratedKernel> GenerateFusedLoopKernel(const FusedLoop& loop);

// One elementwise instruction (unary, binary, compare, convert, select, clamp, copy, ...) over
// its result shape, as a one-op fused loop (rank-0 operands are read once).
StatusOr<GeneratedKernel> GenerateElementwiseKernel(const Instruction& inst);

// Any instruction the generators cover: the elementwise ops above, and transpose, copy, slice,
// pad, concatenate, broadcast, reverse, iota, reshape / bitcast (as a copy), dynamic-slice,
// dynamic-update-slice (the whole result: operand outside the window, update inside), reduce
// (one operand with a typed combiner: add, multiply, maximum, minimum, and, or, as row / general
// reduction kernels; any other reducer or several operands, e.g. argmax: the reducer computation
// inlined, one thread per output combining in the CPU's order) and reduce-window (any operands
// and reducer, inlined the same way; naive). Unimplemented naming the instruction for the rest.
StatusOr<GeneratedKernel> GenerateOpKernel(const Instruction& inst);

// Every kernel `inst` runs, in order, each taking the pointers of GenerateOpKernel's convention
// (operands, then results). One kernel for most ops; scatter takes two (the operands copied into
// the results, then the updates combined in) unless `in_place`: the results are already the
// operands' buffers (exec put them over dying operands), when the copy is skipped;
// select-and-scatter takes two (a fill, then the scatter).
StatusOr<std::vector<GeneratedKernel>> GenerateOpKernels(const Instruction& inst, bool in_place);

// gather (kernel_codegen_gather.cc): one thread per result element, start indices clamped as
// XLA clamps them.
StatusOr<GeneratedKernel> GenerateGatherKernel(const Instruction& inst);
// scatter of n operands (kernel_codegen_gather.cc): see GenerateOpKernels; out-of-bounds update
// windows are skipped as XLA skips them; the combiner is inlined.
StatusOr<std::vector<GeneratedKernel>> GenerateScatterKernels(const Instruction& inst, bool in_place);
// select-and-scatter (kernel_codegen_select_scatter.cc): the result filled with the init value,
// then one thread per source element choosing in its window as the CPU does (row-major, select
// inlined) and combining with a compare-and-swap loop around the scatter computation (one thread
// in order for 8-bit types). Pointers: operand, source, init, result.
StatusOr<std::vector<GeneratedKernel>> GenerateSelectAndScatterKernels(const Instruction& inst);
// sort of n operands with any comparator, and topk / the TopK custom-call
// (kernel_codegen_sort.cc): pointers the operands, then the results.
StatusOr<GeneratedKernel> GenerateSortKernel(const Instruction& inst);

// The ops below each have their own generator file; pointers as GenerateOpKernel's convention
// (operands, then one per result leaf).
// rng, rng-bit-generator, rng-get-and-update-state (kernel_codegen_random.cc).
StatusOr<std::vector<GeneratedKernel>> GenerateRandomKernels(const Instruction& inst);
// cholesky, triangular-solve, lapack_?potrf_ffi / ?getrf_ffi / ?trsm_ffi (kernel_codegen_linalg.cc).
StatusOr<std::vector<GeneratedKernel>> GenerateLinalgKernels(const Instruction& inst);
// ragged-dot and __op$block_scaled_dot (kernel_codegen_ragged.cc).
StatusOr<std::vector<GeneratedKernel>> GenerateRaggedDotKernels(const Instruction& inst);
// batch-norm-training / -inference / -grad (kernel_codegen_batchnorm.cc).
StatusOr<std::vector<GeneratedKernel>> GenerateBatchNormKernels(const Instruction& inst);
// scan, map, reduce-precision (kernel_codegen_scan.cc).
StatusOr<std::vector<GeneratedKernel>> GenerateScanKernels(const Instruction& inst);
// _SPMDInternalOp_RotateRight / MultiRotate / Wrap / MultiSlice / MultiPad (kernel_codegen_spmd_internal.cc).
StatusOr<std::vector<GeneratedKernel>> GenerateSpmdInternalKernels(const Instruction& inst);
// fft (kernel_codegen_fft.cc).
StatusOr<std::vector<GeneratedKernel>> GenerateFftKernels(const Instruction& inst);

// dynamic-update-slice writing only the update's window into a result that already holds the
// operand (the result buffer IS operand 0's buffer): O(update) instead of O(result).
StatusOr<GeneratedKernel> GenerateDynamicUpdateSliceInPlace(const Instruction& inst);

// One translation unit holding every kernel of `kernels` (the prelude once, each distinct name
// once), so a module's kernels compile in one NVRTC call; each keeps its name.
KernelSource CombineKernels(std::span<const GeneratedKernel> kernels);

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_KERNEL_CODEGEN_H_
