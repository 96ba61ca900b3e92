// Reads JAX's default (Shardy) HLO form of shard_map: the sdy attribute syntax (meshes, tensor
// shardings, manual axes) and the xla.sdy.GlobalToLocalShape / LocalToGlobalShape custom-calls,
// rewritten into the GSPMD form (Sharding + SPMDFullToShardShape / SPMDShardToFullShape).
#ifndef XSHARD_SPMD_SHARDY_IMPORT_H_
#define XSHARD_SPMD_SHARDY_IMPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/ir/module.h"
#include "xshard/sharding/hlo_sharding.h"

namespace xs {

// `#sdy.mesh<["x"=2, "y"=4]>` (device_ids empty when 0..N-1 row-major).
struct SdyMesh {
  std::vector<std::string> axis_names;
  std::vector<int64_t> axis_sizes;
  std::vector<int64_t> device_ids;
  friend bool operator==(const SdyMesh&, const SdyMesh&) = default;
};

// One dim of a tensor sharding: `{"x", "y"}` (axes major to minor) or `{"x", ?}` (open).
struct SdyDimSharding {
  std::vector<std::string> axes;
  bool open = false;
  friend bool operator==(const SdyDimSharding&, const SdyDimSharding&) = default;
};

// `<@mesh, [{"x"}, {}], replicated={"y"}>`, or with the mesh written inline,
// `<mesh<["x"=2]>, [...]>`: then `mesh` is that text (`mesh<["x"=2]>`) and `inline_mesh` the mesh.
struct SdyTensorSharding {
  std::string mesh;
  std::optional<SdyMesh> inline_mesh;
  std::vector<SdyDimSharding> dims;
  std::vector<std::string> replicated;
  std::vector<std::string> unreduced;
  friend bool operator==(const SdyTensorSharding&, const SdyTensorSharding&) = default;
};

// The module attribute xla.sdy.meshes: `{mesh = #sdy.mesh<["x"=8]>, m2 = #sdy.mesh<[...]>}`.
// Errors name the text and the position that does not parse.
StatusOr<std::map<std::string, SdyMesh>> ParseSdyMeshes(std::string_view text);
// `#sdy.sharding<@mesh, [...]>` or the bare `<@mesh, [...]>` (or `mesh<[...]>` for `@mesh`).
StatusOr<SdyTensorSharding> ParseSdyTensorSharding(std::string_view text);
// `#sdy.sharding_per_value<[<@mesh, [...]>, ...]>`.
StatusOr<std::vector<SdyTensorSharding>> ParseSdyShardingPerValue(std::string_view text);
// `#sdy<manual_axes{"x", "y"}>`.
StatusOr<std::vector<std::string>> ParseSdyManualAxes(std::string_view text);

// The HloSharding of `sharding` on an array of rank `rank`. With `manual_axes` empty: the
// global sharding (open dims are taken as closed). Otherwise the sharding of the local value
// inside a manual computation over those axes: each dim's leading manual axes are dropped and
// the manual axes form a `manual` subgroup (no other axes: {manual}). Errors: unknown axis,
// rank mismatch, unreduced axes, a manual axis after a free one in a dim.
StatusOr<HloSharding> SdyToHloSharding(const SdyMesh& mesh, const SdyTensorSharding& sharding, int rank,
                                       const std::vector<std::string>& manual_axes = {});

// Rewrites every xla.sdy.GlobalToLocalShape into Sharding(global) + SPMDFullToShardShape(manual),
// every xla.sdy.LocalToGlobalShape into Sharding(manual) + SPMDShardToFullShape(global), and gives
// the instructions of each manual computation body (and what it calls) the manual sharding, as
// JAX's GSPMD lowering writes them. Instructions outside those bodies annotated only with an
// xla.sdy.sharding frontend attribute (XLA's Shardy round-trip form) get its GSPMD sharding (open
// dims closed); Sharding custom-calls (with_sharding_constraint) that carry both forms get the
// Shardy one's open dims as unspecified_dims. A module with neither is left unchanged.
// A shard_map nested in another is manual over both sets of axes (the outer ones form the manual
// subgroup on both sides of its boundaries, as JAX's GSPMD lowering writes them).
// shard_alike's xla.sdy.ShardingGroup markers become Sharding custom-calls {unknown shard_as N}
// (its GSPMD form). Root tuple elements that JAX left unspecified (no xla.sdy.FuncResultSharding
// while others have one; the root's sharding says {replicated}) become {unknown}: open outputs.
// Forms not handled (sub-axes, unreduced axes, other xla.sdy targets) return
// Unimplemented naming the instruction and suggesting jax_use_shardy_partitioner=False.
Status ImportShardyManualComputations(Module& module);

// The most devices a mesh of the module's xla.sdy.meshes frontend attribute, or one written
// inline in a shard_map boundary's shardings, spans (the product of its axis sizes), or 1 when
// there is none or they do not parse (the device count of a module annotated the Shardy way,
// where the instructions' sharding={...} would otherwise name it).
int64_t ShardyMeshDevices(const Module& module);

}  // namespace xs

#endif  // XSHARD_SPMD_SHARDY_IMPORT_H_
