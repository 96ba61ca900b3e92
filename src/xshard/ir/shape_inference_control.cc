// Shape inference for control flow (call, while, conditional) and collectives (all-gather,
// all-reduce, reduce-scatter, all-to-all, collective-permute).
#include "xshard/ir/shape_inference.h"
#include "xshard/ir/shape_inference_util.h"

namespace xs {

using shape_inference::ExpectArray;

StatusOr<Shape> InferCallShape(std::span<const Shape> args, const ProgramShape& fn) {
  if (args.size() != fn.parameters.size()) {
    return InvalidArgument("the called computation ", fn.ToString(), " takes ",
                           fn.parameters.size(), " parameters but gets ", args.size(),
                           " arguments");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].Compatible(fn.parameters[i])) {
      return InvalidArgument("argument ", i, " ", ShapeText(args[i]),
                             " does not match parameter ", i, " ",
                             ShapeText(fn.parameters[i]), " of the called computation");
    }
  }
  return fn.result.WithoutLayout();
}

StatusOr<Shape> InferWhileShape(const ProgramShape& condition, const ProgramShape& body,
                                const Shape& init) {
  if (condition.parameters.size() != 1 || body.parameters.size() != 1) {
    return InvalidArgument("while condition ", condition.ToString(), " and body ",
                           body.ToString(), " must take exactly one parameter each");
  }
  if (!condition.result.Compatible(Shape(DType::kPred, {}))) {
    return InvalidArgument("while condition must return pred[], returns ",
                           ShapeText(condition.result));
  }
  if (!body.result.Compatible(init) || !body.parameters[0].Compatible(init) ||
      !condition.parameters[0].Compatible(init)) {
    return InvalidArgument("while state ", ShapeText(init), " must equal the body parameter ",
                           ShapeText(body.parameters[0]), ", the body result ",
                           ShapeText(body.result), " and the condition parameter ",
                           ShapeText(condition.parameters[0]));
  }
  return init.WithoutLayout();
}

StatusOr<Shape> InferConditionalShape(const Shape& branch_index,
                                      std::span<const ProgramShape> branches,
                                      std::span<const Shape> branch_operands) {
  const bool is_pred = branch_index.Compatible(Shape(DType::kPred, {}));
  if (!is_pred && !branch_index.Compatible(Shape(DType::kS32, {}))) {
    return InvalidArgument("the branch index must be pred[] or s32[], got ",
                           ShapeText(branch_index));
  }
  if (branches.empty() || (is_pred && branches.size() != 2)) {
    return InvalidArgument("a conditional with a ", ShapeText(branch_index), " index needs ",
                           is_pred ? "exactly 2" : "at least 1", " branches, got ",
                           branches.size());
  }
  if (branch_operands.size() != branches.size()) {
    return InvalidArgument("a conditional with ", branches.size(), " branches needs ",
                           branches.size() + 1, " operands, got ", branch_operands.size() + 1);
  }
  for (size_t j = 0; j < branches.size(); ++j) {
    if (branches[j].parameters.size() != 1 ||
        !branches[j].parameters[0].Compatible(branch_operands[j])) {
      return InvalidArgument("branch ", j, " ", branches[j].ToString(),
                             " must take one parameter of the operand's shape ",
                             ShapeText(branch_operands[j]));
    }
    if (!branches[j].result.Compatible(branches[0].result)) {
      return InvalidArgument("branch ", j, " returns ", ShapeText(branches[j].result),
                             " but branch 0 returns ", ShapeText(branches[0].result));
    }
  }
  return branches[0].result.WithoutLayout();
}

namespace {

// One result per operand, a tuple when there are several.
Shape OneOrTuple(std::vector<Shape> shapes) {
  if (shapes.size() == 1) return std::move(shapes[0]);
  return Shape::Tuple(std::move(shapes));
}

}  // namespace

