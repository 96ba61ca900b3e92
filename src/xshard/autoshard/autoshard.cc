// Autoshard: strips or keeps the module's shardings, runs the search, writes its choice into the
// module, and compiles and prices each candidate plan with the real pipeline.
#include "xshard/autoshard/autoshard.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "xshard/autoshard/search.h"
#include "xshard/base/strings.h"
#include "xshard/ir/opcode.h"
#include "xshard/jit/compile_pipeline.h"
#include "xshard/sharding/named_sharding.h"

namespace xs::autoshard {
namespace {

// op_name="..." of the instruction's metadata, or "".
std::string JaxName(const Instruction& inst) {
  const auto& md = inst.attrs().metadata;
  if (!md) return "";
  const size_t at = md->find("op_name=\"");
  if (at == std::string::npos) return "";
  const size_t begin = at + 9;
  const size_t end = md->find('"', begin);
  return end == std::string::npos ? "" : md->substr(begin, end - begin);
}

// The name a user knows a parameter by: its op_name metadata, else its HLO name without the ".N"
// suffix JAX's lowering appends ("w1.1" -> "w1") when no other parameter has the same stem.
std::string UserName(const Instruction& p) {
  std::string jax = JaxName(p);
  if (!jax.empty()) return jax;
  auto stem = [](const std::string& name) {
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == name.size()) return name;
    for (size_t i = dot + 1; i < name.size(); ++i) {
      if (name[i] < '0' || name[i] > '9') return name;
    }
    return name.substr(0, dot);
  };
  const std::string s = stem(p.name());
  for (const Instruction* q : p.parent()->parameters()) {
    if (q != nullptr && q != &p && stem(q->name()) == s) return p.name();
  }
  return s;
}

bool IsManualRegion(const Instruction& inst) {
  if (inst.has_sharding()) {
    const HloSharding& s = *inst.sharding();
    if (s.IsManual()) return true;
    if (s.IsTuple()) {
      for (const HloSharding& e : s.tuple_elements()) {
        if (e.IsManual()) return true;
      }
    }
  }
  if (inst.opcode() == Opcode::kCustomCall) {
    const auto& t = inst.attrs().custom_call_target;
    return t && (*t == "SPMDFullToShardShape" || *t == "SPMDShardToFullShape");
  }
  return false;
}

StatusOr<HloSharding> ToSharding(const DimAxes& axes, const Mesh& mesh) {
  std::vector<PartitionSpec::Entry> entries;
  for (const auto& dim : axes) {
    PartitionSpec::Entry e;
    for (int a : dim) e.push_back(mesh.axis_names()[a]);
    entries.push_back(std::move(e));
  }
  XS_ASSIGN_OR_RETURN(NamedSharding named, NamedSharding::Create(mesh, PartitionSpec(std::move(entries))));
  return named.ToHloSharding(static_cast<int>(axes.size()));
}

// The split `sharding` gives an array of `shape` on `mesh`, when a spec on the mesh expresses it.
std::optional<DimAxes> AxesOf(const HloSharding& sharding, const Shape& shape, const Mesh& mesh) {
  if (!shape.IsArray()) return std::nullopt;
  if (sharding.IsReplicated()) return Replicated(shape.rank());
  StatusOr<NamedSharding> named = NamedSharding::FromHloSharding(mesh, sharding);
  if (!named.ok()) return std::nullopt;
  DimAxes axes(static_cast<size_t>(shape.rank()));
  const auto& entries = named->spec().entries();
  for (size_t d = 0; d < entries.size() && d < axes.size(); ++d) {
    for (const std::string& name : entries[d]) {
      StatusOr<int> a = mesh.AxisIndex(name);
      if (!a.ok()) return std::nullopt;
      axes[d].push_back(*a);
    }
  }
  return axes;
}

// `sharding` as a spec on `mesh` (its HloSharding text where no spec expresses it).
PlannedTensor Planned(std::string name, const Shape& shape, const HloSharding& sharding, const Mesh& mesh) {
  PlannedTensor t{std::move(name), shape, "", {}, true};
  const std::optional<DimAxes> axes = AxesOf(sharding, shape, mesh);
  if (!axes) {
    t.spec = sharding.ToString();
    t.expressible = false;
    return t;
  }
  for (const auto& dim : *axes) {
    auto& names = t.axes.emplace_back();
    for (int a : dim) names.push_back(mesh.axis_names()[a]);
  }
  t.spec = SpecText(*axes, mesh);
  return t;
}

enum class Pin { kEverything, kParametersAndOutputs, kReplicated };

// A copy of `base` with the search's choice written as shardings (`pin` says which values).
StatusOr<std::unique_ptr<Module>> Materialize(const Module& base, const std::map<const Instruction*, DimAxes>& chosen,
                                              const Mesh& mesh,
                                              Pin pin) {
  std::unique_ptr<Module> m = base.Clone();
  Computation* entry = m->entry();
  Instruction* root = entry->root();
  std::set<const Instruction*> outputs;
  if (root->opcode() == Opcode::kTuple) {
    outputs.insert(root->operands().begin(), root->operands().end());
  } else {
    outputs.insert(root);
  }
  const Computation* base_entry = base.entry();
  for (Instruction* inst : entry->instructions()) {
    const Instruction* original = base_entry->GetInstruction(inst->name());
    auto it = original ? chosen.find(original) : chosen.end();
    if (it == chosen.end()) continue;
    const bool wanted = pin == Pin::kEverything || inst->opcode() == Opcode::kParameter || outputs.count(inst) > 0;
    if (!wanted) continue;
    if (pin == Pin::kReplicated) {
      inst->set_sharding(HloSharding::Replicate());
      continue;
    }
    XS_ASSIGN_OR_RETURN(HloSharding s, ToSharding(it->second, mesh));
    inst->set_sharding(std::move(s));
  }
  if (root->opcode() == Opcode::kTuple) {
    std::vector<HloSharding> elements;
    for (const Instruction* o : root->operands()) {
      if (!o->has_sharding() || o->sharding()->IsTuple()) return m;  // nested tuples: left to propagation
      elements.push_back(*o->sharding());
    }
    root->set_sharding(HloSharding::Tuple(std::move(elements)));
  }
  return m;
}

}  // namespace

