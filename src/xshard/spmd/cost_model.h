// The partitioner's machine model: what a collective and a FLOP cost in time on the target, so
// that candidate plans are scored by estimated time (communication plus compute), not bytes alone.
#ifndef XSHARD_SPMD_COST_MODEL_H_
#define XSHARD_SPMD_COST_MODEL_H_

#include <cstdint>
#include <string>

namespace xs::spmd {

// Per-device figures of the target. The defaults were measured on the development machine (2
// cores, 8 in-process devices; `xshard bench collectives`, `build/bench/gemm_bench`; README "How
// the partitioner picks a plan"): each device receives about 1.5 GB/s in a collective all devices
// run at once, a collective has about 20 us of fixed cost, and a device's share of the cores
// multiplies about 9 GFLOP/s (72 GFLOP/s of f32 GEMM over 8 devices).
struct MachineModel {
  double link_gbps = 1.5;             // GB/s (1e9 bytes) received per device
  double collective_latency_us = 20;  // fixed cost of one collective
  double device_gflops = 9;           // GFLOP/s of one device

  friend bool operator==(const MachineModel&, const MachineModel&) = default;
  // Estimated seconds for a step that receives `bytes` per device in `collectives` collectives
  // and computes `flops` per device.
  double Seconds(double bytes, int64_t collectives, double flops) const {
    return bytes / (link_gbps * 1e9) + static_cast<double>(collectives) * collective_latency_us * 1e-6 +
           flops / (device_gflops * 1e9);
  }
};

// "1.23 ms", "45.6 us", "789 ns" (3 significant digits).
std::string FormatSeconds(double seconds);

}  // namespace xs::spmd

#endif  // XSHARD_SPMD_COST_MODEL_H_
