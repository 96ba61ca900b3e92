// Seed 003's collective matmuls through the cmm API: Wang et al.'s output-stationary matmul on a
// 2x4 mesh (row, col) with the seed's first shapes (B,S,H,D = 4,16,12,32), checked against the
// single-device product, then every algorithm x variant in bf16. Exits 1 on a wrong result.
#include <cstdio>

#include "xshard/cmm/cmm.h"
#include "xshard/runtime/client.h"

namespace {

using namespace xs;  // NOLINT: a short example

Status Main() {
  ClientOptions options;
  options.num_devices = 8;
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Create(options));
  // [cmm-wang-os]
  // Y = X @ W with X f32[64,384] and W f32[384,1536], both P('row','col') on mesh row=2, col=4.
  cmm::CmmSpec spec{cmm::Algorithm::kWang, cmm::Variant::kOS, /*rows=*/2, /*cols=*/4,
                    cmm::DimsFromBshd({4, 16, 12, 32}, cmm::Variant::kOS), DType::kF32};
  XS_ASSIGN_OR_RETURN(cmm::CmmInputs in, cmm::MakeInputs(spec, /*seed=*/0));
  cmm::RunOptions run;
  run.warmup = 1;
  run.iters = 3;
  XS_ASSIGN_OR_RETURN(cmm::CmmResult r, cmm::Run(*client, spec, in, run));
  XS_ASSIGN_OR_RETURN(Array want, cmm::Reference(spec, in));  // the single-device product
  XS_ASSIGN_OR_RETURN(double err, cmm::MaxAbsError(r.out, want));
  std::printf("%s: max_abs_err=%.2e, %lld bytes through async ppermutes per device\n",
              cmm::SpecString(spec).c_str(), err, static_cast<long long>(r.cost.bytes_async));
  // [cmm-wang-os]
  if (!(err < 1e-3)) return Internal("wang os differs from the single-device product by ", err);
  for (cmm::Algorithm algo : {cmm::Algorithm::kGspmd, cmm::Algorithm::kWang,
                              cmm::Algorithm::kSystolic}) {
    for (cmm::Variant v : {cmm::Variant::kOS, cmm::Variant::kIS, cmm::Variant::kWS}) {
      cmm::CmmSpec s{algo, v, 2, 4, cmm::DimsFromBshd({4, 16, 12, 32}, v), DType::kBF16,
                     /*chunks=*/4, /*block=*/4};
      XS_ASSIGN_OR_RETURN(cmm::CmmInputs x, cmm::MakeInputs(s, 1));
      XS_ASSIGN_OR_RETURN(cmm::CmmResult got, cmm::Run(*client, s, x, cmm::RunOptions{}));
      XS_ASSIGN_OR_RETURN(Array ref, cmm::Reference(s, x));
      XS_ASSIGN_OR_RETURN(double e, cmm::MaxAbsError(got.out, ref));
      std::printf("%-40s max_abs_err=%.2e\n", cmm::SpecString(s).c_str(), e);
      if (!(e < 1e-3)) return Internal(cmm::SpecString(s), " differs by ", e);
    }
  }
  return OkStatus();
}

}  // namespace

int main() {
  xs::Status s = Main();
  if (!s.ok()) {
    std::fprintf(stderr, "cmm_matmul: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
