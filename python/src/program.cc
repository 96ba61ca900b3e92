// Bindings of compiled programs: xshard.compile's native half (parse, apply shardings, propagate,
// partition), running with numpy arrays, the partition report and the timing loop of
// `xshard bench run` (per-device execution on arguments placed once).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "python/src/convert.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"
#include "xshard/ir/verifier.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/runtime/client.h"
#include "xshard/sharding/named_sharding.h"
#include "xshard/spmd/report.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"
#include "xshard/tools/cli.h"

namespace xs::python {
namespace {

using namespace nb::literals;

}  // namespace

// One Client per device count, created on first use and kept for the process (each owns one
// thread per device). Shared with shard_map.cc.
Client& ClientFor(int64_t devices) {
  static std::mutex mu;
  static std::map<int64_t, std::unique_ptr<Client>> clients;
  std::lock_guard<std::mutex> lock(mu);
  auto& c = clients[devices];
  if (!c) {
    ClientOptions options;
    options.num_devices = devices;
    c = Unwrap(Client::Create(options));
  }
  return *c;
}

namespace {

// A compiled program plus the client it runs on.
class Program {
 public:
  Program(std::unique_ptr<ShardedProgram> program, Client* client)
      : program_(std::move(program)), client_(client) {}

  const ShardedProgram& program() const { return *program_; }

  // Runs on global numpy arrays; returns (outputs, per-device outputs of unassembled leaves).
  nb::list Run(const std::vector<InArray>& args) const {
    std::vector<Array> arrays;
    arrays.reserve(args.size());
    for (const InArray& a : args) arrays.push_back(ToArray(a));
    StatusOr<ShardedResult> result = [&] {
      nb::gil_scoped_release release;
      return program_->Run(*client_, arrays);
    }();
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
  std::vector<double> Time(const std::vector<InArray>& args, int64_t warmup, int64_t iters,
                           bool whole_call) const {
    std::vector<Array> arrays;
    for (const InArray& a : args) arrays.push_back(ToArray(a));
    std::vector<double> ms;
    Status status = [&]() -> Status {
      nb::gil_scoped_release release;
      XS_ASSIGN_OR_RETURN(auto shards, program_->ShardArguments(arrays));
      auto call = [&]() -> Status {
        if (whole_call) return program_->Run(*client_, arrays).status();
        return program_->RunPlaced(*client_, shards).status();
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
    }();
    Check(status);
    return ms;
  }

 private:
  std::unique_ptr<ShardedProgram> program_;
  Client* client_;
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
      std::vector<HloSharding> elements;
      for (size_t i = 0; i < out.size(); ++i) {
        std::optional<HloSharding> s = ShardingArg(out[i], leaves[i].IsTuple() ? 0 : leaves[i].rank());
        if (!s) {
          Raise(InvalidArgument("out_shardings[", i, "] is None: a tuple root takes a sharding "
                                "for every output (HloSharding.replicate() for replicated)"));
        }
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
                                 bool async_collectives) {
  std::unique_ptr<Module> module = Unwrap(ParseHloModule(text));
  ApplyShardings(*module, in_shardings, out_shardings);
  Check(Verify(*module));
  if (devices <= 0) {
    // As `xshard run`: the module's num_partitions, else the devices its annotations name.
    devices = module->config().num_partitions > 1 ? module->config().num_partitions
                                                  : tools::AnnotatedDevices(*module);
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
  Client& client = ClientFor(devices);
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
  return d;
}

}  // namespace

void BindProgram(nb::module_& m) {
  nb::class_<Program>(m, "_Program")
      .def_prop_ro("num_devices", [](const Program& p) { return p.program().num_devices(); })
      .def("run", &Program::Run, "args"_a)
      .def("time", &Program::Time, "args"_a, "warmup"_a = 3, "iters"_a = -1, "whole_call"_a = false)
      .def("as_text", [](const Program& p, bool spmd) {
             return PrintHloModule(spmd ? p.program().spmd_module() : p.program().global_module());
           }, "spmd"_a = false)
      .def("report_text", [](const Program& p) { return spmd::FormatReport(p.program().report()); })
      .def("collectives", [](const Program& p) {
             nb::list out;
             for (const auto& c : p.program().report().collectives) out.append(CollectiveDict(c));
             return out;
           })
      .def("memory", [](const Program& p) {
             const spmd::PartitionReport& r = p.program().report();
             nb::dict d;
             d["before_peak_bytes"] = r.before.peak_bytes;
             d["after_peak_bytes"] = r.after.peak_bytes;
             d["after_parameter_bytes"] = r.after.parameter_bytes;
             return d;
           })
      .def("warnings", [](const Program& p) { return p.program().report().warnings; })
      .def("argument_shapes", [](const Program& p) {
             std::vector<std::string> out;
             for (const Shape& s : p.program().argument_shapes()) out.push_back(s.ToString(false));
             return out;
           })
      .def("output_shapes", [](const Program& p) {
             std::vector<std::string> out;
             for (const Shape& s : p.program().output_shapes()) out.push_back(s.ToString(false));
             return out;
           })
      .def_prop_ro("argument_shardings", [](const Program& p) { return p.program().argument_shardings(); })
      .def_prop_ro("output_shardings", [](const Program& p) { return p.program().output_shardings(); });

  m.def("_compile", &Compile, "text"_a, "devices"_a = 0, "in_shardings"_a = std::vector<nb::object>{},
        "out_shardings"_a = std::vector<nb::object>{}, "to_parameters"_a = nb::none(),
        "to_output"_a = nb::none(), "async_collectives"_a = false);
  m.def("_default_device_count", [] { return Unwrap(DefaultDeviceCount()); });
}

}  // namespace xs::python
