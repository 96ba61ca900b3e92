// Windowed einsum: which dots qualify (a factor plan read off the operand and result shardings,
// as in handlers_rule.cc) and the while loop that replaces their all-gather / reduce-scatter.
// The loop state is (step counter, the piece that travels, the other loop values); a device's
// ring position comes from a partition-id table, so the program does not grow with the ring.
#include "xshard/spmd/windowed_einsum.h"

#include <algorithm>
#include <functional>

#include "xshard/base/strings.h"
#include "xshard/ir/shape_inference.h"
#include "xshard/spmd/rule_plan.h"

namespace xs::spmd::internal {
namespace {

enum class WindowKind { kAllGather, kReduceScatter };

// An eligible dot: what the ring moves or slices and the shardings the loop works on.
struct WindowPlan {
  WindowKind kind = WindowKind::kAllGather;
  int moving = 0;      // all-gather: the operand passed around; reduce-scatter: the sliced one
  int moving_dim = 0;  // that operand's dim the ring splits
  int out_dim = 0;     // the result dim the steps fill (all-gather) / the ring splits (r-s)
  Axes ring;           // the ring's mesh axes, major to minor: position = index along them
  std::vector<HloSharding> operands;
  HloSharding result;  // the loop result's sharding
  Axes partial;        // axes of the other sharded contracting dims (still to be reduced)
};

int DimOf(const TensorFactors& t, int f) {
  for (size_t d = 0; d < t.dims.size(); ++d) {
    if (std::find(t.dims[d].begin(), t.dims[d].end(), f) != t.dims[d].end()) return static_cast<int>(d);
  }
  return -1;
}

bool SameSet(Axes a, Axes b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

bool Overlap(const Axes& a, const Axes& b) {
  return std::any_of(a.begin(), a.end(), [&](int x) { return std::find(b.begin(), b.end(), x) != b.end(); });
}

// True when no mesh axis is on two factors.
bool Disjoint(const FactorAxes& fa) {
  uint64_t used = 0;
  for (const Axes& axes : fa) {
    for (int a : axes) {
      const uint64_t bit = uint64_t{1} << a;
      if ((used & bit) != 0) return false;
      used |= bit;
    }
  }
  return true;
}

bool IsKind(const OpShardingRule& rule, int f, FactorKind kind) { return rule.factors[f].kind == kind; }

// Fills the plan's shardings (operands from `ops`, the result from `res`) and the partial axes
// (reduction factors other than `ring_factor`); false when some value would need padding.
bool Finalize(WindowPlan& plan, const FactorAxes& ops, const FactorAxes& res, int ring_factor,
              const Op& op, const TileMesh& mesh, int64_t n) {
  auto sharding = [&](const FactorAxes& fa, const TensorFactors& t) {
    AxesSharding a = ProjectFromFactors(fa, t, op.rule, mesh);
    a.dims.resize(t.dims.size());
    return mesh.ToHloSharding(a);
  };
  auto even = [&](const Shape& shape, const HloSharding& s) {
    StatusOr<ShardLayout> layout = ShardLayout::Create(s, shape.dims(), n);
    return layout.ok() && !layout->HasPadding();
  };
  for (int i = 0; i < 2; ++i) {
    plan.operands.push_back(sharding(ops, op.rule.operands[i]));
    if (!even(op.operands[i].global_shape(), plan.operands[i])) return false;
  }
  plan.result = sharding(res, op.rule.results[0]);
  if (!even(op.result_shapes[0], plan.result)) return false;
  for (int f = 0; f < op.rule.num_factors(); ++f) {
    if (f != ring_factor && IsKind(op.rule, f, FactorKind::kReduction)) {
      plan.partial.insert(plan.partial.end(), ops[f].begin(), ops[f].end());
    }
  }
  return true;
}

// Operand w would be all-gathered along one free dim that the result does not split.
std::optional<WindowPlan> AllGatherPlan(const Op& op, int w, const TileMesh& mesh, int64_t n) {
  const OpShardingRule& rule = op.rule;
  const TensorFactors& wt = rule.operands[w];
  const TensorFactors& st = rule.operands[1 - w];
  bool lossless = true;
  FactorAxes fa = ProjectToFactors(*op.result_axes[0], rule.results[0], rule, mesh, &lossless);
  const FactorAxes from_w = ProjectToFactors(*op.operand_axes[w], wt, rule, mesh, &lossless);
  if (!lossless) return std::nullopt;
  int fw = -1;
  for (int f = 0; f < rule.num_factors(); ++f) {
    const bool w_free = HasFactor(wt, f) && !HasFactor(st, f) && IsKind(rule, f, FactorKind::kPassThrough);
    if (!w_free || from_w[f].empty() || !fa[f].empty()) continue;
    if (fw >= 0) return std::nullopt;  // two dims would be gathered
    fw = f;
  }
  if (fw < 0) return std::nullopt;
  const Axes ring = from_w[fw];
  for (int f = 0; f < rule.num_factors(); ++f) {
    if (IsKind(rule, f, FactorKind::kReduction)) fa[f] = from_w[f];
    if (HasFactor(wt, f) && Overlap(fa[f], ring)) return std::nullopt;
  }
  if (!Disjoint(fa)) return std::nullopt;
  FactorAxes ops = fa;
  ops[fw] = ring;
  WindowPlan plan;
  plan.kind = WindowKind::kAllGather;
  plan.moving = w;
  plan.moving_dim = DimOf(wt, fw);
  plan.out_dim = DimOf(rule.results[0], fw);
  plan.ring = ring;
  if (!Finalize(plan, ops, fa, -1, op, mesh, n)) return std::nullopt;
  return plan;
}

// Both operands split a contracting dim by the axes that split a free dim of the result.
std::optional<WindowPlan> ReduceScatterPlan(const Op& op, const TileMesh& mesh, int64_t n) {
  const OpShardingRule& rule = op.rule;
  bool lossless = true;
  const FactorAxes fa = ProjectToFactors(*op.result_axes[0], rule.results[0], rule, mesh, &lossless);
  const FactorAxes fl = ProjectToFactors(*op.operand_axes[0], rule.operands[0], rule, mesh, &lossless);
  const FactorAxes fr = ProjectToFactors(*op.operand_axes[1], rule.operands[1], rule, mesh, &lossless);
  if (!lossless) return std::nullopt;
  for (int fk = 0; fk < rule.num_factors(); ++fk) {
    if (!IsKind(rule, fk, FactorKind::kReduction) || fl[fk].empty() || fl[fk] != fr[fk]) continue;
    for (int fo = 0; fo < rule.num_factors(); ++fo) {
      if (!IsKind(rule, fo, FactorKind::kPassThrough) || fa[fo].empty() || !SameSet(fa[fo], fl[fk])) continue;
      const int x = HasFactor(rule.operands[0], fo) ? 0 : 1;
      if (HasFactor(rule.operands[1 - x], fo)) continue;  // a batch dim
      FactorAxes ops = fa;
      ops[fo].clear();
      for (int f = 0; f < rule.num_factors(); ++f) {
        if (IsKind(rule, f, FactorKind::kReduction)) ops[f] = fl[f];
      }
      if (!Disjoint(ops)) return std::nullopt;
      FactorAxes res = ops;
      res[fo] = fa[fo];
      WindowPlan plan;
      plan.kind = WindowKind::kReduceScatter;
      plan.moving = x;
      plan.moving_dim = DimOf(rule.operands[x], fo);
      plan.out_dim = DimOf(rule.results[0], fo);
      plan.ring = fa[fo];
      if (!Finalize(plan, ops, res, fk, op, mesh, n)) return std::nullopt;
      return plan;
    }
  }
  return std::nullopt;
}

// The dot on local operands (its shape from shape inference).
StatusOr<Instruction*> LocalDot(Emitter& e, const Instruction& inst, const std::vector<Instruction*>& operands) {
  std::unique_ptr<Instruction> clone = inst.CloneWithNewOperands(operands);
  clone->set_sharding(std::nullopt);
  XS_ASSIGN_OR_RETURN(Shape shape, InferInstructionShape(*clone));
  clone->set_shape(inst.shape().WithDims(shape.dims()));
  return e.AddInstruction(std::move(clone));
}

// The ring of one loop: each device's position and the "receive from the next position" pairs.
struct Ring {
  int64_t size = 1;
  std::vector<int64_t> positions;  // per partition
  std::vector<std::pair<int64_t, int64_t>> pairs;

  // ((position + k + shift) mod size) * block for the loop counter k, an s32 scalar in e's
  // computation.
  Instruction* Offset(Emitter& e, Instruction* k, int64_t shift, int64_t block) const {
    std::vector<int64_t> shifted;
    for (int64_t p : positions) shifted.push_back(p + shift);
    Instruction* b = e.Binary(Opcode::kAdd, e.PerPartition(shifted), k);
    b = e.Binary(Opcode::kRemainder, b, e.Scalar(DType::kS32, static_cast<double>(size)));
    return e.Binary(Opcode::kMultiply, b, e.Scalar(DType::kS32, static_cast<double>(block)));
  }
  // The same offset for a known step k: one per-partition table.
  Instruction* OffsetAt(Emitter& e, int64_t k, int64_t shift, int64_t block) const {
    std::vector<int64_t> offsets;
    for (int64_t p : positions) offsets.push_back((p + k + shift) % size * block);
    return e.PerPartition(offsets);
  }
};

Ring MakeRing(const TileMesh& mesh, const Axes& axes) {
  Ring ring;
  ring.size = AxesSize(mesh, axes);
  for (int64_t p = 0; p < mesh.num_devices(); ++p) ring.positions.push_back(IndexAlongAxes(mesh, p, axes));
  const ReplicaGroups groups = GroupsOverAxes(mesh, axes);
  for (const std::vector<int64_t>& g : groups.Groups()) {
    const int64_t n = static_cast<int64_t>(g.size());
    for (int64_t r = 0; r < n; ++r) ring.pairs.emplace_back(g[(r + 1) % n], g[r]);
  }
  return ring;
}

// Start indices: `offset` along `dim`, zero elsewhere.
std::vector<Instruction*> Starts(Emitter& e, int rank, int dim, Instruction* offset) {
  std::vector<Instruction*> starts(rank, e.Scalar(DType::kS32, 0));
  starts[dim] = offset;
  return starts;
}

using LoopBody = std::function<StatusOr<std::vector<Instruction*>>(Emitter&, Instruction* k,
                                                                    const std::vector<Instruction*>&)>;

Instruction* LoopParameter(Emitter& e, const Shape& shape) {
  Attributes attrs;
  attrs.parameter_number = 0;
  return e.Add(Opcode::kParameter, shape, {}, std::move(attrs), {}, "state");
}

// while over (k, values...) for k = first .. limit-1; `body` maps k and the values to the next
// values (same shapes). Returns the while; value i is its tuple element i + 1.
StatusOr<Instruction*> EmitWhile(Emitter& em, const std::string& name, int64_t first, int64_t limit,
                                 std::vector<Instruction*> values, const LoopBody& body) {
  ModuleState& state = em.state();
  values.insert(values.begin(), em.Scalar(DType::kS32, static_cast<double>(first)));
  Instruction* init = em.Tuple(values);
  const Shape shape = init->shape();
  auto body_comp = std::make_unique<Computation>(StrCat(name, "_body"));
  {
    Emitter be(&state, body_comp.get());
    Instruction* p = LoopParameter(be, shape);
    Instruction* k = be.GetTupleElement(p, 0);
    std::vector<Instruction*> in;
    for (size_t i = 1; i < values.size(); ++i) in.push_back(be.GetTupleElement(p, static_cast<int64_t>(i)));
    XS_ASSIGN_OR_RETURN(std::vector<Instruction*> out, body(be, k, in));
    out.insert(out.begin(), be.Binary(Opcode::kAdd, k, be.Scalar(DType::kS32, 1)));
    body_comp->set_root(be.Tuple(std::move(out)));
  }
  auto cond_comp = std::make_unique<Computation>(StrCat(name, "_cond"));
  {
    Emitter ce(&state, cond_comp.get());
    Instruction* k = ce.GetTupleElement(LoopParameter(ce, shape), 0);
    cond_comp->set_root(ce.Compare(k, ce.Scalar(DType::kS32, static_cast<double>(limit)), ComparisonDirection::kLt));
  }
  Computation* cond = state.module->AddComputation(std::move(cond_comp));
  Computation* loop_body = state.module->AddComputation(std::move(body_comp));
  Attributes attrs;
  attrs.backend_config = StrCat("{\"known_trip_count\":{\"n\":\"", limit - first, "\"}}");
  return em.Add(Opcode::kWhile, shape, {init}, std::move(attrs),
                {{CallRole::kCondition, cond}, {CallRole::kBody, loop_body}}, name);
}

// All-gather case: out[block (pos + k) mod n] = dot(stationary, held piece) for k = 0..n-1; the
// held piece moves one position back along the ring after each step.
StatusOr<Instruction*> AllGatherLoop(const Instruction& inst, Emitter& em, const WindowPlan& plan,
                                     const std::vector<Instruction*>& locals, const Ring& ring,
                                     const std::string& reason) {
  const int w = plan.moving;
  const int64_t block = locals[w]->shape().dim(plan.moving_dim);
  XS_ASSIGN_OR_RETURN(Shape out_shape, LocalShape(inst.shape(), plan.result, em.num_partitions()));
  auto step = [&](Emitter& e, Instruction* offset, Instruction* held, Instruction* stationary,
                  Instruction* out) -> StatusOr<Instruction*> {
    XS_ASSIGN_OR_RETURN(Instruction * d, LocalDot(e, inst, w == 0 ? std::vector<Instruction*>{held, stationary}
                                                                   : std::vector<Instruction*>{stationary, held}));
    std::vector<Instruction*> operands = {out, d};
    for (Instruction* s : Starts(e, out->shape().rank(), plan.out_dim, offset)) {
      operands.push_back(s);
    }
    return e.Add(Opcode::kDynamicUpdateSlice, out->shape().WithoutLayout(), std::move(operands));
  };
  Instruction* zeros = em.Broadcast(em.ZeroOf(out_shape.dtype()), out_shape.WithoutLayout(), {});
  XS_ASSIGN_OR_RETURN(
      Instruction * loop,
      EmitWhile(em, StrCat(inst.name(), ".windowed_einsum"), 0, ring.size - 1, {locals[w], zeros, locals[1 - w]},
                [&](Emitter& e, Instruction* k, const std::vector<Instruction*>& v)
                    -> StatusOr<std::vector<Instruction*>> {
                  Instruction* next = e.CollectivePermute(v[0], ring.pairs, reason);
                  XS_ASSIGN_OR_RETURN(Instruction * out, step(e, ring.Offset(e, k, 0, block), v[0], v[2], v[1]));
                  return std::vector<Instruction*>{next, out, v[2]};
                }));
  return step(em, ring.OffsetAt(em, ring.size - 1, 0, block), em.GetTupleElement(loop, 1), locals[1 - w],
              em.GetTupleElement(loop, 2));
}

// Reduce-scatter case: the accumulator a device holds at step k collects block
// (pos + k + 1) mod n; it moves one position back along the ring before each later step, so
// after step n-1 each device holds its own block, summed over the ring.
StatusOr<Instruction*> ReduceScatterLoop(const Instruction& inst, Emitter& em, const WindowPlan& plan,
                                         const std::vector<Instruction*>& locals, const Ring& ring,
                                         const std::string& reason) {
  const int x = plan.moving;
  const int64_t block = locals[x]->shape().dim(plan.moving_dim) / ring.size;
  auto partial = [&](Emitter& e, Instruction* offset, std::vector<Instruction*> operands) -> StatusOr<Instruction*> {
    std::vector<int64_t> sizes = operands[x]->shape().dims();
    sizes[plan.moving_dim] = block;
    operands[x] = e.DynamicSlice(operands[x], Starts(e, operands[x]->shape().rank(), plan.moving_dim, offset),
                                 std::move(sizes));
    return LocalDot(e, inst, operands);
  };
  XS_ASSIGN_OR_RETURN(Instruction * first, partial(em, ring.OffsetAt(em, 0, 1, block), locals));
  XS_ASSIGN_OR_RETURN(
      Instruction * loop,
      EmitWhile(em, StrCat(inst.name(), ".windowed_einsum"), 1, ring.size, {first, locals[0], locals[1]},
                [&](Emitter& e, Instruction* k, const std::vector<Instruction*>& v)
                    -> StatusOr<std::vector<Instruction*>> {
                  Instruction* received = e.CollectivePermute(v[0], ring.pairs, reason);
                  XS_ASSIGN_OR_RETURN(Instruction * part, partial(e, ring.Offset(e, k, 1, block), {v[1], v[2]}));
                  return std::vector<Instruction*>{e.Binary(Opcode::kAdd, received, part), v[1], v[2]};
                }));
  return em.GetTupleElement(loop, 1);
}

}  // namespace

StatusOr<bool> TryWindowedEinsum(const Instruction& inst, Context& ctx) {
  ModuleState& state = ctx.state();
  const int64_t threshold = state.windowed_einsum_threshold_bytes;
  if (threshold < 0 || inst.opcode() != Opcode::kDot || inst.operand_count() != 2 || !inst.shape().IsArray()) {
    return false;
  }
  StatusOr<Op> described = Describe(inst, ctx);
  if (!described.ok()) return false;
  Op op = *std::move(described);
  ComputeViews(op, state.mesh);
  if (!op.on_mesh || op.has_manual || !op.result_axes[0] || !op.operand_axes[0] || !op.operand_axes[1]) {
    return false;
  }
  const TileMesh& mesh = state.mesh;
  const int64_t n = state.num_partitions;
  std::optional<WindowPlan> plan;
  for (int w : {1, 0}) {
    if (!plan && op.operands[w].global_shape().byte_size() >= threshold) plan = AllGatherPlan(op, w, mesh, n);
  }
  const DType dtype = inst.shape().dtype();
  if (!plan && dtype != DType::kPred && inst.shape().byte_size() >= threshold) {
    plan = ReduceScatterPlan(op, mesh, n);
  }
  if (!plan) return false;

  Emitter& em = ctx.em();
  std::vector<Instruction*> locals;
  for (int i = 0; i < 2; ++i) {
    XS_ASSIGN_OR_RETURN(PartitionedValue v, op.operands[i].Reshard(plan->operands[i], StrCat("operand ", i)));
    locals.push_back(v.hlo());
  }
  const Ring ring = MakeRing(mesh, plan->ring);
  const bool gather = plan->kind == WindowKind::kAllGather;
  const std::string reason =
      StrCat("windowed einsum (", gather ? StrCat("all-gather of ", plan->moving == 0 ? "lhs" : "rhs")
                                         : std::string("reduce-scatter of the result"),
             " overlapped with ", ring.size, " dot steps)");
  XS_ASSIGN_OR_RETURN(Instruction * result, gather ? AllGatherLoop(inst, em, *plan, locals, ring, reason)
                                                   : ReduceScatterLoop(inst, em, *plan, locals, ring, reason));
  std::optional<PartialReduction> partial;
  if (!plan->partial.empty()) {
    partial = PartialReduction{plan->partial, state.Reducer(dtype == DType::kPred ? Opcode::kOr : Opcode::kAdd, dtype)};
  }
  XS_RETURN_IF_ERROR(ctx.Finish(inst, PartitionedValue(result, inst.shape(), plan->result, &em, partial)));
  return true;
}

}  // namespace xs::spmd::internal
