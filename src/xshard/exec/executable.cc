// The executor core: planning (post order, slots, last uses, handler lookup) and the run loop,
// plus the helpers every handler uses (buffers, slots, donation, scalar computations).
#include "xshard/exec/executable.h"
#include "xshard/exec/run_monitor.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "xshard/kernels/dot.h"
#include "xshard/exec/buffer_assignment.h"
#include "xshard/kernels/compute_gate.h"
#include "xshard/kernels/parallel.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/exec/fusion_plan.h"

namespace xs {

Status UnsupportedInstruction(const Instruction& inst, std::string_view detail) {
  const std::string_view op = OpcodeName(inst.opcode());
  std::string msg = StrCat("instruction '", inst.name(), "' (", op, ") is not supported by the executor");
  if (!detail.empty()) StrAppend(&msg, "; ", detail);
  return Unsupported(msg).AttributedTo(inst.name(), std::string(op));
}

std::vector<Array> Value::Flatten() && {
  std::vector<Array> out;
  if (array) {
    out.push_back(std::move(*array));
    return out;
  }
  for (Value& e : elements) {
    std::vector<Array> sub = std::move(e).Flatten();
    for (Array& a : sub) out.push_back(std::move(a));
  }
  return out;
}

// ---- helpers ----

Slot SharedSlot(const Array* array) {
  // Never written: non-donatable slots are only read.
  return Slot{std::shared_ptr<Array>(const_cast<Array*>(array), [](Array*) {}), nullptr, false};
}

Slot TupleSlot(std::vector<Slot> elements) {
  return Slot{nullptr, std::make_shared<const std::vector<Slot>>(std::move(elements)), false};
}

const Array& OperandArray(const Step& step, const Frame& frame, int i) {
  const Slot& s = frame.slots[step.operands[i]];
  XS_CHECK(s.array != nullptr, "operand ", i, " of ", step.inst->name(), " is not an array");
  return *s.array;
}

Slot TakeOperand(const Step& step, Frame& frame, int i) {
  Slot& s = frame.slots[step.operands[i]];
  if (step.last_use[i]) return std::move(s);
  return s;
}

bool CanTakeOverOperand(const Step& step, const Frame& frame, int i) {
  const Slot& s = frame.slots[step.operands[i]];
  return step.last_use[i] && s.donatable && s.array && s.array.use_count() == 1 && s.array->owns_data();
}

std::shared_ptr<Array> ResultBuffer(const Step& step, Frame& frame, RunContext& ctx, int i) {
  const Shape& shape = step.inst->shape();
  const Slot& s = frame.slots[step.operands[i]];
  if (CanTakeOverOperand(step, frame, i) && s.array->dtype() == shape.dtype() && s.array->dims() == shape.dims()) {
    return s.array;
  }
  return NewArray(shape, ctx);
}

void FlattenSlot(const Slot& slot, std::vector<const Array*>& out) {
  if (slot.array) {
    out.push_back(slot.array.get());
    return;
  }
  if (slot.tuple) {
    for (const Slot& e : *slot.tuple) FlattenSlot(e, out);
  }
}

Slot UnflattenSlot(const Shape& shape, std::vector<std::shared_ptr<Array>>& leaves, size_t* pos) {
  if (shape.IsTuple()) {
    std::vector<Slot> elements;
    for (const Shape& e : shape.tuple_shapes()) elements.push_back(UnflattenSlot(e, leaves, pos));
    return TupleSlot(std::move(elements));
  }
  if (shape.IsToken()) return TupleSlot({});
  return OwnedSlot(std::move(leaves[(*pos)++]));
}

namespace {

// Names the instruction in a handler's or kernel's error (once: an error from a called
// computation is already attributed to its own instruction). Unimplemented errors become
// "unsupported: instruction 'x' (op) is not supported by the executor; <what the kernel said>".
Status AnnotateInstruction(const Status& s, const Instruction& inst) {
  if (s.ok() || !s.instruction().empty()) return s;
  if (s.code() == StatusCode::kUnimplemented) {
    return UnsupportedInstruction(inst, UnsupportedWhat(s)).WithDetail(s.detail());
  }
  const std::string_view op = OpcodeName(inst.opcode());
  return Annotate(s, StrCat("instruction '", inst.name(), "' (", op, "): "))
      .AttributedTo(inst.name(), std::string(op));
}

// Arrays must have static, non-negative dims (bounded-dynamic `f32[<=4]` and unbounded `f32[?]`
// shapes change size at run time, which this executor does not model).
Status CheckStaticShape(const Instruction& inst, const Shape& s) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes()) XS_RETURN_IF_ERROR(CheckStaticShape(inst, e));
    return OkStatus();
  }
  for (int i = 0; i < s.rank(); ++i) {
    if (s.dim(i) < 0 || s.is_dynamic_dim(i)) {
      return UnsupportedInstruction(inst, StrCat("dynamic shape ", s.ToString(false)));
    }
  }
  return OkStatus();
}

