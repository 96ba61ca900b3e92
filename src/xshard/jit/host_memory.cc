// Host memory estimate of a sharded run and the limit it is checked against.
#include "xshard/jit/host_memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "xshard/base/strings.h"
#include "xshard/runtime/device.h"
#include "xshard/sharding/geometry.h"

namespace xs {
namespace {

// Bytes of the per-device copies ShardedProgram::Run makes of one argument: a padded shard per
// device for tiled shardings, one zero array for maximal ones, none for replicated / manual.
int64_t PlacedBytes(const Shape& shape, const HloSharding& s, int64_t n) {
  if (s.IsMaximal()) return shape.byte_size();
  if (!s.IsTiled()) return 0;
  StatusOr<ShardGeometry> g = ShardGeometry::Create(s, shape.dims(), n);
  if (!g.ok()) return 0;
  return n * Shape(shape.dtype(), g->PaddedShardShape()).byte_size();
}

std::optional<int64_t> MemAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t value = 0;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return value * 1024;
  }
  return std::nullopt;
}

// The address space this process may still map under RLIMIT_AS (`ulimit -v`): the soft limit
// minus VmSize from /proc/self/status; nullopt when there is no limit. Under such a limit an
// allocation past it fails however much memory the machine has free.
std::optional<int64_t> FreeAddressSpace() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  std::ifstream in("/proc/self/status");
  std::string key;
  int64_t used = 0;
  while (in >> key) {
    if (key == "VmSize:") {
      in >> used;
      used *= 1024;
      break;
    }
    in.ignore(1 << 20, '\n');
  }
  const int64_t cap = limit.rlim_cur > static_cast<rlim_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(limit.rlim_cur);
  return std::max<int64_t>(0, cap - used);
}

std::optional<int64_t> AvailableHostMemory() {
  std::optional<int64_t> available = MemAvailable();
  if (std::optional<int64_t> free_space = FreeAddressSpace()) {
    available = available ? std::min(*available, *free_space) : *free_space;
  }
  return available;
}

}  // namespace

HostMemoryEstimate EstimateHostMemory(const ShardedProgram& program, bool reference, bool global_outputs) {
  const int64_t n = program.num_devices();
  const spmd::PartitionReport& report = program.report();
  HostMemoryEstimate e;
  for (const Shape& s : program.argument_shapes()) e.argument_bytes += s.byte_size();
  int64_t placed = 0;
  for (size_t i = 0; i < program.argument_shapes().size(); ++i) {
    placed += PlacedBytes(program.argument_shapes()[i], program.argument_shardings()[i], n);
  }
  // Each device's own buffers: its peak minus its parameters (the placed arguments above). The
  // devices' results are among them.
  const int64_t per_device = std::max<int64_t>(0, report.after.peak_bytes - report.after.parameter_bytes);
  e.device_bytes = placed + n * per_device;
  const int64_t during_run = e.argument_bytes + e.device_bytes;
  // After the run the placed shards and the devices' other buffers are gone; their results stay,
  // next to the assembled global copy of the outputs when one is made.
  const int64_t device_outputs = n * program.spmd_module().entry()->root()->shape().byte_size();
  if (global_outputs) {
    for (const Shape& s : program.output_shapes()) e.global_output_bytes += s.byte_size();
  }
  int64_t after_run = e.argument_bytes + device_outputs + e.global_output_bytes;
  if (reference) {
    // One device runs the global module; a module with per-device meaning is instead run
    // partitioned with its automatic shardings replicated: every device holds the global values.
    const int64_t one = std::max<int64_t>(0, report.before.peak_bytes - report.before.parameter_bytes);
    e.reference_bytes = PerDeviceSemantics(program.global_module()) ? n * one : one;
    after_run += e.reference_bytes;
  }
  e.peak_bytes = std::max(during_run, after_run);
  return e;
}

StatusOr<std::optional<int64_t>> HostMemoryLimit() {
  const char* env = std::getenv("XSHARD_HOST_MEMORY");
  if (env == nullptr || *env == '\0') return AvailableHostMemory();
  int64_t value = 0;
  if (!ParseByteCount(env, &value)) {
    return InvalidArgument("$XSHARD_HOST_MEMORY='", env, "' is not a positive byte count; give bytes or a "
                           "number with a K, M, G or T suffix (e.g. 8G), or unset it to use the available memory");
  }
  return std::optional<int64_t>(value);
}

Status CheckHostMemory(const ShardedProgram& program, bool reference, bool global_outputs, int64_t limit) {
  const HostMemoryEstimate e = EstimateHostMemory(program, reference, global_outputs);
  if (e.peak_bytes <= limit) return OkStatus();
  std::string parts = StrCat(FormatBytes(e.argument_bytes), " of global arguments, ", FormatBytes(e.device_bytes),
                             " on the ", program.num_devices(), " virtual devices");
  if (global_outputs) StrAppend(&parts, ", ", FormatBytes(e.global_output_bytes), " for the assembled outputs");
  if (reference) StrAppend(&parts, ", ", FormatBytes(e.reference_bytes), " for the --check reference");
  return Unsupported("running '", program.global_module().name(), "' on ", program.num_devices(),
                     " virtual devices in this process needs about ", FormatBytes(e.peak_bytes),
                     " of host memory (", parts, "), more than the ", FormatBytes(limit),
                     " it may use ($XSHARD_HOST_MEMORY, else the memory available)");
}

namespace {

int64_t SaturatingMul(int64_t a, int64_t b) {
  __int128 p = static_cast<__int128>(a) * b;
  return p > INT64_MAX ? INT64_MAX : static_cast<int64_t>(p);
}

int64_t SaturatingAdd(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

constexpr std::string_view kLimitNote = "$XSHARD_HOST_MEMORY, else the memory available";

}  // namespace

Status CheckModuleHostMemory(const Module& module, int64_t devices, int64_t extra_bytes) {
  XS_ASSIGN_OR_RETURN(std::optional<int64_t> limit, HostMemoryLimit());
  if (!limit || module.entry() == nullptr) return OkStatus();
  const Instruction* largest = nullptr;
  int64_t largest_bytes = 0;
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      const int64_t b = inst->shape().byte_size();
      if (b > largest_bytes) {
        largest_bytes = b;
        largest = inst;
      }
    }
  }
  const int64_t per_device = std::max(spmd::EstimateMemory(*module.entry(), 0).peak_bytes, largest_bytes);
  const int64_t need = SaturatingAdd(SaturatingMul(per_device, devices), extra_bytes);
  if (need <= *limit) return OkStatus();
  std::string detail = StrCat(FormatBytes(per_device), " per device");
  if (largest != nullptr) {
    StrAppend(&detail, "; the largest value is '", largest->name(), "' ", largest->shape().ToString(false), " = ",
              FormatBytes(largest_bytes));
  }
  return ResourceExhausted("running '", module.name(), "' on ", devices, " device(s) needs about ",
                           FormatBytes(need), " of host memory (", detail, "), more than the ", FormatBytes(*limit),
                           " available (", kLimitNote, "); use smaller shapes or fewer devices");
}

Status CheckHostBytes(int64_t bytes, std::string_view what) {
  XS_ASSIGN_OR_RETURN(std::optional<int64_t> limit, HostMemoryLimit());
  if (!limit || bytes <= *limit) return OkStatus();
  return ResourceExhausted(what, " needs ", FormatBytes(bytes), " of host memory, more than the ", FormatBytes(*limit),
                           " available (", kLimitNote, ")");
}

}  // namespace xs
