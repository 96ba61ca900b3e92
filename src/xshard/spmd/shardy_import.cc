// ImportShardyManualComputations: JAX's Shardy form of shard_map (xla.sdy.GlobalToLocalShape /
// LocalToGlobalShape around a call of the body) rewritten into the GSPMD form that the
// partitioner reads (Sharding + SPMDFullToShardShape / SPMDShardToFullShape, manual body).
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"
#include "xshard/spmd/shardy_import.h"

namespace xs {
namespace {

constexpr std::string_view kImportFix = " (lower with jax_use_shardy_partitioner=False)";
constexpr std::string_view kPrefix = "xla.sdy.";

bool IsTarget(const Instruction& inst, std::string_view target) {
  return inst.opcode() == Opcode::kCustomCall && inst.attrs().custom_call_target &&
         *inst.attrs().custom_call_target == target;
}

// The value text of `key=` inside a frontend_attributes={...} text: a quoted string (unescaped
// by the reader) or a balanced {...} group.
std::optional<std::string> HeaderAttribute(std::string_view text, std::string_view key) {
  size_t at = text.find(StrCat(key, "="));
  if (at == std::string_view::npos) return std::nullopt;
  size_t pos = at + key.size() + 1;
  if (pos >= text.size()) return std::nullopt;
  if (text[pos] == '"') {
    size_t end = pos + 1;
    while (end < text.size() && !(text[end] == '"' && text[end - 1] != '\\')) ++end;
    return std::string(text.substr(pos + 1, end - pos - 1));
  }
  int depth = 0;
  for (size_t end = pos; end < text.size(); ++end) {
    if (text[end] == '{') ++depth;
    if (text[end] == '}' && --depth == 0) return std::string(text.substr(pos, end - pos + 1));
  }
  return std::nullopt;
}

StatusOr<std::string> FrontendAttribute(const Instruction& inst, std::string_view key) {
  if (const auto& fa = inst.attrs().frontend_attributes) {
    for (const auto& [k, v] : *fa)
      if (k == key) return v;
  }
  return InvalidArgument("'", inst.name(), "' (", *inst.attrs().custom_call_target,
                         ") has no frontend attribute ", key);
}

struct ShardyContext {
  std::map<std::string, SdyMesh> meshes;
  // The manual axes around each computation's instructions: those of the shard_maps it is nested
  // in (the entry's and their callees' are empty).
  std::map<const Computation*, std::vector<std::string>> outer_axes;
  const std::vector<std::string>& OuterAxes(const Computation* c) const {
    static const std::vector<std::string> kNone;
    auto it = outer_axes.find(c);
    return it == outer_axes.end() ? kNone : it->second;
  }

  // Meshes written inline in a sharding (`<mesh<["a"=2]>, [...]>`), by their text.
  mutable std::map<std::string, SdyMesh> inline_meshes;