// After each step: the value must have the declared type and dims, so later steps can trust
// declared shapes (a mismatch is a bug in a handler, reported instead of overrunning a buffer).
Status CheckResult(const Step& step, const Frame& frame) {
  const Slot& s = frame.slots[step.out];
  const Shape& want = step.inst->shape();
  if (want.IsArray()) {
    if (s.array == nullptr || s.array->dtype() != want.dtype() || s.array->dims() != want.dims()) {
      return Internal("instruction '", step.inst->name(), "' (", OpcodeName(step.inst->opcode()),
                      ") produced ", s.array ? s.array->shape().ToString(false) : std::string("a tuple"),
                      " instead of its declared ", want.ToString(false));
    }
  } else if (want.IsTuple() && s.tuple == nullptr) {
    return Internal("instruction '", step.inst->name(), "' produced an array instead of a tuple");
  }
  return OkStatus();
}

// Steps whose operands and result together reach this many bytes run in the compute gate; below
// it a kernel's scratch is small and the gate's handoff (a futex wake, ~30 us) would dominate.
constexpr int64_t kGatedBytes = int64_t{1} << 20;

int64_t StepBytes(const Instruction& inst) {
  int64_t bytes = inst.shape().byte_size();  // tuples: the sum of their leaves
  for (const Instruction* o : inst.operands()) bytes += o->shape().byte_size();
  return bytes;
}

// A step in the compute gate, unless this device already holds a slot (a gated op's callees).
Status RunStep(const Step& step, Frame& frame, RunContext& ctx) {
  ComputeGate* gate = ctx.options.compute_gate;
  if (gate == nullptr || !step.gated || ctx.in_gate) return step.run(step, frame, ctx);
  gate->Enter();
  ctx.in_gate = true;
  Status st = step.run(step, frame, ctx);
  ctx.in_gate = false;
  gate->Leave();
  return st;
}

namespace {

// `order` (a post order) with the parameters and the get-tuple-elements of their tuples first.
// A tuple parameter (a while loop's state) then dies as soon as its elements are taken out, and
// each element is held by its get-tuple-element alone, so the step that last reads it may write
// over it (ResultBuffer, a fused loop's donors) instead of allocating: post order would keep the
// tuple alive until its last get-tuple-element, often the one the body passes to its root.
std::vector<Instruction*> ElementsFirst(std::vector<Instruction*> order) {
  std::unordered_set<const Instruction*> early;
  std::vector<Instruction*> first, rest;
  for (Instruction* inst : order) {
    const bool element = inst->opcode() == Opcode::kGetTupleElement && inst->control_predecessors().empty() &&
                         early.count(inst->operand(0));
    if (inst->opcode() == Opcode::kParameter || element) {
      early.insert(inst);
      first.push_back(inst);
    } else {
      rest.push_back(inst);
    }
  }
  first.insert(first.end(), rest.begin(), rest.end());
  return first;
}

}  // namespace

