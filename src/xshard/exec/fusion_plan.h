// Loop fusion of elementwise chains: at plan time, maximal groups of elementwise ops (unary,
// binary, compare, convert, copy, select, clamp) with the broadcasts and iotas they read become
// one step that walks the group's output shape in cache-sized tiles, calling each op's kernel on
// the tile; intermediates live in per-thread tile buffers (shared by values whose lives do not
// overlap) and only group inputs and outputs touch memory. Scalars stay scalars (a tile filled once per thread). Results are bitwise those of the
// op-by-op steps (same kernels, same per-op rounding). Not part of the public API.
#ifndef XSHARD_EXEC_FUSION_PLAN_H_
#define XSHARD_EXEC_FUSION_PLAN_H_

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/reduce.h"

namespace xs {

struct Step;
class Instruction;
class Shape;

// A value of the tile program.
enum class FusedValueKind {
  kInput,        // a group input with the loop's dims: read in place at the tile's offset
  kScalarInput,  // a rank-0 group input: a per-thread tile filled with it once
  kUniform,      // computed once per thread from scalars only (a tile of equal values)
  kScratch,      // a per-thread tile buffer
  kOutput,       // a group output: written in place at the tile's offset
};

struct FusedValue {
  FusedValueKind kind = FusedValueKind::kScratch;
  int esize = 0;    // bytes per element
  int input = -1;   // kInput / kScalarInput: operand index of the step
  int output = -1;  // kOutput: index into FusedLoop::outputs
  int buffer = -1;  // kScalarInput / kUniform / kScratch: per-thread buffer index (scratch
                    // values whose lives do not overlap share one)
};

// kGather: a broadcast (the name predates kRowGather); kRowGather: an HLO gather of whole rows
// (IsRowGather).
// kRotateLeft: JAX's rotate_left, or(shift-left(x, a), shift-right-logical(x, bits - a)) of three
// members, as one op on in[0] = x and in[1] = a (`binary` computes it; `inst` is the or).
// kConcat: a concatenate whose pieces are contiguous runs of its elements (IsConcatGenerator), or
// a reshape of one: element i is element i - bounds[k] of piece k, bounds[k] <= i < bounds[k + 1].
enum class FusedOpKind { kUnary, kBinary, kTernary, kCopy, kIota, kGather, kFill, kRowGather, kRotateLeft, kConcat };

struct FusedOp {
  FusedOpKind kind = FusedOpKind::kCopy;
  kernels::UnaryKernel unary = nullptr;  // kUnary; kIota: s64 -> dtype (null for s64)
  kernels::BinaryKernel binary = nullptr;
  kernels::TernaryKernel ternary = nullptr;
  int in[3] = {-1, -1, -1};  // value ids (kGather / kFill: in[0] is the operand index; kRowGather:
                             // in[0] the table's operand index, in[1] the indices')
  int out = -1;              // value id
  int64_t inner = 1, size = 1;          // kIota: (linear / inner) % size; kRowGather: row
                                        // elements and rows of the table
  int64_t start = 0, step = 1;          // kIota: the value is start + step * the above (a slice
                                        // of an iota along its dim: start and stride)
  std::vector<int64_t> strides;         // kGather: operand element stride per loop dim (0: repeated)
  // kGather: > 1 when the operand spans the loop's trailing dims contiguously and repeats over the
  // leading ones (a per-channel vector broadcast over N, H, W): element i of the loop is operand
  // element i % period. 0 otherwise.
  int64_t period = 0;
  // kConcat: each piece's operand index, and the element where each piece starts (then the count).
  std::vector<int> pieces;
  std::vector<int64_t> bounds;
  // The instruction the op computes (kFill: the scalar operand it fills from; kGather: the
  // broadcast; kIota: the iota; kCopy of a uniform output: that member). Backends that generate
  // code from the plan (cuda/) read the opcode, attributes and dtypes from it.
  const Instruction* inst = nullptr;
};

struct FusedOutput {
  int value = -1;
  int slot = -1;
  const Instruction* inst = nullptr;
  // An output other than the primary one: the operand index of a dying input of its dtype and
  // dims it may be written over (FusedLoop::donor is the primary's), -1 for none.
  int donor = -1;
};

// A reduce fed by the loop: each tile of `value` is combined into the step's result.
struct FusedReduce {
  kernels::ReduceRangeFn fn = nullptr;
  int value = -1;               // the reduced value (the reduce's operand)
  int init = -1;                // operand index of the init scalar
  std::vector<int64_t> ostride;  // per loop dim: output stride, 0 for reduced dims
  // A column sum in blocks of rows (blocks > 1): the order kernels::Reduce sums in.
  kernels::ColumnBlocks blocks;
  const Instruction* inst = nullptr;
};

struct FusedLoop {
  std::vector<int64_t> dims;  // the loop's (every output's) dims
  int64_t count = 0;          // elements
  std::vector<FusedValue> values;
  std::vector<FusedOp> prologue;  // per thread, once, over a full tile (scalar fills, uniform ops)
  std::vector<FusedOp> body;      // per tile
  // Arrays written tile by tile, each to its own slot. Without a reduce, outputs.back() is the
  // step's own result (step.out); with one, the reduce's result is.
  std::vector<FusedOutput> outputs;
  bool has_reduce = false;
  FusedReduce reduce;
  int num_buffers = 0;
  int max_esize = 1;
  // Operand index whose dying buffer outputs.back() may take over (-1: none; never with a reduce).
  int donor = -1;
  int64_t members = 0;  // instructions the step stands for (ExecuteStats::instructions_run)
};

// Whether the loop streams its outputs: each tile of an output is computed in a buffer of its
// own and written with non-temporal stores after the tile's ops (outputs larger than the caches;
// never with a reduce, whose loop order is not tile-major).
bool StreamsOutputs(const FusedLoop& f);

// A reduce with a typed combiner (add, multiply, max, min, and, or) whose operand only it reads
// joins the operand's group ("evaluate tile, reduce tile"); one of 64K+ elements of any operand
// becomes a loop of its own, so it can run on several threads when its outer dim is kept.
// Replaces groups of fusible steps of one computation (in post order, one per non-parameter
// instruction; `slot` maps each instruction to its slot) with fused steps, reordering steps
// where a group's outputs feed steps that came before its last member. Last uses must be
// computed afterwards.
void FuseElementwiseSteps(std::vector<Step>& steps,
                          const std::unordered_map<const Instruction*, int>& slot,
                          const Instruction* root);

// The slots `step` defines: step.out, and for a fused loop with several outputs the others too
// (for liveness / buffer assignment; a fused loop may also write outputs.back() into operand
// `donor`'s buffer, like ResultBuffer).
std::vector<int> StepOutputSlots(const Step& step);

// ---- shared by fusion_plan.cc and fusion_plan_loop.cc ----

// Instructions that become one fused loop.
struct FusionGroup {
  std::vector<const Instruction*> members;  // post order (reverse while grouping)
  std::vector<int64_t> dims;                // every member's dims
  const Instruction* reduce = nullptr;      // a reduce of a member (or of an input, no members)
};
// A rank >= 1 array of a sized dtype with elements.
bool FusionLoopShaped(const Shape& s);
// Broadcasts, iotas, slices of iotas and row gathers are recomputed inside every group that
// reads them.
bool IsFusionGenerator(const Instruction& inst);
// An iota, or a slice of one (JAX's random bits slice one iota into the counters' halves): a
// generator that reads no operand.
bool IsIotaGenerator(const Instruction& inst);
// The values a generator's loop reads: none for an iota or a slice of one, a concatenate's pieces
// (also under a reshape), the operands of a broadcast or row gather.
std::vector<const Instruction*> GeneratorReads(const Instruction& gen);
// A concatenate along a dim with only dims of size 1 before it, so that each piece is one run of
// the result's elements (jnp.concatenate on axis 0, JAX's random bits joining the two counter
// halves), or a reshape of one (the same elements in the same order).
bool IsConcatGenerator(const Instruction& inst);
// A gather of whole rows of its operand's leading dim (jnp.take(table, ids, axis=0), an embedding
// lookup, table[ids]): the result's dims are the indices' batch dims (an index vector dim of size
// one last, or none) then the operand's dims after the first, and element (b, rest) is
// operand[clamp(ids[b], 0, rows - 1), rest] as XLA clamps gather starts. Indices of a sized
// integer type (s8 ... u64).
bool IsRowGather(const Instruction& inst);
// The fused step of `g` (`step_of`: the op-by-op step of each instruction).
Step BuildFusedStep(const FusionGroup& g, const std::unordered_map<const Instruction*, int>& slot,
                    const std::unordered_map<const Instruction*, const Step*>& step_of);

// Elements per tile of a fused loop (a multiple of 64, so tiles keep kernels' vector alignment,
// and of kernels::kSumBlock, so a fused sum's cuts never split a sum block). 512 keeps a loop's
// tile buffers and the tiles of its streamed inputs in L1 (2 KiB each at f32): measured against
// 256 / 1024 / 2048 on the one-device chain tanh(x) * logistic(y) + x * 0.5 over 64 MiB arrays
// (10.4 / 10.5 / 12.2 / 12.6 ms) and neutral or better on every bench/jax_compare workload.
inline constexpr int64_t kFusedTile = 512;
static_assert(kFusedTile % kernels::kSumBlock == 0);

}  // namespace xs

#endif  // XSHARD_EXEC_FUSION_PLAN_H_
