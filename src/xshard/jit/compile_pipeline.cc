// CompileModule: shardy-import -> inline-calls -> gather-batch-dims -> global-cse -> split-constants -> propagate ->
// partition -> cse -> dce -> combine-all-reduces -> async-collectives, one ordered list of passes sharing one clone of
// the input and propagation's results.
#include "xshard/jit/compile_pipeline.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <string_view>

#include "xshard/base/limits.h"
#include "xshard/base/strings.h"
#include "xshard/passes/all_reduce_combine.h"
#include "xshard/passes/call_inline.h"
#include "xshard/passes/collective_schedule.h"
#include "xshard/passes/constant_split.h"
#include "xshard/passes/cse.h"
#include "xshard/passes/dce.h"
#include "xshard/passes/gather_batch_dims.h"
#include "xshard/spmd/report.h"
#include "xshard/spmd/shardy_import.h"
#include "xshard/text/printer.h"

namespace xs {
namespace {

// The pipeline's passes, in order. CompileModule runs each through PassSequence::Run, which
// checks that they come in this order, so the list and the code cannot drift apart.
constexpr std::string_view kPasses[] = {"shardy-import",
                                        "inline-calls",
                                        "gather-batch-dims",
                                        "global-cse",
                                        "split-constants",
                                        "propagate",
                                        "partition",
                                        "cse",
                                        "dce",
                                        "combine-all-reduces",
                                        "async-collectives"};

// Runs CompileModule's passes one after another: numbers them (from 1, for the dump files), dumps
// the module after each as the options ask, and names the pass in the errors of those that do not
// name an instruction themselves.
class PassSequence {
 public:
  explicit PassSequence(const DumpOptions& dump) : dump_(dump) {}

  // Pass `name` (the next of kPasses) on `*module`: runs `pass` when `enabled` (it returns whether
  // the module changed), then dumps `*module` (read after the pass, which may have created it).
  // A disabled pass keeps its number and is not dumped.
  Status Run(std::string_view name, bool enabled, const std::unique_ptr<Module>& module,
             const std::function<StatusOr<bool>()>& pass, bool name_errors = false) {
    ++index_;
    XS_CHECK(index_ <= static_cast<int>(std::size(kPasses)) && kPasses[index_ - 1] == name,
             "CompileModule runs pass '", name, "' out of the order of kPasses");
    if (!enabled) return OkStatus();
    StatusOr<bool> changed = pass();
    if (!changed.ok()) {
      return name_errors ? Annotate(changed.status(), StrCat("pass '", name, "': ")) : changed.status();
    }
    return DumpAfterPass(dump_, index_, name, *changed, *module);
  }

  bool Finished() const { return index_ == static_cast<int>(std::size(kPasses)); }

