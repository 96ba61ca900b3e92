// Strategies from factor rules, and the price of a reshard between two splits of one tensor.
#include "xshard/autoshard/strategy.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "xshard/ir/opcode.h"
#include "xshard/spmd/report.h"

namespace xs::autoshard {

int64_t ShardCount(const DimAxes& axes, const Mesh& mesh) {
  int64_t n = 1;
  for (const auto& dim : axes) {
    for (int a : dim) n *= mesh.AxisSize(a);
  }
  return n;
}

DimAxes Replicated(int rank) { return DimAxes(static_cast<size_t>(rank)); }

std::string SpecText(const DimAxes& axes, const Mesh& mesh) {
  // Trailing unsplit dims are left out, as JAX prints P('x') for P('x', None).
  size_t last = axes.size();
  while (last > 0 && axes[last - 1].empty()) --last;
  std::string out = "P(";
  for (size_t d = 0; d < last; ++d) {
    if (d > 0) out += ", ";
    const auto& dim = axes[d];
    if (dim.empty()) {
      out += "None";
    } else if (dim.size() == 1) {
      out += "'" + mesh.axis_names()[dim[0]] + "'";
    } else {
      out += "(";
      for (size_t i = 0; i < dim.size(); ++i) {
        if (i > 0) out += ", ";
        out += "'" + mesh.axis_names()[dim[i]] + "'";
      }
      out += ")";
    }
  }
  return out + ")";
}

namespace {

// (dim, position within the dim) of each mesh axis in a split; (-1, -1) when absent.
std::vector<std::pair<int, int>> AxisPositions(const DimAxes& axes, int num_axes) {
  std::vector<std::pair<int, int>> pos(static_cast<size_t>(num_axes), {-1, -1});
  for (size_t d = 0; d < axes.size(); ++d) {
    for (size_t i = 0; i < axes[d].size(); ++i) pos[axes[d][i]] = {static_cast<int>(d), static_cast<int>(i)};
  }
  return pos;
}

}  // namespace

double ReshardSeconds(const Shape& shape, const DimAxes& from, const DimAxes& to, const Mesh& mesh,
                      const CostFunctions& cost, double* bytes_out, int* collectives_out) {
  double seconds = 0, bytes = 0;
  int collectives = 0;
  if (from != to && shape.IsArray()) {
    const auto pf = AxisPositions(from, mesh.num_axes());
    const auto pt = AxisPositions(to, mesh.num_axes());
    double local = static_cast<double>(shape.byte_size()) / static_cast<double>(ShardCount(from, mesh));
    int64_t dropped = 1;
    bool sliced = false;
    for (int a = 0; a < mesh.num_axes(); ++a) {
      if (pf[a].first < 0 && pt[a].first >= 0) {  // a local slice
        local /= static_cast<double>(mesh.AxisSize(a));
        sliced = true;
      }
      if (pf[a].first >= 0 && pt[a].first < 0) dropped *= mesh.AxisSize(a);
    }
    // The slice copies the tile out (read and written once): free of communication, not of time.
    if (sliced) seconds += cost.memory(2 * local);
    for (int a = 0; a < mesh.num_axes(); ++a) {
      if (pf[a].first >= 0 && pt[a].first >= 0 && pf[a] != pt[a]) {  // moves to another dim
        const auto g = static_cast<double>(mesh.AxisSize(a));
        const double b = local * (g - 1) / g;
        seconds += cost.collective("all-to-all", mesh.AxisSize(a), b);
        bytes += b;
        ++collectives;
      }
    }
    if (dropped > 1) {
      const auto g = static_cast<double>(dropped);
      local *= g;
      const double b = local * (g - 1) / g;
      seconds += cost.collective("all-gather", dropped, b);
      bytes += b;
      ++collectives;
    }
  }
  if (bytes_out != nullptr) *bytes_out = bytes;
  if (collectives_out != nullptr) *collectives_out = collectives;
  return seconds;
}

double ComputeSeconds(const Instruction& inst, int64_t shards, const CostFunctions& cost, double batch) {
  const Opcode op = inst.opcode();
  const double n = static_cast<double>(std::max<int64_t>(shards, 1));
  if (op == Opcode::kDot || op == Opcode::kConvolution) {
    // A batched dot is `batch` GEMMs of the per-element size: the rate is that size's.
    const double b = std::max(batch, 1.0);
    const DType type = inst.shape().IsArray() ? inst.shape().dtype() : DType::kF32;
    const auto& rate = op == Opcode::kConvolution && cost.conv ? cost.conv : cost.dot;
    return b * rate(type, spmd::InstructionFlops(inst) / n / b);
  }
  switch (op) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kBitcast:
      return 0;
    default:
      break;
  }
  if (!inst.shape().IsArray()) return 0;
  double bytes = static_cast<double>(inst.shape().byte_size());
  if (!IsElementwise(op)) {
    // Not fused with its neighbours: it reads its operands as well.
    for (const Instruction* o : inst.operands()) {
      if (o->shape().IsArray()) bytes += static_cast<double>(o->shape().byte_size());
    }
  }
  return cost.memory(bytes / n);
}

