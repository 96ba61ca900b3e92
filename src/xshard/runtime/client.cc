// Client: devices, their threads, per-run communicators and failure propagation. The device kind
// and the transport come in ClientOptions; this file names neither.
#include "xshard/runtime/client.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>

#include <malloc.h>

#include "xshard/base/limits.h"
#include "xshard/kernels/compute_gate.h"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/parallel.h"
#include "xshard/runtime/device_threads.h"

namespace xs {
namespace {

// Devices are threads, and glibc gives threads their own malloc arenas and, after the first free
// of a big block, raises its mmap threshold (up to 32 MiB): device buffers below that, freed by
// one device, stay cached in that thread's arena instead of going back to the system, so 128
// devices running a program whose live buffers peak at 3.3 GB kept 24 GB resident (and were
// killed for it). A fixed threshold hands every block of 4 MiB or more back on free, at the cost
// of fresh pages per big buffer (measured: 5-10 % on conv / gather runs). Process-wide and
// idempotent; set before the first client's devices allocate anything.
void ReturnBigBuffersToTheSystem() {
  static const bool once = [] { return mallopt(M_MMAP_THRESHOLD, 4 << 20) == 1; }();
  (void)once;
}

}  // namespace

StatusOr<int64_t> DefaultDeviceCount() {
  const char* env = std::getenv("XSHARD_DEVICES");
  if (env == nullptr || *env == '\0') return 8;
  int64_t n = 0;
  if (!ParseInt64(StripWhitespace(env), &n) || n < 1 || n > kMaxDevices) {
    return InvalidArgument("XSHARD_DEVICES='", env, "' is not a device count; set it to an "
                           "integer from 1 to ", kMaxDevices, " (or unset it for 8 devices)");
  }
  return n;
}

StatusOr<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  if (options.device_kind == nullptr) options.device_kind = CpuDeviceKind();
  if (options.communicators == nullptr) options.communicators = InProcessCommunicators();
  CommunicatorFactory& transport = *options.communicators;
  if (!transport.distributed() && options.devices_per_process != 0) {
    return InvalidArgument("--devices-per-process ", options.devices_per_process,
                           " applies under mpirun (devices spread over MPI processes); this "
                           "process was not started by mpirun, so all devices run in it: drop the "
                           "flag, or start it with mpirun -np P");
  }
  if (transport.distributed()) {
    XS_RETURN_IF_ERROR(transport.Start());
    const int64_t processes = transport.process_count();
    if (options.devices_per_process < 0) {
      return InvalidArgument("--devices-per-process must be at least 1, got ",
                             options.devices_per_process);
    }
    if (options.devices_per_process == 0) {
      if (options.num_devices % processes != 0) {
        return InvalidArgument(options.num_devices, " devices do not split evenly over ",
                               processes, " MPI processes; pass --devices a multiple of ",
                               processes, " (or start a divisor of ", options.num_devices,
                               " processes with mpirun -np)");
      }
      options.devices_per_process = std::max<int64_t>(1, options.num_devices / processes);
    }
    if (options.num_devices == 0) options.num_devices = processes * options.devices_per_process;
    if (options.num_devices != processes * options.devices_per_process) {
      return InvalidArgument("--devices ", options.num_devices, " does not match ", processes,
                             " MPI processes x --devices-per-process ",
                             options.devices_per_process, " = ",
                             processes * options.devices_per_process,
                             "; drop one of the two flags");
    }
  }
  if (options.num_devices == 0) {
    XS_ASSIGN_OR_RETURN(options.num_devices, DefaultDeviceCount());
  }
  if (options.num_devices < 1 || options.num_devices > kMaxDevices) {
    return InvalidArgument("a client needs 1 to ", kMaxDevices, " devices, got ",
                           options.num_devices);
  }
  if (options.collective_timeout.count() <= 0) {
    return InvalidArgument("the collective timeout must be positive, got ",
                           options.collective_timeout.count(), " ms");
  }
  // The thread budget: the cores this process may use, or XSHARD_NUM_THREADS (kernels::CoreCount).
  XS_RETURN_IF_ERROR(kernels::CheckThreadBudgetEnv());
  const int64_t cores = options.num_cores > 0 ? options.num_cores : kernels::CoreCount();
  ReturnBigBuffersToTheSystem();
  return std::unique_ptr<Client>(new Client(std::move(options), cores));
}

