// LowerJaxpr and LowerPmap: the entry computation (parameters with their shardings, the root
// with the output shardings, pmap's manual region) around the rules of lower_rules.cc.
#include "xshard/frontend/lower.h"

#include "xshard/frontend/lower_internal.h"

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
  return mb.Build();
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
                                            const std::string& name) {
  if (jaxpr.invars.size() != 1 || jaxpr.outvars.size() != 1) {
    return InvalidArgument("Pmap(", name, "): the mapped function must take one Tensor and return "
                           "one (it takes ", jaxpr.invars.size(), ", returns ",
                           jaxpr.outvars.size(), ")");
  }
  const AVal& in = jaxpr.invars[0].aval;
  const AVal out = jaxpr.outvars[0].aval();
  ModuleBuilder mb(StrCat("pmap_", name));
  mb.mutable_config().num_partitions = num_devices;
  ComputationBuilder& b = mb.AddEntry("main");
  Lowerer lowerer(mb, b);
  HloSharding in_s = Stacked(num_devices, in.rank() + 1);
  HloSharding out_s = Stacked(num_devices, out.rank() + 1);
  Op arg = b.WithSharding(in_s).Parameter(0, Shape(in.dtype, WithLead(num_devices, in.dims)),
                                          "Arg_0");
  Op full = b.WithSharding(in_s).CustomCall("Sharding", {arg}, arg.shape());
  Op local = b.WithSharding(HloSharding::Manual())
                 .CustomCall("SPMDFullToShardShape", {full}, Shape(in.dtype, WithLead(1, in.dims)));
  Op x = b.WithSharding(HloSharding::Manual()).Reshape(local, in.dims);
  XS_ASSIGN_OR_RETURN(std::vector<Op> outs, lowerer.Body(jaxpr, {x}));
  Op y = b.WithSharding(HloSharding::Manual()).Reshape(outs[0], WithLead(1, out.dims));
  Op marked = b.WithSharding(HloSharding::Manual()).CustomCall("Sharding", {y}, y.shape());
  Op result = b.WithSharding(out_s).CustomCall("SPMDShardToFullShape", {marked},
                                               Shape(out.dtype, WithLead(num_devices, out.dims)));
  b.SetRoot(result);
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, mb.Build());
  // Everything between the two boundaries runs per device.
  for (Instruction* inst : module->entry()->instructions()) {
    if (!inst->has_sharding()) inst->set_sharding(HloSharding::Manual());
  }
  return module;
}

}  // namespace xs::fe
