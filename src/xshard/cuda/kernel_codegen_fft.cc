// Kernels for fft (FFT, IFFT, RFFT, IRFFT over the last 1-3 dims), with the CPU executor's
// semantics (kernels/fft.cc): every 1-D transform is computed in double (xs_c128) in shared memory
// and rounded once to the stored type; IFFT / IRFFT divide by the product of fft_length.
//
// Strategy. A multi-dim FFT / IFFT / RFFT whose whole transform (the product of fft_length, as
// xs_c128) fits in shared memory is one "slab" kernel: a block per batch item (grid-stride)
// loads it, transforms every fft axis in the CPU's order with all its threads and stores it
// once. Otherwise, and for 1-D transforms, one "line pass" kernel per axis: a block takes a
// group of whole lines, loads them into shared memory, transforms them all at once and stores
// them; the first pass reads the operand, later ones work in place on the result (a block owns
// its lines and reads them whole before writing). Each 1-D transform: radix-2 Cooley-Tukey with
// the CPU's twiddles (cos / sin of sign * 2 pi k / len in double) and butterfly order for powers
// of two, a direct O(n^2) DFT with a twiddle table otherwise. RFFT's line passes do the last
// axis first (real in, the n/2+1 kept terms stored), then the outer axes on the result. IRFFT
// transforms its outer axes before the complex-to-real step of the last one, and its real
// result has no room for that complex intermediate; but the last step reads only the real parts
// of the DC and Nyquist terms, so a row's n/2+1 terms pack into exactly n reals:
// [Re X0, (Re X(n/2) if n is even), Re X1, Im X1, ...]. A slab kernel (a block per batch item
// and last-dim column, that column's outer fft dims in shared memory) writes that packing into
// the result, and a last line pass, in place, extends each row by Hermitian symmetry (zero
// imaginary DC / Nyquist parts, as XLA) and keeps the real part. Limits (Unimplemented): a line,
// or IRFFT's outer slab, larger than 227 KiB of xs_c128 (e.g. a line of 8192 is fine, 16384
// not; non-powers of two take three times the room).
#include <algorithm>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

using codegen::Int;

constexpr int64_t kMaxShared = 227 * 1024;
constexpr int64_t kComplexBytes = 16;  // xs_c128

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }
int Log2(int64_t n) {
  int l = 0;
  while ((int64_t{1} << l) < n) ++l;
  return l;
}
std::string Sign(int sign) { return sign < 0 ? "-2" : "2"; }

// Statements transforming (unscaled; sign -1 forward, +1 inverse) every line of the shared
// array `s` viewed as [A][n][B] along its middle dim, by all threads of the block, ending at a
// barrier. A direct DFT (n not a power of two) uses `t` (the size of s) and the twiddle table
// `tw` (n entries, filled by TwiddleTable before).
std::string AxisTransform(int64_t A, int64_t n, int64_t B, int sign) {
  if (n <= 1) return "";
  const std::string N = Int(n), cnt = Int(A * n * B), nb = Int(n * B), b = Int(B);
  std::string c = "    {  // axis [" + Int(A) + "][" + N + "][" + b + "]\n";
  if (IsPowerOfTwo(n)) {
    const int L = Log2(n);
    c += "      for (int e = threadIdx.x; e < " + cnt + "; e += blockDim.x) {\n";
    c += "        const int ra = e / " + nb + ", k = (e / " + b + ") % " + N + ", rb = e % " + b + ";\n";
    c += "        int j = 0;\n        for (int m = k, c = 0; c < " + std::to_string(L) + "; ++c, m >>= 1) j = (j << 1) | (m & 1);\n";
    c += "        if (k < j) {\n          const int p = (ra * " + N + " + k) * " + b + " + rb, q = (ra * " + N + " + j) * " + b + " + rb;\n";
    c += "          const xs_c128 x = s[p];\n          s[p] = s[q];\n          s[q] = x;\n        }\n      }\n      __syncthreads();\n";
    c += "      for (int len = 2; len <= " + N + "; len <<= 1) {\n";
    c += "        const double angle = (double)(" + Sign(sign) + ") * 3.141592653589793 / (double)len;\n";
    c += "        const int h = len >> 1;\n";
    c += "        for (int e = threadIdx.x; e < " + Int(A * n * B / 2) + "; e += blockDim.x) {\n";
    c += "          const int line = e / " + Int(n / 2) + ", f = e % " + Int(n / 2) + ";\n";
    c += "          const int k = f % h, i = f / h * len + k, ra = line / " + b + ", rb = line % " + b + ";\n";
    c += "          const int p = (ra * " + N + " + i) * " + b + " + rb, q = p + h * " + b + ";\n";
    c += "          const xs_c128 w = xs_cplx(cos(angle * (double)k), sin(angle * (double)k));\n";
    c += "          const xs_c128 u = s[p], v = xs_cmul(s[q], w);\n";
    c += "          s[p] = xs_cadd(u, v);\n          s[q] = xs_csub(u, v);\n        }\n        __syncthreads();\n      }\n";
  } else {
    c += "      for (int e = threadIdx.x; e < " + cnt + "; e += blockDim.x) {\n";
    c += "        const int ra = e / " + nb + ", j = (e / " + b + ") % " + N + ", rb = e % " + b + ";\n";
    c += "        xs_c128 acc = xs_cplx(0.0, 0.0);\n";
    c += "        for (int k = 0, m = 0; k < " + N + "; ++k, m = m + j >= " + N + " ? m + j - " + N + " : m + j) {\n";
    c += "          acc = xs_cadd(acc, xs_cmul(s[(ra * " + N + " + k) * " + b + " + rb], tw[m]));\n        }\n";
    c += "        t[e] = acc;\n      }\n      __syncthreads();\n";
    c += "      for (int e = threadIdx.x; e < " + cnt + "; e += blockDim.x) s[e] = t[e];\n      __syncthreads();\n";
  }
  return c + "    }\n";
}