StatusOr<std::unique_ptr<ComputationPlan>> PlanComputation(const Computation& c,
                                                           const HandlerTable& table,
                                                           const Program& program, bool fuse) {
  auto plan = std::make_unique<ComputationPlan>();
  plan->computation = &c;
  const std::vector<Instruction*> order = ElementsFirst(c.MakeInstructionPostOrder());
  std::unordered_map<const Instruction*, int> slot;
  for (size_t i = 0; i < order.size(); ++i) slot[order[i]] = static_cast<int>(i);
  plan->num_slots = static_cast<int>(order.size());
  plan->param_slots.assign(c.num_parameters(), -1);
  if (c.root() == nullptr) return InvalidArgument("computation '", c.name(), "' has no root");
  plan->root_slot = slot.at(c.root());
  for (const Instruction* inst : order) {
    if (inst->opcode() == Opcode::kParameter) {
      XS_RETURN_IF_ERROR(CheckStaticShape(*inst, inst->shape()));  // no argument has a dynamic size
      const int64_t n = inst->parameter_number();
      if (n >= 0 && n < c.num_parameters()) plan->param_slots[n] = slot[inst];
      continue;
    }
    XS_RETURN_IF_ERROR(CheckStaticShape(*inst, inst->shape()));
    Step step;
    step.inst = inst;
    step.out = slot[inst];
    for (const Instruction* op : inst->operands()) step.operands.push_back(slot.at(op));
    step.count = inst->shape().IsArray() ? inst->shape().num_elements() : 0;
    PrepareFn prepare = table[static_cast<int>(inst->opcode())];
    if (prepare == nullptr) return UnsupportedInstruction(*inst);
    XS_RETURN_IF_ERROR(AnnotateInstruction(prepare(*inst, step, program), *inst));
    if (step.run == nullptr) return UnsupportedInstruction(*inst);
    bool communicates = IsCollective(inst->opcode());
    for (const ComputationPlan* callee : step.callees) communicates |= callee->communicates;
    plan->communicates |= communicates;
    step.gated = !communicates && StepBytes(*inst) >= kGatedBytes;
    plan->steps.push_back(std::move(step));
  }
  for (int p = 0; p < c.num_parameters(); ++p) {
    if (plan->param_slots[p] < 0) {
      return InvalidArgument("computation '", c.name(), "' has no parameter(", p, ")");
    }
  }
  if (fuse) FuseElementwiseSteps(plan->steps, slot, c.root());  // fusion_plan.h
  // Last uses: each slot is dropped after the last step that reads it (never the root).
  std::vector<int> last(plan->num_slots, -1);
  for (size_t s = 0; s < plan->steps.size(); ++s) {
    for (int o : plan->steps[s].operands) last[o] = static_cast<int>(s);
  }
  for (size_t s = 0; s < plan->steps.size(); ++s) {
    Step& step = plan->steps[s];
    step.last_use.assign(step.operands.size(), 0);
    for (size_t i = 0; i < step.operands.size(); ++i) {
      const int o = step.operands[i];
      bool later_in_step = false;
      for (size_t j = i + 1; j < step.operands.size(); ++j) later_in_step |= step.operands[j] == o;
      step.last_use[i] = last[o] == static_cast<int>(s) && o != plan->root_slot && !later_in_step;
      if (step.last_use[i]) step.release.push_back(o);
    }
    // A result nobody reads is dropped at once.
    if (last[step.out] < 0 && step.out != plan->root_slot) step.release.push_back(step.out);
  }
  return plan;
}

void CollectReachable(const Computation* c, std::unordered_set<const Computation*>& seen) {
  if (!seen.insert(c).second) return;
  for (const Instruction* inst : c->instructions()) {
    for (const Computation* callee : inst->called_computations()) CollectReachable(callee, seen);
  }
}

void FlattenShapes(const Shape& s, std::vector<Shape>& out) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes()) FlattenShapes(e, out);
  } else if (!s.IsToken()) {
    out.push_back(s.WithoutLayout());
  }
}

// The caller's arrays as a (read-only) parameter value of `shape`.
Slot ArgumentSlot(const Shape& shape, std::span<const Array* const> args, size_t* pos) {
  if (shape.IsToken()) return TupleSlot({});
  if (!shape.IsTuple()) return SharedSlot(args[(*pos)++]);
  std::vector<Slot> elements;
  for (const Shape& e : shape.tuple_shapes()) elements.push_back(ArgumentSlot(e, args, pos));
  return TupleSlot(std::move(elements));
}

