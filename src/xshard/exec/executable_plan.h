// Internal structures of the executor: value slots, the per-computation plan (one Step per
// instruction: a common header with its slots and which die after it, and a per-kind payload of
// kernel pointers / parameters), the handler table the executable_*.cc files fill, and helpers
// the handlers share. Not part of the public API.
#ifndef XSHARD_EXEC_EXECUTABLE_PLAN_H_
#define XSHARD_EXEC_EXECUTABLE_PLAN_H_

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "xshard/kernels/dot.h"
#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/parallel.h"
#include "xshard/kernels/scalar_fn.h"
#include "xshard/exec/executable.h"

namespace xs {

// A value during a run: an array (shared, immutable unless donated) or a tuple of slots. A token
// is a tuple with no elements.
struct Slot {
  std::shared_ptr<Array> array;
  std::shared_ptr<const std::vector<Slot>> tuple;
  // The executor allocated the buffer: it may be overwritten when its last user runs and nothing
  // else shares it. Arguments and constants are never donatable.
  bool donatable = false;
  bool IsTuple() const { return tuple != nullptr; }
};

struct MemoryCounter {
  int64_t live = 0, peak = 0;
  void Add(int64_t bytes) {
    live += bytes;
    if (live > peak) peak = live;
  }
  void Sub(int64_t bytes) { live -= bytes; }
};

class Program;
struct Step;
struct FusedLoop;  // fusion_plan.h
struct Frame {
  std::vector<Slot> slots;
  std::byte* arena = nullptr;  // this computation's region of the run's arena
};

// Everything a running step may need besides its frame.
struct RunContext {
  const ExecuteOptions& options;
  const Program& program;
  MemoryCounter memory;
  int64_t instructions_run = 0;
  bool in_gate = false;  // this device holds a slot of options.compute_gate
  // The running step and its frame's arena (set by RunPlan before each step): NewArray hands
  // the step its planned arena buffer once.
  const Step* step = nullptr;
  std::byte* frame_arena = nullptr;
  bool result_given = false;
};

// Threads a kernel of this device may use: ExecuteOptions::intra_op_threads, or every core of the
// process when it is 0.
inline int IntraOpThreads(const RunContext& ctx) {
  return ctx.options.intra_op_threads > 0 ? ctx.options.intra_op_threads : kernels::CoreCount();
}

using RunFn = Status (*)(const Step& step, Frame& frame, RunContext& ctx);

struct ComputationPlan;

// Plan-time parameters of a step whose op has no payload kind of its own (topk's k, fft's
// lengths, ...): each handler file derives its own block from this.
struct ExtraParams {
  virtual ~ExtraParams() = default;
};

// How a step runs on scalars inside a ScalarRunner's compiled fast path (kNone: not eligible).
enum class ScalarKind { kNone, kUnary, kBinary, kTernary, kShare, kConstant, kTuple };

// ---- per-kind step payloads: what one family of handlers fixes at Prepare ----

// Elementwise ops (unary math, convert, binary math, compare, select, clamp; scalar
// bitcast-convert): the kernel matching the step's scalar_kind is set, the others are null.
// Read by the op's Run, by ScalarRunner's compiled path and by fusion (a member's kernel).
struct ElementwisePayload {
  kernels::UnaryKernel unary = nullptr;
  kernels::BinaryKernel binary = nullptr;
  kernels::TernaryKernel ternary = nullptr;
};
// Ops with a reducer / combiner callee (reduce, reduce-window, select-and-scatter, scatter): the
// recognized combiner, kGeneric when the callee must run per element (callees[i] of the header).
struct CombinePayload {
  kernels::CombineKind combine = kernels::CombineKind::kGeneric;
  std::optional<kernels::ArgSelect> arg_select = std::nullopt;  // reduce of (value, index) pairs: argmax / argmin
};
// sort: the comparator's fast paths (direction or keys set) or none; `fn` is never set at plan
// time.
struct SortPayload {
  kernels::Comparator comparator;
};
// dot: the BLAS / oneDNN calls fixed at Prepare (never null).
struct DotPayload {
  std::shared_ptr<const kernels::DotPlan> plan;
};
// A fused elementwise loop (fusion_plan.h): its tile program (never null), and, filled by the
// memory planner, per FusedLoop::outputs entry other than the step's result its buffer in the
// frame's arena (-1: an owned buffer, or the step's own result).
struct FusedPayload {
  std::shared_ptr<const FusedLoop> loop;
  std::vector<int64_t> output_offsets;
};
// Ops with a parameter block of their handler file's own type (never null): topk, fft,
// triangular-solve, batch-norm, ragged-dot, scan, rng-state, the SPMD-internal custom-calls, ...
struct ExtraPayload {
  std::shared_ptr<const ExtraParams> params;
};

// Which payload a step holds: the index of its StepPayload alternative.
enum class PayloadKind { kNone, kElementwise, kCombine, kSort, kDot, kFused, kExtra };
using StepPayload = std::variant<std::monostate, ElementwisePayload, CombinePayload, SortPayload, DotPayload,
                                 FusedPayload, ExtraPayload>;
inline std::string_view PayloadKindName(PayloadKind kind) {
  static constexpr std::string_view kNames[] = {"none", "elementwise", "combine", "sort", "dot", "fused", "extra"};
  return kNames[static_cast<int>(kind)];
}

// The PayloadKind of payload type P (compile-time).
template <typename P>
constexpr PayloadKind PayloadKindOf() {
  constexpr size_t kIndex = []<size_t... I>(std::index_sequence<I...>) {
    size_t found = 0;
    ((found = std::is_same_v<P, std::variant_alternative_t<I, StepPayload>> ? I : found), ...);
    return found;
  }(std::make_index_sequence<std::variant_size_v<StepPayload>>());
  static_assert(kIndex > 0, "not a step payload type");
  return static_cast<PayloadKind>(kIndex);
}
static_assert(PayloadKindOf<ElementwisePayload>() == PayloadKind::kElementwise &&
                  PayloadKindOf<CombinePayload>() == PayloadKind::kCombine &&
                  PayloadKindOf<SortPayload>() == PayloadKind::kSort &&
                  PayloadKindOf<DotPayload>() == PayloadKind::kDot &&
                  PayloadKindOf<FusedPayload>() == PayloadKind::kFused &&
                  PayloadKindOf<ExtraPayload>() == PayloadKind::kExtra,
              "PayloadKind names StepPayload's alternatives in order");

// One instruction (or one fused loop) of a computation plan: a header every step has, which the
// generic executor (RunPlan, the memory planner, fusion, the GPU plan) reads, and a payload of
// one kind (above) that only that kind's handlers read. The payload accessors XS_CHECK the kind:
// a handler reading another kind's payload is an internal bug, never a silent default.
struct Step {
  const Instruction* inst = nullptr;
  ScalarKind scalar_kind = ScalarKind::kNone;
  RunFn run = nullptr;
  std::vector<int> operands;    // slot of each operand
  std::vector<char> last_use;   // operand i's slot is not read after this step
  int out = -1;                 // slot of the result
  std::vector<int> release;     // slots to drop after this step
  // Called computations in the instruction's call order. In the header, not a payload: ops of
  // every kind call them (call, while, conditional, map, reduce, sort, all-reduce, scan, ...),
  // and the generic plan reads them (whether a step communicates, the callee arena region).
  std::vector<const ComputationPlan*> callees;
  int64_t count = 0;  // result elements
  // Runs inside ExecuteOptions::compute_gate: a big kernel that cannot wait on another device.
  bool gated = false;
  // Set by Prepare when Run gets its array result from NewArray / ResultBuffer (the first
  // NewArray call of the result's dtype and dims) and writes every element of it, never
  // passing an operand through: the planner then gives the result a buffer in the arena (not
  // zero-filled), or an owned uninitialized buffer when a callee's value reaches its root.
  bool writes_result_buffer = false;
  // The operand ResultBuffer may overwrite (same index as passed to ResultBuffer): the planner
  // places the result over that operand's arena buffer when it dies here. -1: none.
  int inplace_operand = -1;
  // Filled by the planner (executable_memory.cc).
  int64_t arena_offset = -1;   // the result's buffer in the frame's arena; -1: not in the arena
  int64_t callee_offset = 0;   // where callees' regions start in the frame's arena