std::string TwiddleTable(int64_t n, int sign) {
  return "  for (int m = threadIdx.x; m < " + Int(n) + "; m += blockDim.x) {\n    const double ang = (double)(" + Sign(sign) +
         ") * 3.141592653589793 * (double)m / (double)" + Int(n) + ";\n    tw[m] = xs_cplx(cos(ang), sin(ang));\n  }\n  __syncthreads();\n";
}

// Shared arrays: s (count), and for direct DFTs t (count) and tw (`dft_len`).
std::string SharedArrays(int64_t count, int64_t dft_len) {
  std::string c = "  extern __shared__ __align__(16) unsigned char xs_smem[];\n  xs_c128* s = (xs_c128*)xs_smem;\n";
  if (dft_len > 0) c += "  xs_c128* t = s + " + Int(count) + ";\n  xs_c128* tw = t + " + Int(count) + ";\n";
  return c;
}
int64_t SharedBytes(int64_t count, int64_t dft_len) {
  return (count + (dft_len > 0 ? count + dft_len : 0)) * kComplexBytes;
}

Status TooLong(const Instruction& inst, std::string_view what, int64_t n) {
  return Unimplemented("cuda: fft '", inst.name(), "': ", what, " of ", n, " elements exceeds the ", kMaxShared / 1024,
                       " KiB of shared memory the generated kernels transform in (complex double)");
}

std::string Header(int ptrs) {
  return "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
         std::to_string(ptrs) + "> a) {\n";
}

// " / <divisor>.0", or nothing for 1.
std::string Divide(double divisor) { return divisor != 1 ? " / " + Int(static_cast<int64_t>(divisor)) + ".0" : ""; }

// How a line pass reads and writes its lines.
enum class In { kComplex, kReal, kHermitian, kPacked };
struct LinePass {
  int64_t outer = 1, n = 1, inner = 1;  // lines: outer * inner, line (o, i) element k at (o * len + k) * inner + i
  int src = 0, dst = 1;                 // pointer indices
  In in = In::kComplex;
  DType src_t = DType::kC64, dst_t = DType::kC64;
  int64_t src_len = 0, dst_len = 0;     // the axis' length in the source / result
  int sign = -1;
  double divisor = 1;                   // results divided by this (IFFT, IRFFT)
};

