// Typed access to primitive parameters and the operand-count check, shared by AbstractEval's
// rules and lowering (declared in primitive_rules.h).
#include "xshard/base/strings.h"
#include "xshard/frontend/primitive_rules.h"

namespace xs::fe::internal {

namespace {

template <typename T>
StatusOr<T> GetAs(const std::string& prim, const Params& p, const std::string& name,
                  const char* type) {
  auto it = p.find(name);
  if (it == p.end()) return InvalidArgument(prim, ": missing parameter '", name, "' (", type, ")");
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  return InvalidArgument(prim, ": parameter '", name, "' must be ", type);
}

}  // namespace

StatusOr<int64_t> GetInt(const std::string& prim, const Params& p, const std::string& name) {
  return GetAs<int64_t>(prim, p, name, "an int");
}
StatusOr<IntList> GetInts(const std::string& prim, const Params& p, const std::string& name) {
  return GetAs<IntList>(prim, p, name, "a tuple of ints");
}
StatusOr<IntList> GetIntsOr(const std::string& prim, const Params& p, const std::string& name,
                            IntList fallback) {
  auto it = p.find(name);
  if (it == p.end() || std::holds_alternative<std::monostate>(it->second)) return fallback;
  return GetInts(prim, p, name);
}
StatusOr<IntLists> GetIntLists(const std::string& prim, const Params& p, const std::string& name) {
  return GetAs<IntLists>(prim, p, name, "a tuple of int tuples");
}
StatusOr<DType> GetDType(const std::string& prim, const Params& p, const std::string& name) {
  return GetAs<DType>(prim, p, name, "a dtype");
}
StatusOr<std::optional<DType>> GetOptDType(const std::string& prim, const Params& p,
                                           const std::string& name) {
  auto it = p.find(name);
  if (it == p.end() || std::holds_alternative<std::monostate>(it->second)) {
    return std::optional<DType>();
  }
  XS_ASSIGN_OR_RETURN(DType t, GetDType(prim, p, name));
  return std::optional<DType>(t);
}
StatusOr<std::shared_ptr<const Jaxpr>> GetJaxpr(const std::string& prim, const Params& p,
                                                const std::string& name) {
  XS_ASSIGN_OR_RETURN(auto j, (GetAs<std::shared_ptr<const Jaxpr>>(prim, p, name, "a jaxpr")));
  if (!j) return InvalidArgument(prim, ": parameter '", name, "' is a null jaxpr");
  return j;
}

Status CheckArity(const std::string& prim, const std::vector<AVal>& in, size_t min, size_t max) {
  if (in.size() < min || in.size() > max) {
    std::string want = min == max ? StrCat(min) : StrCat(min, " to ", max);
    return InvalidArgument(prim, " takes ", want, " operands, got ", in.size(), " ",
                           AValsText(in));
  }
  return OkStatus();
}

std::string AValsText(const std::vector<AVal>& in) {
  std::vector<std::string> parts;
  for (const AVal& a : in) parts.push_back(a.ToString());
  return StrCat("(", StrJoin(parts, ", "), ")");
}

}  // namespace xs::fe::internal