  PayloadKind payload_kind() const { return static_cast<PayloadKind>(payload_.index()); }
  // The payload of kind P (XS_CHECK: the step holds one). Inline: a compare of the variant's
  // index on the hot path, the message built only on failure.
  template <typename P>
  const P& Payload() const {
    const P* p = std::get_if<P>(&payload_);
    XS_CHECK(p != nullptr, PayloadMismatch(PayloadKindOf<P>()));
    return *p;
  }
  // The same, writable (the memory planner fills FusedPayload::output_offsets).
  template <typename P>
  P& MutablePayload() {
    P* p = std::get_if<P>(&payload_);
    XS_CHECK(p != nullptr, PayloadMismatch(PayloadKindOf<P>()));
    return *p;
  }
  // The payload of kind P, or null when the step holds another kind (for generic code).
  template <typename P>
  const P* FindPayload() const {
    return std::get_if<P>(&payload_);
  }
  // Replaces the payload (Prepare, fusion); returns the stored one.
  template <typename P>
  P& SetPayload(P payload) {
    return payload_.emplace<P>(std::move(payload));
  }
  // Payload<P>() of each kind, for the handlers' reads (extra(): the parameter block itself).
  const ElementwisePayload& elementwise() const { return Payload<ElementwisePayload>(); }
  const CombinePayload& combine() const { return Payload<CombinePayload>(); }
  const SortPayload& sort() const { return Payload<SortPayload>(); }
  const DotPayload& dot() const { return Payload<DotPayload>(); }
  const FusedPayload& fused() const { return Payload<FusedPayload>(); }
  const ExtraParams& extra() const { return *Payload<ExtraPayload>().params; }

