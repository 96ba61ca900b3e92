// The HLO text parser: module header, computations, instructions and their operands; attribute
// values are in attribute_parser.cc / attribute_values.cc, literals in literal_text.cc. Names are
// resolved (parser_resolve.cc) after each computation, since operands may be defined later in the
// text, and computations after the module.
#include "xshard/text/parser.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "xshard/text/literal_text.h"
#include "xshard/text/parser_impl.h"

namespace xs {
namespace text_internal {

StatusOr<std::unique_ptr<Module>> Parser::Run() {
  module_ = std::make_unique<Module>("");
  lex_.SkipSpace();
  if (lex_.TryConsumeWord("HloModule")) {
    has_header_ = true;
    XS_RETURN_IF_ERROR(ParseHeader());
  }
  XS_RETURN_IF_ERROR(ParseStackFrameSections());
  while (!lex_.AtEnd()) XS_RETURN_IF_ERROR(ParseComputation());
  if (last_ == nullptr)
    return lex_.Error("the module has no computations: add an ENTRY computation, e.g. "
                      "ENTRY main { ROOT c = f32[] constant(0) }");
  XS_RETURN_IF_ERROR(ResolveModule());
  module_->set_entry(entry_ != nullptr ? entry_ : last_);
  if (!has_header_) module_->set_name(module_->entry()->name());
  return std::move(module_);
}

Status Parser::ParseHeader() {
  std::string_view name = lex_.ScanIdentifier();
  if (name.empty()) return lex_.Error("expected a module name after HloModule");
  module_->set_name(std::string(name));
  lex_.TryConsume(':');  // old XLA text writes "HloModule name:"
  while (lex_.TryConsume(',')) XS_RETURN_IF_ERROR(ParseHeaderAttribute());
  return OkStatus();
}

Status Parser::ParseHeaderAttribute() {
  size_t at = (lex_.SkipSpace(), lex_.pos());
  std::string_view key = lex_.PeekWord();
  lex_.set_pos(at + key.size());
  if (key.empty() || !lex_.TryConsume('='))
    return lex_.ErrorAt(at, "expected a module attribute name=value after ','");
  ModuleConfig& c = module_->mutable_config();
  auto parse_int = [&](int64_t* out) -> Status {
    if (!lex_.ScanInt(out) || *out < 1)
      return lex_.Error(StrCat("expected a positive integer for ", key));
    return OkStatus();
  };
  auto parse_bools = [&](std::vector<bool>* out) -> Status {
    bool braced = lex_.TryConsume('{');
    do {
      if (lex_.TryConsumeWord("true")) out->push_back(true);
      else if (lex_.TryConsumeWord("false")) out->push_back(false);
      else return lex_.Error(StrCat("expected true or false in ", key));
    } while (braced && lex_.TryConsume(','));
    return braced ? lex_.Expect('}', StrCat("to close ", key)) : OkStatus();
  };
  if (key == "is_scheduled") {
    if (lex_.TryConsumeWord("true")) c.is_scheduled = true;
    else if (lex_.TryConsumeWord("false")) c.is_scheduled = false;
    else return lex_.Error("expected true or false for is_scheduled");
  } else if (key == "replica_count") {
    XS_RETURN_IF_ERROR(parse_int(&c.replica_count));
  } else if (key == "num_partitions") {
    XS_RETURN_IF_ERROR(parse_int(&c.num_partitions));
  } else if (key == "entry_computation_layout") {
    XS_ASSIGN_OR_RETURN(std::string v, lex_.ScanBraced());
    c.entry_computation_layout = v.substr(1, v.size() - 2);
  } else if (key == "allow_spmd_sharding_propagation_to_parameters") {
    c.allow_spmd_sharding_propagation_to_parameters.clear();
    XS_RETURN_IF_ERROR(parse_bools(&c.allow_spmd_sharding_propagation_to_parameters));
  } else if (key == "allow_spmd_sharding_propagation_to_output") {
    c.allow_spmd_sharding_propagation_to_output.clear();
    XS_RETURN_IF_ERROR(parse_bools(&c.allow_spmd_sharding_propagation_to_output));
  } else {
    static constexpr std::string_view kVerbatim[] = {
        "input_output_alias", "buffer_donor", "frontend_attributes", "alias_passthrough_params",
        "origin_recovery_table", "cross_program_prefetches", "use_auto_spmd_partitioning",
        "spmd_output_sharding", "spmd_parameters_shardings"};
    if (std::find(std::begin(kVerbatim), std::end(kVerbatim), key) == std::end(kVerbatim))
      return lex_.ErrorAt(at, StrCat("unknown module attribute '", key,
                                     "': check the spelling against XLA's HloModule header"));
    XS_ASSIGN_OR_RETURN(std::string v, lex_.ScanVerbatimValue());
    if (v.empty()) return lex_.Error(StrCat("expected a value for module attribute ", key));
    // Aliasing attributes come first, as the printer writes them (keeps round trips equal).
    bool aliasing = key == "input_output_alias" || key == "buffer_donor";
    auto pos = c.other.end();
    if (aliasing)
      pos = std::find_if(c.other.begin(), c.other.end(), [](const auto& kv) {
        return kv.first != "input_output_alias" && kv.first != "buffer_donor";
      });
    c.other.insert(pos, {std::string(key), std::move(v)});
  }
  return OkStatus();
}

// FileNames / FunctionNames / FileLocations / StackFrames: a title, then lines `N "text"` or
// `N {key=value ...}`. Kept verbatim.
Status Parser::ParseStackFrameSections() {
  size_t start = (lex_.SkipSpace(), lex_.pos()), end = start;
  for (;;) {
    size_t at = (lex_.SkipSpace(), lex_.pos());
    std::string_view word = lex_.PeekWord();
    if (word != "FileNames" && word != "FunctionNames" && word != "FileLocations" &&
        word != "StackFrames")
      break;
    lex_.set_pos(at + word.size());
    if (lex_.Peek() < '0' || lex_.Peek() > '9') {
      lex_.set_pos(at);  // a computation with that name
      break;
    }
    int64_t id;
    while (lex_.ScanInt(&id)) {
      if (lex_.Peek() == '"') {
        std::string ignored;
        Status st;
        if (!lex_.ScanString(&ignored, &st)) return st;
      } else {
        XS_RETURN_IF_ERROR(lex_.ScanBraced().status());
      }
      end = lex_.pos();
    }
  }
  if (end > start)
    module_->mutable_config().stack_frame_sections =
        std::string(lex_.text().substr(start, end - start));
  return OkStatus();
}

Status Parser::ParseSignature(CompState& st) {
  st.has_signature = true;
  st.signature_pos = (lex_.SkipSpace(), lex_.pos());
  XS_RETURN_IF_ERROR(lex_.Expect('(', "to open the computation's parameter list"));
  if (!lex_.TryConsume(')')) {
    do {
      if (lex_.ScanIdentifier().empty()) return lex_.Error("expected a parameter name");
      XS_RETURN_IF_ERROR(lex_.Expect(':', "after a parameter name in the signature"));
      XS_RETURN_IF_ERROR(text_internal::ParseShape(lex_).status());
    } while (lex_.TryConsume(','));
    XS_RETURN_IF_ERROR(lex_.Expect(')', "to close the computation's parameter list"));
  }
  if (!lex_.TryConsume("->")) return lex_.Error("expected '->' and the result shape");
  XS_ASSIGN_OR_RETURN(st.signature_result, text_internal::ParseShape(lex_));
  return OkStatus();
}

Status Parser::ParseComputation() {
  bool is_entry = lex_.TryConsumeWord("ENTRY");
  size_t at = (lex_.SkipSpace(), lex_.pos());
  std::string_view name = lex_.ScanIdentifier();
  if (name.empty())
    return lex_.Error(is_entry ? "expected the entry computation's name after ENTRY"
                               : "expected a computation (name { ... }) or ENTRY");
  if (auto it = computation_pos_.find(std::string(name)); it != computation_pos_.end()) {
    int line, col;
    lex_.LineCol(it->second, &line, &col);
    return lex_.ErrorAt(at, StrCat("computation '", name, "' is defined twice (first at line ",
                                   line, "): rename one"));
  }
  computation_pos_[std::string(name)] = at;
  CompState st;
  if (lex_.Peek() == '(') XS_RETURN_IF_ERROR(ParseSignature(st));
  XS_RETURN_IF_ERROR(lex_.Expect('{', StrCat("to open the body of computation '", name, "'")));
  if (is_entry && entry_ != nullptr)
    return lex_.ErrorAt(at, StrCat("second ENTRY computation '", name, "': a module has one"));
  st.comp = module_->AddComputation(std::make_unique<Computation>(std::string(name)));
  if (is_entry) entry_ = st.comp;
  last_ = st.comp;
  while (!lex_.TryConsume('}')) {
    if (lex_.AtEnd())
      return lex_.ErrorAt(at, StrCat("computation '", name, "' is not closed: add '}'"));
    XS_RETURN_IF_ERROR(ParseInstruction(st));
  }
  if (lex_.TryConsume(',')) {
    if (!lex_.TryConsumeWord("execution_thread") || !lex_.TryConsume('='))
      return lex_.Error("expected execution_thread=\"...\" after the computation");
    std::string thread;
    Status s;
    if (!lex_.ScanString(&thread, &s)) return s;
    st.comp->set_execution_thread(std::move(thread));
  }
  return ResolveComputation(st);
}

Status Parser::ParseInstruction(CompState& st) {
  bool is_root = lex_.TryConsumeWord("ROOT");
  size_t at = (lex_.SkipSpace(), lex_.pos());
  std::string_view name = lex_.ScanIdentifier();
  if (name.empty()) return lex_.Error("expected an instruction (name = shape opcode(operands))");
  if (auto it = st.by_name.find(std::string(name)); it != st.by_name.end()) {
    int line, col;
    lex_.LineCol(it->second.second, &line, &col);
    return lex_.ErrorAt(at, StrCat("instruction name '", name, "' is used twice in computation '",
                                   st.comp->name(), "' (first at line ", line, ")"));
  }
  XS_RETURN_IF_ERROR(lex_.Expect('=', StrCat("after instruction name '", name, "'")));
  std::optional<Shape> shape;
  if (text_internal::AtShape(lex_)) {
    XS_ASSIGN_OR_RETURN(shape, text_internal::ParseShape(lex_));
  }
  XS_ASSIGN_OR_RETURN(Instruction * inst, ParseRhs(st, std::string(name), at, 0, true, shape));
  if (is_root) {
    if (st.root != nullptr)
      return lex_.ErrorAt(at, StrCat("second ROOT '", name, "' in computation '", st.comp->name(),
                                     "' (the first is '", st.root->name(), "')"));
    st.root = inst;
  }
  st.last_named = inst;
  return OkStatus();
}

namespace {

// Splits "add-start" into (kAdd, kStart) when it is sugar rather than a real opcode.
std::optional<std::pair<Opcode, Sugar>> SugarOf(std::string_view word) {
  for (auto [suffix, kind] : {std::pair<std::string_view, Sugar>{"-start", Sugar::kStart},
                              {"-update", Sugar::kUpdate}, {"-done", Sugar::kDone}}) {
    if (word.size() > suffix.size() && word.ends_with(suffix))
      if (auto base = OpcodeFromName(word.substr(0, word.size() - suffix.size())))
        return std::pair{*base, kind};
  }
  return std::nullopt;
}

}  // namespace

StatusOr<Instruction*> Parser::ParseRhs(CompState& st, std::string name, size_t name_pos,
                                        int depth, bool with_attributes,
                                        std::optional<Shape> shape) {
  if (depth > kMaxDepth) return lex_.Error("operands nest too deeply (over 64 levels)");
  size_t op_at = (lex_.SkipSpace(), lex_.pos());
  std::string_view word = lex_.PeekWord();
  lex_.set_pos(op_at + word.size());
  if (word.empty()) return lex_.ErrorAt(op_at, "expected an opcode such as add, dot, parameter");
  if (!shape && lex_.PeekRaw() == '[') {  // a shape with a misspelt type: report the type
    lex_.set_pos(op_at);
    return text_internal::ParseShape(lex_).status();
  }
  InstrInfo info;
  info.pos = name_pos;
  std::optional<Opcode> opcode = OpcodeFromName(word);
  if (!opcode) {
    auto sugar = SugarOf(word);
    if (!sugar) return lex_.ErrorAt(op_at, StrCat("unknown opcode '", word, "'"));
    info.sugar = sugar->second;
    info.sugar_base = sugar->first;
    opcode = info.sugar == Sugar::kStart    ? Opcode::kAsyncStart
             : info.sugar == Sugar::kUpdate ? Opcode::kAsyncUpdate
                                            : Opcode::kAsyncDone;
  }
  info.shape_missing = !shape.has_value();
  auto owned = Instruction::Create(*opcode, shape.value_or(Shape::Tuple({})), {}, name);
  Instruction* inst = owned.get();
  info.inst = inst;
  XS_RETURN_IF_ERROR(lex_.Expect('(', StrCat("after opcode '", word, "'")));
  if (*opcode == Opcode::kParameter) {
    int64_t n;
    if (!lex_.ScanInt(&n) || n < 0) return lex_.Error("expected a parameter number (0, 1, ...)");
    if (auto it = st.parameter_pos.find(n); it != st.parameter_pos.end())
      return lex_.ErrorAt(op_at, StrCat("parameter number ", n, " is used twice in computation '",
                                        st.comp->name(), "'"));
    st.parameter_pos[n] = op_at;
    inst->mutable_attrs().parameter_number = n;
    XS_RETURN_IF_ERROR(lex_.Expect(')', "after the parameter number"));
  } else if (*opcode == Opcode::kConstant) {
    if (!shape) return lex_.ErrorAt(op_at, "a constant needs its shape, e.g. f32[2] constant({1, 2})");
    XS_ASSIGN_OR_RETURN(Literal lit, ParseLiteral(lex_, *shape));
    inst->mutable_attrs().literal = std::move(lit);
    XS_RETURN_IF_ERROR(lex_.Expect(')', "after the constant's value"));
  } else {
    XS_RETURN_IF_ERROR(ParseOperands(st, info, depth));
  }
  // Attributes. Sugar `X-start` parses them onto the wrapped X instruction.
  std::unique_ptr<Instruction> wrapped;
  if (info.sugar == Sugar::kStart)
    wrapped = Instruction::Create(info.sugar_base, Shape::Tuple({}), {},
                                  std::string(OpcodeName(info.sugar_base)));
  AttrSink sink{wrapped ? wrapped.get() : inst, &calls_, {}, {}};
  while (with_attributes && lex_.TryConsume(',')) XS_RETURN_IF_ERROR(text_internal::ParseAttribute(lex_, sink));
  info.control_predecessors = std::move(sink.control_predecessors);
  if (wrapped) {
    // Async-level attributes stay on the async-start; the rest belong to the wrapped op.
    Attributes& wa = wrapped->mutable_attrs();
    Attributes& sa = inst->mutable_attrs();
    inst->set_sharding(wrapped->sharding());
    wrapped->set_sharding(std::nullopt);
    sa.metadata = std::move(wa.metadata);
    wa.metadata.reset();
    sa.async_execution_thread = std::move(wa.async_execution_thread);
    wa.async_execution_thread.reset();
    const Shape& s = inst->shape();
    if (!s.IsTuple() || s.tuple_size() < 2 || !s.tuple_shape(0).IsTuple())
      return lex_.ErrorAt(op_at, StrCat("'", word, "' needs the async shape ((operand shapes...), "
                                        "result shape, ...), got ", s.ToString()));
    auto comp = std::make_unique<Computation>(StrCat(name.empty() ? "async" : name, ".wrapped"));
    comp->set_async_sugar(true);
    std::vector<Instruction*> params;
    for (int i = 0; i < s.tuple_shape(0).tuple_size(); ++i) {
      auto p = Instruction::Create(Opcode::kParameter, s.tuple_shape(0).tuple_shape(i), {},
                                   StrCat("param_", i));
      p->mutable_attrs().parameter_number = i;
      params.push_back(comp->AddInstruction(std::move(p)));
    }
    for (Instruction* p : params) wrapped->AppendOperand(p);
    wrapped->set_shape(s.tuple_shape(1));
    comp->set_root(comp->AddInstruction(std::move(wrapped)));
    inst->AddCall(CallRole::kCalls, comp.get());
    wrapped_.push_back(std::move(comp));
  }
  if (info.sugar != Sugar::kNone || *opcode == Opcode::kAsyncUpdate ||
      *opcode == Opcode::kAsyncDone)
    async_fixes_.push_back({inst, op_at, info.sugar, info.sugar_base});
  st.infos.push_back(std::move(info));
  if (name.empty()) {
    st.anon.push_back(std::move(owned));
  } else {
    st.by_name[name] = {inst, name_pos};
    st.comp->AddInstruction(std::move(owned));
  }
  return inst;
}

Status Parser::ParseOperands(CompState& st, InstrInfo& info, int depth) {
  if (lex_.TryConsume(')')) return OkStatus();
  do {
    OperandRef ref;
    if (text_internal::AtShape(lex_)) {
      XS_ASSIGN_OR_RETURN(ref.written_shape, text_internal::ParseShape(lex_));
    }
    size_t at = (lex_.SkipSpace(), lex_.pos());
    bool percent = lex_.PeekRaw() == '%';
    std::string_view name = lex_.ScanIdentifier();
    if (name.empty()) return lex_.Error("expected an operand name");
    if (!percent && lex_.Peek() == '(') {  // nested anonymous instruction: f32[] parameter(0)
      lex_.set_pos(at);
      XS_ASSIGN_OR_RETURN(ref.anon,
                          ParseRhs(st, "", at, depth + 1, false, std::move(ref.written_shape)));
      ref.written_shape.reset();
    } else {
      ref.ref = {std::string(name), at};
    }
    info.operands.push_back(std::move(ref));
  } while (lex_.TryConsume(','));
  return lex_.Expect(')', "to close the operand list");
}


}  // namespace text_internal

namespace {

// Where an MLIR module or function starts (`module @name ...`, `module {`, `module attributes`,
// `func.func`, a `#loc` alias, the generic `"builtin.module"`), or nullopt for anything else.
std::optional<size_t> MlirStart(std::string_view text) {
  const size_t at = text.find_first_not_of(" \t\r\n");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view head = text.substr(at);
  if (head.starts_with("func.func") || head.starts_with("#loc") || head.starts_with("\"builtin.module\"")) {
    return at;
  }
  if (!head.starts_with("module")) return std::nullopt;
  const size_t next = head.find_first_not_of(" \t", 6);
  if (next == 6 || next == std::string_view::npos) return std::nullopt;  // "moduleX", or nothing after
  return head[next] == '@' || head[next] == '{' || head.substr(next).starts_with("attributes")
             ? std::optional<size_t>(at)
             : std::nullopt;
}

}  // namespace

StatusOr<std::unique_ptr<Module>> ParseHloModule(std::string_view text, std::string_view filename) {
  // XLA's lexer rejects a byte order mark as it rejects any byte that starts no token; say what
  // it is, since editors hide it.
  if (text.starts_with("\xEF\xBB\xBF")) {
    return Lexer(text, filename)
        .ErrorAt(0, "the text starts with a UTF-8 byte order mark (bytes EF BB BF), which XLA's HLO "
                    "parser does not accept either; save the file as UTF-8 without a BOM");
  }
  // MLIR (StableHLO or MHLO) is what jax.jit(f).lower(...).as_text() prints by default: say so,
  // and how to get HLO text, instead of failing on its first token.
  if (std::optional<size_t> at = MlirStart(text)) {
    return Lexer(text, filename)
        .ErrorAt(*at,
                 "the text is MLIR (StableHLO or MHLO, what jax.jit(f).lower(...).as_text() prints "
                 "by default), not HLO text; xshard reads HLO text: write "
                 "jax.jit(f).lower(...).as_text(dialect='hlo') (from Python, xshard.from_jax "
                 "takes the function itself)");
  }
  text_internal::Parser parser(text, filename);
  return parser.Run();
}

StatusOr<Shape> ParseShapeText(std::string_view text) {
  Lexer lex(text, "<shape>");
  XS_ASSIGN_OR_RETURN(Shape s, text_internal::ParseShape(lex));
  if (!lex.AtEnd()) return lex.Error("unexpected text after the shape");
  return s;
}

}  // namespace xs
