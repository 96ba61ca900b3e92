// Internal structures of the GPU executor (gpu_executable.h): per computation of exec's Program,
// where every array leaf of every value lives on the device and the list of actions that compute
// them. Built without a GPU (gpu_executable_plan.cc), loaded and run on one
// (gpu_executable_load.cc, gpu_executable_run.cc). Not part of the public API.
#ifndef XSHARD_CUDA_GPU_EXECUTABLE_PLAN_H_
#define XSHARD_CUDA_GPU_EXECUTABLE_PLAN_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "xshard/cuda/gemm.h"
#include "xshard/cuda/kernel_codegen.h"
#include "xshard/exec/executable_plan.h"

namespace xs::cuda {

// Where an array leaf lives, resolved against a running frame.
struct Loc {
  enum Kind : uint8_t {
    kNone,      // a token, or a leaf nothing may read
    kParam,     // index: the computation's flattened parameter leaf
    kFrame,     // index: byte offset in the computation's frame (exec's arena part, then ours)
    kConstant,  // index: byte offset in the executable's constant region
    kSide,      // planning only: index is a side buffer id, rewritten to kFrame at the end
  };
  Kind kind = kNone;
  int64_t index = 0;
  bool operator==(const Loc&) const = default;
};

// One pointer of a generated kernel's KernelArgs block (kernel_codegen.h's convention).
struct KernelArg {
  enum Kind : uint8_t { kInput, kOutput, kTemp } kind = kInput;
  int index = 0;  // into Action::in / out / temps
};

// A generated kernel with its launch and its KernelArgs pointers in order.
struct PlannedKernel {
  GeneratedKernel kernel;
  std::vector<KernelArg> args;
};

enum class ActionKind : uint8_t {
  kAlias,        // no device work: the result's leaves are operand leaves (or none)
  kKernels,      // one or more generated kernels, in order
  kGemm,         // GemmPlan (with permuted copies of the operands first when needed)
  kConv,         // ConvPlan
  kCopy,         // device-to-device copies in[i] -> out[i] (skipped when equal)
  kZero,         // memset out leaves to 0
  kCollective,   // run or start a collective (GpuCollectiveRunner), or one-device semantics
  kDone,         // finish a started collective
  kCall,         // run callee 0 in a nested frame, copy its root leaves to out
  kWhile,        // host-driven: out = operands; loop cond (pred copied to host) / body
  kConditional,  // host-driven: branch index copied to the host, run it, copy its root to out
  kUnsupported,  // why: see Action::why
};
std::string_view ActionKindName(ActionKind k);

struct GpuComputation;

struct Action {
  ActionKind kind = ActionKind::kAlias;
  const Step* step = nullptr;  // exec's step (its instruction, fused loop, ...)
  std::vector<Loc> in, out;    // array leaves read / written (flattened)
  std::vector<int> in_begin;   // operand i's leaves are in[in_begin[i], in_begin[i + 1])
  std::vector<Loc> temps;      // side buffers alive during this step only
  std::string why;             // kUnsupported: the reason
  std::vector<PlannedKernel> kernels;     // kKernels; kGemm / kConv: permuted operand copies
  std::optional<GemmLayout> gemm;         // kGemm (GemmPlan::Create at Load)
  std::vector<Loc> gemm_operands;         // kGemm / kConv: lhs, rhs after permutation (temporaries or in)
  std::vector<const GpuComputation*> callees;
  int64_t callee_offset = 0;   // kCall / kWhile / kConditional: callees' frame in this frame
  const Instruction* collective = nullptr;  // kCollective / kDone: the collective instruction
  const void* collective_key = nullptr;     // the start that a kDone finishes
  bool start = false;                       // kCollective: only start it
  std::vector<int64_t> out_bytes;           // per out leaf
};

struct GpuComputation {
  const ComputationPlan* exec = nullptr;
  std::vector<Action> actions;
  std::vector<Loc> root;           // the root value's leaves
  int64_t num_param_leaves = 0;
  int64_t frame_bytes = 0;         // exec's arena part plus the side buffers and callee frames
  int64_t exec_arena_bytes = 0;
  bool host_driven = false;        // a while / conditional here or in a callee
  bool communicates = false;       // a collective here or in a callee
};

struct GpuPlanData {
  std::unordered_map<const ComputationPlan*, std::unique_ptr<GpuComputation>> computations;
  const GpuComputation* entry = nullptr;
  std::vector<std::byte> constants;  // the constant region's contents (uploaded at Load)
  // Constant-region offsets Load fills with this device's partition-id / replica-id (u32 / s32).
  std::vector<std::pair<int64_t, Opcode>> id_constants;
  std::vector<Shape> argument_shapes, result_shapes;  // entry leaves
  int64_t gemm_workspace_bytes = 0;
  // Detached instructions the plan made (a parameter and a transpose for each permuted GEMM
  // operand), destroyed users first.
  std::vector<std::unique_ptr<Instruction>> made;
  ~GpuPlanData() {
    while (!made.empty()) made.pop_back();
  }
};

// Fills `action` for a step whose result is computed by generated kernels, a GEMM or a
// convolution (gpu_executable_kernels.cc): kind, kernels, gemm; `action.in` / `action.out` are
// already set. Leaves kind kUnsupported with a reason when no kernel exists for it.
// `temp`: allocates a side buffer of the frame for a temporary alive during this step only.
using TempFn = Loc (*)(void* planner, int64_t bytes);
void PlanComputeAction(const Step& step, Action& action, GpuPlanData& data, void* planner, TempFn temp);
// Why a step touching a narrow type (f8*, f4e2m1fn, s2, s4, u2, u4) cannot run on the GPU: a
// computing step (fused loop, kernel, GEMM, convolution) other than the ragged / block-scaled dots
// and whole-byte bitcasts, or a reducing collective (the CPU reduces those in f16); "" when it can.
std::string NarrowTypeRefusal(const Step& step);

// The root leaves' shapes of `s`, flattened depth first (tokens: none).
void FlattenArrayShapes(const Shape& s, std::vector<Shape>& out);

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_GPU_EXECUTABLE_PLAN_H_
