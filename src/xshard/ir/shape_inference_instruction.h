// Internal helpers of InferInstructionShape, shared by shape_inference_instruction.cc and
// shape_inference_collective.cc (not part of the public API).
#ifndef XSHARD_IR_SHAPE_INFERENCE_INSTRUCTION_H_
#define XSHARD_IR_SHAPE_INFERENCE_INSTRUCTION_H_

#include <string_view>
#include <vector>

#include "xshard/ir/instruction.h"
#include "xshard/ir/shape_inference.h"

namespace xs::instruction_shape {

// Shapes of operands from..end.
std::vector<Shape> OperandShapes(const Instruction& inst, int from);
// Shape of operand i.
const Shape& Op(const Instruction& inst, int i);
// The instruction's declared shape without layout.
Shape Declared(const Instruction& inst);
Status ExpectOperandCount(const Instruction& inst, int n);
// Operand i must be a token.
Status ExpectToken(const Instruction& inst, int i);
// The signature of the computation called with `role`; error when there is none.
StatusOr<ProgramShape> Called(const Instruction& inst, CallRole role);
// Element i of a tuple shape (error naming `what` otherwise).
StatusOr<Shape> TupleElement(const Shape& s, int i, std::string_view what);
// dimensions={d}'s d, or `fallback` when absent.
int64_t FirstDimension(const Instruction& inst, int64_t fallback);

using Handler = StatusOr<Shape> (*)(const Instruction&);
// The handler of a collective / async / host-transfer / misc opcode, or nullptr.
Handler CollectiveHandlerFor(Opcode op);
// Ops whose result shape is an attribute of the text (or opaque to xshard): the declared shape.
StatusOr<Shape> DeclaredHandler(const Instruction& inst);
// The handler of an array op (convert ... fusion) from shape_inference_ops.cc, or nullptr.
Handler OpHandlerFor(Opcode op);

}  // namespace xs::instruction_shape

#endif  // XSHARD_IR_SHAPE_INFERENCE_INSTRUCTION_H_
