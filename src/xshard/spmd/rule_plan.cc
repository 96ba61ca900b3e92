// The rule-driven handler's plans: describing an op, its views on the tile mesh, the shardings
// and cost of a factor assignment, and the local form of the op.
#include "xshard/spmd/rule_plan.h"

#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/propagation/propagation.h"
#include "xshard/rules/rule_registry.h"
#include "xshard/spmd/window_halo.h"

namespace xs::spmd::internal {
namespace {

HloSharding TensorSharding(const FactorAxes& fa, const TensorFactors& t, const Op& op,
                           const TileMesh& mesh) {
  if (!op.on_mesh) return HloSharding::Replicate();
  AxesSharding a = t.participates ? ProjectFromFactors(fa, t, op.rule, mesh) : AxesSharding{};
  a.dims.resize(t.dims.size());
  a.manual = op.manual;
  return mesh.ToHloSharding(a);
}

// True when the op, cloned onto the plan's local shapes, passes shape inference.
bool LocalShapesWork(const Op& op, const Plan& plan, int64_t n) {
  std::vector<std::unique_ptr<Instruction>> params;
  std::vector<Instruction*> raw;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    StatusOr<Shape> s = LocalShape(op.operands[i].global_shape(), plan.operands[i], n);
    if (!s.ok()) return false;
    params.push_back(Instruction::Create(Opcode::kParameter, *s));
    raw.push_back(params.back().get());
  }
  std::vector<Shape> results = LocalResultShapes(op, plan, n);
  std::unique_ptr<Instruction> clone = op.inst->CloneWithNewOperands(raw);
  clone->set_shape(op.inst->shape().IsTuple() ? Shape::Tuple(results) : results[0]);
  return Localize(*clone, *op.inst).ok() && Emitter::CheckShape(*clone).ok();
}

}  // namespace

Status Localize(Instruction& local, const Instruction& global) {
  Attributes& attrs = local.mutable_attrs();
  const Shape& in = global.operand(0)->shape();
  const Shape& local_in = local.operand(0)->shape();
  switch (global.opcode()) {
    case Opcode::kSlice:
      for (int d = 0; d < in.rank(); ++d) {
        if (local_in.dim(d) == in.dim(d)) continue;
        SliceDim& s = (*attrs.slice)[d];
        if (s.start != 0 || s.limit != in.dim(d) || s.stride != 1) return Unimplemented("sliced dim is sharded");
        s.limit = local_in.dim(d);
      }
      break;
    case Opcode::kDynamicSlice:
      attrs.dynamic_slice_sizes = local.shape().dims();
      break;
    case Opcode::kGather:
      for (int d = 0; d < in.rank(); ++d) {
        // Explicit batching dims take one element per index: sharded like the indices, they stay.
        const std::vector<int64_t>& batching = attrs.gather->operand_batching_dims;
        if (local_in.dim(d) == in.dim(d) || std::find(batching.begin(), batching.end(), d) != batching.end()) continue;
        int64_t& size = (*attrs.slice_sizes)[d];
        if (size != in.dim(d)) return Unimplemented("gathered dim is sharded");
        size = local_in.dim(d);
      }
      break;
    case Opcode::kReduceWindow:
      LocalizeWindows(local, global);
      break;
    case Opcode::kConvolution:
      LocalizeWindows(local, global);
      if (attrs.feature_group_count > 1) {
        const int64_t ki = local.operand(1)->shape().dim(static_cast<int>(attrs.conv_dims->kernel_input_feature));
        const int64_t f = local_in.dim(static_cast<int>(attrs.conv_dims->input_feature));
        if (ki == 0 || f % ki != 0) return Unimplemented("feature groups do not line up");
        attrs.feature_group_count = f / ki;
      }
      if (attrs.batch_group_count > 1) {
        // The groups a device holds: its input batch over its result batch.
        const int64_t b = local_in.dim(static_cast<int>(attrs.conv_dims->input_batch));
        const int64_t ob = local.shape().dim(static_cast<int>(attrs.conv_dims->output_batch));
        if (ob == 0 || b % ob != 0) return Unimplemented("batch groups do not line up");
        attrs.batch_group_count = b / ob;
      }
      break;
    case Opcode::kCustomCall:
      // A batch-partitioned call's layout constraints name its operands' local shapes.
      if (attrs.operand_layout_constraints && attrs.operand_layout_constraints->size() == local.operands().size()) {
        for (size_t i = 0; i < local.operands().size(); ++i) {
          Shape& c = (*attrs.operand_layout_constraints)[i];
          if (!c.IsArray() || !local.operand(static_cast<int>(i))->shape().IsArray()) continue;
          std::optional<Layout> layout = c.layout();
          c = c.WithDims(local.operand(static_cast<int>(i))->shape().dims());
          c.set_layout(std::move(layout));
        }
      }
      break;
    default:
      break;
  }
  return OkStatus();
}

