// SpmdExecutable: one plan shared by every device, made into each device's program by the client's
// device kind; one program Run per device thread with its partition / replica id and a
// CollectiveRunner over the run's Communicator.
#include <algorithm>
#include <functional>
#include <memory>

#include "xshard/ir/attributes.h"
#include "xshard/ir/module.h"
#include "xshard/ir/verifier.h"
#include "xshard/kernels/dot.h"
#include "xshard/exec/executable.h"
#include "xshard/runtime/client.h"
#include "xshard/runtime/device_kind.h"
#include "xshard/comm/collectives.h"
#include "xshard/comm/communicator.h"
#include "xshard/kernels/compute_gate.h"
#include "xshard/kernels/parallel.h"
#include "xshard/comm/replica_groups.h"
#include "xshard/exec/run_monitor.h"

#include "xshard/runtime/spmd_executor.h"

#include <cstdio>

#include "xshard/runtime/spmd_executor_collectives.h"

namespace xs {
namespace {

int64_t LeafBytes(const std::vector<Array>& leaves) {
  int64_t n = 0;
  for (const Array& a : leaves) n += a.byte_size();
  return n;
}

int64_t LeafBytes(const std::vector<const Array*>& leaves) {
  int64_t n = 0;
  for (const Array* a : leaves) n += a->byte_size();
  return n;
}

// Every device's inputs must match the entry parameters before any device starts (in MPI mode,
// every device of this process: `checked(d)`).
Status CheckArguments(const Executable& exe, const std::vector<std::vector<const Array*>>& args,
                      int64_t replicas, int64_t partitions,
                      const std::function<bool(int64_t)>& checked) {
  const int64_t n = replicas * partitions;
  if (static_cast<int64_t>(args.size()) != n) {
    return InvalidArgument("module '", exe.module().name(), "' runs on ", n, " devices (",
                           "num_partitions=", partitions, " x replica_count=", replicas,
                           ") but inputs for ", args.size(), " device(s) were given; pass one "
                           "list of arguments per device");
  }
  const std::vector<Shape>& want = exe.argument_shapes();
  for (int64_t d = 0; d < n; ++d) {
    if (!checked(d)) continue;
    if (args[d].size() != want.size()) {
      return InvalidArgument("device ", d, ": '", exe.module().entry()->name(), "' takes ",
                             want.size(), " argument(s) but ", args[d].size(), " were given");
    }
    for (size_t i = 0; i < want.size(); ++i) {
      const Array& a = *args[d][i];
      if (a.dtype() != want[i].dtype() || a.dims() != want[i].dims()) {
        return InvalidArgument("device ", d, ": argument ", i, " has shape ",
                               a.shape().ToString(false), " but the module's parameter leaf ", i,
                               " is ", want[i].ToString(false),
                               " (each device gets its own shard, not the global array)");
      }
    }
  }
  return OkStatus();
}

}  // namespace

SpmdExecutable::SpmdExecutable(const Module& module, std::unique_ptr<Executable> executable,
                               std::unique_ptr<SpmdCollectivePlan> plan)
    : module_(module), executable_(std::move(executable)), plan_(std::move(plan)) {
  num_partitions_ = module_.config().num_partitions;
  replica_count_ = module_.config().replica_count;
}

SpmdExecutable::~SpmdExecutable() = default;

StatusOr<std::vector<const DeviceProgram*>> SpmdExecutable::ProgramsFor(
    const Client& client, const std::vector<int64_t>& devices) const {
  std::vector<const DeviceProgram*> out(devices.size(), nullptr);
  const DeviceKind* kind = &client.device_kind();
  std::lock_guard<std::mutex> lock(programs_mu_);
  bool held = false;
  for (const auto& k : kinds_) held = held || k.get() == kind;
  if (!held) kinds_.push_back(client.shared_device_kind());
  for (size_t r = 0; r < devices.size(); ++r) {
    if (!client.IsLocal(devices[r])) continue;
    std::unique_ptr<DeviceProgram>& program = programs_[{kind, devices[r]}];
    if (program == nullptr) {
      XS_ASSIGN_OR_RETURN(program, kind->Compile(*executable_, devices[r]));
    }
    out[r] = program.get();
  }
  return out;
}

StatusOr<std::unique_ptr<SpmdExecutable>> SpmdExecutable::Create(const Module& module) {
  const int64_t partitions = module.config().num_partitions;
  const int64_t replicas = module.config().replica_count;
  if (partitions < 1 || replicas < 1) {
    return InvalidArgument("module '", module.name(), "' has num_partitions=", partitions,
                           " and replica_count=", replicas, "; both must be at least 1");
  }
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, Executable::Create(module));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<SpmdCollectivePlan> plan,
                      SpmdCollectivePlan::Create(module, replicas, partitions));
  return std::unique_ptr<SpmdExecutable>(
      new SpmdExecutable(module, std::move(exe), std::move(plan)));
}

