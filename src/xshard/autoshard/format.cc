// The printed form of a plan and of the search that chose it.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "xshard/autoshard/autoshard.h"
#include "xshard/base/strings.h"
#include "xshard/spmd/cost_model.h"

namespace xs::autoshard {
namespace {

// Devices in one group of "{{0,2},{1,3}}" (2 for permute pairs and unreadable text).
int64_t GroupSize(const std::string& groups) {
  const size_t open = groups.find('{', 1);
  if (open == std::string::npos) return 2;
  const size_t close = groups.find('}', open);
  if (close == std::string::npos) return 2;
  const std::string first = groups.substr(open + 1, close - open - 1);
  return first.empty() ? 1 : 1 + static_cast<int64_t>(std::count(first.begin(), first.end(), ','));
}

void PrintTensors(std::ostringstream& os, const char* title, const std::vector<PlannedTensor>& tensors) {
  size_t wn = 0, ws = 0;
  for (const PlannedTensor& t : tensors) {
    wn = std::max(wn, t.name.size());
    ws = std::max(ws, t.shape.ToString(false).size());
  }
  os << "  " << title << ":\n";
  for (const PlannedTensor& t : tensors) {
    const std::string shape = t.shape.ToString(false);
    os << "    " << t.name << std::string(wn - t.name.size() + 2, ' ') << shape
       << std::string(ws - shape.size() + 2, ' ') << t.spec << "\n";
  }
}

}  // namespace

std::string FormatEvaluation(const PlanEvaluation& plan) {
  std::ostringstream os;
  os << "plan: " << plan.label << "\n";
  PrintTensors(os, "parameters", plan.parameters);
  PrintTensors(os, "outputs", plan.outputs);
  os << "  predicted step time: " << spmd::FormatSeconds(plan.seconds) << "\n";
  os << "  peak memory per device: " << spmd::FormatBytes(plan.peak_bytes) << " (unpartitioned: "
     << spmd::FormatBytes(plan.report.before.peak_bytes) << ")\n";
  os << "  collectives: " << plan.report.collectives.size() << ", "
     << spmd::FormatBytes(plan.report.TotalCollectiveBytes()) << " received per device\n";
  return os.str();
}

std::string FormatResult(const AutoshardResult& result, const CostFunctions& cost) {
  std::ostringstream os;
  os << FormatEvaluation(result.plan);
  for (const spmd::CollectiveRecord& c : result.plan.report.collectives) {
    const int64_t g = c.kind == "collective-permute" ? 2 : GroupSize(c.explicit_groups.ToString());
    const double s = cost.collective(c.kind, g, static_cast<double>(c.bytes));
    os << "    " << c.kind << " " << c.shape.ToString(false) << ", " << spmd::FormatBytes(c.bytes) << " over " << g
       << " devices, ~" << spmd::FormatSeconds(s) << ": " << c.cause;
    if (!c.reason.empty()) os << " (" << c.reason << ")";
    os << "\n";
  }
  os << "candidates (compiled and priced):";
  for (const PlanEvaluation& c : result.candidates) {
    os << "\n  " << c.label << ": " << spmd::FormatSeconds(c.seconds) << ", peak " << spmd::FormatBytes(c.peak_bytes)
       << (c.label == result.plan.label ? "  <- chosen" : "");
  }
  const SearchStats& st = result.stats;
  char line[512];
  std::snprintf(line, sizeof(line),
                "\nsearch: %d instructions in %d groups, %d classes after tying repeated layers, %d strategies; "
                "program of %d variables, %d rows; %s in %.3f s%s; search estimate %s; total %.2f s\n",
                st.instructions, st.groups, st.classes, st.strategies, st.variables, st.rows, st.method.c_str(),
                st.solve_seconds, st.optimal ? " (optimal)" : "", spmd::FormatSeconds(st.objective).c_str(),
                st.total_seconds);
  os << line;
  for (const std::string& n : result.notes) os << "note: " << n << "\n";
  return os.str();
}

}  // namespace xs::autoshard