std::vector<Shape> LocalResultShapes(const Op& op, const Plan& plan, int64_t n) {
  std::vector<Shape> out;
  for (size_t l = 0; l < op.result_shapes.size(); ++l) {
    out.push_back(*LocalShape(op.result_shapes[l], plan.results[l], n));
  }
  return out;
}

Plan PlanFromFactors(FactorAxes fa, const Op& op, const TileMesh& mesh) {
  Plan plan;
  plan.factors = std::move(fa);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    plan.operands.push_back(TensorSharding(plan.factors, op.rule.operands[i], op, mesh));
  }
  for (const TensorFactors& t : op.rule.results) plan.results.push_back(TensorSharding(plan.factors, t, op, mesh));
  for (int f = 0; f < op.rule.num_factors(); ++f) {
    if (op.rule.factors[f].kind == FactorKind::kReduction) {
      plan.partial.insert(plan.partial.end(), plan.factors[f].begin(), plan.factors[f].end());
    }
  }
  return plan;
}

std::optional<Plan> PlanLikeResult(const Op& op) {
  if (!IsElementwise(op.inst->opcode()) || op.result_shapes.size() != 1) return std::nullopt;
  Plan plan;
  plan.factors.assign(op.rule.num_factors(), {});
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const bool same = op.operands[i].global_shape().dims() == op.result_shapes[0].dims();
    plan.operands.push_back(same ? op.result_targets[0] : HloSharding::Replicate());
  }
  plan.results = op.result_targets;
  plan.like_result = true;
  return plan;
}

double LocalFlops(const Op& op, const Plan& plan, const TileMesh& mesh, int64_t n) {
  const Opcode opcode = op.inst->opcode();
  const double per_point = opcode == Opcode::kDot || opcode == Opcode::kConvolution ? 2 : 1;
  if (plan.like_result) {
    double elements = 0;
    for (const Shape& s : LocalResultShapes(op, plan, n)) elements += static_cast<double>(s.num_elements());
    return per_point * elements;
  }
  std::vector<bool> used(op.rule.num_factors(), false);
  auto mark = [&](const TensorFactors& t) {
    if (!t.participates) return;
    for (const std::vector<int>& dim : t.dims) {
      for (int f : dim) used[f] = true;
    }
  };
  for (const TensorFactors& t : op.rule.operands) mark(t);
  for (const TensorFactors& t : op.rule.results) mark(t);
  double points = 1;
  for (int f = 0; f < op.rule.num_factors(); ++f) {
    if (!used[f]) continue;
    const int64_t size = op.rule.factors[f].size;
    const int64_t tiles = plan.factors[f].empty() || !op.on_mesh ? 1 : AxesSize(mesh, plan.factors[f]);
    points *= static_cast<double>((size + tiles - 1) / tiles);
  }
  return per_point * points;
}

void Cost(Plan& plan, const Op& op, ModuleState& state) {
  plan.cost = kImpossibleCost;
  if (!LocalShapesWork(op, plan, state.num_partitions)) return;
  plan.bytes = 0;
  plan.collectives = 0;
  plan.latency_us = 0;
  // ReshardCost: bytes plus one per collective.
  auto add = [&](const Shape& global, const HloSharding& from, const std::optional<PartialReduction>& partial,
                 const HloSharding& to) {
    int64_t bytes = 0;
    double latency_us = 0;
    const int64_t cost = ReshardCost(state, global, from, partial, to, &bytes, &latency_us);
    if (cost >= kImpossibleCost) return false;
    plan.bytes += bytes;
    plan.collectives += cost - bytes;
    plan.latency_us += latency_us;
    return true;
  };
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const PartitionedValue& v = op.operands[i];
    // A reshard this computation already emitted for another user is reused, not moved again.
    if (!v.partial() &&
        v.emitter().FindReshard(v.hlo(), v.global_shape().dims(), v.sharding(), nullptr, plan.operands[i]) != nullptr)
      continue;
    if (v.has_broadcast_source() && !v.partial()) {
      // A broadcast result may be resharded through its smaller operand (PartitionedValue::Reshard).
      int64_t bytes = 0;
      double latency_us = 0;
      const int64_t cost = v.ReshardCostTo(plan.operands[i], &bytes, &latency_us);
      if (cost >= kImpossibleCost) return;
      plan.bytes += bytes;
      plan.collectives += cost - bytes;
      plan.latency_us += latency_us;
      continue;
    }
    if (!add(v.global_shape(), v.sharding(), std::nullopt, plan.operands[i])) return;
  }
  AddHaloCost(op, plan, state, &plan.bytes, &plan.collectives, &plan.latency_us);
  std::optional<PartialReduction> partial;
  if (!plan.partial.empty()) partial = PartialReduction{plan.partial, nullptr};
  for (size_t l = 0; l < op.result_shapes.size(); ++l) {
    if (!add(op.result_shapes[l], plan.results[l], partial, op.result_targets[l])) return;
  }
  plan.flops = LocalFlops(op, plan, state.mesh, state.num_partitions);
  const double seconds = state.machine.Estimate(static_cast<double>(plan.bytes), plan.latency_us, plan.flops);
  plan.cost = static_cast<int64_t>(std::min(seconds * 1e12, static_cast<double>(kImpossibleCost - 1)));
}

