// ModuleBuilder / ComputationBuilder core: the shared module state, Emit (create, infer, check,
// add), naming, error recording and Build(). The op methods are in builder_ops.cc.
#include "xshard/ir/builder.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "xshard/ir/shape_inference.h"
#include "xshard/ir/verifier.h"

namespace xs {

// State shared by a ModuleBuilder and its ComputationBuilders.
struct ComputationBuilder::State {
  std::string module_name;
  ModuleConfig config;
  bool default_layouts = true;
  int64_t next_id = 1;
  Status first_error;
  bool built = false;
  std::vector<std::unique_ptr<ComputationBuilder>> builders;
  ComputationBuilder* entry = nullptr;

  void Record(Status s) {
    if (first_error.ok()) first_error = std::move(s);
  }
};

namespace {

// XLA's default layout: minor_to_major = {rank-1, ..., 0} on every array of rank >= 1.
Shape WithDefaultLayout(const Shape& shape) {
  if (shape.IsTuple()) {
    std::vector<Shape> elems;
    for (const Shape& s : shape.tuple_shapes()) elems.push_back(WithDefaultLayout(s));
    return Shape::Tuple(std::move(elems));
  }
  if (!shape.IsArray() || shape.rank() == 0 || shape.layout()) return shape;
  Shape out = shape;
  Layout layout;
  for (int i = shape.rank() - 1; i >= 0; --i) layout.minor_to_major.push_back(i);
  out.set_layout(std::move(layout));
  return out;
}

}  // namespace

const Shape& Op::shape() const {
  static const Shape kInvalid;
  return inst_ != nullptr ? inst_->shape() : kInvalid;
}

ComputationBuilder::ComputationBuilder(std::string name, State* module_state)
    : computation_(std::make_unique<Computation>(std::move(name))),
      raw_(computation_.get()),
      state_(module_state) {}

ComputationBuilder::~ComputationBuilder() = default;

const std::string& ComputationBuilder::name() const { return raw_->name(); }
const Status& ComputationBuilder::status() const { return state_->first_error; }

ComputationBuilder& ComputationBuilder::WithName(std::string name) {
  next_name_ = std::move(name);
  return *this;
}

ComputationBuilder& ComputationBuilder::WithSharding(HloSharding sharding) {
  next_sharding_ = std::move(sharding);
  return *this;
}

Op ComputationBuilder::SetSharding(Op op, HloSharding sharding) {
  if (!op.valid()) return op;
  op.inst_->set_sharding(std::move(sharding));
  Status st = VerifyInstruction(*op.inst_, state_->config.num_partitions);
  if (!st.ok()) {
    op.inst_->set_sharding(std::nullopt);
    state_->Record(Annotate(st, "SetSharding: "));
    return Op();
  }
  return op;
}

void ComputationBuilder::SetRoot(Op op) {
  if (!op.valid()) return;
  if (op.inst_->parent() != raw_) {
    state_->Record(InvalidArgument("SetRoot: '", op.inst_->name(), "' is not in computation '",
                                   name(), "'"));
    return;
  }
  root_ = op.inst_;
  raw_->set_root(root_);
}

Op ComputationBuilder::Emit(std::string_view method, Opcode opcode, std::vector<Op> operands,
                            Shape shape, Attributes attrs, std::vector<CalledComputation> calls) {
  std::optional<std::string> name = std::move(next_name_);
  std::optional<HloSharding> sharding = std::move(next_sharding_);
  next_name_.reset();
  next_sharding_.reset();
  if (!state_->first_error.ok()) return Op();
  if (state_->built) {
    state_->Record(FailedPrecondition(method, ": the module was already built"));
    return Op();
  }
  std::vector<Instruction*> ops;
  for (size_t i = 0; i < operands.size(); ++i) {
    Instruction* op = operands[i].inst_;
    if (op == nullptr) {
      state_->Record(InvalidArgument(method, ": operand ", i, " is an invalid Op"));
      return Op();
    }
    if (op->parent() != raw_) {
      state_->Record(InvalidArgument(method, ": operand ", i, " '", op->name(),
                                     "' belongs to another computation than '", this->name(), "'"));
      return Op();
    }
    ops.push_back(op);
  }
  for (const CalledComputation& c : calls) {
    if (c.computation == raw_ || c.computation == nullptr) {
      state_->Record(InvalidArgument(method, ": computation '", this->name(),
                                     "' cannot call itself"));
      return Op();
    }
  }
  const int64_t id = state_->next_id++;
  std::string inst_name = name ? *name : StrCat(OpcodeName(opcode), ".", id);
  const Shape given = shape;
  auto created = Instruction::Create(opcode, std::move(shape), std::move(ops), inst_name);
  created->mutable_attrs() = std::move(attrs);
  created->set_calls(std::move(calls));
  created->set_sharding(std::move(sharding));
  Instruction* inst = raw_->AddInstruction(std::move(created));
  StatusOr<Shape> inferred = InferInstructionShape(*inst);
  Status st = inferred.status();
  if (inferred.ok()) {
    Shape result = given.layout() && given.Compatible(*inferred) ? given : *inferred;
    inst->set_shape(state_->default_layouts ? WithDefaultLayout(result) : result);
    st = VerifyInstruction(*inst, state_->config.num_partitions);
  } else {
    st = Annotate(st, StrCat("instruction '", inst->name(), "' (", OpcodeName(opcode),
                             ") in computation '", this->name(), "': "))
             .AttributedTo(inst->name(), std::string(OpcodeName(opcode)));
  }
  if (!st.ok()) {
    raw_->set_root(root_ != nullptr ? root_ : last_);
    Status removed = raw_->RemoveInstruction(inst);
    XS_CHECK(removed.ok(), "builder could not undo '", inst_name, "': ", removed.ToString());
    state_->Record(Annotate(st, StrCat(method, ": ")));
    return Op();
  }
  last_ = inst;
  raw_->set_root(root_ != nullptr ? root_ : inst);
  return Op(inst);
}

Op ComputationBuilder::Fail(Status error) {
  next_name_.reset();
  next_sharding_.reset();
  state_->Record(std::move(error));
  return Op();
}

bool ComputationBuilder::failed() const { return !state_->first_error.ok(); }

StatusOr<int64_t> ComputationBuilder::GroupSize(const CollectiveOptions& options,
                                                std::string_view method) {
  if (!options.replica_groups.empty()) {
    return static_cast<int64_t>(options.replica_groups[0].size());
  }
  if (state_->config.num_partitions > 1) return state_->config.num_partitions;
  if (state_->config.replica_count > 1) return state_->config.replica_count;
  return InvalidArgument("give replica_groups or set the module's num_partitions; without ",
                         "them the group size of ", method, " is unknown");
}

ModuleBuilder::ModuleBuilder(std::string name)
    : state_(std::make_unique<ComputationBuilder::State>()) {
  state_->module_name = std::move(name);
}

ModuleBuilder::~ModuleBuilder() = default;

ComputationBuilder& ModuleBuilder::AddComputation(std::string name) {
  state_->builders.push_back(
      std::unique_ptr<ComputationBuilder>(new ComputationBuilder(std::move(name), state_.get())));
  return *state_->builders.back();
}

ComputationBuilder& ModuleBuilder::AddEntry(std::string name) {
  ComputationBuilder& b = AddComputation(std::move(name));
  if (state_->entry != nullptr) {
    state_->Record(InvalidArgument("AddEntry('", b.name(), "'): the entry is already '",
                                   state_->entry->name(), "'"));
  } else {
    state_->entry = &b;
  }
  return b;
}

ModuleConfig& ModuleBuilder::mutable_config() { return state_->config; }
void ModuleBuilder::set_default_layouts(bool on) { state_->default_layouts = on; }
const Status& ModuleBuilder::status() const { return state_->first_error; }

StatusOr<std::unique_ptr<Module>> ModuleBuilder::Build() {
  if (state_->built) return FailedPrecondition("Build: module '", state_->module_name,
                                               "' was already built");
  state_->built = true;
  if (!state_->first_error.ok()) return state_->first_error;
  if (state_->entry == nullptr) {
    return InvalidArgument("Build: module '", state_->module_name, "' has no entry; call ",
                           "AddEntry(name)");
  }
  std::unordered_map<const Computation*, ComputationBuilder*> owner;
  for (auto& b : state_->builders) owner[b->raw_] = b.get();
  std::vector<ComputationBuilder*> order;
  std::unordered_set<ComputationBuilder*> seen;
  std::function<void(ComputationBuilder*)> visit = [&](ComputationBuilder* b) {
    if (!seen.insert(b).second) return;
    for (Instruction* inst : b->raw_->instructions()) {
      for (Computation* c : inst->called_computations()) {
        if (owner.contains(c)) visit(owner[c]);
      }
    }
    order.push_back(b);
  };
  for (auto& b : state_->builders) {
    if (b.get() != state_->entry) visit(b.get());
  }
  visit(state_->entry);
  auto module = std::make_unique<Module>(state_->module_name);
  module->mutable_config() = state_->config;
  for (ComputationBuilder* b : order) {
    if (b->raw_->instruction_count() == 0) {
      return InvalidArgument("Build: computation '", b->name(), "' has no instructions");
    }
    module->AddComputation(std::move(b->computation_), b == state_->entry);
  }
  XS_RETURN_IF_ERROR(Verify(*module));
  return module;
}

}  // namespace xs
