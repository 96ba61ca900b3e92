// RunPipeline, the module dumps between passes and the standard pass lists.
#include "xshard/passes/pipeline.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "xshard/base/strings.h"
#include "xshard/core/npy.h"
#include "xshard/passes/cse.h"
#include "xshard/passes/dce.h"
#include "xshard/text/printer.h"

namespace xs {

bool DumpOptions::Wants(std::string_view pass) const {
  return after_each || std::find(after.begin(), after.end(), pass) != after.end();
}

Status CheckDumpNames(const DumpOptions& options, const std::vector<std::string>& passes) {
  for (const std::string& name : options.after) {
    if (std::find(passes.begin(), passes.end(), name) == passes.end()) {
      return InvalidArgument("--dump-after: no pass named '", name, "'; the passes are ",
                             StrJoin(passes, ", "));
    }
  }
  return OkStatus();
}

Status DumpAfterPass(const DumpOptions& options, int index, std::string_view pass, bool changed,
                     const Module& module) {
  if (!options.Wants(pass)) return OkStatus();
  const std::string header =
      StrCat("// after ", pass, changed ? " (changed)" : " (unchanged)", ":\n");
  if (!options.directory.empty()) {
    char number[16];
    std::snprintf(number, sizeof(number), "%02d", index);
    const std::string path = StrCat(options.directory, "/", number, "-", pass, ".hlo");
    // Through a temporary file renamed when complete: a stopped run leaves no half-written dump.
    const Status written = WriteFileAtomically(path, StrCat(header, PrintHloModule(module)));
    if (!written.ok()) {
      return InvalidArgument("cannot write the dump file '", path, "': ", written.message(),
                             " (does the directory exist?)");
    }
    return OkStatus();
  }
  std::ostream& out = options.stream != nullptr ? *options.stream : std::cerr;
  out << header << PrintHloModule(module);
  return OkStatus();
}

Status RunPipeline(Module& module, const std::vector<Pass>& passes, const PipelineOptions& options) {
  int index = options.first_index;
  for (const Pass& pass : passes) {
    StatusOr<bool> changed = pass.run(module);
    if (!changed.ok()) return Annotate(changed.status(), StrCat("pass '", pass.name, "': "));
    if (options.dump_after_each != nullptr) {
      *options.dump_after_each << "// after " << pass.name << (*changed ? " (changed)" : " (unchanged)")
                               << ":\n" << PrintHloModule(module);
    }
    XS_RETURN_IF_ERROR(DumpAfterPass(options.dump, index, pass.name, *changed, module));
    ++index;
  }
  return OkStatus();
}

std::vector<Pass> CleanupPasses() {
  return {Pass{"cse", [](Module& m) { return EliminateCommonSubexpressions(m); }}, Pass{"dce", RemoveDeadCode}};
}

}  // namespace xs
