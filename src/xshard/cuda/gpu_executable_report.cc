// GpuPlan: phase 1 over exec's program (gpu_executable_plan.cc) and its report: actions by
// kind, unsupported steps with their reasons, memory, and whether a CUDA graph can replay it.
#include <cstdio>
#include <set>

#include "xshard/cuda/gpu_executable.h"
#include "xshard/cuda/gpu_executable_plan.h"

namespace xs::cuda {

Status PlanProgram(const Module& module, const Program& program, GpuPlanData& data);  // plan.cc

GpuPlan::GpuPlan(const Executable& e, const GpuPlanOptions& o)
    : executable_(e), options_(o), data_(std::make_unique<GpuPlanData>()) {}

GpuPlan::~GpuPlan() = default;

StatusOr<std::unique_ptr<GpuPlan>> GpuPlan::Create(const Executable& executable,
                                                   const GpuPlanOptions& options) {
  std::unique_ptr<GpuPlan> plan(new GpuPlan(executable, options));
  const Program& fused = executable.program();
  const Program& program = options.fusion || fused.unfused == nullptr ? fused : *fused.unfused;
  XS_RETURN_IF_ERROR(PlanProgram(executable.module(), program, *plan->data_));
  GpuPlanReport& r = plan->report_;
  std::set<std::string> sources;
  // Computations in post order, so a callee's unsupported steps come before its caller's.
  for (const Computation* comp : executable.module().MakeComputationPostOrder()) {
    const ComputationPlan* p = program.Get(comp);
    if (p == nullptr) continue;
    auto it = plan->data_->computations.find(p);
    if (it == plan->data_->computations.end()) continue;  // never run as a frame (a reducer, ...)
    const GpuComputation& c = *it->second;
    for (const Action& a : c.actions) {
      ++r.actions[std::string(ActionKindName(a.kind))];
      for (const PlannedKernel& k : a.kernels) sources.insert(k.kernel.source.name);
      if (a.kind == ActionKind::kUnsupported) {
        r.unsupported.push_back({a.step->inst->name(), std::string(OpcodeName(a.step->inst->opcode())), a.why});
      }
      if (r.graph_blocker.empty() && (a.kind == ActionKind::kWhile || a.kind == ActionKind::kConditional)) {
        r.graph_blocker = StrCat(OpcodeName(a.step->inst->opcode()), " '", a.step->inst->name(),
                                 "' (host-driven: its predicate or branch index is read on the host)");
      }
    }
  }
  r.kernels = static_cast<int64_t>(sources.size());
  r.arena_bytes = plan->data_->entry->frame_bytes;
  r.constant_bytes = static_cast<int64_t>(plan->data_->constants.size());
  r.graph_capturable = r.graph_blocker.empty();
  return plan;
}

Status GpuPlan::Supported() const {
  if (report_.unsupported.empty()) return OkStatus();
  const GpuPlanReport::Unsupported& u = report_.unsupported.front();
  std::string more;
  if (report_.unsupported.size() > 1) more = StrCat(" (and ", report_.unsupported.size() - 1, " more step(s))");
  return Unimplemented("unsupported on the GPU: instruction '", u.instruction, "' (", u.opcode, "): ", u.why, more);
}

std::string ChromeTraceEvents(const GpuRunStats& stats, int pid, int64_t tid) {
  std::string out;
  for (const GpuStepTime& t : stats.steps) {
    std::string name;
    for (char ch : t.name) {
      if (ch == '"' || ch == '\\') name += '\\';
      name += ch;
    }
    char buf[160];
    std::snprintf(buf, sizeof(buf), "\",\"ph\":\"X\",\"pid\":%d,\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f},\n", pid,
                  static_cast<long long>(tid), stats.host_start_us + t.start_us, t.duration_us);
    out += "{\"name\":\"" + name + buf;
  }
  return out;
}

}  // namespace xs::cuda
