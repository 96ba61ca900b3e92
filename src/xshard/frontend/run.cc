// Running jaxprs: the default client, CompileJaxpr (lower + ShardedProgram::Compile),
// RunCompiled (results with shardings and per-device buffers) and eager dispatch of one
// primitive through a cache of compiled single-equation programs.
#include <mutex>
#include <unordered_map>

#include "xshard/base/strings.h"
#include "xshard/frontend/jit.h"
#include "xshard/frontend/lower.h"
#include "xshard/frontend/primitive_rules.h"
#include "xshard/frontend/trace.h"
#include "xshard/runtime/client.h"

namespace xs::fe {

namespace {

std::mutex& ClientMutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<Client>& ClientSlot() {
  static std::shared_ptr<Client> client;
  return client;
}

}  // namespace

StatusOr<Client*> DefaultClient() {
  std::lock_guard<std::mutex> lock(ClientMutex());
  if (!ClientSlot()) {
    XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> c, Client::Create());
    ClientSlot() = std::move(c);
  }
  return ClientSlot().get();
}

void SetDefaultClient(std::shared_ptr<Client> client) {
  std::lock_guard<std::mutex> lock(ClientMutex());
  ClientSlot() = std::move(client);
}

namespace internal {

StatusOr<NamedSharding> ParseNamedShardingText(std::string_view text) {
  auto bad = [&]() {
    return InvalidArgument("cannot read sharding '", text,
                           "'; expected NamedSharding(mesh=Mesh('a': 4, ...), spec=P(...))");
  };
  constexpr std::string_view kHead = "NamedSharding(mesh=Mesh(";
  size_t spec_at = text.find("), spec=");
  if (text.substr(0, kHead.size()) != kHead || spec_at == std::string_view::npos ||
      text.back() != ')') {
    return bad();
  }
  std::string_view mesh_text = text.substr(kHead.size(), spec_at - kHead.size());
  std::string_view spec_text = text.substr(spec_at + 8, text.size() - spec_at - 9);
  std::vector<std::string> names;
  std::vector<int64_t> sizes, ids;
  size_t dev_at = mesh_text.find("device_ids=[");
  if (dev_at != std::string_view::npos) {
    std::string_view list = mesh_text.substr(dev_at + 12);
    list = list.substr(0, list.find(']'));
    for (std::string_view d : StrSplit(list, ',')) ids.push_back(std::stoll(std::string(d)));
    mesh_text = mesh_text.substr(0, dev_at);
  }
  for (std::string_view piece : StrSplit(mesh_text, ',')) {
    std::string item(piece);
    size_t q1 = item.find('\''), q2 = item.rfind('\''), colon = item.find(':');
    if (q1 == std::string::npos || q2 <= q1 || colon == std::string::npos) continue;
    names.push_back(item.substr(q1 + 1, q2 - q1 - 1));
    sizes.push_back(std::stoll(item.substr(colon + 1)));
  }
  if (names.empty()) return bad();
  XS_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create(names, sizes, ids));
  XS_ASSIGN_OR_RETURN(PartitionSpec spec, PartitionSpec::Parse(spec_text));
  return NamedSharding::Create(mesh, spec);
}

}  // namespace internal

