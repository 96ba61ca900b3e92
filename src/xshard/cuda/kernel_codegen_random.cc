// Kernels for rng, rng-bit-generator and rng-get-and-update-state, giving the CPU executor's bits
// (kernels/random.cc, exec/executable_extra_ops.cc, exec/executable_scan.cc).
//
// Strategy. Both generators run in counter mode: unit j of a stream is Philox-4x32-10 or
// Threefry-2x32-20 of counter start + j, so one thread computes one unit from its index alone
// (grid-stride over the units).
// - rng-bit-generator(state): pointers state, then the bits, or (tuple result) the new state and
//   the bits, laid out as kernels::RngBitGenerator lays them out (XLA's layout): one thread per
//   Philox block (four 32-bit words: four elements of up to 32 bits, 16-byte stores where aligned,
//   or two 64-bit elements) or per Threefry counter (a 64-bit element, or two narrower elements
//   along the split dim). Thread 0 also writes the new state (the counter advanced past the units,
//   carrying into the third word for Philox): the result never shares the operand's buffer (exec
//   reuses a dying operand's buffer only for elementwise-like steps), so no thread reads a
//   rewritten state.
// - rng(a, b): the seed is std::hash<std::string> of the instruction's name, computed here on the
//   host as the CPU executor does at run time, and baked into the kernel as the Philox key. The
//   CPU draws doubles u[k] = (bits[k] >> 11) * 2^-53 from the Philox stream of counter
//   (0, 0x9E3779B97F4A7C15); one block holds two. Uniform: one thread per block, two elements;
//   normal (Box-Muller on u[2i], u[2i+1]): one thread per element. The mapping to the result type
//   is the CPU's double arithmetic, term for term (NVRTC runs with --fmad=false), then XLA's
//   convert: uniform and integer results are bit-identical; normal goes through libdevice's log /
//   cos / sqrt (within a few ulp of the CPU's libm, below the result type's rounding).
// - rng-get-and-update-state, delta=D: pointers the state, then the result. The state is 16
//   bytes the GPU plan reserves in the executable's constant region (zero at Load, written by
//   nothing else), so each executable keeps its own 128-bit state from 0 across its runs, as the
//   CPU executor does. One thread returns it as u64[2] (low word first) and adds D with the carry.
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/core/shape.h"
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"
#include "xshard/kernels/random.h"