StatusOr<PlanEvaluation> EvaluateAnnotated(const Module& annotated, const Mesh& mesh, const StepEvaluator& evaluate,
                                           std::string label) {
  CompileOptions options;
  XS_ASSIGN_OR_RETURN(CompiledModule compiled, CompileModule(annotated, mesh.num_devices(), options));
  PlanEvaluation plan;
  plan.label = std::move(label);
  plan.report = compiled.partitioned.report;
  plan.seconds = evaluate(*compiled.partitioned.module, plan.report);
  plan.peak_bytes = plan.report.after.peak_bytes;
  const Computation* entry = annotated.entry();
  const auto& params = compiled.partitioned.parameter_shardings;
  for (int i = 0; i < entry->num_parameters() && i < static_cast<int>(params.size()); ++i) {
    const Instruction* p = entry->parameter(i);
    if (p == nullptr) continue;
    plan.parameters.push_back(Planned(UserName(*p), p->shape(), params[i], mesh));
  }
  const Shape& out = entry->root()->shape();
  const HloSharding& os = compiled.partitioned.output_sharding;
  if (out.IsTuple()) {
    for (int i = 0; i < out.tuple_size(); ++i) {
      const HloSharding s = os.IsTuple() && i < static_cast<int>(os.tuple_elements().size()) ? os.tuple_elements()[i] : os;
      plan.outputs.push_back(Planned(StrCat("output ", i), out.tuple_shape(i), s, mesh));
    }
  } else {
    plan.outputs.push_back(Planned("output 0", out, os, mesh));
  }
  return plan;
}

