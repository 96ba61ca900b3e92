// Demo section for seed 000 end to end (the pjit blog's x @ y on mesh a=4, b=2 over 8 devices):
// per case, the shardings of x, y and z drawn, z printed, the partitioned program with its
// collectives next to the ones XLA inserted, and a %timeit-style timing of the sharded matmul.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "xshard/ir/builder.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/runtime/client.h"
#include "xshard/spmd/report.h"
#include "xshard/text/printer.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/demo.h"

namespace xs::tools {
namespace {

// What XLA inserted for each case, from jax.jit(jnp.matmul).lower(x, y).compile().as_text() on 8
// CPU devices (tests/data/spmd_partition/seed000_<case>.xla.txt, seed000_collectives.tsv). Bytes
// are what each device receives under the ring model the partition report uses (all-gather
// (g-1)/g of its result, all-reduce 2(g-1)/g, collective-permute the whole operand).
constexpr Seed000Case kCases[] = {
    {"inner", "Case 1: inner axes", "P(None, 'a')", "P('a', None)", 80, 80,
     {"all-reduce f16[4,4]  48B  groups {{0,2,4,6},{1,3,5,7}}", nullptr}, 48, "442 µs ± 88.5 µs"},
    {"mismatch", "Case 1B: mesh-axes mismatch", "P(None, 'a')", "P('b', None)", 80, 80,
     {"all-gather f16[16,4] dim 0  64B  groups {{0,1},{2,3},{4,5},{6,7}}",
      "all-gather f16[4,16] dim 1  96B  groups {{0,2,4,6},{1,3,5,7}}"},
     160, "503 µs ± 73.8 µs"},
    {"outer", "Case 2: outer axes", "P('b', 'a')", "P('b', None)", 120, 80,
     {"collective-permute f16[4,4]  32B  pairs {{0,0},{2,1},{4,2},{6,3},{1,4},{3,5},{5,6},{7,7}}",
      "all-reduce f16[2,4]  24B  groups {{0,2,4,6},{1,3,5,7}}"},
     56, "463 µs ± 85.8 µs"},
    {"full", "Full sharding", "P('b', 'a')", "P('b', 'a')", 120, 120,
     {"all-gather f16[16,1] dim 0  16B  groups {{0,1},{2,3},{4,5},{6,7}}",
      "all-gather f16[2,16] dim 1  48B  groups {{0,2,4,6},{1,3,5,7}}"},
     64, "469 µs ± 72.8 µs"},
};

// The median over `repeats` of the mean time of `loops` runs, in microseconds (%timeit -n -r).
StatusOr<double> TimeRuns(const ShardedProgram& program, Client& client,
                          const std::vector<Array>& args, int loops, int repeats) {
  std::vector<double> per_loop;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int l = 0; l < loops; ++l) XS_RETURN_IF_ERROR(program.Run(client, args).status());
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    per_loop.push_back(took.count() / loops);
  }
  std::sort(per_loop.begin(), per_loop.end());
  const size_t n = per_loop.size();
  return n % 2 == 1 ? per_loop[n / 2] : (per_loop[n / 2 - 1] + per_loop[n / 2]) / 2;
}

// One inserted collective as kCases writes XLA's: "all-reduce f16[4,4]  48B  groups {{0,2},...}".
std::string CollectiveLine(const spmd::CollectiveRecord& c) {
  std::string line = StrCat(c.kind, " ", c.shape.ToString(false));
  if (c.dimension >= 0) StrAppend(&line, " dim ", c.dimension);
  StrAppend(&line, "  ", spmd::FormatBytes(c.bytes), "  ",
            c.kind == "collective-permute" ? "pairs " : "groups ", c.explicit_groups);
  return line;
}

Status Seed000EndToEnd(DemoContext& ctx) {
  std::ostream& out = *ctx.out;
  ClientOptions options;
  options.num_devices = 8;
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, CliCreateClient(options));
  XS_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create({"a", "b"}, {4, 2}));
  out << "mesh = " << mesh.ToString() << "   (mesh_utils.create_device_mesh((4, 2)))\n"
      << "x = jnp.repeat(jnp.arange(1, 5)[:, None], 16, axis=1) as f16[4,16]; y = x.T\n"
      << Seed000X().ToString() << "\n"
      << "For each case: device_put x and y, z = jax.jit(jnp.matmul)(x, y) partitioned for the 8\n"
         "devices, and the collectives XLA inserted for the same case (from the seed's compiled\n"
         "program).\n";
  for (const Seed000Case& c : kCases) {
    out << "\n--- " << c.title << ": x " << c.x_spec << ", y " << c.y_spec << "\n";
    XS_RETURN_IF_ERROR(RunSeed000Case(ctx, *client, mesh, c).status());
  }
  return OkStatus();
}

}  // namespace

std::span<const Seed000Case> Seed000Cases() { return kCases; }

Array Seed000X() {
  Array x(DType::kF16, {4, 16});
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 16; ++j) x.SetDouble(i * 16 + j, static_cast<double>(i + 1));
  }
  return x;
}

Array Seed000Y() {
  Array y(DType::kF16, {16, 4});
  for (int64_t k = 0; k < 16; ++k) {
    for (int64_t j = 0; j < 4; ++j) y.SetDouble(k * 4 + j, static_cast<double>(j + 1));
  }
  return y;
}

