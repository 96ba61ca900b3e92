// Bindings of shard_map: a Python function runs once per mesh device on its local shards (numpy
// arrays), with JAX's named-axis collectives (xshard.lax.psum, all_gather, ...) between devices.
// Each device thread takes the GIL to run the function and lets it go inside every collective.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "python/src/convert.h"
#include "xshard/runtime/client.h"
#include "xshard/shard_map/shard_map.h"
#include "xshard/shard_map/sharded_array.h"

namespace xs::python {

Client& ClientFor(int64_t devices);  // program.cc

namespace {

using namespace nb::literals;

// The context of the shard_map body running on this thread (null outside one).
thread_local ShardMapContext* current_context = nullptr;

ShardMapContext& Current(const char* op) {
  if (current_context == nullptr) {
    Raise(FailedPrecondition("xshard.lax.", op, " names mesh axes: call it inside a function "
                             "run by xshard.shard_map"));
  }
  return *current_context;
}

AxisNames AxesOf(nb::handle h) {
  if (nb::isinstance<nb::str>(h)) return AxisNames(nb::cast<std::string>(h));
  return AxisNames(nb::cast<std::vector<std::string>>(h));
}

// An owned copy of a numpy array (the body's arrays die with its Python frame).
Array OwnedArray(nb::handle value) {
  nb::object arr = nb::module_::import_("numpy").attr("ascontiguousarray")(value);
  Array a = ToArray(nb::cast<InArray>(arr));
  return a.owns_data() ? std::move(a) : Array(a);
}

// Runs one collective on this device's context without the GIL (peers need it to arrive).
template <typename F>
nb::object Collective(const char* op, nb::handle x, F f) {
  ShardMapContext& ctx = Current(op);
  Array a = OwnedArray(x);
  StatusOr<Array> r = [&] {
    nb::gil_scoped_release release;
    return f(ctx, a);
  }();
  return ToNumpy(Unwrap(std::move(r)));
}

// The Python function of the call in progress. The C++ side holds no reference to it between
// calls (the Python wrapper does), so that Python's garbage collector sees every reference cycle
// through it (a function whose globals hold its own shard_map wrapper).
struct FnSlot {
  PyObject* fn = nullptr;
};

// The per-device body: calls the Python function with numpy shards, returns its arrays.
ShardMapFn BodyOf(std::shared_ptr<FnSlot> slot) {
  return [slot](ShardMapContext& ctx, std::vector<Array> args) -> StatusOr<std::vector<Array>> {
    nb::gil_scoped_acquire gil;
    nb::handle fn(slot->fn);
    ShardMapContext* saved = current_context;
    current_context = &ctx;
    struct Restore {
      ShardMapContext* saved;
      ~Restore() { current_context = saved; }
    } restore{saved};
    try {
      nb::list py_args;
      for (Array& a : args) py_args.append(ToNumpy(std::move(a)));
      nb::object result = fn(*py_args);
      std::vector<Array> out;
      if (nb::isinstance<nb::tuple>(result) || nb::isinstance<nb::list>(result)) {
        for (nb::handle r : result) out.push_back(OwnedArray(r));
      } else {
        out.push_back(OwnedArray(result));
      }
      return out;
    } catch (nb::python_error& e) {
      std::string message = e.what();
      const bool user = e.matches(PyExc_ValueError) || e.matches(PyExc_TypeError);
      return Status(user ? StatusCode::kInvalidArgument : StatusCode::kInternal,
                    StrCat("device ", ctx.device(), ": ", message));
    } catch (std::exception& e) {
      return InvalidArgument("device ", ctx.device(), ": ", e.what());
    }
  };
}

class PyShardMapped {
 public:
  PyShardMapped(ShardMapped mapped, std::shared_ptr<FnSlot> slot)
      : mapped_(std::move(mapped)), slot_(std::move(slot)) {}