 private:
  // The XS_CHECK message of a payload read of the wrong kind.
  [[gnu::cold, gnu::noinline]] std::string PayloadMismatch(PayloadKind wanted) const {
    return StrCat("step of '", inst != nullptr ? inst->name() : std::string_view("?"), "' holds a ",
                  PayloadKindName(payload_kind()), " payload; its handler read it as ", PayloadKindName(wanted));
  }

  StepPayload payload_;
};

struct ComputationPlan {
  const Computation* computation = nullptr;
  int num_slots = 0;
  std::vector<int> param_slots;  // slot of parameter i (-1 when missing)
  std::vector<Step> steps;
  int root_slot = -1;
  bool communicates = false;  // a step, or a callee's, is a collective
  // Bytes of arena this computation needs for its buffers and its callees' regions.
  int64_t arena_bytes = 0;
};

// Assigns arena buffers to `plan`'s steps by liveness (its callees are already planned): sets
// Step::arena_offset / callee_offset and plan.arena_bytes (executable_memory.cc).
// `root_in_arena` (the entry): buffers reaching the root are planned in the arena, alive past
// the last step; otherwise they are owned (a callee's region is reused after it returns).
void PlanMemory(ComputationPlan& plan, bool root_in_arena);

// Finished runs' arenas of an Executable, shared with the leases (executable_memory.cc).
struct Executable::ArenaPool {
  std::mutex mu;
  std::vector<std::byte*> free[2];  // [fused]
  ~ArenaPool() {
    for (const std::vector<std::byte*>& f : free) {
      for (std::byte* a : f) std::free(a);
    }
  }
};

class Program {
 public:
  const ComputationPlan* Get(const Computation* c) const {
    auto it = plans_.find(c);
    return it == plans_.end() ? nullptr : it->second.get();
  }
  void Add(std::unique_ptr<ComputationPlan> plan) {
    const Computation* c = plan->computation;
    plans_[c] = std::move(plan);
  }
  const ComputationPlan* entry = nullptr;
  // The same module planned without fusion (ExecuteOptions::fusion = false); null when equal.
  std::unique_ptr<Program> unfused;