StatusOr<GeneratedKernel> EmitLinePass(const Instruction& inst, const LinePass& p, int ptrs) {
  const int64_t n = p.n, lines = p.outer * p.inner;
  const bool dft = !IsPowerOfTwo(n) && n > 1;
  const int64_t g = std::clamp<int64_t>(1024 / n, 1, lines);
  const int64_t count = g * n, groups = (lines + g - 1) / g;
  const int64_t bytes = SharedBytes(count, dft ? n : 0);
  if (bytes > kMaxShared) return TooLong(inst, "a line", n);
  const std::string N = Int(n), G = Int(g), I = Int(p.inner);
  const std::string st = codegen::ElemCType(p.src_t), dt = codegen::ElemCType(p.dst_t);
  std::string b = Header(ptrs) + SharedArrays(count, dft ? n : 0);
  b += "  const " + st + "* src = (const " + st + "*)a.p[" + std::to_string(p.src) + "];\n";
  b += "  " + dt + "* dst = (" + dt + "*)a.p[" + std::to_string(p.dst) + "];\n";
  if (dft) b += TwiddleTable(n, p.sign);
  // Consecutive threads take consecutive lines when lines are interleaved (inner > 1), else
  // consecutive elements of a line: coalesced either way.
  const std::string gk = p.inner > 1 ? "const int g = e % " + G + ", k = e / " + G + ";\n"
                                     : "const int g = e / " + N + ", k = e % " + N + ";\n";
  b += "  for (long long grp = blockIdx.x; grp < " + Int(groups) + "LL; grp += gridDim.x) {\n";
  b += "    for (int e = threadIdx.x; e < " + Int(count) + "; e += blockDim.x) {\n      " + gk;
  b += "      const long long l = grp * " + G + " + g;\n      xs_c128 v = xs_cplx(0.0, 0.0);\n";
  b += "      if (l < " + Int(lines) + "LL) {\n        const long long o = l / " + I + ", i = l % " + I + ";\n";
  const std::string row = "(o * " + Int(p.src_len) + ")";
  switch (p.in) {
    case In::kComplex:
      b += "        const " + st + " x = src[(" + row + " + k) * " + I + " + i];\n        v = xs_cplx((double)x.re, (double)x.im);\n";
      break;
    case In::kReal:
      b += "        v = xs_cplx((double)src[(" + row + " + k) * " + I + " + i], 0.0);\n";
      break;
    case In::kHermitian:
    case In::kPacked: {
      // Term k of the full spectrum: the stored half for k <= n/2, else the conjugate of n-k;
      // the imaginary parts of the DC and (n even) Nyquist terms are zero.
      const std::string half = Int(n / 2 + 1);
      b += "        const int kk = k < " + half + " ? k : " + N + " - k;\n";
      if (p.in == In::kHermitian) {
        b += "        const " + st + " x = src[" + row + " + kk];\n        v = xs_cplx((double)x.re, (double)x.im);\n";
      } else {
        const std::string off = n % 2 == 0 ? "2" : "1";
        b += "        if (kk == 0) v = xs_cplx((double)src[" + row + "], 0.0);\n";
        if (n % 2 == 0) b += "        else if (2 * kk == " + N + ") v = xs_cplx((double)src[" + row + " + 1], 0.0);\n";
        b += "        else v = xs_cplx((double)src[" + row + " + " + off + " + 2 * (kk - 1)], (double)src[" + row + " + " + off +
             " + 2 * (kk - 1) + 1]);\n";
      }
      b += "        if (k >= " + half + ") v.im = -v.im;\n        if (k == 0 || 2 * k == " + N + ") v.im = 0.0;\n";
      break;
    }
  }
  b += "      }\n      s[g * " + N + " + k] = v;\n    }\n    __syncthreads();\n";
  b += AxisTransform(g, n, 1, p.sign);
  b += "    for (int e = threadIdx.x; e < " + Int(count) + "; e += blockDim.x) {\n      " + gk;
  b += "      const long long l = grp * " + G + " + g;\n";
  b += "      if (l < " + Int(lines) + "LL && k < " + Int(p.dst_len) + ") {\n        const long long o = l / " + I + ", i = l % " + I + ";\n";
  b += "        const xs_c128 v = s[g * " + N + " + k];\n";
  const std::string at = "dst[(o * " + Int(p.dst_len) + " + k) * " + I + " + i]";
  const std::string div = Divide(p.divisor);
  if (codegen::IsComplexDType(p.dst_t)) {
    const std::string c = codegen::CType(p.dst_t == DType::kC64 ? DType::kF32 : DType::kF64);
    b += "        " + at + " = xs_cplx((" + c + ")(v.re" + div + "), (" + c + ")(v.im" + div + "));\n";
  } else {
    b += "        " + at + " = (" + dt + ")(v.re" + div + ");\n";
  }
  b += "      }\n    }\n    __syncthreads();\n  }\n}\n";
  LaunchDims launch;
  launch.grid = std::min<int64_t>(groups, codegen::kMaxGrid);
  launch.shared_bytes = bytes;
  return codegen::Finish("fft", std::move(b), launch, ptrs,
                         std::string(dft ? "fft_shared_dft" : "fft_shared_radix2") + ": a block per " + std::to_string(g) +
                             " line(s) of " + std::to_string(n));
}

