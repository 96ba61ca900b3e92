// Bindings of compiled programs: xshard.compile's native half (parse, apply shardings, propagate,
// partition), running with numpy arrays (Ctrl-C stops the devices and raises KeyboardInterrupt),
// the partition report and the timing loop of `xshard bench run` (per-device execution on
// arguments placed once).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "python/src/convert.h"
#include "xshard/base/limits.h"
#include "xshard/exec/run_monitor.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"
#include "xshard/jit/annotations.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/platform/platform.h"
#include "xshard/runtime/client.h"
#include "xshard/sharding/named_sharding.h"
#include "xshard/spmd/report.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs::python {
namespace {

using namespace nb::literals;

}  // namespace

namespace {

// Raises `status` (a platform's error) after "platform='cuda': ".
void CheckPlatformStatus(const Status& status, std::string_view platform) {
  if (status.ok()) return;
  StatusOr<std::string> name = ResolvePlatformName(platform);
  Raise(name.ok() ? Annotate(status, StrCat("platform='", *name, "': ")) : status);
}

}  // namespace

// One Client per platform and device count, created on first use and kept for the process (each
// owns one thread per device). `platform` "" is $XSHARD_PLATFORM, else cpu.
Client& ClientFor(int64_t devices, const std::string& platform) {
  static std::mutex mu;
  static std::map<std::pair<std::string, int64_t>, std::unique_ptr<Client>> clients;
  std::lock_guard<std::mutex> lock(mu);
  StatusOr<std::string> name = ResolvePlatformName(platform);
  Check(name.status());
  auto& c = clients[{*name, devices}];
  if (!c) {
    ClientOptions options;
    options.num_devices = devices;
    StatusOr<std::unique_ptr<Client>> made = CreateClient(*name, options);
    CheckPlatformStatus(made.status(), *name);
    c = std::move(*made);
  }
  return *c;
}

// The default platform's client. Shared with shard_map.cc and cmm.cc.
Client& ClientFor(int64_t devices) { return ClientFor(devices, ""); }

namespace {

// Runs `work` (which takes no Python objects and no GIL) on a thread of its own while the calling
// thread checks every 20 ms for a pending signal: Python's handler runs there (Ctrl-C raises
// KeyboardInterrupt), and when it raises, `monitor` stops every device, the work winds down
// (within a step, or a block of a long kernel) and the exception propagates. Python runs signal
// handlers on the main thread only: called from another thread this only waits.
template <typename T>
T Interruptible(RunMonitor& monitor, const std::function<T()>& work) {
  std::optional<T> result;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread worker([&] {
    std::optional<T> r;
    try {
      r.emplace(work());
    } catch (const std::bad_alloc& e) {  // AllocationFailure: an Array the estimates missed
      r.emplace(ResourceExhausted(e.what()));
    }
    std::lock_guard<std::mutex> lock(mu);
    result = std::move(r);
    done = true;
    cv.notify_one();
  });
  bool interrupted = false;
  {
    nb::gil_scoped_release release;
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return done; })) {
      lock.unlock();
      if (!interrupted) {
        nb::gil_scoped_acquire acquire;
        interrupted = PyErr_CheckSignals() != 0;  // the handler's exception stays set
      }
      // Again every time: each run of a timing loop starts by clearing the monitor.
      if (interrupted) monitor.Stop(Cancelled("interrupted (KeyboardInterrupt)"));
      lock.lock();
    }
  }
  worker.join();
  if (interrupted) throw nb::python_error();
  return std::move(*result);
}

// The arguments as Arrays; those at the indices `bf16` are uint16 arrays holding bf16 bits.
std::vector<Array> ToArrays(const std::vector<InArray>& args, const std::vector<int64_t>& bf16) {
  std::vector<Array> arrays;
  arrays.reserve(args.size());
  for (const InArray& a : args) arrays.push_back(ToArray(a));
  for (int64_t i : bf16) {
    if (i < 0 || i >= static_cast<int64_t>(args.size())) {
      Raise(InvalidArgument("bf16 argument index ", i, " is out of range for ", args.size(), " arguments"));
    }
    arrays[i] = ToArray(args[i], DType::kBF16);
  }
  return arrays;
}

