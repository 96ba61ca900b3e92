// Counter-based generators (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3") and
// the rng distributions on top of them; see random.h.
#include "xshard/kernels/random.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

namespace xs::kernels {
namespace {

uint32_t MulHiLo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

uint32_t Rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// Fills `bytes` bytes at `out` with the generator's stream from 128-bit counter (lo, hi);
// returns how many counter steps it used.
uint64_t FillStream(RngAlgorithm algorithm, uint64_t key, uint64_t lo, uint64_t hi, std::byte* out, int64_t bytes) {
  const uint32_t k[2] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  const int64_t block = algorithm == RngAlgorithm::kThreeFry ? 8 : 16;
  uint64_t steps = 0;
  for (int64_t off = 0; off < bytes; off += block, ++steps) {
    const uint64_t c_lo = lo + steps;
    const uint64_t c_hi = hi + (c_lo < lo ? 1 : 0);
    uint32_t words[4];
    if (algorithm == RngAlgorithm::kThreeFry) {
      const uint32_t c[2] = {static_cast<uint32_t>(c_lo), static_cast<uint32_t>(c_lo >> 32)};
      Threefry2x32(k, c, words);
    } else {
      const uint32_t c[4] = {static_cast<uint32_t>(c_lo), static_cast<uint32_t>(c_lo >> 32),
                             static_cast<uint32_t>(c_hi), static_cast<uint32_t>(c_hi >> 32)};
      Philox4x32(k, c, words);
    }
    std::memcpy(out + off, words, static_cast<size_t>(std::min<int64_t>(block, bytes - off)));
  }
  return steps;
}

// Uniform doubles in [0, 1) from 53 random bits each.
std::vector<double> Uniform01(int64_t n, uint64_t seed) {
  std::vector<uint64_t> bits(static_cast<size_t>(n));
  FillStream(RngAlgorithm::kPhilox, seed, 0, 0x9E3779B97F4A7C15ULL, reinterpret_cast<std::byte*>(bits.data()), n * 8);
  std::vector<double> u(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) u[i] = static_cast<double>(bits[i] >> 11) * 0x1.0p-53;
  return u;
}

}  // namespace

void Philox4x32(const uint32_t key[2], const uint32_t counter[4], uint32_t out[4]) {
  uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = MulHiLo(0xD2511F53u, c[0], &hi0);
    const uint32_t lo1 = MulHiLo(0xCD9E8D57u, c[2], &hi1);
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int i = 0; i < 4; ++i) out[i] = c[i];
}

void Threefry2x32(const uint32_t key[2], const uint32_t counter[2], uint32_t out[2]) {
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDAu};
  uint32_t x0 = counter[0] + ks[0], x1 = counter[1] + ks[1];
  for (int group = 0; group < 5; ++group) {
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = Rotl(x1, kRot[(group % 2) * 4 + r]);
      x1 ^= x0;
    }
    const int s = group + 1;
    x0 += ks[s % 3];
    x1 += ks[(s + 1) % 3] + static_cast<uint32_t>(s);
  }
  out[0] = x0;
  out[1] = x1;
}

namespace {

// Stores the low bits of `v` as element i of `out` (an integer array of 1, 2, 4 or 8 bytes).
void PutBits(std::byte* out, int64_t size, int64_t i, uint64_t v) {
  switch (size) {
    case 1: {
      const uint8_t b = static_cast<uint8_t>(v);
      std::memcpy(out + i, &b, 1);
      break;
    }
    case 2: {
      const uint16_t b = static_cast<uint16_t>(v);
      std::memcpy(out + 2 * i, &b, 2);
      break;
    }
    case 4: {
      const uint32_t b = static_cast<uint32_t>(v);
      std::memcpy(out + 4 * i, &b, 4);
      break;
    }
    default: std::memcpy(out + 8 * i, &v, 8); break;
  }
}

}  // namespace

ThreefrySplit ThreefrySplitOf(const std::vector<int64_t>& dims) {
  ThreefrySplit sp;
  if (dims.empty()) return sp;  // a scalar: one counter, its first word
  int split = -1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] % 2 == 0) {
      split = static_cast<int>(d);
      break;
    }
  }
  if (split < 0) {  // no even dim: the first largest one
    for (size_t d = 0; d < dims.size(); ++d) {
      if (split < 0 || dims[d] > dims[static_cast<size_t>(split)]) split = static_cast<int>(d);
    }
  }
  sp.outer = sp.inner = 1;
  for (int d = 0; d < split; ++d) sp.outer *= dims[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(split) + 1; d < dims.size(); ++d) sp.inner *= dims[d];
  sp.dim = dims[static_cast<size_t>(split)];
  sp.half = (sp.dim + 1) / 2;
  return sp;
}