  StatusOr<const SdyMesh*> MeshOf(const SdyTensorSharding& s, const Instruction& inst) const {
    if (s.inline_mesh) return &inline_meshes.emplace(s.mesh, *s.inline_mesh).first->second;
    auto it = meshes.find(s.mesh);
    if (it == meshes.end()) {
      return InvalidArgument("'", inst.name(), "' uses sdy mesh @", s.mesh,
                             " that the module's xla.sdy.meshes frontend attribute does not define");
    }
    return &it->second;
  }
};

const Shape& ElementShape(const Instruction& inst, int i) {
  return inst.shape().IsTuple() ? inst.shape().tuple_shapes()[i] : inst.shape();
}

// The open dims of `s` ({"x", ?} or {?}) as a bit set (dims past 63 stay closed).
uint64_t OpenDims(const SdyTensorSharding& s) {
  uint64_t mask = 0;
  for (size_t d = 0; d < s.dims.size() && d < 64; ++d) {
    if (s.dims[d].open) mask |= uint64_t{1} << d;
  }
  return mask;
}

// Marks the open dims of a Sharding / boundary custom-call as JAX's GSPMD lowering does
// (backend_config="unspecified_dims=[0,1]"): propagation may add free axes to them.
void SetUnspecifiedDims(Instruction* inst, uint64_t open) {
  if (open == 0) return;
  std::string dims;
  for (int d = 0; d < 64; ++d) {
    if (open >> d & 1) StrAppend(&dims, dims.empty() ? "" : ",", d);
  }
  inst->mutable_attrs().backend_config = StrCat("\"unspecified_dims=[", dims, "]\"");
}

// Per operand: the shardings on both sides of one boundary custom-call, parsed from `attr`.
// Inside an enclosing shard_map (nested), both sides are also manual over the outer axes.
struct Boundary {
  std::vector<HloSharding> global, local;
  std::vector<uint64_t> open;  // per operand: its open dims ({"x", ?}), as a bit set
  const SdyMesh* mesh = nullptr;
  std::vector<std::string> manual_axes;  // this boundary's own
  std::vector<std::string> all_manual;   // the outer ones, then its own: the body's manual axes
};

StatusOr<Boundary> ReadBoundary(const ShardyContext& ctx, const Instruction& inst, std::string_view attr,
                                bool operands_are_global) {
  Boundary b;
  XS_ASSIGN_OR_RETURN(std::string shardings_text, FrontendAttribute(inst, attr));
  XS_ASSIGN_OR_RETURN(std::string manual_text, FrontendAttribute(inst, "xla.sdy.manual_axes"));
  XS_ASSIGN_OR_RETURN(std::vector<SdyTensorSharding> shardings, ParseSdyShardingPerValue(shardings_text));
  XS_ASSIGN_OR_RETURN(b.manual_axes, ParseSdyManualAxes(manual_text));
  const std::vector<std::string>& outer = ctx.OuterAxes(inst.parent());
  b.all_manual = outer;
  for (const std::string& a : b.manual_axes) {
    if (std::find(outer.begin(), outer.end(), a) != outer.end()) {
      return InvalidArgument("'", inst.name(), "' makes axis '", a, "' manual inside a shard_map that is "
                             "already manual over it");
    }
    b.all_manual.push_back(a);
  }
  if (static_cast<int>(shardings.size()) != inst.operand_count()) {
    return InvalidArgument("'", inst.name(), "' has ", inst.operand_count(), " operands but ", attr, " lists ",
                           shardings.size(), " shardings");
  }
  for (int i = 0; i < inst.operand_count(); ++i) {
    const Shape& global_shape = operands_are_global ? inst.operand(i)->shape() : ElementShape(inst, i);
    if (global_shape.IsTuple()) {
      return Unsupported("tuple-shaped value at '", inst.name(), "'", kImportFix);
    }
    XS_ASSIGN_OR_RETURN(const SdyMesh* mesh, ctx.MeshOf(shardings[i], inst));
    if (b.mesh != nullptr && !(*b.mesh == *mesh)) {
      return Unsupported("'", inst.name(), "' mixes sdy meshes", kImportFix);
    }
    b.mesh = mesh;
    const int rank = static_cast<int>(global_shape.dims().size());
    auto with_name = [&](StatusOr<HloSharding> s) -> StatusOr<HloSharding> {
      if (s.ok()) return s;
      if (s.status().code() == StatusCode::kUnimplemented) {
        return Unsupported("'", inst.name(), "': ", UnsupportedWhat(s.status()));
      }
      return Annotate(s.status(), StrCat("'", inst.name(), "': "));
    };
    // The local value is the global one cut by the manual axes only (Shardy's local type); free
    // axes a dim names after them are a placement hint that the boundary drops (the value is
    // resharded around it) rather than a tiled + manual sharding.
    XS_RETURN_IF_ERROR(with_name(SdyToHloSharding(*mesh, shardings[i], rank, b.all_manual)).status());
    SdyTensorSharding manual_only = shardings[i];
    manual_only.replicated.clear();
    for (SdyDimSharding& dim : manual_only.dims) {
      std::erase_if(dim.axes, [&](const std::string& a) {
        return std::find(b.manual_axes.begin(), b.manual_axes.end(), a) == b.manual_axes.end();
      });
    }
    XS_ASSIGN_OR_RETURN(HloSharding global, with_name(SdyToHloSharding(*mesh, manual_only, rank, outer)));
    XS_ASSIGN_OR_RETURN(HloSharding local,
                        with_name(SdyToHloSharding(*mesh, manual_only, rank, b.all_manual)));
    b.global.push_back(std::move(global));
    b.local.push_back(std::move(local));
    b.open.push_back(OpenDims(shardings[i]));
  }
  return b;
}

Instruction* AddCustomCall(Computation* c, std::string_view target, const Shape& shape, Instruction* operand,
                           HloSharding sharding, std::string name) {
  std::unique_ptr<Instruction> inst = Instruction::Create(Opcode::kCustomCall, shape, {operand}, std::move(name));
  inst->mutable_attrs().custom_call_target = std::string(target);
  inst->set_sharding(std::move(sharding));
  return c->AddInstruction(std::move(inst));
}

// Makes the users of `old` use results[i] for its element i (get-tuple-element users are
// bypassed, others get a tuple), then removes `old`.
Status ReplaceBoundary(Instruction* old, const std::vector<Instruction*>& results) {
  Computation* c = old->parent();
  if (!old->shape().IsTuple()) {
    old->ReplaceAllUsesWith(results[0]);
    return c->RemoveInstruction(old);
  }
  std::vector<Instruction*> users = old->users();
  Instruction* tuple = nullptr;
  for (Instruction* u : users) {
    if (u->opcode() == Opcode::kGetTupleElement) {
      u->ReplaceAllUsesWith(results[u->tuple_index()]);
      XS_RETURN_IF_ERROR(c->RemoveInstruction(u));
      continue;
    }
    if (tuple == nullptr) {
      std::vector<Shape> shapes;
      for (Instruction* r : results) shapes.push_back(r->shape());
      tuple = c->AddInstruction(Instruction::Create(Opcode::kTuple, Shape::Tuple(shapes), results));
    }
    for (int i = 0; i < u->operand_count(); ++i)
      if (u->operand(i) == old) u->ReplaceOperandWith(i, tuple);
  }
  if (old->IsRoot()) {
    if (tuple == nullptr) {
      std::vector<Shape> shapes;
      for (Instruction* r : results) shapes.push_back(r->shape());
      tuple = c->AddInstruction(Instruction::Create(Opcode::kTuple, Shape::Tuple(shapes), results));
    }
    old->ReplaceAllUsesWith(tuple);
  }
  return c->RemoveInstruction(old);
}

// The manual sharding of every leaf of `shape` (no data dim tiled).
StatusOr<HloSharding> ManualLike(const SdyMesh& mesh, const std::vector<std::string>& manual, const Shape& shape) {
  if (shape.IsTuple()) {
    std::vector<HloSharding> leaves;
    for (const Shape& s : shape.tuple_shapes()) {
      XS_ASSIGN_OR_RETURN(HloSharding leaf, ManualLike(mesh, manual, s));
      if (leaf.IsTuple()) {
        for (const HloSharding& e : leaf.tuple_elements()) leaves.push_back(e);
      } else {
        leaves.push_back(std::move(leaf));
      }
    }
    return HloSharding::Tuple(std::move(leaves));
  }
  SdyTensorSharding open;
  open.dims.resize(shape.dims().size());
  return SdyToHloSharding(mesh, open, static_cast<int>(shape.dims().size()), manual);
}

// The one tensor sharding of an xla.sdy.sharding value (`#sdy.sharding_per_value<[x]>` with one
// entry, or a bare `#sdy.sharding<...>`), or nullopt.
std::optional<SdyTensorSharding> OneTensorSharding(const std::string& value) {
  StatusOr<std::vector<SdyTensorSharding>> per_value = ParseSdyShardingPerValue(value);
  if (per_value.ok() && per_value->size() == 1) return (*per_value)[0];
  if (StatusOr<SdyTensorSharding> single = ParseSdyTensorSharding(value); single.ok()) return *single;
  return std::nullopt;
}

// The sharding Shardy wrote on an array instruction of a manual body (its xla.sdy.sharding
// frontend attribute) inside the manual axes, with its open dims; nullopt when there is none or
// it does not convert (the caller then uses the plain manual sharding).
std::optional<std::pair<HloSharding, uint64_t>> BodySharding(const Instruction& inst, const SdyMesh& mesh,
                                                             const std::vector<std::string>& manual) {
  if (!inst.shape().IsArray() || !inst.attrs().frontend_attributes) return std::nullopt;
  for (const auto& [key, value] : *inst.attrs().frontend_attributes) {
    if (key != "xla.sdy.sharding") continue;
    const std::optional<SdyTensorSharding> one = OneTensorSharding(value);
    const int rank = inst.shape().rank();
    if (!one || static_cast<int>(one->dims.size()) != rank) return std::nullopt;
    StatusOr<HloSharding> s = SdyToHloSharding(mesh, *one, rank, manual);
    if (!s.ok()) return std::nullopt;
    return std::make_pair(*std::move(s), OpenDims(*one));
  }
  return std::nullopt;
}

// Gives every annotated instruction of `body` and of the computations it calls its manual
// sharding (Shardy writes {replicated} there; GSPMD's form is manual): the xla.sdy.sharding it
// carries over the free axes, inside the manual ones, with its open dims left open as JAX's GSPMD
// lowering writes them (unspecified_dims), else the plain manual sharding. In a reducer (the scalar
// computation of an all-reduce, reduce, scatter, ...) Sharding custom-calls are dropped: they
// constrain nothing there and the executor runs reducers of plain arithmetic only. The bodies of
// nested shard_maps (in `done` already) are marked with their own, larger, manual set.
Status MarkManualBody(Computation* body, const SdyMesh& mesh, const std::vector<std::string>& manual,
                      bool reducer, std::set<Computation*>* done) {
  if (!done->insert(body).second) return OkStatus();
  if (reducer) {
    for (Instruction* inst : body->instructions()) {
      if (!IsTarget(*inst, "Sharding") || inst->operand_count() != 1) continue;
      inst->ReplaceAllUsesWith(inst->operand(0));
      XS_RETURN_IF_ERROR(body->RemoveInstruction(inst));
    }
  }
  for (Instruction* inst : body->instructions()) {
    if (inst->has_sharding()) {
      std::optional<std::pair<HloSharding, uint64_t>> own = BodySharding(*inst, mesh, manual);
      if (own) {
        inst->set_sharding(std::move(own->first));
        if (IsTarget(*inst, "Sharding")) SetUnspecifiedDims(inst, own->second);
      } else {
        XS_ASSIGN_OR_RETURN(HloSharding s, ManualLike(mesh, manual, inst->shape()));
        inst->set_sharding(std::move(s));
      }
    }
    const bool control = inst->opcode() == Opcode::kCall || inst->opcode() == Opcode::kWhile ||
                         inst->opcode() == Opcode::kConditional;
    for (Computation* callee : inst->called_computations()) {
      XS_RETURN_IF_ERROR(MarkManualBody(callee, mesh, manual, !control, done));
    }
  }
  return OkStatus();
}

// Fills ctx->outer_axes: a shard_map body is manual over the axes around its call plus its own;
// a computation called from one (a loop body, a branch, a nested body's callees) inherits them.
Status FindOuterAxes(const Module& module, const std::vector<std::pair<Instruction*, Computation*>>& bodies,
                     ShardyContext* ctx) {
  std::map<const Computation*, const Instruction*> caller;
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      for (const Computation* callee : inst->called_computations()) caller.emplace(callee, inst);
    }
  }
  std::map<const Computation*, const Instruction*> body_of;  // body -> its LocalToGlobalShape
  for (const auto& [l2g, body] : bodies) body_of[body] = l2g;
  // Walks up the callers from `c` (bounded: a cycle would be a malformed module).
  std::function<StatusOr<std::vector<std::string>>(const Computation*, int)> axes_of =
      [&](const Computation* c, int depth) -> StatusOr<std::vector<std::string>> {
    if (auto it = ctx->outer_axes.find(c); it != ctx->outer_axes.end()) return it->second;
    auto up = caller.find(c);
    if (up == caller.end() || depth > 64) return std::vector<std::string>{};
    XS_ASSIGN_OR_RETURN(std::vector<std::string> axes, axes_of(up->second->parent(), depth + 1));
    if (auto b = body_of.find(c); b != body_of.end()) {
      XS_ASSIGN_OR_RETURN(std::string text, FrontendAttribute(*b->second, "xla.sdy.manual_axes"));
      XS_ASSIGN_OR_RETURN(std::vector<std::string> own, ParseSdyManualAxes(text));
      axes.insert(axes.end(), own.begin(), own.end());
    }
    ctx->outer_axes[c] = axes;
    return axes;
  };
  for (const Computation* c : module.computations()) XS_RETURN_IF_ERROR(axes_of(c, 0).status());
  return OkStatus();
}