 private:
  const DumpOptions& dump_;
  int index_ = 0;
};

// Whether `pass` changed `module`, found by printing it before and after; only when a dump will
// show it (`look`), else false without printing.
StatusOr<bool> RunAndCompare(Module& module, bool look, const std::function<Status(Module&)>& pass) {
  const std::string before = look ? PrintHloModule(module) : std::string();
  XS_RETURN_IF_ERROR(pass(module));
  return look && PrintHloModule(module) != before;
}

// The report's records of the all-reduces each combined one replaced become one record: its
// name, the members' shapes as a tuple, their bytes summed, and every member's cause and reason.
void RecordCombined(spmd::PartitionReport& report, const std::vector<CombinedAllReduce>& combined) {
  for (const CombinedAllReduce& c : combined) {
    std::vector<spmd::CollectiveRecord> members;
    size_t first = report.collectives.size();
    for (const std::string& m : c.members) {
      auto it =
          std::find_if(report.collectives.begin(), report.collectives.end(), [&](const spmd::CollectiveRecord& r) {
            return r.computation == c.computation && r.name == m && r.kind == "all-reduce";
          });
      if (it == report.collectives.end()) continue;
      first = std::min(first, static_cast<size_t>(it - report.collectives.begin()));
      members.push_back(*it);
      report.collectives.erase(it);
    }
    if (members.empty()) continue;
    spmd::CollectiveRecord r = members.front();
    r.name = c.name;
    std::vector<Shape> shapes;
    std::string causes, reasons;
    r.bytes = 0;
    r.written = true;
    for (size_t k = 0; k < members.size(); ++k) {
      const spmd::CollectiveRecord& m = members[k];
      shapes.push_back(m.shape);
      r.bytes += m.bytes;
      r.written = r.written && m.written;
      StrAppend(&causes, k == 0 ? "" : ", %", m.cause);
      StrAppend(&reasons, k == 0 ? "" : "; ", "%", m.name, " (", m.written ? "written at" : "caused by", " %", m.cause,
                ": ", m.reason, ")");
    }
    r.shape = Shape::Tuple(std::move(shapes));
    r.cause = causes;
    r.reason = StrCat(members.size(), " all-reduces combined: ", reasons);
    report.collectives.insert(report.collectives.begin() + static_cast<std::ptrdiff_t>(first), std::move(r));
  }
}

}  // namespace

std::vector<std::string> CompilePassNames() { return {std::begin(kPasses), std::end(kPasses)}; }

StatusOr<CompiledModule> CompileModule(const Module& global, int64_t num_devices,
                                       const CompileOptions& options) {
  XS_RETURN_IF_ERROR(CheckDumpNames(options.dump, CompilePassNames()));
  if (num_devices < 1 || num_devices > kMaxDevices) {
    return InvalidArgument("the device count must be 1..", kMaxDevices, ", got ", num_devices);
  }
  if (global.config().replica_count > 1) {
    return Unsupported("module '", global.name(), "' has replica_count=",
                       global.config().replica_count, "; xshard partitions modules with one replica "
                       "(data parallelism is expressed with shardings over num_partitions)");
  }
  XS_RETURN_IF_ERROR(CheckPartitionInput(global, num_devices));  // the one Verify of the input
  CompiledModule out;
  out.global = global.Clone();
  Module& g = *out.global;
  std::unique_ptr<Module>& spmd = out.partitioned.module;
  const DumpOptions& dump = options.dump;
  PassSequence passes(dump);

  // JAX's default (Shardy) shard_map form becomes the GSPMD form the passes below read.
  XS_RETURN_IF_ERROR(passes.Run("shardy-import", true, out.global, [&] {
    return RunAndCompare(g, dump.Wants("shardy-import"), ImportShardyManualComputations);
  }));
  // Calls become part of their callers, as XLA inlines them before propagation: a value is then
  // sharded and resharded once across what were call boundaries.
  // Then every loop body, branch and remaining call has one call site (FlattenCallGraph), so
  // that each is sharded for its own caller.
  XS_RETURN_IF_ERROR(passes.Run(
      "inline-calls", true, out.global,
      [&]() -> StatusOr<bool> {
        bool inlined = false;
        if (options.inline_calls) {
          XS_ASSIGN_OR_RETURN(inlined, InlineCalls(g));
        }
        XS_ASSIGN_OR_RETURN(const bool flattened, FlattenCallGraph(g));
        return inlined || flattened;
      },
      /*name_errors=*/true));
  // Batch dims that gathers and scatters spell out with an iota (JAX before batching dims,
  // PyTorch/XLA's torch.gather) become explicit, so that propagation and the partitioner keep them sharded.
  XS_RETURN_IF_ERROR(passes.Run(
      "gather-batch-dims", true, out.global, [&] { return MakeGatherBatchDimsExplicit(g); }, /*name_errors=*/true));
  // Equal subexpressions of the global module become one before anything is sharded, as XLA runs
  // CSE before its partitioner: JAX writes an expression once per use (two norms of one slice
  // make two slices and two SVDs of it), and each copy would be partitioned, and its operands
  // moved, on its own. Values computed from constants and iotas stay apart: each copy is
  // computed in the sharding its own users want.
  XS_RETURN_IF_ERROR(passes.Run(
      "global-cse", options.cleanup, out.global,
      [&] { return EliminateCommonSubexpressions(g, CseOptions{.keep_generated_values = true}); },
      /*name_errors=*/true));
  // Each use of a constant expression gets its own copy (Shardy's constant splitter), so that a
  // broadcast of 0 shared by a sharded and a replicated comparison does not carry the one's
  // sharding to the other; the cse below merges the copies that end up alike.
  XS_RETURN_IF_ERROR(passes.Run(
      "split-constants", options.partition.propagate, out.global, [&] { return SplitConstantExpressions(g); },
      /*name_errors=*/true));
  XS_RETURN_IF_ERROR(passes.Run("propagate", options.partition.propagate, out.global, [&]() -> StatusOr<bool> {
    XS_ASSIGN_OR_RETURN(out.propagation,
                        PropagateForPartitioning(g, num_devices, options.partition.propagation));
    return true;
  }));
  XS_RETURN_IF_ERROR(passes.Run("partition", true, spmd, [&]() -> StatusOr<bool> {
    XS_ASSIGN_OR_RETURN(out.partitioned, PartitionModule(g, num_devices, options.partition,
                                                         out.propagation ? &*out.propagation : nullptr));
    return true;
  }));
  XS_RETURN_IF_ERROR(passes.Run("cse", options.cleanup, spmd,
                                [&] { return EliminateCommonSubexpressions(*spmd); }, /*name_errors=*/true));
  XS_RETURN_IF_ERROR(passes.Run("dce", options.cleanup, spmd, [&] { return RemoveDeadCode(*spmd); },
                                /*name_errors=*/true));
  // The report describes the program that runs (collectives the cleanup deleted are dropped),
  // once, before the schedule turns the collectives into start / done pairs.
  spmd::DescribeFinalProgram(out.partitioned.report, *spmd);
  const bool combine = options.combine_all_reduce_bytes > 0 && !options.async_collectives;
  XS_RETURN_IF_ERROR(passes.Run(
      "combine-all-reduces", combine, spmd,
      [&]() -> StatusOr<bool> {
        XS_ASSIGN_OR_RETURN(std::vector<CombinedAllReduce> combined,
                            CombineAllReduces(*spmd, options.combine_all_reduce_bytes));
        RecordCombined(out.partitioned.report, combined);
        return !combined.empty();
      },
      /*name_errors=*/true));
  XS_RETURN_IF_ERROR(passes.Run("async-collectives", options.async_collectives, spmd,
                                [&] { return ScheduleAsyncCollectives(*spmd); }, /*name_errors=*/true));
  XS_CHECK(passes.Finished(), "CompileModule left passes of kPasses out");
  return out;
}

}  // namespace xs
