// The single-device executor: runs a Module's entry computation on host Arrays with XLA's exact
// semantics. Create() plans every computation once (operand slots, kernel function pointers,
// when each buffer dies); Run() then only walks the plan, so the per-instruction overhead on tiny
// arrays is a few tens of nanoseconds. Memory is planned at Create too (executable_memory.cc):
// temporaries the executor writes get offsets in one arena by liveness (a dying operand's buffer
// is reused in place for an elementwise result of the same size), so arena_bytes() is known
// before any run and a run allocates and zero-fills none of it; reshape, bitcast, copy, tuple and
// get-tuple-element alias their operand. The root's results are planned in the arena too and
// returned as views that keep that arena alive (the next run takes another one meanwhile).
//
//   XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> m, ParseHloModule(text));
//   XS_ASSIGN_OR_RETURN(std::vector<Array> out, Execute(*m, {x, y}));
//
// Unsupported ops or attributes are a Status naming the instruction ("unsupported: instruction
// 'fft.3' (fft) is not supported by the executor"), never a wrong answer. Collectives run with
// one participant (identity, as XLA defines one-device groups) unless ExecuteOptions::collectives
// routes them to a multi-device runtime.
#ifndef XSHARD_EXEC_EXECUTABLE_H_
#define XSHARD_EXEC_EXECUTABLE_H_

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/module.h"

namespace xs {

class ComputeGate;
class RunMonitor;

// Runs one collective instruction (all-reduce, all-gather, reduce-scatter, all-to-all,
// collective-permute, collective-broadcast, and their -start forms) for this device. The
// multi-device runtime implements it over its Communicator; without one the executor uses the
// one-participant semantics. `operands` are the instruction's operand arrays (tuple operands
// flattened); the result is the flattened leaves of the instruction's (non -start) result.
// `into` is empty or holds one buffer per result leaf (null: none), contents unspecified (the
// executor's planned arena buffers): a leaf of the same dtype and dims is written there and
// returned as a view of it.
class CollectiveRunner {
 public:
  virtual ~CollectiveRunner() = default;
  virtual StatusOr<std::vector<Array>> RunCollective(const Instruction& inst,
                                                     std::span<const Array* const> operands,
                                                     std::span<Array* const> into) = 0;
};

struct ExecuteOptions {
  // Threads OpenBLAS uses for this run's GEMMs (process-wide setting, applied before running);
  // 0 leaves the current setting. The single-device CLI passes the core count.
  int blas_threads = 0;
  // A while loop running more iterations than this fails (naming the loop); -1: no limit.
  int64_t max_while_iterations = -1;
  // What partition-id / replica-id return on this device (0 on one device).
  int64_t partition_id = 0;
  int64_t replica_id = 0;
  // Not owned; null = one-participant collectives.
  CollectiveRunner* collectives = nullptr;
  // Not owned; when set, kernels over 1 MiB of operands and result that cannot wait on another
  // device run inside it (see compute_gate.h). The SPMD executor shares one per run.
  ComputeGate* compute_gate = nullptr;
  // Elementwise chains run as fused tile loops (fusion_plan.h); false (or the environment variable
  // XSHARD_FUSION=0) runs them op by op, for A/B comparisons and debugging.
  bool fusion = true;
  // Threads a big fused loop or reduce of this device may use (kernels/parallel.h); 0: every core
  // of the process. The SPMD executor passes max(1, cores / devices running at once).
  int intra_op_threads = 0;
  // Not owned; when set, the run publishes its progress to monitor->progress(monitor_rank) and
  // returns the monitor's stop reason at the first step after RunMonitor::Stop (run_monitor.h).
  RunMonitor* monitor = nullptr;
  int64_t monitor_rank = 0;
};

// Figures of one run.
struct ExecuteStats {
  int64_t instructions_run = 0;  // every instruction executed, incl. loop and call bodies
  // The arena (Executable::arena_bytes) plus the most bytes of other executor-allocated
  // buffers (kernel results, outputs, donated arguments) alive at once.
  int64_t peak_bytes = 0;
};

// A result with its tuple structure: an array leaf, or a tuple of values.
struct Value {
  std::optional<Array> array;     // set for arrays
  std::vector<Value> elements;    // tuple elements (array unset)
  bool IsTuple() const { return !array.has_value(); }
  // Leaves in order (depth first).
  std::vector<Array> Flatten() &&;
};

class Program;  // the plans of all computations (executable_plan.h)

class Executable {
 public:
  // Plans the module (which must outlive the Executable). Error for an unsupported op,
  // attribute, element type or called computation, naming the instruction.
  static StatusOr<std::unique_ptr<Executable>> Create(const Module& module);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // Runs the entry computation. `args` are the entry parameters in order, tuple-shaped
  // parameters given as their leaves; each must match its parameter's dtype and dims (error names
  // both, e.g. "argument 1 has shape s32[8,1] but parameter 1 'Arg_1.2' of 'main.7' is
  // f32[8,1]"). Returns the root's leaves in order.
  StatusOr<std::vector<Array>> Run(std::span<const Array> args, const ExecuteOptions& options = {},
                                   ExecuteStats* stats = nullptr) const;
  // Same, with arguments the caller holds anywhere (several devices may read one array).
  StatusOr<std::vector<Array>> Run(std::span<const Array* const> args, const ExecuteOptions& options = {},
                                   ExecuteStats* stats = nullptr) const;
  // Same, keeping the root's tuple structure.
  StatusOr<Value> RunTuple(std::span<const Array> args, const ExecuteOptions& options = {},
                           ExecuteStats* stats = nullptr) const;
  // Run, taking ownership of the arguments (JAX's donate_argnums): a donated buffer is
  // overwritten in place by an elementwise result once nothing else reads it, so a step like
  // `x = x + y` allocates nothing. Donated buffers count in ExecuteStats::peak_bytes.
  StatusOr<std::vector<Array>> RunDonated(std::vector<Array> args, const ExecuteOptions& options = {},
                                          ExecuteStats* stats = nullptr) const;