StatusOr<Shape> InferAllGatherShape(std::span<const Shape> operands, int64_t dim,
                                    int64_t shard_count) {
  if (operands.empty()) return InvalidArgument("all-gather needs at least one operand");
  if (shard_count < 1) return InvalidArgument("all-gather group size ", shard_count, " is < 1");
  std::vector<Shape> outs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Shape& s = operands[i];
    XS_RETURN_IF_ERROR(ExpectArray(s, StrCat("operand ", i)));
    if (dim < 0 || dim >= s.rank()) {
      return InvalidArgument("all-gather dimension ", dim, " is out of range for ", ShapeText(s));
    }
    std::vector<int64_t> dims = s.dims();
    if (dims[dim] > 0) dims[dim] *= shard_count;  // an unbounded dim ('?', -1) stays unbounded
    outs.emplace_back(s.dtype(), std::move(dims));
  }
  return OneOrTuple(std::move(outs));
}

StatusOr<Shape> InferAllReduceShape(std::span<const Shape> operands) {
  if (operands.empty()) return InvalidArgument("all-reduce needs at least one operand");
  std::vector<Shape> outs;
  for (size_t i = 0; i < operands.size(); ++i) {
    XS_RETURN_IF_ERROR(ExpectArray(operands[i], StrCat("operand ", i)));
    outs.push_back(operands[i].WithoutLayout());
  }
  return OneOrTuple(std::move(outs));
}

StatusOr<Shape> InferReduceScatterShape(std::span<const Shape> operands, int64_t dim,
                                        int64_t shard_count) {
  if (operands.empty()) return InvalidArgument("reduce-scatter needs at least one operand");
  if (shard_count < 1) {
    return InvalidArgument("reduce-scatter group size ", shard_count, " is < 1");
  }
  std::vector<Shape> outs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Shape& s = operands[i];
    XS_RETURN_IF_ERROR(ExpectArray(s, StrCat("operand ", i)));
    if (dim < 0 || dim >= s.rank()) {
      return InvalidArgument("reduce-scatter dimension ", dim, " is out of range for ",
                             ShapeText(s));
    }
    if (s.dim(static_cast<int>(dim)) % shard_count != 0) {
      return InvalidArgument("reduce-scatter dim ", dim, " of ", ShapeText(s), " (size ",
                             s.dim(static_cast<int>(dim)), ") does not divide by the group size ",
                             shard_count);
    }
    std::vector<int64_t> dims = s.dims();
    dims[dim] /= shard_count;
    outs.emplace_back(s.dtype(), std::move(dims));
  }
  return OneOrTuple(std::move(outs));
}

StatusOr<Shape> InferAllToAllArrayShape(const Shape& operand, int64_t split_dim,
                                        int64_t split_count) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of all-to-all"));
  if (split_dim < 0 || split_dim >= operand.rank()) {
    return InvalidArgument("all-to-all dimension ", split_dim, " is out of range for ",
                           ShapeText(operand));
  }
  if (split_count < 1 || operand.dim(static_cast<int>(split_dim)) % split_count != 0) {
    return InvalidArgument("all-to-all dim ", split_dim, " of ", ShapeText(operand),
                           " does not divide by the group size ", split_count);
  }
  return operand.WithoutLayout();
}

StatusOr<Shape> InferAllToAllTupleShape(std::span<const Shape> operands) {
  if (operands.empty()) return InvalidArgument("all-to-all needs at least one operand");
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i].Compatible(operands[0])) {
      return InvalidArgument("all-to-all operand ", i, " ", ShapeText(operands[i]),
                             " differs from operand 0 ", ShapeText(operands[0]));
    }
  }
  return InferTupleShape(operands);
}

StatusOr<Shape> InferCollectivePermuteShape(std::span<const Shape> operands) {
  if (operands.size() == 4) return operands[1].WithoutLayout();  // in-place: output buffer
  if (operands.empty()) return InvalidArgument("collective-permute needs an operand");
  std::vector<Shape> outs;
  for (const Shape& s : operands) outs.push_back(s.WithoutLayout());
  return OneOrTuple(std::move(outs));
}

}  // namespace xs
