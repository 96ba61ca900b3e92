// Collective benchmark: per-call timing on device 0 of back-to-back calls, NCCL-tests bandwidth.
#include "xshard/runtime/collective_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "xshard/core/array.h"
#include "xshard/runtime/device.h"

namespace xs {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

bool UsesAlgorithm(CollectiveKind op) {
  return op == CollectiveKind::kAllGather || op == CollectiveKind::kAllReduce ||
         op == CollectiveKind::kReduceScatter;
}

// Per-device operand and result element counts.
std::pair<int64_t, int64_t> Counts(CollectiveKind op, int64_t count, int64_t n) {
  switch (op) {
    case CollectiveKind::kAllGather: return {count, count * n};
    case CollectiveKind::kReduceScatter: return {count, count / n};
    default: return {count, count};
  }
}

}  // namespace

double MeasureMemcpyGbps(int64_t bytes, int repeats) {
  Array src(DType::kU8, {bytes}), dst(DType::kU8, {bytes});
  // Touch every page of both buffers first (and warm up) so the timed copies see only DRAM.
  std::memset(src.data(), 1, static_cast<size_t>(bytes));
  std::memset(dst.data(), 2, static_cast<size_t>(bytes));
  std::memcpy(dst.data(), src.data(), static_cast<size_t>(bytes));
  std::vector<double> seconds;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = SteadyClock::now();
    std::memcpy(dst.data(), src.data(), static_cast<size_t>(bytes));
    seconds.push_back(std::chrono::duration<double>(SteadyClock::now() - t0).count());
  }
  return static_cast<double>(bytes) / Median(seconds) / 1e9;
}

StatusOr<std::vector<double>> TimeCollective(Client& client, CollectiveKind op,
                                             CollectiveAlgorithm algorithm, int64_t bytes,
                                             int warmup, int iterations) {
  const int64_t n = client.num_devices();
  // The device whose calls are timed: 0, or under MPI this process's first device.
  const int64_t timed =
      client.distributed() ? client.process_rank() * client.options().devices_per_process : 0;
  const int64_t count = std::max<int64_t>(n, bytes / 4 / n * n);
  const auto [in_count, out_count] = Counts(op, count, n);
  std::vector<Array> ins, outs;
  for (int64_t d = 0; d < n; ++d) {
    ins.emplace_back(DType::kF32, std::vector<int64_t>{in_count});
    outs.emplace_back(DType::kF32, std::vector<int64_t>{out_count});
    std::fill(ins.back().values<float>().begin(), ins.back().values<float>().end(), 1.0f);
  }
  std::vector<std::pair<int64_t, int64_t>> shift;
  for (int64_t d = 0; d < n; ++d) shift.emplace_back(d, (d + 1) % n);
  XS_ASSIGN_OR_RETURN(PermutePairs pairs, PermutePairs::Create(shift, n, "collective-permute"));
  const DeviceGroups all = DeviceGroups::All(n);
  std::vector<double> times;
  XS_RETURN_IF_ERROR(client.RunOnAllDevices([&](int64_t rank, Communicator& comm) -> Status {
    const ConstBufferView in = ConstBufferView::Of(ins[rank]);
    const BufferView out = BufferView::Of(outs[rank]);
    for (int it = 0; it < warmup + iterations; ++it) {
      CollectiveCall call(rank, CollectiveKindName(op), it + 1);
      call.algorithm = algorithm;
      const auto t0 = SteadyClock::now();
      switch (op) {
        case CollectiveKind::kAllGather:
          XS_RETURN_IF_ERROR(comm.AllGather(call, all, in, out, 0));
          break;
        case CollectiveKind::kAllReduce:
          XS_RETURN_IF_ERROR(comm.AllReduce(call, all, in, out, ReductionKind::kSum));
          break;
        case CollectiveKind::kReduceScatter:
          XS_RETURN_IF_ERROR(comm.ReduceScatter(call, all, in, out, 0, ReductionKind::kSum));
          break;
        case CollectiveKind::kAllToAll:
          XS_RETURN_IF_ERROR(comm.AllToAll(call, all, in, out, 0, 0));
          break;
        case CollectiveKind::kCollectivePermute:
          XS_RETURN_IF_ERROR(comm.CollectivePermute(call, pairs, in, out));
          break;
        case CollectiveKind::kCollectiveBroadcast:
          XS_RETURN_IF_ERROR(comm.CollectiveBroadcast(call, all, in, out));
          break;
        case CollectiveKind::kBarrier:
          XS_RETURN_IF_ERROR(comm.Barrier(call));
          break;
      }
      if (rank == timed && it >= warmup) {
        times.push_back(std::chrono::duration<double>(SteadyClock::now() - t0).count());
      }
    }
    return OkStatus();
  }));
  return times;
}

