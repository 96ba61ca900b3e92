// Per-device inputs and outputs of an SPMD run as files, for `xshard run --devices N`: device d's
// argument i is DIR/dev<d>/arg<i>.npy, its output leaf i is DIR/dev<d>/out<i>.npy; and seeded
// random inputs, different on every device.
#ifndef XSHARD_RUNTIME_SPMD_EXECUTOR_IO_H_
#define XSHARD_RUNTIME_SPMD_EXECUTOR_IO_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

namespace xs {

// Reads DIR/dev<d>/arg<i>.npy for every device d of `devices` and argument i of `shapes`; result
// [k][i] belongs to devices[k]. Errors name the file and what it should hold: a missing file, a
// shape or dtype that is not the parameter's, and a stray arg<n>.npy beyond the arguments.
StatusOr<std::vector<std::vector<Array>>> ReadDeviceArguments(const std::string& dir,
                                                              const std::vector<int64_t>& devices,
                                                              const std::vector<Shape>& shapes);

// Writes outputs[k][i] to DIR/dev<devices[k]>/out<i>.npy, creating the folders.
Status WriteDeviceOutputs(const std::string& dir, const std::vector<int64_t>& devices,
                          const std::vector<std::vector<Array>>& outputs);

// Uniform random values: floats in [-1, 1), integers in [0, 10), pred 0 / 1 (as `xshard run
// --random-args` draws them on one device).
Array RandomArray(const Shape& shape, std::mt19937_64& rng);

// One draw of std::uniform_real_distribution<double>(-1, 1) on `rng`, the same value libstdc++
// gives (one 64-bit draw scaled to [0, 1)), without the distribution's per-draw log2 of the
// generator's range, which made drawing a 3 GB argument take a minute.
double UniformMinusOneToOne(std::mt19937_64& rng);

// `count` devices' arguments from one generator seeded with `seed`: device 0's arguments first,
// then device 1's, ..., so devices get different values.
std::vector<std::vector<Array>> RandomDeviceArguments(uint64_t seed, int64_t count,
                                                      const std::vector<Shape>& shapes);

}  // namespace xs

#endif  // XSHARD_RUNTIME_SPMD_EXECUTOR_IO_H_
