// PropagateShardings (the engine's driver), origin texts and the --explain annotation of printed
// module text.
#include "xshard/propagation/propagation.h"

#include "xshard/base/strings.h"
#include "xshard/propagation/engine.h"

namespace xs {
namespace {

std::string Name(const Instruction* inst) {
  return inst == nullptr ? "?" : "%" + inst->name();
}

}  // namespace

std::string ShardingOrigin::ToString() const {
  switch (kind) {
    case Kind::kUser:
      return from == nullptr ? "user annotation"
                             : StrCat("user annotation of custom-call Sharding ", Name(from));
    case Kind::kForward: return StrCat("forward from ", Name(from), " (level ", level, ")");
    case Kind::kBackward: return StrCat("backward from ", Name(from), " (level ", level, ")");
    case Kind::kCallEdge: return StrCat("call edge from ", Name(from), " (level ", level, ")");
    case Kind::kDefault: return "no sharding reached it: replicated";
    case Kind::kClosed: return "entry parameter / output closed to propagation: replicated";
    case Kind::kUneven:
      return StrCat("replicated: the sharding from ", Name(from),
                    " splits this entry parameter / output unevenly");
    case Kind::kOutput:
      return StrCat("as the output it alone produces, ", Name(from), ", whose uneven split was dropped");
  }
  return "?";
}

const ShardingOrigin* PropagationResult::OriginOf(const Instruction& inst, int leaf) const {
  const PropagatedValue* v = ValueOf(inst);
  if (v == nullptr || leaf < 0 || leaf >= static_cast<int>(v->origins.size())) return nullptr;
  return &v->origins[leaf];
}

std::string PropagationResult::Explain(const Instruction& inst) const {
  const PropagatedValue* v = ValueOf(inst);
  if (v == nullptr) return "";
  const std::vector<ShardingOrigin>& o = v->origins;
  if (o.size() == 1 && !inst.shape().IsTuple()) return o[0].ToString();
  std::vector<std::string> parts;
  for (const ShardingOrigin& x : o) parts.push_back(x.ToString());
  return StrCat("{", StrJoin(parts, "; "), "}");
}

StatusOr<PropagationResult> PropagateShardings(Module& module, const PropagationOptions& options) {
  propagation_internal::Engine engine(module, options);
  XS_RETURN_IF_ERROR(engine.Setup());
  XS_RETURN_IF_ERROR(engine.Run());
  return engine.Finish();
}

std::string AnnotateWithOrigins(const std::string& printed, const Module& module,
                                const PropagationResult& result) {
  std::string out;
  const Computation* comp = nullptr;
  const std::vector<std::string_view> lines = StrSplit(printed, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    std::string_view body = line;
    std::string suffix;
    if (!line.empty() && line[0] != ' ' && line.back() == '{') {
      // A computation header: "[ENTRY ]%name (params) -> shape {" or "ENTRY name {".
      std::string_view h = line;
      if (h.substr(0, 6) == "ENTRY ") h.remove_prefix(6);
      if (!h.empty() && h[0] == '%') h.remove_prefix(1);
      const size_t end = h.find_first_of(" (");
      comp = module.GetComputation(std::string(h.substr(0, end)));
    } else if (comp != nullptr && line.substr(0, 2) == "  ") {
      std::string_view h = StripWhitespace(line);
      if (h.substr(0, 5) == "ROOT ") h.remove_prefix(5);
      if (!h.empty() && h[0] == '%') h.remove_prefix(1);
      const size_t eq = h.find(" = ");
      if (eq != std::string_view::npos) {
        const Instruction* inst = comp->GetInstruction(std::string(h.substr(0, eq)));
        if (inst != nullptr) {
          const std::string why = result.Explain(*inst);
          if (!why.empty()) suffix = "  // <- " + why;
        }
      }
    }
    out.append(body);
    out.append(suffix);
    if (i + 1 < lines.size()) out.push_back('\n');
  }
  return out;
}

}  // namespace xs
