// The HLO printer: module header, computations, instruction lines and every typed attribute in a
// fixed canonical order (op-specific attributes, called computations, verbatim attributes, then
// sharding, control-predecessors, frontend_attributes, metadata, backend_config).
#include "xshard/text/printer.h"

#include <unordered_set>

#include "xshard/text/literal_text.h"

namespace xs {
namespace {

std::string Ints(const std::vector<int64_t>& v) { return StrCat("{", StrJoin(v, ","), "}"); }

std::string Name(std::string_view name, const PrintOptions& o) {
  bool digit = !name.empty() && name[0] >= '0' && name[0] <= '9';
  return StrCat(o.percent_names || digit ? "%" : "", name);
}

std::string PaddingText(const std::vector<PaddingDim>& pads) {
  bool interior = false;
  for (const auto& p : pads) interior |= p.interior != 0;
  std::vector<std::string> parts;
  for (const auto& p : pads)
    parts.push_back(interior ? StrCat(p.low, "_", p.high, "_", p.interior)
                             : StrCat(p.low, "_", p.high));
  return StrJoin(parts, "x");
}

std::string WindowText(const Window& w) {
  std::vector<std::string> fields;
  auto field = [&](std::string_view key, auto get, int64_t dflt, bool always) {
    bool any = always;
    std::vector<std::string> v;
    for (const auto& d : w.dims) {
      v.push_back(StrCat(get(d)));
      any |= get(d) != dflt;
    }
    if (any && !w.dims.empty()) fields.push_back(StrCat(key, "=", StrJoin(v, "x")));
  };
  field("size", [](const WindowDim& d) { return d.size; }, 1, true);
  field("stride", [](const WindowDim& d) { return d.stride; }, 1, false);
  bool pad = false;
  std::vector<std::string> pads;
  for (const auto& d : w.dims) {
    pad |= d.pad_low != 0 || d.pad_high != 0;
    pads.push_back(StrCat(d.pad_low, "_", d.pad_high));
  }
  if (pad) fields.push_back(StrCat("pad=", StrJoin(pads, "x")));
  field("lhs_dilate", [](const WindowDim& d) { return d.lhs_dilation; }, 1, false);
  field("rhs_dilate", [](const WindowDim& d) { return d.rhs_dilation; }, 1, false);
  field("rhs_reversal", [](const WindowDim& d) { return int64_t{d.window_reversal}; }, 0, false);
  return StrCat("{", StrJoin(fields, " "), "}");
}

std::string DimLabels(const ConvolutionDimensionNumbers& c) {
  auto side = [](int64_t a_pos, char a, int64_t b_pos, char b, const std::vector<int64_t>& sp) {
    std::string s(sp.size() + 2, '?');
    auto put = [&](int64_t pos, char ch) {
      if (pos >= 0 && pos < static_cast<int64_t>(s.size())) s[pos] = ch;
    };
    put(a_pos, a);
    put(b_pos, b);
    for (size_t i = 0; i < sp.size(); ++i) put(sp[i], static_cast<char>('0' + i));
    return s;
  };
  return StrCat(side(c.input_batch, 'b', c.input_feature, 'f', c.input_spatial), "_",
                side(c.kernel_input_feature, 'i', c.kernel_output_feature, 'o', c.kernel_spatial),
                "->", side(c.output_batch, 'b', c.output_feature, 'f', c.output_spatial));
}

std::string ReplicaGroupsText(const ReplicaGroups& rg) {
  if (!rg.mesh_form.empty()) return rg.mesh_form;  // as written, like XLA's dumps
  if (rg.iota) {
    std::string s = StrCat("[", rg.num_groups, ",", rg.group_size, "]<=[",
                           StrJoin(rg.reshape_dims, ","), "]");
    if (!rg.transpose_perm.empty()) StrAppend(&s, "T(", StrJoin(rg.transpose_perm, ","), ")");
    return s;
  }
  std::vector<std::string> groups;
  for (const auto& g : rg.groups) groups.push_back(Ints(g));
  return StrCat("{", StrJoin(groups, ","), "}");
}

using Attrs = std::vector<std::pair<std::string, std::string>>;

// Op-specific typed attributes, in canonical order.
void TypedAttributes(const Instruction& inst, Attrs& out) {
  const Attributes& a = inst.attrs();
  auto add = [&](std::string_view k, std::string v) { out.push_back({std::string(k), std::move(v)}); };
  if (a.dimensions) add("dimensions", Ints(*a.dimensions));
  if (a.tuple_index) add("index", StrCat(*a.tuple_index));
  if (a.iota_dimension) add("iota_dimension", StrCat(*a.iota_dimension));
  if (a.slice) {
    std::vector<std::string> dims;
    for (const auto& d : *a.slice)
      dims.push_back(d.stride == 1 ? StrCat("[", d.start, ":", d.limit, "]")
                                   : StrCat("[", d.start, ":", d.limit, ":", d.stride, "]"));
    add("slice", StrCat("{", StrJoin(dims, ", "), "}"));
  }
  if (a.dynamic_slice_sizes) add("dynamic_slice_sizes", Ints(*a.dynamic_slice_sizes));
  if (a.padding) add("padding", PaddingText(*a.padding));
  if (a.window) add("window", WindowText(*a.window));
  if (a.conv_dims) add("dim_labels", DimLabels(*a.conv_dims));
  if (a.feature_group_count != 1) add("feature_group_count", StrCat(a.feature_group_count));
  if (a.batch_group_count != 1) add("batch_group_count", StrCat(a.batch_group_count));
  if (a.dot) {
    if (!a.dot->lhs_batch.empty()) add("lhs_batch_dims", Ints(a.dot->lhs_batch));
    add("lhs_contracting_dims", Ints(a.dot->lhs_contracting));
    if (!a.dot->rhs_batch.empty()) add("rhs_batch_dims", Ints(a.dot->rhs_batch));
    add("rhs_contracting_dims", Ints(a.dot->rhs_contracting));
  }
  if (a.operand_precision) {
    std::vector<std::string_view> names;
    for (Precision p : *a.operand_precision) names.push_back(PrecisionName(p));
    add("operand_precision", StrCat("{", StrJoin(names, ","), "}"));
  }
  if (a.gather) {
    const auto& g = *a.gather;
    add("offset_dims", Ints(g.offset_dims));
    add("collapsed_slice_dims", Ints(g.collapsed_slice_dims));
    add("start_index_map", Ints(g.start_index_map));
    if (!g.operand_batching_dims.empty()) add("operand_batching_dims", Ints(g.operand_batching_dims));
    if (!g.start_indices_batching_dims.empty())
      add("start_indices_batching_dims", Ints(g.start_indices_batching_dims));
    add("index_vector_dim", StrCat(g.index_vector_dim));
  }
  if (a.slice_sizes) add("slice_sizes", Ints(*a.slice_sizes));
  if (a.scatter) {
    const auto& s = *a.scatter;
    add("update_window_dims", Ints(s.update_window_dims));
    add("inserted_window_dims", Ints(s.inserted_window_dims));
    add("scatter_dims_to_operand_dims", Ints(s.scatter_dims_to_operand_dims));
    if (!s.input_batching_dims.empty()) add("input_batching_dims", Ints(s.input_batching_dims));
    if (!s.scatter_indices_batching_dims.empty())
      add("scatter_indices_batching_dims", Ints(s.scatter_indices_batching_dims));
    add("index_vector_dim", StrCat(s.index_vector_dim));
  }
  if (a.indices_are_sorted) add("indices_are_sorted", "true");
  if (a.unique_indices) add("unique_indices", "true");
  if (a.comparison_direction)
    add("direction", std::string(ComparisonDirectionName(*a.comparison_direction)));
  if (a.comparison_type != ComparisonType::kNone)
    add("type", std::string(ComparisonTypeName(a.comparison_type)));
  if (a.channel_id) add("channel_id", StrCat(*a.channel_id));
  if (a.replica_groups) add("replica_groups", ReplicaGroupsText(*a.replica_groups));
  if (a.use_global_device_ids) add("use_global_device_ids", "true");
  if (a.constrain_layout) add("constrain_layout", "true");
  if (a.source_target_pairs) {
    std::vector<std::string> pairs;
    for (auto [s, t] : *a.source_target_pairs) pairs.push_back(StrCat("{", s, ",", t, "}"));
    add("source_target_pairs", StrCat("{", StrJoin(pairs, ","), "}"));
  }
  if (a.fusion_kind) add("kind", *a.fusion_kind);
  if (a.custom_call_target) add("custom_call_target", CEscape(*a.custom_call_target));
  if (a.operand_layout_constraints) {
    std::vector<std::string> shapes;
    for (const Shape& sh : *a.operand_layout_constraints) shapes.push_back(sh.ToString());
    add("operand_layout_constraints", StrCat("{", StrJoin(shapes, ", "), "}"));
  }
  if (a.api_version) add("api_version", *a.api_version);
  if (a.custom_call_has_side_effect) add("custom_call_has_side_effect", "true");
  if (a.is_stable) add("is_stable", "true");
  if (a.distribution)
    add("distribution", a.distribution == RngDistribution::kUniform ? "rng_uniform" : "rng_normal");
  if (a.rng_algorithm) {
    constexpr std::string_view kNames[] = {"rng_default", "rng_three_fry", "rng_philox"};
    add("algorithm", std::string(kNames[static_cast<int>(*a.rng_algorithm)]));
  }
  if (a.exponent_bits) add("exponent_bits", StrCat(*a.exponent_bits));
  if (a.mantissa_bits) add("mantissa_bits", StrCat(*a.mantissa_bits));
  if (a.infeed_config) add("infeed_config", CEscape(*a.infeed_config));
  if (a.outfeed_config) add("outfeed_config", CEscape(*a.outfeed_config));
  if (a.outfeed_shape) add("outfeed_shape", a.outfeed_shape->ToString());
  if (a.fft_type) add("fft_type", std::string(FftTypeName(*a.fft_type)));
  if (a.fft_length) add("fft_length", Ints(*a.fft_length));
  if (a.k) add("k", StrCat(*a.k));
  auto add_bool = [&](std::string_view k, const std::optional<bool>& v) {
    if (v) add(k, *v ? "true" : "false");
  };
  add_bool("largest", a.largest);
  add_bool("left_side", a.left_side);
  add_bool("lower", a.lower);
  add_bool("unit_diagonal", a.unit_diagonal);
  if (a.transpose_a) add("transpose_a", std::string(TransposeKindName(*a.transpose_a)));
  if (a.epsilon) add("epsilon", StrCat(*a.epsilon));
  if (a.feature_index) add("feature_index", StrCat(*a.feature_index));
  if (a.lhs_ragged_dims) add("lhs_ragged_dims", Ints(*a.lhs_ragged_dims));
  if (a.rhs_group_dims) add("rhs_group_dims", Ints(*a.rhs_group_dims));
}

// Attributes of an async wrapper itself that the sugar form (`add-start`) keeps on the start.
void AsyncAttributes(const Instruction& inst, Attrs& out) {
  if (inst.attrs().async_execution_thread)
    out.push_back({"async_execution_thread", CEscape(*inst.attrs().async_execution_thread)});
}

bool IsListRole(CallRole r) {
  return r == CallRole::kBranch || r == CallRole::kCalledComputations;
}

void CallAttributes(const Instruction& inst, const PrintOptions& o, bool skip_calls, Attrs& out) {
  const auto& calls = inst.calls();
  for (size_t i = 0; i < calls.size();) {
    CallRole role = calls[i].role;
    size_t j = i;
    while (j < calls.size() && calls[j].role == role) ++j;
    if (role == CallRole::kCalls && skip_calls) {
      i = j;
      continue;
    }
    if (IsListRole(role) || j - i > 1) {
      std::vector<std::string> names;
      for (size_t k = i; k < j; ++k) names.push_back(Name(calls[k].computation->name(), o));
      out.push_back({std::string(CallRoleName(role)), StrCat("{", StrJoin(names, ", "), "}")});
    } else {
      out.push_back({std::string(CallRoleName(role)), Name(calls[i].computation->name(), o)});
    }
    i = j;
  }
}

// The wrapped instruction of async sugar (`add-start`), or nullptr.
const Instruction* SugarRoot(const Instruction& inst) {
  if (!IsAsync(inst.opcode())) return nullptr;
  const Computation* c = inst.async_wrapped_computation();
  return c != nullptr && c->is_async_sugar() ? c->root() : nullptr;
}

// Stored order when it defines every operand before its use (or the module is scheduled), so
// that parsed text keeps its layout; otherwise post order.
std::vector<Instruction*> PrintOrder(const Computation& c) {
  std::vector<Instruction*> order = c.instructions();
  if (c.parent() != nullptr && c.parent()->config().is_scheduled) return order;
  std::unordered_set<const Instruction*> seen;
  for (const Instruction* inst : order) {
    for (const Instruction* op : inst->operands())
      if (!seen.contains(op)) return c.MakeInstructionPostOrder();
    for (const Instruction* op : inst->control_predecessors())
      if (!seen.contains(op)) return c.MakeInstructionPostOrder();
    seen.insert(inst);
  }
  return order;
}

}  // namespace

std::string PrintInstruction(const Instruction& inst, const PrintOptions& o) {
  const Instruction* sugar = SugarRoot(inst);
  std::string opname(OpcodeName(inst.opcode()));
  if (sugar != nullptr) {
    constexpr std::string_view kSuffix[] = {"-done", "-start", "-update"};
    int k = inst.opcode() == Opcode::kAsyncDone ? 0 : inst.opcode() == Opcode::kAsyncStart ? 1 : 2;
    opname = StrCat(OpcodeName(sugar->opcode()), kSuffix[k]);
  }
  std::string s = StrCat(Name(inst.name(), o), " = ", inst.shape().ToString(), " ", opname, "(");
  const Attributes& a = inst.attrs();
  if (inst.opcode() == Opcode::kParameter && a.parameter_number) {
    StrAppend(&s, *a.parameter_number);
  } else if (inst.opcode() == Opcode::kConstant && a.literal) {
    s += PrintLiteral(*a.literal);
  } else {
    for (int i = 0; i < inst.operand_count(); ++i) {
      if (i) s += ", ";
      if (o.operand_shapes) StrAppend(&s, inst.operand(i)->shape().ToString(), " ");
      s += Name(inst.operand(i)->name(), o);
    }
  }
  s += ")";
  // Async update / done repeat their operand's computation implicitly.
  bool implicit_calls = sugar != nullptr;
  if ((inst.opcode() == Opcode::kAsyncUpdate || inst.opcode() == Opcode::kAsyncDone) &&
      inst.operand_count() == 1 &&
      inst.operand(0)->async_wrapped_computation() == inst.async_wrapped_computation())
    implicit_calls = true;
  const Instruction& typed = sugar != nullptr && inst.opcode() == Opcode::kAsyncStart ? *sugar : inst;
  Attrs attrs;
  TypedAttributes(typed, attrs);
  AsyncAttributes(inst, attrs);
  CallAttributes(typed, o, implicit_calls, attrs);
  if (&typed != &inst) CallAttributes(inst, o, true, attrs);
  for (const auto& kv : typed.attrs().other) attrs.push_back(kv);
  if (&typed != &inst)
    for (const auto& kv : a.other) attrs.push_back(kv);
  if (inst.sharding()) attrs.push_back({"sharding", inst.sharding()->ToString()});
  if (!inst.control_predecessors().empty()) {
    std::vector<std::string> names;
    for (const Instruction* p : inst.control_predecessors()) names.push_back(Name(p->name(), o));
    attrs.push_back({"control-predecessors", StrCat("{", StrJoin(names, ", "), "}")});
  }
  if (const auto& fa = typed.attrs().frontend_attributes) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : *fa) {
      bool braced = v.size() >= 2 && v.front() == '{' && v.back() == '}';
      kv.push_back(StrCat(k, "=", braced ? v : CEscape(v)));
    }
    attrs.push_back({"frontend_attributes", StrCat("{", StrJoin(kv, ","), "}")});
  }
  if (o.metadata && a.metadata) attrs.push_back({"metadata", StrCat("{", *a.metadata, "}")});
  if (o.backend_config && typed.attrs().backend_config)
    attrs.push_back({"backend_config", *typed.attrs().backend_config});
  for (const auto& [k, v] : attrs) StrAppend(&s, ", ", k, "=", v);
  return s;
}

