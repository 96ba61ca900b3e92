// Host memory for running a ShardedProgram in this process: an estimate of the peak (every
// virtual device's buffers live in host memory, next to the global arrays) and a check against
// what the machine can give, so that a program too big for it is refused up front with an
// "unsupported: ..." error instead of being killed by the kernel halfway through.
#ifndef XSHARD_JIT_HOST_MEMORY_H_
#define XSHARD_JIT_HOST_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "xshard/base/status.h"
#include "xshard/jit/sharded_program.h"

namespace xs {

// The peak bytes of a sharded run on global arguments (ShardedProgram::RunWithoutGather, plus
// with `global_outputs` the global copies AssembleOutput makes of the outputs, as ShardedProgram::Run
// does, and with `reference` a reference run for --check while the results are held; --check
// compares block by block and needs no global copy), from the partitioner's liveness estimates:
// the global arguments, the per-device shards made from them (replicated ones are shared), N x each
// device's own buffers during the run; after it the devices' results, the assembled outputs and the
// reference's buffers. Kernel scratch and loop bodies are not counted, so the true peak is at least
// this.
struct HostMemoryEstimate {
  int64_t peak_bytes = 0;
  int64_t argument_bytes = 0;       // global arguments
  int64_t device_bytes = 0;         // all devices' shards and buffers during the run
  int64_t global_output_bytes = 0;  // the assembled outputs (0 without `global_outputs`)
  int64_t reference_bytes = 0;      // the reference run's buffers (0 without `reference`)
};
HostMemoryEstimate EstimateHostMemory(const ShardedProgram& program, bool reference, bool global_outputs);

// What this process may use: $XSHARD_HOST_MEMORY (bytes, or with a K / M / G / T suffix, binary)
// when set, else MemAvailable from /proc/meminfo, lowered to the address space still free under
// an address-space limit (`ulimit -v`: the limit minus this process's VmSize) when that is less,
// else nullopt (no check). Error for a malformed $XSHARD_HOST_MEMORY, naming the value.
StatusOr<std::optional<int64_t>> HostMemoryLimit();

// Unimplemented "unsupported: ..." when the estimate exceeds `limit`, naming the module, the
// device count, the estimate's parts and the limit; OK otherwise.
Status CheckHostMemory(const ShardedProgram& program, bool reference, bool global_outputs, int64_t limit);

// The same gate for modules run as they are (one-device and SPMD modules): `devices` copies of
// each device's peak (spmd::EstimateMemory of the entry, and never less than the largest value of
// any computation, loop bodies included) plus `extra_bytes` (arguments, outputs). Error
// ResourceExhausted "running 'm' on N device(s) needs about X of host memory (...), more than the
// Y available ..." naming the largest value; OK when it fits or no limit is known.
Status CheckModuleHostMemory(const Module& module, int64_t devices, int64_t extra_bytes = 0);

// Error ResourceExhausted "<what> needs N of host memory, X available (...)" when `bytes`
// exceed HostMemoryLimit(); OK when they fit or no limit is known. For any other allocation
// whose size comes from the input (a file, --bytes).
Status CheckHostBytes(int64_t bytes, std::string_view what);

}  // namespace xs

#endif  // XSHARD_JIT_HOST_MEMORY_H_
