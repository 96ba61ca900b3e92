// PredictStep: walks one device's SPMD program and prices every instruction on a HardwareProfile
// (dots by FLOPs, collectives by the ring model's bytes, fused elementwise loops and other array
// ops by the bytes they move), loops times their trip count.
#include "xshard/spmd/step_prediction.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "xshard/base/strings.h"
#include "xshard/ir/computation.h"
#include "xshard/spmd/report.h"

namespace xs::spmd {
namespace {

int64_t Bytes(const Shape& s) { return s.IsTuple() || s.IsArray() ? s.byte_size() : 0; }

// Ops the executor fuses into one tiled loop (exec/fusion_plan.h): elementwise ops with the
// broadcasts and iotas they read; a reduce may consume such a loop.
bool FusibleProducer(const Instruction& i) {
  return i.shape().IsArray() &&
         (IsElementwise(i.opcode()) || i.opcode() == Opcode::kBroadcast || i.opcode() == Opcode::kIota);
}
bool Transcendental(Opcode op) {
  switch (op) {
    case Opcode::kExp: case Opcode::kExpm1: case Opcode::kLog: case Opcode::kLog1p: case Opcode::kLogistic:
    case Opcode::kTanh: case Opcode::kErf: case Opcode::kSin: case Opcode::kCos: case Opcode::kTan:
    case Opcode::kPower: case Opcode::kAtan2: case Opcode::kCbrt: case Opcode::kAsin: case Opcode::kAcos:
    case Opcode::kAtan: case Opcode::kSinh: case Opcode::kCosh: case Opcode::kAsinh: case Opcode::kAcosh:
    case Opcode::kAtanh:
      return true;
    default:
      return false;
  }
}
bool Fusible(const Instruction& i) { return FusibleProducer(i) || i.opcode() == Opcode::kReduce; }

// Instructions that alias or cost nothing at run time.
bool Free(Opcode op) {
  switch (op) {
    case Opcode::kParameter: case Opcode::kConstant: case Opcode::kTuple: case Opcode::kGetTupleElement:
    case Opcode::kBitcast: case Opcode::kReshape: case Opcode::kAfterAll: case Opcode::kPartitionId:
    case Opcode::kReplicaId: case Opcode::kAddDependency: case Opcode::kOptimizationBarrier:
    case Opcode::kDomain: case Opcode::kGetDimensionSize: case Opcode::kAllGatherDone:
    case Opcode::kAllReduceDone: case Opcode::kCollectivePermuteDone: case Opcode::kAsyncDone:
    case Opcode::kAsyncUpdate: case Opcode::kCopyDone:
      return true;
    default:
      return false;
  }
}

int64_t OperandBytes(const Instruction& i) {
  int64_t b = 0;
  for (const Instruction* o : i.operands()) b += Bytes(o->shape());
  return b;
}

}  // namespace

std::optional<CollectiveCost> CollectiveCostOf(const Instruction& i, int64_t num_devices) {
  CollectiveCost c;
  const Attributes& a = i.attrs();
  c.group = num_devices;
  if (a.replica_groups && !a.replica_groups->groups.empty()) {
    c.group = static_cast<int64_t>(a.replica_groups->groups.front().size());
  } else if (a.replica_groups && a.replica_groups->group_size > 0) {
    c.group = a.replica_groups->group_size;
  }
  const double g = static_cast<double>(std::max<int64_t>(c.group, 1));
  const double in = static_cast<double>(OperandBytes(i));
  switch (i.opcode()) {
    case Opcode::kAllGather: case Opcode::kAllGatherStart: {
      // The -start's result is a tuple (operands, results): count the gathered part.
      const double out = i.opcode() == Opcode::kAllGather ? static_cast<double>(Bytes(i.shape())) : in * g;
      c.kind = "all-gather", c.bytes = out * (g - 1) / g;
      return c;
    }
    case Opcode::kAllReduce: case Opcode::kAllReduceStart:
      c.kind = "all-reduce", c.bytes = 2 * in * (g - 1) / g;
      return c;
    case Opcode::kReduceScatter:
      c.kind = "reduce-scatter", c.bytes = in * (g - 1) / g;
      return c;
    case Opcode::kAllToAll: case Opcode::kRaggedAllToAll:
      c.kind = "all-to-all", c.bytes = in * (g - 1) / g;
      return c;
    case Opcode::kCollectiveBroadcast:
      c.kind = "all-gather", c.bytes = in;
      return c;
    case Opcode::kCollectivePermute: case Opcode::kCollectivePermuteStart: {
      c.kind = "collective-permute", c.bytes = in;
      // The group: the largest set of devices the pairs connect (a ring over an axis of 4: 4).
      std::unordered_map<int64_t, int64_t> up;
      auto find = [&](int64_t d) {
        up.try_emplace(d, d);
        while (up[d] != d) d = up[d] = up[up[d]];
        return d;
      };
      if (a.source_target_pairs) {
        for (const auto& [s, t] : *a.source_target_pairs) up[find(s)] = find(t);
      }
      std::unordered_map<int64_t, int64_t> sizes;
      c.group = 1;
      for (const auto& [d, parent] : up) c.group = std::max(c.group, ++sizes[find(d)]);
      return c;
    }
    default:
      return std::nullopt;
  }
}

namespace {

class Predictor {
 public:
  Predictor(const HardwareProfile& hw, int64_t n) : hw_(hw), n_(n) {}

