// ComputationBuilder op methods: each fills the attributes and called computations of one HLO op
// and hands it to Emit, which infers and checks the shape.
#include "xshard/ir/builder.h"
#include "xshard/ir/shape_inference.h"

namespace xs {
namespace {

// A placeholder shape of the right element type for ops whose shape Emit infers.
Shape Placeholder(DType dtype = DType::kF32) { return Shape(dtype, {}); }

ReplicaGroups Groups(const CollectiveOptions& options) {
  ReplicaGroups g;
  g.groups = options.replica_groups;
  return g;
}

Attributes CollectiveAttrs(const CollectiveOptions& options) {
  Attributes a;
  a.replica_groups = Groups(options);
  a.channel_id = options.channel_id;
  a.use_global_device_ids = options.use_global_device_ids;
  return a;
}

Attributes WithDims(std::vector<int64_t> dims) {
  Attributes a;
  a.dimensions = std::move(dims);
  return a;
}

}  // namespace

Op ComputationBuilder::Parameter(int64_t number, Shape shape, std::string name) {
  if (!name.empty() && !next_name_) next_name_ = std::move(name);
  Attributes a;
  a.parameter_number = number;
  if (number < 0 || (number < raw_->num_parameters() && raw_->parameter(number) != nullptr)) {
    return Fail(InvalidArgument("Parameter: number ", number, " is negative or already used ",
                                   "in computation '", this->name(), "'"));
  }
  return Emit("Parameter", Opcode::kParameter, {}, std::move(shape), std::move(a));
}

Op ComputationBuilder::Constant(Array value) {
  Attributes a;
  Shape shape = value.shape();
  a.literal = Literal{std::move(value), {}};
  return Emit("Constant", Opcode::kConstant, {}, std::move(shape), std::move(a));
}

Op ComputationBuilder::Iota(Shape shape, int64_t iota_dimension) {
  Attributes a;
  a.iota_dimension = iota_dimension;
  return Emit("Iota", Opcode::kIota, {}, std::move(shape), std::move(a));
}

Op ComputationBuilder::Unary(Opcode opcode, Op x) {
  if (!IsElementwise(opcode) || OpcodeArity(opcode) != 1) {
    return Fail(InvalidArgument("Unary: ", OpcodeName(opcode),
                                " is not a unary elementwise op; use Raw()"));
  }
  return Emit(OpcodeName(opcode), opcode, {x}, Placeholder());
}

Op ComputationBuilder::Binary(Opcode opcode, Op a, Op b) {
  return Emit(OpcodeName(opcode), opcode, {a, b}, Placeholder());
}

Op ComputationBuilder::Compare(Op a, Op b, ComparisonDirection direction, ComparisonType type) {
  Attributes attrs;
  attrs.comparison_direction = direction;
  attrs.comparison_type = type;
  return Emit("Compare", Opcode::kCompare, {a, b}, Placeholder(), std::move(attrs));
}

Op ComputationBuilder::Select(Op pred, Op on_true, Op on_false) {
  return Emit("Select", Opcode::kSelect, {pred, on_true, on_false}, Placeholder());
}

Op ComputationBuilder::Clamp(Op min, Op x, Op max) {
  return Emit("Clamp", Opcode::kClamp, {min, x, max}, Placeholder());
}

Op ComputationBuilder::Convert(Op x, DType to) {
  return Emit("Convert", Opcode::kConvert, {x}, Shape(to, x.shape().dims()));
}

Op ComputationBuilder::BitcastConvert(Op x, DType to) {
  return Emit("BitcastConvert", Opcode::kBitcastConvert, {x}, Placeholder(to));
}

Op ComputationBuilder::BroadcastInDim(Op x, std::vector<int64_t> out_dims,
                                      std::vector<int64_t> dims) {
  for (int64_t d : out_dims) {
    if (d < 0) {
      return Fail(InvalidArgument("BroadcastInDim: output dim size ", d, " is negative"));
    }
  }
  Shape shape(x.shape().dtype(), std::move(out_dims));
  return Emit("BroadcastInDim", Opcode::kBroadcast, {x}, std::move(shape),
              WithDims(std::move(dims)));
}

Op ComputationBuilder::Broadcast(Op x, std::vector<int64_t> sizes) {
  std::vector<int64_t> dims;
  const int64_t n = static_cast<int64_t>(sizes.size());
  for (int64_t i = 0; i < x.shape().rank(); ++i) dims.push_back(n + i);
  sizes.insert(sizes.end(), x.shape().dims().begin(), x.shape().dims().end());
  return BroadcastInDim(x, std::move(sizes), std::move(dims));
}

Op ComputationBuilder::Reshape(Op x, std::vector<int64_t> dims) {
  for (int64_t d : dims) {
    if (d < 0) {
      return Fail(InvalidArgument("Reshape: dim size ", d, " is negative"));
    }
  }
  return Emit("Reshape", Opcode::kReshape, {x}, Shape(x.shape().dtype(), std::move(dims)));
}

Op ComputationBuilder::Transpose(Op x, std::vector<int64_t> permutation) {
  return Emit("Transpose", Opcode::kTranspose, {x}, Placeholder(),
              WithDims(std::move(permutation)));
}

Op ComputationBuilder::Slice(Op x, std::vector<int64_t> starts, std::vector<int64_t> limits,
                             std::vector<int64_t> strides) {
  if (strides.empty()) strides.assign(starts.size(), 1);
  if (starts.size() != limits.size() || starts.size() != strides.size()) {
    return Fail(InvalidArgument("Slice: starts, limits and strides have different lengths (",
                                   starts.size(), ", ", limits.size(), ", ", strides.size(), ")"));
  }
  Attributes a;
  a.slice.emplace();
  for (size_t i = 0; i < starts.size(); ++i) a.slice->push_back({starts[i], limits[i], strides[i]});
  return Emit("Slice", Opcode::kSlice, {x}, Placeholder(), std::move(a));
}

Op ComputationBuilder::DynamicSlice(Op x, std::vector<Op> start_indices,
                                    std::vector<int64_t> sizes) {
  start_indices.insert(start_indices.begin(), x);
  Attributes a;
  a.dynamic_slice_sizes = std::move(sizes);
  return Emit("DynamicSlice", Opcode::kDynamicSlice, std::move(start_indices), Placeholder(),
              std::move(a));
}

Op ComputationBuilder::DynamicUpdateSlice(Op x, Op update, std::vector<Op> start_indices) {
  start_indices.insert(start_indices.begin(), {x, update});
  return Emit("DynamicUpdateSlice", Opcode::kDynamicUpdateSlice, std::move(start_indices),
              Placeholder());
}

Op ComputationBuilder::Concatenate(std::vector<Op> operands, int64_t dimension) {
  return Emit("Concatenate", Opcode::kConcatenate, std::move(operands), Placeholder(),
              WithDims({dimension}));
}

Op ComputationBuilder::Pad(Op x, Op pad_value, std::vector<PaddingDim> padding) {
  Attributes a;
  a.padding = std::move(padding);
  return Emit("Pad", Opcode::kPad, {x, pad_value}, Placeholder(), std::move(a));
}

Op ComputationBuilder::Reverse(Op x, std::vector<int64_t> dims) {
  return Emit("Reverse", Opcode::kReverse, {x}, Placeholder(), WithDims(std::move(dims)));
}

Op ComputationBuilder::Gather(Op x, Op indices, GatherDimensionNumbers dnums,
                              std::vector<int64_t> slice_sizes) {
  Attributes a;
  a.gather = std::move(dnums);
  a.slice_sizes = std::move(slice_sizes);
  return Emit("Gather", Opcode::kGather, {x, indices}, Placeholder(), std::move(a));
}

Op ComputationBuilder::Scatter(Op x, Op indices, Op updates, const ComputationBuilder& update_fn,
                               ScatterDimensionNumbers dnums) {
  Attributes a;
  a.scatter = std::move(dnums);
  return Emit("Scatter", Opcode::kScatter, {x, indices, updates}, Placeholder(), std::move(a),
              {{CallRole::kToApply, update_fn.raw_}});
}

Op ComputationBuilder::Tuple(std::vector<Op> elements) {
  return Emit("Tuple", Opcode::kTuple, std::move(elements), Placeholder());
}

Op ComputationBuilder::GetTupleElement(Op tuple, int64_t index) {
  Attributes a;
  a.tuple_index = index;
  return Emit("GetTupleElement", Opcode::kGetTupleElement, {tuple}, Placeholder(), std::move(a));
}

Op ComputationBuilder::Dot(Op a, Op b) {
  DotDimensionNumbers dn;
  if (a.shape().rank() > 0) dn.lhs_contracting = {a.shape().rank() - 1};
  if (b.shape().rank() > 0) dn.rhs_contracting = {0};
  return Dot(a, b, std::move(dn));
}

Op ComputationBuilder::Dot(Op a, Op b, DotDimensionNumbers dnums,
                           std::optional<DType> result_type) {
  Attributes attrs;
  attrs.dot = std::move(dnums);
  DType t = result_type ? *result_type : a.shape().dtype();
  if (!result_type && b.valid() && IsFloating(t) && IsFloating(b.shape().dtype()) &&
      DTypeBitWidth(b.shape().dtype()) > DTypeBitWidth(t)) {
    t = b.shape().dtype();
  }
  return Emit("Dot", Opcode::kDot, {a, b}, Placeholder(t), std::move(attrs));
}

Op ComputationBuilder::Convolution(Op lhs, Op rhs, Window window,
                                   ConvolutionDimensionNumbers dnums,
                                   int64_t feature_group_count, int64_t batch_group_count) {
  Attributes a;
  a.window = std::move(window);
  a.conv_dims = std::move(dnums);
  a.feature_group_count = feature_group_count;
  a.batch_group_count = batch_group_count;
  return Emit("Convolution", Opcode::kConvolution, {lhs, rhs}, Placeholder(lhs.shape().dtype()),
              std::move(a));
}

Op ComputationBuilder::Reduce(Op x, Op init, const ComputationBuilder& reducer,
                              std::vector<int64_t> dims) {
  return Reduce(std::vector<Op>{x}, std::vector<Op>{init}, reducer, std::move(dims));
}

Op ComputationBuilder::Reduce(std::vector<Op> xs, std::vector<Op> inits,
                              const ComputationBuilder& reducer, std::vector<int64_t> dims) {
  if (xs.size() != inits.size()) {
    return Fail(InvalidArgument("Reduce: ", xs.size(), " inputs but ", inits.size(),
                                " init values; give one init per input"));
  }
  xs.insert(xs.end(), inits.begin(), inits.end());
  return Emit("Reduce", Opcode::kReduce, std::move(xs), Placeholder(), WithDims(std::move(dims)),
              {{CallRole::kToApply, reducer.raw_}});
}

Op ComputationBuilder::ReduceWindow(Op x, Op init, const ComputationBuilder& reducer,
                                    Window window) {
  Attributes a;
  a.window = std::move(window);
  return Emit("ReduceWindow", Opcode::kReduceWindow, {x, init}, Placeholder(), std::move(a),
              {{CallRole::kToApply, reducer.raw_}});
}

Op ComputationBuilder::SelectAndScatter(Op operand, const ComputationBuilder& select,
                                        Window window, Op source, Op init,
                                        const ComputationBuilder& scatter) {
  Attributes a;
  a.window = std::move(window);
  return Emit("SelectAndScatter", Opcode::kSelectAndScatter, {operand, source, init},
              Placeholder(), std::move(a),
              {{CallRole::kSelect, select.raw_}, {CallRole::kScatter, scatter.raw_}});
}

Op ComputationBuilder::Sort(std::vector<Op> operands, const ComputationBuilder& comparator,
                            int64_t dimension, bool is_stable) {
  Attributes a = WithDims({dimension});
  a.is_stable = is_stable;
  return Emit("Sort", Opcode::kSort, std::move(operands), Placeholder(), std::move(a),
              {{CallRole::kToApply, comparator.raw_}});
}

Op ComputationBuilder::Call(const ComputationBuilder& fn, std::vector<Op> args) {
  return Emit("Call", Opcode::kCall, std::move(args), Placeholder(), {},
              {{CallRole::kToApply, fn.raw_}});
}

Op ComputationBuilder::While(const ComputationBuilder& condition, const ComputationBuilder& body,
                             Op init) {
  return Emit("While", Opcode::kWhile, {init}, Placeholder(), {},
              {{CallRole::kCondition, condition.raw_}, {CallRole::kBody, body.raw_}});
}

Op ComputationBuilder::Conditional(Op pred, Op true_arg, const ComputationBuilder& true_fn,
                                   Op false_arg, const ComputationBuilder& false_fn) {
  return Emit("Conditional", Opcode::kConditional, {pred, true_arg, false_arg}, Placeholder(), {},
              {{CallRole::kTrueComputation, true_fn.raw_},
               {CallRole::kFalseComputation, false_fn.raw_}});
}

Op ComputationBuilder::Conditional(Op branch_index, std::vector<Op> args,
                                   std::vector<const ComputationBuilder*> branches) {
  std::vector<CalledComputation> calls;
  for (const ComputationBuilder* b : branches) {
    calls.push_back({CallRole::kBranch, b != nullptr ? b->raw_ : nullptr});
  }
  args.insert(args.begin(), branch_index);
  return Emit("Conditional", Opcode::kConditional, std::move(args), Placeholder(), {},
              std::move(calls));
}

Op ComputationBuilder::AllReduce(Op x, const ComputationBuilder& reducer,
                                 CollectiveOptions options) {
  return Emit("AllReduce", Opcode::kAllReduce, {x}, Placeholder(), CollectiveAttrs(options),
              {{CallRole::kToApply, reducer.raw_}});
}

Op ComputationBuilder::AllGather(Op x, int64_t dimension, CollectiveOptions options) {
  if (!x.valid() || !!failed()) return Emit("AllGather", Opcode::kAllGather, {x},
                                                           Placeholder());
  StatusOr<int64_t> group = GroupSize(options, "AllGather");
  StatusOr<Shape> shape = group.ok() ? InferAllGatherShape({&x.shape(), 1}, dimension, *group)
                                     : StatusOr<Shape>(group.status());
  if (!shape.ok()) {
    return Fail(Annotate(shape.status(), "AllGather: "));
  }
  Attributes a = CollectiveAttrs(options);
  a.dimensions = std::vector<int64_t>{dimension};
  return Emit("AllGather", Opcode::kAllGather, {x}, *shape, std::move(a));
}

Op ComputationBuilder::ReduceScatter(Op x, const ComputationBuilder& reducer, int64_t dimension,
                                     CollectiveOptions options) {
  if (!x.valid() || !!failed()) {
    return Emit("ReduceScatter", Opcode::kReduceScatter, {x}, Placeholder());
  }
  StatusOr<int64_t> group = GroupSize(options, "ReduceScatter");
  StatusOr<Shape> shape = group.ok()
                              ? InferReduceScatterShape({&x.shape(), 1}, dimension, *group)
                              : StatusOr<Shape>(group.status());
  if (!shape.ok()) {
    return Fail(Annotate(shape.status(), "ReduceScatter: "));
  }
  Attributes a = CollectiveAttrs(options);
  a.dimensions = std::vector<int64_t>{dimension};
  return Emit("ReduceScatter", Opcode::kReduceScatter, {x}, *shape, std::move(a),
              {{CallRole::kToApply, reducer.raw_}});
}

Op ComputationBuilder::AllToAll(Op x, int64_t dimension, CollectiveOptions options) {
  Attributes a = CollectiveAttrs(options);
  a.dimensions = std::vector<int64_t>{dimension};
  return Emit("AllToAll", Opcode::kAllToAll, {x}, Placeholder(), std::move(a));
}

Op ComputationBuilder::CollectivePermute(
    Op x, std::vector<std::pair<int64_t, int64_t>> source_target_pairs,
    std::optional<int64_t> channel_id) {
  Attributes a;
  a.source_target_pairs = std::move(source_target_pairs);
  a.channel_id = channel_id;
  return Emit("CollectivePermute", Opcode::kCollectivePermute, {x}, Placeholder(), std::move(a));
}

Op ComputationBuilder::PartitionId() {
  return Emit("PartitionId", Opcode::kPartitionId, {}, Placeholder(DType::kU32));
}

Op ComputationBuilder::ReplicaId() {
  return Emit("ReplicaId", Opcode::kReplicaId, {}, Placeholder(DType::kU32));
}

Op ComputationBuilder::CustomCall(std::string target, std::vector<Op> operands, Shape shape,
                                  std::string backend_config) {
  Attributes a;
  a.custom_call_target = std::move(target);
  if (!backend_config.empty()) a.backend_config = CEscape(backend_config);
  return Emit("CustomCall", Opcode::kCustomCall, std::move(operands), std::move(shape),
              std::move(a));
}

Op ComputationBuilder::Raw(Opcode opcode, std::vector<Op> operands, Shape shape, Attributes attrs,
                           std::vector<CalledComputation> calls) {
  return Emit(StrCat("Raw(", OpcodeName(opcode), ")"), opcode, std::move(operands),
              std::move(shape), std::move(attrs), std::move(calls));
}

}  // namespace xs
