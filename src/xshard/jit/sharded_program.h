// ShardedProgram: xshard's jax.jit with shardings. A global module (written for whole arrays,
// with sharding annotations on some values) is propagated, partitioned for N devices and cleaned
// up once; Run() takes the global arrays, gives each device its shard, runs the one SPMD program
// on N devices of a Client and reassembles the global outputs.
//
//   XS_ASSIGN_OR_RETURN(auto module, ParseHloModule(text));  // x: {devices=[4,1]<=[4]} ...
//   XS_ASSIGN_OR_RETURN(auto program, ShardedProgram::Compile(*module, 4));
//   std::cout << PrintHloModule(program->spmd_module());       // what every device runs
//   ClientOptions options;
//   options.num_devices = 4;
//   XS_ASSIGN_OR_RETURN(auto client, Client::Create(options));
//   XS_ASSIGN_OR_RETURN(ShardedResult r, program->Run(*client, {x, y}));  // r.outputs[0]: global
#ifndef XSHARD_JIT_SHARDED_PROGRAM_H_
#define XSHARD_JIT_SHARDED_PROGRAM_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/module.h"
#include "xshard/jit/compile_pipeline.h"
#include "xshard/jit/output_check.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/report.h"

namespace xs {

class Client;

struct ShardedResult {
  // The global outputs (root leaves). An output whose sharding holds per-device values (manual,
  // unreduced) has no global form: its entry is an empty f32[0] array and assembled[i] is false;
  // its pieces are in device_outputs.
  std::vector<Array> outputs;
  std::vector<bool> assembled;
  // device_outputs[d][i]: output leaf i as device d holds it (its padded shard).
  std::vector<std::vector<Array>> device_outputs;
  std::vector<SpmdDeviceMemory> memory;  // per device
};

class ShardedProgram {
 public:
  // Propagates shardings through `global`, partitions it for `num_devices` partitions and cleans
  // the SPMD module up (CompileModule's pipeline), then plans it for execution (SpmdExecutable).
  // global_module() is the propagated module. The SPMD module is marked is_scheduled (its
  // instruction order is final), so `xshard run` runs a printed copy as is instead of partitioning
  // it again. Errors: CompileModule's (replica_count > 1, num_devices outside 1..kMaxDevices,
  // every Partition() error, named by instruction) and SpmdExecutable::Create's (an op the
  // executor does not support; `xshard partition` calls CompileModule and plans nothing).
  static StatusOr<std::unique_ptr<ShardedProgram>> Compile(const Module& global, int64_t num_devices,
                                                           const CompileOptions& options = {});

  int64_t num_devices() const { return num_devices_; }
  const Module& global_module() const { return *global_; }
  const Module& spmd_module() const { return *spmd_; }
  const spmd::PartitionReport& report() const { return report_; }
  // Global shapes and shardings of the entry parameter leaves and of the root's leaves.
  const std::vector<Shape>& argument_shapes() const { return argument_shapes_; }
  const std::vector<HloSharding>& argument_shardings() const { return argument_shardings_; }
  const std::vector<Shape>& output_shapes() const { return output_shapes_; }
  const std::vector<HloSharding>& output_shardings() const { return output_shardings_; }

  // Each device's inputs: shards[d][i] is argument leaf i's padded shard on device d (zeros in
  // the padding; a maximal sharding puts the array on its device and zeros elsewhere; manual
  // arguments are given to every device as they are). Errors name the argument whose count,
  // dtype or dims do not match.
  StatusOr<std::vector<std::vector<Array>>> ShardArguments(const std::vector<Array>& args) const;
  // The inverse for outputs: global arrays from every device's padded output shards (replicas
  // are taken from the lowest device holding each piece).
  StatusOr<ShardedResult> AssembleOutputs(std::vector<std::vector<Array>> device_outputs) const;
  // Whether output leaf `i` holds per-device values (a manual or unreduced sharding): it has no
  // global array, only the devices' pieces.
  bool OutputHasPerDeviceValues(size_t i) const { return output_per_device_[i]; }
  // Where output leaf `i` lies in the devices' outputs (device_outputs[d][i]: device d's padded
  // shard): one block per piece of its sharding, read from the lowest device holding it; the
  // blocks tile the global array. Errors: an output with per-device values, a device output of
  // another shape than its shard.
  StatusOr<std::vector<OutputBlock>> OutputBlocks(size_t i,
                                                   const std::vector<std::vector<Array>>& device_outputs) const;
  // Global output leaf `i` from the devices' outputs: one array written block by block (no copy
  // of a piece on the way). Errors as OutputBlocks.
  StatusOr<Array> AssembleOutput(size_t i, const std::vector<std::vector<Array>>& device_outputs) const;