std::string PrintComputation(const Computation& c, const PrintOptions& o) {
  std::string s = StrCat(c.IsEntry() ? "ENTRY " : "", Name(c.name(), o));
  bool all_params = true;
  for (const Instruction* p : c.parameters()) all_params &= p != nullptr;
  if (o.computation_signatures && all_params && c.root() != nullptr) {
    std::vector<std::string> params;
    for (const Instruction* p : c.parameters())
      params.push_back(StrCat(p->name(), ": ", p->shape().ToString(false)));
    StrAppend(&s, " (", StrJoin(params, ", "), ") -> ", c.root()->shape().ToString(false));
  }
  s += " {\n";
  for (const Instruction* inst : PrintOrder(c))
    StrAppend(&s, "  ", inst == c.root() ? "ROOT " : "", PrintInstruction(*inst, o), "\n");
  s += "}";
  if (!c.execution_thread().empty())
    StrAppend(&s, ", execution_thread=", CEscape(c.execution_thread()));
  return s;
}

std::string PrintHloModule(const Module& m, const PrintOptions& o) {
  const ModuleConfig& c = m.config();
  std::string s = StrCat("HloModule ", m.name().empty() ? "module" : m.name());
  if (c.is_scheduled) s += ", is_scheduled=true";
  // XLA's order: aliasing first, then the layout and counts, then everything else.
  auto aliasing = [](const std::string& k) { return k == "input_output_alias" || k == "buffer_donor"; };
  for (const auto& [k, v] : c.other)
    if (aliasing(k)) StrAppend(&s, ", ", k, "=", v);
  if (c.entry_computation_layout)
    StrAppend(&s, ", entry_computation_layout={", *c.entry_computation_layout, "}");
  auto bools = [](const std::vector<bool>& v) {
    std::vector<std::string_view> parts;
    for (bool b : v) parts.push_back(b ? "true" : "false");
    return StrCat("{", StrJoin(parts, ","), "}");
  };
  if (!c.allow_spmd_sharding_propagation_to_parameters.empty())
    StrAppend(&s, ", allow_spmd_sharding_propagation_to_parameters=",
              bools(c.allow_spmd_sharding_propagation_to_parameters));
  if (!c.allow_spmd_sharding_propagation_to_output.empty())
    StrAppend(&s, ", allow_spmd_sharding_propagation_to_output=",
              bools(c.allow_spmd_sharding_propagation_to_output));
  if (c.replica_count != 1) StrAppend(&s, ", replica_count=", c.replica_count);
  if (c.num_partitions != 1) StrAppend(&s, ", num_partitions=", c.num_partitions);
  for (const auto& [k, v] : c.other)
    if (!aliasing(k)) StrAppend(&s, ", ", k, "=", v);
  s += "\n";
  if (!c.stack_frame_sections.empty()) StrAppend(&s, "\n", c.stack_frame_sections, "\n");
  for (const Computation* comp : m.MakeComputationPostOrder()) {
    if (comp->is_async_sugar()) continue;
    StrAppend(&s, "\n", PrintComputation(*comp, o), "\n");
  }
  return s;
}

}  // namespace xs
