// OpShardingRule text form, shape leaves and the RuleBuilder (incl. the reshape factor walk).
#include "xshard/rules/sharding_rule.h"

#include <numeric>

#include "xshard/base/status.h"
#include "xshard/base/strings.h"

namespace xs {

std::string_view FactorKindName(FactorKind kind) {
  switch (kind) {
    case FactorKind::kPassThrough: return "pass-through";
    case FactorKind::kReduction: return "reduction";
    case FactorKind::kNeedReplication: return "need-replication";
    case FactorKind::kPermutation: return "permutation";
  }
  return "?";
}

bool OpShardingRule::InResults(int f) const {
  for (const TensorFactors& t : results) {
    if (!t.participates) continue;
    for (const auto& dim : t.dims) {
      for (int g : dim) {
        if (g == f) return true;
      }
    }
  }
  return false;
}

namespace {

std::string FactorName(int f) {
  static constexpr std::string_view kLetters = "ijklmnopqrstuvwxyz";
  if (f < static_cast<int>(kLetters.size())) return std::string(1, kLetters[f]);
  return StrCat("f", f);
}

std::string TensorText(const TensorFactors& t) {
  if (!t.participates) return "_";
  std::vector<std::string> dims;
  for (const auto& dim : t.dims) {
    if (dim.empty()) {
      dims.push_back("1");
    } else if (dim.size() == 1) {
      dims.push_back(FactorName(dim[0]));
    } else {
      std::string s = "(";
      for (int f : dim) s += FactorName(f);
      dims.push_back(s + ")");
    }
  }
  return StrCat("[", StrJoin(dims, ", "), "]");
}

std::string TensorsText(const std::vector<TensorFactors>& ts) {
  std::vector<std::string> parts;
  for (const TensorFactors& t : ts) parts.push_back(TensorText(t));
  return StrCat("(", StrJoin(parts, ", "), ")");
}

void AppendLeaves(const Shape& shape, std::vector<const Shape*>& out) {
  if (shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes()) AppendLeaves(s, out);
  } else {
    out.push_back(&shape);
  }
}

}  // namespace

std::string OpShardingRule::ToString() const {
  std::vector<std::string> sizes;
  for (int f = 0; f < num_factors(); ++f) {
    std::string s = StrCat(FactorName(f), "=", factors[f].size);
    if (factors[f].kind != FactorKind::kPassThrough)
      StrAppend(&s, " ", FactorKindName(factors[f].kind));
    sizes.push_back(std::move(s));
  }
  std::string out =
      StrCat(TensorsText(operands), " -> ", TensorsText(results), " {", StrJoin(sizes, ", "), "}");
  if (barrier) out += " barrier";
  return out;
}

std::vector<const Shape*> ShapeLeaves(const Shape& shape) {
  std::vector<const Shape*> out;
  AppendLeaves(shape, out);
  return out;
}

int LeafCount(const Shape& shape) {
  if (!shape.IsTuple()) return 1;
  int n = 0;
  for (const Shape& s : shape.tuple_shapes()) n += LeafCount(s);
  return n;
}

RuleBuilder::RuleBuilder(const std::vector<const Shape*>& operand_shapes,
                         const Shape& result_shape) {
  rule_.operand_leaf_begin.push_back(0);
  for (const Shape* s : operand_shapes) {
    for (const Shape* leaf : ShapeLeaves(*s)) operand_leaves_.push_back(leaf);
    rule_.operand_leaf_begin.push_back(static_cast<int>(operand_leaves_.size()));
  }
  result_leaves_ = ShapeLeaves(result_shape);
  for (const Shape* s : operand_leaves_) {
    rule_.operands.push_back(
        TensorFactors{std::vector<std::vector<int>>(s->IsArray() ? s->rank() : 0), true});
  }
  for (const Shape* s : result_leaves_) {
    rule_.results.push_back(
        TensorFactors{std::vector<std::vector<int>>(s->IsArray() ? s->rank() : 0), true});
  }
}

const Shape& RuleBuilder::ShapeOf(Ref t) const {
  return t.result ? *result_leaves_[t.leaf] : *operand_leaves_[t.leaf];
}