// Bytes of shared memory a slab of the transform lengths `lens` takes.
int64_t SlabBytes(const std::vector<int64_t>& lens) {
  int64_t m = 1, dft_len = 0;
  for (int64_t l : lens) {
    m *= l;
    if (!IsPowerOfTwo(l) && l > 1) dft_len = std::max(dft_len, l);
  }
  return SharedBytes(m, dft_len);
}

// A block per item (grid-stride): `item_code` names the item's parts from `item`, `load` sets
// s[j] for element j of the slab (lens' row-major product), every axis of the slab is then
// transformed in order (sign, unscaled), and `store` writes element j from `v` (= s[j]).
StatusOr<GeneratedKernel> EmitSlab(const Instruction& inst, const std::vector<int64_t>& lens, int64_t items, int sign,
                                   const std::string& pointers, const std::string& item_code, const std::string& load,
                                   const std::string& store, const std::string& strategy) {
  int64_t m = 1, dft_len = 0;
  for (int64_t l : lens) {
    m *= l;
    if (!IsPowerOfTwo(l) && l > 1) dft_len = std::max(dft_len, l);
  }
  const int64_t bytes = SharedBytes(m, dft_len);
  if (bytes > kMaxShared) return TooLong(inst, "a multi-dimensional slab", m);
  const std::string M = Int(m);
  std::string b = Header(2) + SharedArrays(m, dft_len) + pointers;
  b += "  for (long long item = blockIdx.x; item < " + Int(items) + "LL; item += gridDim.x) {\n" + item_code;
  b += "    for (int j = threadIdx.x; j < " + M + "; j += blockDim.x) {\n" + load + "    }\n    __syncthreads();\n";
  int64_t before = 1;
  for (int64_t l : lens) {
    // Each direct-DFT axis fills the twiddle table for its length.
    if (!IsPowerOfTwo(l) && l > 1) b += TwiddleTable(l, sign);
    b += AxisTransform(before, l, m / before / l, sign);
    before *= l;
  }
  b += "    for (int j = threadIdx.x; j < " + M + "; j += blockDim.x) {\n      const xs_c128 v = s[j];\n" + store + "    }\n";
  b += "    __syncthreads();\n  }\n}\n";
  LaunchDims launch;
  launch.grid = std::clamp<int64_t>(items, 1, codegen::kMaxGrid);
  launch.shared_bytes = bytes;
  return codegen::Finish("fft_slab", std::move(b), launch, 2, "fft_slab: a block per " + strategy + ", " + std::to_string(m) +
                                                                 " terms in shared memory");
}

std::string Pointers(const std::string& st, const std::string& dt) {
  return "  const " + st + "* src = (const " + st + "*)a.p[0];\n  " + dt + "* dst = (" + dt + "*)a.p[1];\n";
}
std::string LoadAsComplex(DType t, const std::string& at) {
  if (codegen::IsComplexDType(t)) return "      const " + codegen::ElemCType(t) + " x = " + at + ";\n      s[j] = xs_cplx((double)x.re, (double)x.im);\n";
  return "      s[j] = xs_cplx((double)" + at + ", 0.0);\n";
}
std::string StoreComplex(DType t, const std::string& at, const std::string& div) {
  const std::string c = t == DType::kC64 ? "float" : "double";
  return "      " + at + " = xs_cplx((" + c + ")(v.re" + div + "), (" + c + ")(v.im" + div + "));\n";
}