StatusOr<std::unique_ptr<Module>> BuildSeed000Module(const NamedSharding& x_sharding,
                                                     const NamedSharding& y_sharding) {
  XS_ASSIGN_OR_RETURN(HloSharding xh, x_sharding.ToHloSharding(2));
  XS_ASSIGN_OR_RETURN(HloSharding yh, y_sharding.ToHloSharding(2));
  ModuleBuilder mb("jit_matmul");
  mb.mutable_config().num_partitions = x_sharding.mesh().num_devices();
  mb.mutable_config().allow_spmd_sharding_propagation_to_output = {true};
  ComputationBuilder& main = mb.AddEntry("main");
  Op x = main.WithSharding(xh).Parameter(0, Shape(DType::kF16, {4, 16}), "x");
  Op y = main.WithSharding(yh).Parameter(1, Shape(DType::kF16, {16, 4}), "y");
  main.WithName("z").Dot(x, y);  // no sharding: propagation decides z's
  return mb.Build();
}

StatusOr<Seed000Result> RunSeed000Case(DemoContext& ctx, Client& client, const Mesh& mesh,
                                       const Seed000Case& c) {
  std::ostream& out = *ctx.out;
  XS_ASSIGN_OR_RETURN(NamedSharding x_named, Named(mesh, c.x_spec));
  XS_ASSIGN_OR_RETURN(NamedSharding y_named, Named(mesh, c.y_spec));
  VisualizeOptions xo = ctx.visualize, yo = ctx.visualize;
  xo.max_width = c.x_width;
  yo.max_width = c.y_width;
  XS_RETURN_IF_ERROR(ShowSharding(ctx, "x", Shape(DType::kF16, {4, 16}), x_named, &xo));
  XS_RETURN_IF_ERROR(ShowSharding(ctx, "y", Shape(DType::kF16, {16, 4}), y_named, &yo));

  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> global, BuildSeed000Module(x_named, y_named));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<ShardedProgram> program,
                      ShardedProgram::Compile(*global, mesh.num_devices()));
  Seed000Result r;
  r.z_sharding = program->output_shardings().at(0);
  r.report = program->report();
  out << "z = x @ y: f16[4,4]  sharding=" << Retile(r.z_sharding, /*iota=*/false).ToString();
  StatusOr<NamedSharding> z_named = NamedSharding::FromHloSharding(mesh, r.z_sharding);
  if (z_named.ok()) out << "  = " << z_named->spec().ToString();
  out << "  (propagated to the dot)\n";
  XS_ASSIGN_OR_RETURN(std::string drawing,
                      VisualizeSharding({4, 4}, r.z_sharding, mesh.num_devices(), ctx.visualize));
  out << drawing;

  const Array x = Seed000X(), y = Seed000Y();
  XS_ASSIGN_OR_RETURN(ShardedResult result, program->Run(client, {x, y}));
  r.z = result.outputs.at(0);
  out << "print(z):\n" << r.z.ToString() << "\n";
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      if (r.z.GetDouble(i * 4 + j) != 16.0 * (i + 1) * (j + 1)) {
        return Internal("seed 000 ", c.key, ": z[", i, ",", j, "] = ", r.z.GetDouble(i * 4 + j),
                        ", the notebook prints ", 16 * (i + 1) * (j + 1));
      }
    }
  }
  out << "(every z[i,j] = 16 (i+1)(j+1), as the notebook prints)\n";

  PrintOptions short_form = PrintOptions::Short();
  short_form.metadata = false;
  r.spmd_text = PrintComputation(*program->spmd_module().entry(), short_form);
  out << "partitioned program (every device runs it with its own partition-id):\n"
      << r.spmd_text << "\n";
  std::string summary = spmd::FormatReport(r.report);
  out << "xshard: " << summary.substr(0, summary.find('\n')) << "\n";
  for (const spmd::CollectiveRecord& col : r.report.collectives) {
    out << "  " << CollectiveLine(col) << "\n";
  }
  const int xla_count = c.xla_collectives[1] == nullptr ? 1 : 2;
  out << "XLA:    " << xla_count << " collective" << (xla_count == 1 ? "" : "s") << ", "
      << c.xla_bytes << "B received per device\n";
  for (int k = 0; k < xla_count; ++k) out << "  " << c.xla_collectives[k] << "\n";

  XS_ASSIGN_OR_RETURN(r.median_us,
                      TimeRuns(*program, client, {x, y}, ctx.timing_loops, ctx.timing_repeats));
  char buf[128];
  std::snprintf(buf, sizeof(buf), "sharded matmul: median %.0f us over %dx%d runs", r.median_us,
                ctx.timing_repeats, ctx.timing_loops);
  out << buf << " (the notebook's jnp.matmul: " << c.notebook_timing << " per loop)\n";
  return r;
}

std::vector<DemoSection> Seed000DemoSections() {
  return {
      {"seed000", "Seed 000 (pjit blog): x @ y on mesh a=4, b=2, four shardings end to end",
       Seed000EndToEnd},
  };
}

}  // namespace xs::tools
