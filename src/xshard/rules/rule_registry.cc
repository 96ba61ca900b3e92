// The opcode -> rule table and the helpers the rule files share.
#include "xshard/rules/rule_registry.h"

#include <charconv>

#include "xshard/rules/rules_internal.h"

namespace xs {
namespace rules_internal {

RuleBuilder MakeBuilder(const Instruction& inst) {
  std::vector<const Shape*> operands;
  for (const Instruction* op : inst.operands()) operands.push_back(&op->shape());
  return RuleBuilder(operands, inst.shape());
}

Status BadAttr(const Instruction& inst, std::string_view what) {
  return InvalidArgument("sharding rule of ", inst.ShortString(), ": ", what);
}

OpShardingRule BarrierRule(const Instruction& inst) {
  RuleBuilder b = MakeBuilder(inst);
  for (int i = 0; i < b.operand_count(); ++i) {
    for (int l = 0; l < LeafCount(inst.operand(i)->shape()); ++l) b.Ignore(b.Operand(i, l));
  }
  for (int l = 0; l < b.num_result_leaves(); ++l) {
    b.AddOwnFactors(RuleBuilder::Result(l));
    b.SetGroup(RuleBuilder::Result(l), -1 - l);
  }
  b.SetBarrier();
  return std::move(b).Build();
}

bool SameDims(const Shape& a, const Shape& b) {
  return a.IsArray() && b.IsArray() && a.dims() == b.dims();
}

OpShardingRule PairLeavesRule(const Instruction& inst, int first_operand, int operand_count) {
  RuleBuilder b = MakeBuilder(inst);
  if (operand_count < 0) operand_count = inst.operand_count() - first_operand;
  std::vector<RuleBuilder::Ref> op_leaves;
  for (int i = 0; i < inst.operand_count(); ++i) {
    const int n = LeafCount(inst.operand(i)->shape());
    for (int l = 0; l < n; ++l) {
      if (i >= first_operand && i < first_operand + operand_count) {
        op_leaves.push_back(b.Operand(i, l));
      } else {
        b.Ignore(b.Operand(i, l));
      }
    }
  }
  for (int l = 0; l < b.num_result_leaves(); ++l) {
    RuleBuilder::Ref res = RuleBuilder::Result(l);
    if (l < static_cast<int>(op_leaves.size()) &&
        SameDims(b.ShapeOf(op_leaves[l]), b.ShapeOf(res))) {
      b.AddPointwise({res, op_leaves[l]});
      b.SetGroup(res, l + 1);
      b.SetGroup(op_leaves[l], l + 1);
    } else {
      b.AddOwnFactors(res);
      b.SetGroup(res, -1 - l);
      if (l < static_cast<int>(op_leaves.size())) b.Ignore(op_leaves[l]);
    }
  }
  for (size_t l = b.num_result_leaves(); l < op_leaves.size(); ++l) b.Ignore(op_leaves[l]);
  return std::move(b).Build();
}

namespace {

RuleTable MakeTable() {
  RuleTable table{};
  AddShapeRules(table);
  AddContractionRules(table);
  AddStructuralRules(table);
  return table;
}

const RuleTable& Table() {
  static const RuleTable table = MakeTable();  // immutable after first use
  return table;
}

}  // namespace
}  // namespace rules_internal

StatusOr<OpShardingRule> GetRule(const Instruction& inst) {
  rules_internal::RuleFn fn = rules_internal::Table()[static_cast<int>(inst.opcode())];
  if (fn == nullptr) {
    return Unimplemented("no sharding rule for opcode '", OpcodeName(inst.opcode()), "' (",
                         inst.ShortString(), "); add one in src/xshard/rules/");
  }
  return fn(inst);
}

bool IsPassThroughCustomCall(std::string_view target) {
  return target == "Sharding" || target == "xla.sdy.FuncResultSharding" || target == "X64Combine" ||
         target == "LayoutConstraint" || target == "PinToDevice" || target == "MoveToHost" ||
         target == "MoveToDevice" || target == "annotate_device_placement";
}

std::optional<int> BatchPartitionableDims(const Instruction& inst) {
  if (inst.opcode() != Opcode::kCustomCall || !inst.attrs().frontend_attributes) return std::nullopt;
  std::optional<int> k;
  for (const auto& [key, value] : *inst.attrs().frontend_attributes) {
    if (key != "num_batch_dims") continue;
    int v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || v < 1) return std::nullopt;
    k = v;
  }
  if (!k) return std::nullopt;
  std::optional<std::vector<int64_t>> batch;
  auto fits = [&](const Shape& s) {
    if (!s.IsArray() || s.rank() < *k) return false;
    std::vector<int64_t> lead(s.dims().begin(), s.dims().begin() + *k);
    if (!batch) batch = lead;
    return *batch == lead;
  };
  for (const Instruction* o : inst.operands()) {
    if (!fits(o->shape())) return std::nullopt;
  }
  if (inst.shape().IsTuple()) {
    for (const Shape& leaf : inst.shape().tuple_shapes()) {
      if (!fits(leaf)) return std::nullopt;
    }
  } else if (!fits(inst.shape())) {
    return std::nullopt;
  }
  return k;
}

bool HasRule(Opcode op) {
  return rules_internal::Table()[static_cast<int>(op)] != nullptr;
}

bool HasNonBarrierRule(Opcode op) {
  const rules_internal::RuleFn fn = rules_internal::Table()[static_cast<int>(op)];
  return fn != nullptr && fn != &rules_internal::Barrier;
}

}  // namespace xs