  // Runs `fn` (the function given to shard_map) on every device. One call at a time.
  nb::list Call(nb::object fn, const std::vector<InArray>& args) const {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    {
      nb::gil_scoped_release release;  // a call in progress needs the GIL to finish
      lock.lock();
    }
    slot_->fn = fn.ptr();
    std::vector<Array> arrays;
    for (const InArray& a : args) arrays.push_back(ToArray(a));
    Client& client = ClientFor(mapped_.mesh().num_devices());
    StatusOr<std::vector<ShardedArray>> r = [&] {
      nb::gil_scoped_release release;
      return mapped_(client, arrays);
    }();
    slot_->fn = nullptr;
    std::vector<ShardedArray> results = Unwrap(std::move(r));
    nb::list out;
    for (const ShardedArray& s : results) out.append(ToNumpy(Unwrap(s.ToArray())));
    return out;
  }

 private:
  ShardMapped mapped_;
  std::shared_ptr<FnSlot> slot_;
  mutable std::mutex mu_;
};

}  // namespace

void BindShardMap(nb::module_& m) {
  nb::class_<PyShardMapped>(m, "_ShardMapped")
      .def("__call__", &PyShardMapped::Call, "fn"_a, "args"_a);
  m.def("_shard_map", [](const Mesh& mesh, std::vector<PartitionSpec> in_specs,
                         std::vector<PartitionSpec> out_specs) {
         auto slot = std::make_shared<FnSlot>();
         ShardMapped mapped = Unwrap(ShardMap(mesh, std::move(in_specs), std::move(out_specs),
                                              BodyOf(slot)));
         return std::make_unique<PyShardMapped>(std::move(mapped), slot);
       }, "mesh"_a, "in_specs"_a, "out_specs"_a);

  m.def("_axis_index", [](nb::handle axes) {
    return Unwrap(Current("axis_index").AxisIndex(AxesOf(axes)));
  });
  m.def("_axis_size", [](nb::handle axes) {
    return Unwrap(Current("axis_size").AxisSize(AxesOf(axes)));
  });
  m.def("_psum", [](nb::handle x, nb::handle axes) {
    AxisNames names = AxesOf(axes);
    return Collective("psum", x, [&](ShardMapContext& c, const Array& a) { return c.Psum(a, names); });
  });
  m.def("_pmax", [](nb::handle x, nb::handle axes) {
    AxisNames names = AxesOf(axes);
    return Collective("pmax", x, [&](ShardMapContext& c, const Array& a) { return c.Pmax(a, names); });
  });
  m.def("_pmin", [](nb::handle x, nb::handle axes) {
    AxisNames names = AxesOf(axes);
    return Collective("pmin", x, [&](ShardMapContext& c, const Array& a) { return c.Pmin(a, names); });
  });
  m.def("_pmean", [](nb::handle x, nb::handle axes) {
    AxisNames names = AxesOf(axes);
    return Collective("pmean", x, [&](ShardMapContext& c, const Array& a) { return c.Pmean(a, names); });
  });
  m.def("_all_gather", [](nb::handle x, nb::handle axes, int axis, bool tiled) {
    AxisNames names = AxesOf(axes);
    return Collective("all_gather", x, [&](ShardMapContext& c, const Array& a) {
      return c.AllGather(a, names, axis, tiled);
    });
  });
  m.def("_psum_scatter", [](nb::handle x, nb::handle axes, int dim, bool tiled) {
    AxisNames names = AxesOf(axes);
    return Collective("psum_scatter", x, [&](ShardMapContext& c, const Array& a) {
      return c.PsumScatter(a, names, dim, tiled);
    });
  });
  m.def("_ppermute", [](nb::handle x, nb::handle axes, std::vector<std::pair<int64_t, int64_t>> perm) {
    AxisNames names = AxesOf(axes);
    return Collective("ppermute", x, [&](ShardMapContext& c, const Array& a) {
      return c.Ppermute(a, names, perm);
    });
  });
  m.def("_all_to_all", [](nb::handle x, nb::handle axes, int split, int concat, bool tiled) {
    AxisNames names = AxesOf(axes);
    return Collective("all_to_all", x, [&](ShardMapContext& c, const Array& a) {
      return c.AllToAll(a, names, split, concat, tiled);
    });
  });
}

}  // namespace xs::python
