// Pmap: jax.pmap over the default client's devices as one SPMD program with a manual region.
#include <numeric>

#include "xshard/base/strings.h"
#include "xshard/frontend/jit.h"
#include "xshard/frontend/lower.h"
#include "xshard/frontend/trace.h"
#include "xshard/runtime/client.h"

namespace xs::fe {

StatusOr<std::vector<Tensor>> PmapCall(const TensorFn& fn, const std::vector<Tensor>& args,
                                       const std::vector<std::optional<int64_t>>& in_axes,
                                       const std::string& name) {
  XS_RETURN_IF_ERROR(FirstError(args));
  if (CurrentTrace() != nullptr) {
    return Unimplemented("Pmap(", name, ") inside a trace; call it on concrete Tensors");
  }
  if (in_axes.size() != args.size()) {
    return InvalidArgument("Pmap(", name, "): ", in_axes.size(), " in_axes for ", args.size(),
                           " arguments; give one per argument (nullopt: not mapped)");
  }
  XS_ASSIGN_OR_RETURN(Client * client, DefaultClient());
  int64_t n = -1;
  std::vector<Tensor> stacked;
  std::vector<AVal> local;
  std::vector<bool> mapped;
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& x = args[i];
    if (!in_axes[i]) {
      stacked.push_back(x);
      local.push_back(AVal{x.dtype(), x.dims()});
      mapped.push_back(false);
      continue;
    }
    int64_t axis = *in_axes[i] < 0 ? *in_axes[i] + x.rank() : *in_axes[i];
    if (axis < 0 || axis >= x.rank()) {
      return InvalidArgument("Pmap(", name, "): in_axes=", *in_axes[i], " is not a dim of argument ",
                             i, " ", x.aval().ToString());
    }
    int64_t size = x.dims()[axis];
    if (n >= 0 && size != n) {
      return InvalidArgument("Pmap(", name, "): mapped axes have sizes ", n, " and ", size,
                             " (argument ", i, " ", x.aval().ToString(), "); they must agree");
    }
    n = size;
    Tensor t = x;
    if (axis != 0) {
      std::vector<int64_t> perm(x.rank());
      std::iota(perm.begin(), perm.end(), 0);
      perm.erase(perm.begin() + axis);
      perm.insert(perm.begin(), axis);
      t = Transpose(x, perm);
    }
    stacked.push_back(t);
    local.push_back(AVal{x.dtype(), std::vector<int64_t>(t.dims().begin() + 1, t.dims().end())});
    mapped.push_back(true);
  }
  if (n < 0) return InvalidArgument("Pmap(", name, "): no argument is mapped (every in_axes is None)");
  if (n < 1 || n > client->num_devices()) {
    return InvalidArgument("Pmap(", name, "): the mapped axis has size ", n, " but there are ",
                           client->num_devices(), " devices; the size must be 1..",
                           client->num_devices());
  }
  XS_ASSIGN_OR_RETURN(Jaxpr j, TraceFunction(fn, local, StrCat("Pmap(", name, ")")));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, LowerPmap(j, n, mapped, name));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<ShardedProgram> program, ShardedProgram::Compile(*module, n));
  std::vector<Array> inputs;
  for (const Tensor& t : stacked) {
    XS_ASSIGN_OR_RETURN(Array a, t.value());
    inputs.push_back(std::move(a));
  }
  XS_ASSIGN_OR_RETURN(ShardedResult r, program->Run(*client, inputs));
  XS_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create({"i"}, {n}));
  XS_ASSIGN_OR_RETURN(PartitionSpec spec, PartitionSpec::Parse("P('i')"));
  XS_ASSIGN_OR_RETURN(NamedSharding sharding, NamedSharding::Create(mesh, spec));
  std::vector<Tensor> outs;
  for (size_t o = 0; o < j.outvars.size(); ++o) {
    auto impl = std::make_shared<TensorImpl>();
    AVal per_device = j.outvars[o].aval();
    impl->aval = AVal{per_device.dtype, per_device.dims};
    impl->aval.dims.insert(impl->aval.dims.begin(), n);
    if (r.assembled[o]) impl->value = r.outputs[o];
    // Each device's buffer without the mapped dim, as pmap's device_buffers show it.
    for (auto& device : r.device_outputs) impl->shards.push_back(device[o].Reshape(per_device.dims));
    impl->sharding = sharding;
    outs.emplace_back(impl);
  }
  return outs;
}

StatusOr<Tensor> Pmap(const TensorFn& fn, const Tensor& x, int64_t in_axis,
                      const std::string& name) {
  XS_ASSIGN_OR_RETURN(std::vector<Tensor> outs, PmapCall(fn, {x}, {in_axis}, name));
  if (outs.size() != 1) {
    return InvalidArgument("Pmap(", name, ") returns ", outs.size(), " results; use PmapCall");
  }
  return outs[0];
}

}  // namespace xs::fe