// Moves a buffer out when nothing else holds it (`owner_unique`: the enclosing tuple is ours
// alone, so an element held once is held only by it); copies otherwise.
// The run's arena: results lying in it become views that keep it alive.
struct ArenaRef {
  std::shared_ptr<std::byte> lease;
  int64_t bytes = 0;
  bool Holds(const std::byte* p) const {
    return lease != nullptr && p >= lease.get() && p < lease.get() + bytes;
  }
};

Value SlotToValue(const Slot& slot, bool owner_unique, const ArenaRef& arena) {
  Value v;
  if (slot.array) {
    if (arena.Holds(slot.array->data())) {
      v.array = Array::View(slot.array->shape(), const_cast<std::byte*>(slot.array->data()), arena.lease);
    } else if (owner_unique && slot.donatable && slot.array.use_count() == 1 && slot.array->owns_data()) {
      v.array = std::move(*slot.array);
    } else {
      v.array = *slot.array;
    }
    return v;
  }
  if (slot.tuple) {
    const bool unique = owner_unique && slot.tuple.use_count() == 1;
    for (const Slot& e : *slot.tuple) v.elements.push_back(SlotToValue(e, unique, arena));
  }
  return v;
}

std::vector<const Array*> Pointers(std::span<const Array> args) {
  std::vector<const Array*> out;
  for (const Array& a : args) out.push_back(&a);
  return out;
}

}  // namespace

StatusOr<Slot> RunPlan(const ComputationPlan& plan, std::vector<Slot> args, RunContext& ctx) {
  // A callee runs in the region its calling step reserved; the entry at the arena's start.
  struct Restore {
    RunContext& ctx;
    const Step* step = ctx.step;
    std::byte* arena = ctx.frame_arena;
    bool given = ctx.result_given;
    ~Restore() {
      ctx.step = step;
      ctx.frame_arena = arena;
      ctx.result_given = given;
    }
  } restore{ctx};
  Frame frame;
  frame.arena = ctx.frame_arena == nullptr ? nullptr
                : ctx.step == nullptr     ? ctx.frame_arena
                                          : ctx.frame_arena + ctx.step->callee_offset;
  frame.slots.resize(plan.num_slots);
  for (size_t i = 0; i < args.size() && i < plan.param_slots.size(); ++i) {
    frame.slots[plan.param_slots[i]] = std::move(args[i]);
  }
  DeviceProgress* progress = ctx.options.monitor == nullptr
                                 ? nullptr
                                 : &ctx.options.monitor->progress(ctx.options.monitor_rank);
  // Long kernels (convolutions, ParallelFor loops) see a stop mid-way through the flag and return
  // early; their unfinished outputs never leave: every step and the end check the flag.
  std::optional<kernels::ScopedInterrupt> interrupt;
  if (progress != nullptr) interrupt.emplace(ctx.options.monitor->stop_flag());
  for (const Step& step : plan.steps) {
    if (progress != nullptr) {
      if (ctx.options.monitor->stopped()) return ctx.options.monitor->stop_reason();
      progress->instruction.store(step.inst, std::memory_order_relaxed);
    }
    ctx.step = &step;
    ctx.frame_arena = frame.arena;
    ctx.result_given = false;
    Status st = RunStep(step, frame, ctx);
    if (!st.ok() && progress != nullptr && ctx.options.monitor->stopped()) return ctx.options.monitor->stop_reason();
    if (!st.ok()) return AnnotateInstruction(st, *step.inst);
    XS_RETURN_IF_ERROR(CheckResult(step, frame));
    ++ctx.instructions_run;
    for (int s : step.release) frame.slots[s] = Slot{};
  }
  if (progress != nullptr && ctx.options.monitor->stopped()) return ctx.options.monitor->stop_reason();
  return std::move(frame.slots[plan.root_slot]);
}