StatusOr<std::pair<Array, Array>> RngBitGenerator(RngAlgorithm algorithm, const Array& state, const Shape& out_shape) {
  if (state.dtype() != DType::kU64 || state.rank() != 1) {
    return InvalidArgument("rng-bit-generator needs a u64[2] (or u64[3] for Philox) state, got ",
                           state.shape().ToString(false));
  }
  const int64_t n = state.dims()[0];
  const bool threefry = algorithm == RngAlgorithm::kThreeFry;
  if (n < 2 || (threefry && n != 2)) {
    return InvalidArgument("rng-bit-generator ", threefry ? "rng_three_fry needs a u64[2]" : "rng_philox needs at least a u64[2]",
                           " state, got ", state.shape().ToString(false));
  }
  if (!IsInteger(out_shape.dtype()) || out_shape.dtype() == DType::kS4 || out_shape.dtype() == DType::kU4) {
    return InvalidArgument("rng-bit-generator produces 8- to 64-bit integers, got ", DTypeName(out_shape.dtype()));
  }
  auto s = state.values<uint64_t>();
  Array bits(out_shape.WithoutLayout());
  std::byte* out = bits.data();
  const int64_t size = DTypeSize(out_shape.dtype());
  const int64_t count = bits.num_elements();
  const uint32_t k[2] = {static_cast<uint32_t>(s[0]), static_cast<uint32_t>(s[0] >> 32)};
  Array next = state;
  auto ns = next.values<uint64_t>();
  if (threefry) {
    if (size == 8) {  // one counter per element: x0 | x1 << 32
      for (int64_t i = 0; i < count; ++i) {
        const uint64_t c = s[1] + static_cast<uint64_t>(i);
        const uint32_t ctr[2] = {static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32)};
        uint32_t w[2];
        Threefry2x32(k, ctr, w);
        PutBits(out, 8, i, w[0] | (static_cast<uint64_t>(w[1]) << 32));
      }
      ns[1] = s[1] + static_cast<uint64_t>(count);
    } else {  // one counter per two elements along the split dim (ThreefrySplitOf)
      const ThreefrySplit sp = ThreefrySplitOf(out_shape.dims());
      const int64_t counters = sp.outer * sp.half * sp.inner;
      for (int64_t h = 0; h < counters; ++h) {
        const uint64_t c = s[1] + static_cast<uint64_t>(h);
        const uint32_t ctr[2] = {static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32)};
        uint32_t w[2];
        Threefry2x32(k, ctr, w);
        const int64_t r = h % sp.inner, hs = (h / sp.inner) % sp.half, o = h / (sp.inner * sp.half);
        for (int64_t word = 0; word < 2; ++word) {
          const int64_t j = 2 * hs + word;
          if (j < sp.dim) PutBits(out, size, (o * sp.dim + j) * sp.inner + r, w[word]);
        }
      }
      ns[1] = s[1] + static_cast<uint64_t>(counters);
    }
    return std::make_pair(std::move(next), std::move(bits));
  }
  // Philox: the 128-bit counter is (s[1], s[2]) for a u64[3+] state and (s[1], s[0]) for u64[2];
  // 32-bit words in order, one per element of up to 32 bits (truncated), two per 64-bit element.
  const uint64_t lo = s[1], hi = n >= 3 ? s[2] : s[0];
  const int64_t words = size == 8 ? 2 * count : count;
  const int64_t blocks = (words + 3) / 4;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t c_lo = lo + static_cast<uint64_t>(b);
    const uint64_t c_hi = hi + (c_lo < lo ? 1 : 0);
    const uint32_t c[4] = {static_cast<uint32_t>(c_lo), static_cast<uint32_t>(c_lo >> 32), static_cast<uint32_t>(c_hi),
                           static_cast<uint32_t>(c_hi >> 32)};
    uint32_t w[4];
    Philox4x32(k, c, w);
    if (size == 8) {
      for (int64_t q = 0; q < 2 && 2 * b + q < count; ++q) {
        PutBits(out, 8, 2 * b + q, w[2 * q] | (static_cast<uint64_t>(w[2 * q + 1]) << 32));
      }
    } else {
      for (int64_t q = 0; q < 4 && 4 * b + q < count; ++q) PutBits(out, size, 4 * b + q, w[q]);
    }
  }
  ns[1] = lo + static_cast<uint64_t>(blocks);
  if (n >= 3 && ns[1] < lo) ns[2] = s[2] + 1;
  return std::make_pair(std::move(next), std::move(bits));
}

StatusOr<Array> Rng(RngDistribution distribution, const Array& a, const Array& b, const Shape& out_shape, uint64_t seed) {
  const DType t = out_shape.dtype();
  if (a.num_elements() != 1 || b.num_elements() != 1 || a.dtype() != t || b.dtype() != t) {
    return InvalidArgument("rng needs two scalar operands of the result type ", DTypeName(t), ", got ",
                           a.shape().ToString(false), " and ", b.shape().ToString(false));
  }
  const bool floating = IsFloating(t);
  if (!floating && !(IsInteger(t) && distribution == RngDistribution::kUniform)) {
    return InvalidArgument("rng ", distribution == RngDistribution::kNormal ? "rng_normal needs a floating-point"
                                                                              : "rng_uniform needs a numeric",
                           " type, got ", DTypeName(t));
  }
  Array out(out_shape.WithoutLayout());
  const int64_t n = out.num_elements();
  const double lo = a.GetDouble(0), hi = b.GetDouble(0);
  std::vector<double> u = Uniform01(distribution == RngDistribution::kNormal ? 2 * n : n, seed);
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if (distribution == RngDistribution::kNormal) {
      // Box-Muller; 1 - u keeps the log's argument in (0, 1].
      v = lo + hi * std::sqrt(-2.0 * std::log(1.0 - u[2 * i])) * std::cos(2 * std::numbers::pi * u[2 * i + 1]);
    } else if (floating) {
      v = lo + (hi - lo) * u[i];
      if (v >= hi && hi > lo) v = std::nextafter(hi, lo);  // rounding may land on hi
    } else {
      const double span = std::max(0.0, hi - lo);
      v = lo + std::floor(u[i] * span);
    }
    out.SetDouble(i, v);
    // Rounding to a narrow type may land on hi, which [a, b) excludes.
    if (distribution == RngDistribution::kUniform && hi > lo && out.GetDouble(i) >= hi) out.SetDouble(i, lo);
  }
  return out;
}

}  // namespace xs::kernels