namespace {

// The mesh of every sharding_constraint in `j` (and the jaxprs nested in it).
Status CollectMeshes(const Jaxpr& j, std::optional<Mesh>& mesh) {
  for (const Eqn& e : j.eqns) {
    for (const auto& [k, p] : e.params) {
      if (const auto* sub = std::get_if<std::shared_ptr<const Jaxpr>>(&p)) {
        if (*sub) XS_RETURN_IF_ERROR(CollectMeshes(**sub, mesh));
      }
      if (const auto* subs = std::get_if<JaxprList>(&p)) {
        for (const auto& sub : *subs)
          if (sub) XS_RETURN_IF_ERROR(CollectMeshes(*sub, mesh));
      }
    }
    if (e.primitive != "sharding_constraint") continue;
    auto it = e.params.find("sharding");
    if (it == e.params.end() || !std::holds_alternative<std::string>(it->second)) continue;
    XS_ASSIGN_OR_RETURN(NamedSharding s,
                        internal::ParseNamedShardingText(std::get<std::string>(it->second)));
    if (mesh && !(*mesh == s.mesh())) {
      return InvalidArgument("shardings refer to two meshes, ", mesh->ToString(), " and ",
                             s.mesh().ToString(), "; use one mesh per jitted function");
    }
    mesh = s.mesh();
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::shared_ptr<CompiledJaxpr>> CompileJaxpr(
    const Jaxpr& jaxpr, const std::string& name,
    const std::vector<std::optional<NamedSharding>>& in_shardings,
    const std::vector<std::optional<NamedSharding>>& out_shardings) {
  auto result = std::make_shared<CompiledJaxpr>();
  std::optional<Mesh>& mesh = result->mesh;
  for (const auto* list : {&in_shardings, &out_shardings}) {
    for (const auto& s : *list) {
      if (!s) continue;
      if (mesh && !(*mesh == s->mesh())) {
        return InvalidArgument("shardings refer to two meshes, ", mesh->ToString(), " and ",
                               s->mesh().ToString(), "; use one mesh per jitted function");
      }
      mesh = s->mesh();
    }
  }
  XS_RETURN_IF_ERROR(CollectMeshes(jaxpr, mesh));
  LowerOptions options;
  options.name = name;
  options.num_partitions = mesh ? mesh->num_devices() : 1;
  auto to_hlo = [&name](const std::vector<std::optional<NamedSharding>>& list,
                   const std::vector<AVal>& avals, const char* what)
      -> StatusOr<std::vector<std::optional<HloSharding>>> {
    std::vector<std::optional<HloSharding>> out;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i]) {
        out.push_back(std::nullopt);
        continue;
      }
      StatusOr<HloSharding> h = list[i]->ToHloSharding(static_cast<int>(avals[i].rank()));
      if (!h.ok()) {
        return Annotate(h.status(), StrCat(name, ": ", what, " ", i, " ", avals[i].ToString(), ": "));
      }
      out.push_back(*h);
    }
    return out;
  };
  std::vector<AVal> in_avals, out_avals;
  for (const Var& v : jaxpr.invars) in_avals.push_back(v.aval);
  for (const Atom& a : jaxpr.outvars) out_avals.push_back(a.aval());
  if (in_shardings.size() > in_avals.size() || out_shardings.size() > out_avals.size()) {
    return InvalidArgument(name, ": ", in_shardings.size(), " in_shardings / ",
                           out_shardings.size(), " out_shardings for ", in_avals.size(),
                           " inputs / ", out_avals.size(), " outputs; give one per value");
  }
  XS_ASSIGN_OR_RETURN(options.in_shardings, to_hlo(in_shardings, in_avals, "input"));
  XS_ASSIGN_OR_RETURN(options.out_shardings, to_hlo(out_shardings, out_avals, "output"));
  if (!options.in_shardings.empty()) options.in_shardings.resize(in_avals.size());
  if (!options.out_shardings.empty()) options.out_shardings.resize(out_avals.size());
  XS_ASSIGN_OR_RETURN(result->global, LowerJaxpr(jaxpr, options));
  XS_ASSIGN_OR_RETURN(result->program,
                      ShardedProgram::Compile(*result->global, options.num_partitions));
  result->out_avals = out_avals;
  return result;
}

namespace {

// Runs the program; arguments whose device buffers already have the sharding the program wants
// go to the devices as they are (replicated ones as views of the global value), as JAX passes
// committed arrays. Any other argument sends the whole call through ShardedProgram::Run, which
// scatters the global values.
StatusOr<ShardedResult> RunWithPlacement(const CompiledJaxpr& compiled, Client& client,
                                         const std::vector<Tensor>& args,
                                         const std::vector<Array>& globals) {
  const ShardedProgram& program = *compiled.program;
  int64_t n = program.num_devices();
  bool placed = n > 1 && program.argument_shardings().size() == args.size();
  std::vector<std::vector<Array>> shards(n, std::vector<Array>(args.size()));
  for (size_t i = 0; placed && i < args.size(); ++i) {
    const TensorImpl& t = *args[i].impl();
    const HloSharding& want = program.argument_shardings()[i];
    if (want.IsReplicated()) {
      for (int64_t d = 0; d < n; ++d) {
        shards[d][i] = Array::View(globals[i].shape(), const_cast<std::byte*>(globals[i].data()));
      }
      continue;
    }
    placed = want.IsTiled() && t.sharding && static_cast<int64_t>(t.shards.size()) == n;
    if (!placed) break;
    StatusOr<HloSharding> have = t.sharding->ToHloSharding(static_cast<int>(t.aval.rank()));
    placed = have.ok() && *have == want;
    for (int64_t d = 0; placed && d < n; ++d) {
      const Array& piece = t.shards[d];
      shards[d][i] = Array::View(piece.shape(), const_cast<std::byte*>(piece.data()));
    }
  }
  if (!placed) return program.Run(client, globals);
  XS_ASSIGN_OR_RETURN(SpmdResult r, program.RunPlaced(client, shards));
  return program.AssembleOutputs(std::move(r.outputs));
}

}  // namespace

