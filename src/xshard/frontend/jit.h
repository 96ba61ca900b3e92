// Jit, MakeJaxpr, DevicePut, WithShardingConstraint and Pmap: JAX's transformations over
// Tensor functions.
//
//   auto sigmoid = [](Tensor x) { return 1 / (1 + Exp(-x)); };
//   StatusOr<Jaxpr> j = MakeJaxpr(sigmoid)(Tensor::Scalar(1.0));   // PrintJaxpr(*j): seed 002
//   JitFunction f = Jit(sigmoid, {.name = "sigmoid"});
//   Tensor y = f(Ones({10}));                                        // traced once, cached
//   std::string hlo = f.Lower(Ones({10}))->AsText();                 // HloModule jit_sigmoid
//
// Runs use a process-wide Client, created on first use with DefaultDeviceCount() devices (8
// unless XSHARD_DEVICES says otherwise); SetDefaultClient replaces it. A function jitted without
// shardings runs on one device; with shardings, on the devices of their mesh.
#ifndef XSHARD_FRONTEND_JIT_H_
#define XSHARD_FRONTEND_JIT_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "xshard/frontend/tensor.h"
#include "xshard/ir/module.h"

namespace xs {
class Client;
class ShardedProgram;
}  // namespace xs

namespace xs::fe {

struct CompiledJaxpr;

// The process-wide client Tensors run on (created on first use; errors from Client::Create).
StatusOr<Client*> DefaultClient();
// Replaces the default client (tensors already computed keep their values).
void SetDefaultClient(std::shared_ptr<Client> client);

// NamedSharding(mesh, P(...)) from the spec's JAX text: MakeSharding(mesh, "P('a', None)").
// Errors name the spec and the mesh's axes.
StatusOr<NamedSharding> MakeSharding(const Mesh& mesh, std::string_view spec);

// jax.device_put: the global value of `x` split over `sharding`'s mesh; the result carries the
// sharding and one buffer per mesh device. Inside a trace: a sharding_constraint equation.
// Errors: a spec longer than x's rank, an error Tensor.
Tensor DevicePut(const Tensor& x, const NamedSharding& sharding);
Tensor DevicePut(const Array& x, const NamedSharding& sharding);
// jax.lax.with_sharding_constraint: a `sharding_constraint[sharding=...]` equation (lowered to
// custom-call Sharding); outside a trace, DevicePut.
Tensor WithShardingConstraint(const Tensor& x, const NamedSharding& sharding);

using TensorFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Adapts a callable taking 0..4 Tensors (or one const std::vector<Tensor>&) and returning a
// Tensor or a std::vector<Tensor>; a JitFunction / GradFunction goes through its Call (so
// Grad(Jit(f)) and Jit(Grad(f)) take f's arguments, however many).
template <typename F>
TensorFn AsTensorFn(F f);

struct JitOptions {
  // One entry per argument / result; nullopt (or a short list) leaves the value to the argument's
  // own sharding and propagation.
  std::vector<std::optional<NamedSharding>> in_shardings = {};
  std::vector<std::optional<NamedSharding>> out_shardings = {};
  std::string name = "fn";  // module jit_<name>, pjit[name=...]
};

// jit(f).lower(args): the global HLO module with its shardings.
class Lowered {
 public:
  explicit Lowered(std::shared_ptr<const CompiledJaxpr> c) : c_(std::move(c)) {}
  const Module& module() const;
  // as_hlo_text()'s short form: `HloModule jit_<name>` ... (readable by `xshard run` and XLA).
  std::string AsText() const;
  // .compile(): the partitioned program; AsText() prints the SPMD module every device runs.
  class Compiled {
   public:
    explicit Compiled(std::shared_ptr<const CompiledJaxpr> c) : c_(std::move(c)) {}
    const ShardedProgram& program() const;
    std::string AsText() const;

   private:
    std::shared_ptr<const CompiledJaxpr> c_;
  };
  Compiled Compile() const { return Compiled(c_); }

 private:
  std::shared_ptr<const CompiledJaxpr> c_;
};

class JitFunction {
 public:
  JitFunction(TensorFn fn, JitOptions options);
  // Traces once per input signature (avals and shardings), compiles, caches and runs. Inside a
  // trace, binds a `pjit[jaxpr name]` equation instead, whose jaxpr constrains its inputs and
  // outputs to in_shardings / out_shardings with sharding_constraint equations; tracers of the
  // enclosing trace that fn closes over become extra pjit operands (JAX's closure conversion).
  StatusOr<std::vector<Tensor>> Call(const std::vector<Tensor>& args) const;
  // The single result (an error Tensor on failure or when fn has several results).
  template <TensorLike... Args>
  Tensor operator()(const Args&... args) const {
    StatusOr<std::vector<Tensor>> r = Call({AsTensor(args)...});
    if (!r.ok()) return Tensor::FromStatus(r.status());
    if (r->size() != 1) {
      return Tensor::FromStatus(InvalidArgument("Jit(", options_.name, ") returns ", r->size(),
                                                " results; use Call() to get them all"));
    }
    return (*r)[0];
  }
  StatusOr<Lowered> Lower(const std::vector<Tensor>& args) const;
  template <TensorLike... Args>
  StatusOr<Lowered> Lower(const Tensor& first, const Args&... rest) const {
    return Lower(std::vector<Tensor>{first, AsTensor(rest)...});
  }
  const JitOptions& options() const { return options_; }

