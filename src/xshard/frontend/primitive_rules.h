// Internal to the frontend: the abstract-evaluation rules behind AbstractEval (primitives.cc,
// primitives_contract.cc) and the typed parameter getters they share with lowering.
#ifndef XSHARD_FRONTEND_PRIMITIVE_RULES_H_
#define XSHARD_FRONTEND_PRIMITIVE_RULES_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "xshard/frontend/jaxpr.h"
#include "xshard/sharding/named_sharding.h"

namespace xs::fe::internal {

using Rule = std::function<StatusOr<std::vector<AVal>>(const std::string& prim,
                                                        const std::vector<AVal>& in,
                                                        const Params& params)>;

// Typed parameter access; errors name the primitive, the parameter and the expected type.
StatusOr<int64_t> GetInt(const std::string& prim, const Params& p, const std::string& name);
StatusOr<IntList> GetInts(const std::string& prim, const Params& p, const std::string& name);
// An IntList, or `fallback` when the parameter is absent or None.
StatusOr<IntList> GetIntsOr(const std::string& prim, const Params& p, const std::string& name,
                            IntList fallback);
StatusOr<IntLists> GetIntLists(const std::string& prim, const Params& p, const std::string& name);
StatusOr<DType> GetDType(const std::string& prim, const Params& p, const std::string& name);
// The DType, or nullopt when absent or None.
StatusOr<std::optional<DType>> GetOptDType(const std::string& prim, const Params& p,
                                           const std::string& name);
StatusOr<std::shared_ptr<const Jaxpr>> GetJaxpr(const std::string& prim, const Params& p,
                                                const std::string& name);

// Checks the operand count; the error names the primitive and both counts.
Status CheckArity(const std::string& prim, const std::vector<AVal>& in, size_t min, size_t max);

// "f32[2,3]" list for messages: "(f32[2,3], f32[4])".
std::string AValsText(const std::vector<AVal>& in);

// The inverse of NamedSharding::ToString (the text sharding_constraint's `sharding` parameter
// holds): "NamedSharding(mesh=Mesh('a': 4, 'b': 2), spec=P('a', None))".
StatusOr<NamedSharding> ParseNamedShardingText(std::string_view text);

// The contraction / windowing / call / autodiff-only rules (primitives_contract.cc), added to
// `table`.
void AddContractionRules(std::map<std::string, Rule>& table);
// The math, indexing, sorting and control-flow rules (primitives_extra.cc).
void AddExtraRules(std::map<std::string, Rule>& table);

}  // namespace xs::fe::internal

#endif  // XSHARD_FRONTEND_PRIMITIVE_RULES_H_