 private:
  std::unordered_map<const Computation*, std::unique_ptr<ComputationPlan>> plans_;
};

// Fills `step.run` (and the precomputed header fields and payload) for `inst`, or returns the reason it cannot run.
// Callee plans of `inst` are already in `program`.
using PrepareFn = Status (*)(const Instruction& inst, Step& step, const Program& program);
using HandlerTable = std::array<PrepareFn, kOpcodeCount>;

// A Prepare for ops whose step needs nothing but its run function.
template <RunFn kRun>
Status PrepareSimple(const Instruction&, Step& step, const Program&) {
  step.run = kRun;
  return OkStatus();
}

// Each executable_*.cc registers its ops.
void RegisterElementwiseHandlers(HandlerTable& table);
void RegisterShapeHandlers(HandlerTable& table);
void RegisterComputeHandlers(HandlerTable& table);
void RegisterControlHandlers(HandlerTable& table);
void RegisterExtraOpHandlers(HandlerTable& table);  // executable_extra_ops.cc
// Custom-call targets with a kernel of their own (TopK); sets *handled when `inst`'s target is one.
Status PrepareExtraCustomCall(const Instruction& inst, Step& step, const Program& program, bool* handled);
// XLA's _SPMDInternalOp_{RotateRight,MultiRotate,Wrap,MultiSlice,MultiPad} custom-calls
// (executable_spmd_internal.cc).
bool IsSpmdInternalCustomCall(std::string_view target);
Status PrepareSpmdInternalCustomCall(const Instruction& inst, std::string_view target, Step& step);

// ---- helpers for handlers ----

// Runs `plan` with `args` (moved into the callee's parameter slots) and returns the root value.
StatusOr<Slot> RunPlan(const ComputationPlan& plan, std::vector<Slot> args, RunContext& ctx);

// A buffer of an array shape. The running step's first call for its own result dtype and dims
// when the step has writes_result_buffer: its planned arena buffer (or an owned buffer for values
// that reach the root), contents unspecified. Otherwise a fresh zero-filled owned buffer.
// Owned buffers are counted in ctx.memory.
std::shared_ptr<Array> NewArray(const Shape& shape, RunContext& ctx);
// Takes over an array a kernel returned, counted in ctx.memory.
std::shared_ptr<Array> AdoptArray(Array array, RunContext& ctx);
// Wraps a buffer the executor made (donatable when it owns its memory; arena views are not:
// their memory is planned for other values after their last use) / one it must not write
// (arguments, constants).
Slot OwnedSlot(std::shared_ptr<Array> array);
Slot SharedSlot(const Array* array);
// A value of `shape` whose arrays are zero-filled (tokens: empty tuples), counted in ctx.memory.
Slot ZeroSlot(const Shape& shape, RunContext& ctx);
// A result for a tuple value from its element slots.
Slot TupleSlot(std::vector<Slot> elements);
// The step's result: an array a kernel returned / a tuple of them, counted in ctx.memory.
void SetArray(const Step& step, Frame& frame, RunContext& ctx, Array a);
void SetTuple(const Step& step, Frame& frame, RunContext& ctx, std::vector<Array> arrays);

// The array in operand i's slot (XS_CHECK: an array).
const Array& OperandArray(const Step& step, const Frame& frame, int i);
// Operand i's slot: moved out of the frame when this is its last use, else shared.
Slot TakeOperand(const Step& step, Frame& frame, int i);
// True when operand i dies at this step and its buffer may be overwritten: the executor made it,
// it owns its memory (not an arena view) and nothing else shares it.
bool CanTakeOverOperand(const Step& step, const Frame& frame, int i);
// A buffer for the result: operand i's own buffer when it dies here, nothing else shares it, it
// was allocated by the executor (owned, not an arena view) or donated and it has the result's
// dtype and dims; else NewArray (the planned buffer, which may be operand i's arena memory).
std::shared_ptr<Array> ResultBuffer(const Step& step, Frame& frame, RunContext& ctx, int i);
// The leaves of a slot in order (tuples flattened).
void FlattenSlot(const Slot& slot, std::vector<const Array*>& out);
// Builds a slot of `shape` from leaves taken in order from `leaves` starting at *pos.
Slot UnflattenSlot(const Shape& shape, std::vector<std::shared_ptr<Array>>& leaves, size_t* pos);

// Runs a scalar computation plan many times (reducers, comparators, combiners, map). When every
// step is a scalar elementwise op, constant or the root tuple, the plan is compiled once into a
// list of kernel calls on fixed 16-byte slots (no allocation per call: ~5 ns per instruction);
// otherwise each call runs the plan through preallocated parameter scalars.
class ScalarRunner {
 public:
  ScalarRunner(const ComputationPlan& plan, RunContext& ctx);
  Status Call(std::span<const std::byte* const> args, std::span<std::byte* const> results);
  kernels::ScalarFn AsFn() {
    return [this](std::span<const std::byte* const> a, std::span<std::byte* const> r) {
      return Call(a, r);
    };
  }

