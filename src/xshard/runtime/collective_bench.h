// `xshard bench collectives`: times each collective on N in-process devices and reports latency
// and bandwidth with the NCCL-tests definitions, next to memcpy measured in the same process.
//   algbw = S / t, with S the NCCL "size": the gathered output for all-gather, the per-device
//           operand otherwise (bytes below is the per-device operand);
//   busbw = algbw * (n-1)/n (all-gather, reduce-scatter, all-to-all), * 2(n-1)/n (all-reduce),
//           * 1 (broadcast, permute);
//   aggregate = n * busbw: the bytes all devices together receive from their peers per second,
//           which on one machine competes for the same DRAM as a single memcpy, so
//           aggregate / memcpy is the fraction of the machine's copy bandwidth the collective uses.
#ifndef XSHARD_RUNTIME_COLLECTIVE_BENCH_H_
#define XSHARD_RUNTIME_COLLECTIVE_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/runtime/client.h"
#include "xshard/comm/communicator.h"

namespace xs {

struct CollectiveBenchOptions {
  int64_t devices = 8;
  std::vector<int64_t> bytes = {8 << 20};  // per-device operand sizes (f32 elements)
  std::vector<CollectiveKind> ops = {
      CollectiveKind::kAllGather, CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
      CollectiveKind::kAllToAll, CollectiveKind::kCollectivePermute,
      CollectiveKind::kCollectiveBroadcast};
  std::vector<CollectiveAlgorithm> algorithms = {CollectiveAlgorithm::kDirect,
                                                 CollectiveAlgorithm::kRing,
                                                 CollectiveAlgorithm::kRecursiveDoubling};
  int warmup = 3;
  int iterations = 20;
  // The client's other options (num_devices comes from `devices`); a transport that does not
  // honour ClientOptions::algorithm (MPI's own exchange, GPU transports) runs only the first.
  ClientOptions client;
};

struct CollectiveBenchRow {
  CollectiveKind op = CollectiveKind::kAllGather;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kDirect;
  int64_t devices = 0;
  int64_t bytes = 0;        // per-device operand
  double median_us = 0;     // per call, on device 0
  double min_us = 0;
  double algbw_gbps = 0;    // GB = 1e9 bytes
  double busbw_gbps = 0;
  double aggregate_gbps = 0;
  double memcpy_gbps = 0;   // memcpy of devices * bytes measured right before this row
};

struct CollectiveBenchResult {
  std::vector<CollectiveBenchRow> rows;
  // A table: one line per row, with aggregate / memcpy as a percentage.
  std::string ToString() const;
};

// Runs every (op, algorithm, size) on a fresh client of `devices` devices. Algorithms only apply
// to all-gather, all-reduce and reduce-scatter; other ops run once, as direct. Sizes are rounded
// down to a multiple of 4 * devices bytes (at least that). Errors: devices < 1, no sizes.
StatusOr<CollectiveBenchResult> RunCollectiveBench(const CollectiveBenchOptions& options);

// Seconds per call of `op` on device 0 for `iterations` back-to-back calls after `warmup` ones.
StatusOr<std::vector<double>> TimeCollective(Client& client, CollectiveKind op,
                                             CollectiveAlgorithm algorithm, int64_t bytes,
                                             int warmup, int iterations);
// Median single-thread memcpy bandwidth (GB/s) over `repeats` copies of `bytes`.
double MeasureMemcpyGbps(int64_t bytes, int repeats);
// Fills algbw / busbw / aggregate of `row` from its op, devices, bytes and median_us.
void ComputeBandwidth(CollectiveBenchRow& row);

}  // namespace xs

#endif  // XSHARD_RUNTIME_COLLECTIVE_BENCH_H_
