// `xshard sharding` (mesh + PartitionSpec -> XLA HloSharding, or parse an HloSharding) and
// `xshard visualize` (draw which device holds which piece of an array).
#include <algorithm>
#include <iostream>

#include "xshard/jit/annotations.h"
#include "xshard/sharding/geometry.h"
#include "xshard/sharding/named_sharding.h"
#include "xshard/sharding/visualize.h"
#include "xshard/tools/cli.h"

namespace xs::tools {
namespace {

constexpr int64_t kDefaultDevices = 8;

// True when some tile assignment inside `s` has an iota form.
bool HasIotaForm(const HloSharding& s) {
  if (s.IsTuple()) {
    for (const HloSharding& e : s.tuple_elements()) {
      if (HasIotaForm(e)) return true;
    }
    return false;
  }
  return s.IsTiled() && s.tile_assignment().FindIota().has_value();
}

// Devices a sharding text implies when --devices is not given: one past its largest device id
// (tiled, maximal), else the default 8 virtual devices.
int64_t ImpliedDeviceCount(const HloSharding& s) {
  int64_t n = 0;
  if (s.IsTuple()) {
    for (const HloSharding& e : s.tuple_elements()) n = std::max(n, ImpliedDeviceCount(e));
  } else if (s.IsTiled()) {
    for (int64_t d : s.tile_assignment().devices()) n = std::max(n, d + 1);
  } else if (s.IsMaximal()) {
    n = s.device() + 1;
  }
  return n > 0 ? n : kDefaultDevices;
}

// A table of what each device holds: tile index, box (numpy slices) and shard shape.
std::string DescribeShards(const ShardGeometry& g) {
  std::string out = StrCat("device  tile      box", std::string(17, ' '), "shape\n");
  for (const DeviceShard& d : g.shards()) {
    std::string tile = d.holds_data ? StrCat("(", StrJoin(d.tile_index, ","), ")") : "-";
    std::string box = d.holds_data ? d.box.ToString() : "(nothing)";
    std::string shape = StrCat("[", StrJoin(g.ShardShape(d.device), ","), "]");
    std::string line = StrCat(d.device);
    line.resize(std::max<size_t>(line.size() + 1, 8), ' ');
    line += tile;
    line.resize(std::max<size_t>(line.size() + 1, 18), ' ');
    line += box;
    line.resize(std::max<size_t>(line.size() + 1, 38), ' ');
    out += line + shape + "\n";
  }
  return out;
}

// Flags shared by `sharding` and `visualize` for naming a sharding.
struct ShardingFlags {
  std::string mesh, device_order, spec, parse, shape;
  int rank = -1;
  int64_t devices = -1;

  void AddMeshFlags(CLI::App* cmd) {
    cmd->add_option("--mesh", mesh, "Mesh axes as name=size,...  e.g. a=4,b=2 (devices 0..N-1 row-major)");
    cmd->add_option("--device-order", device_order,
                    "Device ids in mesh order, e.g. 0,2,4,6,1,3,5,7 (default 0..N-1)");
    cmd->add_option("--spec", spec, "PartitionSpec in JAX syntax, e.g. \"P('b', 'a')\" or \"P(('x','y'), None)\"");
  }

  // The HloSharding the flags name: --mesh/--spec (for an array of `rank` dims) or --parse/--sharding.
  StatusOr<HloSharding> Resolve(int rank_hint) const {
    const bool named = !mesh.empty() || !spec.empty();
    if (named && !parse.empty()) {
      return InvalidArgument("give either --mesh with --spec, or a sharding text, not both");
    }
    if (named) {
      if (mesh.empty()) return InvalidArgument("--spec needs --mesh (e.g. --mesh a=4,b=2)");
      if (spec.empty()) return InvalidArgument("--mesh needs --spec (e.g. --spec \"P('a', None)\")");
      XS_ASSIGN_OR_RETURN(Mesh m, Mesh::Parse(mesh, device_order));
      XS_ASSIGN_OR_RETURN(PartitionSpec p, PartitionSpec::Parse(spec));
      XS_ASSIGN_OR_RETURN(NamedSharding ns, NamedSharding::Create(std::move(m), std::move(p)));
      int r = rank >= 0 ? rank : rank_hint >= 0 ? rank_hint : ns.spec().size();
      return ns.ToHloSharding(r);
    }
    if (!device_order.empty()) return InvalidArgument("--device-order goes with --mesh");
    if (parse.empty()) {
      return InvalidArgument("name a sharding: --mesh a=4,b=2 --spec \"P('a')\", or a sharding "
                             "text like \"{devices=[2,4]<=[8]}\"");
    }
    XS_ASSIGN_OR_RETURN(HloSharding s, HloSharding::Parse(parse));
    if (s.IsMeshAxes()) return s.ToTiled();
    return s;
  }