Executable::Executable(const Module& module, std::unique_ptr<Program> program)
    : module_(module), program_(std::move(program)), arenas_(std::make_shared<ArenaPool>()) {
  for (int i = 0; i < module.entry()->num_parameters(); ++i) {
    FlattenShapes(module.entry()->parameter(i)->shape(), argument_shapes_);
  }
}

Executable::~Executable() = default;

// The handler table, built once. Control goes last: its collective registration wraps the
// complete table for XSHARD_TRACE (executable_trace.cc).
const HandlerTable& Handlers() {
  static const HandlerTable table = [] {
    HandlerTable t{};
    RegisterElementwiseHandlers(t);
    RegisterShapeHandlers(t);
    RegisterComputeHandlers(t);
    RegisterExtraOpHandlers(t);
    RegisterControlHandlers(t);
    return t;
  }();
  return table;
}

bool ExecutorSupports(Opcode op) { return Handlers()[static_cast<int>(op)] != nullptr; }

StatusOr<std::unique_ptr<Executable>> Executable::Create(const Module& module) {
  if (module.entry() == nullptr) return InvalidArgument("module '", module.name(), "' has no entry computation");
  const HandlerTable& table = Handlers();
  std::unordered_set<const Computation*> reachable;
  CollectReachable(module.entry(), reachable);
  // A constant printed as {...} (HLO text without its large constants) has no values to run with:
  // parsing keeps it (printing, propagation and partitioning need no values), running refuses it.
  for (const Computation* c : module.MakeComputationPostOrder()) {
    if (!reachable.count(c)) continue;
    for (const Instruction* inst : c->instructions()) {
      if (inst->opcode() != Opcode::kConstant || !inst->attrs().literal || !inst->attrs().literal->elided) continue;
      return InvalidArgument(
          "constant '", inst->name(), "' (", inst->shape().ToString(false), ") of '", c->name(),
          "' was printed without its values ({...}), so the module cannot run; print it with its large "
          "constants (JAX: jax.jit(f).lower(...).compiler_ir('hlo').as_hlo_text(print_large_constants=True); "
          "older releases, 0.4.38 among them, leave them out of lowered.as_text(dialect='hlo'); XLA: "
          "HloPrintOptions().set_print_large_constants(true))");
    }
  }

  std::unique_ptr<Program> programs[2];
  for (bool fuse : {false, true}) {
    auto program = std::make_unique<Program>();
    for (const Computation* c : module.MakeComputationPostOrder()) {
      if (!reachable.count(c)) continue;
      XS_ASSIGN_OR_RETURN(std::unique_ptr<ComputationPlan> plan,
                          PlanComputation(*c, table, *program, fuse));
      // After fusion (which reorders steps): buffer assignment sees the final step order.
      PlanMemory(*plan, /*root_in_arena=*/c == module.entry());
      program->Add(std::move(plan));
    }
    program->entry = program->Get(module.entry());
    if (program->entry == nullptr) return Internal("entry computation was not planned");
    programs[fuse] = std::move(program);
  }
  std::unique_ptr<Program> program = std::move(programs[1]);
  program->unfused = std::move(programs[0]);
  return std::unique_ptr<Executable>(new Executable(module, std::move(program)));
}

Status Executable::CheckArguments(std::span<const Array* const> args) const {
  const Computation& entry = *module_.entry();
  if (args.size() != argument_shapes_.size()) {
    return InvalidArgument("'", entry.name(), "' takes ", argument_shapes_.size(),
                           " argument(s) but ", args.size(), " were given");
  }
  // Map each flattened argument back to its parameter for messages.
  size_t k = 0;
  for (int p = 0; p < entry.num_parameters(); ++p) {
    std::vector<Shape> leaves;
    FlattenShapes(entry.parameter(p)->shape(), leaves);
    for (const Shape& want : leaves) {
      const Array& a = *args[k];
      if (a.dtype() != want.dtype() || a.dims() != want.dims()) {
        return InvalidArgument("argument ", k, " has shape ", a.shape().ToString(false),
                               " but parameter ", p, " '", entry.parameter(p)->name(), "' of '",
                               entry.name(), "' ", leaves.size() > 1 ? "has a leaf " : "is ",
                               want.ToString(false));
      }
      ++k;
    }
  }
  return OkStatus();
}