StatusOr<std::vector<Tensor>> RunCompiled(const CompiledJaxpr& compiled,
                                          const std::vector<Tensor>& args) {
  // Non-owning views of the arguments' values (the Tensors outlive the run): no copy per call.
  std::vector<Array> arrays;
  for (const Tensor& t : args) {
    if (!t.ok() || t.is_tracer() || !t.impl()->value) XS_RETURN_IF_ERROR(t.value().status());
    const Array& v = *t.impl()->value;
    arrays.push_back(Array::View(v.shape(), const_cast<std::byte*>(v.data())));
  }
  XS_ASSIGN_OR_RETURN(Client * client, DefaultClient());
  if (client->num_devices() < compiled.program->num_devices()) {
    return InvalidArgument("the program needs ", compiled.program->num_devices(),
                           " devices but the default client has ", client->num_devices(),
                           "; SetDefaultClient with more devices (or XSHARD_DEVICES)");
  }
  XS_ASSIGN_OR_RETURN(ShardedResult r, RunWithPlacement(compiled, *client, args, arrays));
  std::vector<Tensor> outs;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    auto impl = std::make_shared<TensorImpl>();
    impl->aval = compiled.out_avals[i];
    if (r.assembled[i]) impl->value = std::move(r.outputs[i]);
    if (compiled.mesh) {
      StatusOr<NamedSharding> s = NamedSharding::FromHloSharding(
          *compiled.mesh, compiled.program->output_shardings()[i]);
      if (s.ok()) impl->sharding = *s;
      for (auto& device : r.device_outputs) impl->shards.push_back(std::move(device[i]));
    }
    outs.emplace_back(impl);
  }
  return outs;
}

namespace {

// A cache key for one equation's parameters (nested jaxprs by their printed text).
void AppendParamsKey(std::string& key, const Params& params) {
  for (const auto& [name, p] : params) {
    StrAppend(&key, name, "=");
    if (const auto* i = std::get_if<int64_t>(&p)) StrAppend(&key, *i);
    else if (const auto* l = std::get_if<IntList>(&p)) StrAppend(&key, "(", StrJoin(*l, ","), ")");
    else if (const auto* ls = std::get_if<IntLists>(&p)) {
      for (const IntList& x : *ls) StrAppend(&key, "(", StrJoin(x, ","), ")");
    } else if (const auto* t = std::get_if<DType>(&p)) StrAppend(&key, DTypeName(*t));
    else if (const auto* b = std::get_if<bool>(&p)) StrAppend(&key, *b ? "T" : "F");
    else if (const auto* d = std::get_if<double>(&p)) StrAppend(&key, *d);
    else if (const auto* str = std::get_if<std::string>(&p)) StrAppend(&key, *str);
    else if (const auto* j = std::get_if<std::shared_ptr<const Jaxpr>>(&p)) {
      if (*j) StrAppend(&key, PrintJaxpr(**j));
    } else if (const auto* js = std::get_if<JaxprList>(&p)) {
      for (const auto& j : *js)
        if (j) StrAppend(&key, PrintJaxpr(*j), ";");
    }
    key += ' ';
  }
}

}  // namespace

std::vector<Tensor> BindEager(const std::string& primitive, const std::vector<Tensor>& inputs,
                              Params params) {
  Jaxpr j;
  JaxprBuilder b(&j);
  std::vector<Atom> atoms;
  std::vector<std::optional<NamedSharding>> shardings;
  std::string key;
  for (const Tensor& t : inputs) {
    Var v = b.NewVar(t.aval());
    j.invars.push_back(v);
    atoms.push_back(Atom::OfVar(v));
    shardings.push_back(t.sharding() ? std::optional<NamedSharding>(*t.sharding()) : std::nullopt);
    StrAppend(&key, t.aval().ToString(), t.aval().weak_type ? "w" : "s",
              t.sharding() ? t.sharding()->ToString() : "-", ";");
  }
  StrAppend(&key, primitive, " ");
  AppendParamsKey(key, params);
  StatusOr<std::vector<Var>> outs = b.Bind(primitive, atoms, std::move(params));
  if (!outs.ok()) return {ErrorTensor(outs.status())};
  for (const Var& v : *outs) j.outvars.push_back(Atom::OfVar(v));
  static std::mutex mu;
  static auto* cache = new std::unordered_map<std::string, std::shared_ptr<CompiledJaxpr>>;
  std::shared_ptr<CompiledJaxpr> compiled;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) compiled = it->second;
  }
  if (!compiled) {
    StatusOr<std::shared_ptr<CompiledJaxpr>> c = CompileJaxpr(j, primitive, shardings, {});
    if (!c.ok()) return {ErrorTensor(Annotate(c.status(), StrCat("eager ", primitive, ": ")))};
    compiled = *c;
    std::lock_guard<std::mutex> lock(mu);
    (*cache)[key] = compiled;
  }
  StatusOr<std::vector<Tensor>> result = RunCompiled(*compiled, inputs);
  if (!result.ok()) return {ErrorTensor(Annotate(result.status(), StrCat("eager ", primitive, ": ")))};
  return *std::move(result);
}

}  // namespace xs::fe