TensorFactors& RuleBuilder::At(Ref t) {
  return t.result ? rule_.results[t.leaf] : rule_.operands[t.leaf];
}

int RuleBuilder::AddFactor(int64_t size, FactorKind kind) {
  rule_.factors.push_back(Factor{size, kind});
  return rule_.num_factors() - 1;
}

void RuleBuilder::Map(Ref t, int d, int f) {
  TensorFactors& tf = At(t);
  XS_CHECK(d >= 0 && d < static_cast<int>(tf.dims.size()), "dim ", d, " out of range");
  tf.dims[d].push_back(f);
}

int RuleBuilder::AddFactorOn(int64_t size, FactorKind kind,
                             const std::vector<std::pair<Ref, int>>& dims) {
  int f = AddFactor(size, kind);
  for (const auto& [t, d] : dims) Map(t, d, f);
  return f;
}

void RuleBuilder::AddPointwise(const std::vector<Ref>& tensors) {
  if (tensors.empty()) return;
  const Shape& first = ShapeOf(tensors[0]);
  if (!first.IsArray()) return;
  for (int d = 0; d < first.rank(); ++d) {
    // A size-1 dim gets a factor too: a slice, pad or reverse result keeps its operand's axes on
    // a dim it cut to one element (tile 0 holds it, the others padding, as GSPMD and Shardy keep
    // it), and elementwise ops on it must keep them, or both their operands were gathered
    // (bench/xla_compare gradient_trapz, jnp.gradient's edge differences: 512 B against XLA's 436).
    int f = AddFactor(first.dim(d),
                      first.dim(d) < 0 ? FactorKind::kNeedReplication : FactorKind::kPassThrough);
    for (Ref t : tensors) Map(t, d, f);
  }
}

void RuleBuilder::AddOwnFactors(Ref t, FactorKind kind) {
  const Shape& s = ShapeOf(t);
  if (!s.IsArray()) return;
  for (int d = 0; d < s.rank(); ++d) {
    if (s.dim(d) != 1) Map(t, d, AddFactor(s.dim(d), kind));
  }
}

void RuleBuilder::Ignore(Ref t) {
  At(t).participates = false;
}

void RuleBuilder::SetGroup(Ref t, int g) {
  At(t).group = g;
}

void RuleBuilder::AddReshape(Ref from, Ref to) {
  const std::vector<int64_t>& a = ShapeOf(from).dims();
  const std::vector<int64_t>& b = ShapeOf(to).dims();
  const int na = static_cast<int>(a.size()), nb = static_cast<int>(b.size());
  bool dynamic = false;
  for (int64_t x : a) dynamic |= x < 0;
  for (int64_t x : b) dynamic |= x < 0;
  int i = -1, j = -1;
  int64_t ra = 1, rb = 1;
  bool stuck = dynamic || Product(a) != Product(b) || Product(a) == 0;
  while (!stuck) {
    while (ra == 1 && i + 1 < na) ra = a[++i];
    while (rb == 1 && j + 1 < nb) rb = b[++j];
    if (ra == 1 || rb == 1) break;
    const int64_t g = std::gcd(ra, rb);
    if (g == 1) {
      stuck = true;
      break;
    }
    AddFactorOn(g, FactorKind::kPassThrough, {{from, i}, {to, j}});
    ra /= g;
    rb /= g;
  }
  if (!stuck) return;
  // The rest of each side: its own need-replication factors (the remainder of the current dim,
  // then every later dim).
  auto rest = [&](Ref t, const std::vector<int64_t>& dims, int k, int64_t rem) {
    if (k < 0) k = 0, rem = dims.empty() ? 1 : dims[0];
    if (rem != 1 && k < static_cast<int>(dims.size())) {
      Map(t, k, AddFactor(rem, FactorKind::kNeedReplication));
    }
    for (int d = k + 1; d < static_cast<int>(dims.size()); ++d) {
      if (dims[d] != 1) Map(t, d, AddFactor(dims[d], FactorKind::kNeedReplication));
    }
  };
  rest(from, a, i, ra);
  rest(to, b, j, rb);
}

OpShardingRule RuleBuilder::Build() && {
  return std::move(rule_);
}

}  // namespace xs
