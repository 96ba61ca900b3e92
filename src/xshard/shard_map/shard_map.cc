// ShardMap: split the arguments by in_specs, run fn on every mesh device, check what fn returned
// against out_specs and assemble the global results.
#include "xshard/shard_map/shard_map.h"

#include "xshard/sharding/geometry.h"

namespace xs {
namespace {

// Product of the mesh sizes of the axes in one spec entry.
int64_t TileCount(const Mesh& mesh, const PartitionSpec::Entry& entry) {
  int64_t n = 1;
  for (const std::string& axis : entry) n *= mesh.AxisSize(*mesh.AxisIndex(axis));
  return n;
}

std::string AxesText(const PartitionSpec::Entry& entry) {
  return StrCat("'", StrJoin(entry, "', '"), "'");
}

// Splits one argument by its in_spec, requiring even division as jax.shard_map does.
StatusOr<std::vector<Array>> SplitArgument(const Array& arg, const NamedSharding& sharding,
                                           size_t index) {
  const PartitionSpec& spec = sharding.spec();
  if (spec.size() > arg.rank()) {
    return InvalidArgument("shard_map in_specs[", index, "] ", spec.ToString(), " names ",
                           spec.size(), " dims but argument ", index, " is ",
                           arg.shape().ToString(false), " of rank ", arg.rank());
  }
  for (int d = 0; d < spec.size(); ++d) {
    const int64_t tiles = TileCount(sharding.mesh(), spec.entries()[d]);
    if (arg.dims()[d] % tiles != 0) {
      return InvalidArgument("shard_map in_specs[", index, "] ", spec.ToString(), " splits dim ",
                             d, " of argument ", index, " (", arg.shape().ToString(false),
                             ", size ", arg.dims()[d], ") over mesh axes ",
                             AxesText(spec.entries()[d]), " (", tiles, " devices), which does "
                             "not divide evenly; shard_map needs evenly divisible dims: pad the "
                             "argument or choose another spec");
    }
  }
  return DevicePut(arg, sharding);
}

}  // namespace

StatusOr<ShardMapped> ShardMap(Mesh mesh, std::vector<PartitionSpec> in_specs,
                               std::vector<PartitionSpec> out_specs, ShardMapFn fn) {
  ShardMapped out;
  for (size_t i = 0; i < in_specs.size(); ++i) {
    auto s = NamedSharding::Create(mesh, in_specs[i]);
    if (!s.ok()) return Annotate(s.status(), StrCat("shard_map in_specs[", i, "]: "));
    out.in_.push_back(*std::move(s));
  }
  for (size_t i = 0; i < out_specs.size(); ++i) {
    auto s = NamedSharding::Create(mesh, out_specs[i]);
    if (!s.ok()) return Annotate(s.status(), StrCat("shard_map out_specs[", i, "]: "));
    out.out_.push_back(*std::move(s));
  }
  if (!fn) return InvalidArgument("shard_map needs a function to map");
  out.mesh_ = std::move(mesh);
  out.fn_ = std::move(fn);
  return out;
}

StatusOr<std::vector<ShardedArray>> ShardMapped::operator()(
    Client& client, const std::vector<Array>& args) const {
  if (args.size() != in_.size()) {
    return InvalidArgument("shard_map was given ", args.size(), " arguments for ", in_.size(),
                           " in_specs; pass one argument per in_spec");
  }
  std::vector<std::vector<Array>> shards;
  for (size_t i = 0; i < args.size(); ++i) {
    XS_ASSIGN_OR_RETURN(std::vector<Array> pieces, SplitArgument(args[i], in_[i], i));
    shards.push_back(std::move(pieces));
  }
  return Run(client, std::move(shards));
}

StatusOr<std::vector<ShardedArray>> ShardMapped::operator()(
    Client& client, const std::vector<ShardedArray>& args) const {
  if (args.size() != in_.size()) {
    return InvalidArgument("shard_map was given ", args.size(), " arguments for ", in_.size(),
                           " in_specs; pass one argument per in_spec");
  }
  std::vector<std::vector<Array>> shards;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].sharding() == in_[i]) {
      std::vector<Array> pieces;
      for (int64_t d = 0; d < args[i].num_shards(); ++d) pieces.push_back(args[i].shard(d).array());
      shards.push_back(std::move(pieces));
      continue;
    }
    XS_ASSIGN_OR_RETURN(Array global, args[i].ToArray());
    XS_ASSIGN_OR_RETURN(std::vector<Array> pieces, SplitArgument(global, in_[i], i));
    shards.push_back(std::move(pieces));
  }
  return Run(client, std::move(shards));
}

