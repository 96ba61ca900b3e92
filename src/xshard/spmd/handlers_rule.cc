// The rule-driven handler: partitions any op whose factor rule (rules/) relates its operand and
// result dims. Where to communicate is decided per factor (Shardy's insert-explicit-reshards):
// candidate factor -> mesh-axes assignments are taken from the result, from the operands, and
// from nothing; each is costed by dry-running the reshards it implies, and the cheapest is
// emitted. How to communicate is PartitionedValue::Reshard's business.
#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/rules/projection.h"
#include "xshard/rules/rule_registry.h"
#include "xshard/spmd/rule_plan.h"
#include "xshard/spmd/window_halo.h"

namespace xs::spmd::internal {
namespace {

uint64_t MaskOf(const Axes& axes) {
  uint64_t m = 0;
  for (int a : axes) m |= uint64_t{1} << a;
  return m;
}

// Fills unassigned factors from a projection, keeping every mesh axis on one factor.
void Take(FactorAxes& fa, uint64_t& used, const FactorAxes& from, const OpShardingRule& rule,
          bool reductions_only) {
  for (int f = 0; f < rule.num_factors(); ++f) {
    if (!fa[f].empty() || from[f].empty()) continue;
    if (reductions_only && rule.factors[f].kind != FactorKind::kReduction) continue;
    const uint64_t m = MaskOf(from[f]);
    if ((m & used) != 0) continue;
    fa[f] = from[f];
    used |= m;
  }
}

bool InSomeOperand(const Op& op, int f) {
  for (int i = 0; i < static_cast<int>(op.rule.operands.size()); ++i) {
    if (Participates(op, i) && HasFactor(op.rule.operands[i], f)) return true;
  }
  return false;
}

// Clears the assignments the op cannot run locally with, then those that some tensor cannot carry
// exactly (a dim must hold all axes of each of its factors, major to minor, and a dim made of
// several factors must split each of them evenly).
FactorAxes Sanitize(FactorAxes fa, const Op& op, const RuleConfig& config, const TileMesh& mesh) {
  const OpShardingRule& rule = op.rule;
  for (int f = 0; f < rule.num_factors(); ++f) {
    if (fa[f].empty()) continue;
    const FactorKind kind = rule.factors[f].kind;
    bool keep = kind == FactorKind::kPassThrough || kind == FactorKind::kReduction;
    if (kind == FactorKind::kPassThrough) {
      keep = keep && rule.InResults(f) && (InSomeOperand(op, f) || config.allow_result_only);
    }
    if (kind == FactorKind::kReduction) {
      keep = keep && config.reducer && rule.results.size() == 1 && !rule.InResults(f);
    }
    if (kind == FactorKind::kPermutation) keep = config.halo_windows && HaloFactorFits(op, f, AxesSize(mesh, fa[f]));
    for (int i : config.required_operands) keep = keep && HasFactor(rule.operands[i], f);
    if (!keep) fa[f].clear();
  }
  std::vector<const TensorFactors*> tensors;
  for (int i = 0; i < static_cast<int>(rule.operands.size()); ++i) {
    if (Participates(op, i)) tensors.push_back(&rule.operands[i]);
  }
  for (const TensorFactors& t : rule.results) {
    if (t.participates) tensors.push_back(&t);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const TensorFactors* t : tensors) {
      const AxesSharding proj = ProjectFromFactors(fa, *t, rule, mesh);
      for (size_t d = 0; d < t->dims.size(); ++d) {
        const std::vector<int>& factors = t->dims[d];
        Axes expected;
        bool bad = false;
        for (int f : factors) {
          if (bad) {
            changed = changed || !fa[f].empty();
            fa[f].clear();
            continue;
          }
          const bool uneven = factors.size() > 1 && !fa[f].empty() &&
                              rule.factors[f].size % AxesSize(mesh, fa[f]) != 0;
          Axes next = expected;
          next.insert(next.end(), fa[f].begin(), fa[f].end());
          const Axes& got = proj.dims[d];
          const bool prefix = next.size() <= got.size() && std::equal(next.begin(), next.end(), got.begin());
          if (uneven || !prefix) {
            bad = true;
            changed = changed || !fa[f].empty();
            fa[f].clear();
            continue;
          }
          expected = std::move(next);
        }
      }
    }
  }
  return fa;
}

// `kept` (a sanitized assignment) with the mesh axes `wanted` had and sanitizing dropped moved,
// one factor's group at a time, onto an unassigned pass-through factor of every participating
// tensor that the group splits evenly (the largest such factor): XLA's all-to-all around an op
// that cannot split a dim (concatenate, pad or reverse along it) instead of gathering it.
// nullopt when nothing moves.
std::optional<FactorAxes> MoveDroppedAxes(const FactorAxes& wanted, FactorAxes kept, const Op& op,
                                          const TileMesh& mesh) {
  const OpShardingRule& rule = op.rule;
  uint64_t used = op.manual;
  for (const Axes& axes : kept) used |= MaskOf(axes);
  auto everywhere = [&](int g) {
    for (int i = 0; i < static_cast<int>(rule.operands.size()); ++i) {
      if (Participates(op, i) && !HasFactor(rule.operands[i], g)) return false;
    }
    for (const TensorFactors& t : rule.results) {
      if (t.participates && !HasFactor(t, g)) return false;
    }
    return true;
  };
  bool moved = false;
  for (int f = 0; f < rule.num_factors(); ++f) {
    Axes dropped;
    for (int a : wanted[f]) {
      if ((used & (uint64_t{1} << a)) == 0) dropped.push_back(a);
    }
    if (dropped.empty()) continue;
    const int64_t n = AxesSize(mesh, dropped);
    int best = -1;
    for (int g = 0; g < rule.num_factors(); ++g) {
      if (g == f || !kept[g].empty() || rule.factors[g].kind != FactorKind::kPassThrough) continue;
      if (rule.factors[g].size % n != 0 || !everywhere(g)) continue;
      if (best < 0 || rule.factors[g].size > rule.factors[best].size) best = g;
    }
    if (best < 0) continue;
    kept[best] = dropped;
    used |= MaskOf(dropped);
    moved = true;
  }
  if (!moved) return std::nullopt;
  return kept;
}

// The cheapest plan of `op` (swapping the op's own mesh into `swap` when its shardings are not
// all on the module's mesh).
StatusOr<Plan> ChoosePlan(Op& op, Context& ctx, const RuleConfig& config, std::optional<MeshSwap>& swap) {
  ModuleState& state = ctx.state();
  ComputeViews(op, state.mesh);
  if (!op.on_mesh) {
    std::optional<TileMesh> local = LocalMesh(op, state.num_partitions);
    if (local) {
      swap.emplace(state, *std::move(local));
      ComputeViews(op, state.mesh);
    }
  }
  if (!op.on_mesh && op.has_manual) {
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const HloSharding& s = op.operands[i].sharding();
      if (s.IsManual() != op.result_targets[0].IsManual()) {
        return InvalidArgument("operand ", i, " has sharding ", s.ToString(), " but the result has ",
                               op.result_targets[0].ToString(),
                               ": manual values only meet manual uses (enter and leave manual regions "
                               "through SPMDFullToShardShape / SPMDShardToFullShape custom-calls)");
      }
    }
    return Unimplemented("the manual axes of the operands and the result differ");
  }
  const TileMesh& mesh = state.mesh;
  const int nf = op.rule.num_factors();
  std::vector<FactorAxes> candidates;
  if (op.on_mesh) {
    std::vector<FactorAxes> from_results, from_operands;
    for (size_t l = 0; l < op.result_shapes.size(); ++l) {
      if (!op.rule.results[l].participates) continue;
      from_results.push_back(ProjectToFactors(*op.result_axes[l], op.rule.results[l], op.rule, mesh));
    }
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operand_axes[i]) continue;
      from_operands.push_back(ProjectToFactors(*op.operand_axes[i], op.rule.operands[i], op.rule, mesh));
    }
    // A: the result's factors, reductions from the operands. B: the operands' factors first.
    // C: the result's factors, reductions unsharded. E: B with the last operand first (when two
    // operands claim one axis for different factors, the other one keeps it: x P(x, y) @ w
    // P(y, x) into P(y, x) keeps w's split, gathers x's rows and reduce-scatters the partial
    // sums, where B keeps x's rows and all-reduces).
    FactorAxes a(nf), b(nf), c(nf), e(nf);
    uint64_t ua = op.manual, ub = op.manual, uc = op.manual, ue = op.manual;
    for (const FactorAxes& p : from_results) Take(a, ua, p, op.rule, false), Take(c, uc, p, op.rule, false);
    for (const FactorAxes& p : from_operands) Take(a, ua, p, op.rule, true), Take(b, ub, p, op.rule, false);
    for (const FactorAxes& p : from_results) Take(b, ub, p, op.rule, false);
    for (auto p = from_operands.rbegin(); p != from_operands.rend(); ++p) Take(e, ue, *p, op.rule, false);
    for (const FactorAxes& p : from_results) Take(e, ue, p, op.rule, false);
    for (int f = 0; f < nf; ++f) {
      if (op.rule.factors[f].kind == FactorKind::kReduction) c[f].clear();
    }
    for (FactorAxes* fa : {&a, &b, &c}) candidates.push_back(Sanitize(*fa, op, config, mesh));
    // D: A with the axes it cannot keep moved to another factor.
    std::optional<FactorAxes> d = MoveDroppedAxes(a, candidates[candidates.size() - 3], op, mesh);
    if (d) candidates.push_back(Sanitize(*std::move(d), op, config, mesh));
    if (from_operands.size() > 1) candidates.push_back(Sanitize(e, op, config, mesh));
  }
  candidates.push_back(FactorAxes(nf));
  const size_t first_idle = candidates.size();
  if (op.on_mesh) {
    // F (dots and convolutions whose repeated work costs more than a collective's fixed cost): A
    // with the mesh axes it leaves idle given to one more factor, all together and each alone, so
    // that the devices along those axes compute pieces of the product instead of all of it (a
    // result replicated over y is then reduced or gathered over y, as XLA does). Smaller products
    // keep the plans above, and so does any whose F plans move more bytes than the best above
    // (below): work saved is not traded for communication.
    const Opcode opcode = op.inst->opcode();
    const FactorAxes base = candidates.front();
    if ((opcode == Opcode::kDot || opcode == Opcode::kConvolution) &&
        state.machine.Estimate(0, 0, LocalFlops(op, PlanFromFactors(base, op, mesh), mesh, state.num_partitions)) >
            state.machine.collective_latency_us * 1e-6) {
      uint64_t used = op.manual;
      for (const Axes& axes : base) used |= MaskOf(axes);
      Axes idle;
      for (int axis = 0; axis < mesh.num_axes(); ++axis) {
        if ((used & (uint64_t{1} << axis)) == 0 && mesh.axis_size(axis) > 1) idle.push_back(axis);
      }
      std::vector<Axes> groups;
      if (!idle.empty()) groups.push_back(idle);
      if (idle.size() > 1) {
        for (int axis : idle) groups.push_back({axis});
      }
      for (const Axes& group : groups) {
        for (int f = 0; f < nf; ++f) {
          if (op.rule.factors[f].size % AxesSize(mesh, group) != 0) continue;
          FactorAxes g = base;
          g[f].insert(g[f].end(), group.begin(), group.end());
          candidates.push_back(Sanitize(std::move(g), op, config, mesh));
        }
      }
    }
  }
  // Shorter estimated time first; with config.fewest_bytes, fewer bytes, then fewer collectives.
  auto better = [&](const Plan& p, const Plan& q) {
    if (!config.fewest_bytes || p.cost >= kImpossibleCost || q.cost >= kImpossibleCost) return p.cost < q.cost;
    return std::pair(p.bytes, p.collectives) < std::pair(q.bytes, q.collectives);
  };
  Plan best;
  std::vector<FactorAxes> seen;
  int64_t bytes_before_idle = kImpossibleCost;
  for (size_t k = 0; k < candidates.size(); ++k) {
    const FactorAxes& fa = candidates[k];
    if (k == first_idle) bytes_before_idle = best.cost < kImpossibleCost ? best.bytes : kImpossibleCost;
    if (std::find(seen.begin(), seen.end(), fa) != seen.end()) continue;
    seen.push_back(fa);
    Plan plan = PlanFromFactors(fa, op, mesh);
    Cost(plan, op, state);
    // A plan that puts idle axes to work must also move no more bytes than the plans above.
    if (k >= first_idle && plan.bytes > bytes_before_idle) continue;
    if (better(plan, best)) best = std::move(plan);
  }
  if (!op.on_mesh) {
    std::optional<Plan> like = PlanLikeResult(op);
    if (like) {
      Cost(*like, op, state);
      if (!better(best, *like)) best = std::move(*like);
    }
  }
  if (best.cost >= kImpossibleCost) return Unimplemented("no local form of the op fits its shapes");
  return best;
}

}  // namespace

