// WhileTripCount: how many times a while loop's body runs, read from XLA's known_trip_count
// annotation or from a counter that starts at a constant, steps by a constant and is compared
// with a constant.
#include <cmath>
#include <optional>

#include "xshard/base/strings.h"
#include "xshard/ir/computation.h"
#include "xshard/spmd/step_prediction.h"

namespace xs::spmd {
namespace {

// A scalar integer constant's value (through copies and converts).
std::optional<double> ConstantValue(const Instruction* i) {
  while (i != nullptr && (i->opcode() == Opcode::kCopy || i->opcode() == Opcode::kConvert) && i->operand_count() == 1) {
    i = i->operand(0);
  }
  if (i == nullptr || i->opcode() != Opcode::kConstant || !i->shape().IsArray() || i->shape().num_elements() != 1 ||
      !(IsInteger(i->shape().dtype()) || IsFloating(i->shape().dtype())) || !i->attrs().literal ||
      !i->attrs().literal->array || i->attrs().literal->array->num_elements() != 1) {
    return std::nullopt;
  }
  return i->attrs().literal->array->GetDouble(0);
}

// get-tuple-element(parameter(0)), index=k -> k; else -1.
int64_t CounterIndex(const Instruction* i) {
  while (i != nullptr && (i->opcode() == Opcode::kCopy || i->opcode() == Opcode::kConvert) && i->operand_count() == 1) {
    i = i->operand(0);
  }
  if (i == nullptr || i->opcode() != Opcode::kGetTupleElement || i->operand_count() != 1 ||
      i->operand(0)->opcode() != Opcode::kParameter || !i->attrs().tuple_index) {
    return -1;
  }
  return *i->attrs().tuple_index;
}

}  // namespace

int64_t WhileTripCount(const Instruction& w) {
  if (w.opcode() != Opcode::kWhile) return -1;
  // XLA's annotation: backend_config={"known_trip_count":{"n":"4"}}.
  if (const auto& bc = w.attrs().backend_config) {
    const size_t at = bc->find("known_trip_count");
    if (at != std::string::npos) {
      const size_t n = bc->find("\"n\"", at);
      if (n != std::string::npos) {
        size_t d = bc->find_first_of("0123456789", n + 3);
        size_t e = d == std::string::npos ? d : bc->find_first_not_of("0123456789", d);
        int64_t v = 0;
        if (d != std::string::npos && ParseInt64(std::string_view(*bc).substr(d, e == std::string::npos ? e : e - d), &v)) return v;
      }
    }
  }
  const Computation* cond = w.while_condition();
  const Computation* body = w.while_body();
  if (cond == nullptr || body == nullptr || cond->root() == nullptr || body->root() == nullptr ||
      w.operand_count() != 1) {
    return -1;
  }
  const Instruction* cmp = cond->root();
  if (cmp->opcode() != Opcode::kCompare || !cmp->attrs().comparison_direction || cmp->operand_count() != 2) return -1;
  ComparisonDirection dir = *cmp->attrs().comparison_direction;
  int64_t index = CounterIndex(cmp->operand(0));
  std::optional<double> limit = ConstantValue(cmp->operand(1));
  if (index < 0 || !limit) {
    // constant OP counter: flip the direction.
    index = CounterIndex(cmp->operand(1));
    limit = ConstantValue(cmp->operand(0));
    static constexpr ComparisonDirection kFlip[] = {ComparisonDirection::kEq, ComparisonDirection::kNe,
                                                    ComparisonDirection::kLe, ComparisonDirection::kLt,
                                                    ComparisonDirection::kGe, ComparisonDirection::kGt};
    dir = kFlip[static_cast<int>(dir)];
  }
  if (index < 0 || !limit) return -1;
  // Start: the while's operand tuple element; step: the body's root tuple element.
  const Instruction* init = w.operand(0);
  const Instruction* next = body->root();
  if (init->opcode() != Opcode::kTuple || next->opcode() != Opcode::kTuple || index >= init->operand_count() ||
      index >= next->operand_count()) {
    return -1;
  }
  std::optional<double> start = ConstantValue(init->operand(static_cast<int>(index)));
  const Instruction* inc = next->operand(static_cast<int>(index));
  if (!start || (inc->opcode() != Opcode::kAdd && inc->opcode() != Opcode::kSubtract) || inc->operand_count() != 2) return -1;
  std::optional<double> step;
  if (CounterIndex(inc->operand(0)) == index) step = ConstantValue(inc->operand(1));
  else if (inc->opcode() == Opcode::kAdd && CounterIndex(inc->operand(1)) == index) step = ConstantValue(inc->operand(0));
  if (!step || *step == 0) return -1;
  const double s = inc->opcode() == Opcode::kSubtract ? -*step : *step;
  const double span = *limit - *start;
  double trips = -1;
  switch (dir) {
    case ComparisonDirection::kLt: trips = s > 0 ? std::ceil(span / s) : -1; break;
    case ComparisonDirection::kLe: trips = s > 0 ? std::floor(span / s) + 1 : -1; break;
    case ComparisonDirection::kGt: trips = s < 0 ? std::ceil(span / s) : -1; break;
    case ComparisonDirection::kGe: trips = s < 0 ? std::floor(span / s) + 1 : -1; break;
    case ComparisonDirection::kNe: trips = std::fmod(span, s) == 0 && span / s >= 0 ? span / s : -1; break;
    case ComparisonDirection::kEq: trips = span == 0 ? 1 : 0; break;
  }
  if (!std::isfinite(trips) || trips > 1e12) return -1;
  return static_cast<int64_t>(std::max(trips, 0.0));
}

}  // namespace xs::spmd
