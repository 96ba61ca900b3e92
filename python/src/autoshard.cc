// xshard._xshard._autoshard: the auto-sharding search (autoshard/autoshard.h) on HLO text, its plan
// returned as plain Python values (xshard/_autoshard.py turns them into PartitionSpecs).
#include <nanobind/stl/string.h>

#include "python/src/convert.h"
#include "xshard/autoshard/autoshard.h"
#include "xshard/autoshard/hardware_cost.h"
#include "xshard/jit/host_memory.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs::python {
namespace {

using namespace nb::literals;

nb::list Tensors(const std::vector<autoshard::PlannedTensor>& tensors) {
  nb::list out;
  for (const autoshard::PlannedTensor& t : tensors) {
    nb::dict d;
    d["name"] = t.name;
    d["shape"] = t.shape.ToString(false);
    d["spec"] = t.spec;
    if (t.expressible) {
      nb::list dims;
      for (const auto& axes : t.axes) {
        nb::list names;
        for (const std::string& a : axes) names.append(a);
        dims.append(names);
      }
      d["axes"] = dims;
    } else {
      d["axes"] = nb::none();
    }
    out.append(d);
  }
  return out;
}

nb::dict Autoshard(const std::string& hlo_text, const std::string& mesh_text, int64_t memory_per_device,
                   const std::string& hardware, double time_limit, bool keep_annotations) {
  std::unique_ptr<Module> module = Unwrap(ParseHloModule(hlo_text, "<hlo>"));
  autoshard::AutoshardOptions options;
  options.mesh = Unwrap(Mesh::Parse(mesh_text));
  const int64_t n = options.mesh.num_devices();
  autoshard::HardwareCost hw = Unwrap(autoshard::LoadHardwareCost(hardware, n));
  options.cost = hw.cost;
  options.evaluate = hw.evaluate;
  if (memory_per_device > 0) {
    options.memory_per_device = memory_per_device;
  } else if (memory_per_device < 0) {
    std::optional<int64_t> host = Unwrap(HostMemoryLimit());
    if (host) options.memory_per_device = *host / n;
  }
  options.time_limit_s = time_limit;
  options.keep_annotations = keep_annotations;
  autoshard::AutoshardResult r;
  {
    nb::gil_scoped_release release;
    StatusOr<autoshard::AutoshardResult> result = autoshard::Autoshard(*module, options);
    nb::gil_scoped_acquire acquire;
    r = Unwrap(std::move(result));
  }
  nb::dict d;
  d["parameters"] = Tensors(r.plan.parameters);
  d["outputs"] = Tensors(r.plan.outputs);
  d["predicted_seconds"] = r.plan.seconds;
  d["peak_bytes"] = r.plan.peak_bytes;
  d["memory_per_device"] = options.memory_per_device;
  d["hardware"] = hw.name;
  d["report"] = autoshard::FormatResult(r, options.cost);
  d["hlo"] = PrintHloModule(*r.annotated);
  return d;
}

}  // namespace

void BindAutoshard(nb::module_& m) {
  m.def("_autoshard", &Autoshard, "hlo_text"_a, "mesh"_a, "memory_per_device"_a = -1, "hardware"_a = "",
        "time_limit"_a = 60.0, "keep_annotations"_a = false);
}

}  // namespace xs::python
