// ModuleBuilder / ComputationBuilder: build HLO modules in C++, in the spirit of XLA's XlaBuilder.
// Every op's shape comes from shape inference; a mistake records the first error (naming the op)
// and later ops become no-ops, so code reads straight through and checks once at Build():
//
//   ModuleBuilder mb("jit_f");
//   ComputationBuilder& add = mb.AddComputation("add");
//   add.Add(add.Parameter(0, Shape(DType::kF32, {}), "x"),
//           add.Parameter(1, Shape(DType::kF32, {}), "y"));
//   ComputationBuilder& main = mb.AddEntry("main");
//   Op a = main.Parameter(0, Shape(DType::kF32, {4, 16}), "a");
//   Op b = main.Parameter(1, Shape(DType::kF32, {16, 8}), "b");
//   Op d = main.Dot(a, b);                                   // f32[4,8]
//   main.Reduce(d, main.Scalar(0.0f), add, {1});             // f32[4], the root
//   StatusOr<std::unique_ptr<Module>> m = mb.Build();        // verified
//
// Unnamed ops are called "<opcode>.<id>" with one id counter per module, as XlaBuilder does
// ("dot.3"); WithName() gives the next op an exact name, WithSharding() a sharding. Array shapes
// get the default row-major layout ({1,0}) unless the module builder is told otherwise.
#ifndef XSHARD_IR_BUILDER_H_
#define XSHARD_IR_BUILDER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xshard/ir/module.h"

namespace xs {

class ComputationBuilder;

// A value in a computation under construction. Invalid after a builder error.
class Op {
 public:
  Op() = default;
  bool valid() const { return inst_ != nullptr; }
  Instruction* instruction() const { return inst_; }
  // The op's shape (f32[] for an invalid op).
  const Shape& shape() const;

 private:
  friend class ComputationBuilder;
  explicit Op(Instruction* inst) : inst_(inst) {}
  Instruction* inst_ = nullptr;
};

// Collective options: replica_groups (empty: one group of everything), channel_id and
// use_global_device_ids as in XLA's text.
struct CollectiveOptions {
  std::vector<std::vector<int64_t>> replica_groups = {};
  std::optional<int64_t> channel_id = {};
  bool use_global_device_ids = false;
};

class ComputationBuilder {
 public:
  ComputationBuilder(const ComputationBuilder&) = delete;
  ComputationBuilder& operator=(const ComputationBuilder&) = delete;
  ~ComputationBuilder();

  const std::string& name() const;
  // The first error recorded by any builder of the module (OK when none).
  const Status& status() const;

  // Modifiers of the next op only: b.WithName("x.1").WithSharding(s).Parameter(...).
  ComputationBuilder& WithName(std::string name);
  ComputationBuilder& WithSharding(HloSharding sharding);
  // Sets `op`'s sharding (like XlaBuilder::SetSharding around one op); returns op.
  Op SetSharding(Op op, HloSharding sharding);
  // The root; by default the last op added.
  void SetRoot(Op op);

  Op Parameter(int64_t number, Shape shape, std::string name = "");
  Op Constant(Array value);
  template <typename T>
  Op Scalar(T value) { return Constant(Array::Scalar<T>(value)); }
  Op Iota(Shape shape, int64_t iota_dimension);

  // Elementwise (operands of equal shapes; see shape_inference.h).
  Op Unary(Opcode opcode, Op x);
  Op Binary(Opcode opcode, Op a, Op b);
  Op Neg(Op x) { return Unary(Opcode::kNegate, x); }
  Op Exp(Op x) { return Unary(Opcode::kExp, x); }
  Op Log(Op x) { return Unary(Opcode::kLog, x); }
  Op Abs(Op x) { return Unary(Opcode::kAbs, x); }
  Op Sqrt(Op x) { return Unary(Opcode::kSqrt, x); }
  Op Rsqrt(Op x) { return Unary(Opcode::kRsqrt, x); }
  Op Tanh(Op x) { return Unary(Opcode::kTanh, x); }
  Op Copy(Op x) { return Unary(Opcode::kCopy, x); }
  Op Add(Op a, Op b) { return Binary(Opcode::kAdd, a, b); }
  Op Sub(Op a, Op b) { return Binary(Opcode::kSubtract, a, b); }
  Op Mul(Op a, Op b) { return Binary(Opcode::kMultiply, a, b); }
  Op Div(Op a, Op b) { return Binary(Opcode::kDivide, a, b); }
  Op Max(Op a, Op b) { return Binary(Opcode::kMaximum, a, b); }
  Op Min(Op a, Op b) { return Binary(Opcode::kMinimum, a, b); }
  Op And(Op a, Op b) { return Binary(Opcode::kAnd, a, b); }
  Op Or(Op a, Op b) { return Binary(Opcode::kOr, a, b); }
  Op Compare(Op a, Op b, ComparisonDirection direction,
             ComparisonType type = ComparisonType::kNone);
  Op Select(Op pred, Op on_true, Op on_false);
  Op Clamp(Op min, Op x, Op max);
  Op Convert(Op x, DType to);
  Op BitcastConvert(Op x, DType to);

