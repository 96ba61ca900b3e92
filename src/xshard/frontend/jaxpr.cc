// Jaxpr basics: aval printing, literal atoms, JaxprBuilder, and PrintJaxpr (JAX's pretty-printed
// layout: variables renamed a, b, ..., params in brackets, nested jaxprs indented, lines over 80
// columns broken one parameter per line).
#include "xshard/frontend/jaxpr.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <unordered_map>

#include "xshard/base/strings.h"

namespace xs::fe {

namespace {

// JAX's short dtype names where they differ from HLO's (s32 -> i32, pred -> bool).
std::string ShortDTypeName(DType t) {
  if (t == DType::kPred) return "bool";
  std::string name(DTypeName(t));
  if (IsSignedInteger(t) && name[0] == 's') name[0] = 'i';
  return name;
}

// Python's repr of a float: shortest round-trip digits, always with a '.' or an exponent.
std::string PyFloat(double v, bool single) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = single ? std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v))
                    : std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// "(0,)", "(1, 2)", "()": a Python tuple of ints.
std::string PyTuple(const IntList& v) {
  if (v.size() == 1) return StrCat("(", v[0], ",)");
  return StrCat("(", StrJoin(v, ", "), ")");
}
std::string PyList(const IntList& v) { return StrCat("[", StrJoin(v, ", "), "]"); }

}  // namespace

int64_t AVal::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string AVal::ToString() const {
  return StrCat(ShortDTypeName(dtype), "[", StrJoin(dims, ","), "]");
}

Atom Atom::OfLiteral(Array value, bool weak_type) {
  Atom a;
  a.literal_aval = AVal{value.dtype(), value.dims(), weak_type};
  a.literal = std::make_shared<const Array>(std::move(value));
  return a;
}

const AVal& Atom::aval() const { return is_literal() ? literal_aval : var.aval; }

JaxprBuilder::JaxprBuilder(Jaxpr* jaxpr) : jaxpr_(jaxpr) {
  auto see = [&](const Var& v) { next_id_ = std::max(next_id_, v.id + 1); };
  for (const Var& v : jaxpr->constvars) see(v);
  for (const Var& v : jaxpr->invars) see(v);
  for (const Eqn& e : jaxpr->eqns)
    for (const Var& v : e.outputs) see(v);
}

Var JaxprBuilder::NewVar(AVal aval) { return Var{next_id_++, std::move(aval)}; }

StatusOr<std::vector<Var>> JaxprBuilder::Bind(const std::string& primitive,
                                              std::vector<Atom> inputs, Params params) {
  std::vector<AVal> in;
  in.reserve(inputs.size());
  for (const Atom& a : inputs) in.push_back(a.aval());
  XS_ASSIGN_OR_RETURN(std::vector<AVal> out, AbstractEval(primitive, in, params));
  Eqn eqn;
  eqn.primitive = primitive;
  eqn.inputs = std::move(inputs);
  eqn.params = std::move(params);
  for (AVal& a : out) eqn.outputs.push_back(NewVar(std::move(a)));
  std::vector<Var> outputs = eqn.outputs;
  jaxpr_->eqns.push_back(std::move(eqn));
  return outputs;
}

StatusOr<Atom> JaxprBuilder::Bind1(const std::string& primitive, std::vector<Atom> inputs,
                                   Params params) {
  XS_ASSIGN_OR_RETURN(std::vector<Var> outs, Bind(primitive, std::move(inputs), std::move(params)));
  if (outs.size() != 1) {
    return InvalidArgument(primitive, " has ", outs.size(), " outputs; Bind1 needs exactly one");
  }
  return Atom::OfVar(outs[0]);
}

namespace {

// Prints jaxprs with one naming sequence shared by a jaxpr and the jaxprs nested in it.
class Printer {
 public:
  // Variable ids are unique only within one jaxpr, so a nested jaxpr gets its own id -> name
  // map while the letter sequence continues.
  std::string JaxprText(const fe::Jaxpr& j, int indent) {
    auto saved = std::move(names_);
    names_.clear();
    std::string text = JaxprBody(j, indent);
    names_ = std::move(saved);
    return text;
  }

 private:
  std::string JaxprBody(const fe::Jaxpr& j, int indent) {
    std::set<int64_t> used;
    for (const Eqn& e : j.eqns)
      for (const Atom& a : e.inputs)
        if (!a.is_literal()) used.insert(a.var.id);
    for (const Atom& a : j.outvars)
      if (!a.is_literal()) used.insert(a.var.id);
    std::string out = "{ lambda ";
    std::vector<std::string> cs, is;
    for (const Var& v : j.constvars) cs.push_back(Binder(v));
    for (const Var& v : j.invars) is.push_back(Binder(v));
    out += StrJoin(cs, " ");
    StrAppend(&out, "; ", StrJoin(is, " "), ". let");
    if (j.eqns.empty()) out += " ";
    for (const Eqn& e : j.eqns) {
      StrAppend(&out, "\n", std::string(indent + 4, ' '), EqnText(e, indent + 4, used));
    }
    if (!j.eqns.empty()) StrAppend(&out, "\n", std::string(indent + 2, ' '));
    std::vector<std::string> outs;
    for (const Atom& a : j.outvars) outs.push_back(AtomText(a));
    StrAppend(&out, "in (", StrJoin(outs, ", "), outs.size() == 1 ? ",) }" : ") }");
    return out;
  }

  std::string Name(const Var& v) {
    auto it = names_.find(v.id);
    if (it != names_.end()) return it->second;
    int64_t n = next_++;
    std::string s;
    do {
      s.insert(s.begin(), static_cast<char>('a' + n % 26));
      n /= 26;
    } while (n);
    names_[v.id] = s;
    return s;
  }
  std::string Binder(const Var& v) { return StrCat(Name(v), ":", v.aval.ToString()); }