  // Adds `computation` run `times` times.
  void Walk(const Computation& computation, double times, const std::string& where) {
    // Verified modules nest at most 256 deep; deeper (a cycle) is not priced.
    if (depth_ > 256) {
      p_.notes.push_back(StrCat(computation.name(), ": nested more than 256 deep, not counted"));
      return;
    }
    ++depth_;
    const std::vector<Instruction*> order = computation.MakeInstructionPostOrder();
    // Loops of a called computation are its own: keep the caller's while walking it.
    auto caller_loops = std::move(parent_);
    parent_.clear();
    for (const Instruction* i : order) {
      const Opcode op = i->opcode();
      if (Fusible(*i)) {
        Fuse(i);
        continue;
      }
      if (Free(op)) continue;
      if (op == Opcode::kWhile) {
        While(*i, times, where);
      } else if (op == Opcode::kCall || op == Opcode::kAsyncStart) {
        if (Computation* c = i->called(op == Opcode::kCall ? CallRole::kToApply : CallRole::kCalls)) Walk(*c, times, where);
      } else if (op == Opcode::kConditional) {
        Conditional(*i, times, where);
      } else if (std::optional<CollectiveCost> c = CollectiveCostOf(*i, n_)) {
        Add(i, times, where, hw_.CollectiveSeconds(c->kind, c->group, c->bytes, n_), &p_.communication_s,
            StrCat(c->kind, " over ", c->group, ", ", FormatBytes(static_cast<int64_t>(c->bytes)), " received"));
      } else if (op == Opcode::kDot || op == Opcode::kConvolution || op == Opcode::kFusion) {
        double flops = InstructionFlops(*i);
        DType type = i->operand_count() > 0 && i->operand(0)->shape().IsArray() ? i->operand(0)->shape().dtype() : DType::kF32;
        if (op == Opcode::kFusion && i->called(CallRole::kCalls) != nullptr) {
          for (const Instruction* f : i->called(CallRole::kCalls)->instructions()) flops += InstructionFlops(*f);
        }
        const double compute = op == Opcode::kConvolution ? hw_.ConvSeconds(type, flops, n_) : hw_.DotSeconds(type, flops, n_);
        const double memory = op == Opcode::kFusion ? hw_.MemorySeconds(static_cast<double>(OperandBytes(*i) + Bytes(i->shape())), n_) : 0;
        Add(i, times, where, compute, &p_.compute_s, flops > 0 ? StrCat(FormatFlops(flops), " FLOP") : "");
        // A fusion's bytes count as memory, in the same item.
        p_.memory_s += memory * times;
        items_.back().first += memory * times;
      } else {
        // Slicing ops read what they write; the rest read every operand.
        const bool slicing = op == Opcode::kSlice || op == Opcode::kDynamicSlice || op == Opcode::kGather;
        const double out = static_cast<double>(Bytes(i->shape()));
        // A dynamic-update-slice writes its update in place.
        const bool in_place = op == Opcode::kDynamicUpdateSlice && i->operand_count() > 1;
        const double read = slicing ? out : in_place ? static_cast<double>(Bytes(i->operand(1)->shape())) : static_cast<double>(OperandBytes(*i));
        const double written = in_place ? read : out;
        Add(i, times, where, hw_.MemorySeconds(read + written, n_), &p_.memory_s, "");
      }
    }
    FinishGroups(order, times, where);
    parent_ = std::move(caller_loops);
    --depth_;
  }

  StepPrediction Finish() {
    p_.overhead_s += hw_.StepOverheadSeconds(n_);
    p_.total_s = p_.compute_s + p_.memory_s + p_.communication_s + p_.overhead_s;
    std::stable_sort(items_.begin(), items_.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t k = 0; k < items_.size() && k < 5; ++k) p_.largest.push_back(items_[k]);
    return std::move(p_);
  }

 private:
  static std::string FormatFlops(double f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", f);
    return buf;
  }

  void Add(const Instruction* i, double times, const std::string& where, double seconds, double* bucket,
           const std::string& what) {
    *bucket += seconds * times;
    p_.overhead_s += hw_.OpOverheadSeconds(n_) * times;
    std::string label = StrCat(i->name(), ": ", i->shape().ToString(false), " ", OpcodeName(i->opcode()));
    if (!what.empty()) StrAppend(&label, " (", what, ")");
    if (!where.empty()) StrAppend(&label, " ", where);
    items_.push_back({seconds * times, std::move(label)});
  }