  // Data movement.
  // HLO broadcast: operand dim i becomes output dim dims[i] of a result with `out_dims`.
  Op BroadcastInDim(Op x, std::vector<int64_t> out_dims, std::vector<int64_t> dims);
  // Prepends `sizes` as new major dims (XlaBuilder's Broadcast).
  Op Broadcast(Op x, std::vector<int64_t> sizes);
  Op Reshape(Op x, std::vector<int64_t> dims);
  Op Transpose(Op x, std::vector<int64_t> permutation);
  Op Slice(Op x, std::vector<int64_t> starts, std::vector<int64_t> limits,
           std::vector<int64_t> strides = {});
  Op DynamicSlice(Op x, std::vector<Op> start_indices, std::vector<int64_t> sizes);
  Op DynamicUpdateSlice(Op x, Op update, std::vector<Op> start_indices);
  Op Concatenate(std::vector<Op> operands, int64_t dimension);
  Op Pad(Op x, Op pad_value, std::vector<PaddingDim> padding);
  Op Reverse(Op x, std::vector<int64_t> dims);
  Op Gather(Op x, Op indices, GatherDimensionNumbers dnums, std::vector<int64_t> slice_sizes);
  Op Scatter(Op x, Op indices, Op updates, const ComputationBuilder& update_fn,
             ScatterDimensionNumbers dnums);
  Op Tuple(std::vector<Op> elements);
  Op GetTupleElement(Op tuple, int64_t index);

  // Contractions and reductions. Dot(a, b) contracts a's last dim with b's first.
  Op Dot(Op a, Op b);
  Op Dot(Op a, Op b, DotDimensionNumbers dnums, std::optional<DType> result_type = {});
  Op Convolution(Op lhs, Op rhs, Window window, ConvolutionDimensionNumbers dnums,
                 int64_t feature_group_count = 1, int64_t batch_group_count = 1);
  Op Reduce(Op x, Op init, const ComputationBuilder& reducer, std::vector<int64_t> dims);
  Op Reduce(std::vector<Op> xs, std::vector<Op> inits, const ComputationBuilder& reducer,
            std::vector<int64_t> dims);
  Op ReduceWindow(Op x, Op init, const ComputationBuilder& reducer, Window window);
  // select-and-scatter: each window of `operand` picks one element with `select` (pred(a, b):
  // keep a) and `scatter`-combines its `source` element there, onto `init` elsewhere.
  Op SelectAndScatter(Op operand, const ComputationBuilder& select, Window window, Op source,
                      Op init, const ComputationBuilder& scatter);
  Op Sort(std::vector<Op> operands, const ComputationBuilder& comparator, int64_t dimension,
          bool is_stable = false);

  // Control flow.
  Op Call(const ComputationBuilder& fn, std::vector<Op> args);
  Op While(const ComputationBuilder& condition, const ComputationBuilder& body, Op init);
  Op Conditional(Op pred, Op true_arg, const ComputationBuilder& true_fn, Op false_arg,
                 const ComputationBuilder& false_fn);
  Op Conditional(Op branch_index, std::vector<Op> args,
                 std::vector<const ComputationBuilder*> branches);

  // Collectives. The group size is that of replica_groups, else the module's num_partitions.
  Op AllReduce(Op x, const ComputationBuilder& reducer, CollectiveOptions options = {});
  Op AllGather(Op x, int64_t dimension, CollectiveOptions options = {});
  Op ReduceScatter(Op x, const ComputationBuilder& reducer, int64_t dimension,
                   CollectiveOptions options = {});
  Op AllToAll(Op x, int64_t dimension, CollectiveOptions options = {});
  Op CollectivePermute(Op x, std::vector<std::pair<int64_t, int64_t>> source_target_pairs,
                       std::optional<int64_t> channel_id = {});
  Op PartitionId();
  Op ReplicaId();

  // custom-call with the given result shape; `backend_config` is kept verbatim.
  Op CustomCall(std::string target, std::vector<Op> operands, Shape shape,
                std::string backend_config = "");
  // Any op: the instruction is made from the parts and its shape checked by inference
  // (`shape` is used where the op's text carries it, as for reshape or custom-call).
  Op Raw(Opcode opcode, std::vector<Op> operands, Shape shape, Attributes attrs = {},
         std::vector<CalledComputation> calls = {});

 private:
  friend class ModuleBuilder;
  struct State;
  ComputationBuilder(std::string name, State* module_state);
  // Creates, infers and adds one instruction; records the error naming `method` on failure.
  Op Emit(std::string_view method, Opcode opcode, std::vector<Op> operands, Shape shape,
          Attributes attrs = {}, std::vector<CalledComputation> calls = {});
  // Records `error` unless an earlier one exists, drops the next-op modifiers, returns Op().
  Op Fail(Status error);
  bool failed() const;
  StatusOr<int64_t> GroupSize(const CollectiveOptions& options, std::string_view method);

  std::unique_ptr<Computation> computation_;
  Computation* raw_ = nullptr;
  State* state_;
  Instruction* last_ = nullptr;
  Instruction* root_ = nullptr;
  std::optional<std::string> next_name_;
  std::optional<HloSharding> next_sharding_;
};

class ModuleBuilder {
 public:
  explicit ModuleBuilder(std::string name);
  ~ModuleBuilder();
  // A called computation (reducer, body, ...), or the entry. The builders live as long as this.
  ComputationBuilder& AddComputation(std::string name);
  ComputationBuilder& AddEntry(std::string name);
  // Header attributes; num_partitions also sizes collectives without replica groups.
  ModuleConfig& mutable_config();
  // false: leave layouts off inferred shapes (XLA prints {1,0}-style layouts; default true).
  void set_default_layouts(bool on);
  const Status& status() const;
  // Moves the computations into a module (callees first, entry last) and verifies it. Returns the
  // first builder error instead when there was one. Call once.
  StatusOr<std::unique_ptr<Module>> Build();

 private:
  std::unique_ptr<ComputationBuilder::State> state_;
};

}  // namespace xs

#endif  // XSHARD_IR_BUILDER_H_
