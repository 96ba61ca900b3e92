// Memory estimates (live-value peak over one run of a computation) and the report text.
#include "xshard/spmd/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "xshard/base/strings.h"
#include "xshard/text/printer.h"

namespace xs::spmd {
namespace {

// Tuples, get-tuple-element and bitcasts alias their operands; parameters are counted up front.
bool Allocates(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kBitcast:
    case Opcode::kParameter:
      return false;
    default:
      return true;
  }
}

int64_t Bytes(const Shape& s) { return s.IsToken() ? 0 : s.byte_size(); }

// A figure with 3 significant digits ("15", "7.5", "0.333").
std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return StrCat(bytes, "B");
  double v = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (v >= 1024 && unit < 3) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%s", v, kUnits[unit]);
  return buf;
}

MemoryEstimate EstimateMemory(const Computation& computation, int top) {
  MemoryEstimate out;
  const std::vector<Instruction*> order = computation.MakeInstructionPostOrder();
  std::unordered_map<const Instruction*, size_t> last_use;
  for (size_t i = 0; i < order.size(); ++i) {
    for (const Instruction* o : order[i]->operands()) last_use[o] = i;
  }
  int64_t live = 0;
  for (const Instruction* p : computation.parameters()) {
    if (p != nullptr) out.parameter_bytes += Bytes(p->shape());
  }
  live = out.parameter_bytes;
  out.peak_bytes = live;
  std::vector<std::pair<int64_t, const Instruction*>> sizes;
  for (size_t i = 0; i < order.size(); ++i) {
    const Instruction* inst = order[i];
    if (Allocates(*inst) || inst->opcode() == Opcode::kParameter) {
      // Keep the `top` largest, earlier ones first among equals (a stable sort's order).
      const std::pair<int64_t, const Instruction*> entry{Bytes(inst->shape()), inst};
      auto at = std::upper_bound(sizes.begin(), sizes.end(), entry,
                                 [](const auto& a, const auto& b) { return a.first > b.first; });
      if (at - sizes.begin() < top) {
        sizes.insert(at, entry);
        if (static_cast<int>(sizes.size()) > top) sizes.pop_back();
      }
    }
    if (Allocates(*inst)) live += Bytes(inst->shape());
    out.peak_bytes = std::max(out.peak_bytes, live);
    for (const Instruction* o : inst->operands()) {
      auto it = last_use.find(o);
      if (it == last_use.end() || it->second != i || !Allocates(*o) || o == computation.root()) continue;
      live -= Bytes(o->shape());
      last_use.erase(it);
    }
  }
  PrintOptions options = PrintOptions::Short();
  options.metadata = false;
  for (int k = 0; k < top && k < static_cast<int>(sizes.size()); ++k) {
    out.largest.push_back({sizes[k].first, PrintInstruction(*sizes[k].second, options)});
  }
  return out;
}

ExplicitGroups::ExplicitGroups(const ReplicaGroups& groups) {
  if (!groups.iota) {
    groups_ = groups;
    return;
  }
  // Only the iota form: ToString() rebuilds the lists.
  ReplicaGroups g;
  g.iota = true;
  g.num_groups = groups.num_groups;
  g.group_size = groups.group_size;
  g.reshape_dims = groups.reshape_dims;
  g.transpose_perm = groups.transpose_perm;
  groups_ = std::move(g);
}

std::string ExplicitGroups::ToString() const {
  if (!groups_) return text_;
  const ReplicaGroups& g = *groups_;
  std::vector<std::string> parts;
  if (g.iota && g.groups.empty()) {
    std::vector<int> perm(g.transpose_perm.begin(), g.transpose_perm.end());
    StatusOr<TileAssignment> ta =
        TileAssignment::FromIota({g.num_groups, g.group_size}, IotaForm{g.reshape_dims, perm});
    XS_CHECK(ta.ok(), "bad iota replica groups: ", ta.status().ToString());
    const std::vector<int64_t>& flat = ta->devices();
    for (int64_t k = 0; k < g.num_groups; ++k) {
      std::vector<int64_t> group(flat.begin() + k * g.group_size, flat.begin() + (k + 1) * g.group_size);
      parts.push_back(StrCat("{", StrJoin(group, ","), "}"));
    }
  } else {
    for (const auto& group : g.groups) parts.push_back(StrCat("{", StrJoin(group, ","), "}"));
  }
  return StrCat("{", StrJoin(parts, ","), "}");
}

std::ostream& operator<<(std::ostream& os, const ExplicitGroups& g) { return os << g.ToString(); }