// The call of a shard_map body that `g2l`'s results feed (directly or through get-tuple-element).
Instruction* BodyCallOf(const Instruction& g2l) {
  for (Instruction* u : g2l.users()) {
    std::vector<Instruction*> next = {u};
    if (u->opcode() == Opcode::kGetTupleElement) next = u->users();
    for (Instruction* v : next) {
      if (v->opcode() == Opcode::kCall) return v;
    }
  }
  return nullptr;
}

// JAX 0.4 (0.4.38 checked) wrote a shard_map's Shardy attributes (xla.sdy.in_shardings, manual_axes,
// out_shardings) on the call of its body and none on the boundary custom-calls: copies them to
// the boundaries that lack them, so that both forms read alike.
void CopyCallAttributes(const Instruction* call, Instruction* boundary, std::string_view shardings_key) {
  if (call == nullptr || !call->attrs().frontend_attributes) return;
  for (std::string_view key : {shardings_key, std::string_view("xla.sdy.manual_axes")}) {
    if (FrontendAttribute(*boundary, key).ok()) continue;
    for (const auto& [k, v] : *call->attrs().frontend_attributes) {
      if (k != key) continue;
      auto& attrs = boundary->mutable_attrs().frontend_attributes;
      if (!attrs) attrs.emplace();
      attrs->emplace_back(k, v);
    }
  }
}