// A compiled program plus the client it runs on.
class Program {
 public:
  Program(std::unique_ptr<ShardedProgram> program, Client* client)
      : program_(std::move(program)), client_(client), fixed_length_(!HasWhileLoop(program_->spmd_module())) {}

  const ShardedProgram& program() const { return *program_; }

  // Runs on global numpy arrays (those at the indices `bf16`: uint16 arrays of bf16 bits);
  // returns (outputs, per-device outputs of unassembled leaves).
  nb::list Run(const std::vector<InArray>& args, const std::vector<int64_t>& bf16) const {
    std::vector<Array> arrays = ToArrays(args, bf16);
    RunMonitor monitor(program_->num_devices());
    SpmdRunOptions options;
    options.monitor = &monitor;
    const auto start = std::chrono::steady_clock::now();
    StatusOr<ShardedResult> result = [&] {
      // A call of a program without while loops (its time does not depend on the data) whose
      // last run was short runs on this thread: a Ctrl-C during it raises as soon as it returns,
      // well within the ~100 ms promised, and small programs save the watcher thread's start and
      // join. Others, and every first call, run interruptibly.
      if (fixed_length_ && last_ms_.load(std::memory_order_relaxed) < kInlineMs) {
        nb::gil_scoped_release release;
        return program_->Run(*client_, arrays, options);
      }
      return Interruptible<StatusOr<ShardedResult>>(
          monitor, [&] { return program_->Run(*client_, arrays, options); });
    }();
    last_ms_.store(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
                   std::memory_order_relaxed);
    ShardedResult r = Unwrap(std::move(result));
    nb::list out;
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      if (r.assembled[i]) {
        out.append(ToNumpy(std::move(r.outputs[i])));
      } else {
        nb::list per_device;  // manual / unreduced: one array per device
        for (auto& device : r.device_outputs) per_device.append(ToNumpy(std::move(device[i])));
        out.append(per_device);
      }
    }
    return out;
  }

  // Wall milliseconds of each of `iters` timed per-device executions after `warmup` untimed
  // ones, on arguments sharded once (what `xshard bench run` times); with `whole_call`, each
  // timed run is Run() on the global arrays instead (shard, execute, assemble: what a call from
  // Python does, less the binding). iters < 0: adaptive, as bench run (>= 10 runs and >= 1 s,
  // or 3 runs once 10 s passed, at most 10000).
  std::vector<double> Time(const std::vector<InArray>& args, int64_t warmup, int64_t iters, bool whole_call,
                           const std::vector<int64_t>& bf16) const {
    std::vector<Array> arrays = ToArrays(args, bf16);
    std::vector<double> ms;
    RunMonitor monitor(program_->num_devices());
    SpmdRunOptions options;
    options.monitor = &monitor;
    Status status = Interruptible<Status>(monitor, [&]() -> Status {
      XS_ASSIGN_OR_RETURN(auto shards, program_->ShardArguments(arrays));
      auto call = [&]() -> Status {
        if (monitor.stopped()) return monitor.stop_reason();
        if (whole_call) return program_->Run(*client_, arrays, options).status();
        return program_->RunPlaced(*client_, shards, options).status();
      };
      for (int64_t i = 0; i < warmup; ++i) XS_RETURN_IF_ERROR(call());
      double total = 0;
      for (int64_t i = 0;; ++i) {
        if (iters >= 0 ? i >= iters
                       : (i >= 10 && total >= 1.0) || (i >= 3 && total >= 10.0) || i >= 10000) {
          break;
        }
        const auto start = std::chrono::steady_clock::now();
        XS_RETURN_IF_ERROR(call());
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        total += s;
        ms.push_back(s * 1e3);
      }
      return OkStatus();
    });
    Check(status);
    return ms;
  }

 private:
  // Calls whose previous run took less than this run without the interrupt watcher thread.
  static constexpr double kInlineMs = 20;
  static bool HasWhileLoop(const Module& module) {
    for (const Computation* c : module.computations()) {
      for (const Instruction* inst : c->instructions()) {
        if (inst->opcode() == Opcode::kWhile) return true;
      }
    }
    return false;
  }
  std::unique_ptr<ShardedProgram> program_;
  Client* client_;
  bool fixed_length_;  // no while loop: a run's time does not depend on the data
  mutable std::atomic<double> last_ms_{1e30};  // the last Run's wall time; none yet: long
};