StatusOr<SpmdResult> SpmdExecutable::Run(Client& client,
                                         const std::vector<std::vector<Array>>& args,
                                         const SpmdRunOptions& options,
                                         std::vector<Status>* device_status) const {
  std::vector<std::vector<const Array*>> pointers(args.size());
  for (size_t d = 0; d < args.size(); ++d) {
    for (const Array& a : args[d]) pointers[d].push_back(&a);
  }
  return Run(client, pointers, options, device_status);
}

StatusOr<SpmdResult> SpmdExecutable::Run(Client& client,
                                         const std::vector<std::vector<const Array*>>& args,
                                         const SpmdRunOptions& options,
                                         std::vector<Status>* device_status) const {
  StatusOr<DeviceAssignment> assigned =
      options.device_assignment
          ? StatusOr<DeviceAssignment>(*options.device_assignment)
          : DeviceAssignment::Default(replica_count_, num_partitions_, client.num_devices());
  XS_RETURN_IF_ERROR(assigned.status());
  const DeviceAssignment& assignment = *assigned;
  if (assignment.replicas() != replica_count_ || assignment.partitions() != num_partitions_) {
    return InvalidArgument("the device assignment is for ", assignment.replicas(),
                           " replica(s) x ", assignment.partitions(), " partition(s) but module '",
                           module_.name(), "' has replica_count=", replica_count_,
                           " and num_partitions=", num_partitions_);
  }
  const int64_t n = num_devices();
  const std::vector<int64_t>& devices = assignment.LogicalDevices();
  // Under MPI a process holds (and is given) only its own devices' arguments.
  XS_RETURN_IF_ERROR(CheckArguments(*executable_, args, replica_count_, num_partitions_,
                                    [&](int64_t d) {
                                      return d >= static_cast<int64_t>(devices.size()) ||
                                             client.IsLocal(devices[d]);
                                    }));
  // One thread budget (client.num_cores(): the cores, or XSHARD_NUM_THREADS) split among the
  // devices computing at once in this process (MPI mode: this process's share); --blas-threads
  // caps a device's GEMM threads, never raises them past its share. OpenBLAS's thread count is
  // process-wide (set here, while no device runs): 1 when several devices run, since its pthread
  // build serves every caller from one thread server and concurrent multi-threaded callers queue;
  // each device then splits its big GEMMs over its share on xshard's pool (DeviceThreadShare).
  const int64_t running = client.distributed() ? client.options().devices_per_process : n;
  const int64_t fair_share = client.IntraOpThreads(running);
  const int gemm_threads = static_cast<int>(
      options.blas_threads > 0 ? std::min<int64_t>(options.blas_threads, fair_share) : fair_share);
  kernels::SetBlasThreads(running > 1 ? 1 : gemm_threads);

  XS_ASSIGN_OR_RETURN(const std::vector<const DeviceProgram*> programs,
                      ProgramsFor(client, devices));
  SpmdResult result;
  result.outputs.resize(n);
  result.devices = devices;
  std::vector<ExecuteStats> stats(n);
  // More devices than gate slots (two per core): at most that many big kernels at a time
  // (compute_gate.h).
  ComputeGate* gate = running > client.compute_gate().slots() ? &client.compute_gate() : nullptr;
  // Every run has a monitor (the caller's, else its own): when one device fails, the others stop
  // at their next step, a device that never reaches the collective its peers gave up on included.
  std::unique_ptr<RunMonitor> own_monitor;
  RunMonitor* const run_monitor =
      options.monitor != nullptr ? options.monitor : (own_monitor = std::make_unique<RunMonitor>(n)).get();
  // The rank that registers the monitor's waker: 0, or under MPI this process's first.
  int64_t waker_rank = 0;
  while (waker_rank + 1 < n && !client.IsLocal(devices[waker_rank])) ++waker_rank;
  const Client::RankFn run_device = [&](int64_t rank, Communicator& comm) -> Status {
    CommunicatorCollectiveRunner runner(*plan_, comm, rank);
    ExecuteOptions o;
    o.partition_id = rank % num_partitions_;
    o.replica_id = rank / num_partitions_;
    o.collectives = &runner;
    o.max_while_iterations = options.max_while_iterations;
    o.compute_gate = gate;
    o.intra_op_threads = static_cast<int>(fair_share);
    kernels::ScopedDeviceThreadShare share({gemm_threads, /*concurrent=*/running > 1});
    RunMonitor* monitor = rank < run_monitor->num_devices() ? run_monitor : nullptr;
    if (monitor != nullptr) {
      o.monitor = monitor;
      o.monitor_rank = rank;
      // A stop must also reach devices parked in a collective (their wait restarts while a peer
      // is busy, so without this they would wait for a peer that never comes).
      if (rank == waker_rank) {
        monitor->SetWaker([&comm](const Status& reason) { comm.Abort(reason); });
      }
    }
    StatusOr<std::vector<Array>> outs = programs[rank]->RunSpmd(args[rank], o, &stats[rank],
                                                                {plan_.get(), &comm, rank});
    if (monitor != nullptr) {
      monitor->progress(rank).finished.store(true, std::memory_order_relaxed);
      if (!outs.ok()) monitor->Stop(Annotate(outs.status(), StrCat("device ", devices[rank], " failed: ")));
    }
    XS_ASSIGN_OR_RETURN(result.outputs[rank], std::move(outs));
    return OkStatus();
  };
  run_monitor->Reset();
  for (int64_t r = 0; r < n && r < run_monitor->num_devices(); ++r) {
    if (!client.IsLocal(devices[r])) run_monitor->progress(r).elsewhere.store(true);
  }
  StatusOr<Client::RunResult> ran = client.RunPerRank(devices, run_device);
  run_monitor->ClearWaker();
  XS_ASSIGN_OR_RETURN(Client::RunResult run, std::move(ran));
  if (device_status != nullptr) {
    device_status->assign(n, OkStatus());
    for (int64_t r = 0; r < n; ++r) {
      (*device_status)[r] =
          !run.per_rank[r].ok() ? run.per_rank[r]
          : run.status.ok()
              ? OkStatus()
              : Status(run.status.code(), StrCat("device ", devices[r], " finished, but the "
                                                 "run was aborted: ", run.status.message()));
    }
  }
  if (!run.status.ok()) return run.status;
  // MPI mode: every process (or options.outputs_to_process) gets every device's outputs (memory
  // figures stay per process).
  XS_RETURN_IF_ERROR(client.ShareRankResults(devices, result.outputs, options.outputs_to_process));
  for (int64_t r = 0; r < n; ++r) {
    SpmdDeviceMemory m;
    m.device = devices[r];
    m.argument_bytes = LeafBytes(args[r]);
    m.arena_bytes = executable_->arena_bytes();
    m.peak_bytes = m.argument_bytes + stats[r].peak_bytes;
    m.live_bytes = LeafBytes(result.outputs[r]);
    m.kind = std::string(client.device_kind().name());
    result.memory.push_back(m);
  }
  return result;
}

