// JitFunction (trace once per signature, compile, cache, run; pjit inside traces), Lowered /
// Compiled texts, MakeJaxpr's TraceJaxpr, DevicePut and WithShardingConstraint.
#include "xshard/frontend/jit.h"

#include <map>
#include <mutex>

#include "xshard/base/strings.h"
#include "xshard/frontend/trace.h"
#include "xshard/text/printer.h"

namespace xs::fe {

const Module& Lowered::module() const { return *c_->global; }
std::string Lowered::AsText() const {
  return PrintHloModule(*c_->global, PrintOptions::Short());
}
const ShardedProgram& Lowered::Compiled::program() const { return *c_->program; }
std::string Lowered::Compiled::AsText() const {
  return PrintHloModule(c_->program->spmd_module(), PrintOptions::Short());
}

struct JitFunction::Cache {
  struct Entry {
    std::shared_ptr<const Jaxpr> jaxpr;
    std::shared_ptr<CompiledJaxpr> compiled;
  };
  std::mutex mu;
  std::map<std::string, Entry> entries;
};

JitFunction::JitFunction(TensorFn fn, JitOptions options)
    : fn_(std::move(fn)), options_(std::move(options)), cache_(std::make_shared<Cache>()) {}

namespace {

std::vector<AVal> StrongAVals(const std::vector<Tensor>& args) {
  std::vector<AVal> in;
  for (const Tensor& t : args) in.push_back(AVal{t.dtype(), t.dims(), false});
  return in;
}

std::vector<std::optional<NamedSharding>> EffectiveInShardings(const JitOptions& o,
                                                               const std::vector<Tensor>& args) {
  std::vector<std::optional<NamedSharding>> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < o.in_shardings.size() && o.in_shardings[i]) {
      out.push_back(o.in_shardings[i]);
    } else if (args[i].sharding() && !args[i].is_tracer()) {
      out.push_back(*args[i].sharding());
    } else {
      out.push_back(std::nullopt);
    }
  }
  return out;
}

// Compiled programs shared by every DevicePut of one aval and sharding.
StatusOr<std::shared_ptr<CompiledJaxpr>> IdentityProgram(const AVal& aval,
                                                         const NamedSharding& sharding) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::shared_ptr<CompiledJaxpr>>;
  std::string key = StrCat(aval.ToString(), sharding.ToString());
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  Jaxpr j;
  Var v{0, AVal{aval.dtype, aval.dims, false}};
  j.invars = {v};
  j.outvars = {Atom::OfVar(v)};
  XS_ASSIGN_OR_RETURN(auto compiled, CompileJaxpr(j, "device_put", {sharding}, {sharding}));
  std::lock_guard<std::mutex> lock(mu);
  (*cache)[key] = compiled;
  return compiled;
}

}  // namespace

StatusOr<std::vector<Tensor>> JitFunction::Call(const std::vector<Tensor>& args) const {
  XS_RETURN_IF_ERROR(FirstError(args));
  std::vector<std::optional<NamedSharding>> in_shardings = EffectiveInShardings(options_, args);
  std::string key;
  for (size_t i = 0; i < args.size(); ++i) {
    StrAppend(&key, args[i].aval().ToString(), "@",
              in_shardings[i] ? in_shardings[i]->ToString() : "-", ";");
  }
  bool nested = CurrentTrace() != nullptr;
  if (nested) key = "nested:" + key;
  std::vector<Tensor> captured;
  Cache::Entry entry;
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto it = cache_->entries.find(key);
    if (it != cache_->entries.end()) entry = it->second;
  }
  if (!entry.jaxpr) {
    // Nested in another trace, the shardings become sharding_constraint equations on the inner
    // jaxpr's inputs and outputs (top level, they are the lowered module's parameter and root
    // shardings instead).
    const JitOptions& o = options_;
    TensorFn traced = !nested ? fn_ : [f = fn_, o](const std::vector<Tensor>& in) {
      std::vector<Tensor> a = in;
      for (size_t i = 0; i < a.size() && i < o.in_shardings.size(); ++i)
        if (o.in_shardings[i]) a[i] = WithShardingConstraint(a[i], *o.in_shardings[i]);
      std::vector<Tensor> outs = f(a);
      for (size_t i = 0; i < outs.size() && i < o.out_shardings.size(); ++i)
        if (o.out_shardings[i]) outs[i] = WithShardingConstraint(outs[i], *o.out_shardings[i]);
      return outs;
    };
    XS_ASSIGN_OR_RETURN(Jaxpr j, TraceFunction(traced, StrongAVals(args),
                                               StrCat("Jit(", options_.name, ")"),
                                               nested ? &captured : nullptr));
    entry.jaxpr = std::make_shared<const Jaxpr>(std::move(j));
  }
  if (nested) {
    // A jaxpr that closes over outer tracers is not cached: the next call's closure differs.
    if (captured.empty()) {
      std::lock_guard<std::mutex> lock(cache_->mu);
      cache_->entries[key].jaxpr = entry.jaxpr;
    }
    std::vector<Tensor> inputs = args;
    inputs.insert(inputs.end(), captured.begin(), captured.end());
    std::vector<Tensor> outs =
        Bind("pjit", inputs, {{"jaxpr", entry.jaxpr}, {"name", options_.name}});
    XS_RETURN_IF_ERROR(FirstError(outs));
    return outs;
  }
  if (!entry.compiled) {
    XS_ASSIGN_OR_RETURN(entry.compiled, CompileJaxpr(*entry.jaxpr, options_.name, in_shardings,
                                                     options_.out_shardings));
    std::lock_guard<std::mutex> lock(cache_->mu);
    cache_->entries[key] = entry;
  }
  return RunCompiled(*entry.compiled, args);
}

