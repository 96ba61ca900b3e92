// --platform cpu|cuda on the commands that run devices: the flag, its check before a command runs,
// and the client every device-running command makes on the chosen platform.
#include <algorithm>
#include <vector>

#include "xshard/platform/platform.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"

namespace xs::tools {
namespace {

struct PlatformFlag {
  std::string name;                     // as given; "" when the flag was not given
  std::vector<const CLI::App*> commands;  // the commands that take the flag
};

PlatformFlag& GlobalPlatformFlag() {
  static PlatformFlag flag;
  return flag;
}

// "--platform cuda: " (or "XSHARD_PLATFORM=cuda: ") before a platform's error.
Status AnnotatePlatform(const Status& status) {
  const PlatformFlag& f = GlobalPlatformFlag();
  if (status.ok()) return status;
  StatusOr<std::string> resolved = ResolvePlatformName(f.name);
  if (!resolved.ok()) return status;  // already names the flag or the variable
  return Annotate(status, f.name.empty() ? StrCat("XSHARD_PLATFORM=", *resolved, ": ")
                                         : StrCat("--platform ", *resolved, ": "));
}

}  // namespace

void AddPlatformFlag(CLI::App* cmd) {
  PlatformFlag& f = GlobalPlatformFlag();
  cmd->add_option("--platform", f.name,
                  "Where the devices live: cpu (threads of this process, the default) or cuda\n"
                  "(one device per GPU, or --devices / GPUs virtual devices on each GPU);\n"
                  "default $XSHARD_PLATFORM, else cpu");
  f.commands.push_back(cmd);
}

Status CheckCliPlatform(const CLI::App* cmd) {
  const PlatformFlag& f = GlobalPlatformFlag();
  // The command or the subcommand it runs (bench run, bench collectives, ...).
  bool takes_flag = false;
  for (const CLI::App* c = cmd; c != nullptr && !takes_flag;) {
    takes_flag = std::find(f.commands.begin(), f.commands.end(), c) != f.commands.end();
    const std::vector<const CLI::App*> chosen = c->get_subcommands([](const CLI::App* sub) {
      return sub->parsed();
    });
    c = chosen.empty() ? nullptr : chosen.front();
  }
  if (!takes_flag) return OkStatus();
  XS_RETURN_IF_ERROR(ResolvePlatformName(f.name).status());
  return AnnotatePlatform(CheckPlatform(f.name));
}

Status CliHostOnly(std::string_view what) {
  XS_ASSIGN_OR_RETURN(const std::string platform, ResolvePlatformName(GlobalPlatformFlag().name));
  if (platform == "cpu") return OkStatus();
  XS_RETURN_IF_ERROR(AnnotatePlatform(CheckPlatform(platform)));
  return AnnotatePlatform(Unimplemented(
      what, " runs on host memory only (exec's executor without a device kind); callers route "
      "it through a client of the platform instead, or use --platform cpu"));
}

bool CliDevicesOnHost() {
  StatusOr<std::string> platform = ResolvePlatformName(GlobalPlatformFlag().name);
  return !platform.ok() || *platform == "cpu";
}

StatusOr<ClientOptions> CliClientOptions(int64_t num_devices) {
  ClientOptions o;
  o.num_devices = num_devices;
  const MpiFlags& f = GlobalMpiFlags();
  o.collective_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(f.collective_timeout_s * 1000));
  o.devices_per_process = f.devices_per_process;  // an error without mpirun (Client::Create)
  XS_RETURN_IF_ERROR(AnnotatePlatform(ConfigureClient(GlobalPlatformFlag().name, CliUsesMpi(), o)));
  return o;
}

StatusOr<std::unique_ptr<Client>> CliCreateClient(int64_t num_devices) {
  XS_ASSIGN_OR_RETURN(ClientOptions o, CliClientOptions(num_devices));
  return Client::Create(std::move(o));
}

StatusOr<std::unique_ptr<Client>> CliCreateClient(ClientOptions options) {
  XS_RETURN_IF_ERROR(
      AnnotatePlatform(ConfigureClient(GlobalPlatformFlag().name, /*distributed=*/false, options)));
  return Client::Create(std::move(options));
}

}  // namespace xs::tools
