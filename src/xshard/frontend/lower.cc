// LowerJaxpr and LowerPmap: the entry computation (parameters with their shardings, the root
// with the output shardings, pmap's manual region) around the rules of lower_rules.cc.
#include "xshard/frontend/lower.h"

#include "xshard/frontend/lower_internal.h"
#include "xshard/passes/dce.h"

namespace xs::fe {

using internal::Lowerer;
using internal::ShapeOf;

StatusOr<std::unique_ptr<Module>> LowerJaxpr(const Jaxpr& jaxpr, const LowerOptions& options) {
  auto check = [](const char* what, size_t got, size_t want) -> Status {
    if (got != 0 && got != want) {
      return InvalidArgument("lowering: ", got, " ", what, " shardings for ", want, " ", what,
                             "s; give one per ", what, " (nullopt to leave one open)");
    }
    return OkStatus();
  };
  XS_RETURN_IF_ERROR(check("input", options.in_shardings.size(), jaxpr.invars.size()));
  XS_RETURN_IF_ERROR(check("output", options.out_shardings.size(), jaxpr.outvars.size()));
  ModuleBuilder mb(StrCat("jit_", options.name));
  if (options.num_partitions > 1) mb.mutable_config().num_partitions = options.num_partitions;
  ComputationBuilder& b = mb.AddEntry("main");
  Lowerer lowerer(mb, b);
  std::vector<Op> args;
  for (size_t i = 0; i < jaxpr.invars.size(); ++i) {
    if (!options.in_shardings.empty() && options.in_shardings[i]) {
      b.WithSharding(*options.in_shardings[i]);
    }
    args.push_back(b.Parameter(static_cast<int64_t>(i), ShapeOf(jaxpr.invars[i].aval),
                               StrCat("Arg_", i)));
  }
  XS_ASSIGN_OR_RETURN(std::vector<Op> outs, lowerer.Body(jaxpr, args));
  bool any_out = false;
  for (const auto& s : options.out_shardings) any_out |= s.has_value();
  Op root;
  if (outs.size() == 1) {
    root = outs[0];
    // A root that is a parameter (or already carries a sharding) gets a copy to hold its own.
    if (any_out && (root.instruction()->has_sharding() ||
                    root.instruction()->opcode() == Opcode::kParameter)) {
      root = b.Copy(root);
    }
    if (any_out) b.SetSharding(root, *options.out_shardings[0]);
  } else {
    root = b.Tuple(outs);
    if (any_out) {
      std::vector<HloSharding> elems;
      for (const auto& s : options.out_shardings) elems.push_back(s ? *s : HloSharding::Replicate());
      b.SetSharding(root, HloSharding::Tuple(elems));
    }
  }
  b.SetRoot(root);
  // Values nothing uses (a primal output autodiff keeps, `_` in the jaxpr) are dropped, as in the
  // HLO JAX prints for jit(grad(sigmoid)).
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, mb.Build());
  XS_RETURN_IF_ERROR(RemoveDeadCode(*module).status());
  return module;
}

namespace {
HloSharding Stacked(int64_t n, int64_t rank) {
  std::vector<int64_t> tiles(rank, 1);
  tiles[0] = n;
  return *HloSharding::Parse(StrCat("{devices=[", StrJoin(tiles, ","), "]<=[", n, "]}"));
}
std::vector<int64_t> WithLead(int64_t lead, std::vector<int64_t> dims) {
  dims.insert(dims.begin(), lead);
  return dims;
}
}  // namespace

StatusOr<std::unique_ptr<Module>> LowerPmap(const Jaxpr& jaxpr, int64_t num_devices,
                                            const std::vector<bool>& mapped,
                                            const std::string& name) {
  if (mapped.size() != jaxpr.invars.size()) {
    return InvalidArgument("Pmap(", name, "): ", mapped.size(), " in_axes for ",
                           jaxpr.invars.size(), " inputs");
  }
  ModuleBuilder mb(StrCat("pmap_", name));
  mb.mutable_config().num_partitions = num_devices;
  ComputationBuilder& b = mb.AddEntry("main");
  Lowerer lowerer(mb, b);
  std::vector<Op> locals;
  for (size_t i = 0; i < mapped.size(); ++i) {
    const AVal& in = jaxpr.invars[i].aval;
    // A mapped input enters stacked f32[n, ...] tiled along dim 0; a broadcast one (in_axes
    // None) replicated, as it is.
    HloSharding s = mapped[i] ? Stacked(num_devices, in.rank() + 1) : HloSharding::Replicate();
    Shape global(in.dtype, mapped[i] ? WithLead(num_devices, in.dims) : in.dims);
    Op arg = b.WithSharding(s).Parameter(static_cast<int64_t>(i), global, StrCat("Arg_", i));
    Op full = b.WithSharding(s).CustomCall("Sharding", {arg}, global);
    Shape local_shape(in.dtype, mapped[i] ? WithLead(1, in.dims) : in.dims);
    Op local = b.WithSharding(HloSharding::Manual())
                   .CustomCall("SPMDFullToShardShape", {full}, local_shape);
    if (mapped[i]) local = b.WithSharding(HloSharding::Manual()).Reshape(local, in.dims);
    locals.push_back(local);
  }
  XS_ASSIGN_OR_RETURN(std::vector<Op> outs, lowerer.Body(jaxpr, locals));
  std::vector<Op> results;
  for (size_t i = 0; i < outs.size(); ++i) {
    const AVal out = jaxpr.outvars[i].aval();
    Op y = b.WithSharding(HloSharding::Manual()).Reshape(outs[i], WithLead(1, out.dims));
    Op marked = b.WithSharding(HloSharding::Manual()).CustomCall("Sharding", {y}, y.shape());
    results.push_back(b.WithSharding(Stacked(num_devices, out.rank() + 1))
                          .CustomCall("SPMDShardToFullShape", {marked},
                                      Shape(out.dtype, WithLead(num_devices, out.dims))));
  }
  if (results.size() == 1) {
    b.SetRoot(results[0]);
  } else {
    std::vector<HloSharding> elems;
    for (const Op& r : results) elems.push_back(*r.instruction()->sharding());
    b.SetRoot(b.WithSharding(HloSharding::Tuple(elems)).Tuple(results));
  }
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, mb.Build());
  // Everything between the two boundaries runs per device.
  for (Instruction* inst : module->entry()->instructions()) {
    if (!inst->has_sharding()) inst->set_sharding(HloSharding::Manual());
  }
  return module;
}

}  // namespace xs::fe