 private:
  // One scalar kernel call of an elementwise step (kind: kUnary, kBinary or kTernary).
  struct Op {
    ScalarKind kind;
    const ElementwisePayload* kernels;  // the step's payload (steps outlive the runner)
    const std::byte* in[3];
    std::byte* out;
  };
  bool Compile();

  const ComputationPlan& plan_;
  RunContext& ctx_;
  std::vector<std::shared_ptr<Array>> params_;
  std::vector<const Array*> leaves_;
  // Compiled form.
  bool compiled_ = false;
  std::vector<std::array<std::byte, 16>> cells_;  // one per slot
  std::vector<Op> ops_;
  std::vector<std::pair<const std::byte*, int64_t>> results_;  // root leaves: address, bytes
};

// compare(a, b) as compare(b, a).
inline ComparisonDirection FlipComparison(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kLt: return ComparisonDirection::kGt;
    case ComparisonDirection::kGt: return ComparisonDirection::kLt;
    case ComparisonDirection::kLe: return ComparisonDirection::kGe;
    case ComparisonDirection::kGe: return ComparisonDirection::kLe;
    default: return d;
  }
}

// Recognizes a reducer / combiner computation `{p0, p1: T[]} -> op(p0, p1)` (kAdd ... kOr) or
// `-> p1` (kOverwrite, only when `allow_overwrite`); kGeneric otherwise.
kernels::CombineKind ClassifyCombiner(const Computation& c, bool allow_overwrite);
// The comparator of a sort instruction (it has to_apply=) for kernels::Sort: a compare of the two
// parameters of one operand (Comparator::direction), JAX's lexicographic comparators as keys
// (Comparator::keys, when the kernel supports them on the operands' dtypes), else neither (the
// computation runs per comparison).
kernels::Comparator ClassifySortComparator(const Instruction& sort);
// The ArgSelect (kernels/scalar_fn.h) that a reducer of two (value, index) operand pairs is, as
// jnp.argmax / argmin lower it (values of a real or integer type, integer indices), or nullopt.
// A structural match: every select, compare and logical op of the region must be one of the form's.
std::optional<kernels::ArgSelect> ClassifyArgSelect(const Computation& c);

}  // namespace xs

#endif  // XSHARD_EXEC_EXECUTABLE_PLAN_H_
