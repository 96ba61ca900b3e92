// JAX's LAPACK custom-calls that the CPU executor runs through the system's LAPACK (geqrf, orgqr,
// ormqr, geqp3, syevd / heevd, gesdd, gesvd, geev, gees, gehrd, sytrd, gtsv:
// exec/executable_lapack.cc) have no GPU kernels. Planning a module with them for the GPU (no GPU
// needed) records each as an unsupported step whose one-line reason names the instruction and the
// target, and Supported() says so; nothing fails or crashes.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <filesystem>
#include <fstream>
#include <sstream>

#include "xshard/cuda/gpu_executable.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace lapack_plan_test {
namespace {

TEST(GpuPlanLapack, CpuOnlyLapackCallsAreUnsupportedStepsNamingTheTarget) {
  const std::filesystem::path dir = std::filesystem::path(XSHARD_SOURCE_DIR) / "tests" / "data" / "hlo";
  for (const char* name : {"lapack_qr_batch", "lapack_qr_pivoting", "lapack_qr_multiply", "lapack_eigh",
                           "lapack_eigvalsh_c64", "lapack_svd_full", "lapack_svd_qr_algorithm", "lapack_eig",
                           "lapack_schur", "lapack_hessenberg", "lapack_tridiagonal", "lapack_tridiagonal_solve"}) {
    SCOPED_TRACE(name);
    std::ifstream in(dir / (std::string(name) + ".hlo"));
    std::stringstream text;
    text << in.rdbuf();
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text.str(), name);
    ASSERT_TRUE(m.ok()) << m.status().message();
    StatusOr<std::unique_ptr<Executable>> exe = Executable::Create(**m);
    ASSERT_TRUE(exe.ok()) << exe.status().message();
    StatusOr<std::unique_ptr<GpuPlan>> plan = GpuPlan::Create(**exe);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    const Status s = (*plan)->Supported();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
    // Every LAPACK custom-call the CPU runs with LAPACK is one unsupported step naming its target.
    int calls = 0;
    for (const Computation* c : (*m)->computations()) {
      for (const Instruction* i : c->instructions()) {
        const std::string target = i->attrs().custom_call_target.value_or("");
        if (target.rfind("lapack_", 0) != 0 || target.find("potrf") != std::string::npos ||
            target.find("getrf") != std::string::npos || target.find("trsm") != std::string::npos) {
          continue;
        }
        ++calls;
        bool named = false;
        for (const GpuPlanReport::Unsupported& u : (*plan)->report().unsupported) {
          if (u.instruction != i->name()) continue;
          named = true;
          EXPECT_EQ(u.opcode, "custom-call");
          EXPECT_NE(u.why.find(target), std::string::npos) << u.why;
          EXPECT_EQ(u.why.rfind("cuda: ", 0), 0u) << u.why;
        }
        EXPECT_TRUE(named) << i->name() << " (" << target << ") is not reported unsupported";
      }
    }
    EXPECT_GE(calls, 1);
    EXPECT_NE(s.message().find("unsupported on the GPU: instruction '"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("custom-call lapack_"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace lapack_plan_test
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(GpuPlanLapack, NeedsTheCudaToolkit) { GTEST_SKIP() << "this build has no CUDA toolkit (XSHARD_WITH_CUDA)"; }

#endif  // XSHARD_WITH_CUDA