// Propagation's record of `inst` (nullptr: none).
static const PropagatedValue* PropagatedOf(const Instruction& inst, const Context& ctx) {
  const PropagationResult* p = ctx.state().propagated;
  return p == nullptr ? nullptr : p->ValueOf(inst);
}

StatusOr<Op> Describe(const Instruction& inst, Context& ctx) {
  Op op{&inst, {}, {}, {}, {}, {}, {}, 0, true, false};
  for (const Instruction* operand : inst.operands()) {
    if (!operand->shape().IsArray()) return Unimplemented("non-array operand");
    op.operands.push_back(ctx.Get(operand));
  }
  const PropagatedValue* propagated = PropagatedOf(inst, ctx);
  // The rule is recomputed rather than copied out of propagation's record: copying 10,000 rules
  // out of a cold map measured slower than building them again (bench/partition_bench).
  XS_ASSIGN_OR_RETURN(op.rule, GetRule(inst));
  if (propagated != nullptr) {
    op.propagated_result_axes = &propagated->axes;
    op.propagated_mesh = &ctx.state().mesh;
  }
  if (op.rule.barrier) return Unimplemented("the op's rule relates no dims");
  const HloSharding target = ctx.TargetOf(inst);
  if (inst.shape().IsTuple()) {
    for (int l = 0; l < inst.shape().tuple_size(); ++l) {
      if (!inst.shape().tuple_shape(l).IsArray()) return Unimplemented("nested tuple result");
      op.result_shapes.push_back(inst.shape().tuple_shape(l));
      op.result_targets.push_back(target.IsTuple() ? target.tuple_elements()[l] : target);
    }
  } else {
    op.result_shapes.push_back(inst.shape());
    op.result_targets.push_back(target);
  }
  if (op.rule.results.size() != op.result_shapes.size() || op.rule.operands.size() != op.operands.size()) {
    return Unimplemented("rule leaves do not match the op");
  }
  return op;
}

void ComputeViews(Op& op, const TileMesh& mesh) {
  op.on_mesh = true;
  op.result_axes.clear();
  op.operand_axes.clear();
  std::optional<uint64_t> manual;
  op.has_manual = false;
  auto view = [&](const HloSharding& s, int rank) {
    op.has_manual = op.has_manual || s.IsManual() || !s.subgroup_types().empty();
    std::optional<AxesSharding> a =
        s.IsMaximal() ? std::optional<AxesSharding>(AxesSharding{std::vector<std::vector<int>>(rank), 0})
                      : mesh.ToAxes(s, rank);
    if (!a) {
      op.on_mesh = false;
    } else if (!manual) {
      manual = a->manual;
    } else if (*manual != a->manual) {
      op.on_mesh = false;
    }
    return a;
  };
  // Propagation's views of the results (the targets are the instruction's propagated sharding).
  const bool propagated = &mesh == op.propagated_mesh && op.propagated_result_axes != nullptr &&
                          op.propagated_result_axes->size() == op.result_shapes.size();
  for (size_t l = 0; l < op.result_shapes.size(); ++l) {
    const HloSharding& s = op.result_targets[l];
    // A leaf propagation kept opaque may still be on the mesh in its canonical form.
    if (propagated && !s.IsMaximal() && (*op.propagated_result_axes)[l].has_value()) {
      op.has_manual = op.has_manual || s.IsManual() || !s.subgroup_types().empty();
      const std::optional<AxesSharding>& a = (*op.propagated_result_axes)[l];
      if (!a) {
        op.on_mesh = false;
      } else if (!manual) {
        manual = a->manual;
      } else if (*manual != a->manual) {
        op.on_mesh = false;
      }
      op.result_axes.push_back(a);
      continue;
    }
    op.result_axes.push_back(view(s, op.result_shapes[l].rank()));
  }
  for (size_t i = 0; i < op.operands.size(); ++i) {
    op.operand_axes.push_back(Participates(op, static_cast<int>(i))
                                  ? view(op.operands[i].sharding(), op.operands[i].global_shape().rank())
                                  : std::nullopt);
  }
  op.manual = op.on_mesh ? manual.value_or(0) : 0;
}

std::optional<TileMesh> LocalMesh(const Op& op, int64_t n) {
  std::vector<HloSharding> shardings = op.result_targets;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    if (Participates(op, static_cast<int>(i))) shardings.push_back(op.operands[i].sharding());
  }
  TileMesh::Builder builder(n, shardings);
  for (const HloSharding& s : shardings) {
    if (!builder.Add(s)) return std::nullopt;
  }
  return builder.Build();
}


}  // namespace xs::spmd::internal