  std::string AtomText(const Atom& a) {
    if (!a.is_literal()) return Name(a.var);
    const Array& v = *a.literal;
    if (v.num_elements() != 1) return StrCat("<literal ", a.aval().ToString(), ">");
    DType t = v.dtype();
    double x = v.GetDouble(0);
    if (t == DType::kPred) return x != 0 ? "True" : "False";
    if (IsInteger(t)) return StrCat(static_cast<int64_t>(x));
    return PyFloat(x, t != DType::kF64);
  }

  std::string ParamText(const std::string& prim, const std::string& name, const Param& p,
                        int indent) {
    struct Visitor {
      Printer* self;
      const std::string& prim;
      const std::string& name;
      int indent;
      std::string operator()(std::monostate) const { return "None"; }
      std::string operator()(bool b) const { return b ? "True" : "False"; }
      std::string operator()(int64_t v) const { return StrCat(v); }
      std::string operator()(double v) const { return PyFloat(v, false); }
      std::string operator()(const std::string& s) const { return s; }
      std::string operator()(DType t) const { return std::string(DTypeNumpyName(t)); }
      std::string operator()(const IntList& v) const { return PyTuple(v); }
      std::string operator()(const IntLists& v) const {
        if (prim == "dot_general" && name == "dimension_numbers" && v.size() == 4) {
          return StrCat("((", PyList(v[0]), ", ", PyList(v[1]), "), (", PyList(v[2]), ", ",
                        PyList(v[3]), "))");
        }
        if (prim == "gather" && name == "dimension_numbers" && v.size() == 5) {
          return StrCat("GatherDimensionNumbers(offset_dims=", PyTuple(v[0]), ", collapsed_slice_dims=", PyTuple(v[1]),
                        ", start_index_map=", PyTuple(v[2]), ", operand_batching_dims=", PyTuple(v[3]),
                        ", start_indices_batching_dims=", PyTuple(v[4]), ")");
        }
        if (prim.rfind("scatter", 0) == 0 && name == "dimension_numbers" && v.size() == 5) {
          return StrCat("ScatterDimensionNumbers(update_window_dims=", PyTuple(v[0]),
                        ", inserted_window_dims=", PyTuple(v[1]), ", scatter_dims_to_operand_dims=", PyTuple(v[2]),
                        ", operand_batching_dims=", PyTuple(v[3]), ", scatter_indices_batching_dims=", PyTuple(v[4]),
                        ")");
        }
        if (prim == "conv_general_dilated" && name == "dimension_numbers" && v.size() == 3) {
          return StrCat("ConvDimensionNumbers(lhs_spec=", PyTuple(v[0]), ", rhs_spec=",
                        PyTuple(v[1]), ", out_spec=", PyTuple(v[2]), ")");
        }
        std::vector<std::string> parts;
        for (const IntList& l : v) parts.push_back(PyTuple(l));
        if (parts.size() == 1) return StrCat("(", parts[0], ",)");
        return StrCat("(", StrJoin(parts, ", "), ")");
      }
      std::string operator()(const std::shared_ptr<const fe::Jaxpr>& j) const {
        return j ? self->JaxprText(*j, indent) : "None";
      }
      // A tuple of jaxprs (cond's branches): one per line, inside parentheses.
      std::string operator()(const JaxprList& js) const {
        std::string out = "(";
        for (const auto& j : js) {
          StrAppend(&out, "\n", std::string(indent + 2, ' '), j ? self->JaxprText(*j, indent + 2) : "None");
        }
        return StrCat(out, "\n", std::string(indent, ' '), ")");
      }
    };
    return std::visit(Visitor{this, prim, name, indent}, p);
  }

  std::string EqnText(const fe::Eqn& e, int indent, const std::set<int64_t>& used) {
    std::vector<std::string> lhs;
    for (const Var& v : e.outputs) {
      lhs.push_back(used.count(v.id) ? Binder(v) : StrCat("_:", v.aval.ToString()));
    }
    std::string head = StrCat(StrJoin(lhs, " "), " = ", e.primitive);
    bool nested = false;
    for (const auto& [k, p] : e.params)
      nested |= std::holds_alternative<std::shared_ptr<const fe::Jaxpr>>(p) || std::holds_alternative<JaxprList>(p);
    std::vector<std::string> ins;
    for (const Atom& a : e.inputs) ins.push_back(AtomText(a));
    std::string args = StrCat(" ", StrJoin(ins, " "));
    if (e.params.empty()) return head + args;
    if (!nested) {
      std::vector<std::string> kv;
      for (const auto& [k, p] : e.params) kv.push_back(StrCat(k, "=", ParamText(e.primitive, k, p, 0)));
      std::string line = StrCat(head, "[", StrJoin(kv, " "), "]", args);
      if (indent + static_cast<int64_t>(line.size()) <= 80) return line;
    }
    std::string out = StrCat(head, "[");
    for (const auto& [k, p] : e.params) {
      StrAppend(&out, "\n", std::string(indent + 2, ' '), k, "=",
                ParamText(e.primitive, k, p, indent + 2));
    }
    return StrCat(out, "\n", std::string(indent, ' '), "]", args);
  }

  std::unordered_map<int64_t, std::string> names_;
  int64_t next_ = 0;
};

}  // namespace

std::string PrintJaxpr(const Jaxpr& jaxpr) { return Printer().JaxprText(jaxpr, 0); }

}  // namespace xs::fe