double InstructionFlops(const Instruction& inst) {
  const Attributes& a = inst.attrs();
  if (!inst.shape().IsArray() || inst.operand_count() < 2) return 0;
  const double out = static_cast<double>(inst.shape().num_elements());
  if (inst.opcode() == Opcode::kDot && a.dot) {
    double k = 1;
    for (int64_t d : a.dot->lhs_contracting) k *= static_cast<double>(inst.operand(0)->shape().dim(static_cast<int>(d)));
    return 2 * out * k;
  }
  if (inst.opcode() == Opcode::kConvolution && a.conv_dims) {
    const Shape& kernel = inst.operand(1)->shape();
    const int64_t outputs = kernel.dim(static_cast<int>(a.conv_dims->kernel_output_feature));
    if (outputs == 0) return 0;
    return 2 * out * static_cast<double>(kernel.num_elements() / outputs);
  }
  return 0;
}

void DescribeFinalProgram(PartitionReport& report, const Module& spmd) {
  // Keyed by computation and name: instruction names repeat across computations (a dead
  // collective-permute in one called computation must not survive because another computation
  // keeps one of the same name).
  std::map<std::pair<std::string, std::string>, Opcode> collectives;
  report.flops = 0;
  for (const Computation* c : spmd.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (IsCollective(inst->opcode())) collectives.emplace(std::make_pair(c->name(), inst->name()), inst->opcode());
      report.flops += InstructionFlops(*inst);
    }
  }
  std::erase_if(report.collectives, [&](const CollectiveRecord& r) {
    auto it = collectives.find({r.computation, r.name});
    return it == collectives.end() || OpcodeName(it->second) != r.kind;
  });
  if (spmd.entry() != nullptr) report.after = EstimateMemory(*spmd.entry());
}

double PartitionReport::CollectiveLatencyUs() const {
  double us = 0;
  for (const CollectiveRecord& c : collectives) us += machine.LatencyUs(c.kind);
  return us;
}

double PartitionReport::EstimatedSeconds() const {
  return machine.Estimate(static_cast<double>(TotalCollectiveBytes()), CollectiveLatencyUs(), flops);
}

int64_t PartitionReport::WrittenCollectives() const {
  return std::count_if(collectives.begin(), collectives.end(), [](const CollectiveRecord& c) { return c.written; });
}

int64_t PartitionReport::TotalCollectiveBytes() const {
  int64_t total = 0;
  for (const CollectiveRecord& c : collectives) total += c.bytes;
  return total;
}

std::string FormatReport(const PartitionReport& report) {
  std::string out = StrCat("SPMD partitioning: ", report.num_partitions, " partitions, ",
                           report.collectives.size(), " collective",
                           report.collectives.size() == 1 ? "" : "s", ", ",
                           FormatBytes(report.TotalCollectiveBytes()), " received per device");
  if (const int64_t written = report.WrittenCollectives(); written > 0) {
    StrAppend(&out, " (", written, " written in the program)");
  }
  StrAppend(&out, "\n");
  const MachineModel& m = report.machine;
  const double comm = m.Estimate(static_cast<double>(report.TotalCollectiveBytes()), report.CollectiveLatencyUs(), 0);
  StrAppend(&out, "estimated time per device: ", FormatSeconds(report.EstimatedSeconds()), " (communication ",
            FormatSeconds(comm), ", compute ", FormatSeconds(m.Estimate(0, 0, report.flops)), " for ", Short(report.flops),
            " FLOP of dot / convolution) at ", m.link_gbps, " GB/s, ", m.collective_latency_us,
            " us per collective (", Short(m.LatencyUs("collective-permute")), " per collective-permute",
            m.all_to_all_share == 1 ? "" : StrCat(", ", Short(m.LatencyUs("all-to-all")), " per all-to-all"), "), ",
            m.device_gflops, " GFLOP/s\n");
  if (!report.collectives.empty()) StrAppend(&out, "collectives:\n");
  for (const CollectiveRecord& c : report.collectives) {
    StrAppend(&out, "  %", c.name, ": ", c.kind, " ", c.shape.ToString(false), ", ",
              FormatBytes(c.bytes), " received, ", c.kind == "collective-permute" ? "pairs=" : "groups=",
              c.groups, "\n    ", c.written ? "written in the program, at %" : "caused by %", c.cause, ": ",
              c.reason, "\n");
  }
  StrAppend(&out, "memory per device (peak of live values): before partitioning ",
            FormatBytes(report.before.peak_bytes), ", after ", FormatBytes(report.after.peak_bytes), "\n");
  for (const auto& [title, m] : {std::pair<const char*, const MemoryEstimate*>{"before", &report.before},
                                 {"after", &report.after}}) {
    StrAppend(&out, "  largest values ", title, ":\n");
    for (const auto& [bytes, text] : m->largest) StrAppend(&out, "    ", FormatBytes(bytes), " : ", text, "\n");
  }
  if (!report.warnings.empty()) StrAppend(&out, "warnings:\n");
  for (const std::string& w : report.warnings) StrAppend(&out, "  ", w, "\n");
  if (!report.notes.empty()) StrAppend(&out, "notes:\n");
  for (const std::string& n : report.notes) StrAppend(&out, "  ", n, "\n");
  return out;
}

}  // namespace xs::spmd