  // Union-find over fused instructions: a producer joins its users' loop unless something outside
  // the loop reads it or it is the root.
  const Instruction* Find(const Instruction* i) {
    while (parent_.at(i) != i) i = parent_[i] = parent_.at(parent_.at(i));
    return i;
  }
  void Fuse(const Instruction* i) {
    parent_.emplace(i, i);
    for (const Instruction* o : i->operands()) {
      if (FusibleProducer(*o) && parent_.count(o)) parent_[Find(o)] = Find(i);
    }
  }
  bool Materialized(const Instruction* i) const {
    if (i->IsRoot() || !FusibleProducer(*i)) return true;
    for (const Instruction* u : i->users()) {
      if (!Fusible(*u)) return true;
    }
    return false;
  }

  // Each loop: writes its materialized members, reads each outside input once.
  void FinishGroups(const std::vector<Instruction*>& order, double times, const std::string& where) {
    struct Group {
      double bytes = 0;
      double transcendentals = 0;  // elements
      int ops = 0;
      const Instruction* last = nullptr;
      std::unordered_set<const Instruction*> inputs;
    };
    std::unordered_map<const Instruction*, Group> groups;
    std::vector<const Instruction*> keys;
    for (const Instruction* i : order) {
      if (!parent_.count(i)) continue;
      const Instruction* root = Find(i);
      auto [it, fresh] = groups.try_emplace(root);
      if (fresh) keys.push_back(root);
      Group& g = it->second;
      ++g.ops;
      g.last = i;
      if (Transcendental(i->opcode())) g.transcendentals += static_cast<double>(i->shape().num_elements());
      if (Materialized(i)) g.bytes += static_cast<double>(Bytes(i->shape()));
      for (const Instruction* o : i->operands()) {
        if (parent_.count(o) && Find(o) == root) continue;
        if (g.inputs.insert(o).second) g.bytes += static_cast<double>(Bytes(o->shape()));
      }
    }
    for (const Instruction* k : keys) {
      const Group& g = groups[k];
      Add(g.last, times, where, hw_.MemorySeconds(g.bytes, n_), &p_.memory_s,
          g.ops > 1 ? StrCat("fused loop of ", g.ops, " ops, ", FormatBytes(static_cast<int64_t>(g.bytes))) : "");
      // Transcendental math counts as compute, in the same item.
      const double math = hw_.TranscendentalSeconds(g.transcendentals, n_) * times;
      p_.compute_s += math;
      items_.back().first += math;
    }
    parent_.clear();
  }

  void While(const Instruction& w, double times, const std::string& where) {
    int64_t trips = WhileTripCount(w);
    if (trips < 0) {
      p_.notes.push_back(StrCat(w.name(), ": trip count unknown, body counted once"));
      trips = 1;
    }
    const std::string inner = StrCat("(x", trips, " in ", w.name(), ")", where.empty() ? "" : " ", where);
    if (Computation* c = w.while_condition()) Walk(*c, times * static_cast<double>(trips + 1), inner);
    if (Computation* b = w.while_body()) Walk(*b, times * static_cast<double>(trips), inner);
  }

  void Conditional(const Instruction& c, double times, const std::string& where) {
    // The costliest branch, priced on its own.
    const Computation* best = nullptr;
    double best_s = -1;
    for (const Computation* b : c.branch_computations()) {
      Predictor trial(hw_, n_);
      trial.Walk(*b, 1, "");
      const StepPrediction s = trial.Finish();
      if (s.total_s - hw_.StepOverheadSeconds(n_) > best_s) best_s = s.total_s - hw_.StepOverheadSeconds(n_), best = b;
    }
    if (best != nullptr) Walk(*best, times, StrCat("(branch ", best->name(), " of ", c.name(), ")", where.empty() ? "" : " ", where));
  }

  const HardwareProfile& hw_;
  int64_t n_;
  int depth_ = 0;
  StepPrediction p_;
  std::vector<std::pair<double, std::string>> items_;
  std::unordered_map<const Instruction*, const Instruction*> parent_;
};

}  // namespace

StepPrediction PredictStep(const Module& spmd, const HardwareProfile& hw, int64_t num_devices) {
  Predictor predictor(hw, std::max<int64_t>(num_devices, 1));
  if (spmd.entry() != nullptr) predictor.Walk(*spmd.entry(), 1, "");
  return predictor.Finish();
}

std::string FormatPrediction(const StepPrediction& p) {
  std::string out = StrCat("predicted step: ", FormatSeconds(p.total_s), " (compute ", FormatSeconds(p.compute_s),
                           ", memory ", FormatSeconds(p.memory_s), ", communication ", FormatSeconds(p.communication_s),
                           ", overhead ", FormatSeconds(p.overhead_s), ")\n");
  if (!p.largest.empty()) StrAppend(&out, "  largest:\n");
  for (const auto& [s, what] : p.largest) StrAppend(&out, "    ", FormatSeconds(s), "  ", what, "\n");
  for (const std::string& n : p.notes) StrAppend(&out, "  note: ", n, "\n");
  return out;
}

}  // namespace xs::spmd
