// `xshard numerics GOT.npy WANT.npy [--atol A] [--rtol R] [--threshold T] [--blocks 2,2]
// [--equal-nan]`: the numerics report of core/numerics.h on two .npy files; exit 0 when allclose.
#include <iostream>
#include <memory>

#include "xshard/core/npy.h"
#include "xshard/core/numerics.h"
#include "xshard/jit/host_memory.h"
#include "xshard/tools/cli.h"

namespace xs::tools {
namespace {

struct NumericsFlags {
  std::string got, want;
  double atol = 1e-8, rtol = 1e-5;
  std::optional<double> threshold;
  std::string blocks;
  bool equal_nan = false;
};

Status RunNumerics(const NumericsFlags& f) {
  NumericsOptions options;
  options.atol = f.atol;
  options.rtol = f.rtol;
  options.threshold = f.threshold;
  options.equal_nan = f.equal_nan;
  XS_ASSIGN_OR_RETURN(options.blocks, ParseIntList(f.blocks, "--blocks"));
  for (int64_t b : options.blocks) {
    if (b < 1) {
      return InvalidArgument("--blocks: block count ", b, " in '", f.blocks,
                             "' is not >= 1; give a block count per trailing dim, like 2,2");
    }
  }
  // Both files' data must fit the host memory together: checked from their headers, before reading.
  int64_t read_bytes = 0;
  auto fits = [&read_bytes](const std::string& path) {
    return [&read_bytes, path](const NpyHeader& h) {
      read_bytes += h.data_bytes;
      return CheckHostBytes(read_bytes, StrCat("reading '", path, "'"));
    };
  };
  XS_ASSIGN_OR_RETURN(Array got, ReadNpy(f.got, std::nullopt, fits(f.got)));
  XS_ASSIGN_OR_RETURN(Array want, ReadNpy(f.want, std::nullopt, fits(f.want)));
  StatusOr<NumericsReport> report = CompareNumerics(got, want, options);
  if (!report.ok()) return Annotate(report.status(), StrCat(f.got, " vs ", f.want, ": "));
  std::cout << FormatNumericsReport(*report);
  if (!report->allclose) {
    return FailedPrecondition(f.got, " is not close to ", f.want, ": ", report->not_close, " of ",
                              report->elements, " elements differ by more than atol + rtol * |want|",
                              report->nan_mismatches ? " or hold a NaN" : "");
  }
  return OkStatus();
}

}  // namespace

void AddNumericsCommand(CLI::App& root, CommandList& commands) {
  auto flags = std::make_shared<NumericsFlags>();
  CLI::App* cmd = root.add_subcommand(
      "numerics",
      "Compare GOT.npy with the reference WANT.npy (same dims; any float dtypes, or equal integer\n"
      "dtypes): allclose verdict (numpy: |got - want| <= atol + rtol * |want|; NaN is never close\n"
      "unless --equal-nan), max / mean / median abs diff, max rel diff, the elements counted as\n"
      "errors (not close, or |got - want| > --threshold), the rows and columns of the last two dims\n"
      "holding them, the worst element with both values and, with --blocks, per-block statistics.\n"
      "Exit code 0 when allclose, 1 when not (after the report) or on any error.");
  cmd->add_option("got", flags->got, "The array to check (.npy)")->required();
  cmd->add_option("want", flags->want, "The reference (.npy)")->required();
  cmd->add_option("--atol", flags->atol, "Absolute tolerance (default 1e-08, numpy's)")
      ->check(FiniteNonNegativeCheck());
  cmd->add_option("--rtol", flags->rtol, "Relative tolerance, times |want| (default 1e-05, numpy's)")
      ->check(FiniteNonNegativeCheck());
  cmd->add_option("--threshold", flags->threshold,
                  "Count as errors the elements with |got - want| > T (default: those not close)")
      ->check(FiniteNonNegativeCheck());
  cmd->add_option("--blocks", flags->blocks,
                  "Block grid over the trailing dims, e.g. 2,2 for quadrants (split like\n"
                  "numpy.array_split); prints statistics per block");
  cmd->add_flag("--equal-nan", flags->equal_nan, "NaN in both arrays at an element counts as close");
  commands.push_back({cmd, [flags] { return RunNumerics(*flags); }});
}

}  // namespace xs::tools
