// Attribute values of HLO instructions: one parser per attribute name, chosen from a table.
// Attributes xshard does not interpret are kept verbatim (only names on the known list, so that a
// misspelt attribute is an error rather than silently ignored).
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <type_traits>
#include <unordered_map>

#include "xshard/text/parser_internal.h"

namespace xs::text_internal {
namespace {

using Handler = std::function<Status(Lexer&, AttrSink&)>;

template <typename E>
Status ParseEnumWord(Lexer& lex, std::string_view what,
                     const std::vector<std::pair<std::string_view, E>>& table,
                     std::optional<E>* out) {
  size_t at = (lex.SkipSpace(), lex.pos());
  std::string_view w = lex.ScanIdentifier();
  for (const auto& [name, e] : table)
    if (name == w) {
      *out = e;
      return OkStatus();
    }
  std::vector<std::string_view> names;
  for (const auto& [name, e] : table) names.push_back(name);
  return lex.ErrorAt(at, StrCat("unknown ", what, " '", w, "': use one of ", StrJoin(names, ", ")));
}

Handler IntListTo(std::optional<std::vector<int64_t>> Attributes::*field, std::string_view name) {
  return [field, name](Lexer& lex, AttrSink& s) -> Status {
    XS_ASSIGN_OR_RETURN(auto v, ParseIntList(lex, name));
    s.inst->mutable_attrs().*field = std::move(v);
    return OkStatus();
  };
}
Handler IntTo(std::optional<int64_t> Attributes::*field, std::string_view name) {
  return [field, name](Lexer& lex, AttrSink& s) -> Status {
    XS_ASSIGN_OR_RETURN(int64_t v, ParseInt(lex, name));
    s.inst->mutable_attrs().*field = v;
    return OkStatus();
  };
}
Handler BoolTo(bool Attributes::*field, std::string_view name) {
  return [field, name](Lexer& lex, AttrSink& s) -> Status {
    XS_ASSIGN_OR_RETURN(bool v, ParseBool(lex, name));
    s.inst->mutable_attrs().*field = v;
    return OkStatus();
  };
}
Handler OptionalBoolTo(std::optional<bool> Attributes::*field, std::string_view name) {
  return [field, name](Lexer& lex, AttrSink& s) -> Status {
    XS_ASSIGN_OR_RETURN(bool v, ParseBool(lex, name));
    s.inst->mutable_attrs().*field = v;
    return OkStatus();
  };
}
Handler DoubleTo(std::optional<double> Attributes::*field, std::string_view name) {
  return [field, name](Lexer& lex, AttrSink& s) -> Status {
    size_t at = (lex.SkipSpace(), lex.pos());
    std::string_view text = lex.ScanNumberText();
    double v = 0;
    if (text.empty() || !ParseDouble(text, &v))
      return lex.ErrorAt(at, StrCat("bad value for attribute '", name, "': expected a number, got '",
                                    text.empty() ? lex.PeekWord() : text, "'"));
    s.inst->mutable_attrs().*field = v;
    return OkStatus();
  };
}
// An enum word looked up by `parse` (ir/attributes.h); the error names the attribute, the word
// and the accepted spellings.
template <typename E>
Handler EnumTo(std::optional<E> Attributes::*field, std::string_view name,
               std::optional<E> (*parse)(std::string_view), std::string_view choices) {
  return [field, name, parse, choices](Lexer& lex, AttrSink& s) -> Status {
    size_t at = (lex.SkipSpace(), lex.pos());
    std::string_view w = lex.ScanIdentifier();
    std::optional<E> e = parse(w);
    if (!e)
      return lex.ErrorAt(at, StrCat("bad value for attribute '", name, "': '", w,
                                    "' is not one of ", choices));
    s.inst->mutable_attrs().*field = *e;
    return OkStatus();
  };
}
Handler StringTo(std::optional<std::string> Attributes::*field) {
  return [field](Lexer& lex, AttrSink& s) -> Status {
    XS_ASSIGN_OR_RETURN(std::string v, ParseString(lex));
    s.inst->mutable_attrs().*field = std::move(v);
    return OkStatus();
  };
}
// Gather's and scatter's dimension numbers belong to their own op only (as XLA's parser: on any
// other op the printer could not write them back, index_vector_dim being both ops' field).
Status OnlyOn(Lexer& lex, const AttrSink& s, std::string_view name, std::initializer_list<Opcode> ops) {
  for (Opcode op : ops) {
    if (s.inst->opcode() == op) return OkStatus();
  }
  std::string owners;
  for (Opcode op : ops) owners += StrCat(owners.empty() ? "" : " and ", OpcodeName(op));
  return lex.Error(StrCat("attribute '", name, "' belongs to ", owners, ", not to ", OpcodeName(s.inst->opcode()),
                          " '", s.inst->name(), "'; remove it"));
}
template <typename D>
Handler DnumsList(std::optional<D> Attributes::*dn, std::vector<int64_t> D::*field,
                  std::string_view name) {
  return [dn, field, name](Lexer& lex, AttrSink& s) -> Status {
    if constexpr (std::is_same_v<D, GatherDimensionNumbers>) {
      XS_RETURN_IF_ERROR(OnlyOn(lex, s, name, {Opcode::kGather}));
    } else if constexpr (std::is_same_v<D, ScatterDimensionNumbers>) {
      XS_RETURN_IF_ERROR(OnlyOn(lex, s, name, {Opcode::kScatter}));
    }
    XS_ASSIGN_OR_RETURN(auto v, ParseIntList(lex, name));
    auto& opt = s.inst->mutable_attrs().*dn;
    if (!opt) opt.emplace();
    (*opt).*field = std::move(v);
    return OkStatus();
  };
}
Handler Call(CallRole role) {
  return [role](Lexer& lex, AttrSink& s) -> Status {
    size_t pos = (lex.SkipSpace(), lex.pos());
    if (lex.PeekRaw() == '{') {
      XS_ASSIGN_OR_RETURN(auto names, ParseNameList(lex, "computations"));
      for (auto& n : names) s.calls->push_back({s.inst, role, std::move(n)});
      return OkStatus();
    }
    XS_ASSIGN_OR_RETURN(std::string n, ParseName(lex, "a computation name"));
    s.calls->push_back({s.inst, role, {std::move(n), pos}});
    return OkStatus();
  };
}

// Attribute names kept verbatim (XLA attributes xshard does not interpret).
constexpr std::string_view kVerbatim[] = {
    "algorithm", "batch_norm", "cross_program_prefetch_index", "domain", "is_associative",
    "is_composite", "is_host_transfer", "is_reverse", "num_carries",
    "origin", "output_to_operand_aliasing", "result_accuracy",
    "schedule", "split_dimension", "statistics", "lhs_group_dims", "ragged_dot_mode", "delta",
    "parameter_replication", "composite", "sparsity", "mode", "dynamic_slice_sizes_list",
    "slice_sizes_list", "scatter_dim", "known_cycle", "literal", "sparsity_config",
};

const std::unordered_map<std::string_view, Handler>& Table() {
  static const auto* table = new std::unordered_map<std::string_view, Handler>{
      {"dimensions", IntListTo(&Attributes::dimensions, "dimensions")},
      {"index", IntTo(&Attributes::tuple_index, "index")},
      {"iota_dimension", IntTo(&Attributes::iota_dimension, "iota_dimension")},
      {"slice", ParseSlice},
      {"dynamic_slice_sizes", IntListTo(&Attributes::dynamic_slice_sizes, "dynamic_slice_sizes")},
      {"padding", ParsePadding},
      {"window", ParseWindow},
      {"dim_labels", ParseDimLabels},
      {"feature_group_count",
       [](Lexer& lex, AttrSink& s) -> Status {
         XS_ASSIGN_OR_RETURN(s.inst->mutable_attrs().feature_group_count,
                             ParseInt(lex, "feature_group_count"));
         return OkStatus();
       }},
      {"batch_group_count",
       [](Lexer& lex, AttrSink& s) -> Status {
         XS_ASSIGN_OR_RETURN(s.inst->mutable_attrs().batch_group_count,
                             ParseInt(lex, "batch_group_count"));
         return OkStatus();
       }},
      {"lhs_batch_dims", DnumsList(&Attributes::dot, &DotDimensionNumbers::lhs_batch, "lhs_batch_dims")},
      {"rhs_batch_dims", DnumsList(&Attributes::dot, &DotDimensionNumbers::rhs_batch, "rhs_batch_dims")},
      {"lhs_contracting_dims",
       DnumsList(&Attributes::dot, &DotDimensionNumbers::lhs_contracting, "lhs_contracting_dims")},
      {"rhs_contracting_dims",
       DnumsList(&Attributes::dot, &DotDimensionNumbers::rhs_contracting, "rhs_contracting_dims")},
      {"offset_dims", DnumsList(&Attributes::gather, &GatherDimensionNumbers::offset_dims, "offset_dims")},
      {"collapsed_slice_dims", DnumsList(&Attributes::gather,
                                         &GatherDimensionNumbers::collapsed_slice_dims,
                                         "collapsed_slice_dims")},
      {"start_index_map",
       DnumsList(&Attributes::gather, &GatherDimensionNumbers::start_index_map, "start_index_map")},
      {"operand_batching_dims", DnumsList(&Attributes::gather,
                                          &GatherDimensionNumbers::operand_batching_dims,
                                          "operand_batching_dims")},
      {"start_indices_batching_dims",
       DnumsList(&Attributes::gather, &GatherDimensionNumbers::start_indices_batching_dims,
                 "start_indices_batching_dims")},
      {"slice_sizes",
       [](Lexer& lex, AttrSink& s) -> Status {
         size_t at = (lex.SkipSpace(), lex.pos());
         if (lex.TryConsume('{') && lex.Peek() == '{') {  // collective-permute: one list per pair
           lex.set_pos(at);
           XS_ASSIGN_OR_RETURN(std::string v, lex.ScanBraced());
           s.inst->mutable_attrs().other.push_back({"slice_sizes", std::move(v)});
           return OkStatus();
         }
         lex.set_pos(at);
         XS_ASSIGN_OR_RETURN(s.inst->mutable_attrs().slice_sizes, ParseIntList(lex, "slice_sizes"));
         return OkStatus();
       }},
      {"update_window_dims", DnumsList(&Attributes::scatter,
                                       &ScatterDimensionNumbers::update_window_dims,
                                       "update_window_dims")},
      {"inserted_window_dims", DnumsList(&Attributes::scatter,
                                         &ScatterDimensionNumbers::inserted_window_dims,
                                         "inserted_window_dims")},
      {"scatter_dims_to_operand_dims",
       DnumsList(&Attributes::scatter, &ScatterDimensionNumbers::scatter_dims_to_operand_dims,
                 "scatter_dims_to_operand_dims")},
      {"input_batching_dims", DnumsList(&Attributes::scatter,
                                        &ScatterDimensionNumbers::input_batching_dims,
                                        "input_batching_dims")},
      {"scatter_indices_batching_dims",
       DnumsList(&Attributes::scatter, &ScatterDimensionNumbers::scatter_indices_batching_dims,
                 "scatter_indices_batching_dims")},
      {"index_vector_dim",
       [](Lexer& lex, AttrSink& s) -> Status {
         XS_RETURN_IF_ERROR(OnlyOn(lex, s, "index_vector_dim", {Opcode::kGather, Opcode::kScatter}));
         XS_ASSIGN_OR_RETURN(int64_t v, ParseInt(lex, "index_vector_dim"));
         Attributes& a = s.inst->mutable_attrs();
         if (s.inst->opcode() == Opcode::kScatter) {
           if (!a.scatter) a.scatter.emplace();
           a.scatter->index_vector_dim = v;
         } else {
           if (!a.gather) a.gather.emplace();
           a.gather->index_vector_dim = v;
         }
         return OkStatus();
       }},
      {"indices_are_sorted", BoolTo(&Attributes::indices_are_sorted, "indices_are_sorted")},
      {"unique_indices", BoolTo(&Attributes::unique_indices, "unique_indices")},
      {"direction",
       [](Lexer& lex, AttrSink& s) -> Status {
         size_t at = (lex.SkipSpace(), lex.pos());
         std::string_view w = lex.ScanIdentifier();
         auto d = ParseComparisonDirection(w);
         if (!d) return lex.ErrorAt(at, StrCat("unknown comparison direction '", w,
                                               "': use EQ, NE, GE, GT, LE or LT"));
         s.inst->mutable_attrs().comparison_direction = *d;
         return OkStatus();
       }},
      {"replica_groups", ParseReplicaGroups},
      {"channel_id", IntTo(&Attributes::channel_id, "channel_id")},
      {"use_global_device_ids", BoolTo(&Attributes::use_global_device_ids, "use_global_device_ids")},
      {"constrain_layout", BoolTo(&Attributes::constrain_layout, "constrain_layout")},
      {"source_target_pairs", ParseSourceTargetPairs},
      {"to_apply", Call(CallRole::kToApply)},
      {"condition", Call(CallRole::kCondition)},
      {"body", Call(CallRole::kBody)},
      {"true_computation", Call(CallRole::kTrueComputation)},
      {"false_computation", Call(CallRole::kFalseComputation)},
      {"branch_computations", Call(CallRole::kBranch)},
      {"calls", Call(CallRole::kCalls)},
      {"select", Call(CallRole::kSelect)},
      {"scatter", Call(CallRole::kScatter)},
      {"called_computations", Call(CallRole::kCalledComputations)},
      {"kind",
       [](Lexer& lex, AttrSink& s) -> Status {
         XS_ASSIGN_OR_RETURN(std::string k, ParseName(lex, "a fusion kind such as kLoop"));
         s.inst->mutable_attrs().fusion_kind = std::move(k);
         return OkStatus();
       }},
      {"custom_call_target", StringTo(&Attributes::custom_call_target)},
      {"api_version",
       [](Lexer& lex, AttrSink& s) -> Status {
         size_t at = (lex.SkipSpace(), lex.pos());
         XS_ASSIGN_OR_RETURN(std::string k, ParseName(lex, "an API_VERSION_* name"));
         if (k != "API_VERSION_ORIGINAL" && k != "API_VERSION_STATUS_RETURNING" &&
             k != "API_VERSION_STATUS_RETURNING_UNIFIED" && k != "API_VERSION_TYPED_FFI")
           return lex.ErrorAt(at, StrCat("unknown api_version '", k,
                                         "': use API_VERSION_ORIGINAL, API_VERSION_STATUS_RETURNING, "
                                         "API_VERSION_STATUS_RETURNING_UNIFIED or "
                                         "API_VERSION_TYPED_FFI"));
         s.inst->mutable_attrs().api_version = std::move(k);
         return OkStatus();
       }},
      {"custom_call_has_side_effect",
       BoolTo(&Attributes::custom_call_has_side_effect, "custom_call_has_side_effect")},
      {"backend_config",
       [](Lexer& lex, AttrSink& s) -> Status {
         XS_ASSIGN_OR_RETURN(std::string v, lex.ScanVerbatimValue());
         s.inst->mutable_attrs().backend_config = std::move(v);
         return OkStatus();
       }},
      {"operand_precision", ParseOperandPrecision},
      {"is_stable", BoolTo(&Attributes::is_stable, "is_stable")},
      {"distribution",
       [](Lexer& lex, AttrSink& s) -> Status {
         return ParseEnumWord<RngDistribution>(
             lex, "rng distribution",
             {{"rng_uniform", RngDistribution::kUniform}, {"rng_normal", RngDistribution::kNormal}},
             &s.inst->mutable_attrs().distribution);
       }},
      {"exponent_bits", IntTo(&Attributes::exponent_bits, "exponent_bits")},
      {"mantissa_bits", IntTo(&Attributes::mantissa_bits, "mantissa_bits")},
      {"infeed_config", StringTo(&Attributes::infeed_config)},
      {"outfeed_config", StringTo(&Attributes::outfeed_config)},
      {"operand_layout_constraints",
       [](Lexer& lex, AttrSink& s) -> Status {
         XS_RETURN_IF_ERROR(lex.Expect('{', "to open operand_layout_constraints={shape, ...}"));
         std::vector<Shape> shapes;
         if (!lex.TryConsume('}')) {
           do {
             XS_ASSIGN_OR_RETURN(Shape sh, ParseShape(lex));
             shapes.push_back(std::move(sh));
           } while (lex.TryConsume(','));
           XS_RETURN_IF_ERROR(lex.Expect('}', "to close operand_layout_constraints"));
         }
         s.inst->mutable_attrs().operand_layout_constraints = std::move(shapes);
         return OkStatus();
       }},
      {"outfeed_shape",
       [](Lexer& lex, AttrSink& s) -> Status {
         XS_ASSIGN_OR_RETURN(Shape sh, ParseShape(lex));
         s.inst->mutable_attrs().outfeed_shape = std::move(sh);
         return OkStatus();
       }},
      {"metadata",
       [](Lexer& lex, AttrSink& s) -> Status {
         XS_ASSIGN_OR_RETURN(std::string v, lex.ScanBraced());
         s.inst->mutable_attrs().metadata =
             std::string(StripWhitespace(std::string_view(v).substr(1, v.size() - 2)));
         return OkStatus();
       }},
      {"frontend_attributes", ParseFrontendAttributes},
      {"fft_type", EnumTo<FftType>(&Attributes::fft_type, "fft_type", &ParseFftType,
                                   "FFT, IFFT, RFFT, IRFFT")},
      {"fft_length", IntListTo(&Attributes::fft_length, "fft_length")},
      {"k", IntTo(&Attributes::k, "k")},
      {"largest", OptionalBoolTo(&Attributes::largest, "largest")},
      {"lower", OptionalBoolTo(&Attributes::lower, "lower")},
      {"left_side", OptionalBoolTo(&Attributes::left_side, "left_side")},
      {"unit_diagonal", OptionalBoolTo(&Attributes::unit_diagonal, "unit_diagonal")},
      {"transpose_a", EnumTo<TransposeKind>(&Attributes::transpose_a, "transpose_a",
                                            &ParseTransposeKind,
                                            "NO_TRANSPOSE, TRANSPOSE, ADJOINT")},
      {"epsilon", DoubleTo(&Attributes::epsilon, "epsilon")},
      {"feature_index", IntTo(&Attributes::feature_index, "feature_index")},
      {"lhs_ragged_dims", IntListTo(&Attributes::lhs_ragged_dims, "lhs_ragged_dims")},
      {"rhs_group_dims", IntListTo(&Attributes::rhs_group_dims, "rhs_group_dims")},
      {"async_execution_thread", StringTo(&Attributes::async_execution_thread)},
      {"sharding", ParseSharding},
      {"control-predecessors",
       [](Lexer& lex, AttrSink& s) -> Status {
         XS_ASSIGN_OR_RETURN(auto names, ParseNameList(lex, "control predecessors"));
         for (auto& n : names) s.control_predecessors.push_back(std::move(n));
         return OkStatus();
       }},
  };
  return *table;
}

}  // namespace

Status ParseAttribute(Lexer& lex, AttrSink& sink) {
  size_t at = (lex.SkipSpace(), lex.pos());
  std::string_view name = lex.PeekWord();
  if (name.empty()) return lex.Error("expected an attribute name=value after ','");
  if (!sink.seen.emplace(name).second) {
    return lex.ErrorAt(at, StrCat("attribute '", name, "' is given twice on '", sink.inst->name(),
                                  "'; keep one"));
  }
  lex.set_pos(at + name.size());
  if (!lex.TryConsume('='))
    return lex.Error(StrCat("expected '=' after attribute name '", name, "'"));
  Opcode op = sink.inst->opcode();
  // Opcode-dependent meanings of a few names.
  if (name == "type" && op == Opcode::kCompare) {
    size_t vat = (lex.SkipSpace(), lex.pos());
    std::string_view w = lex.ScanIdentifier();
    auto t = ParseComparisonType(w);
    if (!t) return lex.ErrorAt(vat, StrCat("unknown comparison type '", w,
                                           "': use FLOAT, TOTALORDER, SIGNED or UNSIGNED"));
    sink.inst->mutable_attrs().comparison_type = *t;
    return OkStatus();
  }
  if (name == "algorithm" && op == Opcode::kRngBitGenerator) {
    return ParseEnumWord<RngAlgorithm>(lex, "rng algorithm",
                                       {{"rng_default", RngAlgorithm::kDefault},
                                        {"rng_three_fry", RngAlgorithm::kThreeFry},
                                        {"rng_philox", RngAlgorithm::kPhilox}},
                                       &sink.inst->mutable_attrs().rng_algorithm);
  }
  const auto& table = Table();
  if (auto it = table.find(name); it != table.end()) {
    Status st = it->second(lex, sink);
    if (!st.ok() && st.detail() != StatusDetail::kTextPosition)
      return lex.ErrorAt(at, StrCat("bad value for attribute '", name, "': ", st.message()));
    return st;
  }
  bool verbatim = name == "type" ||
                  std::find(std::begin(kVerbatim), std::end(kVerbatim), name) != std::end(kVerbatim);
  if (!verbatim)
    return lex.ErrorAt(at, StrCat("unknown attribute '", name, "' on ", OpcodeName(op),
                                  ": check the spelling against XLA's HLO text"));
  XS_ASSIGN_OR_RETURN(std::string v, lex.ScanVerbatimValue());
  sink.inst->mutable_attrs().other.push_back({std::string(name), std::move(v)});
  return OkStatus();
}

}  // namespace xs::text_internal