StatusOr<std::vector<ShardedArray>> ShardMapped::Run(
    Client& client, std::vector<std::vector<Array>> shards) const {
  const int64_t n = mesh_.num_devices();
  if (n > client.num_devices()) {
    return InvalidArgument("shard_map over ", mesh_.ToString(), " needs ", n,
                           " devices but the client has ", client.num_devices(),
                           "; run with --devices ", n, " or set XSHARD_DEVICES=", n);
  }
  std::vector<int64_t> devices(n);
  for (int64_t d = 0; d < n; ++d) devices[d] = d;
  std::vector<std::vector<Array>> results(n);
  const int64_t threads = client.IntraOpThreads(n);
  XS_RETURN_IF_ERROR(client.Run(devices, [&](int64_t device, Communicator& comm) -> Status {
    ShardMapContext ctx(mesh_, device, comm, threads);
    std::vector<Array> local;
    for (auto& arg : shards) local.push_back(std::move(arg[device]));
    XS_ASSIGN_OR_RETURN(std::vector<Array> out, fn_(ctx, std::move(local)));
    if (out.size() != out_.size()) {
      return InvalidArgument("shard_map fn returned ", out.size(), " results on device ", device,
                             " but there are ", out_.size(), " out_specs; return one array per "
                             "out_spec");
    }
    for (size_t i = 0; i < out.size(); ++i) {
      const PartitionSpec& spec = out_[i].spec();
      if (spec.size() > out[i].rank()) {
        return InvalidArgument("shard_map out_specs[", i, "] ", spec.ToString(), " names ",
                               spec.size(), " dims but fn returned ",
                               out[i].shape().ToString(false), " (rank ", out[i].rank(),
                               ") on device ", device);
      }
    }
    results[device] = std::move(out);
    return OkStatus();
  }));
  // Under MPI each process computed its own devices' results; every process gets all of them.
  XS_RETURN_IF_ERROR(client.ShareRankResults(devices, results));
  std::vector<ShardedArray> outputs;
  for (size_t i = 0; i < out_.size(); ++i) {
    const Array& first = results[0][i];
    for (int64_t d = 1; d < n; ++d) {
      if (results[d][i].shape() != first.shape()) {
        return InvalidArgument("shard_map fn returned ", first.shape().ToString(false),
                               " on device 0 but ", results[d][i].shape().ToString(false),
                               " on device ", d, " for result ", i,
                               "; fn must return the same shape and dtype on every device");
      }
    }
    const DType dtype = first.dtype();
    std::vector<int64_t> dims = first.dims();
    const PartitionSpec& spec = out_[i].spec();
    for (int d = 0; d < spec.size(); ++d) dims[d] *= TileCount(mesh_, spec.entries()[d]);
    std::vector<Buffer> buffers;
    for (int64_t d = 0; d < n; ++d) {
      XS_ASSIGN_OR_RETURN(Buffer b, client.device(d).Adopt(std::move(results[d][i])));
      buffers.push_back(std::move(b));
    }
    XS_ASSIGN_OR_RETURN(ShardedArray a, ShardedArray::FromShards(dtype, std::move(dims),
                                                                 out_[i], std::move(buffers)));
    outputs.push_back(std::move(a));
  }
  return outputs;
}

}  // namespace xs