  // ShardArguments (without copying: replicated and manual arguments are read by every device
  // from `args` itself), SpmdExecutable::Run on the client's first num_devices() devices, and
  // AssembleOutputs. The client must have at least num_devices() devices.
  StatusOr<ShardedResult> Run(Client& client, const std::vector<Array>& args,
                              const SpmdRunOptions& options = {}) const;
  // The per-device execution alone, on shards already placed on the devices (shards[d][i]:
  // argument leaf i on device d, as ShardArguments returns them): no scatter, no gather; the
  // devices' outputs come back as they hold them (SpmdResult::outputs[d]). This is what a
  // benchmark times, like JAX timing a jitted call on already-sharded arrays (Compile's plan,
  // shared with Run). Errors as SpmdExecutable::Run's, and a client with fewer than
  // num_devices() devices.
  StatusOr<SpmdResult> RunPlaced(Client& client, const std::vector<std::vector<Array>>& shards,
                                 const SpmdRunOptions& options = {}) const;
  // Run without the gather: the global arguments placed as Run places them, and the devices'
  // outputs as they hold them (views of each device's arena: no copy). For a caller that needs
  // no global output, or assembles the ones it needs with AssembleOutput, so that a run's memory
  // stays the arguments, the devices' arenas and what the caller asks for. Errors as Run's.
  StatusOr<SpmdResult> RunWithoutGather(Client& client, const std::vector<Array>& args,
                                        const SpmdRunOptions& options = {}) const;

 private:
  // Each device's argument leaves: pointers into the caller's arrays (replicated, manual, the
  // maximal owner) or into `owned` (tiled shards, maximal zeros), which never moves its elements.
  struct DeviceArguments {
    std::deque<Array> owned;
    std::vector<std::vector<const Array*>> per_device;
  };
  StatusOr<DeviceArguments> PlaceArguments(const std::vector<Array>& args) const;
  // The SPMD executable Compile planned; errors: a client with fewer than num_devices() devices.
  StatusOr<const SpmdExecutable*> Planned(const Client& client) const;

  ShardedProgram() = default;
  int64_t num_devices_ = 1;
  std::unique_ptr<Module> global_;
  std::unique_ptr<Module> spmd_;
  std::unique_ptr<SpmdExecutable> executable_;  // planned by Compile
  spmd::PartitionReport report_;
  std::vector<Shape> argument_shapes_, output_shapes_;
  std::vector<HloSharding> argument_shardings_, output_shardings_;
  std::vector<bool> output_per_device_;  // OutputHasPerDeviceValues
};

// True when `module` is a global program to partition: some instruction carries a sharding and
// the module is not already an SPMD program (XLA's compiled modules and `xshard partition`'s
// output are marked is_scheduled=true).
bool NeedsPartitioning(const Module& module);

// Why running `global` on one device would not compute what its partitioned program computes, or
// nullopt when it would: the first instruction that means something per device (a collective,
// partition-id / replica-id, a manual or unreduced sharding, an SPMDFullToShardShape /
// SPMDShardToFullShape custom-call), e.g. "'psum.3' (all-reduce) communicates between devices".
// `xshard run --check` then compares with the partitioned ReplicatedReference instead.
std::optional<std::string> PerDeviceSemantics(const Module& global);

// The reference for a module with per-device semantics (PerDeviceSemantics): a copy whose
// automatic shardings are all replaced by {replicated}, keeping only what defines the per-device
// meaning (manual and unreduced shardings, and the tiled shardings at the boundaries of manual
// regions: the Sharding custom-calls feeding SPMDFullToShardShape and the SPMDShardToFullShape
// results). Partitioned, it computes the manual regions the same way but every automatic part
// replicated, so comparing the two checks the automatic partitioning of the original.
std::unique_ptr<Module> ReplicatedReference(const Module& global);

}  // namespace xs

#endif  // XSHARD_JIT_SHARDED_PROGRAM_H_
