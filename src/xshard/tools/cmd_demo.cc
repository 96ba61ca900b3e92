// `xshard demo`: replays the seed notebooks' flows on virtual devices (CPU threads, or
// --platform cuda), section by section.
// Each section is a function in kSections; `--section NAME` runs one, `--list` names them.
#include <iostream>

#include "xshard/frontend/jit.h"
#include "xshard/sharding/geometry.h"
#include "xshard/sharding/named_sharding.h"
#include "xshard/sharding/visualize.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/demo.h"

namespace xs::tools {
namespace {

struct DemoFlags {
  std::string section;
  bool list = false;
  bool color = false;
};

Status RunDemo(const DemoFlags& flags) {
  const std::vector<DemoSection> sections = DemoSections();
  if (flags.list) {
    for (const DemoSection& s : sections) std::cout << s.name << "  " << s.title << "\n";
    return OkStatus();
  }
  DemoContext ctx;
  ctx.visualize.use_color = flags.color;
  // Off the CPU (--platform cuda): the jax frontend's jitted functions use the platform's client
  // too, and a section that needs what the platform does not run (collectives on host arrays in
  // shard_map and cmm bodies, one-device host runs) says so in one line and the demo goes on.
  const bool on_host = CliHostOnly("the demo").ok();
  if (!on_host) {
    XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, CliCreateClient(int64_t{0}));
    fe::SetDefaultClient(std::move(client));
  }
  bool found = false;
  for (const DemoSection& s : sections) {
    if (!flags.section.empty() && s.name != flags.section) continue;
    found = true;
    std::cout << "\n" << std::string(78, '=') << "\n" << s.title << "\n"
              << std::string(78, '=') << "\n";
    Status st = s.run(ctx);
    if (!on_host && (st.code() == StatusCode::kUnimplemented ||
                     st.code() == StatusCode::kFailedPrecondition)) {
      std::cout << "(section '" << s.name << "' does not run on this platform: " << st.message()
                << ")\n";
      continue;
    }
    XS_RETURN_IF_ERROR(Annotate(st, StrCat("demo section '", s.name, "': ")));
  }
  if (!found) {
    std::vector<std::string> names;
    for (const DemoSection& s : sections) names.push_back(s.name);
    return NotFound("no demo section '", flags.section, "'; sections: ", StrJoin(names, ", "));
  }
  return OkStatus();
}

}  // namespace

std::vector<DemoSection> DemoSections() {
  std::vector<DemoSection> sections;
  for (auto group : {Seed000DemoSections, ShardingDemoSections, RuntimeDemoSections,
                     CmmDemoSections, Seed004DemoSections, FrontendDemoSections}) {
    for (DemoSection& s : group()) sections.push_back(std::move(s));
  }
  return sections;
}

void AddDemoCommand(CLI::App& root, CommandList& commands) {
  auto flags = std::make_shared<DemoFlags>();
  CLI::App* cmd = root.add_subcommand(
      "demo", "Replay the seed notebooks' flows (meshes, shardings, device_put, programs) on 8\n"
              "virtual CPU devices, showing what xshard decided at each step.");
  cmd->add_option("--section", flags->section, "Run one section (see --list)");
  cmd->add_flag("--list", flags->list, "List the sections");
  cmd->add_flag("--color", flags->color, "Colored sharding drawings");
  AddPlatformFlag(cmd);
  commands.push_back({cmd, [flags] { return RunDemo(*flags); }});
}

}  // namespace xs::tools
