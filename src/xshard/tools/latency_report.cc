// Seed 004's latency report: statistics of timed calls and their printed table.
#include "xshard/tools/latency_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace xs::tools {

double Percentile(const std::vector<double>& sorted, double q) {
  const double rank = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (rank - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

LatencyStats ComputeLatencyStats(const std::vector<double>& ms) {
  LatencyStats s;
  if (ms.empty()) return s;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(ms.size());
  for (double t : ms) s.mean += t / n;
  double var = 0;
  for (double t : ms) var += (t - s.mean) * (t - s.mean);
  s.stdev = ms.size() > 1 ? std::sqrt(var / (n - 1)) : 0.0;  // statistics.stdev
  s.median = Percentile(sorted, 50);
  s.min = sorted.front();
  s.max = sorted.back();
  s.p95 = Percentile(sorted, 95);
  s.p99 = Percentile(sorted, 99);
  return s;
}

void PrintLatencyTable(std::ostream& out, const LatencyStats& s) {
  out << "Results:\n";
  auto row = [&out](const char* label, double v) {
    char line[64];
    std::snprintf(line, sizeof line, "  %-8s%10.3f ms\n", label, v);
    out << line;
  };
  row("Mean:", s.mean);
  row("Median:", s.median);
  row("Stdev:", s.stdev);
  row("Min:", s.min);
  row("Max:", s.max);
  row("P95:", s.p95);
  row("P99:", s.p99);
}

}  // namespace xs::tools
