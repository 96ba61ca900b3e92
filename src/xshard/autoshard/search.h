// The search proper: the entry's strategy graph (elementwise chains joined into groups), its
// 0-1 program (one choice per group, reshard costs on edges between groups, memory rows at the
// peaks of liveness) and the chosen split of every planned instruction.
#ifndef XSHARD_AUTOSHARD_SEARCH_H_
#define XSHARD_AUTOSHARD_SEARCH_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "xshard/autoshard/autoshard.h"
#include "xshard/autoshard/strategy.h"
#include "xshard/base/status.h"
#include "xshard/ir/computation.h"

namespace xs::autoshard {

// Limits on an instruction's strategies: `allowed(inst, strategy)` false removes one (kept
// annotations, forbidden axes). An instruction left with none is an error naming it.
using StrategyFilter = std::function<bool(const Instruction&, const Strategy&)>;

struct SearchOutcome {
  std::map<const Instruction*, DimAxes> chosen;  // every planned entry instruction
  // Other local optima of the search (CoarseSolution::alternatives), with their estimates.
  std::vector<std::map<const Instruction*, DimAxes>> alternatives;
  std::vector<double> alternative_estimates;
  SearchStats stats;
  std::vector<std::string> notes;
};

StatusOr<SearchOutcome> SearchShardings(const Computation& entry, const AutoshardOptions& options,
                                        const StrategyFilter& allowed);

}  // namespace xs::autoshard

#endif  // XSHARD_AUTOSHARD_SEARCH_H_
