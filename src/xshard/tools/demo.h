// The demo's sections (one per seed flow) and the helpers they share for printing arrays and
// shardings the way the seed notebooks show them.
#ifndef XSHARD_TOOLS_DEMO_H_
#define XSHARD_TOOLS_DEMO_H_

#include <functional>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/module.h"
#include "xshard/sharding/named_sharding.h"
#include "xshard/sharding/visualize.h"
#include "xshard/spmd/report.h"

namespace xs {
class Client;
}

namespace xs::tools {

struct DemoContext {
  VisualizeOptions visualize;
  std::ostream* out = &std::cout;  // where ShowSharding and the seed 000 section print
  // Timings run like %timeit -n timing_loops -r timing_repeats.
  int timing_loops = 10;
  int timing_repeats = 10;
};

struct DemoSection {
  std::string name;   // "seed002-pjit"
  std::string title;  // one line
  std::function<Status(DemoContext&)> run;
};

// All sections in the order `xshard demo` runs them (cmd_demo.cc lists the groups below).
std::vector<DemoSection> DemoSections();
// The groups, one per demo_*.cc file.
std::vector<DemoSection> ShardingDemoSections();  // demo_seeds.cc: seed 002's pjit buffers
std::vector<DemoSection> RuntimeDemoSections();   // demo_runtime.cc: seeds 001 and 003 on devices
std::vector<DemoSection> Seed000DemoSections();   // demo_seed000.cc: seed 000 end to end
std::vector<DemoSection> CmmDemoSections();       // demo_cmm.cc: seed 003's collective matmuls
std::vector<DemoSection> Seed004DemoSections();   // demo_seed004.cc: seed 004's bf16 GEMM
std::vector<DemoSection> FrontendDemoSections();  // demo_frontend.cc: seeds 002 / 001, C++ front end

// NamedSharding of `mesh` and a PartitionSpec in the text form PartitionSpec::Parse reads.
StatusOr<NamedSharding> Named(const Mesh& mesh, std::string_view spec);

// Prints "name: dtype[dims] NamedSharding(...)", its HloSharding (V1 and iota forms) and the
// drawing, as the seed notebooks' visualize_array_sharding cells show it.
Status ShowSharding(DemoContext& ctx, const std::string& name, const Shape& shape,
                    const NamedSharding& sharding, const VisualizeOptions* options = nullptr);
// device_put of `array` under `sharding`, then "Device d has buffer:" and each piece (seed 002).
Status ShowDeviceBuffers(const Array& array, const NamedSharding& sharding);

// Seed 000 (demo_seed000.cc): f16 x[4,16] (rows of 1, 2, 3, 4) @ y = x.T on mesh a=4, b=2.
struct Seed000Case {
  const char* key;    // "inner", "mismatch", "outer", "full" (tests/data/spmd_partition names)
  const char* title;  // the notebook's heading
  const char* x_spec;
  const char* y_spec;
  int x_width, y_width;  // the notebook's visualize max_width for x and y
  // What XLA inserted ("all-gather f16[16,4] dim 0  64B  groups {{0,1},...}"); [1] may be null.
  const char* xla_collectives[2];
  int64_t xla_bytes;            // received per device, summed
  const char* notebook_timing;  // its %timeit -n 10 -r 10 line
};
std::span<const Seed000Case> Seed000Cases();
Array Seed000X();  // f16[4,16]
Array Seed000Y();  // f16[16,4] = x.T
// The global module jax.jit(jnp.matmul) lowers for x and y under these shardings (num_partitions
// = the mesh's devices, z's sharding left to propagation), built with the C++ builder.
StatusOr<std::unique_ptr<Module>> BuildSeed000Module(const NamedSharding& x_sharding,
                                                     const NamedSharding& y_sharding);
struct Seed000Result {
  Array z;                    // the gathered global product
  HloSharding z_sharding;     // what propagation gave the dot
  spmd::PartitionReport report;
  std::string spmd_text;      // the SPMD entry computation, short form
  double median_us = 0;       // per sharded run
};
// One case end to end on `client` (>= 8 devices), printed to *ctx.out: x, y and z drawn, z
// printed (error unless z[i,j] = 16 (i+1)(j+1)), the SPMD program, xshard's and XLA's
// collectives, and the timing.
StatusOr<Seed000Result> RunSeed000Case(DemoContext& ctx, Client& client, const Mesh& mesh,
                                       const Seed000Case& c);

}  // namespace xs::tools

#endif  // XSHARD_TOOLS_DEMO_H_