// A Sharding custom-call (one array) whose xla.sdy.sharding `value` has open dims and that has no
// backend_config of its own gets them as unspecified_dims.
void SetConstraintOpenDims(Instruction* inst, const std::string& value) {
  if (!IsTarget(*inst, "Sharding") || !inst->shape().IsArray() || inst->attrs().backend_config) return;
  const std::optional<SdyTensorSharding> one = OneTensorSharding(value);
  if (!one || static_cast<int64_t>(one->dims.size()) != inst->shape().rank()) return;
  SetUnspecifiedDims(inst, OpenDims(*one));
}

}  // namespace

// Instructions outside shard_map bodies whose sharding is only Shardy's xla.sdy.sharding frontend
// attribute (the form XLA's Shardy round trip writes: no sharding={...} beside it) get its GSPMD
// equivalent; open dims become closed ones (an HloSharding on a non-annotation cannot say "may be
// sharded further"). A Sharding custom-call that has both keeps its sharding and gets the Shardy
// one's open dims as unspecified_dims. A mesh the module does not name, or an attribute that does
// not parse or fit the shape, is an error naming the instruction.
Status ImportFrontendShardings(Module& module, const std::map<std::string, SdyMesh>& meshes,
                               const std::set<Computation*>& manual_bodies) {
  for (Computation* c : module.computations()) {
    if (manual_bodies.count(c) != 0) continue;
    for (Instruction* inst : c->instructions()) {
      if (!inst->attrs().frontend_attributes) continue;
      std::optional<std::string> value;
      for (const auto& [key, v] : *inst->attrs().frontend_attributes)
        if (key == "xla.sdy.sharding") value = v;
      if (!value) continue;
      if (inst->has_sharding()) {
        // A with_sharding_constraint JAX lowered with both forms: its GSPMD sharding is the
        // closed equivalent, its Shardy one says which dims are open (P.UNCONSTRAINED, {?}), as
        // the GSPMD lowering's unspecified_dims does.
        SetConstraintOpenDims(inst, *value);
        continue;
      }
      auto fail = [&](std::string_view why) {
        return InvalidArgument("'", inst->name(), "': its xla.sdy.sharding ", *value, " ", why);
      };
      std::vector<SdyTensorSharding> per_value;
      if (StatusOr<std::vector<SdyTensorSharding>> pv = ParseSdyShardingPerValue(*value); pv.ok()) {
        per_value = *std::move(pv);
      } else if (StatusOr<SdyTensorSharding> one = ParseSdyTensorSharding(*value); one.ok()) {
        per_value.push_back(*std::move(one));
      } else {
        return fail(StrCat("does not parse: ", one.status().message()));
      }
      std::vector<Shape> leaves;
      if (inst->shape().IsTuple()) {
        for (const Shape& e : inst->shape().tuple_shapes()) leaves.push_back(e);
      } else {
        leaves.push_back(inst->shape());
      }
      if (per_value.size() != leaves.size()) {
        return fail(StrCat("has ", per_value.size(), " shardings for ", leaves.size(), " values"));
      }
      std::vector<HloSharding> shardings;
      for (size_t i = 0; i < leaves.size(); ++i) {
        auto mesh = meshes.find(per_value[i].mesh);
        if (mesh == meshes.end() && !per_value[i].inline_mesh) {
          return fail(StrCat("names mesh '", per_value[i].mesh, "', which xla.sdy.meshes does not define"));
        }
        if (!leaves[i].IsArray() || leaves[i].rank() != static_cast<int64_t>(per_value[i].dims.size())) {
          return fail(StrCat("does not fit the shape ", leaves[i].ToString(false)));
        }
        XS_ASSIGN_OR_RETURN(HloSharding h,
                            SdyToHloSharding(per_value[i].inline_mesh ? *per_value[i].inline_mesh : mesh->second,
                                             per_value[i], static_cast<int>(leaves[i].rank()), {}));
        shardings.push_back(std::move(h));
      }
      inst->set_sharding(shardings.size() == 1 && !inst->shape().IsTuple() ? std::move(shardings[0])
                                                                           : HloSharding::Tuple(std::move(shardings)));
    }
  }
  return OkStatus();
}

