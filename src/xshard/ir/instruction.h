// Instruction: one HLO operation (name, opcode, result Shape, operands, called computations,
// optional HloSharding, typed Attributes). Owned by a Computation; operands are plain pointers
// and every instruction knows its users. Example (HLO text):
//   %dot.1 = f32[4,8]{1,0} dot(f32[4,16]{1,0} %x, f32[16,8]{1,0} %y), lhs_contracting_dims={1},
//       rhs_contracting_dims={0}, sharding={devices=[2,1]<=[2]}
// gives opcode() == Opcode::kDot, operand(0)->name() == "x",
// attrs().dot->lhs_contracting == {1}, sharding()->IsTiled().
#ifndef XSHARD_IR_INSTRUCTION_H_
#define XSHARD_IR_INSTRUCTION_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xshard/core/shape.h"
#include "xshard/ir/attributes.h"
#include "xshard/ir/opcode.h"
#include "xshard/sharding/hlo_sharding.h"

namespace xs {

class Computation;

// How an instruction refers to a computation; the role is the attribute name in text.
enum class CallRole {
  kToApply,            // to_apply= (reduce, map, sort, scatter, all-reduce, call, custom-call, ...)
  kCondition,          // while condition=
  kBody,               // while body=
  kTrueComputation,    // conditional true_computation=
  kFalseComputation,   // conditional false_computation=
  kBranch,             // conditional branch_computations={...} (in branch order)
  kCalls,              // fusion / async-start calls=
  kSelect,             // select-and-scatter select=
  kScatter,            // select-and-scatter scatter=
  kCalledComputations, // custom-call called_computations={...}
};
std::string_view CallRoleName(CallRole role);  // "to_apply", "branch_computations", ...

struct CalledComputation {
  CallRole role;
  Computation* computation;
  friend bool operator==(const CalledComputation&, const CalledComputation&) = default;
};

class Instruction {
 public:
  // A detached instruction; hand it to Computation::AddInstruction. Operands given here are
  // linked at once (each operand records this instruction as a user).
  static std::unique_ptr<Instruction> Create(Opcode opcode, Shape shape,
                                             std::vector<Instruction*> operands = {},
                                             std::string name = "");
  ~Instruction();
  Instruction(const Instruction&) = delete;
  Instruction& operator=(const Instruction&) = delete;

  Opcode opcode() const { return opcode_; }
  const std::string& name() const { return name_; }
  // Only before the instruction is added to a computation (names are unique per computation).
  void set_name(std::string name);
  const Shape& shape() const { return shape_; }
  void set_shape(Shape shape) { shape_ = std::move(shape); }
  Computation* parent() const { return parent_; }
  bool IsRoot() const;

  // Operands in order; the same instruction may appear several times.
  const std::vector<Instruction*>& operands() const { return operands_; }
  Instruction* operand(int i) const { return operands_[i]; }
  int operand_count() const { return static_cast<int>(operands_.size()); }
  void AppendOperand(Instruction* operand);
  // Replaces operand i, updating both users lists.
  void ReplaceOperandWith(int i, Instruction* new_operand);
  // Users, each once, in the order they started using this instruction.
  const std::vector<Instruction*>& users() const { return users_; }
  int user_count() const { return static_cast<int>(users_.size()); }
  // Makes every user (and the parent's root, if this is it) use `other` instead.
  void ReplaceAllUsesWith(Instruction* other);

  // Control edges: this instruction runs after each of control_predecessors().
  const std::vector<Instruction*>& control_predecessors() const { return control_preds_; }
  const std::vector<Instruction*>& control_successors() const { return control_succs_; }
  // Adds the edge this -> successor (no duplicates).
  void AddControlDependencyTo(Instruction* successor);
  void DropAllControlDependencies();

  // Called computations with their roles, in text order.
  const std::vector<CalledComputation>& calls() const { return calls_; }
  void AddCall(CallRole role, Computation* computation) { calls_.push_back({role, computation}); }
  void set_calls(std::vector<CalledComputation> calls) { calls_ = std::move(calls); }
  std::vector<Computation*> called_computations() const;
  // First called computation with the role, or nullptr.
  Computation* called(CallRole role) const;
  Computation* to_apply() const { return called(CallRole::kToApply); }
  Computation* while_condition() const { return called(CallRole::kCondition); }
  Computation* while_body() const { return called(CallRole::kBody); }
  Computation* async_wrapped_computation() const { return called(CallRole::kCalls); }
  // Conditional branches in branch order (true_computation, false_computation for the
  // predicate form).
  std::vector<Computation*> branch_computations() const;

  const std::optional<HloSharding>& sharding() const { return sharding_; }
  bool has_sharding() const { return sharding_.has_value(); }
  void set_sharding(std::optional<HloSharding> sharding) { sharding_ = std::move(sharding); }

  // Typed attributes (see attributes.h); mutable for passes and builders.
  const Attributes& attrs() const { return attrs_; }
  Attributes& mutable_attrs() { return attrs_; }
  // Shortcuts: dimensions={...} (empty when absent); index=N, parameter(N) (XS_CHECK when
  // absent); the constant's array (XS_CHECK: array constant).
  const std::vector<int64_t>& dimensions() const;
  int64_t tuple_index() const;
  int64_t parameter_number() const;
  const Array& literal() const;

  // Detached copy with the same opcode, shape, name, attributes, sharding and calls, operands
  // `new_operands` and no control edges.
  std::unique_ptr<Instruction> CloneWithNewOperands(const std::vector<Instruction*>& new_operands) const;

  // "name = f32[4]{0} add(a, b)" without attributes, for messages. The full text is
  // text/printer.h's PrintInstruction.
  std::string ShortString() const;

 private:
  friend class Computation;
  Instruction(Opcode opcode, Shape shape, std::string name);
  void AddUser(Instruction* user);
  void RemoveUser(Instruction* user);

  Opcode opcode_;
  Shape shape_;
  std::string name_;
  Computation* parent_ = nullptr;
  std::vector<Instruction*> operands_;
  std::vector<Instruction*> users_;
  std::vector<Instruction*> control_preds_, control_succs_;
  std::vector<CalledComputation> calls_;
  std::optional<HloSharding> sharding_;
  Attributes attrs_;
};

// The instruction's side effects: the opcode's (kOpSideEffect: send / recv, infeed / outfeed, rng,
// after-all, ...) or a custom-call's custom_call_has_side_effect. DCE, CSE and propagation all
// use this one definition.
bool HasSideEffect(const Instruction& inst);

}  // namespace xs

#endif  // XSHARD_IR_INSTRUCTION_H_
