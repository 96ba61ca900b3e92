// Random number ops: rng-bit-generator (counter-based Philox-4x32-10 and Threefry-2x32-20 over
// the given state, laid out as XLA's CPU and GPU backends lay them out, so the bits are JAX's)
// and rng (uniform / normal).
#ifndef XSHARD_KERNELS_RANDOM_H_
#define XSHARD_KERNELS_RANDOM_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"

namespace xs::kernels {

// rng-bit-generator(state), algorithm=...: the bits of `out_shape` (any 8- to 64-bit integer type)
// and the new state, as XLA's RngBitGeneratorExpander computes them (rng_default is Philox, as on
// XLA's CPU and GPU backends). The state's first word is the key.
// - Philox: the 128-bit counter is (state[1], state[2]) for u64[3+] and (state[1], state[0]) for
//   u64[2]; block b is Philox of counter + b; its four 32-bit words are the next four elements of
//   up to 32 bits (narrower types keep a word's low bits) or the next two 64-bit elements (low word
//   first). The new state advances state[1] by the blocks used (carrying into state[2] for u64[3+]).
// - Threefry (u64[2]): 64-bit elements take counter state[1] + i, x0 | x1 << 32; narrower ones
//   take one counter per pair of elements along one dim (ThreefrySplitOf), x0 for the even and x1
//   for the odd index, counters in row-major order over the halved shape.
StatusOr<std::pair<Array, Array>> RngBitGenerator(RngAlgorithm algorithm, const Array& state, const Shape& out_shape);

// The dim Threefry pairs elements along for an output of `dims` (XLA's SplitShapeIntoHalves):
// the first even dim, else the first largest one. Counter h (row-major over dims with that dim
// halved, rounded up) fills index 2 * hs and 2 * hs + 1 of it, where h = (o * half + hs) * inner + r
// for the `outer` dims before and `inner` dims after. A scalar uses one counter (outer = inner =
// dim = half = 1 then, and only x0 is kept).
struct ThreefrySplit {
  int64_t outer = 1, dim = 1, half = 1, inner = 1;
};
ThreefrySplit ThreefrySplitOf(const std::vector<int64_t>& dims);

// rng(a, b), distribution=...: uniform in [a, b) (floats and integers) or normal with mean a and
// standard deviation b (floats), a and b scalars of the result type. `seed` picks the stream (the
// executor derives it from the instruction, so a program's rng is reproducible).
StatusOr<Array> Rng(RngDistribution distribution, const Array& a, const Array& b, const Shape& out_shape,
                    uint64_t seed);

// The generators' blocks, exposed for tests against published known-answer vectors.
void Philox4x32(const uint32_t key[2], const uint32_t counter[4], uint32_t out[4]);
void Threefry2x32(const uint32_t key[2], const uint32_t counter[2], uint32_t out[2]);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_RANDOM_H_
