// Emitter::RecordWritten: the report's record of a collective the input program wrote itself
// (a shard_map psum, a user all-gather), copied into the SPMD program rather than inserted.
#include "xshard/spmd/emitter.h"

#include <string_view>

#include "xshard/base/strings.h"

namespace xs::spmd {
namespace {

int64_t ArrayBytes(const Shape& s) {
  if (s.IsTuple()) {
    int64_t total = 0;
    for (int i = 0; i < s.tuple_size(); ++i) total += ArrayBytes(s.tuple_shape(i));
    return total;
  }
  return s.IsArray() ? s.byte_size() : 0;
}

}  // namespace

void Emitter::RecordWritten(Instruction* inst, std::string reason, const Computation* in) {
  if (scratch() || !IsCollective(inst->opcode())) return;
  const std::string_view kind = OpcodeName(inst->opcode());
  if (kind.ends_with("-start") || kind.ends_with("-done")) return;
  const std::string where = in != nullptr ? in->name() : computation_ != nullptr ? computation_->name() : "";
  if (in != nullptr) {  // a computation copied once may be reached from two call sites
    for (const CollectiveRecord& r : state_->report.collectives) {
      if (r.computation == where && r.name == inst->name()) return;
    }
  }
  const Attributes& attrs = inst->attrs();
  // replica_groups={} (or none): one group of every partition.
  int64_t g = num_partitions();
  if (attrs.replica_groups && !attrs.replica_groups->Groups().empty()) {
    g = static_cast<int64_t>(attrs.replica_groups->Groups()[0].size());
  }
  // The ring model on the result, as bench/xla_compare/collectives.py counts a program.
  const int64_t result = ArrayBytes(inst->shape());
  const Opcode op = inst->opcode();
  int64_t bytes = result;
  if (op == Opcode::kAllGather || op == Opcode::kAllToAll) {
    bytes = g <= 1 ? 0 : result * (g - 1) / g;
  } else if (op == Opcode::kAllReduce) {
    bytes = g <= 1 ? 0 : 2 * result * (g - 1) / g;
  } else if (op == Opcode::kReduceScatter) {
    bytes = g <= 1 ? 0 : result * (g - 1);
  }
  std::string pairs;
  if (attrs.source_target_pairs) {
    std::vector<std::string> parts;
    for (const auto& [s, t] : *attrs.source_target_pairs) parts.push_back(StrCat("{", s, ",", t, "}"));
    pairs = StrCat("{", StrJoin(parts, ","), "}");
  }
  const bool has_groups = attrs.replica_groups && !attrs.replica_groups->Groups().empty();
  const int64_t cost = cost_, total = bytes_;
  const double latency = latency_us_;
  Record(inst, std::string(kind), bytes, has_groups ? &*attrs.replica_groups : nullptr,
         has_groups ? "" : (attrs.source_target_pairs ? pairs : "{}"), std::move(reason));
  // The program's own collectives are no plan's choice: they do not count in dry-run costs.
  cost_ = cost;
  bytes_ = total;
  latency_us_ = latency;
  CollectiveRecord& r = state_->report.collectives.back();
  r.written = true;
  r.computation = where;
  if (in != nullptr) {
    r.reason = StrCat(r.reason, " (%", where, ", called by %", r.cause, ")");
    r.cause = inst->name();
  }
}

}  // namespace xs::spmd
