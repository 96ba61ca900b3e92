// A hardware profile: what a machine does per second (GEMM rate per element type and problem size,
// memory bandwidth, collective latency and bandwidth per kind and group size), read from a small
// text file that `xshard bench calibrate` writes or that hardware/*.profile ship for other systems.
#ifndef XSHARD_SPMD_HARDWARE_PROFILE_H_
#define XSHARD_SPMD_HARDWARE_PROFILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/dtype.h"
#include "xshard/spmd/cost_model.h"

namespace xs::spmd {

// XLA's name for an element type; xshard's is DType.
using PrimitiveType = DType;

// One collective's cost at one group size: t = latency + bytes received per device / rate.
struct CollectiveRate {
  double latency_us = 0;
  double gbps = 0;  // GB/s (1e9 B) received per device
  friend bool operator==(const CollectiveRate&, const CollectiveRate&) = default;
};

struct HardwareProfile {
  std::string name;    // "this machine: AMD EPYC 2 cores, in-process devices"
  std::string source;  // where the figures come from (command + date, or data sheet + URL)
  // true: the devices share one host's cores and memory; the compute and memory rates below are
  // the host's, and each of N devices running at once gets 1/N of them.
  bool shared_host = false;
  // The device count the figures were measured with (0: not stated). On a shared host the
  // collectives' bandwidth is the per-device share at that count; other counts scale it by
  // devices / N (all devices draw on the same memory).
  int64_t devices = 0;
  // GEMM GFLOP/s per element type at several problem sizes (FLOPs of one call), interpolated
  // log-log between points, clamped at the ends. Types without a table use f32's.
  std::map<PrimitiveType, std::vector<std::pair<double, double>>> gemm;
  // Convolution GFLOP/s the same way (FLOPs of one convolution); types without a table use the
  // GEMM rate of their type (convolution kernels often run well below it on CPUs).
  std::map<PrimitiveType, std::vector<std::pair<double, double>>> conv;
  double memory_gbps = 0;  // streaming bandwidth (bytes read + written per second / 1e9)
  // Collectives by kind ("all-gather", "all-reduce", "reduce-scatter", "all-to-all",
  // "collective-permute") and group size; sizes between points interpolate linearly, beyond clamp.
  // A kind without points uses all-gather's (else the first kind present).
  std::map<std::string, std::map<int64_t, CollectiveRate>> collectives;
  // Elements per second (1e9) of transcendental elementwise ops (exp, log, tanh, logistic, erf,
  // sin, cos, power, ...) for the host or device, on top of the bytes they move (0: free, as where
  // memory bandwidth bounds them, e.g. GPUs).
  double transcendental_gops = 0;
  // Fixed cost of one step (starting every device's program and waiting for all; 0: none).
  double step_overhead_us = 0;
  // Fixed cost of each executed instruction that does work (a kernel launch; 0: none).
  double op_overhead_us = 0;
  // On a shared host both fixed costs are wall time measured with `devices` devices, whose threads
  // share the cores: with N devices they scale by N / devices.

  // Seconds for one dot / convolution of `flops` FLOPs on one of `num_devices` devices.
  double DotSeconds(PrimitiveType type, double flops, int64_t num_devices) const;
  // Seconds for one convolution of `flops` FLOPs (the conv table, else DotSeconds).
  double ConvSeconds(PrimitiveType type, double flops, int64_t num_devices) const;
  // Seconds to stream `bytes` (read + written) on one of `num_devices` devices.
  double MemorySeconds(double bytes, int64_t num_devices) const;
  // The fixed costs above, in seconds, for a run on `num_devices` devices.
  double StepOverheadSeconds(int64_t num_devices) const;
  double OpOverheadSeconds(int64_t num_devices) const;
  // Seconds of `elements` transcendental evaluations on one of `num_devices` devices.
  double TranscendentalSeconds(double elements, int64_t num_devices) const;
  // Seconds for one collective of `kind` over groups of `group_size` in which each device receives
  // `bytes_received_per_device` (the ring model of spmd/report.h). Unknown kinds use all-gather's
  // figures; a group of 1 costs nothing.
  double CollectiveSeconds(std::string_view kind, int64_t group_size, double bytes_received_per_device,
                           int64_t num_devices) const;
  // The partitioner's three-number summary for `num_devices` devices: all-gather bandwidth and
  // all-reduce latency at that group size, f32 GEMM rate at the largest size per device.
  MachineModel ToMachineModel(int64_t num_devices) const;

  friend bool operator==(const HardwareProfile&, const HardwareProfile&) = default;
};

// The collective kinds a profile names, in file order.
inline constexpr std::string_view kProfileCollectiveKinds[] = {
    "all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute"};

// Reads the text format (docs in hardware_profile_text.cc and README "Hardware profiles and
// predicted time"):
//   # comment
//   name = 8x H100 SXM, NVLink 4
//   source = NVIDIA H100 data sheet, https://...
//   shared_host = false
//   memory_gbps = 2700
//   gemm f32 1e9 = 30000          # GFLOP/s at a call of 1e9 FLOPs
//   collective all-reduce 8 = 25 us, 180 GB/s
// Errors name `origin`, the line, the problem and the fix: "h100.profile:7: gemm rate 'x' is not
// a number; write GFLOP/s as a positive number, e.g. gemm f32 1e9 = 400".
StatusOr<HardwareProfile> ParseHardwareProfile(std::string_view text, std::string_view origin);
// The file at `path`, parsed; errors name the path.
StatusOr<HardwareProfile> LoadHardwareProfile(const std::string& path);
// Text ParseHardwareProfile reads back to an equal profile.
std::string FormatHardwareProfile(const HardwareProfile& p);

// Where `xshard bench calibrate` writes this machine's profile: $XSHARD_CACHE_DIR/hardware.profile,
// else $XDG_CACHE_HOME/xshard/hardware.profile, else ~/.cache/xshard/hardware.profile ("" when
// none is set, or XSHARD_CACHE_DIR=off).
std::string DefaultHardwareProfilePath();
// Built-in figures matching MachineModel's defaults (2-core host, 8 in-process devices).
HardwareProfile BuiltinHardwareProfile();
// This machine: the profile at DefaultHardwareProfilePath() when it exists and parses, else
// BuiltinHardwareProfile() (whose source says "built-in defaults; run `xshard bench calibrate`").
HardwareProfile ThisMachineProfile();

}  // namespace xs::spmd

#endif  // XSHARD_SPMD_HARDWARE_PROFILE_H_