// A sharding argument from Python: None, an HloSharding, or a NamedSharding (made an HloSharding
// for an array of `rank` dims).
std::optional<HloSharding> ShardingArg(nb::handle h, int rank) {
  if (h.is_none()) return std::nullopt;
  if (nb::isinstance<NamedSharding>(h)) return Unwrap(nb::cast<const NamedSharding&>(h).ToHloSharding(rank));
  return nb::cast<HloSharding>(h);
}

// Sets the entry parameters' and the root's shardings (None entries are left as they are).
void ApplyShardings(Module& module, const std::vector<nb::object>& in,
                    const std::vector<nb::object>& out) {
  Computation* entry = module.entry();
  if (!in.empty()) {
    if (static_cast<int>(in.size()) != entry->num_parameters()) {
      Raise(InvalidArgument("in_shardings has ", in.size(), " entries but the entry computation '",
                            entry->name(), "' has ", entry->num_parameters(),
                            " parameters; give one sharding (or None) per parameter"));
    }
    for (size_t i = 0; i < in.size(); ++i) {
      Instruction* p = entry->parameter(static_cast<int>(i));
      if (auto s = ShardingArg(in[i], p->shape().IsTuple() ? 0 : p->shape().rank())) p->set_sharding(*s);
    }
  }
  if (!out.empty()) {
    Instruction* root = entry->root();
    if (root->shape().IsTuple()) {
      const auto& leaves = root->shape().tuple_shapes();
      if (out.size() != leaves.size()) {
        Raise(InvalidArgument("out_shardings has ", out.size(), " entries but the root '",
                              root->name(), "' has ", leaves.size(),
                              " outputs; give one sharding per output"));
      }
      // A None entry keeps the text's sharding of that output, else leaves it to propagation
      // ({unknown}), as a None in jax.jit's out_shardings.
      const std::optional<HloSharding>& written = root->sharding();
      const bool has_written = written && written->IsTuple() && written->tuple_elements().size() == leaves.size();
      std::vector<HloSharding> elements;
      for (size_t i = 0; i < out.size(); ++i) {
        std::optional<HloSharding> s = ShardingArg(out[i], leaves[i].IsTuple() ? 0 : leaves[i].rank());
        if (!s) s = has_written ? written->tuple_elements()[i] : HloSharding::Unknown();
        elements.push_back(*s);
      }
      root->set_sharding(HloSharding::Tuple(std::move(elements)));
    } else {
      if (out.size() != 1) {
        Raise(InvalidArgument("out_shardings has ", out.size(), " entries but the root '",
                              root->name(), "' is one array; give one sharding"));
      }
      if (auto s = ShardingArg(out[0], root->shape().rank())) root->set_sharding(*s);
    }
  }
}

