// Instruction: operand / user / control-edge bookkeeping and attribute shortcuts.
#include "xshard/ir/instruction.h"

#include <algorithm>

#include "xshard/ir/computation.h"

namespace xs {
namespace {

constexpr std::string_view kCallRoleNames[] = {
    "to_apply", "condition", "body", "true_computation", "false_computation",
    "branch_computations", "calls", "select", "scatter", "called_computations"};

void EraseOne(std::vector<Instruction*>& v, Instruction* x) {
  auto it = std::find(v.begin(), v.end(), x);
  if (it != v.end()) v.erase(it);
}

}  // namespace

std::string_view CallRoleName(CallRole role) { return kCallRoleNames[static_cast<int>(role)]; }

Instruction::Instruction(Opcode opcode, Shape shape, std::string name)
    : opcode_(opcode), shape_(std::move(shape)), name_(std::move(name)) {}

std::unique_ptr<Instruction> Instruction::Create(Opcode opcode, Shape shape,
                                                 std::vector<Instruction*> operands,
                                                 std::string name) {
  std::unique_ptr<Instruction> inst(new Instruction(opcode, std::move(shape), std::move(name)));
  for (Instruction* op : operands) inst->AppendOperand(op);
  return inst;
}

Instruction::~Instruction() = default;

void Instruction::set_name(std::string name) {
  XS_CHECK(parent_ == nullptr, "set_name on instruction '", name_, "' already in a computation");
  name_ = std::move(name);
}

bool HasSideEffect(const Instruction& inst) {
  if (inst.opcode() == Opcode::kCustomCall) return inst.attrs().custom_call_has_side_effect;
  return HasSideEffect(inst.opcode());
}

bool Instruction::IsRoot() const { return parent_ != nullptr && parent_->root() == this; }

void Instruction::AddUser(Instruction* user) {
  if (std::find(users_.begin(), users_.end(), user) == users_.end()) users_.push_back(user);
}

void Instruction::RemoveUser(Instruction* user) { EraseOne(users_, user); }

void Instruction::AppendOperand(Instruction* operand) {
  XS_CHECK(operand != nullptr, "null operand for ", name_);
  operands_.push_back(operand);
  operand->AddUser(this);
}

void Instruction::ReplaceOperandWith(int i, Instruction* new_operand) {
  XS_CHECK(i >= 0 && i < operand_count() && new_operand != nullptr, "bad operand ", i);
  Instruction* old = operands_[i];
  operands_[i] = new_operand;
  if (std::find(operands_.begin(), operands_.end(), old) == operands_.end()) old->RemoveUser(this);
  new_operand->AddUser(this);
}

void Instruction::ReplaceAllUsesWith(Instruction* other) {
  XS_CHECK(other != nullptr && other != this, "ReplaceAllUsesWith on ", name_);
  std::vector<Instruction*> users = users_;
  for (Instruction* user : users) {
    for (int i = 0; i < user->operand_count(); ++i)
      if (user->operands_[i] == this) user->operands_[i] = other;
    other->AddUser(user);
  }
  users_.clear();
  if (parent_ != nullptr && parent_->root() == this) parent_->set_root(other);
}

void Instruction::AddControlDependencyTo(Instruction* successor) {
  if (std::find(control_succs_.begin(), control_succs_.end(), successor) != control_succs_.end())
    return;
  control_succs_.push_back(successor);
  successor->control_preds_.push_back(this);
}

void Instruction::DropAllControlDependencies() {
  for (Instruction* s : control_succs_) EraseOne(s->control_preds_, this);
  for (Instruction* p : control_preds_) EraseOne(p->control_succs_, this);
  control_succs_.clear();
  control_preds_.clear();
}

std::vector<Computation*> Instruction::called_computations() const {
  std::vector<Computation*> out;
  for (const auto& c : calls_) out.push_back(c.computation);
  return out;
}

Computation* Instruction::called(CallRole role) const {
  for (const auto& c : calls_)
    if (c.role == role) return c.computation;
  return nullptr;
}

std::vector<Computation*> Instruction::branch_computations() const {
  std::vector<Computation*> out;
  for (CallRole role : {CallRole::kTrueComputation, CallRole::kFalseComputation})
    if (Computation* c = called(role)) out.push_back(c);
  for (const auto& c : calls_)
    if (c.role == CallRole::kBranch) out.push_back(c.computation);
  return out;
}

const std::vector<int64_t>& Instruction::dimensions() const {
  static const std::vector<int64_t> kEmpty;
  return attrs_.dimensions ? *attrs_.dimensions : kEmpty;
}

int64_t Instruction::tuple_index() const {
  XS_CHECK(attrs_.tuple_index.has_value(), name_, " has no tuple index");
  return *attrs_.tuple_index;
}

int64_t Instruction::parameter_number() const {
  XS_CHECK(attrs_.parameter_number.has_value(), name_, " is not a parameter");
  return *attrs_.parameter_number;
}

const Array& Instruction::literal() const {
  XS_CHECK(attrs_.literal.has_value() && attrs_.literal->array.has_value(), name_,
           " is not an array constant");
  return *attrs_.literal->array;
}

std::unique_ptr<Instruction> Instruction::CloneWithNewOperands(
    const std::vector<Instruction*>& new_operands) const {
  auto inst = Create(opcode_, shape_, new_operands, name_);
  inst->calls_ = calls_;
  inst->sharding_ = sharding_;
  inst->attrs_ = attrs_;
  return inst;
}

std::string Instruction::ShortString() const {
  std::string s = StrCat(name_, " = ", shape_.ToString(), " ", OpcodeName(opcode_), "(");
  for (int i = 0; i < operand_count(); ++i) StrAppend(&s, i ? ", " : "", operands_[i]->name());
  s += ")";
  return s;
}

}  // namespace xs