StatusOr<Value> Executable::RunImpl(std::span<const Array* const> borrowed, std::vector<Array>* donated,
                                    const ExecuteOptions& options, ExecuteStats* stats) const {
  const Computation& entry = *module_.entry();
  if (options.blas_threads > 0) kernels::SetBlasThreads(options.blas_threads);
  static const bool fusion_env_off = [] {
    const char* v = std::getenv("XSHARD_FUSION");
    return v != nullptr && std::string_view(v) == "0";
  }();
  const bool fused = options.fusion && !fusion_env_off;
  const Program& program = fused || program_->unfused == nullptr ? *program_ : *program_->unfused;
  RunContext ctx{options, program, {}, 0};
  const bool default_plan = &program == program_.get();
  const std::shared_ptr<std::byte> arena = LeaseArena(default_plan);
  ctx.frame_arena = arena.get();
  const ArenaRef arena_ref{arena, arena_bytes(default_plan)};
  Value result;
  {
    std::vector<Slot> params;
    if (donated != nullptr) {
      // Donated arguments become executor buffers: overwritten in place when they die.
      std::vector<std::shared_ptr<Array>> leaves;
      for (Array& a : *donated) leaves.push_back(AdoptArray(std::move(a), ctx));
      donated->clear();
      size_t pos = 0;
      for (int p = 0; p < entry.num_parameters(); ++p) {
        params.push_back(UnflattenSlot(entry.parameter(p)->shape(), leaves, &pos));
      }
    } else {
      size_t pos = 0;
      for (int p = 0; p < entry.num_parameters(); ++p) {
        params.push_back(ArgumentSlot(entry.parameter(p)->shape(), borrowed, &pos));
      }
    }
    XS_ASSIGN_OR_RETURN(Slot root, RunPlan(*program.entry, std::move(params), ctx));
    result = SlotToValue(root, /*owner_unique=*/true, arena_ref);
  }
  if (stats != nullptr) {
    stats->instructions_run = ctx.instructions_run;
    stats->peak_bytes = program.entry->arena_bytes + ctx.memory.peak;
  }
  return result;
}

StatusOr<Value> Executable::RunTuple(std::span<const Array> args, const ExecuteOptions& options,
                                     ExecuteStats* stats) const {
  const std::vector<const Array*> pointers = Pointers(args);
  XS_RETURN_IF_ERROR(CheckArguments(pointers));
  return RunImpl(pointers, nullptr, options, stats);
}

StatusOr<std::vector<Array>> Executable::Run(std::span<const Array* const> args, const ExecuteOptions& options,
                                             ExecuteStats* stats) const {
  XS_RETURN_IF_ERROR(CheckArguments(args));
  XS_ASSIGN_OR_RETURN(Value v, RunImpl(args, nullptr, options, stats));
  return std::move(v).Flatten();
}

StatusOr<std::vector<Array>> Executable::RunDonated(std::vector<Array> args, const ExecuteOptions& options,
                                                    ExecuteStats* stats) const {
  XS_RETURN_IF_ERROR(CheckArguments(Pointers(args)));
  XS_ASSIGN_OR_RETURN(Value v, RunImpl({}, &args, options, stats));
  return std::move(v).Flatten();
}

StatusOr<std::vector<Array>> Executable::Run(std::span<const Array> args,
                                             const ExecuteOptions& options,
                                             ExecuteStats* stats) const {
  XS_ASSIGN_OR_RETURN(Value v, RunTuple(args, options, stats));
  return std::move(v).Flatten();
}

StatusOr<std::vector<Array>> Execute(const Module& module, std::span<const Array> args,
                                     const ExecuteOptions& options) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Executable> e, Executable::Create(module));
  return e->Run(args, options);
}

StatusOr<Value> ExecuteTuple(const Module& module, std::span<const Array> args,
                             const ExecuteOptions& options) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Executable> e, Executable::Create(module));
  return e->RunTuple(args, options);
}

}  // namespace xs