StatusOr<Lowered> JitFunction::Lower(const std::vector<Tensor>& args) const {
  XS_RETURN_IF_ERROR(FirstError(args));
  XS_ASSIGN_OR_RETURN(Jaxpr j, TraceFunction(fn_, StrongAVals(args),
                                             StrCat("Jit(", options_.name, ")")));
  XS_ASSIGN_OR_RETURN(auto compiled, CompileJaxpr(j, options_.name,
                                                  EffectiveInShardings(options_, args),
                                                  options_.out_shardings));
  return Lowered(compiled);
}

StatusOr<Jaxpr> TraceJaxpr(const TensorFn& fn, const std::vector<Tensor>& args,
                           const std::string& name) {
  XS_RETURN_IF_ERROR(FirstError(args));
  return TraceFunction(fn, StrongAVals(args), StrCat("MakeJaxpr(", name, ")"));
}

StatusOr<NamedSharding> MakeSharding(const Mesh& mesh, std::string_view spec) {
  XS_ASSIGN_OR_RETURN(PartitionSpec p, PartitionSpec::Parse(spec));
  return NamedSharding::Create(mesh, p);
}

Tensor WithShardingConstraint(const Tensor& x, const NamedSharding& sharding) {
  if (!x.ok()) return x;
  StatusOr<HloSharding> check = sharding.ToHloSharding(static_cast<int>(x.rank()));
  if (!check.ok()) {
    return Tensor::FromStatus(Annotate(check.status(), StrCat("sharding ", sharding.ToString(),
                                                              " for ", x.aval().ToString(), ": ")));
  }
  if (CurrentTrace() == nullptr && !x.is_tracer()) return DevicePut(x, sharding);
  return Bind1("sharding_constraint", {x}, {{"sharding", sharding.ToString()}});
}

Tensor DevicePut(const Tensor& x, const NamedSharding& sharding) {
  if (!x.ok()) return x;
  if (CurrentTrace() != nullptr || x.is_tracer()) return WithShardingConstraint(x, sharding);
  StatusOr<HloSharding> check = sharding.ToHloSharding(static_cast<int>(x.rank()));
  if (!check.ok()) {
    return Tensor::FromStatus(Annotate(check.status(), StrCat("DevicePut ", x.aval().ToString(),
                                                              " to ", sharding.ToString(), ": ")));
  }
  StatusOr<std::shared_ptr<CompiledJaxpr>> program = IdentityProgram(x.aval(), sharding);
  if (!program.ok()) return Tensor::FromStatus(program.status());
  StatusOr<std::vector<Tensor>> out = RunCompiled(**program, {x});
  if (!out.ok()) return Tensor::FromStatus(out.status());
  (*out)[0].impl()->sharding = sharding;
  (*out)[0].impl()->aval.weak_type = x.aval().weak_type;
  return (*out)[0];
}

Tensor DevicePut(const Array& x, const NamedSharding& sharding) {
  return DevicePut(Tensor::FromArray(x), sharding);
}

}  // namespace xs::fe