Client::Client(ClientOptions options, int64_t num_cores)
    : options_(std::move(options)), num_cores_(num_cores) {
  const DeviceKind& kind = *options_.device_kind;
  for (int64_t i = 0; i < options_.num_devices; ++i) {
    const int64_t limit = options_.device_memory_limit > 0 ? options_.device_memory_limit
                                                           : kind.DefaultMemoryLimit(i);
    devices_.push_back(std::make_unique<Device>(i, limit, std::string(kind.name())));
  }
  // Distributed: threads for this process's devices only (thread i runs device first + i).
  distributed_ = options_.communicators->distributed();
  if (!distributed_) options_.devices_per_process = options_.num_devices;
  const int64_t local = options_.devices_per_process;
  process_rank_ = options_.communicators->process_rank();
  if (!options_.wait_policy) {
    options_.wait_policy = DefaultWaitPolicy(local, num_cores_);
  }
  threads_ = std::make_unique<DeviceThreads>(local, *options_.wait_policy);
  gate_ = std::make_unique<ComputeGate>(std::clamp<int64_t>(kGateSlotsPerCore * num_cores_, 1, ComputeGate::kMaxSlots));
}

Client::~Client() = default;

StatusOr<Device*> Client::LookupDevice(int64_t id) const {
  if (id < 0 || id >= num_devices()) {
    return InvalidArgument("device ", id, " does not exist: the client has ", num_devices(),
                           " devices (ids 0..", num_devices() - 1, "); run with --devices N or "
                           "set XSHARD_DEVICES=N for more");
  }
  return devices_[id].get();
}

int64_t Client::IntraOpThreads(int64_t devices_running) const {
  return std::max<int64_t>(1, num_cores_ / std::max<int64_t>(1, devices_running));
}

StatusOr<Communicator*> Client::CommunicatorFor(std::span<const int64_t> device_ids) {
  std::vector<int64_t> key(device_ids.begin(), device_ids.end());
  auto it = communicators_.find(key);
  if (it == communicators_.end()) {
    CommunicatorSpec spec;
    spec.device_ids = key;
    spec.devices_per_process = options_.devices_per_process;
    spec.timeout = options_.collective_timeout;
    spec.algorithm = options_.algorithm;
    spec.wait_policy = *options_.wait_policy;
    spec.eager_bytes = options_.eager_bytes;
    spec.compute_gate = gate_.get();
    XS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, options_.communicators->Create(spec));
    it = communicators_.emplace(std::move(key), std::move(comm)).first;
  }
  return it->second.get();
}

