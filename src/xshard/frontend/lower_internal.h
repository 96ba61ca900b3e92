// Internal to the frontend: the lowering context shared by lower.cc (LowerJaxpr, LowerPmap) and
// lower_rules.cc (one HLO-emitting rule per primitive).
#ifndef XSHARD_FRONTEND_LOWER_INTERNAL_H_
#define XSHARD_FRONTEND_LOWER_INTERNAL_H_

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/frontend/jaxpr.h"
#include "xshard/ir/builder.h"

namespace xs::fe::internal {

inline Shape ShapeOf(const AVal& a) { return Shape(a.dtype, a.dims); }

class Lowerer;
using LowerRule = std::function<StatusOr<std::vector<Op>>(Lowerer& L, const Eqn& e,
                                                          std::vector<Op> in)>;
// The rule of every primitive with a lowering (lower_rules.cc).
const std::map<std::string, LowerRule>& LowerRules();
// The rules of primitives_extra.cc's primitives (lower_rules_extra.cc), added to `rules`.
void AddExtraLowerRules(std::map<std::string, LowerRule>& rules);

class Lowerer {
 public:
  Lowerer(ModuleBuilder& mb, ComputationBuilder& b) : mb_(mb), b_(b) {}
  // A lowerer for a nested computation `b` (a branch or loop body of `parent`'s module): it
  // shares the parent's reducers and computation names, and has its own constants.
  Lowerer(Lowerer& parent, ComputationBuilder& b)
      : mb_(parent.mb_), b_(b), root_(parent.root_ ? parent.root_ : &parent) {}
  ComputationBuilder& b() { return b_; }

  // Lowers `j`'s equations with `args` bound to its invars; returns its outputs.
  StatusOr<std::vector<Op>> Body(const Jaxpr& j, const std::vector<Op>& args) {
    std::unordered_map<int64_t, Op> env;
    for (size_t i = 0; i < j.constvars.size(); ++i) env[j.constvars[i].id] = b_.Constant(j.consts[i]);
    for (size_t i = 0; i < j.invars.size(); ++i) env[j.invars[i].id] = args[i];
    for (const Eqn& e : j.eqns) {
      auto rule = LowerRules().find(e.primitive);
      if (rule == LowerRules().end()) {
        return Unimplemented("lowering: primitive '", e.primitive, "' has no HLO lowering rule");
      }
      std::vector<Op> in;
      for (const Atom& a : e.inputs) in.push_back(AtomOp(a, env));
      XS_ASSIGN_OR_RETURN(std::vector<Op> out, rule->second(*this, e, std::move(in)));
      XS_RETURN_IF_ERROR(Annotate(b_.status(), StrCat("lowering ", e.primitive, ": ")));
      for (size_t i = 0; i < e.outputs.size(); ++i) env[e.outputs[i].id] = out[i];
    }
    std::vector<Op> outs;
    for (const Atom& a : j.outvars) outs.push_back(AtomOp(a, env));
    return outs;
  }

  // A scalar op broadcast to `dims` (no-op when it already has them).
  Op Splat(Op x, const std::vector<int64_t>& dims) {
    if (x.shape().dims() == dims) return x;
    auto key = std::make_pair(x.instruction(), dims);
    auto it = splats_.find(key);
    if (it != splats_.end()) return it->second;
    return splats_[key] = b_.BroadcastInDim(x, dims, {});
  }
  Op Full(DType t, double v, const std::vector<int64_t>& dims) {
    return Splat(SharedConstant(Array::Full(t, {}, v)), dims);
  }
  // One constant per value, as JAX's lowering shares them.
  Op SharedConstant(Array v) {
    std::string key = StrCat(DTypeName(v.dtype()), v.ToString());
    auto it = constants_.find(key);
    if (it != constants_.end()) return it->second;
    return constants_[key] = b_.Constant(std::move(v));
  }

  // A two-parameter scalar computation applying `op` (add / maximum / minimum), one per kind.
  ComputationBuilder& Reducer(Opcode op, DType t) {
    if (root_) return root_->Reducer(op, t);
    auto key = std::make_pair(static_cast<int>(op), static_cast<int>(t));
    auto it = reducers_.find(key);
    if (it != reducers_.end()) return *it->second;
    ComputationBuilder& r = mb_.AddComputation(StrCat("region_", reducers_.size()));
    r.Binary(op, r.Parameter(0, Shape(t, {}), "Arg_0"), r.Parameter(1, Shape(t, {}), "Arg_1"));
    reducers_[key] = &r;
    return r;
  }
  ComputationBuilder& NewComputation(const std::string& prefix) {
    if (root_) return root_->NewComputation(prefix);
    return mb_.AddComputation(StrCat(prefix, "_", extra_++));
  }

 private:
  Op AtomOp(const Atom& a, const std::unordered_map<int64_t, Op>& env) {
    if (a.is_literal()) return SharedConstant(a.literal->Convert(a.aval().dtype));
    auto it = env.find(a.var.id);
    XS_CHECK(it != env.end(), "jaxpr variable ", a.var.id, " used before its definition");
    return it->second;
  }

  ModuleBuilder& mb_;
  ComputationBuilder& b_;
  Lowerer* root_ = nullptr;
  std::map<std::pair<int, int>, ComputationBuilder*> reducers_;
  std::map<std::string, Op> constants_;
  std::map<std::pair<Instruction*, std::vector<int64_t>>, Op> splats_;
  int extra_ = 0;
};

}  // namespace xs::fe::internal

#endif  // XSHARD_FRONTEND_LOWER_INTERNAL_H_