int64_t ShardyMeshDevices(const Module& module) {
  int64_t n = 1;
  auto add = [&n](const SdyMesh& mesh) {
    int64_t size = 1;
    for (int64_t a : mesh.axis_sizes) size *= a;
    n = std::max(n, size);
  };
  // Meshes written inline in the shard_map boundaries' shardings.
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (inst->opcode() != Opcode::kCustomCall || !inst->attrs().frontend_attributes) continue;
      for (const auto& [key, v] : *inst->attrs().frontend_attributes) {
        if (key != "xla.sdy.in_shardings" && key != "xla.sdy.out_shardings") continue;
        StatusOr<std::vector<SdyTensorSharding>> per_value = ParseSdyShardingPerValue(v);
        if (!per_value.ok()) continue;
        for (const SdyTensorSharding& s : *per_value) {
          if (s.inline_mesh) add(*s.inline_mesh);
        }
      }
    }
  }
  for (const auto& [name, value] : module.config().other) {
    if (name != "frontend_attributes") continue;
    std::optional<std::string> text = HeaderAttribute(value, "xla.sdy.meshes");
    if (!text) continue;
    StatusOr<std::map<std::string, SdyMesh>> meshes = ParseSdyMeshes(*text);
    if (!meshes.ok()) continue;
    for (const auto& [mesh_name, mesh] : *meshes) add(mesh);
  }
  return n;
}

