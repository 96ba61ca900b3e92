// Formatting of the cost model's time estimates.
#include "xshard/spmd/cost_model.h"

#include <cstdio>

namespace xs::spmd {

std::string FormatSeconds(double seconds) {
  const char* unit = "s";
  double v = seconds;
  if (seconds < 1e-6) {
    v = seconds * 1e9, unit = "ns";
  } else if (seconds < 1e-3) {
    v = seconds * 1e6, unit = "us";
  } else if (seconds < 1) {
    v = seconds * 1e3, unit = "ms";
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, unit);
  return buf;
}

}  // namespace xs::spmd
