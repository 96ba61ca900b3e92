// Collective matmuls on a 2-D mesh (row, col): seed 003's GSPMD, Wang et al. and systolic
// algorithms, each output-, input- and weight-stationary, and seed 004's all-gather variants, as
// one C++ API over shard_map. Example (Wang OS on a 2x4 mesh, seed 003's shapes, f32):
//
//   CmmSpec spec{Algorithm::kWang, Variant::kOS, /*rows=*/2, /*cols=*/4,
//                DimsFromBshd({4, 256, 48, 64}, Variant::kOS), DType::kF32};
//   XS_ASSIGN_OR_RETURN(CmmInputs in, MakeInputs(spec, /*seed=*/0));
//   XS_ASSIGN_OR_RETURN(CmmResult r, Run(*client, spec, in, RunOptions{}));
//   // r.out: f32[1024,12288] = in.a @ in.b; r.ms: the timed calls
#ifndef XSHARD_CMM_CMM_H_
#define XSHARD_CMM_CMM_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/runtime/client.h"

namespace xs::cmm {

// GSPMD: all-gather / reduce-scatter around one local matmul. Wang: split the operands and
// overlap a bidirectional ppermute ring (asynchronous start / done) with the partial matmuls.
// Systolic: chunk the gathered dim into K strided chunks and all-gather (and reduce-scatter)
// chunk by chunk. kAgDot and kSlicePsum are seed 004's xla_matmul (gather both operands, one
// matmul) and xla_matmul3 (gather W, slice this device's rows, matmul, psum over col).
enum class Algorithm { kGspmd, kWang, kSystolic, kAgDot, kSlicePsum };
// Which operand stays put (seed 003). With C[M,N] = sum_k A[m,k] B[k,n], every operand and the
// result P('row','col') on the mesh:
//   kOS: A stored [M,K], B stored [K,N]   (Y = X @ W, a layer's forward)
//   kIS: A stored [M,K], B stored [N,K]   (dX = dY @ W^T)
//   kWS: A stored [K,M], B stored [K,N]   (dW = X^T @ dY)
// Seed 004's algorithms have one fixed layout (A [M,K] P('row','col'), B [K,N] P('row',None),
// C P('row',None)) and ignore the variant.
enum class Variant { kOS, kIS, kWS };

std::string_view AlgorithmName(Algorithm a);  // "gspmd", "wang", "systolic", "ag_dot", ...
std::string_view VariantName(Variant v);      // "os", "is", "ws"
// Inverses of the above; the error lists the accepted names.
StatusOr<Algorithm> ParseAlgorithm(std::string_view name);
StatusOr<Variant> ParseVariant(std::string_view name);

// The matmul's sizes: C[m,n] = sum over k.
struct MatmulDims {
  int64_t m = 0, k = 0, n = 0;
};
// Seed 003's transformer-layer shapes.
struct Bshd {
  int64_t b = 0, s = 0, h = 0, d = 0;
};
// Seed 003's three products of one layer with X [B*S, H*D] and W [H*D, 4*H*D]: kOS is X @ W
// (m=B*S, k=H*D, n=4*H*D), kIS is Y @ W^T (m=B*S, k=4*H*D, n=H*D; B is W itself), kWS is
// X^T @ Y (m=H*D, k=B*S, n=4*H*D; A is X itself), as the seed's last cells chain them.
MatmulDims DimsFromBshd(const Bshd& bshd, Variant variant);

struct CmmSpec {
  Algorithm algo = Algorithm::kGspmd;
  Variant variant = Variant::kOS;
  int64_t rows = 1, cols = 1;  // the mesh ('row', 'col')
  MatmulDims dims;
  DType dtype = DType::kF32;  // inputs: f32 or bf16; accumulation and the result are f32
  // Systolic only: the gathered dim is cut into `chunks` strided chunks of `block`-wide blocks
  // (the seed's K and B: local index j is in chunk (j / block) % chunks).
  int64_t chunks = 8, block = 8;
};

// "wang os 2x4 m=1024 k=3072 n=12288 f32".
std::string SpecString(const CmmSpec& spec);

// OK when the algorithm can divide every dim; otherwise InvalidArgument naming the dim, its
// size, the divisor and why (e.g. "wang os on 2x4: k=30 must divide by 2*cols = 8 (the ring
// splits each device's k block in two halves); ..."). Also rejects meshes below 1x1, dtypes
// other than f32 / bf16 and chunks / block below 1.
Status Validate(const CmmSpec& spec);

// The global operands in their stored layouts (see Variant): a and b.
struct CmmInputs {
  Array a, b;
};
// Deterministic inputs from `seed`: values uniform in [-1, 1), rounded to spec.dtype.
StatusOr<CmmInputs> MakeInputs(const CmmSpec& spec, uint64_t seed);
// Shapes of a and b in their stored layouts.
std::vector<int64_t> ADims(const CmmSpec& spec);
std::vector<int64_t> BDims(const CmmSpec& spec);

// The single-device product (f32 [m, n]) through the one-device dot kernel (oneDNN / BLAS),
// accumulating in f32: what `jnp.dot` gives.
StatusOr<Array> Reference(const CmmSpec& spec, const CmmInputs& in);

struct RunOptions {
  int64_t warmup = 0;   // untimed calls first
  int64_t iters = 1;    // timed calls (>= 1)
  // Non-empty: write a Chrome trace (Perfetto) of the last timed call here: one track per
  // device with every matmul and blocking collective, and one with asynchronous transfers from
  // start to done, so overlap shows as a matmul inside an in-flight interval.
  std::string trace_path;
};

// What device 0 did in one call (every device does the same amount).
struct CmmCost {
  int64_t flops = 0;            // 2*m*n*k of its matmuls
  int64_t bytes_in = 0;         // bytes received by blocking collectives
  int64_t bytes_async = 0;      // bytes received by asynchronous ones (overlappable)
  int64_t collectives = 0;      // collective calls
  int64_t dots = 0;             // matmul kernel calls
};

struct CmmResult {
  Array out;               // the global f32 result, [m, n]
  std::vector<double> ms;  // wall time of each timed call (shard_map over placed inputs)
  // CPU time (user + system, every thread of the process) over all timed calls: less
  // dependent on the machine's load than wall time.
  double cpu_ms = 0;
  CmmCost cost;
};

// Places `in` on the devices once (per the algorithm's in_specs), then runs warmup + iters
// calls of the algorithm and returns the last result. Needs rows*cols client devices. Errors:
// Validate's, input shapes that are not ADims / BDims of spec.dtype, and device failures.
StatusOr<CmmResult> Run(Client& client, const CmmSpec& spec, const CmmInputs& in,
                        const RunOptions& options);

// max |got - want| over all elements (dims must agree; an error names both shapes).
StatusOr<double> MaxAbsError(const Array& got, const Array& want);

}  // namespace xs::cmm

#endif  // XSHARD_CMM_CMM_H_
