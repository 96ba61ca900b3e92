// Computation: a named list of Instructions (owned) with parameters and a root, as in
//   %add (x: f32[], y: f32[]) -> f32[] {
//     %x = f32[] parameter(0)
//     %y = f32[] parameter(1)
//     ROOT %sum = f32[] add(%x, %y)
//   }
// Instruction names are unique within a computation. Owned by a Module.
#ifndef XSHARD_IR_COMPUTATION_H_
#define XSHARD_IR_COMPUTATION_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "xshard/ir/instruction.h"

namespace xs {

class Module;

class Computation {
 public:
  explicit Computation(std::string name) : name_(std::move(name)) {}
  ~Computation();
  Computation(const Computation&) = delete;
  Computation& operator=(const Computation&) = delete;

  const std::string& name() const { return name_; }
  // Only before the computation is added to a module (names are unique per module).
  void set_name(std::string name);
  Module* parent() const { return parent_; }
  bool IsEntry() const;

  // Takes ownership and returns the instruction. A name already used in this computation (or an
  // empty one) is made unique by appending ".N" (empty: the opcode name). A parameter is
  // registered at its parameter_number. The first instruction added becomes the root until
  // set_root is called; later additions do not move the root.
  Instruction* AddInstruction(std::unique_ptr<Instruction> instruction);
  // Removes an instruction that has no users, is not the root and has no control edges; its
  // operands forget it. Error names the instruction and the reason otherwise.
  Status RemoveInstruction(Instruction* instruction);

  // Instructions in the order they were added (text order for parsed modules).
  std::vector<Instruction*> instructions() const;
  int instruction_count() const { return static_cast<int>(instructions_.size()); }
  // The instruction with that name, or nullptr.
  Instruction* GetInstruction(std::string_view name) const;

  Instruction* root() const { return root_; }
  void set_root(Instruction* root) { root_ = root; }

  // Parameters indexed by parameter number (a missing number is nullptr; the verifier reports
  // it). num_parameters() is the highest number + 1.
  const std::vector<Instruction*>& parameters() const { return parameters_; }
  Instruction* parameter(int i) const { return parameters_[i]; }
  int num_parameters() const { return static_cast<int>(parameters_.size()); }

  // Operands (and control predecessors) before users; every instruction once, ties in text
  // order; the root is last when everything reaches it.
  std::vector<Instruction*> MakeInstructionPostOrder() const;

  // `}, execution_thread="..."` after the body; empty means the default main thread.
  const std::string& execution_thread() const { return execution_thread_; }
  void set_execution_thread(std::string t) { execution_thread_ = std::move(t); }
  // True when the parser built this computation from async sugar (`add-start(a, b)`): the
  // printer then writes the sugar back instead of the computation.
  bool is_async_sugar() const { return async_sugar_; }
  void set_async_sugar(bool v) { async_sugar_ = v; }

 private:
  friend class Module;
  std::string UniqueInstructionName(std::string_view base) const;

  std::string name_;
  Module* parent_ = nullptr;
  std::vector<std::unique_ptr<Instruction>> instructions_;
  std::unordered_map<std::string, Instruction*> by_name_;
  std::vector<Instruction*> parameters_;
  Instruction* root_ = nullptr;
  std::string execution_thread_;
  bool async_sugar_ = false;
};

// The op of a reducer that is one binary op of its two parameters, (x, y) -> x op y, when that op
// is one all-reduce and the collective combiners run (add, multiply, maximum, minimum, and, or);
// else nullopt. What the partitioner and the all-reduce combiner ask of a reducer.
std::optional<Opcode> CollectiveReduction(const Computation& reducer);

}  // namespace xs

#endif  // XSHARD_IR_COMPUTATION_H_