namespace {

DimAxes TensorAxes(const TensorFactors& t, const std::vector<std::vector<int>>& factor_axes) {
  DimAxes out(t.dims.size());
  for (size_t d = 0; d < t.dims.size(); ++d) {
    for (int f : t.dims[d]) out[d].insert(out[d].end(), factor_axes[f].begin(), factor_axes[f].end());
  }
  return out;
}

// Within each dim of `t`, a minor factor may carry axes only when every more major factor of the
// dim is split fully (otherwise the dim's tiles would not be contiguous).
bool ContiguousTiles(const TensorFactors& t, const OpShardingRule& rule,
                     const std::vector<int64_t>& factor_split) {
  for (const auto& dim : t.dims) {
    for (size_t i = 1; i < dim.size(); ++i) {
      if (factor_split[dim[i]] == 1) continue;
      for (size_t j = 0; j < i; ++j) {
        if (factor_split[dim[j]] != rule.factors[dim[j]].size) return false;
      }
    }
  }
  return true;
}

}  // namespace

std::vector<Strategy> EnumerateStrategies(const Instruction& inst, const OpShardingRule& rule,
                                          const Mesh& mesh, const CostFunctions& cost,
                                          const EnumerateOptions& options) {
  std::vector<int> axes;  // mesh axes worth splitting over
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (mesh.AxisSize(a) > 1) axes.push_back(a);
  }
  std::vector<int> splittable;
  for (int f = 0; f < rule.num_factors(); ++f) {
    const FactorKind k = rule.factors[f].kind;
    if ((k == FactorKind::kPassThrough || k == FactorKind::kReduction) && rule.factors[f].size > 1) {
      splittable.push_back(f);
    }
  }
  const bool has_result = !rule.results.empty() && inst.shape().IsArray();
  std::vector<Strategy> out;
  std::set<std::pair<DimAxes, std::vector<DimAxes>>> seen;
  std::vector<int> choice(axes.size(), -1);  // index into splittable, -1: unused
  const int options_per_axis = static_cast<int>(splittable.size()) + 1;
  int64_t combos = 1;
  for (size_t i = 0; i < axes.size(); ++i) combos *= options_per_axis;
  for (int64_t c = 0; c < combos; ++c) {
    int64_t rest = c;
    for (size_t i = 0; i < axes.size(); ++i) {
      choice[i] = static_cast<int>(rest % options_per_axis) - 1;
      rest /= options_per_axis;
    }
    std::vector<std::vector<int>> factor_axes(rule.num_factors());
    std::vector<int64_t> split(rule.num_factors(), 1);
    for (size_t i = 0; i < axes.size(); ++i) {
      if (choice[i] < 0) continue;
      const int f = splittable[choice[i]];
      factor_axes[f].push_back(axes[i]);
      split[f] *= mesh.AxisSize(axes[i]);
    }
    bool valid = true;
    for (int f = 0; f < rule.num_factors() && valid; ++f) {
      if (static_cast<int>(factor_axes[f].size()) > options.max_axes_per_factor) valid = false;
      if (split[f] > 1 && rule.factors[f].size % split[f] != 0) valid = false;
    }
    for (const TensorFactors& t : rule.operands) valid = valid && (!t.participates || ContiguousTiles(t, rule, split));
    for (const TensorFactors& t : rule.results) valid = valid && ContiguousTiles(t, rule, split);
    if (!valid) continue;
    Strategy s;
    s.factor_axes = factor_axes;
    s.result = has_result ? TensorAxes(rule.results[0], factor_axes) : DimAxes{};
    s.operands.resize(inst.operand_count());
    s.operand_related.assign(inst.operand_count(), false);
    for (int i = 0; i < inst.operand_count(); ++i) {
      if (!inst.operand(i)->shape().IsArray()) continue;
      const TensorFactors& t = rule.operands[rule.OperandLeaf(i)];
      if (!t.participates) continue;
      s.operands[i] = TensorAxes(t, factor_axes);
      s.operand_related[i] = true;
    }
    if (!seen.insert({s.result, s.operands}).second) continue;
    int64_t used = 1, reduced = 1;
    for (int f = 0; f < rule.num_factors(); ++f) {
      used *= split[f];
      if (rule.factors[f].kind == FactorKind::kReduction) reduced *= split[f];
    }
    if (has_result) {
      s.result_bytes = inst.shape().byte_size() / ShardCount(s.result, mesh);
    }
    if (reduced > 1 && has_result) {
      // Partial sums: all-reduce of the result tile (ring: 2(g-1)/g of it received).
      const auto g = static_cast<double>(reduced);
      s.comm_seconds = cost.collective("all-reduce", reduced, 2 * (g - 1) / g * static_cast<double>(s.result_bytes));
    }
    // Dot batch dims: factors in both operands and the result; each device runs its share of them.
    double batch = 1;
    if (inst.opcode() == Opcode::kDot && rule.operands.size() >= 2 && !rule.results.empty()) {
      auto has = [](const TensorFactors& t, int f) {
        for (const auto& dim : t.dims) {
          if (std::find(dim.begin(), dim.end(), f) != dim.end()) return true;
        }
        return false;
      };
      for (int f = 0; f < rule.num_factors(); ++f) {
        if (has(rule.operands[0], f) && has(rule.operands[1], f) && has(rule.results[0], f)) {
          batch *= static_cast<double>(rule.factors[f].size / split[f]);
        }
      }
    }
    s.seconds = ComputeSeconds(inst, used, cost, batch) + s.comm_seconds;
    out.push_back(std::move(s));
  }
  return out;
}

int FindUniformStrategy(const std::vector<Strategy>& strategies, const DimAxes& axes) {
  for (size_t i = 0; i < strategies.size(); ++i) {
    const Strategy& s = strategies[i];
    if (s.result != axes) continue;
    bool all = true;
    for (size_t o = 0; o < s.operands.size() && all; ++o) {
      if (s.operand_related[o] && s.operands[o].size() == axes.size()) all = s.operands[o] == axes;
    }
    if (all) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace xs::autoshard
