// The partitioner driver: propagate (or take propagation's result from the compiler pipeline),
// validate, take propagation's tile mesh (or build one from the shardings), walk each computation
// in post order dispatching every instruction to its handler (one table by opcode), mask the
// outputs' padding, verify the SPMD module and fill the report. The table is in handler_table.cc.
#include "xshard/spmd/partitioner.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "xshard/base/strings.h"
#include "xshard/ir/verifier.h"
#include "xshard/propagation/propagation.h"
#include "xshard/rules/sharding_rule.h"
#include "xshard/spmd/handlers.h"

namespace xs {
namespace spmd::internal {
namespace {

bool AllManual(const HloSharding& s) {
  if (s.IsTuple()) {
    for (const HloSharding& e : s.tuple_elements()) {
      if (!AllManual(e)) return false;
    }
    return !s.tuple_elements().empty();
  }
  return s.IsManual();
}

// Instructions that route values (and region boundaries) keep their handlers inside manual regions.
bool RoutesValues(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kParameter:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
      return true;
    case Opcode::kCustomCall: {
      const std::string target = inst.attrs().custom_call_target.value_or("");
      return target == "Sharding" || target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape";
    }
    default:
      return false;
  }
}

Status Dispatch(const Instruction& inst, Context& ctx) {
  const Opcode op = inst.opcode();
  if (!RoutesValues(inst) && AllManual(ctx.TargetOf(inst))) return HandleManual(inst, ctx);
  if (IsCollective(op)) return HandleCollective(inst, ctx);
  const Handler handler = HandlerFor(op);
  Status s = handler(inst, ctx);
  if (s.code() == StatusCode::kUnimplemented && handler != &HandleReplicated &&
      op != Opcode::kParameter) {
    ctx.Note(StrCat("%", inst.name(), " (", OpcodeName(op), "): ", s.message(),
                    "; computed on replicated operands"));
    const Status fallback = HandleReplicated(inst, ctx);
    // When the fallback fails too, its error alone would hide the cause (a call whose body could
    // not be partitioned reads "cannot reshard ... (no partitioned form)"): name both.
    if (!fallback.ok()) {
      return fallback.WithMessage(
          StrCat(fallback.message(), "; partitioning it as ", OpcodeName(op), " first failed: ", s.message()));
    }
    s = fallback;
  }
  return s;
}

}  // namespace

HloSharding Context::TargetOf(const Instruction& inst) const {
  if (!inst.sharding()) return HloSharding::Replicate();
  StatusOr<HloSharding> s = CanonicalSharding(*inst.sharding());
  return s.ok() ? *s : HloSharding::Replicate();
}

Status Context::Finish(const Instruction& inst, const PartitionedValue& v, std::string_view why) {
  XS_ASSIGN_OR_RETURN(PartitionedValue r, v.Reshard(TargetOf(inst), why));
  Set(&inst, std::move(r));
  return OkStatus();
}

StatusOr<PartitionedValue> PartitionInstructions(const Computation& global, Context& ctx,
                                                 const HloSharding& root_target) {
  for (const Instruction* inst : global.MakeInstructionPostOrder()) {
    ctx.state().cause = inst;
    Status s = Dispatch(*inst, ctx);
    if (!s.ok()) {
      return Status(s.code(), StrCat("instruction '", inst->name(), "' (", OpcodeName(inst->opcode()),
                                     "): ", s.message()));
    }
  }
  ctx.state().cause = global.root();
  return ctx.Get(global.root()).Reshard(root_target, "result");
}

StatusOr<Computation*> PartitionCalledComputation(ModuleState& state, const Computation& global,
                                                  std::vector<HloSharding> parameter_shardings,
                                                  const HloSharding& root_target) {
  auto comp = std::make_unique<Computation>(global.name());
  comp->set_execution_thread(global.execution_thread());
  Emitter em(&state, comp.get());
  Context ctx(&state, &em, std::move(parameter_shardings));
  XS_ASSIGN_OR_RETURN(PartitionedValue root, PartitionInstructions(global, ctx, root_target));
  comp->set_root(root.hlo());
  return state.module->AddComputation(std::move(comp));
}

}  // namespace spmd::internal

