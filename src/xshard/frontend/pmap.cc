// Pmap: jax.pmap over the default client's devices as one SPMD program with a manual region.
#include <mutex>
#include <numeric>

#include "xshard/base/strings.h"
#include "xshard/frontend/jit.h"
#include "xshard/frontend/lower.h"
#include "xshard/frontend/trace.h"
#include "xshard/runtime/client.h"

namespace xs::fe {

StatusOr<Tensor> Pmap(const TensorFn& fn, const Tensor& x, int64_t in_axis,
                      const std::string& name) {
  XS_RETURN_IF_ERROR(x.status());
  if (x.is_tracer() || CurrentTrace() != nullptr) {
    return Unimplemented("Pmap(", name, ") inside a trace; call it on concrete Tensors");
  }
  if (in_axis < 0) in_axis += x.rank();
  if (in_axis < 0 || in_axis >= x.rank()) {
    return InvalidArgument("Pmap(", name, "): in_axes=", in_axis, " is not a dim of ",
                           x.aval().ToString());
  }
  int64_t n = x.dims()[in_axis];
  XS_ASSIGN_OR_RETURN(Client * client, DefaultClient());
  if (n < 1 || n > client->num_devices()) {
    return InvalidArgument("Pmap(", name, "): dim ", in_axis, " of ", x.aval().ToString(),
                           " has size ", n, " but there are ", client->num_devices(),
                           " devices; the mapped axis size must be 1..", client->num_devices());
  }
  Tensor stacked = x;
  if (in_axis != 0) {
    std::vector<int64_t> perm(x.rank());
    std::iota(perm.begin(), perm.end(), 0);
    perm.erase(perm.begin() + in_axis);
    perm.insert(perm.begin(), in_axis);
    stacked = Transpose(x, perm);
  }
  AVal local{x.dtype(), std::vector<int64_t>(stacked.dims().begin() + 1, stacked.dims().end())};
  XS_ASSIGN_OR_RETURN(Jaxpr j, TraceFunction(fn, {local}, StrCat("Pmap(", name, ")")));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, LowerPmap(j, n, name));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<ShardedProgram> program, ShardedProgram::Compile(*module, n));
  XS_ASSIGN_OR_RETURN(Array input, stacked.value());
  XS_ASSIGN_OR_RETURN(ShardedResult r, program->Run(*client, {input}));
  auto impl = std::make_shared<TensorImpl>();
  const Array& out0 = r.device_outputs[0][0];
  std::vector<int64_t> dims = out0.dims();
  dims[0] = n;
  impl->aval = AVal{out0.dtype(), dims};
  if (r.assembled[0]) impl->value = r.outputs[0];
  // Each device's buffer without the mapped dim, as pmap's device_buffers show it.
  std::vector<int64_t> local_dims(dims.begin() + 1, dims.end());
  for (auto& device : r.device_outputs) impl->shards.push_back(device[0].Reshape(local_dims));
  XS_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create({"i"}, {n}));
  XS_ASSIGN_OR_RETURN(PartitionSpec spec, PartitionSpec::Parse("P('i')"));
  XS_ASSIGN_OR_RETURN(NamedSharding sharding, NamedSharding::Create(mesh, spec));
  impl->sharding = sharding;
  return Tensor(impl);
}

}  // namespace xs::fe
