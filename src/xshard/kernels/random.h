// Random number ops: rng-bit-generator (counter-based Philox-4x32-10 and Threefry-2x32-20 over
// the given state) and rng (uniform / normal). XLA defines rng-bit-generator's output as a
// deterministic function of its state that may differ between backends; xshard's is the plain
// counter-mode stream described below, identical on every device count.
#ifndef XSHARD_KERNELS_RANDOM_H_
#define XSHARD_KERNELS_RANDOM_H_

#include <cstdint>
#include <utility>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"

namespace xs::kernels {

// rng-bit-generator(state), algorithm=...: `state` is u64[2] (key, counter) or, for Philox,
// u64[3+] (key, counter low, counter high, further words kept as they are); rng_default is Philox. The output of `out_shape` (any
// integer type) is filled little-endian with the generator's blocks for counters counter,
// counter+1, ...; the new state is the input with the counter advanced past the blocks used.
StatusOr<std::pair<Array, Array>> RngBitGenerator(RngAlgorithm algorithm, const Array& state, const Shape& out_shape);

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