 private:
  struct Cache;
  TensorFn fn_;
  JitOptions options_;
  std::shared_ptr<Cache> cache_;
};

template <typename F>
JitFunction Jit(F fn, JitOptions options = {}) {
  return JitFunction(AsTensorFn(std::move(fn)), std::move(options));
}

// make_jaxpr(fn)(args...): the traced Jaxpr (print it with PrintJaxpr). Errors: the first failed
// op inside fn.
StatusOr<Jaxpr> TraceJaxpr(const TensorFn& fn, const std::vector<Tensor>& args,
                           const std::string& name = "fn");
template <typename F>
auto MakeJaxpr(F fn, std::string name = "fn") {
  return [f = AsTensorFn(std::move(fn)), name](const TensorLike auto&... args) -> StatusOr<Jaxpr> {
    return TraceJaxpr(f, std::vector<Tensor>{AsTensor(args)...}, name);
  };
}

// jax.pmap(fn, in_axes)(x): fn runs on each device on x's slice along `in_axis` (size = device
// count used, at most the client's), lowered to one SPMD program with a manual (shard_map)
// region. The result stacks the per-device results along a new leading dim; AddressableShards()
// gives each device's buffer (without the mapped dim, like pmap's device_buffers). Errors name
// the axis and the sizes.
StatusOr<Tensor> Pmap(const TensorFn& fn, const Tensor& x, int64_t in_axis = 0,
                      const std::string& name = "fn");
// pmap with several arguments and results: in_axes[i] is argument i's mapped dim, or nullopt
// for an argument every device sees whole (in_axes=None). Mapped dims must have one size.
StatusOr<std::vector<Tensor>> PmapCall(const TensorFn& fn, const std::vector<Tensor>& args,
                                       const std::vector<std::optional<int64_t>>& in_axes,
                                       const std::string& name = "fn");

// ---- implementation of AsTensorFn ----
namespace internal {
template <typename R>
std::vector<Tensor> ToTensors(R&& r) {
  if constexpr (std::is_convertible_v<R, std::vector<Tensor>>) {
    return std::vector<Tensor>(std::forward<R>(r));
  } else {
    return std::vector<Tensor>{Tensor(std::forward<R>(r))};
  }
}
template <typename F, size_t... I>
TensorFn Arity(F f, std::index_sequence<I...>) {
  return [f = std::move(f)](const std::vector<Tensor>& a) -> std::vector<Tensor> {
    if (a.size() != sizeof...(I)) {
      return {Tensor::FromStatus(InvalidArgument("the function takes ", sizeof...(I),
                                                 " arguments, got ", a.size()))};
    }
    return ToTensors(f(a[I]...));
  };
}
}  // namespace internal

template <typename F>
TensorFn AsTensorFn(F f) {
  if constexpr (requires(const F& g, const std::vector<Tensor>& a) { g.Call(a); }) {
    // A JitFunction / GradFunction: any number of arguments, through its Call.
    return [f = std::move(f)](const std::vector<Tensor>& a) -> std::vector<Tensor> {
      auto r = f.Call(a);
      if (!r.ok()) return {Tensor::FromStatus(r.status())};
      return *std::move(r);
    };
  } else if constexpr (std::is_invocable_v<F, const std::vector<Tensor>&>) {
    return [f = std::move(f)](const std::vector<Tensor>& a) { return internal::ToTensors(f(a)); };
  } else if constexpr (std::is_invocable_v<F, Tensor>) {
    return internal::Arity(std::move(f), std::make_index_sequence<1>());
  } else if constexpr (std::is_invocable_v<F, Tensor, Tensor>) {
    return internal::Arity(std::move(f), std::make_index_sequence<2>());
  } else if constexpr (std::is_invocable_v<F, Tensor, Tensor, Tensor>) {
    return internal::Arity(std::move(f), std::make_index_sequence<3>());
  } else if constexpr (std::is_invocable_v<F, Tensor, Tensor, Tensor, Tensor>) {
    return internal::Arity(std::move(f), std::make_index_sequence<4>());
  } else {
    static_assert(std::is_invocable_v<F>,
                  "fn must take 0..4 Tensors or one const std::vector<Tensor>&");
    return internal::Arity(std::move(f), std::make_index_sequence<0>());
  }
}

}  // namespace xs::fe

#endif  // XSHARD_FRONTEND_JIT_H_
