// Pallas-style kernels in C++ (jax.experimental.pallas's pallas_call): a kernel body runs once per
// point of an N-D grid, on refs to blocks of the device's local arrays chosen by BlockSpecs with
// index maps (grid index -> block index), plus scratch buffers and semaphores; ProgramId /
// NumPrograms / When as pl.program_id / pl.num_programs / pl.when. Blocks are copied into block
// buffers (Pallas's VMEM) when their block index changes and output blocks are written back when
// theirs does, as Pallas's pipeline does. Inside shard_map the kernel runs on every device, and
// with a RemoteTransport its body can copy into peers' buffers (cmm/remote_copy.h).
// Seed 004's tiled matmul (grid (M/bm, N/bn, K/bk), f32 accumulator):
//
//   auto body = [](KernelContext& k) -> Status {
//     XS_RETURN_IF_ERROR(When(k.ProgramId(2) == 0, [&] { return Fill(k.scratch(0), 0); }));
//     XS_RETURN_IF_ERROR(DotAccumulate(k.in(0), k.in(1), k.scratch(0)));
//     return When(k.ProgramId(2) == k.NumPrograms(2) - 1,
//                 [&] { return StoreConverted(k.scratch(0), k.out(0)); });
//   };
//   XS_ASSIGN_OR_RETURN(PallasKernel mm, PallasCall(body, {m / bm, n / bn, k / bk},
//       {BlockSpec::Blocked({bm, bk}, [](GridIndex g) { return Index{g[0], g[2]}; }),
//        BlockSpec::Blocked({bk, bn}, [](GridIndex g) { return Index{g[2], g[1]}; })},
//       {BlockSpec::Blocked({bm, bn}, [](GridIndex g) { return Index{g[0], g[1]}; })},
//       {Shape(DType::kF32, {m, n})}, {ScratchShape::Buffer(DType::kF32, {bm, bn})}));
//   XS_ASSIGN_OR_RETURN(std::vector<Array> c, mm.Run({x, y}));
#ifndef XSHARD_CMM_KERNEL_H_
#define XSHARD_CMM_KERNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/cmm/kernel_ref.h"
#include "xshard/cmm/remote_copy.h"
#include "xshard/core/array.h"
#include "xshard/shard_map/shard_map.h"
#include "xshard/sharding/mesh.h"

namespace xs::cmm {

using Index = std::vector<int64_t>;
// A grid point, as index maps receive it.
using GridIndex = std::span<const int64_t>;
// Grid index -> block index (one entry per array dim, counted in blocks).
using IndexMap = std::function<Index(GridIndex grid_index)>;

// How an operand is presented to the body.
struct BlockSpec {
  // pl.BlockSpec(block_shape, index_map): the body sees a block_shape block copied in from
  // block index index_map(grid index). Block dims must divide the array's dims.
  static BlockSpec Blocked(std::vector<int64_t> block_shape, IndexMap index_map);
  // pl.BlockSpec(memory_space=pl.ANY): the body sees the whole local array in place, the form
  // remote copies read and write.
  static BlockSpec Any();

  bool any = false;
  std::vector<int64_t> block_shape;
  IndexMap index_map;
};

// pltpu.VMEM(shape, dtype) and pltpu.SemaphoreType.X((count,)).
struct ScratchShape {
  static ScratchShape Buffer(DType dtype, std::vector<int64_t> dims);
  static ScratchShape Semaphores(SemaphoreType type, int count = 1);

  bool is_semaphore = false;
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  SemaphoreType semaphore_type = SemaphoreType::kRegular;
  int count = 0;
};

// What the body sees at one grid point.
class KernelContext {
 public:
  // pl.program_id(axis) / pl.num_programs(axis). A bad axis records an error (the call fails
  // after the body returns) and gives 0.
  int64_t ProgramId(int axis) const;
  int64_t NumPrograms(int axis) const;
  const Index& grid() const { return *grid_; }

  // The refs of the i-th input / output (blocks or whole arrays, as their specs say) and the i-th
  // scratch buffer; sem(i) is the i-th semaphore over all semaphore scratch shapes in order. A bad
  // index records an error and gives an invalid ref.
  const Ref& in(int i) const;
  const Ref& out(int i) const;
  const Ref& scratch(int i) const;
  Semaphore sem(int i) const;
  // pltpu.get_barrier_semaphore(): a REGULAR semaphore peers signal to meet.
  Semaphore BarrierSemaphore() const;

  // The device this runs on (a mesh device id; 0 without a mesh) and its mesh (null when run
  // without one).
  int64_t device() const;
  const Mesh* mesh() const;
  // jax.lax.axis_index / axis_size of one mesh axis; error names the axis and the mesh.
  StatusOr<int64_t> AxisIndex(std::string_view axis) const;
  StatusOr<int64_t> AxisSize(std::string_view axis) const;
  // Returns once every device of the mesh has reached a Barrier (needs a transport).
  Status Barrier() const;

 private:
  friend class PallasKernel;
  internal::Invocation* invocation_ = nullptr;
  const Index* grid_ = nullptr;
  Index program_;
  std::vector<Ref> in_, out_, scratch_;
  std::vector<Semaphore> sems_;
  Ref invalid_;
};

// pl.when(cond): runs fn when cond holds; its status is the result.
Status When(bool cond, const std::function<Status()>& fn);

using KernelBody = std::function<Status(KernelContext&)>;

struct PallasOptions {
  std::string name = "kernel";  // in error messages
  // Remote copies, remote signals and barriers go through it; null: none (a kernel that tries
  // gets an error). Must outlive the calls, shared by every device of the mesh.
  RemoteTransport* transport = nullptr;
};

// A kernel ready to run (PallasCall's result); copyable, immutable, shareable between devices.
class PallasKernel {
 public:
  // Runs on ctx's device over the device's local arrays; with a transport every device of the
  // mesh must run it. Errors name the kernel, the device, the grid point and the operand.
  StatusOr<std::vector<Array>> operator()(ShardMapContext& ctx,
                                          const std::vector<Array>& inputs) const;
  // Runs on `device` of `mesh` (the transport, if any, must be fed by every device).
  StatusOr<std::vector<Array>> RunOn(const Mesh* mesh, int64_t device,
                                     const std::vector<Array>& inputs) const;
  // Runs alone (device 0, no mesh, no peers).
  StatusOr<std::vector<Array>> Run(const std::vector<Array>& inputs) const {
    return RunOn(nullptr, 0, inputs);
  }

 private:
  friend StatusOr<PallasKernel> PallasCall(KernelBody, Index, std::vector<BlockSpec>,
                                           std::vector<BlockSpec>, std::vector<Shape>,
                                           std::vector<ScratchShape>, PallasOptions);
  struct Spec;
  std::shared_ptr<const Spec> spec_;
};

// pl.pallas_call(body, grid=grid, in_specs=..., out_specs=..., out_shape=..., scratch_shapes=...).
// Checks what it can without the inputs: grid dims >= 1, one out spec per out shape, block ranks
// and divisibility of the outputs, scratch dims; the inputs are checked when the kernel runs.
StatusOr<PallasKernel> PallasCall(KernelBody body, Index grid, std::vector<BlockSpec> in_specs,
                                  std::vector<BlockSpec> out_specs, std::vector<Shape> out_shapes,
                                  std::vector<ScratchShape> scratch_shapes = {},
                                  PallasOptions options = {});

}  // namespace xs::cmm

#endif  // XSHARD_CMM_KERNEL_H_
