// PallasCall: spec checks, the grid loop with its block copies in and out, and one device's
// invocation (enter / body / exit through the transport).
#include "xshard/cmm/kernel.h"

#include <utility>

#include "xshard/base/strings.h"
#include "xshard/cmm/kernel_invocation.h"

namespace xs::cmm {

BlockSpec BlockSpec::Blocked(std::vector<int64_t> block_shape, IndexMap index_map) {
  BlockSpec s;
  s.block_shape = std::move(block_shape);
  s.index_map = std::move(index_map);
  return s;
}

BlockSpec BlockSpec::Any() {
  BlockSpec s;
  s.any = true;
  return s;
}

ScratchShape ScratchShape::Buffer(DType dtype, std::vector<int64_t> dims) {
  ScratchShape s;
  s.dtype = dtype;
  s.dims = std::move(dims);
  return s;
}

ScratchShape ScratchShape::Semaphores(SemaphoreType type, int count) {
  ScratchShape s;
  s.is_semaphore = true;
  s.semaphore_type = type;
  s.count = count;
  return s;
}

Status When(bool cond, const std::function<Status()>& fn) { return cond ? fn() : OkStatus(); }

int64_t KernelContext::ProgramId(int axis) const {
  if (axis < 0 || axis >= static_cast<int>(grid_->size())) {
    invocation_->Record(InvalidArgument("ProgramId(", axis, "): the grid (", StrJoin(*grid_, ", "),
                                        ") has axes 0..", grid_->size() - 1));
    return 0;
  }
  return program_[axis];
}

int64_t KernelContext::NumPrograms(int axis) const {
  if (axis < 0 || axis >= static_cast<int>(grid_->size())) {
    invocation_->Record(InvalidArgument("NumPrograms(", axis, "): the grid (",
                                        StrJoin(*grid_, ", "), ") has axes 0..",
                                        grid_->size() - 1));
    return 0;
  }
  return (*grid_)[axis];
}

namespace {
const Ref& Pick(const std::vector<Ref>& refs, int i, const char* what, internal::Invocation* inv,
                const Ref& invalid) {
  if (i < 0 || i >= static_cast<int>(refs.size())) {
    inv->Record(InvalidArgument(what, "(", i, "): the kernel has ", refs.size(), " ", what,
                                " refs (0..", static_cast<int64_t>(refs.size()) - 1, ")"));
    return invalid;
  }
  return refs[i];
}
}  // namespace

const Ref& KernelContext::in(int i) const { return Pick(in_, i, "in", invocation_, invalid_); }
const Ref& KernelContext::out(int i) const { return Pick(out_, i, "out", invocation_, invalid_); }
const Ref& KernelContext::scratch(int i) const {
  return Pick(scratch_, i, "scratch", invocation_, invalid_);
}

Semaphore KernelContext::sem(int i) const {
  if (i < 0 || i >= static_cast<int>(sems_.size())) {
    invocation_->Record(InvalidArgument("sem(", i, "): the kernel's scratch shapes declare ",
                                        sems_.size(), " semaphores"));
    return Semaphore();
  }
  return sems_[i];
}

Semaphore KernelContext::BarrierSemaphore() const {
  return Semaphore(invocation_, invocation_->num_semaphores() - 1, SemaphoreType::kRegular);
}

int64_t KernelContext::device() const { return invocation_->device(); }
const Mesh* KernelContext::mesh() const { return invocation_->mesh(); }

StatusOr<int64_t> KernelContext::AxisIndex(std::string_view axis) const {
  if (mesh() == nullptr) return FailedPrecondition("AxisIndex('", axis, "'): run without a mesh");
  XS_ASSIGN_OR_RETURN(int a, mesh()->AxisIndex(axis));
  return mesh()->CoordsOf(device())[a];
}

StatusOr<int64_t> KernelContext::AxisSize(std::string_view axis) const {
  if (mesh() == nullptr) return FailedPrecondition("AxisSize('", axis, "'): run without a mesh");
  XS_ASSIGN_OR_RETURN(int a, mesh()->AxisIndex(axis));
  return mesh()->AxisSize(a);
}

Status KernelContext::Barrier() const {
  if (invocation_->transport() == nullptr) {
    return FailedPrecondition(invocation_->Where(), ": Barrier needs a RemoteTransport in ",
                              "PallasOptions::transport");
  }
  return invocation_->transport()->Barrier(device());
}

struct PallasKernel::Spec {
  KernelBody body;
  Index grid;
  std::vector<BlockSpec> in_specs, out_specs;
  std::vector<Shape> out_shapes;
  std::vector<ScratchShape> scratch;
  PallasOptions options;
};

namespace {

std::string ShapeText(DType dtype, const std::vector<int64_t>& dims) {
  return StrCat(DTypeName(dtype), "[", StrJoin(dims, ","), "]");
}

// Checks a blocked spec against its array: rank and divisibility.
Status CheckBlocks(const BlockSpec& spec, const std::string& name, DType dtype,
                   const std::vector<int64_t>& dims) {
  if (spec.any) return OkStatus();
  if (spec.block_shape.size() != dims.size()) {
    return InvalidArgument(name, ": block shape (", StrJoin(spec.block_shape, ", "), ") has rank ",
                           spec.block_shape.size(), " but the array is ", ShapeText(dtype, dims),
                           "; give one block dim per array dim");
  }
  if (!spec.index_map) return InvalidArgument(name, ": a blocked spec needs an index map");
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t b = spec.block_shape[d];
    if (b < 1 || dims[d] % b != 0) {
      return InvalidArgument(name, ": block shape (", StrJoin(spec.block_shape, ", "),
                             ") does not divide the array ", ShapeText(dtype, dims), ": dim ", d,
                             " has ", dims[d], " elements, not a multiple of ", b,
                             "; pick block dims that divide the array dims");
    }
  }
  return OkStatus();
}

// One operand's state in the grid loop.
struct Operand {
  const BlockSpec* spec = nullptr;
  std::string name;  // "in_specs[0]"
  Ref whole;         // the whole local array
  Array block;       // the block buffer (blocked specs)
  Index current;     // block index held in `block`; empty: none yet
};

// The array view of block index `idx` of `op`; error when idx is out of range.
StatusOr<Ref> BlockView(const Operand& op, const Index& idx, const Index& point) {
  const auto& dims = op.whole.dims();
  const auto& bs = op.spec->block_shape;
  bool ok = idx.size() == dims.size();
  std::vector<Ds> slices;
  for (size_t d = 0; ok && d < dims.size(); ++d) {
    ok = idx[d] >= 0 && idx[d] < dims[d] / bs[d];
    slices.push_back(Ds{idx[d] * bs[d], bs[d]});
  }
  if (!ok) {
    std::vector<std::string> counts, ranges;
    for (size_t d = 0; d < dims.size(); ++d) {
      counts.push_back(StrCat(dims[d] / bs[d]));
      ranges.push_back(StrCat("[0, ", dims[d] / bs[d], ")"));
    }
    return InvalidArgument(op.name, ": the index map gave block index (", StrJoin(idx, ", "),
                           ") at grid point (", StrJoin(point, ", "), "), but ",
                           ShapeText(op.whole.dtype(), dims), " in blocks of (", StrJoin(bs, ", "),
                           ") has ", StrJoin(counts, " x "), " blocks; the index map must return ",
                           dims.size(), " indices in ", StrJoin(ranges, " x "));
  }
  return op.whole.At(slices);
}

Status CopyIn(Operand& op, const Ref& view) {
  Ref dst(nullptr, BufferId{}, view.dtype(), op.block.data(), view.dims());
  CopyStrided(dst.data(), dst.strides(), view.data(), view.strides(), view.dims(),
              DTypeSize(view.dtype()));
  return OkStatus();
}

void CopyOut(const Operand& op, const Ref& view) {
  Ref src(nullptr, BufferId{}, view.dtype(), const_cast<std::byte*>(op.block.data()), view.dims());
  CopyStrided(view.data(), view.strides(), src.data(), src.strides(), view.dims(),
              DTypeSize(view.dtype()));
}

// Moves every blocked operand to its block at grid point `point`: outputs whose block changes
// are written back first; inputs are fetched and outputs loaded when their index changes.
Status StepBlocks(std::vector<Operand>& ops, bool output, const Index& point) {
  for (Operand& op : ops) {
    if (op.spec->any) continue;
    const Index idx = op.spec->index_map(point);
    if (idx == op.current) continue;
    XS_ASSIGN_OR_RETURN(Ref view, BlockView(op, idx, point));
    if (output && !op.current.empty()) {
      XS_ASSIGN_OR_RETURN(Ref old, op.whole.At([&] {
        std::vector<Ds> s;
        for (size_t d = 0; d < op.current.size(); ++d) {
          s.push_back({op.current[d] * op.spec->block_shape[d], op.spec->block_shape[d]});
        }
        return s;
      }()));
      CopyOut(op, old);
    }
    XS_RETURN_IF_ERROR(CopyIn(op, view));
    op.current = idx;
  }
  return OkStatus();
}

Status Flush(std::vector<Operand>& outs, const Index& point) {
  for (Operand& op : outs) {
    if (op.spec->any || op.current.empty()) continue;
    XS_ASSIGN_OR_RETURN(Ref view, BlockView(op, op.current, point));
    CopyOut(op, view);
  }
  return OkStatus();
}

}  // namespace