std::string FormatSpmdMemory(const std::vector<SpmdDeviceMemory>& memory) {
  std::string out;
  char line[160];
  auto row = [&](const std::string& name, int64_t args, int64_t arena, int64_t peak, int64_t live) {
    std::snprintf(line, sizeof(line), "%-8s %-12s %-12s %-12s %s\n", name.c_str(),
                  FormatBytes(args).c_str(), FormatBytes(arena).c_str(), FormatBytes(peak).c_str(),
                  FormatBytes(live).c_str());
    out += line;
  };
  std::snprintf(line, sizeof(line), "%-8s %-12s %-12s %-12s %s\n", "device", "arguments", "arena",
                "peak", "live");
  out += line;
  SpmdDeviceMemory total;
  for (const SpmdDeviceMemory& m : memory) {
    row(StrCat(m.kind, ":", m.device), m.argument_bytes, m.arena_bytes, m.peak_bytes, m.live_bytes);
    total.argument_bytes += m.argument_bytes;
    total.arena_bytes += m.arena_bytes;
    total.peak_bytes += m.peak_bytes;
    total.live_bytes += m.live_bytes;
  }
  row("total", total.argument_bytes, total.arena_bytes, total.peak_bytes, total.live_bytes);
  return out;
}

}  // namespace xs