namespace {

using spmd::internal::Context;

void AddLeaves(const HloSharding& s, std::vector<HloSharding>& out) {
  if (s.IsTuple()) {
    for (const HloSharding& e : s.tuple_elements()) AddLeaves(e, out);
  } else {
    out.push_back(s);
  }
}

// The common mesh of every sharding in the module, entry parameters first (they win conflicts).
TileMesh BuildMesh(const Module& module, int64_t n) {
  std::vector<HloSharding> leaves;
  for (const Instruction* p : module.entry()->parameters()) {
    if (p != nullptr && p->sharding()) AddLeaves(*p->sharding(), leaves);
  }
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (inst->sharding()) AddLeaves(*inst->sharding(), leaves);
    }
  }
  std::vector<HloSharding> canonical;
  for (const HloSharding& s : leaves) {
    StatusOr<HloSharding> c = spmd::CanonicalSharding(s);
    if (c.ok()) canonical.push_back(*std::move(c));
  }
  TileMesh::Builder builder(n, canonical);
  for (const HloSharding& s : canonical) builder.Add(s);
  return builder.Build();
}

Status ValidateShardings(const Module& module, int64_t n) {
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (!inst->sharding()) continue;
      // A leaf sharding on a tuple stands for every leaf (XLA accepts it).
      Status s = inst->shape().IsTuple() && !inst->sharding()->IsTuple()
                     ? HloSharding::Tuple(std::vector<HloSharding>(LeafCount(inst->shape()), *inst->sharding()))
                           .Validate(inst->shape(), n)
                     : inst->sharding()->Validate(inst->shape(), n);
      if (!s.ok()) {
        return InvalidArgument("instruction '", inst->name(), "' has sharding ",
                               inst->sharding()->ToString(false), " that does not fit ",
                               inst->shape().ToString(false), " on ", n, " partitions: ", s.message());
      }
    }
  }
  return OkStatus();
}

// The root with the padding of every uneven output shard set to zero.
StatusOr<Instruction*> MaskOutputs(const spmd::PartitionedValue& v) {
  if (v.global_shape().IsTuple()) {
    std::vector<Instruction*> elements;
    bool changed = false;
    for (int i = 0; i < v.global_shape().tuple_size(); ++i) {
      spmd::PartitionedValue e = v.TupleElement(i);
      XS_ASSIGN_OR_RETURN(Instruction * m, MaskOutputs(e));
      changed = changed || m != e.hlo();
      elements.push_back(m);
    }
    return changed ? v.emitter().Tuple(std::move(elements)) : v.hlo();
  }
  if (!v.global_shape().IsArray() || !v.sharding().IsTiled()) return v.hlo();
  std::vector<int> dims;
  for (int d = 0; d < v.global_shape().rank(); ++d) dims.push_back(d);
  return v.PadWithValue(nullptr, dims);
}

// The partitioner writes a computation for every call site of each called computation (a loop
// body run by two loops is partitioned twice, each for its own shardings), so computations that
// call each other from several places multiply. Refuses a module whose expanded size passes
// kMaxExpandedInstructions, naming the computation reached by the most call paths.
constexpr int64_t kMaxExpandedInstructions = 1'000'000;

Status CheckExpandedSize(const Module& global) {
  const std::vector<Computation*> order = global.MakeComputationPostOrder();  // callees first
  std::unordered_map<const Computation*, int64_t> paths;
  paths[global.entry()] = 1;
  int64_t total = 0;
  const Computation* most = nullptr;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Computation* c = *it;
    const int64_t n = paths[c];
    if (n == 0) continue;
    total = std::min(total + n * std::min<int64_t>(c->instruction_count(), kMaxExpandedInstructions),
                     kMaxExpandedInstructions + 1);
    if (most == nullptr || n > paths[most]) most = c;
    for (const Instruction* inst : c->instructions()) {
      for (const CalledComputation& call : inst->calls()) {
        int64_t& p = paths[call.computation];
        p = std::min(p + n, kMaxExpandedInstructions + 1);
      }
    }
  }
  if (total <= kMaxExpandedInstructions) return OkStatus();
  return InvalidArgument(
      "module '", global.name(), "' expands to more than ", kMaxExpandedInstructions,
      " instructions once each called computation is partitioned for its own call site (computation '", most->name(),
      "' alone is reached by ", paths[most] > kMaxExpandedInstructions ? "over " : "",
      std::min(paths[most], kMaxExpandedInstructions),
      " call paths); call shared loop bodies, branches and "
      "functions from fewer places (nested loops that each run a shared body twice double it per level)");
}

}  // namespace

