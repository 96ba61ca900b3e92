// `xshard demo` section seed004-gemm: seed 004's distributed bf16 GEMM on a 2x2 mesh
// (2048x2048 @ 2048x1024, f32 accumulation): its all_gather + dot and all_gather +
// dynamic_slice + psum variants timed with the seed's latency report, and its numerics report
// (the f32-accumulated result against an f32 reference, then the same result rounded to bf16).
#include <iostream>

#include "xshard/cmm/cmm.h"
#include "xshard/core/numerics.h"
#include "xshard/kernels/dot.h"
#include "xshard/runtime/client.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/demo.h"
#include "xshard/tools/latency_report.h"

namespace xs::tools {
namespace {

Status Seed004Gemm(DemoContext& ctx) {
  std::ostream& out = *ctx.out;
  ClientOptions options;
  options.num_devices = 4;
  XS_ASSIGN_OR_RETURN(auto client, CliCreateClient(options));
  out << "A bf16[2048,2048] P('row','col'), B bf16[2048,1024] P('row',None) on mesh row=2, col=2;\n"
      << "C = A @ B in f32 (bf16 products, f32 accumulation), P('row',None); inputs uniform in\n"
      << "[-1, 1) rounded to bf16; 3 warmup calls, then 10 timed calls of each variant\n";
  NumericsReport f32_report, bf16_report;
  for (cmm::Algorithm algo : {cmm::Algorithm::kAgDot, cmm::Algorithm::kSlicePsum}) {
    cmm::CmmSpec spec{algo, cmm::Variant::kOS, 2, 2, {2048, 2048, 1024}, DType::kBF16};
    XS_ASSIGN_OR_RETURN(cmm::CmmInputs in, cmm::MakeInputs(spec, 0));
    cmm::RunOptions run;
    run.warmup = 3;
    run.iters = 10;
    XS_ASSIGN_OR_RETURN(cmm::CmmResult r, cmm::Run(*client, spec, in, run));
    out << "\n" << cmm::AlgorithmName(algo)
        << (algo == cmm::Algorithm::kAgDot
                ? " (seed 004's xla_matmul: all_gather A's columns and B's rows, one local dot):\n"
                : " (seed 004's xla_matmul3: all_gather B, dynamic_slice this device's rows, "
                  "dot, psum over col):\n");
    PrintLatencyTable(out, ComputeLatencyStats(r.ms));
    if (algo != cmm::Algorithm::kAgDot) continue;
    // The reference: the same bf16 operands multiplied in f32 on one device (jnp.dot with
    // preferred_element_type=f32).
    kernels::SetBlasThreads(0);
    XS_ASSIGN_OR_RETURN(Array want, cmm::Reference(spec, in));
    NumericsOptions numerics;
    numerics.atol = numerics.rtol = 1e-2;
    numerics.threshold = 0.1;
    numerics.blocks = {2, 2};
    XS_ASSIGN_OR_RETURN(f32_report, CompareNumerics(r.out, want, numerics));
    XS_ASSIGN_OR_RETURN(bf16_report, CompareNumerics(r.out.Convert(DType::kBF16), want, numerics));
  }
  out << "\nnumerics of ag_dot's f32 result against the one-device f32 product (seed 004's "
         "report,\nerrors: |diff| > 0.1, blocks: the four quadrants):\n"
      << FormatNumericsReport(f32_report)
      << "\nthe same result rounded to bf16 (seed 004's bf16 output; with its N(0, 1) inputs "
         "15.8 % of\nelements are off by > 0.1, examples/numerics_seed004 reproduces that):\n"
      << FormatNumericsReport(bf16_report);
  if (!f32_report.allclose) return Internal("seed 004's f32-accumulated GEMM is not allclose");
  return OkStatus();
}

}  // namespace

std::vector<DemoSection> Seed004DemoSections() {
  return {{"seed004-gemm",
           "Seed 004: distributed bf16 GEMM on a 2x2 mesh, latency and numerics reports",
           Seed004Gemm}};
}

}  // namespace xs::tools
