// Pipeline: runs an ordered list of passes over a module (Halide's Lower.cpp style), optionally
// printing the module after a named pass or after each one, so that a user can see what each
// step did. The whole compiler (shardy-import -> inline-calls -> propagate -> partition -> cse ->
// dce -> async-collectives) is such a list, with the same dumps: jit/compile_pipeline.h.
#ifndef XSHARD_PASSES_PIPELINE_H_
#define XSHARD_PASSES_PIPELINE_H_

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/passes/pass.h"

namespace xs {

// Where and after which passes the module is printed (`--dump-after PASS`, `--dump-after-each`).
struct DumpOptions {
  std::vector<std::string> after;  // pass names
  bool after_each = false;
  // Dumps go to `directory` (one file per dump, "<NN>-<pass>.hlo", NN the pass's position from
  // 01) when it is set, else to `stream` (std::cerr when null) as
  // "// after <pass> (changed|unchanged):" followed by the module text.
  std::string directory;
  std::ostream* stream = nullptr;

  bool Wants(std::string_view pass) const;
  bool enabled() const { return after_each || !after.empty(); }
};

// Checks that every name in options.after is one of `passes` (InvalidArgument naming the unknown
// name and listing the passes otherwise).
Status CheckDumpNames(const DumpOptions& options, const std::vector<std::string>& passes);

// Prints `module` after pass `pass` (position `index`, from 1) when `options` asks for it. Errors:
// a dump file that cannot be written (named).
Status DumpAfterPass(const DumpOptions& options, int index, std::string_view pass, bool changed,
                     const Module& module);

struct PipelineOptions {
  // When set, "// after <pass> (changed|unchanged):" and the module text follow each pass.
  std::ostream* dump_after_each = nullptr;
  // Dumps by pass name (used in addition to dump_after_each).
  DumpOptions dump;
  // Position of the first pass in a larger pipeline (dump file numbering).
  int first_index = 1;
};

// Runs `passes` in order; the first error is returned with the pass name in front.
Status RunPipeline(Module& module, const std::vector<Pass>& passes, const PipelineOptions& options = {});

// The cleanup the partitioner's output gets: cse, then dce.
std::vector<Pass> CleanupPasses();

}  // namespace xs

#endif  // XSHARD_PASSES_PIPELINE_H_