namespace xs::cuda {
namespace {

using codegen::Int;

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%016llxull", static_cast<unsigned long long>(v));
  return buf;
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08xu", v);
  return buf;
}

std::string Header(int pointers, int64_t largest, int block = codegen::kBlock) {
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " +
         std::string(codegen::kName) + "(xs_args<" + std::to_string(pointers) + "> a) {\n  typedef " +
         codegen::IndexType(largest) + " idx_t;\n  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
}

// A lambda `name(k0, k1, c0, c1, c2, c3, w)` filling w[4] with Philox-4x32-10 (random.cc).
std::string PhiloxLambda() {
  return "  auto philox = [](unsigned k0, unsigned k1, unsigned c0, unsigned c1, unsigned c2, unsigned c3, unsigned* w) {\n"
         "    for (int r = 0; r < 10; ++r) {\n"
         "      const unsigned hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;\n"
         "      const unsigned hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;\n"
         "      c0 = hi1 ^ c1 ^ k0; c1 = lo1; c2 = hi0 ^ c3 ^ k1; c3 = lo0;\n"
         "      k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;\n"
         "    }\n"
         "    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;\n"
         "  };\n";
}

// A lambda `threefry(k0, k1, c0, c1, w)` filling w[2] with Threefry-2x32-20, unrolled.
std::string ThreefryLambda() {
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  std::string s = "  auto threefry = [](unsigned k0, unsigned k1, unsigned c0, unsigned c1, unsigned* w) {\n"
                  "    const unsigned ks0 = k0, ks1 = k1, ks2 = k0 ^ k1 ^ 0x1BD11BDAu;\n"
                  "    unsigned x0 = c0 + ks0, x1 = c1 + ks1;\n";
  for (int group = 0; group < 5; ++group) {
    for (int r = 0; r < 4; ++r) {
      const int rot = kRot[(group % 2) * 4 + r];
      s += "    x0 += x1; x1 = (x1 << " + std::to_string(rot) + ") | (x1 >> " + std::to_string(32 - rot) + "); x1 ^= x0;\n";
    }
    const int inj = group + 1;
    s += "    x0 += ks" + std::to_string(inj % 3) + "; x1 += ks" + std::to_string((inj + 1) % 3) + " + " +
         std::to_string(inj) + "u;\n";
  }
  s += "    w[0] = x0; w[1] = x1;\n  };\n";
  return s;
}

StatusOr<std::vector<GeneratedKernel>> BitGenerator(const Instruction& inst) {
  const Shape& s = inst.shape();
  const bool tuple = s.IsTuple();
  if (inst.operand_count() != 1 || !(s.IsArray() || (tuple && s.tuple_size() == 2 && s.tuple_shape(1).IsArray()))) {
    return InvalidArgument("cuda: rng-bit-generator '", inst.name(), "' needs one state operand and a (state, bits) or bits result");
  }
  const Shape& state = inst.operand(0)->shape();
  const Shape& bits = tuple ? s.tuple_shape(1) : s;
  const bool threefry = inst.attrs().rng_algorithm.value_or(RngAlgorithm::kDefault) == RngAlgorithm::kThreeFry;
  const int64_t words = state.IsArray() && state.rank() == 1 ? state.dim(0) : 0;
  if (!state.IsArray() || state.dtype() != DType::kU64 || words < 2 || (threefry && words != 2)) {
    return InvalidArgument("cuda: rng-bit-generator '", inst.name(), "' needs a u64[2] state",
                           threefry ? "" : " (u64[2+] for Philox)", ", got ", state.ToString(false));
  }
  const DType t = bits.dtype();
  if (!IsInteger(t) || t == DType::kS4 || t == DType::kU4) {
    return Unimplemented("cuda: rng-bit-generator '", inst.name(), "' produces ", DTypeName(t),
                         "; the generator fills 8- to 64-bit integers");
  }
  const int64_t size = DTypeSize(t), count = bits.num_elements();
  const std::string ctype = size == 1   ? "unsigned char"
                            : size == 2 ? "unsigned short"
                            : size == 4 ? "unsigned"
                                        : "unsigned long long";
  // Units a thread computes: Philox blocks of four words; Threefry counters (one per 64-bit
  // element, or one per pair of narrower elements along the split dim).
  const kernels::ThreefrySplit sp = kernels::ThreefrySplitOf(bits.dims());
  const int64_t units = !threefry   ? (((size == 8 ? 2 * count : count) + 3) / 4)
                        : size == 8 ? count
                                    : sp.outer * sp.half * sp.inner;
  const int pointers = tuple ? 3 : 2;
  const std::string out_ptr = tuple ? "a.p[2]" : "a.p[1]";

  std::string b = Header(pointers, units + 1);
  b += threefry ? ThreefryLambda() : PhiloxLambda();
  b += "  const unsigned long long* s = (const unsigned long long*)a.p[0];\n";
  b += "  const unsigned long long key = s[0], lo = s[1], hi = " + std::string(words >= 3 ? "s[2]" : "s[0]") + ";\n";
  b += "  const unsigned k0 = (unsigned)key, k1 = (unsigned)(key >> 32);\n";
  b += "  " + ctype + "* out = (" + ctype + "*)" + out_ptr + ";\n";
  b += "  const idx_t first = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x);\n";
  b += "  for (idx_t j = first; j < " + Int(units) + "; j += stride) {\n";
  b += "    const unsigned long long c = lo + (unsigned long long)j;\n";
  b += "    unsigned w[4];\n";
  if (threefry) {
    b += "    threefry(k0, k1, (unsigned)c, (unsigned)(c >> 32), w);\n";
    if (size == 8) {
      b += "    out[j] = (unsigned long long)w[0] | ((unsigned long long)w[1] << 32);\n";
    } else {
      b += "    const idx_t r = j % " + Int(sp.inner) + ", hs = (j / " + Int(sp.inner) + ") % " + Int(sp.half) +
           ", o = j / " + Int(sp.inner * sp.half) + ";\n";
      b += "    for (int q = 0; q < 2; ++q) {\n";
      b += "      const idx_t d = 2 * hs + q;\n";
      b += "      if (d < " + Int(sp.dim) + ") out[(o * " + Int(sp.dim) + " + d) * " + Int(sp.inner) + " + r] = (" +
           ctype + ")w[q];\n";
      b += "    }\n";
    }
  } else {
    b += "    const unsigned long long ch = hi + (c < lo ? 1ull : 0ull);\n";
    b += "    philox(k0, k1, (unsigned)c, (unsigned)(c >> 32), (unsigned)ch, (unsigned)(ch >> 32), w);\n";
    const int per = size == 8 ? 2 : 4;  // elements a block fills
    b += "    const idx_t e = j * " + std::to_string(per) + ";\n";
    if (size >= 4) {
      // 16-byte stores where the block's elements are all there and the address allows.
      b += "    if (e + " + std::to_string(per) + " <= " + Int(count) +
           " && ((unsigned long long)(out + e) % 16) == 0) {\n";
      b += "      xs_vec<unsigned, 4> v;\n";
      b += "      for (int k = 0; k < 4; ++k) v.v[k] = w[k];\n";
      b += "      *(xs_vec<unsigned, 4>*)(out + e) = v;\n";
      b += "      continue;\n    }\n";
    }
    b += "    for (int q = 0; q < " + std::to_string(per) + " && e + q < " + Int(count) + "; ++q) out[e + q] = " +
         (size == 8 ? std::string("(unsigned long long)w[2 * q] | ((unsigned long long)w[2 * q + 1] << 32)")
                    : "(" + ctype + ")w[q]") +
         ";\n";
  }
  b += "  }\n";
  if (tuple) {
    // The new state: the counter advanced past the units used (Philox carrying into the third word).
    b += "  if (first == 0) {\n";
    b += "    unsigned long long* ns = (unsigned long long*)a.p[1];\n";
    b += "    for (int k = 0; k < " + Int(words) + "; ++k) ns[k] = s[k];\n";
    b += "    ns[1] = lo + " + Hex(static_cast<uint64_t>(units)) + ";\n";
    if (words >= 3) b += "    if (ns[1] < lo) ns[2] = hi + 1ull;\n";
    b += "  }\n";
  }
  b += "}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(units);
  GeneratedKernel k = codegen::Finish("rng_bit_generator", std::move(b), launch, pointers,
                                      threefry ? "rng_bit_generator_threefry_blocks" : "rng_bit_generator_philox_blocks");
  return std::vector<GeneratedKernel>{std::move(k)};
}

StatusOr<std::vector<GeneratedKernel>> Rng(const Instruction& inst) {
  if (!inst.attrs().distribution || inst.operand_count() != 2 || !inst.shape().IsArray()) {
    return InvalidArgument("cuda: rng '", inst.name(), "' needs two operands and distribution=rng_uniform or rng_normal");
  }
  const bool normal = *inst.attrs().distribution == RngDistribution::kNormal;
  const DType t = inst.shape().dtype();
  for (int i = 0; i < 2; ++i) {
    const Shape& o = inst.operand(i)->shape();
    if (!o.IsArray() || o.num_elements() != 1 || o.dtype() != t) {
      return InvalidArgument("cuda: rng '", inst.name(), "' needs two scalar operands of its type ", DTypeName(t));
    }
  }
  const bool floating = t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64;
  const bool integer = IsInteger(t) && codegen::SupportedDType(t);
  if (!floating && !(integer && !normal)) {
    return Unimplemented("cuda: rng '", inst.name(), "' of type ", DTypeName(t), " with ",
                         normal ? "rng_normal" : "rng_uniform",
                         ": generated kernels draw f16, bf16, f32, f64 and (uniform) 8- to 64-bit integers");
  }
  const uint64_t seed = std::hash<std::string>{}(inst.name());
  const int64_t n = inst.shape().num_elements();
  const int64_t work = normal ? n : (n + 1) / 2;  // Philox blocks
  const std::string ct = codegen::CType(t);
  auto load = [&](int p) { return "(double)" + codegen::ToCompute(t, "((const " + ct + "*)a.p[" + std::to_string(p) + "])[0]"); };

  std::string b = Header(3, 2 * work + 2);
  b += PhiloxLambda();
  b += "  const double lo = " + load(0) + ", hi = " + load(1) + ";\n";
  b += "  " + ct + "* out = (" + ct + "*)a.p[2];\n";
  // One element from double v: XLA's convert, then (uniform) [a, b) excludes b after rounding.
  std::string store = "  auto put = [&](idx_t i, double v) {\n    " + ct + " r = " + codegen::ConvertExpr(DType::kF64, t, "v") + ";\n";
  if (!normal) {
    store += "    if (hi > lo && (double)" + codegen::ToCompute(t, "r") + " >= hi) r = " +
             codegen::ConvertExpr(DType::kF64, t, "lo") + ";\n";
  }
  store += "    out[i] = r;\n  };\n";
  b += store;
  b += "  for (idx_t j = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); j < " + Int(work) + "; j += stride) {\n";
  b += "    unsigned w[4];\n";
  b += "    philox(" + Hex32(static_cast<uint32_t>(seed)) + ", " + Hex32(static_cast<uint32_t>(seed >> 32)) +
       ", (unsigned)j, (unsigned)((unsigned long long)j >> 32), 0x7F4A7C15u, 0x9E3779B9u, w);\n";
  b += "    const double u0 = (double)((((unsigned long long)w[1] << 32) | w[0]) >> 11) * 0x1p-53;\n";
  b += "    const double u1 = (double)((((unsigned long long)w[3] << 32) | w[2]) >> 11) * 0x1p-53;\n";
  if (normal) {
    // Box-Muller as the CPU writes it: 1 - u keeps the log's argument in (0, 1].
    b += "    put(j, lo + hi * sqrt(-2.0 * log(1.0 - u0)) * cos(0x1.921fb54442d18p+2 * u1));\n";
  } else {
    auto draw = [&](const std::string& u) {
      return floating ? "lo + (hi - lo) * " + u : "lo + floor(" + u + " * (hi - lo > 0.0 ? hi - lo : 0.0))";
    };
    b += "    double v0 = " + draw("u0") + ", v1 = " + draw("u1") + ";\n";
    if (floating) {
      b += "    if (v0 >= hi && hi > lo) v0 = nextafter(hi, lo);  // rounding may land on hi\n";
      b += "    if (v1 >= hi && hi > lo) v1 = nextafter(hi, lo);\n";
    }
    b += "    put(2 * j, v0);\n";
    b += "    if (2 * j + 1 < " + Int(n) + ") put(2 * j + 1, v1);\n";
  }
  b += "  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(work);
  GeneratedKernel k = codegen::Finish("rng", std::move(b), launch, 3, normal ? "rng_normal_philox" : "rng_uniform_philox");
  return std::vector<GeneratedKernel>{std::move(k)};
}

StatusOr<std::vector<GeneratedKernel>> GetAndUpdateState(const Instruction& inst) {
  const Shape& s = inst.shape();
  if (!s.IsArray() || s.dtype() != DType::kU64 || s.dims() != std::vector<int64_t>{2}) {
    return InvalidArgument("cuda: rng-get-and-update-state '", inst.name(), "' must return u64[2], got ", s.ToString(false));
  }
  std::optional<std::string_view> text = inst.attrs().Other("delta");
  int64_t delta = 0;
  if (!text || !ParseInt64(*text, &delta)) {
    return InvalidArgument("cuda: rng-get-and-update-state '", inst.name(), "' needs delta=N");
  }
  // p[0]: the 128-bit state (low word first), which the plan keeps for the executable's life;
  // p[1]: the result. One thread: runs of one executable are ordered on its stream.
  std::string b = "extern \"C\" __global__ void __launch_bounds__(1) " + std::string(codegen::kName) + "(xs_args<2> a) {\n";
  b += "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n";
  b += "  unsigned long long* state = (unsigned long long*)a.p[0];\n";
  b += "  unsigned long long* out = (unsigned long long*)a.p[1];\n";
  b += "  const unsigned long long low = state[0], high = state[1];\n";
  b += "  out[0] = low;\n  out[1] = high;\n";
  b += "  state[0] = low + " + Hex(static_cast<uint64_t>(delta)) + ";\n";
  b += "  state[1] = high + (state[0] < low ? 1ull : 0ull);  // the carry\n}\n";
  LaunchDims launch;
  launch.grid = 1;
  launch.block = 1;
  GeneratedKernel k = codegen::Finish("rng_state", std::move(b), launch, 2, "rng_state_per_executable");
  return std::vector<GeneratedKernel>{std::move(k)};
}

}  // namespace

StatusOr<std::vector<GeneratedKernel>> GenerateRandomKernels(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kRngBitGenerator: return BitGenerator(inst);
    case Opcode::kRng: return Rng(inst);
    case Opcode::kRngGetAndUpdateState: return GetAndUpdateState(inst);
    default:
      return InvalidArgument("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), ") is not a random-number op");
  }
}

}  // namespace xs::cuda
