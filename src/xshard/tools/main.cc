// The xshard command-line tool; all logic lives in the libraries (see tools/cli.h).
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <cblas.h>

#include "xshard/kernels/cpu_features.h"
#include "xshard/tools/cli.h"

int main(int argc, char** argv) {
  // OpenBLAS picks its kernels once, when it loads, by the CPU's model: CPUs it does not know
  // (AMD Zen 4 / 5, a VM that hides an Intel model) run on kernels below what they can do (AVX2,
  // even SSE3 "Prescott": 3 to 5x slower). Re-execute once with OPENBLAS_CORETYPE set to the core
  // the CPU's features call for (kernels/cpu_features.h), noting the library's own choice in
  // XSHARD_BLAS_CORETYPE_DETECTED. Never when the user set OPENBLAS_CORETYPE (that also stops a
  // second re-exec), nor with XSHARD_KEEP_BLAS_CORETYPE=1. If exec fails, run on as we are (f32
  // dots then go to oneDNN).
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr && std::getenv("XSHARD_KEEP_BLAS_CORETYPE") == nullptr) {
    const std::string core = xs::kernels::HostBlasCoreToForce();
    const std::string detected = openblas_get_corename();
    if (!core.empty() && setenv(xs::kernels::kBlasCoreDetectedEnv, detected.c_str(), 1) == 0 &&
        setenv("OPENBLAS_CORETYPE", core.c_str(), 1) == 0) {
      execv("/proc/self/exe", argv);
      unsetenv("OPENBLAS_CORETYPE");
    }
    unsetenv(xs::kernels::kBlasCoreDetectedEnv);
  }
  const int code = xs::tools::RunCli(argc, argv);
  // Under a small address-space limit (ulimit -v below about 250 MiB) OpenBLAS's worker threads
  // cannot get their buffers at load and its exit handler then waits for them forever. The
  // command's work is done and flushed here, so end without running exit handlers in that case.
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
      as.rlim_cur < (rlim_t{512} << 20) && std::getenv("XSHARD_TRACE") == nullptr) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    _exit(code);
  }
  return code;
}