namespace {

// jax.experimental.shard_alike's Shardy form: `() custom-call(v), custom_call_target=
// "xla.sdy.ShardingGroup"` with frontend attribute xla.sdy.sharding_group_id="N : i64" for each
// value of group N. Rewritten into its GSPMD form: v's users read a `Sharding` custom-call of v
// with sharding {unknown shard_as N}, and the group marker is removed.
Status ImportShardingGroup(Instruction* group) {
  Computation* c = group->parent();
  XS_ASSIGN_OR_RETURN(std::string id_text, FrontendAttribute(*group, "xla.sdy.sharding_group_id"));
  int64_t id = 0;
  std::string_view digits(id_text);
  digits = digits.substr(0, digits.find_first_not_of("-0123456789"));
  if (group->operand_count() != 1 || group->operand(0)->shape().IsTuple() || group->user_count() != 0 ||
      group->IsRoot() || !ParseInt64(digits, &id)) {
    return Unsupported("'", group->name(), "' (xla.sdy.ShardingGroup, group id '", id_text,
                       "') is not the form JAX writes for shard_alike: one array operand, no users, "
                       "an integer xla.sdy.sharding_group_id",
                       kImportFix);
  }
  Instruction* value = group->operand(0);
  const std::string name = group->name();
  group->DropAllControlDependencies();
  XS_RETURN_IF_ERROR(c->RemoveInstruction(group));
  std::vector<Instruction*> users = value->users();
  const bool root = value->IsRoot();
  Instruction* alike =
      AddCustomCall(c, "Sharding", value->shape(), value, HloSharding::Unknown().WithShardAs(id), name);
  for (Instruction* u : users) {
    for (int i = 0; i < u->operand_count(); ++i)
      if (u->operand(i) == value) u->ReplaceOperandWith(i, alike);
  }
  if (root) c->set_root(alike);
  return OkStatus();
}

// JAX's Shardy lowering wraps each result given an out_sharding (P() included) in an
// xla.sdy.FuncResultSharding custom-call, and compiles the others (out_shardings None, or
// UnspecifiedValue) with allow_spmd_sharding_propagation_to_output true for them, which the HLO
// text does not carry: the root tuple's sharding says {replicated} there. Those elements become
// {unknown} (left to propagation, as XLA's compile of the module does) when the root reads at least
// one FuncResultSharding (the form that marks every specified result).
void OpenUnspecifiedResults(Module& module) {
  Computation* entry = module.entry();
  Instruction* root = entry == nullptr ? nullptr : entry->root();
  if (root == nullptr || root->opcode() != Opcode::kTuple || !root->has_sharding() || !root->sharding()->IsTuple() ||
      root->sharding()->tuple_elements().size() != static_cast<size_t>(root->operand_count())) {
    return;
  }
  bool marked = false;
  for (const Instruction* op : root->operands()) {
    if (op->shape().IsTuple()) return;
    marked |= IsTarget(*op, "xla.sdy.FuncResultSharding");
  }
  if (!marked) return;
  std::vector<HloSharding> elements = root->sharding()->tuple_elements();
  bool changed = false;
  for (int i = 0; i < root->operand_count(); ++i) {
    if (IsTarget(*root->operand(i), "xla.sdy.FuncResultSharding") || !elements[i].IsReplicated()) continue;
    elements[i] = HloSharding::Unknown();
    changed = true;
  }
  if (changed) root->set_sharding(HloSharding::Tuple(std::move(elements)));
}

}  // namespace

