// The partitioner's machine model: what a collective and a FLOP cost in time on the target, so
// that candidate plans are scored by estimated time (communication plus compute), not bytes alone.
#ifndef XSHARD_SPMD_COST_MODEL_H_
#define XSHARD_SPMD_COST_MODEL_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace xs::spmd {

// Per-device figures of the target: a device with a core of its own (or a GPU), the way a
// partitioned program is deployed. Measured on the development machine (a 2-core AVX-512 AMD
// EPYC; `xshard bench collectives`, `build/bench/gemm_bench`; README "How the partitioner picks a
// plan"): a group collective (all-gather, all-reduce, reduce-scatter, all-to-all, broadcast)
// between devices that each have a core has 0.4-1 us of fixed cost (256 B and 4 KiB on 2
// devices), 2 us is taken for groups of up to 16; a collective-permute (each device waits on one
// peer, not on the group) about 0.4 of that; each device receives about 1.5 GB/s when all devices
// exchange at once; one core runs a large f32 GEMM at 103-108 GFLOP/s, and 36 is taken for the
// small dots plans are decided on and for cores without AVX-512. Virtual devices that outnumber
// the cores pay thread switches and share the FLOPs (8 devices on 2 cores: 10-30 us per small
// collective, 9 GFLOP/s each): `--collective-latency-us 20 --device-gflops 9` models that. A
// hardware profile may give all-to-all and collective-permute their own figures
// (HardwareProfile::ToMachineModel).
struct MachineModel {
  double link_gbps = 1.5;             // GB/s (1e9 bytes) received per device
  double collective_latency_us = 2;   // fixed cost of one group collective
  double all_to_all_share = 1;        // an all-to-all's fixed cost / a group collective's
  double permute_share = 0.4;         // a collective-permute's fixed cost / a group collective's
  double device_gflops = 36;          // GFLOP/s of one device

  friend bool operator==(const MachineModel&, const MachineModel&) = default;
  // Fixed cost in us of one collective of `kind` (HLO opcode name, e.g. "collective-permute").
  double LatencyUs(std::string_view kind) const {
    if (kind == "collective-permute") return collective_latency_us * permute_share;
    if (kind == "all-to-all") return collective_latency_us * all_to_all_share;
    return collective_latency_us;
  }
  // Estimated seconds for a step that receives `bytes` per device in collectives whose fixed
  // costs add up to `latency_us` (LatencyUs of each) and computes `flops` per device.
  double Estimate(double bytes, double latency_us, double flops) const {
    return bytes / (link_gbps * 1e9) + latency_us * 1e-6 + flops / (device_gflops * 1e9);
  }
};

// "1.23 ms", "45.6 us", "789 ns" (3 significant digits).
std::string FormatSeconds(double seconds);

}  // namespace xs::spmd

#endif  // XSHARD_SPMD_COST_MODEL_H_
