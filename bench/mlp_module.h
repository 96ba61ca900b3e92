// The 10,000-instruction MLP-like module the propagation and partitioning benchmarks share: a
// chain of layers (dot, bias broadcast + add, relu, transpose pair) on a mesh (a, b) with
// a * b = partitions, activations split over a and weights over b.
#ifndef XSHARD_BENCH_MLP_MODULE_H_
#define XSHARD_BENCH_MLP_MODULE_H_

#include <cstdint>
#include <string>

#include "xshard/base/strings.h"

namespace xs::bench {

// HLO text of a `layers`-layer MLP over `partitions` devices: 10 instructions per layer plus
// the input and the root (1,000 layers: 10,002 instructions). Only the input and the weights are
// annotated; propagation spreads the rest. b = 64 from 64 partitions up (else 2), a = partitions
// / b, so both shardings stay in the iota form whatever the count.
inline std::string MlpText(int layers, int64_t partitions) {
  const int64_t b = partitions >= 64 ? 64 : 2;
  const int64_t a = partitions / b;
  const std::string act =
      StrCat("{devices=[", a, ",1,", b, "]<=[", partitions, "] last_tile_dim_replicate}");
  const std::string weight = StrCat("{devices=[1,", b, ",", a, "]<=[", a, ",", b,
                                    "]T(1,0) last_tile_dim_replicate}");
  std::string text = StrCat(
      "HloModule mlp, allow_spmd_sharding_propagation_to_output={true}, num_partitions=",
      partitions, "\n\nENTRY main {\n  h0 = f32[512,256] parameter(0), sharding=", act, "\n");
  for (int i = 1; i <= layers; ++i) {
    StrAppend(&text, "  w", i, " = f32[256,256] parameter(", 2 * i - 1, "), sharding=", weight,
              "\n", "  b", i, " = f32[256] parameter(", 2 * i, ")\n", "  d", i,
              " = f32[512,256] dot(h", i - 1, ", w", i,
              "), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n", "  bb", i,
              " = f32[512,256] broadcast(b", i, "), dimensions={1}\n", "  a", i,
              " = f32[512,256] add(d", i, ", bb", i, ")\n", "  z", i, " = f32[] constant(0)\n",
              "  zb", i, " = f32[512,256] broadcast(z", i, "), dimensions={}\n", "  r", i,
              " = f32[512,256] maximum(a", i, ", zb", i, ")\n", "  t", i,
              " = f32[256,512] transpose(r", i, "), dimensions={1,0}\n", "  h", i,
              " = f32[512,256] transpose(t", i, "), dimensions={1,0}\n");
  }
  StrAppend(&text, "  ROOT out = f32[512,256] negate(h", layers, ")\n}\n");
  return text;
}

}  // namespace xs::bench

#endif  // XSHARD_BENCH_MLP_MODULE_H_