// FFT / IFFT / RFFT over every fft dim of one batch item at once, as the CPU does them (all in
// double, dims in order, rounded once; RFFT keeps the first n/2+1 terms of the last dim).
StatusOr<GeneratedKernel> EmitWholeSlab(const Instruction& inst, const std::vector<int64_t>& lens, int64_t batch,
                                        FftType type, double divisor) {
  const DType it = inst.operand(0)->shape().dtype(), ot = inst.shape().dtype();
  int64_t m = 1;
  for (int64_t l : lens) m *= l;
  const std::string M = Int(m);
  std::string store;
  if (type == FftType::kRfft) {
    const int64_t n = lens.back(), half = n / 2 + 1;
    store = "      const int k = j % " + Int(n) + ";\n      if (k < " + Int(half) + ") {\n  " +
            StoreComplex(ot, "dst[(bt * " + Int(m / n) + " + j / " + Int(n) + ") * " + Int(half) + " + k]", "") + "      }\n";
  } else {
    store = StoreComplex(ot, "dst[bt * " + M + " + j]", Divide(divisor));
  }
  return EmitSlab(inst, lens, batch, type == FftType::kIfft ? 1 : -1, Pointers(codegen::ElemCType(it), codegen::ElemCType(ot)),
                  "    const long long bt = item;\n", LoadAsComplex(it, "src[bt * " + M + " + j]"), store, "batch item");
}

// IRFFT's outer axes: a block per (batch, last-dim column), the column's outer fft dims in
// shared memory, transformed axis by axis (inverse, unscaled), stored packed into the result.
StatusOr<GeneratedKernel> EmitIrfftSlab(const Instruction& inst, const std::vector<int64_t>& outer_lens, int64_t batch,
                                        int64_t half, int64_t n_last, DType out_t) {
  int64_t m = 1;
  for (int64_t l : outer_lens) m *= l;
  const DType it = inst.operand(0)->shape().dtype();
  const std::string dt = codegen::CType(out_t), M = Int(m), H = Int(half), NL = Int(n_last);
  const std::string off = n_last % 2 == 0 ? "2" : "1";
  std::string store = "      " + dt + "* row = dst + (bt * " + M + " + j) * " + NL + ";\n";
  store += "      if (kc == 0) {\n        row[0] = (" + dt + ")v.re;\n      }";
  if (n_last % 2 == 0) store += " else if (2 * kc == " + NL + ") {\n        row[1] = (" + dt + ")v.re;\n      }";
  store += " else {\n        row[" + off + " + 2 * (kc - 1)] = (" + dt + ")v.re;\n        row[" + off + " + 2 * (kc - 1) + 1] = (" + dt +
           ")v.im;\n      }\n";
  return EmitSlab(inst, outer_lens, batch * half, +1, Pointers(codegen::ElemCType(it), dt),
                  "    const long long bt = item / " + H + ";\n    const int kc = (int)(item % " + H + ");\n",
                  LoadAsComplex(it, "src[(bt * " + M + " + j) * " + H + " + kc]"), store, "batch item and last-dim column");
}

}  // namespace