  // Device count: the mesh's, or --devices, or the largest id the sharding names plus one.
  StatusOr<int64_t> DeviceCount(const HloSharding& s) const {
    if (!mesh.empty()) {
      XS_ASSIGN_OR_RETURN(Mesh m, Mesh::Parse(mesh, device_order));
      if (devices >= 0 && devices != m.num_devices()) {
        return InvalidArgument("--devices ", devices, " does not match the mesh's ",
                               m.num_devices(), " devices");
      }
      return m.num_devices();
    }
    if (devices >= 1) return devices;
    if (devices == 0 || devices < -1) return InvalidArgument("--devices must be >= 1, got ", devices);
    return ImpliedDeviceCount(s);
  }
};

Status RunSharding(const ShardingFlags& f) {
  std::vector<int64_t> dims;
  if (!f.shape.empty()) {
    XS_ASSIGN_OR_RETURN(dims, ParseIntList(f.shape, "--shape"));
  }
  XS_ASSIGN_OR_RETURN(HloSharding s, f.Resolve(f.shape.empty() ? -1 : static_cast<int>(dims.size())));
  std::cout << Retile(s, /*iota=*/false).ToString() << "\n";
  if (HasIotaForm(s)) std::cout << Retile(s, /*iota=*/true).ToString() << "\n";
  if (!f.shape.empty()) {
    XS_ASSIGN_OR_RETURN(int64_t n, f.DeviceCount(s));
    XS_ASSIGN_OR_RETURN(ShardGeometry g, ShardGeometry::Create(s, dims, n));
    std::cout << DescribeShards(g);
  }
  return OkStatus();
}

struct VisualizeFlags {
  ShardingFlags sharding;
  VisualizeOptions options;
};

Status RunVisualize(const VisualizeFlags& f) {
  if (f.sharding.shape.empty()) return InvalidArgument("--shape is required, e.g. --shape 4,16");
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ParseIntList(f.sharding.shape, "--shape"));
  XS_ASSIGN_OR_RETURN(HloSharding s, f.sharding.Resolve(static_cast<int>(dims.size())));
  XS_ASSIGN_OR_RETURN(int64_t n, f.sharding.DeviceCount(s));
  XS_ASSIGN_OR_RETURN(std::string drawing, VisualizeSharding(dims, s, n, f.options));
  std::cout << drawing;
  return OkStatus();
}

}  // namespace

void AddShardingCommands(CLI::App& root, CommandList& commands) {
  auto flags = std::make_shared<ShardingFlags>();
  CLI::App* cmd = root.add_subcommand(
      "sharding",
      "Print the XLA HloSharding of a mesh + PartitionSpec (explicit device list on the first line,\n"
      "iota form on the second when one exists), or the canonical form of a sharding text.");
  flags->AddMeshFlags(cmd);
  cmd->add_option("--rank", flags->rank, "Rank of the array (default: the spec's length)")
      ->check(IntegerRangeCheck(0, 64, "a rank: give a whole number from 0 to 64"));
  cmd->add_option("--parse", flags->parse, "An HloSharding text to parse, e.g. \"{devices=[2,4]<=[4,2]T(1,0)}\"");
  cmd->add_option("--shape", flags->shape, "Array dims, e.g. 4,16: also list what each device holds");
  cmd->add_option("--devices", flags->devices, "Device count for --parse --shape (default: from the sharding)")->check(DeviceCountCheck());
  commands.push_back({cmd, [flags] { return RunSharding(*flags); }});

  auto vis = std::make_shared<VisualizeFlags>();
  CLI::App* vcmd = root.add_subcommand(
      "visualize",
      "Draw which device holds which piece of an array, like jax.debug.visualize_array_sharding\n"
      "(any rank; uneven shapes and partial replication included).");
  vis->sharding.AddMeshFlags(vcmd);
  vcmd->add_option("--sharding", vis->sharding.parse, "An HloSharding text instead of --mesh/--spec");
  vcmd->add_option("--devices", vis->sharding.devices,
                   "Device count for --sharding (default: one past the largest device id, else 8)")->check(DeviceCountCheck());
  vcmd->add_option("--shape", vis->sharding.shape, "Array dims, e.g. 4,16 (required)");
  vcmd->add_option("--max-width", vis->options.max_width, "Widest box and console width")
      ->capture_default_str()
      ->check(IntegerRangeCheck(1, 100000));
  vcmd->add_option("--min-width", vis->options.min_width, "Narrowest box")
      ->capture_default_str()
      ->check(IntegerRangeCheck(0, 100000));
  vcmd->add_option("--scale", vis->options.scale, "Height scale (the array is 10*scale lines tall)")
      ->capture_default_str()
      ->check(FiniteRangeCheck(0, 1e6, "0 to 1000000"));
  vcmd->add_flag("--color", vis->options.use_color, "Colored boxes (24-bit ANSI), as JAX draws them");
  vcmd->add_option("--device-kind", vis->options.device_kind, "Label prefix")->capture_default_str();
  commands.push_back({vcmd, [vis] { return RunVisualize(*vis); }});
}

}  // namespace xs::tools
