// OpenMPI's own MPI_Allgather and MPI_Allreduce (f32 sum) timed directly, as the baseline for
// `mpirun -np P xshard bench collectives`: the same per-process operand sizes, median and min
// latency of `iterations` calls after 3 warm-up calls on rank 0 (each call starts after a
// barrier), and bus bandwidth with the NCCL-tests factors ((n-1)/n for all-gather on the gathered
// size, 2(n-1)/n for all-reduce).
//   mpirun -np 2 mpi_raw_bench [BYTES...]   (default 4096 65536 1048576 8388608)
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<long> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atol(argv[i]));
  if (sizes.empty()) sizes = {4096, 65536, 1 << 20, 8 << 20};
  const int iterations = 20;
  if (rank == 0) {
    std::printf("%-14s %7s %10s %11s %11s %10s\n", "op", "procs", "bytes/proc", "median_us",
                "min_us", "busbw GB/s");
  }
  for (long bytes : sizes) {
    const long count = std::max<long>(1, bytes / 4);
    std::vector<float> in(count, 1.0f), out(count * n);
    for (int op = 0; op < 2; ++op) {
      std::vector<double> t;
      for (int it = 0; it < 3 + iterations; ++it) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (op == 0) {
          MPI_Allgather(in.data(), static_cast<int>(count), MPI_FLOAT, out.data(),
                        static_cast<int>(count), MPI_FLOAT, MPI_COMM_WORLD);
        } else {
          MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        }
        if (it >= 3) t.push_back(MPI_Wtime() - t0);
      }
      std::sort(t.begin(), t.end());
      const double median = t[t.size() / 2];
      const double size = op == 0 ? 4.0 * count * n : 4.0 * count;
      const double factor = op == 0 ? (n - 1.0) / n : 2.0 * (n - 1.0) / n;
      if (rank == 0) {
        std::printf("%-14s %7d %10ld %11.1f %11.1f %10.3f\n",
                    op == 0 ? "MPI_Allgather" : "MPI_Allreduce", n, 4 * count, median * 1e6,
                    t.front() * 1e6, size / median / 1e9 * factor);
      }
    }
  }
  MPI_Finalize();
  return 0;
}
