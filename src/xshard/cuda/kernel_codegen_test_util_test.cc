// Implementation of kernel_codegen_test_util.h's planned-module helpers: planning modules for the
// GPU, compiling their kernels for sm_90 and the host emulator, and checking the host runs against
// the CPU executor (test binary only; holds no tests).
#ifdef XSHARD_WITH_CUDA

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/ir/verifier.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs::cuda::testing {

namespace {

// Parses, verifies and plans for the CPU; the GPU plan only when `gpu`.
StatusOr<PlannedModule> Plan(const std::string& name, const std::string& text, bool gpu) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, name);
  if (!m.ok()) return m.status().WithMessage(name + ": parse: " + m.status().message() + "\n" + text.substr(0, 2000));
  const Status verified = Verify(**m);
  if (!verified.ok()) return Annotate(verified, name + ": verify: ");
  StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
  if (!e.ok()) return Annotate(e.status(), name + ": Executable::Create: ");
  if (!gpu) return PlannedModule{name, std::move(*m), std::move(*e), nullptr};
  StatusOr<std::unique_ptr<GpuPlan>> plan = GpuPlan::Create(**e);
  if (!plan.ok()) return Annotate(plan.status(), name + ": GpuPlan::Create: ");
  const Status supported = (*plan)->Supported();
  if (!supported.ok()) return Annotate(supported, name + ": GpuPlan::Supported: ");
  return PlannedModule{name, std::move(*m), std::move(*e), std::move(*plan)};
}

}  // namespace

StatusOr<PlannedModule> PlanForGpu(const std::string& name, const std::string& text) {
  return Plan(name, text, /*gpu=*/true);
}

StatusOr<PlannedModule> PlanForHost(const std::string& name, const std::string& text) {
  return Plan(name, text, /*gpu=*/false);
}

StatusOr<PlannedModule> PlanFileForGpu(const std::string& path) {
  const std::string text = xs::testing::ReadTextFile(path);
  if (text.empty()) return NotFound(path, ": empty or unreadable; check the path (and the corpus directory)");
  return PlanForGpu(path, text);
}

StatusOr<std::vector<PlannedModule>> PlanFilesForGpu(const std::string& dir, std::span<const std::string> files) {
  std::vector<PlannedModule> out;
  for (const std::string& f : files) {
    XS_ASSIGN_OR_RETURN(PlannedModule p, PlanFileForGpu(dir.empty() ? f : dir + "/" + f));
    out.push_back(std::move(p));
  }
  return out;
}

StatusOr<GeneratedKernel> OneRootKernel(const PlannedModule& p, const std::string& strategy) {
  StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*p.module->entry()->root(), /*in_place=*/false);
  if (!ks.ok()) return Annotate(ks.status(), p.name + ": GenerateOpKernels: ");
  if (ks->size() != 1) {
    return InvalidArgument(p.name, ": GenerateOpKernels gave ", ks->size(), " kernels for the root, not 1");
  }
  if (!strategy.empty() && (*ks)[0].strategy != strategy) {
    return InvalidArgument(p.name, ": the root's kernel has strategy '", (*ks)[0].strategy, "', not '", strategy, "'");
  }
  return std::move((*ks)[0]);
}

Status PlanWithRootKernel(const std::string& name, const std::string& text, const std::string& root_strategy,
                          std::vector<PlannedModule>& out, std::vector<GeneratedKernel>& root_kernels) {
  XS_ASSIGN_OR_RETURN(PlannedModule p, PlanForGpu(name, text));
  if (!root_strategy.empty()) {
    XS_ASSIGN_OR_RETURN(GeneratedKernel k, OneRootKernel(p, root_strategy));
    root_kernels.push_back(std::move(k));
  }
  out.push_back(std::move(p));
  return OkStatus();
}

StatusOr<std::vector<Array>> RunRootOnHost(const std::string& text,
                                           const std::function<std::vector<Array>(const Executable&)>& args) {
  XS_ASSIGN_OR_RETURN(PlannedModule p, PlanForHost("module", text));
  StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*p.module->entry()->root(), /*in_place=*/false);
  if (!ks.ok()) return Annotate(ks.status(), "GenerateOpKernels: ");
  XS_ASSIGN_OR_RETURN(std::unique_ptr<HostKernels> host, CompileAndBuildForHost({}, *ks, Nvrtc::kSkip));
  return RunOnHost(*p.exe, args(*p.exe), *host);
}

StatusOr<std::unique_ptr<HostKernels>> CompileAndBuildForHost(std::span<const PlannedModule> plans,
                                                              std::span<const GeneratedKernel> extra, Nvrtc nvrtc) {
  std::vector<GeneratedKernel> all;
  for (const PlannedModule& p : plans) {
    if (p.plan == nullptr) continue;
    for (GeneratedKernel& k : PlanKernels(*p.plan)) all.push_back(std::move(k));
  }
  all.insert(all.end(), extra.begin(), extra.end());
  if (nvrtc == Nvrtc::kCompile) {
    NoDiskCache no_cache;
    const Status compiled = CompileAll(all, 64);
    if (!compiled.ok()) {
      return compiled.WithMessage("NVRTC for sm_90: " + compiled.message().substr(0, 4000));
    }
  }
  StatusOr<std::unique_ptr<HostKernels>> host = HostKernels::Build(all);
  if (!host.ok()) return Annotate(host.status(), "host emulator build: ");
  return host;
}

std::string CompareAndBits(const Array& got, const Array& want) {
  std::string diff = Compare(got, want);
  if (!diff.empty()) return diff;
  if (got.byte_size() == want.byte_size() && std::memcmp(got.data(), want.data(), want.byte_size()) != 0) {
    return "equal within Compare's tolerance but differs in its bits";
  }
  return "";
}

std::vector<std::string> CheckPlansAgainstTheCpu(
    std::span<const PlannedModule> plans, HostKernels& host,
    const std::function<std::vector<Array>(const PlannedModule& plan, size_t index)>& args,
    const CheckOptions& options) {
  std::vector<std::string> out;
  for (size_t index = 0; index < plans.size(); ++index) {
    const PlannedModule& p = plans[index];
    const std::vector<Array> a = args(p, index);
    StatusOr<std::vector<Array>> want = p.exe->Run(a);
    if (!want.ok()) {
      out.push_back(p.name + ": the CPU executor: " + want.status().message());
      continue;
    }
    std::vector<std::pair<std::string, StatusOr<std::vector<Array>>>> runs;
    if (options.op_alone || p.plan == nullptr) runs.emplace_back("RunOnHost", RunOnHost(*p.exe, a, host));
    if (p.plan != nullptr) runs.emplace_back("RunPlanOnHost", RunPlanOnHost(*p.plan, a, host));
    for (const auto& [run, got] : runs) {
      if (!got.ok()) {
        out.push_back(p.name + ": " + run + ": " + got.status().message());
        continue;
      }
      if (got->size() != want->size()) {
        out.push_back(p.name + ": " + run + ": " + std::to_string(got->size()) + " results, the CPU has " +
                      std::to_string(want->size()));
        continue;
      }
      for (size_t r = 0; r < want->size(); ++r) {
        const std::string diff =
            options.check ? options.check(index, (*got)[r], (*want)[r]) : Compare((*got)[r], (*want)[r]);
        if (!diff.empty()) out.push_back(p.name + ": " + run + " result " + std::to_string(r) + ": " + diff);
      }
    }
  }
  return out;
}

}  // namespace xs::cuda::testing

#endif  // XSHARD_WITH_CUDA