  // Bytes of the arena a run uses for its temporaries and results, fixed at Create (each
  // concurrent run gets its own; a finished run's arena is reused by the next once the results
  // viewing it are dropped, so steady-state runs allocate and zero-fill none of it). The root's
  // array results of at least 64 bytes that the executor computes are views into the arena that
  // keep it alive; results passing an argument or constant through, results under 64 bytes and
  // buffers a kernel makes itself (sort, gather, ...) and donated arguments are extra.
  // `fused`: the default plan's arena; false: the op-by-op plan's (ExecuteOptions::fusion
  // false), whose unfused temporaries usually need more.
  int64_t arena_bytes(bool fused = true) const;

  const Module& module() const { return module_; }
  // The plans of every computation (executable_plan.h), read-only: for backends that run the
  // same per-device plan with their own kernels (cuda/ generates one kernel per step).
  const Program& program() const { return *program_; }
  // Shapes of the arguments Run expects (entry parameter leaves, in order).
  const std::vector<Shape>& argument_shapes() const { return argument_shapes_; }

 private:
  Executable(const Module& module, std::unique_ptr<Program> program);
  Status CheckArguments(std::span<const Array* const> args) const;
  StatusOr<Value> RunImpl(std::span<const Array* const> borrowed, std::vector<Array>* donated,
                          const ExecuteOptions& options, ExecuteStats* stats) const;
  // One run's arena, taken from the pool's free list (or allocated); it returns to the list when
  // the run and every result viewing it are gone (null when the plan needs no arena).
  std::shared_ptr<std::byte> LeaseArena(bool fused) const;
  const Module& module_;
  std::unique_ptr<Program> program_;
  std::vector<Shape> argument_shapes_;
  struct ArenaPool;  // arenas of finished runs (executable_memory.cc); outlives its leases
  std::shared_ptr<ArenaPool> arenas_;
};

// Create + Run in one call.
StatusOr<std::vector<Array>> Execute(const Module& module, std::span<const Array> args,
                                     const ExecuteOptions& options = {});
StatusOr<Value> ExecuteTuple(const Module& module, std::span<const Array> args,
                             const ExecuteOptions& options = {});

// Ends the message of a while loop stopped by ExecuteOptions::max_while_iterations (whose status
// has StatusDetail::kWhileIterationLimit).
inline constexpr std::string_view kWhileLimitNote = "(ExecuteOptions::max_while_iterations)";
// True when `s` is, or wraps (e.g. "device 3 failed: ..."), that error (decided by its detail).
inline bool ExceededWhileIterations(const Status& s) {
  return !s.ok() && s.detail() == StatusDetail::kWhileIterationLimit;
}

// The status an unsupported instruction gets: "unsupported: instruction 'fft.3' (fft) is not
// supported by the executor" plus `detail` ("; <detail>") when given; kUnimplemented, attributed to
// the instruction (Status::instruction() / opcode()).
Status UnsupportedInstruction(const Instruction& inst, std::string_view detail = "");

// True when the executor has a handler for `op` (unary / binary elementwise ops: when kernels/ has
// their kernel). For the cross-table test (jit/op_table_test.cc); some
// forms of a supported op may still be refused (a custom-call target, an element type).
bool ExecutorSupports(Opcode op);

}  // namespace xs

#endif  // XSHARD_EXEC_EXECUTABLE_H_