StatusOr<PallasKernel> PallasCall(KernelBody body, Index grid, std::vector<BlockSpec> in_specs,
                                  std::vector<BlockSpec> out_specs, std::vector<Shape> out_shapes,
                                  std::vector<ScratchShape> scratch_shapes, PallasOptions options) {
  const std::string k = StrCat("pallas_call '", options.name, "'");
  for (int64_t g : grid) {
    if (g < 1) {
      return InvalidArgument(k, ": grid (", StrJoin(grid, ", "), ") has a dim ", g,
                             "; every grid dim must be >= 1");
    }
  }
  if (out_specs.size() != out_shapes.size()) {
    return InvalidArgument(k, ": ", out_specs.size(), " out specs for ", out_shapes.size(),
                           " out shapes; give one spec per output");
  }
  for (size_t i = 0; i < out_specs.size(); ++i) {
    XS_RETURN_IF_ERROR(Annotate(CheckBlocks(out_specs[i], StrCat("out_specs[", i, "]"),
                                            out_shapes[i].dtype(), out_shapes[i].dims()),
                                StrCat(k, ": ")));
  }
  for (size_t i = 0; i < scratch_shapes.size(); ++i) {
    const ScratchShape& s = scratch_shapes[i];
    bool bad = s.is_semaphore && s.count < 1;
    for (int64_t d : s.dims) bad = bad || d < 0;
    if (bad) {
      return InvalidArgument(k, ": scratch_shapes[", i, "] has a negative dim or a semaphore ",
                             "count below 1 (count ", s.count, ", dims (", StrJoin(s.dims, ", "),
                             "))");
    }
  }
  if (!body) return InvalidArgument(k, ": no kernel body");
  auto spec = std::make_shared<PallasKernel::Spec>();
  *spec = PallasKernel::Spec{std::move(body),      std::move(grid),       std::move(in_specs),
                             std::move(out_specs), std::move(out_shapes), std::move(scratch_shapes),
                             std::move(options)};
  PallasKernel kernel;
  kernel.spec_ = std::move(spec);
  return kernel;
}