std::unique_ptr<Program> Compile(const std::string& text, int64_t devices,
                                 const std::vector<nb::object>& in_shardings,
                                 const std::vector<nb::object>& out_shardings,
                                 std::optional<bool> to_parameters, std::optional<bool> to_output,
                                 bool async_collectives, const std::string& platform) {
  // An unknown platform or one without its hardware fails before anything is compiled.
  CheckPlatformStatus(CheckPlatform(platform), platform);
  std::unique_ptr<Module> module = Unwrap(ParseHloModule(text));
  ApplyShardings(*module, in_shardings, out_shardings);  // verified once, by CompileModule
  if (devices < 0) {
    Raise(InvalidArgument("devices=", devices, " is not a device count: give a whole number from 1 to ",
                          kMaxDevices, " (0: the module's num_partitions)"));
  }
  if (devices == 0) {
    // As `xshard run`: the module's num_partitions, else the devices its annotations name.
    devices = module->config().num_partitions > 1 ? module->config().num_partitions
                                                  : AnnotatedDevices(*module);
  }
  CompileOptions options;
  options.partition.propagation.allow_to_parameters = to_parameters;
  options.partition.propagation.allow_to_output = to_output;
  options.async_collectives = async_collectives;
  StatusOr<std::unique_ptr<ShardedProgram>> compiled = [&] {
    nb::gil_scoped_release release;
    return ShardedProgram::Compile(*module, devices, options);
  }();
  std::unique_ptr<ShardedProgram> program = Unwrap(std::move(compiled));
  Client& client = ClientFor(devices, platform);
  return std::make_unique<Program>(std::move(program), &client);
}

nb::dict CollectiveDict(const spmd::CollectiveRecord& c) {
  nb::dict d;
  d["kind"] = c.kind;
  d["name"] = c.name;
  d["shape"] = c.shape.ToString(false);
  d["bytes"] = c.bytes;
  d["groups"] = c.explicit_groups.ToString();
  d["dimension"] = c.dimension;
  d["cause"] = c.cause;
  d["reason"] = c.reason;
  d["written"] = c.written;
  return d;
}

}  // namespace

void BindProgram(nb::module_& m) {
  nb::class_<Program>(m, "_Program")
      .def_prop_ro("num_devices", [](const Program& p) { return p.program().num_devices(); })
      .def("run", &Program::Run, "args"_a, "bf16"_a = std::vector<int64_t>{})
      .def("time", &Program::Time, "args"_a, "warmup"_a = 3, "iters"_a = -1, "whole_call"_a = false,
           "bf16"_a = std::vector<int64_t>{})
      .def(
          "as_text",
          [](const Program& p, bool spmd) {
            return PrintHloModule(spmd ? p.program().spmd_module() : p.program().global_module());
          },
          "spmd"_a = false)
      .def("report_text", [](const Program& p) { return spmd::FormatReport(p.program().report()); })
      .def("collectives",
           [](const Program& p) {
             nb::list out;
             for (const auto& c : p.program().report().collectives) out.append(CollectiveDict(c));
             return out;
           })
      .def("memory",
           [](const Program& p) {
             const spmd::PartitionReport& r = p.program().report();
             nb::dict d;
             d["before_peak_bytes"] = r.before.peak_bytes;
             d["after_peak_bytes"] = r.after.peak_bytes;
             d["after_parameter_bytes"] = r.after.parameter_bytes;
             return d;
           })
      .def("warnings", [](const Program& p) { return p.program().report().warnings; })
      .def("argument_shapes",
           [](const Program& p) {
             std::vector<std::string> out;
             for (const Shape& s : p.program().argument_shapes()) out.push_back(s.ToString(false));
             return out;
           })
      .def("output_shapes",
           [](const Program& p) {
             std::vector<std::string> out;
             for (const Shape& s : p.program().output_shapes()) out.push_back(s.ToString(false));
             return out;
           })
      .def_prop_ro("argument_shardings", [](const Program& p) { return p.program().argument_shardings(); })
      .def_prop_ro("output_shardings", [](const Program& p) { return p.program().output_shardings(); });

  m.def("_compile", &Compile, "text"_a, "devices"_a = 0, "in_shardings"_a = std::vector<nb::object>{},
        "out_shardings"_a = std::vector<nb::object>{}, "to_parameters"_a = nb::none(),
        "to_output"_a = nb::none(), "async_collectives"_a = false, "platform"_a = "");
  m.def("_default_device_count", [] { return Unwrap(DefaultDeviceCount()); });
  // "" when `platform` can make a client here, else why not (CheckPlatform's message).
  m.def("_platform_check", [](const std::string& platform) {
    const Status status = CheckPlatform(platform);
    return status.ok() ? std::string() : std::string(status.message());
  }, "platform"_a);
}

}  // namespace xs::python
