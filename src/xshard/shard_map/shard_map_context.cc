// ShardMapContext: JAX's named-axis collectives mapped onto the communicator. An axis tuple
// resolves (once per device, then cached) to replica groups over the mesh devices: devices that
// agree on every other mesh axis form a group, ordered by their index along the named axes.
#include <algorithm>
#include <complex>
#include <cstring>

#include "xshard/comm/collective_shapes.h"
#include "xshard/comm/collectives.h"
#include "xshard/shard_map/shard_map.h"

namespace xs {

std::string AxisNames::ToString() const {
  if (names_.size() == 1) return StrCat("'", names_[0], "'");
  std::string out = "(";
  for (size_t i = 0; i < names_.size(); ++i) StrAppend(&out, i ? ", '" : "'", names_[i], "'");
  return out + ")";
}

struct ShardMapContext::Axes {
  int64_t size = 1;
  int64_t index = 0;  // this device's index along the axes
  DeviceGroups groups = DeviceGroups::All(1);
  // Each device's group in mesh-position order (ppermute numbering), indexed by device.
  std::vector<std::vector<int64_t>> mesh_order;
};

ShardMapContext::ShardMapContext(const Mesh& mesh, int64_t device, Communicator& comm,
                                 int64_t intra_op_threads)
    : mesh_(mesh), device_(device), comm_(comm), intra_op_threads_(intra_op_threads) {}

ShardMapContext::~ShardMapContext() = default;

Status ShardMapContext::Fail(Status status) {
  comm_.Abort(status);
  return status;
}

CollectiveCall ShardMapContext::Call(std::string_view op) {
  CollectiveCall call;
  call.rank = device_;
  call.op_name = op;
  call.channel_id = ++channel_;
  return call;
}

StatusOr<const ShardMapContext::Axes*> ShardMapContext::Resolve(const AxisNames& names,
                                                               std::string_view op) {
  auto it = axes_.find(names.names());
  if (it != axes_.end()) return it->second.get();
  std::vector<int> axis_ids;
  for (const std::string& name : names.names()) {
    StatusOr<int> id = mesh_.AxisIndex(name);
    if (!id.ok()) {
      return Fail(InvalidArgument(op, " over ", names.ToString(), ": unknown mesh axis '", name,
                                  "'; the mesh ", mesh_.ToString(), " has axes '",
                                  StrJoin(mesh_.axis_names(), "', '"), "'"));
    }
    if (std::find(axis_ids.begin(), axis_ids.end(), *id) != axis_ids.end()) {
      return Fail(InvalidArgument(op, " over ", names.ToString(), ": axis '", name,
                                  "' is named twice"));
    }
    axis_ids.push_back(*id);
  }
  if (axis_ids.empty()) {
    return Fail(InvalidArgument(op, ": no axis name given; name at least one mesh axis"));
  }
  auto axes = std::make_unique<Axes>();
  const int64_t n = mesh_.num_devices();
  for (int a : axis_ids) axes->size *= mesh_.AxisSize(a);
  const int64_t num_groups = n / axes->size;
  std::vector<std::vector<int64_t>> groups(num_groups, std::vector<int64_t>(axes->size));
  axes->mesh_order.assign(n, {});
  std::vector<std::vector<int64_t>> by_position(num_groups);
  for (int64_t p = 0; p < n; ++p) {  // mesh positions, row-major
    const int64_t dev = mesh_.device_ids()[p];
    const std::vector<int64_t> coords = mesh_.CoordsOf(dev);
    int64_t index = 0, group = 0;
    for (int a : axis_ids) index = index * mesh_.AxisSize(a) + coords[a];
    for (int a = 0; a < mesh_.num_axes(); ++a) {
      if (std::find(axis_ids.begin(), axis_ids.end(), a) == axis_ids.end()) {
        group = group * mesh_.AxisSize(a) + coords[a];
      }
    }
    groups[group][index] = dev;
    by_position[group].push_back(dev);
    if (dev == device_) axes->index = index;
  }
  for (const auto& g : by_position) {
    for (int64_t dev : g) axes->mesh_order[dev] = g;
  }
  XS_ASSIGN_OR_RETURN(axes->groups, DeviceGroups::Create(std::move(groups), n, op));
  const Axes* out = axes.get();
  axes_.emplace(names.names(), std::move(axes));
  return out;
}

StatusOr<int64_t> ShardMapContext::AxisIndex(const AxisNames& axes) {
  XS_ASSIGN_OR_RETURN(const Axes* a, Resolve(axes, "axis_index"));
  return a->index;
}

StatusOr<int64_t> ShardMapContext::AxisSize(const AxisNames& axes) {
  XS_ASSIGN_OR_RETURN(const Axes* a, Resolve(axes, "axis_size"));
  return a->size;
}

StatusOr<Array> ShardMapContext::Reduce(const Array& x, const AxisNames& axes,
                                        ReductionKind kind, std::string_view op) {
  XS_ASSIGN_OR_RETURN(const Axes* a, Resolve(axes, op));
  return xs::AllReduce(comm_, Call(op), a->groups, x, kind);
}

StatusOr<Array> ShardMapContext::Psum(const Array& x, const AxisNames& axes) {
  return Reduce(x, axes, ReductionKind::kSum, "psum");
}
StatusOr<Array> ShardMapContext::Pmax(const Array& x, const AxisNames& axes) {
  return Reduce(x, axes, ReductionKind::kMax, "pmax");
}
StatusOr<Array> ShardMapContext::Pmin(const Array& x, const AxisNames& axes) {
  return Reduce(x, axes, ReductionKind::kMin, "pmin");
}

namespace {

// x / n element-wise in x's floating type (16-bit floats through f32, as XLA:CPU divides).
template <typename T>
void DivideAll(Array& a, double n) {
  for (T& v : a.values<T>()) v = static_cast<T>(v / static_cast<typename T::value_type>(n));
}

Status DivideInPlace(Array& a, int64_t n) {
  switch (a.dtype()) {
    case DType::kF32:
      for (float& v : a.values<float>()) v /= static_cast<float>(n);
      return OkStatus();
    case DType::kF64:
      for (double& v : a.values<double>()) v /= static_cast<double>(n);
      return OkStatus();
    case DType::kBF16:
      for (BFloat16& v : a.values<BFloat16>()) {
        v = FloatToBFloat16(BFloat16ToFloat(v) / static_cast<float>(n));
      }
      return OkStatus();
    case DType::kF16:
      for (Half& v : a.values<Half>()) v = FloatToHalf(HalfToFloat(v) / static_cast<float>(n));
      return OkStatus();
    case DType::kC64:
      DivideAll<std::complex<float>>(a, static_cast<double>(n));
      return OkStatus();
    case DType::kC128:
      DivideAll<std::complex<double>>(a, static_cast<double>(n));
      return OkStatus();
    default:
      return Unimplemented("pmean of ", DTypeName(a.dtype()), " is not supported");
  }
}

int NormalizeAxis(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

}  // namespace

StatusOr<Array> ShardMapContext::Pmean(const Array& x, const AxisNames& axes) {
  XS_ASSIGN_OR_RETURN(const Axes* a, Resolve(axes, "pmean"));
  if (x.dtype() == DType::kPred) {
    return Fail(InvalidArgument("pmean over ", axes.ToString(), ": a mean of pred values is not "
                                "defined; convert to a number type first"));
  }
  XS_ASSIGN_OR_RETURN(Array sum, xs::AllReduce(comm_, Call("pmean"), a->groups, x,
                                               ReductionKind::kSum));
  // JAX's pmean is psum(x) / n with true division: integers become f32.
  if (IsInteger(sum.dtype())) sum = sum.Convert(DType::kF32);
  XS_RETURN_IF_ERROR(DivideInPlace(sum, a->size));
  return sum;
}

StatusOr<Array> ShardMapContext::AllGather(const Array& x, const AxisNames& axes, int axis,
                                           bool tiled) {
  XS_ASSIGN_OR_RETURN(const Axes* a, Resolve(axes, "all_gather"));
  const int rank = x.rank();
  const int dim = NormalizeAxis(axis, tiled ? rank : rank + 1);
  if (dim < 0 || dim > (tiled ? rank - 1 : rank)) {
    return Fail(InvalidArgument("all_gather over ", axes.ToString(), ": axis ", axis,
                                " is out of range for ", x.shape().ToString(false), " with tiled=",
                                tiled, "; use an axis in 0..", tiled ? rank - 1 : rank));
  }
  if (tiled) return xs::AllGather(comm_, Call("all_gather"), a->groups, x, dim);
  // Stacking = gathering along a new size-1 dim inserted at `dim` (the bytes do not move).
  std::vector<int64_t> in_dims = x.dims();
  in_dims.insert(in_dims.begin() + dim, 1);
  std::vector<int64_t> out_dims = in_dims;
  out_dims[dim] = a->size;
  Array out(x.dtype(), out_dims);
  ConstBufferView in{x.data(), x.dtype(), in_dims};
  XS_RETURN_IF_ERROR(
      comm_.AllGather(Call("all_gather"), a->groups, in, BufferView::Of(out), dim));
  return out;
}

StatusOr<Array> ShardMapContext::PsumScatter(const Array& x, const AxisNames& axes,
                                             int scatter_dimension, bool tiled) {
  XS_ASSIGN_OR_RETURN(const Axes* a, Resolve(axes, "psum_scatter"));
  const int dim = NormalizeAxis(scatter_dimension, x.rank());
  if (tiled) {
    return xs::ReduceScatter(comm_, Call("psum_scatter"), a->groups, x, dim, ReductionKind::kSum);
  }
  if (dim < 0 || dim >= x.rank() || x.dims()[dim] != a->size) {
    return Fail(InvalidArgument(
        "psum_scatter over ", axes.ToString(), ": without tiled, dim ", scatter_dimension, " of ",
        x.shape().ToString(false), " must have the axis size ", a->size,
        " (it is removed); pass tiled=true to split it into equal pieces instead"));
  }
  // The piece of size 1 along `dim` is the result with that dim dropped (same bytes).
  std::vector<int64_t> piece_dims = x.dims();
  piece_dims[dim] = 1;
  std::vector<int64_t> out_dims = x.dims();
  out_dims.erase(out_dims.begin() + dim);
  Array out(x.dtype(), out_dims);
  BufferView view{out.data(), out.dtype(), piece_dims};
  XS_RETURN_IF_ERROR(comm_.ReduceScatter(Call("psum_scatter"), a->groups, ConstBufferView::Of(x),
                                         view, dim, ReductionKind::kSum));
  return out;
}

StatusOr<PermutePairs> ShardMapContext::PermutePairsOf(
    const AxisNames& axes, const std::vector<std::pair<int64_t, int64_t>>& perm) {
  XS_ASSIGN_OR_RETURN(const Axes* a, Resolve(axes, "ppermute"));
  std::vector<bool> src_used(a->size, false), dst_used(a->size, false);
  for (const auto& [src, dst] : perm) {
    if (src < 0 || src >= a->size || dst < 0 || dst >= a->size) {
      return Fail(InvalidArgument("ppermute over ", axes.ToString(), ": pair (", src, ", ", dst,
                                  ") is out of range for axis size ", a->size,
                                  "; indices run 0..", a->size - 1));
    }
    if (src_used[src] || dst_used[dst]) {
      return Fail(InvalidArgument("ppermute over ", axes.ToString(), ": pair (", src, ", ", dst,
                                  ") repeats a ", src_used[src] ? "source" : "destination",
                                  "; ppermute sources and destinations must be unique"));
    }
    src_used[src] = dst_used[dst] = true;
  }
  // Every group applies the same index pairs, with indices counted in mesh order (as JAX does).
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<bool> seen(mesh_.num_devices(), false);
  for (int64_t dev = 0; dev < mesh_.num_devices(); ++dev) {
    const std::vector<int64_t>& g = a->mesh_order[dev];
    if (seen[g[0]]) continue;
    for (int64_t m : g) seen[m] = true;
    for (const auto& [src, dst] : perm) pairs.emplace_back(g[src], g[dst]);
  }
  auto validated = PermutePairs::Create(std::move(pairs), mesh_.num_devices(), "ppermute");
  if (!validated.ok()) return Fail(validated.status());
  return validated;
}

StatusOr<Array> ShardMapContext::Ppermute(const Array& x, const AxisNames& axes,
                                          const std::vector<std::pair<int64_t, int64_t>>& perm) {
  XS_ASSIGN_OR_RETURN(PermutePairs pairs, PermutePairsOf(axes, perm));
  return xs::CollectivePermute(comm_, Call("ppermute"), pairs, x);
}

StatusOr<PendingCollective> ShardMapContext::PpermuteStart(
    Array x, const AxisNames& axes, const std::vector<std::pair<int64_t, int64_t>>& perm) {
  XS_ASSIGN_OR_RETURN(PermutePairs pairs, PermutePairsOf(axes, perm));
  PendingCollective p;
  p.in_ = std::move(x);
  p.out_ = Array(p.in_.shape());
  CollectiveCall call = Call("ppermute");
  call.async_handle = &p.handle_;
  XS_RETURN_IF_ERROR(comm_.CollectivePermute(call, pairs, ConstBufferView::Of(p.in_),
                                             BufferView::Of(p.out_)));
  p.active_ = true;
  return p;
}

StatusOr<PendingCollective> ShardMapContext::AllGatherStart(Array x, const AxisNames& axes,
                                                             int axis) {
  XS_ASSIGN_OR_RETURN(const Axes* a, Resolve(axes, "all_gather"));
  const int dim = NormalizeAxis(axis, x.rank());
  if (dim < 0 || dim >= x.rank()) {
    return Fail(InvalidArgument("all_gather over ", axes.ToString(), ": axis ", axis,
                                " is out of range for ", x.shape().ToString(false),
                                " with tiled=true; use an axis in 0..", x.rank() - 1));
  }
  PendingCollective p;
  p.in_ = std::move(x);
  std::vector<int64_t> dims = p.in_.dims();
  dims[dim] *= a->size;
  p.out_ = Array(p.in_.dtype(), dims);
  CollectiveCall call = Call("all_gather");
  call.async_handle = &p.handle_;
  XS_RETURN_IF_ERROR(comm_.AllGather(call, a->groups, ConstBufferView::Of(p.in_),
                                     BufferView::Of(p.out_), dim));
  p.active_ = true;
  return p;
}

StatusOr<Array> ShardMapContext::Done(PendingCollective& pending) {
  if (!pending.active_) {
    return Fail(FailedPrecondition("collective done on device ", device_, ": the pending "
                                   "collective was never started or is already done; call Done "
                                   "once per *Start"));
  }
  pending.active_ = false;
  XS_RETURN_IF_ERROR(comm_.Finish(device_, pending.handle_));
  pending.in_ = Array();
  return std::move(pending.out_);
}

StatusOr<Array> ShardMapContext::AllToAll(const Array& x, const AxisNames& axes, int split_axis,
                                          int concat_axis, bool tiled) {
  XS_ASSIGN_OR_RETURN(const Axes* a, Resolve(axes, "all_to_all"));
  int split = NormalizeAxis(split_axis, x.rank());
  int concat = NormalizeAxis(concat_axis, x.rank());
  if (tiled) return xs::AllToAll(comm_, Call("all_to_all"), a->groups, x, split, concat);
  if (split < 0 || split >= x.rank() || x.dims()[split] != a->size || concat < 0 ||
      concat >= x.rank()) {
    return Fail(InvalidArgument(
        "all_to_all over ", axes.ToString(), ": without tiled, split_axis ", split_axis, " of ",
        x.shape().ToString(false), " must have the axis size ", a->size,
        " and concat_axis ", concat_axis, " must be a dim of the result (0..", x.rank() - 1,
        "); pass tiled=true to split into equal pieces instead"));
  }
  // As JAX does: insert a size-1 dim for the new axis, exchange, drop the split dim.
  std::vector<int64_t> in_dims = x.dims();
  if (split < concat) {
    ++concat;
    in_dims.insert(in_dims.begin() + concat, 1);
  } else if (concat < split) {
    in_dims.insert(in_dims.begin() + concat, 1);
    ++split;
  }
  std::vector<int64_t> piece_dims = in_dims;
  piece_dims[split] /= a->size;
  piece_dims[concat] *= a->size;
  std::vector<int64_t> out_dims = piece_dims;
  if (split != concat) out_dims.erase(out_dims.begin() + split);
  Array out(x.dtype(), out_dims);
  ConstBufferView in{x.data(), x.dtype(), in_dims};
  BufferView view{out.data(), out.dtype(), piece_dims};
  XS_RETURN_IF_ERROR(
      comm_.AllToAll(Call("all_to_all"), a->groups, in, view, split, concat));
  return out;
}

}  // namespace xs
