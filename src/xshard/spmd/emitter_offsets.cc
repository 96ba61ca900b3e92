// Emitter: per-partition values as arithmetic on partition-id (digits of the id times constants),
// per-tile lookups, the tables kept for explicit device lists, and cached replica groups.
#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/spmd/emitter.h"

namespace xs::spmd {

Instruction* Emitter::PerPartition(const std::vector<int64_t>& values) {
  XS_CHECK(static_cast<int64_t>(values.size()) == num_partitions(), "table size");
  if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; })) {
    return Scalar(DType::kS32, static_cast<double>(values[0]));
  }
  auto it = tables_.find(values);
  if (it != tables_.end()) return it->second;
  if (std::optional<PartitionExpr> e = AffineOverMesh(mesh(), values)) {
    return tables_[values] = Evaluate(*e);
  }
  // Values with no arithmetic form (explicit device lists, permute matchings): one entry per
  // partition.
  std::vector<int32_t> v32(values.begin(), values.end());
  Instruction* table = Constant(Array::FromVector<int32_t>({num_partitions()}, v32));
  Instruction* one = DynamicSlice(table, {PartitionId()}, {1});
  return tables_[values] = Reshape(one, {});
}

Instruction* Emitter::Digit(int64_t stride, int64_t size) {
  auto key = std::make_pair(stride, size);
  auto it = digits_.find(key);
  if (it != digits_.end()) return it->second;
  if (partition_id_s32_ == nullptr) partition_id_s32_ = Convert(PartitionId(), DType::kS32);
  Instruction* x = partition_id_s32_;
  if (stride > 1) x = Binary(Opcode::kDivide, x, Scalar(DType::kS32, static_cast<double>(stride)));
  if (stride * size < num_partitions()) {
    x = Binary(Opcode::kRemainder, x, Scalar(DType::kS32, static_cast<double>(size)));
  }
  return digits_[key] = x;
}

Instruction* Emitter::Evaluate(const PartitionExpr& e) {
  if (e.terms.empty()) return Scalar(DType::kS32, static_cast<double>(e.constant));
  auto key = std::make_pair(e.constant, e.terms);
  auto it = exprs_.find(key);
  if (it != exprs_.end()) return it->second;
  Instruction* sum = nullptr;
  for (const PartitionExpr::Term& t : e.terms) {
    Instruction* x = Digit(t.stride, t.size);
    if (t.coef != 1) x = Binary(Opcode::kMultiply, x, Scalar(DType::kS32, static_cast<double>(t.coef)));
    sum = sum == nullptr ? x : Binary(Opcode::kAdd, sum, x);
  }
  if (e.constant != 0) sum = Binary(Opcode::kAdd, sum, Scalar(DType::kS32, static_cast<double>(e.constant)));
  return exprs_[key] = sum;
}

Instruction* Emitter::TileStart(const ShardLayout& layout, int d) {
  if (std::optional<PartitionExpr> index = TileIndexExpr(layout, d)) {
    return Evaluate(*index * layout.shard_dims()[d]);
  }
  std::vector<int64_t> starts(num_partitions());
  for (int64_t p = 0; p < num_partitions(); ++p) starts[p] = layout.start(p, d);
  return PerPartition(starts);
}

Instruction* Emitter::PerTile(const ShardLayout& layout, int d, const std::vector<int64_t>& by_tile) {
  const int64_t t = static_cast<int64_t>(by_tile.size());
  XS_CHECK(t == layout.tiles()[d], "PerTile: ", t, " values for ", layout.tiles()[d], " tiles");
  std::optional<PartitionExpr> index = TileIndexExpr(layout, d);
  if (!index) {
    std::vector<int64_t> values(num_partitions());
    for (int64_t p = 0; p < num_partitions(); ++p) values[p] = by_tile[layout.TileIndex(p, d)];
    return PerPartition(values);
  }
  const int64_t step = t > 1 ? by_tile[1] - by_tile[0] : 0;
  bool affine = true;
  for (int64_t k = 0; k < t; ++k) affine = affine && by_tile[k] == by_tile[0] + k * step;
  if (affine) {
    PartitionExpr base;
    base.constant = by_tile[0];
    return Evaluate(*index * step + base);
  }
  std::vector<int32_t> v32(by_tile.begin(), by_tile.end());
  Instruction* table = Constant(Array::FromVector<int32_t>({t}, v32));
  return Reshape(DynamicSlice(table, {Evaluate(*index)}, {1}), {});
}

ReplicaGroups Emitter::GroupsOver(const std::vector<int>& axes) {
  auto key = std::make_pair(mesh().Signature(), axes);
  auto it = state_->groups_over_axes.find(key);
  if (it == state_->groups_over_axes.end()) {
    it = state_->groups_over_axes.emplace(std::move(key), GroupsOverAxes(mesh(), axes)).first;
  }
  return it->second;
}

}  // namespace xs::spmd
