// Internals of autodiff.h shared by the engine (autodiff.cc) and the per-primitive VJP rules
// (vjp_rules_*.cc): the equation emitter and the rule table. Not a public API.
#ifndef XSHARD_FRONTEND_AUTODIFF_INTERNAL_H_
#define XSHARD_FRONTEND_AUTODIFF_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/frontend/jaxpr.h"

namespace xs::fe::ad {

// A cotangent; nullopt is a symbolic zero (no work is emitted for it).
using Ct = std::optional<Atom>;

// Appends equations to the Jaxpr being built, with small helpers for the rules.
class Emitter {
 public:
  explicit Emitter(Jaxpr* out) : out_(out), builder_(out) {}
  Jaxpr* jaxpr() { return out_; }
  Var NewVar(AVal aval) { return builder_.NewVar(std::move(aval)); }
  // A primitive the front end's AbstractEval types (errors carry the primitive's message).
  StatusOr<Atom> Op(const std::string& primitive, std::vector<Atom> inputs, Params params = {});
  // An equation with explicitly typed outputs (primitives AbstractEval does not know, or
  // equations whose outputs are reused, as pjit's).
  std::vector<Atom> Raw(const std::string& primitive, std::vector<Atom> inputs,
                        const std::vector<AVal>& outs, Params params = {});
  // A non-weak scalar literal of `dtype` (JAX's `_const(x, v)`, printed `1.0`).
  static Atom Lit(double value, DType dtype);
  // `value` filled into `aval` (JAX's full_like): a scalar literal for rank 0, else
  // broadcast_in_dim of the literal.
  StatusOr<Atom> Full(const AVal& aval, double value);
  StatusOr<Atom> Zeros(const AVal& aval) { return Full(aval, 0.0); }
  // add_any a b.
  Atom AddAny(const Atom& a, const Atom& b);
  // JAX's _unbroadcast: sums `t` down to `target`'s dims (a scalar target or size-1 dims of an
  // equal-rank target), reshaping to `target`. Returns `t` when the dims already agree.
  StatusOr<Atom> Unbroadcast(const AVal& target, const Atom& t);
  // Appends `j`'s equations with its invars bound to `args` (constvars become constvars of the
  // output); returns its outvars.
  StatusOr<std::vector<Atom>> Inline(const Jaxpr& j, const std::vector<Atom>& args);

 private:
  Jaxpr* out_;
  JaxprBuilder builder_;
};

// What a rule sees of one equation of the differentiated program.
struct RuleInput {
  const Eqn* eqn = nullptr;   // the original equation: types and params
  std::vector<Atom> in;       // its inputs, in the output Jaxpr
  std::vector<bool> active;   // inputs that carry a tangent (depend on a `wrt` input)
  std::vector<Atom> out;      // its outputs in the output Jaxpr (set by the engine, or by a
                              // rule with emits_primal)
};

// Adds a cotangent contribution to input i of the equation (add_any with earlier ones, at once,
// as JAX's backward pass does); contributions to inactive inputs are dropped.
using CtWriter = std::function<Status(size_t i, const Atom& ct)>;
// The backward part of a rule: from the output cotangents (nullopt: zero; at least one is set),
// emits the cotangent equations and writes the input contributions.
using Backward =
    std::function<Status(Emitter& e, const std::vector<Ct>& ct_out, const CtWriter& write)>;

// The forward part: runs after the primal equation was emitted (unless emits_primal), emits
// the residuals the backward part needs and returns it.
using ForwardFn = std::function<StatusOr<Backward>(Emitter& e, RuleInput& r)>;

struct VjpRule {
  ForwardFn forward;
  bool emits_primal = false;  // the rule emits the primal computation itself (pjit, custom_vjp)
};
using RuleTable = std::map<std::string, VjpRule>;

// All rules, by primitive name.
const RuleTable& Rules();
void AddElementwiseRules(RuleTable& t);   // vjp_rules_elementwise.cc
void AddStructuralRules(RuleTable& t);    // vjp_rules_structural.cc
void AddLinalgRules(RuleTable& t);        // vjp_rules_linalg.cc
void AddCallRules(RuleTable& t);          // vjp_rules_call.cc

// Primitives whose outputs never carry a tangent (comparisons, sign, logical ops, iota, argmax).
bool HasZeroDerivative(const std::string& primitive);

// The VJP of `f` as a forward part and a backward part in one Jaxpr under construction:
// binds f's invars to `args`, emits f's equations and residuals, then the cotangent equations
// for `ct_outs` (one per outvar, nullopt: zero). Returns f's outputs and the cotangents of the
// args marked active (nullopt where zero).
struct VjpParts {
  std::vector<Atom> outs;
  std::vector<Ct> ct_args;
  size_t backward_start = 0;  // index in e.jaxpr()->eqns of the first backward equation
};
// `make_ct_outs` is called between the two parts with f's outputs and which are active; it
// returns the output cotangents.
using CtSource = std::function<StatusOr<std::vector<Ct>>(
    Emitter& e, const std::vector<Atom>& outs, const std::vector<bool>& out_active)>;
StatusOr<VjpParts> EmitVjp(Emitter& e, const Jaxpr& f, const std::vector<Atom>& args,
                           const std::vector<bool>& active, const CtSource& make_ct_outs);

// The VJP of `inner` split in two closed jaxprs: forward (inner's invars -> outvars + residuals)
// and backward (residuals + one cotangent per differentiable outvar -> cotangents of the active
// invars, zeros where none). Used by pjit's rule and by cond's (vjp_rules_control.cc).
struct Split {
  std::shared_ptr<Jaxpr> forward, backward;
  std::vector<AVal> residual_avals;       // the forward's extra outputs
  std::vector<int64_t> residual_sources;  // per backward residual input: the invar it is, or
                                          // -1 - k for the forward's k-th extra output
  std::vector<size_t> ct_outputs;         // outvars that take a cotangent, in order
};
StatusOr<Split> SplitVjp(const Jaxpr& inner, const std::vector<bool>& active);
void AddMathRules(RuleTable& t);     // vjp_rules_math.cc
void AddControlRules(RuleTable& t);  // vjp_rules_control.cc

// Param accessors; a missing or mistyped param is an error naming the primitive.
StatusOr<IntList> GetInts(const Eqn& eqn, const std::string& name);
StatusOr<IntLists> GetIntLists(const Eqn& eqn, const std::string& name);
StatusOr<int64_t> GetInt(const Eqn& eqn, const std::string& name);
// Input i's type in the original equation.
const AVal& InAval(const RuleInput& r, size_t i);
const AVal& OutAval(const RuleInput& r, size_t i);

}  // namespace xs::fe::ad

#endif  // XSHARD_FRONTEND_AUTODIFF_INTERNAL_H_
