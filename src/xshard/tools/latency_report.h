// Seed 004's latency report, shared by `xshard bench run` and `xshard bench cmm`: mean, median,
// stdev, min, max, p95 and p99 of timed calls, in ms.
#ifndef XSHARD_TOOLS_LATENCY_REPORT_H_
#define XSHARD_TOOLS_LATENCY_REPORT_H_

#include <ostream>
#include <vector>

namespace xs::tools {

struct LatencyStats {
  double mean = 0, median = 0, stdev = 0, min = 0, max = 0, p95 = 0, p99 = 0;
};

// Statistics of `ms` (non-empty): stdev is the sample stdev (Python's statistics.stdev, 0 for
// one sample), percentiles interpolate like numpy.percentile's default.
LatencyStats ComputeLatencyStats(const std::vector<double>& ms);

// numpy.percentile's default (linear interpolation between the closest ranks) on sorted values.
double Percentile(const std::vector<double>& sorted, double q);

// "Results:" and one "  Mean:      1.234 ms" row per statistic.
void PrintLatencyTable(std::ostream& out, const LatencyStats& stats);

}  // namespace xs::tools

#endif  // XSHARD_TOOLS_LATENCY_REPORT_H_