StatusOr<std::vector<Array>> PallasKernel::operator()(ShardMapContext& ctx,
                                                      const std::vector<Array>& inputs) const {
  return RunOn(&ctx.mesh(), ctx.device(), inputs);
}

StatusOr<std::vector<Array>> PallasKernel::RunOn(const Mesh* mesh, int64_t device,
                                                 const std::vector<Array>& inputs) const {
  const Spec& s = *spec_;
  std::vector<SemaphoreType> sem_types;
  for (const ScratchShape& sc : s.scratch) {
    if (sc.is_semaphore) sem_types.insert(sem_types.end(), sc.count, sc.semaphore_type);
  }
  sem_types.push_back(SemaphoreType::kRegular);  // the barrier semaphore
  internal::Invocation inv(s.options.name, mesh, device, s.options.transport, sem_types);
  const std::string where = inv.Where();
  RemoteTransport* t = s.options.transport;
  // Errors before the kernel starts also abort the transport: the peers would wait for us.
  auto fail = [t](Status st) {
    if (t != nullptr) t->Abort(st);
    return st;
  };
  if (t != nullptr && mesh != nullptr && t->num_devices() != mesh->num_devices()) {
    return fail(InvalidArgument(where, ": the transport has ", t->num_devices(),
                                " devices but the mesh ", mesh->ToString(), " has ",
                                mesh->num_devices(), "; make one transport per mesh, with ",
                                "InProcessTransport(mesh.num_devices())"));
  }
  if (inputs.size() != s.in_specs.size()) {
    return fail(InvalidArgument(where, ": ", inputs.size(), " inputs for ", s.in_specs.size(),
                                " in specs; pass one array per in spec"));
  }
  KernelContext k;
  k.invocation_ = &inv;
  k.grid_ = &s.grid;
  std::vector<Operand> ins(inputs.size()), outs(s.out_shapes.size());
  std::vector<Array> results;
  std::vector<Array> scratch;
  KernelFrame& frame = inv.frame();
  auto add = [&](std::vector<Operand>& ops, size_t i, const BlockSpec& spec, BufferId::Kind kind,
                 std::byte* data, DType dtype, const std::vector<int64_t>& dims) {
    Operand& op = ops[i];
    op.spec = &spec;
    op.name = StrCat(kind == BufferId::Kind::kInput ? "in_specs[" : "out_specs[", i, "]");
    const bool writable = kind != BufferId::Kind::kInput;
    op.whole = Ref(&inv, BufferId{kind, static_cast<int>(i), false}, dtype, data, dims);
    frame.buffers.push_back({op.whole.id(), data, op.whole.byte_size(), writable});
    if (spec.any) return op.whole;
    op.block = Array(dtype, spec.block_shape);
    Ref block(&inv, BufferId{kind, static_cast<int>(i), true}, dtype, op.block.data(),
              spec.block_shape);
    frame.buffers.push_back({block.id(), op.block.data(), block.byte_size(), true});
    return block;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    Status check = CheckBlocks(s.in_specs[i], StrCat("in_specs[", i, "]"), inputs[i].dtype(),
                               inputs[i].dims());
    if (!check.ok()) return fail(Annotate(check, StrCat(where, ": ")));
    k.in_.push_back(add(ins, i, s.in_specs[i], BufferId::Kind::kInput,
                        const_cast<std::byte*>(inputs[i].data()), inputs[i].dtype(),
                        inputs[i].dims()));
  }
  results.reserve(s.out_shapes.size());
  for (size_t i = 0; i < s.out_shapes.size(); ++i) {
    results.emplace_back(s.out_shapes[i]);
    k.out_.push_back(add(outs, i, s.out_specs[i], BufferId::Kind::kOutput, results[i].data(),
                         s.out_shapes[i].dtype(), s.out_shapes[i].dims()));
  }
  int sem_index = 0;
  for (const ScratchShape& sc : s.scratch) {
    if (sc.is_semaphore) {
      for (int c = 0; c < sc.count; ++c) k.sems_.emplace_back(&inv, sem_index++, sc.semaphore_type);
      continue;
    }
    scratch.emplace_back(sc.dtype, sc.dims);
  }
  for (size_t i = 0; i < scratch.size(); ++i) {
    k.scratch_.emplace_back(&inv, BufferId{BufferId::Kind::kScratch, static_cast<int>(i), false},
                            scratch[i].dtype(), scratch[i].data(), scratch[i].dims());
    frame.buffers.push_back(
        {k.scratch_.back().id(), scratch[i].data(), scratch[i].byte_size(), true});
  }

  // From Enter on, peers may write into this device's buffers: every way out withdraws the frame
  // (waiting for copies in flight) before the buffers are freed.
  auto withdraw = [t, device](Status st) {
    t->Abort(st);
    t->Withdraw(device);
    return st;
  };
  if (t != nullptr) {
    Status entered = t->Enter(device, &frame);
    if (!entered.ok()) return withdraw(entered);
  }
  // Runs the grid; any error aborts the transport so the peers stop waiting for this device.
  auto run = [&]() -> Status {
    k.program_.assign(s.grid.size(), 0);
    int64_t total = 1;
    for (int64_t g : s.grid) total *= g;
    for (int64_t step = 0; step < total; ++step) {
      int64_t rest = step;
      for (int d = static_cast<int>(s.grid.size()) - 1; d >= 0; --d) {
        k.program_[d] = rest % s.grid[d];
        rest /= s.grid[d];
      }
      Status st = StepBlocks(ins, false, k.program_);
      if (st.ok()) st = StepBlocks(outs, true, k.program_);
      if (st.ok()) st = s.body(k);
      if (!inv.recorded().ok()) st = inv.recorded();  // the cause, e.g. a bad ref index
      if (!st.ok()) {
        return Annotate(st, StrCat(where, " at grid point (", StrJoin(k.program_, ", "), "): "));
      }
    }
    return Annotate(Flush(outs, k.program_), StrCat(where, ": "));
  };
  Status st = run();
  if (!st.ok()) return t != nullptr ? withdraw(st) : st;
  if (t != nullptr) XS_RETURN_IF_ERROR(t->Exit(device));
  XS_RETURN_IF_ERROR(inv.CheckSemaphoresZero());
  return results;
}

}  // namespace xs::cmm
