// The MPI process: whether this build has MPI, whether this process was started by mpirun, MPI
// start-up and shutdown, and the process-level transfers the runtime and the CLI need around a
// run (the inputs from rank 0, every process's outputs, each run's outcome). Every wait is
// bounded by a timeout; messages name processes by their MPI rank ("process 1").
#ifndef XSHARD_MPI_MPI_PROCESS_H_
#define XSHARD_MPI_MPI_PROCESS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

namespace xs::mpi {

// Whether this build has MPI support (CMake found MPI; XSHARD_WITH_MPI).
bool BuiltWithMpi();

// Whether the environment says this process was started by mpirun / mpiexec (OpenMPI's
// OMPI_COMM_WORLD_SIZE, or PMI_SIZE / PMIX_RANK), so that one binary works with and without it.
bool LaunchedByMpirun();

// Initializes MPI once per process (MPI_THREAD_SERIALIZED: any thread may call MPI, one at a
// time; the layer serializes its own calls) and duplicates MPI_COMM_WORLD for xshard's traffic.
// Unimplemented when the build has no MPI, naming the CMake option and the packages.
Status Initialize();
bool Initialized();

// This process's rank and the number of processes (0 and 1 before Initialize()).
int64_t ProcessRank();
int64_t ProcessCount();

// Ends MPI at a normal exit: every process must call it (it synchronizes them). Does nothing
// before Initialize() or after an error that left messages in flight (then the process just
// exits and mpirun ends the others).
void Finalize();

// The failure a peer process announced (its abort message), checked for now without waiting:
// "process P: <its error>", or OK when none has come (or MPI is not started). A process whose
// devices compute without any MPI call (one device stuck in a loop) learns of a peer's failure
// this way: the CLI's run watch polls it while the devices run and stops them with it. Thread-safe.
Status PollRemoteAbort();

// Whether a failed cross-process collective or run left messages in flight: later runs fail at
// once with this reason (MPI traffic cannot resume after a peer died or diverged).
Status BrokenReason();
void MarkBroken(const Status& reason);

// Sends `arrays` (meaningful on `root` only) to every process, or, when `root_status` is an error
// on the root, that error, which every process then returns (so a bad input file on rank 0 ends
// every process with the same message). Fails after `timeout` naming the process that did not
// answer.
Status BroadcastArrays(std::vector<Array>& arrays, const Status& root_status, int64_t root,
                       std::chrono::milliseconds timeout);

// Sends each process only its devices' arrays: `root` holds per_rank[r] for every r and sends
// process q the entries with owner[r] == q; on return every process has its own entries (others
// stay as they were, normally empty). As BroadcastArrays, a `root_status` error on the root is
// what every process returns.
Status ScatterArrays(const std::vector<int64_t>& owner, std::vector<std::vector<Array>>& per_rank,
                     const Status& root_status, int64_t root, std::chrono::milliseconds timeout);

// Exchanges per-device arrays: process p fills per_rank[r] for every r with owner[r] == p; on
// return every process has every entry, or with `only_to` only that process does (the others
// send theirs to it and receive nothing). owner.size() == per_rank.size().
Status ShareArrays(const std::vector<int64_t>& owner, std::vector<std::vector<Array>>& per_rank,
                   std::chrono::milliseconds timeout, std::optional<int64_t> only_to = std::nullopt);

// Every process tells every other how its part of a run ended and gets theirs back; returns OK
// when all succeeded, else the first failure in process order, as "process P: <message>" (the
// local one unprefixed). A process that does not answer within `timeout` is named. Also ends with
// an abort message a peer sent meanwhile.
Status AgreeOnOutcome(const Status& local, std::chrono::milliseconds timeout);

}  // namespace xs::mpi

#endif  // XSHARD_MPI_MPI_PROCESS_H_