StatusOr<std::vector<GeneratedKernel>> GenerateFftKernels(const Instruction& inst) {
  if (inst.operand_count() != 1 || !inst.shape().IsArray() || !inst.operand(0)->shape().IsArray()) {
    return InvalidArgument("fft '", inst.name(), "' needs one array operand and an array result");
  }
  if (!inst.attrs().fft_type || !inst.attrs().fft_length) {
    return InvalidArgument("fft '", inst.name(), "' needs fft_type= and fft_length=");
  }
  const FftType type = *inst.attrs().fft_type;
  const std::vector<int64_t>& lengths = *inst.attrs().fft_length;
  const Shape& in = inst.operand(0)->shape();
  const Shape& out = inst.shape();
  const int r = in.rank(), f = static_cast<int>(lengths.size());
  if (f < 1 || f > 3 || f > r || out.rank() != r) {
    return InvalidArgument("fft '", inst.name(), "': fft_length must have 1 to 3 entries and at most the operand's rank (",
                           r, "), got ", f);
  }
  const DType it = in.dtype(), ot = out.dtype();
  const bool ok_types = type == FftType::kRfft     ? (it == DType::kF32 && ot == DType::kC64) || (it == DType::kF64 && ot == DType::kC128)
                        : type == FftType::kIrfft ? (it == DType::kC64 && ot == DType::kF32) || (it == DType::kC128 && ot == DType::kF64)
                                                  : codegen::IsComplexDType(it) && ot == it;
  if (!ok_types) {
    return Unimplemented("cuda: fft '", inst.name(), "' from ", DTypeName(it), " to ", DTypeName(ot),
                         " has no generated kernel (FFT / IFFT: c64 / c128; RFFT: f32 -> c64, f64 -> c128; IRFFT back)");
  }
  for (int i = 0; i < f; ++i) {
    const int d = r - f + i;
    const bool last = i == f - 1;
    const int64_t want_in = last && type == FftType::kIrfft ? lengths[i] / 2 + 1 : lengths[i];
    const int64_t want_out = last && type == FftType::kRfft ? lengths[i] / 2 + 1 : lengths[i];
    if (in.dim(d) != want_in || out.dim(d) != want_out) {
      return InvalidArgument("fft '", inst.name(), "': dim ", d, " is ", in.dim(d), " -> ", out.dim(d), " but fft_length[",
                             i, "]=", lengths[i], " needs ", want_in, " -> ", want_out);
    }
  }
  for (int d = 0; d < r - f; ++d) {
    if (in.dim(d) != out.dim(d)) return InvalidArgument("fft '", inst.name(), "': batch dim ", d, " differs");
  }
  std::vector<GeneratedKernel> kernels;
  if (out.num_elements() == 0) return kernels;
  double total = 1;
  for (int64_t l : lengths) total *= static_cast<double>(l);
  // A pass along result axis `d` (inner / outer from the result's dims).
  auto pass_on = [&](int d) {
    LinePass p;
    p.n = lengths[d - (r - f)];
    for (int k = 0; k < d; ++k) p.outer *= out.dim(k);
    for (int k = d + 1; k < r; ++k) p.inner *= out.dim(k);
    p.src_len = p.dst_len = out.dim(d);
    p.src = p.dst = 1;
    p.src_t = p.dst_t = ot;
    return p;
  };
  int64_t batch = 1;
  for (int d = 0; d < r - f; ++d) batch *= out.dim(d);
  if (type != FftType::kIrfft && f > 1 && SlabBytes(lengths) <= kMaxShared) {
    XS_ASSIGN_OR_RETURN(GeneratedKernel k, EmitWholeSlab(inst, lengths, batch, type, type == FftType::kIfft ? total : 1));
    kernels.push_back(std::move(k));
    return kernels;
  }
  if (type == FftType::kFft || type == FftType::kIfft) {
    const int sign = type == FftType::kIfft ? 1 : -1;
    for (int d = r - 1; d >= r - f; --d) {
      LinePass p = pass_on(d);
      p.sign = sign;
      if (d == r - 1) p.src = 0;
      if (d == r - f && type == FftType::kIfft) p.divisor = total;
      XS_ASSIGN_OR_RETURN(GeneratedKernel k, EmitLinePass(inst, p, 2));
      kernels.push_back(std::move(k));
    }
    return kernels;
  }
  if (type == FftType::kRfft) {
    LinePass p = pass_on(r - 1);
    p.src = 0;
    p.in = In::kReal;
    p.src_t = it;
    p.src_len = lengths.back();
    XS_ASSIGN_OR_RETURN(GeneratedKernel k, EmitLinePass(inst, p, 2));
    kernels.push_back(std::move(k));
    for (int d = r - 2; d >= r - f; --d) {
      XS_ASSIGN_OR_RETURN(GeneratedKernel kd, EmitLinePass(inst, pass_on(d), 2));
      kernels.push_back(std::move(kd));
    }
    return kernels;
  }
  // IRFFT.
  const int64_t n = lengths.back(), half = n / 2 + 1;
  LinePass p = pass_on(r - 1);
  p.sign = 1;
  p.divisor = total;
  if (f == 1) {
    p.src = 0;
    p.in = In::kHermitian;
    p.src_t = it;
    p.src_len = half;
  } else {
    std::vector<int64_t> outer_lens(lengths.begin(), lengths.end() - 1);
    XS_ASSIGN_OR_RETURN(GeneratedKernel slab, EmitIrfftSlab(inst, outer_lens, batch, half, n, ot));
    kernels.push_back(std::move(slab));
    p.in = In::kPacked;
    p.src_len = n;
  }
  XS_ASSIGN_OR_RETURN(GeneratedKernel k, EmitLinePass(inst, p, 2));
  kernels.push_back(std::move(k));
  return kernels;
}

}  // namespace xs::cuda
