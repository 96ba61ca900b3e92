// InferInstructionShape: reads an Instruction's operands, attributes and called computations and
// applies the per-op rules of shape_inference.h. One table maps each opcode to its handler.
#include <algorithm>
#include <array>
#include <set>

#include "xshard/ir/computation.h"
#include "xshard/ir/module.h"
#include "xshard/ir/shape_inference.h"
#include "xshard/ir/shape_inference_instruction.h"
#include "xshard/ir/shape_inference_util.h"

namespace xs {
namespace instruction_shape {

std::vector<Shape> OperandShapes(const Instruction& inst, int from) {
  std::vector<Shape> out;
  for (int i = from; i < inst.operand_count(); ++i) out.push_back(inst.operand(i)->shape());
  return out;
}

const Shape& Op(const Instruction& inst, int i) { return inst.operand(i)->shape(); }

Shape Declared(const Instruction& inst) { return inst.shape().WithoutLayout(); }

Status ExpectOperandCount(const Instruction& inst, int n) {
  if (inst.operand_count() == n) return OkStatus();
  return InvalidArgument(OpcodeName(inst.opcode()), " takes ", n, " operand(s), got ",
                         inst.operand_count());
}

Status ExpectToken(const Instruction& inst, int i) {
  if (Op(inst, i).IsToken()) return OkStatus();
  return InvalidArgument("operand ", i, " ('", inst.operand(i)->name(), "') must be a token, ",
                         "got ", ShapeText(Op(inst, i)));
}

StatusOr<ProgramShape> Called(const Instruction& inst, CallRole role) {
  Computation* c = inst.called(role);
  if (c == nullptr) {
    return InvalidArgument(OpcodeName(inst.opcode()), " needs a ", CallRoleName(role),
                           " computation");
  }
  return ComputeProgramShape(*c);
}

StatusOr<Shape> TupleElement(const Shape& s, int i, std::string_view what) {
  if (!s.IsTuple() || s.tuple_size() <= i) {
    return InvalidArgument(what, " must be a tuple with at least ", i + 1, " elements, got ",
                           ShapeText(s));
  }
  return s.tuple_shape(i).WithoutLayout();
}

int64_t FirstDimension(const Instruction& inst, int64_t fallback) {
  return inst.dimensions().empty() ? fallback : inst.dimensions()[0];
}

}  // namespace instruction_shape

using instruction_shape::Called;
using instruction_shape::CollectiveHandlerFor;
using instruction_shape::Declared;
using instruction_shape::ExpectOperandCount;
using instruction_shape::FirstDimension;
using instruction_shape::Handler;
using instruction_shape::OpHandlerFor;
using instruction_shape::Op;
using instruction_shape::OperandShapes;

StatusOr<ProgramShape> ComputeProgramShape(const Computation& computation) {
  ProgramShape out;
  for (int i = 0; i < computation.num_parameters(); ++i) {
    const Instruction* p = computation.parameter(i);
    if (p == nullptr) {
      return InvalidArgument("computation '", computation.name(), "' has no parameter(", i,
                             ") but has parameter(", computation.num_parameters() - 1, ")");
    }
    out.parameters.push_back(p->shape().WithoutLayout());
  }
  if (computation.root() == nullptr) {
    return InvalidArgument("computation '", computation.name(), "' has no root instruction");
  }
  out.result = computation.root()->shape().WithoutLayout();
  return out;
}

StatusOr<int64_t> CollectiveGroupSize(const Instruction& inst, bool uniform) {
  const auto& groups = inst.attrs().replica_groups;
  if (groups && !groups->Groups().empty()) {
    // Ids are normally dense (0..N-1): a bitmap then, a set otherwise (same first offender).
    int64_t max_id = 0, count = 0;
    for (const auto& g : groups->Groups()) {
      for (int64_t id : g) max_id = std::max(max_id, id);
      count += static_cast<int64_t>(g.size());
    }
    const bool dense = max_id < 4 * count + 64;
    std::vector<char> seen_dense(dense ? max_id + 1 : 0, 0);
    std::set<int64_t> seen;
    const size_t size = groups->Groups()[0].size();
    for (const auto& g : groups->Groups()) {
      if (g.empty()) return InvalidArgument("replica_groups contains an empty group");
      if (uniform && g.size() != size) {
        return InvalidArgument("replica_groups must all have the same size, got ", size,
                               " and ", g.size());
      }
      for (int64_t id : g) {
        if (id < 0 || (dense ? seen_dense[id]++ != 0 : !seen.insert(id).second)) {
          return InvalidArgument("replica_groups names id ", id, " twice or negatively");
        }
      }
    }
    return static_cast<int64_t>(size);
  }
  const Module* module = inst.parent() ? inst.parent()->parent() : nullptr;
  if (module == nullptr) return int64_t{1};
  const ModuleConfig& c = module->config();
  // XLA's group modes: no channel -> cross-replica; channel -> cross-partition; channel with
  // use_global_device_ids -> flattened ids (groups required, so unknown here).
  if (!inst.attrs().channel_id) return c.replica_count;
  if (inst.attrs().use_global_device_ids) return int64_t{1};
  return c.num_partitions;
}

namespace {

StatusOr<Shape> UnaryHandler(const Instruction& inst) {
  if (inst.opcode() == Opcode::kReducePrecision) {
    const auto& a = inst.attrs();
    if (a.exponent_bits && *a.exponent_bits < 1) {
      return InvalidArgument("exponent_bits=", *a.exponent_bits, " must be >= 1");
    }
    if (a.mantissa_bits && *a.mantissa_bits < 0) {
      return InvalidArgument("mantissa_bits=", *a.mantissa_bits, " must be >= 0");
    }
  }
  return InferUnaryOpShape(inst.opcode(), Op(inst, 0));
}
StatusOr<Shape> BinaryHandler(const Instruction& inst) {
  return InferBinaryOpShape(inst.opcode(), Op(inst, 0), Op(inst, 1));
}

// The handler table indexed by opcode, built once from the op and collective tables.
// Elementwise ops without an entry use the unary / binary rules by arity.
std::array<Handler, kOpcodeCount> BuildTable() {
  std::array<Handler, kOpcodeCount> table{};
  for (int i = 0; i < kOpcodeCount; ++i) {
    Opcode op = static_cast<Opcode>(i);
    if (Handler h = CollectiveHandlerFor(op)) {
      table[i] = h;
    } else if (IsElementwise(op) && OpcodeArity(op) == 1) {
      table[i] = UnaryHandler;
    } else if (IsElementwise(op) && OpcodeArity(op) == 2) {
      table[i] = BinaryHandler;
    }
  }
  for (int i = 0; i < kOpcodeCount; ++i) {
    if (Handler h = OpHandlerFor(static_cast<Opcode>(i))) table[i] = h;
  }
  for (Opcode op : {Opcode::kCopy, Opcode::kDomain, Opcode::kOptimizationBarrier}) {
    table[static_cast<int>(op)] = UnaryHandler;
  }
  return table;
}

// Least operand count of variadic ops whose rules read leading operands.
constexpr std::pair<Opcode, int> kMinOperands[] = {
    {Opcode::kAllGather, 1}, {Opcode::kAllGatherStart, 1}, {Opcode::kAllReduce, 1},
    {Opcode::kAllReduceStart, 1}, {Opcode::kAllToAll, 1}, {Opcode::kAsyncUpdate, 1},
    {Opcode::kCollectiveBroadcast, 1}, {Opcode::kCollectivePermute, 1},
    {Opcode::kCollectivePermuteStart, 1}, {Opcode::kConcatenate, 1}, {Opcode::kConditional, 2},
    {Opcode::kDynamicReshape, 1}, {Opcode::kDynamicSlice, 1}, {Opcode::kDynamicUpdateSlice, 2},
    {Opcode::kReduceScatter, 1}, {Opcode::kReduce, 2}, {Opcode::kReduceWindow, 2},
    {Opcode::kScatter, 3}, {Opcode::kSort, 1}, {Opcode::kMap, 1},
};

Status CheckOperandCount(const Instruction& inst) {
  const int arity = OpcodeArity(inst.opcode());
  if (arity != kVariadic && inst.operand_count() != arity &&
      !(inst.opcode() == Opcode::kDot && inst.attrs().Other("sparsity"))) {
    return InvalidArgument(OpcodeName(inst.opcode()), " takes ", arity, " operand(s), got ",
                           inst.operand_count());
  }
  for (const auto& [op, least] : kMinOperands) {
    if (op == inst.opcode() && inst.operand_count() < least) {
      return InvalidArgument(OpcodeName(op), " takes at least ", least, " operand(s), got ",
                             inst.operand_count());
    }
  }
  return OkStatus();
}

const std::array<Handler, kOpcodeCount>& Table() {
  static const std::array<Handler, kOpcodeCount> table = BuildTable();  // immutable
  return table;
}

}  // namespace

bool HasShapeInference(Opcode op) {
  const Handler h = Table()[static_cast<int>(op)];
  return h != nullptr && h != &instruction_shape::DeclaredHandler;
}

StatusOr<Shape> InferInstructionShape(const Instruction& inst) {
  const std::array<Handler, kOpcodeCount>& kTable = Table();
  XS_RETURN_IF_ERROR(CheckOperandCount(inst));
  Handler h = kTable[static_cast<int>(inst.opcode())];
  if (h == nullptr) return Declared(inst);
  return h(inst);
}

}  // namespace xs
