// Jaxpr: the front end's traced program, in JAX's model. A traced C++ function becomes a list of
// equations over typed variables (`b:f32[10] = neg a`); MakeJaxpr prints it in JAX's layout,
// autodiff (autodiff.h) transforms it into another Jaxpr, and lowering turns it into an HLO
// Module (lower.h) that Jit partitions and runs. Primitives carry JAX's names and parameters
// (neg, exp, add, div, integer_pow[y=-2], dot_general[dimension_numbers=...], reduce_sum[axes=...],
// broadcast_in_dim[...], pjit[jaxpr=... name=...], custom_vjp_call[...]) so a jaxpr prints as
// JAX prints the same function.
#ifndef XSHARD_FRONTEND_JAXPR_H_
#define XSHARD_FRONTEND_JAXPR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/core/dtype.h"

namespace xs::fe {

// An abstract value: dtype and dims. weak_type marks Python-scalar-like values (a C++ double
// literal): they take the other operand's dtype in binary ops, as in JAX.
struct AVal {
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  bool weak_type = false;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t num_elements() const;
  // "f32[10,3]" (JAX's short form; weak types print the same).
  std::string ToString() const;
  bool operator==(const AVal& other) const = default;
};

// A variable of a Jaxpr: a number unique within the Jaxpr that defines it, and its type.
struct Var {
  int64_t id = -1;
  AVal aval;
};

// An equation input or a jaxpr output: a variable or a literal (a scalar constant, printed
// inline as `1.0`; non-scalar constants become constvars instead).
struct Atom {
  static Atom OfVar(const Var& v) { Atom a; a.var = v; return a; }
  static Atom OfLiteral(Array value, bool weak_type);
  bool is_literal() const { return literal != nullptr; }
  const AVal& aval() const;

  Var var;                                // when !is_literal()
  std::shared_ptr<const Array> literal;   // when is_literal()
  AVal literal_aval;                      // when is_literal()
};

struct Jaxpr;

// A primitive parameter. Nested tuples of ints (dot_general's dimension_numbers, padding
// pairs) are IntLists; None is std::monostate; a tuple of jaxprs (cond's branches) is a
// JaxprList.
using IntList = std::vector<int64_t>;
using IntLists = std::vector<IntList>;
using JaxprList = std::vector<std::shared_ptr<const Jaxpr>>;
using Param = std::variant<std::monostate, bool, int64_t, double, std::string, DType, IntList, IntLists,
                           std::shared_ptr<const Jaxpr>, JaxprList>;
// Sorted by name, as JAX prints them.
using Params = std::map<std::string, Param>;

struct Eqn {
  std::string primitive;
  std::vector<Atom> inputs;
  std::vector<Var> outputs;  // an output nothing reads prints as `_`
  Params params;
};

// { lambda constvars ; invars . let eqns in (outvars) }
struct Jaxpr {
  std::vector<Var> constvars;
  std::vector<Array> consts;  // values of constvars, same order
  std::vector<Var> invars;
  std::vector<Eqn> eqns;
  std::vector<Atom> outvars;
};

// Output types of `primitive` applied to inputs of types `in` with `params` (JAX's abstract
// evaluation, with its broadcasting and weak-type rules). Errors name the primitive, the
// offending input or parameter and the rule (e.g. "dot_general: contracting dims 1 (size 3) and
// 0 (size 4) differ").
StatusOr<std::vector<AVal>> AbstractEval(const std::string& primitive, const std::vector<AVal>& in,
                                         const Params& params);

// Appends equations to a Jaxpr, numbering new variables after every variable it holds.
class JaxprBuilder {
 public:
  explicit JaxprBuilder(Jaxpr* jaxpr);
  Var NewVar(AVal aval);
  // Runs AbstractEval, appends the equation, returns its outputs.
  StatusOr<std::vector<Var>> Bind(const std::string& primitive, std::vector<Atom> inputs,
                                  Params params = {});
  // Bind for a single-output primitive.
  StatusOr<Atom> Bind1(const std::string& primitive, std::vector<Atom> inputs, Params params = {});

 private:
  Jaxpr* jaxpr_;
  int64_t next_id_ = 0;
};

// JAX's jaxpr text: "{ lambda ; a:f32[]. let\n    b:f32[] = neg a\n ... in (e,) }". Variables
// are renamed a, b, ..., z, ba, bb, ... in order of appearance (constvars, invars, then equation
// outputs; sub-jaxprs continue the same sequence); unused equation outputs print as `_`.
std::string PrintJaxpr(const Jaxpr& jaxpr);

}  // namespace xs::fe

#endif  // XSHARD_FRONTEND_JAXPR_H_