void ComputeBandwidth(CollectiveBenchRow& row) {
  const double n = static_cast<double>(row.devices);
  const double t = row.median_us * 1e-6;
  if (t <= 0) return;
  double size = static_cast<double>(row.bytes), factor = 1;
  switch (row.op) {
    case CollectiveKind::kAllGather:
      size *= n;
      factor = (n - 1) / n;
      break;
    case CollectiveKind::kAllReduce:
      factor = 2 * (n - 1) / n;
      break;
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      factor = (n - 1) / n;
      break;
    default:
      break;
  }
  row.algbw_gbps = size / t / 1e9;
  row.busbw_gbps = row.algbw_gbps * factor;
  row.aggregate_gbps = row.busbw_gbps * n;
}

StatusOr<CollectiveBenchResult> RunCollectiveBench(const CollectiveBenchOptions& options) {
  if (options.bytes.empty()) return InvalidArgument("bench collectives: give at least one size");
  if (options.iterations < 1) {
    return InvalidArgument("bench collectives: iterations must be >= 1, got ", options.iterations);
  }
  ClientOptions co = options.client;
  co.num_devices = options.devices;
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Create(co));
  CollectiveBenchResult result;
  for (int64_t bytes : options.bytes) {
    for (CollectiveKind op : options.ops) {
      for (CollectiveAlgorithm a : options.algorithms) {
        if (!UsesAlgorithm(op) && a != options.algorithms.front()) continue;
        if (!client->communicators().honours_algorithm() && a != options.algorithms.front()) {
          continue;
        }
        const CollectiveAlgorithm used = UsesAlgorithm(op) ? a : CollectiveAlgorithm::kDirect;
        XS_ASSIGN_OR_RETURN(std::vector<double> times,
                            TimeCollective(*client, op, used, bytes, options.warmup,
                                           options.iterations));
        CollectiveBenchRow row;
        // memcpy of the same total bytes right next to the row, so both see the same load.
        row.memcpy_gbps =
            MeasureMemcpyGbps(options.devices * std::max<int64_t>(bytes, 4096), 5);
        row.op = op;
        row.algorithm = used;
        row.devices = options.devices;
        row.bytes = std::max<int64_t>(options.devices, bytes / 4 / options.devices *
                                                           options.devices) * 4;
        row.median_us = Median(times) * 1e6;
        row.min_us = *std::min_element(times.begin(), times.end()) * 1e6;
        ComputeBandwidth(row);
        result.rows.push_back(row);
      }
    }
  }
  return result;
}

std::string CollectiveBenchResult::ToString() const {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "%-21s %-19s %7s %10s %11s %11s %10s %10s %9s %11s %7s\n",
                "op", "algorithm", "devices", "bytes/dev", "median_us", "min_us", "algbw GB/s",
                "busbw GB/s", "aggr GB/s", "memcpy GB/s", "aggr %");
  out += line;
  for (const CollectiveBenchRow& r : rows) {
    std::snprintf(line, sizeof(line),
                  "%-21s %-19s %7lld %10s %11.1f %11.1f %10.2f %10.2f %9.2f %11.2f %6.0f%%\n",
                  std::string(CollectiveKindName(r.op)).c_str(),
                  std::string(CollectiveAlgorithmName(r.algorithm)).c_str(),
                  static_cast<long long>(r.devices), FormatBytes(r.bytes).c_str(), r.median_us,
                  r.min_us, r.algbw_gbps, r.busbw_gbps, r.aggregate_gbps, r.memcpy_gbps,
                  r.memcpy_gbps > 0 ? 100.0 * r.aggregate_gbps / r.memcpy_gbps : 0.0);
    out += line;
  }
  return out;
}

}  // namespace xs
