// Internal to the frontend: what a Tensor holds (a concrete value with its sharding and device
// buffers, a tracer of an active trace, or an error), the per-thread stack of traces, tracing a
// C++ function into a Jaxpr, and compiling / running a Jaxpr on the default client.
#ifndef XSHARD_FRONTEND_TRACE_H_
#define XSHARD_FRONTEND_TRACE_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xshard/frontend/jaxpr.h"
#include "xshard/frontend/tensor.h"
#include "xshard/ir/module.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/sharding/named_sharding.h"

namespace xs::fe {

struct TraceState {
  std::string owner;  // "MakeJaxpr(sigmoid)": named in leaked-tracer errors
  Jaxpr jaxpr;
  std::unique_ptr<JaxprBuilder> builder;
  bool active = true;
  Status first_error;                         // the first op error seen in this trace
  // Concrete non-scalar inputs turned constvars; `kept` holds them so that no address is reused
  // by another Tensor while the trace runs.
  std::map<const TensorImpl*, Var> captured;
  std::vector<std::shared_ptr<TensorImpl>> kept;
  // Closure conversion: tracers of enclosing (still active) traces used here become extra
  // inputs, appended after the declared ones. Only when the tracing caller allows it.
  bool allow_capture = false;
  std::map<const TensorImpl*, Var> capture_vars;
  std::vector<Var> capture_order;
  std::vector<Tensor> capture_tensors;
};

struct TensorImpl {
  Status status;  // not OK: an error Tensor
  AVal aval;
  // Concrete.
  std::optional<Array> value;
  std::optional<NamedSharding> sharding;
  std::vector<Array> shards;  // device d's buffer when a sharded program computed the value
  // Tracer.
  std::shared_ptr<TraceState> trace;
  Atom atom;
};

using TensorFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// The innermost active trace of this thread, or nullptr.
TraceState* CurrentTrace();

// Traces `fn` on fresh tracers of `in` into a Jaxpr (outputs that are concrete become literals
// or constvars). With `captured`, tracers of enclosing traces that fn closes over become extra
// trailing invars and `captured` receives them (the caller passes them as extra arguments);
// without it such a use is an error. Errors: the first failed op inside fn, an output from
// another trace.
StatusOr<Jaxpr> TraceFunction(const TensorFn& fn, const std::vector<AVal>& in,
                              const std::string& owner, std::vector<Tensor>* captured = nullptr);

// Binds an equation to the current trace (which must exist), inputs already checked OK.
std::vector<Tensor> BindTraced(TraceState& trace, const std::string& primitive,
                               const std::vector<Tensor>& inputs, Params params);

// A Jaxpr lowered and partitioned. mesh: the mesh the shardings refer to (none: one device).
struct CompiledJaxpr {
  std::unique_ptr<Module> global;
  std::unique_ptr<ShardedProgram> program;
  std::optional<Mesh> mesh;
  std::vector<AVal> out_avals;
};

// Lowers (LowerJaxpr with the shardings' HLO forms) and compiles for the mesh's device count.
// All given shardings must share one mesh (error names both meshes otherwise).
StatusOr<std::shared_ptr<CompiledJaxpr>> CompileJaxpr(
    const Jaxpr& jaxpr, const std::string& name,
    const std::vector<std::optional<NamedSharding>>& in_shardings,
    const std::vector<std::optional<NamedSharding>>& out_shardings);

// Runs a compiled jaxpr on the default client; results carry their output shardings (when
// expressible on the mesh) and each device's buffer.
StatusOr<std::vector<Tensor>> RunCompiled(const CompiledJaxpr& compiled,
                                          const std::vector<Tensor>& args);

// Runs one primitive eagerly (cached by primitive, parameters, input types and shardings).
std::vector<Tensor> BindEager(const std::string& primitive, const std::vector<Tensor>& inputs,
                              Params params);

// An error Tensor, and the first error among `inputs` (OK when none).
Tensor ErrorTensor(Status status);
Status FirstError(const std::vector<Tensor>& inputs);

}  // namespace xs::fe

#endif  // XSHARD_FRONTEND_TRACE_H_