StatusOr<Client::RunResult> Client::RunPerRank(std::span<const int64_t> device_ids,
                                               const RankFn& fn) {
  std::vector<bool> used(num_devices(), false);
  for (int64_t id : device_ids) {
    XS_RETURN_IF_ERROR(LookupDevice(id).status());
    if (used[id]) {
      return InvalidArgument("device ", id, " appears twice in the run's device list [",
                             StrJoin(device_ids, ","), "]; each rank needs its own device");
    }
    used[id] = true;
  }
  RunResult result;
  std::vector<Status>& results = result.per_rank;
  results.resize(device_ids.size());
  if (device_ids.empty()) return result;
  std::lock_guard<std::mutex> lock(run_mu_);
  XS_ASSIGN_OR_RETURN(Communicator * comm, CommunicatorFor(device_ids));
  comm->Reset();
  // This process's ranks and the thread of each: thread t runs device first + t.
  const int64_t first = process_rank_ * options_.devices_per_process;
  std::vector<int64_t> local, threads;
  for (int64_t r = 0; r < static_cast<int64_t>(device_ids.size()); ++r) {
    if (!IsLocal(device_ids[r])) continue;
    local.push_back(r);
    threads.push_back(device_ids[r] - first);
  }
  // The thread budget split among this process's devices of the run (shard_map and cmm runs get
  // it here; SpmdExecutable::Run narrows it for --blas-threads): with several devices OpenBLAS
  // runs single-threaded and each device splits big GEMMs over its share (kernels/parallel.h).
  const int64_t running = static_cast<int64_t>(local.size());
  if (running > 1) kernels::SetBlasThreads(1);
  const kernels::DeviceThreadShare share{static_cast<int>(IntraOpThreads(running)), running > 1};
  const std::function<void(int64_t)> task = [&](int64_t i) {
    const int64_t rank = local[i];
    Status st;
    kernels::ScopedDeviceThreadShare scoped_share(share);
    try {
      st = fn(rank, *comm);
    } catch (const std::bad_alloc& e) {  // AllocationFailure from an Array the estimate missed
      st = ResourceExhausted(e.what());
    }
    if (!st.ok()) {
      // A no-op when the failure came from the communicator itself (it is aborted already).
      comm->Abort(Annotate(st, StrCat("device ", device_ids[rank], " failed: ")));
    }
    comm->Leave(rank);
    results[rank] = std::move(st);
  };
  if (!threads.empty()) threads_->Run(threads, task);
  // Distributed: every process learns how the others' devices ended (bounded by the timeout).
  result.status = options_.communicators->AgreeOnOutcome(
      options_.communicators->AbortReason(*comm), options_.collective_timeout);
  return result;
}

Status Client::ShareRankResults(std::span<const int64_t> device_ids,
                                std::vector<std::vector<Array>>& per_rank,
                                std::optional<int64_t> only_to) {
  if (!distributed_) return OkStatus();
  std::vector<int64_t> owner;
  for (int64_t id : device_ids) owner.push_back(ProcessOf(id));
  return options_.communicators->ShareArrays(owner, per_rank, options_.collective_timeout, only_to);
}

Status Client::Run(std::span<const int64_t> device_ids, const RankFn& fn) {
  XS_ASSIGN_OR_RETURN(RunResult result, RunPerRank(device_ids, fn));
  return result.status;
}

Status Client::RunOnAllDevices(const RankFn& fn) {
  std::vector<int64_t> ids(num_devices());
  for (int64_t i = 0; i < num_devices(); ++i) ids[i] = i;
  return Run(ids, fn);
}

Status Client::Run(const DeviceAssignment& assignment, const RankFn& fn) {
  return Run(assignment.LogicalDevices(), fn);
}

std::vector<MemoryStats> Client::memory_stats() const {
  std::vector<MemoryStats> out;
  for (const auto& d : devices_) out.push_back(d->memory_stats());
  return out;
}

std::string Client::MemoryReport() const {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof(line), "%-8s %-12s %-12s %s\n", "device", "live", "peak",
                "buffers");
  out += line;
  MemoryStats total;
  for (const auto& d : devices_) {
    const MemoryStats s = d->memory_stats();
    std::snprintf(line, sizeof(line), "%-8s %-12s %-12s %lld\n", d->ToString().c_str(),
                  FormatBytes(s.live_bytes).c_str(), FormatBytes(s.peak_bytes).c_str(),
                  static_cast<long long>(s.live_buffers));
    out += line;
    total.live_bytes += s.live_bytes;
    total.peak_bytes += s.peak_bytes;
    total.live_buffers += s.live_buffers;
  }
  std::snprintf(line, sizeof(line), "%-8s %-12s %-12s %lld\n", "total",
                FormatBytes(total.live_bytes).c_str(), FormatBytes(total.peak_bytes).c_str(),
                static_cast<long long>(total.live_buffers));
  out += line;
  return out;
}

void Client::ResetPeakMemory() {
  for (auto& d : devices_) d->ResetPeak();
}

}  // namespace xs
