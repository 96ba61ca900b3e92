// The CLI under mpirun: the flags of several processes, the client every device-running command
// makes (MPI mode when mpirun started this process), and what rank 0 alone prints.
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "xshard/base/limits.h"
#include "xshard/mpi/mpi_process.h"
#include "xshard/runtime/client.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"

namespace xs::tools {

MpiFlags& GlobalMpiFlags() {
  static MpiFlags flags;
  return flags;
}

void AddMpiFlags(CLI::App* cmd) {
  MpiFlags& f = GlobalMpiFlags();
  cmd->add_option("--devices-per-process", f.devices_per_process,
                  "Under mpirun: devices each process hosts (default: --devices / processes);\n"
                  "process p runs devices p*L .. p*L+L-1")
      ->check(IntegerRangeCheck(1, kMaxDevices));
  cmd->add_option("--collective-timeout", f.collective_timeout_s,
                  "Seconds a device waits for its peers inside a collective (and, under mpirun,\n"
                  "for the other processes) before every device fails (default 30)")
      ->check(PositiveSecondsCheck());
}

bool CliUsesMpi() { return mpi::LaunchedByMpirun(); }

int64_t CliProcessRank() {
  if (!CliUsesMpi()) return 0;
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    const char* e = std::getenv(v);
    if (e != nullptr && *e != '\0') return std::atoll(e);
  }
  return 0;
}

Status ShareInputs(Client& client, StatusOr<std::vector<Array>> loaded,
                   std::vector<Array>& args) {
  if (!client.distributed()) {
    XS_ASSIGN_OR_RETURN(args, std::move(loaded));
    return OkStatus();
  }
  if (loaded.ok()) args = std::move(*loaded);
  return mpi::BroadcastArrays(args, loaded.status(), 0, client.options().collective_timeout);
}

StatusOr<bool> AgreeWithRankZero(Client& client, bool mine) {
  if (!client.distributed()) return mine;
  std::vector<Array> flag = {Array::Scalar<int32_t>(mine ? 1 : 0)};
  XS_RETURN_IF_ERROR(
      mpi::BroadcastArrays(flag, OkStatus(), 0, client.options().collective_timeout));
  return flag[0].GetDouble(0) != 0;
}

void SilenceOtherRanks() {
  if (CliProcessRank() != 0 && std::getenv("XSHARD_MPI_ALL_OUTPUT") == nullptr) {
    std::fflush(stdout);
    if (std::freopen("/dev/null", "w", stdout) == nullptr) return;
  }
}

void EndMpi(bool ok) {
  if (ok) {
    mpi::Finalize();
    return;
  }
  // The error is printed and the process exits 1 without MPI_Finalize, after which mpirun ends the
  // others. A moment first, so that peers told of the failure print their own error.
  if (mpi::Initialized()) std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

}  // namespace xs::tools
