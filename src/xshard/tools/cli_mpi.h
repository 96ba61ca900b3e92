// The CLI's MPI helpers (cli_mpi.cc): the client options of a device-running command, the inputs
// rank 0 reads and sends, and what rank 0 alone prints.
#ifndef XSHARD_TOOLS_CLI_MPI_H_
#define XSHARD_TOOLS_CLI_MPI_H_

#include <cstdint>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/runtime/client.h"

namespace xs::tools {

// ClientOptions for `num_devices` (0: the default count) on the chosen --platform (cli.h): MPI
// mode with --devices-per-process under mpirun, and --collective-timeout either way. Errors are the
// platform's, after "--platform cuda: " (cli_platform.cc).
StatusOr<ClientOptions> CliClientOptions(int64_t num_devices);
// Client::Create(CliClientOptions(num_devices)).
StatusOr<std::unique_ptr<Client>> CliCreateClient(int64_t num_devices);
// A client of `options` (a demo's own) on the chosen --platform, in this process.
StatusOr<std::unique_ptr<Client>> CliCreateClient(ClientOptions options);
// This process's rank under mpirun (from the environment, before MPI starts); 0 otherwise.
int64_t CliProcessRank();
// The global inputs: `loaded` (what this process read) without MPI; under MPI, rank 0's `loaded`
// (or its error) sent to every process.
Status ShareInputs(Client& client, StatusOr<std::vector<Array>> loaded, std::vector<Array>& args);
// Rank 0's `mine` on every process: for decisions every process must take alike (whether an
// adaptive timing loop goes on: each process's own clock would make them run different numbers
// of calls, and the extra call of one would wait for peers that left). `mine` without MPI.
StatusOr<bool> AgreeWithRankZero(Client& client, bool mine);
// Under mpirun, ranks other than 0 print nothing to stdout (XSHARD_MPI_ALL_OUTPUT=1 keeps it);
// errors still go to every rank's stderr.
void SilenceOtherRanks();
// Ends MPI after a successful command (every process then finalizes together); after a failure
// (already printed) it waits 300 ms, so that the peers it told print their errors too, and the
// process then exits 1 without MPI_Finalize; mpirun ends the others and exits 1.
void EndMpi(bool ok);

}  // namespace xs::tools

#endif  // XSHARD_TOOLS_CLI_MPI_H_