Status CheckPartitionInput(const Module& global, int64_t num_partitions) {
  if (num_partitions < 1) {
    return InvalidArgument("the partition count must be >= 1, got ", num_partitions);
  }
  if (global.entry() == nullptr) return InvalidArgument("module '", global.name(), "' has no entry");
  Status valid = Verify(global);
  if (!valid.ok()) return InvalidArgument(valid.message());
  return CheckExpandedSize(global);
}

StatusOr<PropagationResult> PropagateForPartitioning(Module& global, int64_t num_partitions,
                                                     const PropagationOptions& options) {
  PropagationOptions po = options;
  po.num_devices = num_partitions;
  return PropagateShardings(global, po);
}

StatusOr<PartitionResult> Partition(const Module& global_in, int64_t num_partitions,
                                    const PartitionOptions& options) {
  XS_RETURN_IF_ERROR(CheckPartitionInput(global_in, num_partitions));
  std::unique_ptr<Module> global = global_in.Clone();
  std::optional<PropagationResult> propagated;
  if (options.propagate) {
    XS_ASSIGN_OR_RETURN(propagated, PropagateForPartitioning(*global, num_partitions, options.propagation));
  }
  XS_ASSIGN_OR_RETURN(PartitionResult result,
                      PartitionModule(*global, num_partitions, options, propagated ? &*propagated : nullptr));
  spmd::DescribeFinalProgram(result.report, *result.module);
  return result;
}

StatusOr<PartitionResult> PartitionModule(const Module& global, int64_t num_partitions,
                                          const PartitionOptions& options,
                                          const PropagationResult* propagated) {
  XS_RETURN_IF_ERROR(ValidateShardings(global, num_partitions));

  auto module = std::make_unique<Module>(global.name());
  module->mutable_config() = global.config();
  module->mutable_config().num_partitions = num_partitions;
  module->mutable_config().entry_computation_layout.reset();
  module->mutable_config().is_scheduled = false;
  spmd::ModuleState state;
  state.module = module.get();
  state.num_partitions = num_partitions;
  state.windowed_einsum_threshold_bytes = options.windowed_einsum_threshold_bytes;
  state.machine = options.machine;
  // Propagation's mesh is the one its shardings (and the per-value views) are expressed on.
  const bool use_propagated = propagated != nullptr && propagated->mesh.num_devices() == num_partitions;
  state.propagated = use_propagated ? propagated : nullptr;
  state.mesh = use_propagated ? propagated->mesh : BuildMesh(global, num_partitions);
  state.report.num_partitions = num_partitions;
  state.report.before = spmd::EstimateMemory(*global.entry());

  const Computation& entry = *global.entry();
  auto comp = std::make_unique<Computation>(entry.name());
  spmd::Emitter em(&state, comp.get());
  Context ctx(&state, &em, {});
  XS_ASSIGN_OR_RETURN(spmd::PartitionedValue root,
                      spmd::internal::PartitionInstructions(entry, ctx, ctx.TargetOf(*entry.root())));
  Instruction* out = root.hlo();
  if (options.mask_output_padding) {
    XS_ASSIGN_OR_RETURN(out, MaskOutputs(root));
  }
  comp->set_root(out);
  module->AddComputation(std::move(comp), /*is_entry=*/true);
  Status verified = Verify(*module);
  if (!verified.ok()) return Internal("the partitioned module does not verify: ", verified.message());
  state.report.machine = options.machine;
  PartitionResult result{std::move(module), std::move(state.report), {}, ctx.TargetOf(*entry.root())};
  for (const Instruction* p : entry.parameters()) result.parameter_shardings.push_back(ctx.TargetOf(*p));
  return result;
}

}  // namespace xs