StatusOr<AutoshardResult> Autoshard(const Module& module, const AutoshardOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (module.entry() == nullptr) return InvalidArgument("autoshard: the module has no entry computation");
  if (!options.evaluate) return Internal("autoshard: no step evaluator given");
  const Mesh& mesh = options.mesh;
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (IsManualRegion(*inst)) {
        return Unimplemented("autoshard: ", inst->name(), " is part of a manual (shard_map) region; autoshard plans "
                             "jit-style programs: give it the program without shard_map, or run this one as it is");
      }
    }
  }
  if (options.keep_annotations && module.config().num_partitions > 1 &&
      module.config().num_partitions != mesh.num_devices()) {
    return InvalidArgument("autoshard: --keep-annotations: the module is sharded for ", module.config().num_partitions,
                           " devices but the mesh ", mesh.ToString(), " has ", mesh.num_devices(),
                           "; give a mesh of that size or drop --keep-annotations");
  }
  std::unique_ptr<Module> base = module.Clone();
  base->mutable_config().num_partitions = mesh.num_devices();
  base->mutable_config().allow_spmd_sharding_propagation_to_parameters.clear();
  base->mutable_config().allow_spmd_sharding_propagation_to_output.clear();
  std::map<const Instruction*, DimAxes> kept;
  for (Computation* c : base->computations()) {
    for (Instruction* inst : c->instructions()) {
      if (options.keep_annotations && c == base->entry()) {
        if (!inst->has_sharding()) continue;
        if (auto axes = AxesOf(*inst->sharding(), inst->shape(), mesh)) kept[inst] = *axes;
        continue;
      }
      if (!options.keep_annotations) inst->set_sharding(std::nullopt);
    }
  }
  // Forbidden (parameter, dim, axis) triples, resolved.
  std::map<const Instruction*, std::vector<std::pair<int, int>>> forbidden;
  for (const AutoshardOptions::Forbid& f : options.forbid) {
    XS_ASSIGN_OR_RETURN(int axis, mesh.AxisIndex(f.axis));
    bool matched = false;
    for (const Instruction* p : base->entry()->parameters()) {
      if (p == nullptr || !(f.value == "*" || f.value == p->name() || f.value == UserName(*p))) continue;
      if (!p->shape().IsArray() || f.dim < 0 || f.dim >= p->shape().rank()) {
        if (f.value == "*") continue;
        return InvalidArgument("autoshard: --forbid ", f.value, ":", f.dim, "=", f.axis, ": ", p->name(), " is ",
                               p->shape().ToString(false), ", which has no dim ", f.dim);
      }
      forbidden[p].push_back({f.dim, axis});
      matched = true;
    }
    if (!matched && f.value != "*") {
      return NotFound("autoshard: --forbid names '", f.value, "', which is no parameter of the entry (by JAX name or "
                      "HLO name); the parameters are listed by `xshard autoshard` without --forbid");
    }
  }
  auto allowed = [&](const Instruction& inst, const Strategy& s) {
    if (auto k = kept.find(&inst); k != kept.end() && s.result != k->second) return false;
    if (auto f = forbidden.find(&inst); f != forbidden.end()) {
      for (auto [dim, axis] : f->second) {
        const auto& d = s.result[dim];
        if (std::find(d.begin(), d.end(), axis) != d.end()) return false;
      }
    }
    return true;
  };
  XS_ASSIGN_OR_RETURN(SearchOutcome search, SearchShardings(*base->entry(), options, allowed));

  AutoshardResult result;
  result.stats = search.stats;
  result.notes = search.notes;
  struct Candidate {
    const std::map<const Instruction*, DimAxes>* chosen;
    Pin pin;
    std::string label;
  };
  std::vector<Candidate> plans = {{&search.chosen, Pin::kEverything, "search"},
                                  {&search.chosen, Pin::kParametersAndOutputs, "search (parameters and outputs pinned)"}};
  for (size_t k = 0; k < search.alternatives.size(); ++k) {
    plans.push_back({&search.alternatives[k], Pin::kEverything,
                     StrCat("local optimum ", k + 1, " (search estimate ",
                            spmd::FormatSeconds(search.alternative_estimates[k]), ")")});
  }
  if (!(options.keep_annotations && !kept.empty())) plans.push_back({&search.chosen, Pin::kReplicated, "replicated"});
  Status first_error;
  double first_compile_s = 0;
  for (const Candidate& c : plans) {
    // Local optima are extra checks: skipped when one compile is slow (big programs).
    if (c.label.rfind("local optimum", 0) == 0 && first_compile_s > 0.5) {
      result.notes.push_back(StrCat(c.label, ": not compiled (one compile takes ", spmd::FormatSeconds(first_compile_s),
                                    ")"));
      continue;
    }
    const auto c0 = std::chrono::steady_clock::now();
    XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> m, Materialize(*base, *c.chosen, mesh, c.pin));
    StatusOr<PlanEvaluation> e = EvaluateAnnotated(*m, mesh, options.evaluate, c.label);
    if (&c == &plans.front()) {
      first_compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    }
    if (!e.ok()) {
      if (first_error.ok()) first_error = e.status();
      result.notes.push_back(StrCat(c.label, ": not compiled: ", e.status().message()));
      continue;
    }
    result.candidates.push_back(std::move(*e));
    result.candidate_modules.push_back(std::move(m));
  }
  if (result.candidates.empty()) return Annotate(first_error, "autoshard: compiling the chosen plan: ");
  // The fastest that fits; when none fits, the smallest.
  const auto budget = options.memory_per_device;
  int best = -1;
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    const PlanEvaluation& c = result.candidates[i];
    if (budget > 0 && c.peak_bytes > budget) continue;
    if (best < 0 || c.seconds < result.candidates[best].seconds) best = static_cast<int>(i);
  }
  if (best < 0) {
    for (size_t i = 0; i < result.candidates.size(); ++i) {
      if (best < 0 || result.candidates[i].peak_bytes < result.candidates[best].peak_bytes) best = static_cast<int>(i);
    }
    result.notes.push_back(StrCat("no compiled plan fits ", spmd::FormatBytes(budget),
                                  " per device (the partitioner's program holds more than the search counted); the "
                                  "smallest is shown"));
  }
  result.plan = result.candidates[best];
  result.chosen = best;
  result.annotated = result.candidate_modules[best]->Clone();
  result.stats.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace xs::autoshard