Status ImportShardyManualComputations(Module& module) {
  std::vector<Instruction*> to_local, to_global, groups;
  bool frontend_shardings = false;
  for (Computation* c : module.computations()) {
    for (Instruction* inst : c->instructions()) {
      if ((!inst->has_sharding() || IsTarget(*inst, "Sharding")) && inst->attrs().frontend_attributes) {
        for (const auto& [key, v] : *inst->attrs().frontend_attributes) frontend_shardings |= key == "xla.sdy.sharding";
      }
      if (inst->opcode() != Opcode::kCustomCall || !inst->attrs().custom_call_target) continue;
      const std::string& target = *inst->attrs().custom_call_target;
      if (target.rfind(kPrefix, 0) != 0 || target == "xla.sdy.FuncResultSharding") continue;
      if (target == "xla.sdy.GlobalToLocalShape") {
        to_local.push_back(inst);
      } else if (target == "xla.sdy.LocalToGlobalShape") {
        to_global.push_back(inst);
      } else if (target == "xla.sdy.ShardingGroup") {
        groups.push_back(inst);
      } else {
        return Unsupported("custom-call target ", target, " at '", inst->name(), "'", kImportFix);
      }
    }
  }
  for (Instruction* group : groups) XS_RETURN_IF_ERROR(ImportShardingGroup(group));
  OpenUnspecifiedResults(module);
  if (to_local.empty() && to_global.empty() && !frontend_shardings) return OkStatus();

  ShardyContext ctx;
  for (const auto& [name, value] : module.config().other) {
    if (name != "frontend_attributes") continue;
    if (std::optional<std::string> meshes = HeaderAttribute(value, "xla.sdy.meshes")) {
      XS_ASSIGN_OR_RETURN(ctx.meshes, ParseSdyMeshes(*meshes));
    }
  }
  if (to_local.empty() && to_global.empty()) {
    // No shard_maps: only instructions annotated the Shardy way (none when the module names no mesh).
    return ctx.meshes.empty() ? OkStatus() : ImportFrontendShardings(module, ctx.meshes, {});
  }
  // A boundary naming a mesh that xla.sdy.meshes lacks fails in ReadBoundary (MeshOf); meshes
  // written inline need no module attribute.

  for (Instruction* g2l : to_local) CopyCallAttributes(BodyCallOf(*g2l), g2l, "xla.sdy.in_shardings");
  // Bodies first (their boundaries are still recognizable), then the boundaries.
  std::vector<std::pair<Instruction*, Computation*>> bodies;  // (LocalToGlobalShape, body)
  for (Instruction* l2g : to_global) {
    Instruction* call = nullptr;
    for (Instruction* op : l2g->operands()) {
      Instruction* source = op->opcode() == Opcode::kGetTupleElement ? op->operand(0) : op;
      if (source->opcode() != Opcode::kCall || (call != nullptr && call != source)) {
        return Unsupported("the operands of '", l2g->name(), "' are not the results of one "
                           "call of a shard_map body", kImportFix);
      }
      call = source;
    }
    CopyCallAttributes(call, l2g, "xla.sdy.out_shardings");
    if (call != nullptr) bodies.push_back({l2g, call->to_apply()});
  }
  XS_RETURN_IF_ERROR(FindOuterAxes(module, bodies, &ctx));
  // Innermost bodies (the most manual axes) first: an outer body's marking skips them.
  std::vector<std::pair<Boundary, Computation*>> marks;
  for (const auto& [l2g, body] : bodies) {
    XS_ASSIGN_OR_RETURN(Boundary b, ReadBoundary(ctx, *l2g, "xla.sdy.out_shardings", false));
    if (b.mesh != nullptr) marks.push_back({std::move(b), body});
  }
  std::stable_sort(marks.begin(), marks.end(), [](const auto& a, const auto& b) {
    return a.first.all_manual.size() > b.first.all_manual.size();
  });
  std::set<Computation*> done;
  for (const auto& [b, body] : marks) {
    XS_RETURN_IF_ERROR(MarkManualBody(body, *b.mesh, b.all_manual, false, &done));
  }
  for (Instruction* g2l : to_local) {
    XS_ASSIGN_OR_RETURN(Boundary b, ReadBoundary(ctx, *g2l, "xla.sdy.in_shardings", true));
    Computation* c = g2l->parent();
    std::vector<Instruction*> results;
    for (int i = 0; i < g2l->operand_count(); ++i) {
      Instruction* op = g2l->operand(i);
      Instruction* full = AddCustomCall(c, "Sharding", op->shape(), op, b.global[i], g2l->name() + ".sharding");
      results.push_back(AddCustomCall(c, "SPMDFullToShardShape", ElementShape(*g2l, i), full, b.local[i],
                                      g2l->name() + ".to_shard"));
      SetUnspecifiedDims(full, b.open[i]);
      SetUnspecifiedDims(results.back(), b.open[i]);
    }
    XS_RETURN_IF_ERROR(ReplaceBoundary(g2l, results));
  }
  for (Instruction* l2g : to_global) {
    XS_ASSIGN_OR_RETURN(Boundary b, ReadBoundary(ctx, *l2g, "xla.sdy.out_shardings", false));
    Computation* c = l2g->parent();
    std::vector<Instruction*> results;
    for (int i = 0; i < l2g->operand_count(); ++i) {
      Instruction* op = l2g->operand(i);
      Instruction* local = AddCustomCall(c, "Sharding", op->shape(), op, b.local[i], l2g->name() + ".sharding");
      results.push_back(AddCustomCall(c, "SPMDShardToFullShape", ElementShape(*l2g, i), local, b.global[i],
                                      l2g->name() + ".to_full"));
      SetUnspecifiedDims(local, b.open[i]);
      SetUnspecifiedDims(results.back(), b.open[i]);
    }
    XS_RETURN_IF_ERROR(ReplaceBoundary(l2g, results));
  }
  return ImportFrontendShardings(module, ctx.meshes, done);
}

}  // namespace xs
