// `xshard demo` section seed003-cmm: seed 003's nine collective matmuls (GSPMD, Wang, systolic x
// OS / IS / WS) on mesh row=2, col=4 at the seed's first shapes, each checked against the
// single-device product with the seed's allclose and timed.
#include <cmath>
#include <cstdio>
#include <iostream>

#include "xshard/cmm/cmm.h"
#include "xshard/kernels/dot.h"
#include "xshard/runtime/client.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/demo.h"
#include "xshard/tools/latency_report.h"

namespace xs::tools {
namespace {

// jnp.allclose(got, want, atol=1e-2, rtol=1e-2), the seed's check.
bool AllClose(const Array& got, const Array& want) {
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double g = got.GetDouble(i), w = want.GetDouble(i);
    if (!(std::abs(g - w) <= 1e-2 + 1e-2 * std::abs(w))) return false;
  }
  return true;
}

Status Seed003Cmm(DemoContext& ctx) {
  std::ostream& out = *ctx.out;
  ClientOptions options;
  options.num_devices = 8;
  XS_ASSIGN_OR_RETURN(auto client, CliCreateClient(options));
  // The seed's first cell (B,S,H,D = 4,16,12,32); its 4,256,48,64 timings take seconds each:
  // `xshard bench cmm --algo all --variant all` runs them (README).
  const cmm::Bshd bshd{4, 16, 12, 32};
  out << "B,S,H,D = 4,16,12,32 (seed 003's first cell) on mesh row=2, col=4, f32:\n"
      << "  os: Y = X @ W, X f32[64,384], W f32[384,1536]\n"
      << "  is: X' = Y @ W^T (Y f32[64,1536], W stored as is)\n"
      << "  ws: W' = X^T @ Y (X, Y stored as is)\n"
      << "every operand and result P('row', 'col'); systolic with K=4 chunks of B=4 blocks;\n"
      << "allclose(atol=rtol=1e-2) against jnp.dot on one device; median of 5 calls after 1 warmup\n\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-9s %-7s %-8s %11s %9s %10s\n", "algo", "variant", "allclose",
                "max_abs_err", "median_ms", "async_B");
  out << line;
  for (cmm::Algorithm algo : {cmm::Algorithm::kGspmd, cmm::Algorithm::kWang, cmm::Algorithm::kSystolic}) {
    for (cmm::Variant v : {cmm::Variant::kOS, cmm::Variant::kIS, cmm::Variant::kWS}) {
      cmm::CmmSpec spec{algo, v, 2, 4, cmm::DimsFromBshd(bshd, v), DType::kF32, /*chunks=*/4, /*block=*/4};
      XS_ASSIGN_OR_RETURN(cmm::CmmInputs in, cmm::MakeInputs(spec, 0));
      kernels::SetBlasThreads(0);
      XS_ASSIGN_OR_RETURN(Array want, cmm::Reference(spec, in));
      cmm::RunOptions run;
      run.warmup = 1;
      run.iters = 5;
      XS_ASSIGN_OR_RETURN(cmm::CmmResult r, cmm::Run(*client, spec, in, run));
      XS_ASSIGN_OR_RETURN(double err, cmm::MaxAbsError(r.out, want));
      const bool close = AllClose(r.out, want);
      std::snprintf(line, sizeof line, "  %-9s %-7s %-8s %11.2e %9.3f %10lld\n",
                    std::string(cmm::AlgorithmName(algo)).c_str(),
                    std::string(cmm::VariantName(v)).c_str(), close ? "True" : "False", err,
                    ComputeLatencyStats(r.ms).median, static_cast<long long>(r.cost.bytes_async));
      out << line;
      if (!close) return Internal(cmm::SpecString(spec), " is not allclose to jnp.dot");
    }
  }
  out << "(async_B: bytes each device receives through asynchronous collectives started before a\n"
         "matmul and finished after it: Wang's ppermute rings, systolic's next-chunk all-gathers.)\n";
  return OkStatus();
}

}  // namespace

std::vector<DemoSection> CmmDemoSections() {
  return {{"seed003-cmm",
           "Seed 003: GSPMD, Wang and systolic matmuls (OS / IS / WS) on mesh row=2, col=4",
           Seed003Cmm}};
}

}  // namespace xs::tools