int64_t RulePlanCost(const Instruction& inst, Context& ctx, const RuleConfig& config) {
  StatusOr<Op> op = Describe(inst, ctx);
  if (!op.ok()) return kImpossibleCost;
  std::optional<MeshSwap> swap;
  StatusOr<Plan> best = ChoosePlan(*op, ctx, config, swap);
  // In the handlers' own units (bytes + one per collective, as ReshardCost and Emitter::cost()
  // count), not the plan's estimated time: the ops that ask (gather, scatter, concatenate, slice,
  // sort) do no dot or convolution FLOPs, so their time differs from this only in how much a
  // collective weighs.
  if (!best.ok() || best->cost >= kImpossibleCost) return kImpossibleCost;
  return best->bytes + best->collectives;
}

Status PartitionByRule(const Instruction& inst, Context& ctx, const RuleConfig& config) {
  XS_ASSIGN_OR_RETURN(Op op, Describe(inst, ctx));
  ModuleState& state = ctx.state();
  std::optional<MeshSwap> swap;
  XS_ASSIGN_OR_RETURN(Plan best, ChoosePlan(op, ctx, config, swap));
  bool gathers_tiled = false;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    gathers_tiled = gathers_tiled || (op.operands[i].sharding().IsTiled() && best.operands[i].IsReplicated());
  }
  if (!op.on_mesh && gathers_tiled) {
    ctx.Warn(StrCat("%", inst.name(), " (", OpcodeName(inst.opcode()),
                    "): a sharding is not expressible on the module's common tile mesh; computed on "
                    "replicated operands (", FormatBytes(best.bytes), " received per device)"));
  }

  Emitter& em = ctx.em();
  std::vector<Instruction*> locals;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    XS_ASSIGN_OR_RETURN(PartitionedValue v, op.operands[i].Reshard(best.operands[i], StrCat("operand ", i)));
    Instruction* local = v.hlo();
    if (!best.partial.empty() && Participates(op, static_cast<int>(i))) {
      std::vector<int> dims;
      const TensorFactors& t = op.rule.operands[i];
      for (size_t d = 0; d < t.dims.size(); ++d) {
        for (int f : t.dims[d]) {
          if (op.rule.factors[f].kind == FactorKind::kReduction && !best.factors[f].empty()) {
            dims.push_back(static_cast<int>(d));
          }
        }
      }
      Instruction* fill = i < config.identities.size() ? config.identities[i] : nullptr;
      XS_ASSIGN_OR_RETURN(local, v.PadWithValue(fill, dims));
    }
    locals.push_back(local);
  }
  if (config.halo_windows) {
    // Sharded windowed dims: each input becomes its result tile's window (padding value: the
    // reduce-window's init value, the convolution's zero).
    const bool rw = inst.opcode() == Opcode::kReduceWindow;
    const int inputs = rw ? inst.operand_count() / 2 : 1;
    for (int i = 0; i < inputs; ++i) {
      PartitionedValue v(locals[i], op.operands[i].global_shape(), best.operands[i], &em);
      XS_ASSIGN_OR_RETURN(locals[i], ExchangeHalos(inst, i, v, rw ? locals[inputs + i] : nullptr));
    }
  }
  std::unique_ptr<Instruction> clone = inst.CloneWithNewOperands(locals);
  std::vector<Shape> results = LocalResultShapes(op, best, state.num_partitions);
  // Result tiles whose windows start unlike (lhs dilation over tiles of odd length) compute a
  // few extra leading results, cut off after the op (AddShifted).
  std::vector<ShiftedResult> shifts;
  if (config.halo_windows && !inst.shape().IsTuple()) {
    shifts = ShiftedResults(inst, op.operands[0].global_shape(), best.operands[0], state.num_partitions);
    for (const ShiftedResult& s : shifts) {
      std::vector<int64_t> dims = results[0].dims();
      dims[s.result_dim] += s.win.extra;
      results[0] = results[0].WithDims(std::move(dims));
    }
  }
  clone->set_shape(inst.shape().IsTuple() ? Shape::Tuple(results) : results[0]);
  clone->set_sharding(std::nullopt);
  std::vector<CalledComputation> calls;
  for (const CalledComputation& c : inst.calls()) calls.push_back({c.role, state.Clone(*c.computation)});
  clone->set_calls(std::move(calls));
  XS_RETURN_IF_ERROR(Localize(*clone, inst));
  XS_ASSIGN_OR_RETURN(Instruction * local, AddShifted(std::move(clone), shifts, best.results[0], inst.shape(), em));
  if (!inst.shape().IsTuple()) {
    std::optional<PartialReduction> partial;
    if (!best.partial.empty()) partial = PartialReduction{best.partial, config.reducer()};
    return ctx.Finish(inst, PartitionedValue(local, inst.shape(), best.results[0], &em, partial));
  }
  std::vector<Instruction*> elements;
  std::vector<HloSharding> shardings;
  for (size_t l = 0; l < op.result_shapes.size(); ++l) {
    PartitionedValue e(em.GetTupleElement(local, static_cast<int64_t>(l)), op.result_shapes[l],
                       best.results[l], &em);
    XS_ASSIGN_OR_RETURN(PartitionedValue r, e.Reshard(op.result_targets[l]));
    elements.push_back(r.hlo());
    shardings.push_back(r.sharding());
  }
  ctx.Set(&inst, PartitionedValue(em.Tuple(std::move(elements)), inst.shape(),
                                  HloSharding::Tuple(std::move(shardings)), &em));
  return OkStatus();
}

}  // namespace xs::spmd::internal
