// Kernels for ragged-dot and XLA's __op$block_scaled_dot custom-call: one tiled kernel each.
// Both are put in one canonical form: result[p, m, n] = sum over k of lhs(p, m, k) * rhs(p, n, k)
// with p the outer index (ragged-dot's group in the contracting mode, then the batch dims), m the
// lhs free dims, n the rhs free dims and k the contracting dims (row-major, the CPU's order).
// One thread block (256 threads, 16 x 16) computes a BM x BN tile of one p, each thread TM x TN
// outputs; BK = 16 slices of k are staged in shared memory, each thread summing its outputs in
// k order. Ragged-dot modes (kernels/ragged_dot.h): ragged in a non-contracting dim: each tile
// row finds its group by walking group_sizes' prefix as the CPU does, and the block runs the k
// loop once per group present in the tile (usually one), with that group's rhs, each row
// accumulating only in its group's pass (rows in no group give 0); ragged in the contracting
// dim: the k loop covers only group p's range; ragged in a batch dim: a plain dot.
// block_scaled_dot: operands multiplied by their block scales while the tiles are staged (f8
// values decoded as core/dtype.cc does). Numerics: the CPU sums in f64 in k order and rounds
// once; so do the kernels (bit-identical) except for f16 / bf16 operands, whose products are
// exact in f32 and are summed in f32 (within the result's tolerance, twice as fast).
#include <algorithm>
#include <string>
#include <vector>

#include "xshard/core/shape.h"
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

using codegen::Int;

bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }
bool IsF8(DType t) {
  return t == DType::kF8E4M3FN || t == DType::kF8E5M2 || t == DType::kF8E4M3B11FNUZ || t == DType::kF8E8M0FNU;
}
bool Has(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }
int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

std::string StorageType(DType t) { return IsF8(t) ? "unsigned char" : codegen::CType(t); }

// A device lambda decoding f8 type `t` to double, as core/dtype.cc Float8ToDouble.
std::string F8Decoder(DType t) {
  const std::string name = "xs_dec_" + std::string(DTypeName(t));
  if (t == DType::kF8E8M0FNU) {
    return "  auto " + name + " = [](unsigned char b) -> double { return b == 0xff ? __longlong_as_double(0x7ff8000000000000LL) : ldexp(1.0, (int)b - 127); };\n";
  }
  int e_bits = 4, m_bits = 3, bias = 7;
  if (t == DType::kF8E5M2) e_bits = 5, m_bits = 2, bias = 15;
  if (t == DType::kF8E4M3B11FNUZ) bias = 11;
  const int emask = (1 << e_bits) - 1, mmask = (1 << m_bits) - 1;
  std::string nan = "false";
  if (t == DType::kF8E4M3FN) nan = "e == " + std::to_string(emask) + " && m == " + std::to_string(mmask);
  if (t == DType::kF8E4M3B11FNUZ) nan = "b == 0x80";
  std::string s = "  auto " + name + " = [](unsigned char b) -> double {\n";
  s += "    const int e = (b >> " + std::to_string(m_bits) + ") & " + std::to_string(emask) + ", m = b & " + std::to_string(mmask) + ";\n";
  s += "    if (" + nan + ") return __longlong_as_double(0x7ff8000000000000LL);\n";
  if (t == DType::kF8E5M2) s += "    if (e == 31) return m != 0 ? __longlong_as_double(0x7ff8000000000000LL) : ((b & 0x80) ? -__longlong_as_double(0x7ff0000000000000LL) : __longlong_as_double(0x7ff0000000000000LL));\n";
  s += "    const double v = e == 0 ? ldexp((double)m, " + std::to_string(1 - bias - m_bits) + ") : ldexp((double)(m | " +
       std::to_string(mmask + 1) + "), e - " + std::to_string(bias + m_bits) + ");\n";
  s += "    return (b & 0x80) ? -v : v;\n  };\n";
  return s;
}

// Storage-typed `e` of type `t` as the accumulator type `acc` ("float" only for f16 / bf16).
std::string Widen(DType t, const std::string& e, const std::string& acc) {
  if (IsF8(t)) return "xs_dec_" + std::string(DTypeName(t)) + "(" + e + ")";
  return "(" + acc + ")(" + codegen::ToCompute(t, e) + ")";
}

Status CheckOperandType(const Instruction& inst, DType t) {
  if (IsF8(t)) return OkStatus();
  return codegen::RequireDType(inst, t);
}

// `v` (an index below the product of `sizes`) spread over dims of `sizes` (row-major) with
// element strides `strides`: the offset sum of (v / inner_d % size_d) * stride_d.
std::string Spread(const std::string& v, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::string out;
  int64_t inner = 1;
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    std::string part = inner == 1 ? v : "(" + v + " / " + Int(inner) + ")";
    if (d > 0) part = "(" + part + " % " + Int(sizes[d]) + ")";
    out += (out.empty() ? "" : " + ") + part + (strides[d] == 1 ? "" : " * " + Int(strides[d]));
    inner *= sizes[d];
  }
  return out.empty() ? "(idx_t)0" : "(" + out + ")";
}

// The canonical dot a tiled kernel computes.
struct TiledDot {
  std::string kind, strategy;
  int num_pointers = 0;
  int64_t P = 1, M = 1, N = 1, K = 1;
  std::string acc = "double";
  std::string prologue;      // pointers and decoders
  std::string lhs, rhs;      // acc-typed values at (p, m, k) and (p, n, k) (rhs may use `grp`)
  bool lhs_k_minor = true, rhs_k_minor = false;  // which tile index is contiguous in memory
  enum { kPlain, kRowGroups, kKRange } grouping = kPlain;
  int64_t groups = 0;
  std::string sizes_base;    // offset of p's group_sizes row (uses p)
  std::string row_ragged;    // kRowGroups: the ragged index of row m
  std::string group_of_p;    // kKRange: the group of p
  std::string k_ragged;      // kKRange: the ragged component of k; empty when it is k itself
  std::string store;         // statement storing acc-typed `v` at output element `o`
  int64_t largest = 0;       // largest element count / index any operand needs
};

std::string KLoop(const TiledDot& d, int tm, int tn, const std::string& in_group, bool predicated) {
  const int bm = 16 * tm, bn = 16 * tn;
  std::string b = "    for (idx_t k0 = klo; k0 < khi; k0 += 16) {\n";
  auto stage = [&](const char* tile, int per, int width, bool k_minor, const std::string& base, int64_t extent,
                   const std::string& value) {
    b += "      for (int r = 0; r < " + std::to_string(per) + "; ++r) {\n        const int e = tid + 256 * r;\n";
    if (k_minor) {
      b += "        const int kk = e % 16, ii = e / 16;\n";
    } else {
      b += "        const int ii = e % " + std::to_string(width) + ", kk = e / " + std::to_string(width) + ";\n";
    }
    b += "        const idx_t k = k0 + kk, i = " + base + " + ii;\n        " + d.acc + " v = (" + d.acc + ")0;\n";
    b += "        if (i < " + Int(extent) + " && k < khi" + in_group + ") v = " + value + ";\n";
    b += "        " + std::string(tile) + "[kk][ii] = v;\n      }\n";
  };
  stage("As", tm, bm, d.lhs_k_minor, "m0", d.M, "LHS(i, k)");
  stage("Bs", tn, bn, d.rhs_k_minor, "n0", d.N, "RHS(i, k)");
  b += "      __syncthreads();\n      for (int kk = 0; kk < 16; ++kk) {\n";
  b += "        " + d.acc + " av[" + std::to_string(tm) + "], bv[" + std::to_string(tn) + "];\n";
  b += "        for (int i = 0; i < " + std::to_string(tm) + "; ++i) av[i] = As[kk][ty + 16 * i];\n";
  b += "        for (int j = 0; j < " + std::to_string(tn) + "; ++j) bv[j] = Bs[kk][tx + 16 * j];\n";
  b += "        for (int i = 0; i < " + std::to_string(tm) + "; ++i) {\n";
  if (predicated) b += "          if (!active[i]) continue;\n";
  b += "          for (int j = 0; j < " + std::to_string(tn) + "; ++j) acc[i][j] = acc[i][j] + av[i] * bv[j];\n";
  b += "        }\n      }\n      __syncthreads();\n    }\n";
  return b;
}

GeneratedKernel EmitTiled(const TiledDot& d) {
  const int tm = d.M >= 64 ? 4 : d.M >= 32 ? 2 : 1, tn = d.N >= 64 ? 4 : d.N >= 32 ? 2 : 1;
  const int bm = 16 * tm, bn = 16 * tn;
  const int64_t mt = (d.M + bm - 1) / bm, nt = (d.N + bn - 1) / bn, tiles = d.P * mt * nt;
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(d.num_pointers) + "> a) {\n";
  b += "  typedef " + codegen::IndexType(std::max({d.largest, tiles * bm * bn, d.P * d.M * d.N + d.K})) + " idx_t;\n";
  b += d.prologue;
  b += "  __shared__ " + d.acc + " As[16][" + std::to_string(bm + 1) + "];\n";
  b += "  __shared__ " + d.acc + " Bs[16][" + std::to_string(bn + 1) + "];\n";
  if (d.grouping == TiledDot::kRowGroups) b += "  __shared__ int s_group[" + std::to_string(bm) + "];\n  __shared__ int s_cur, s_next;\n";
  if (d.grouping == TiledDot::kKRange) b += "  __shared__ long long s_lo, s_hi;\n";
  b += "  const int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16;\n";
  b += "  for (idx_t tile = (idx_t)blockIdx.x; tile < " + Int(tiles) + "; tile += (idx_t)gridDim.x) {\n";
  b += "    const idx_t p = tile / " + Int(mt * nt) + ", m0 = tile / " + Int(nt) + " % " + Int(mt) + " * " + Int(bm) +
       ", n0 = tile % " + Int(nt) + " * " + Int(bn) + ";\n";
  b += "    (void)p;\n    auto LHS = [&](idx_t m, idx_t k) -> " + d.acc + " { return " + d.lhs + "; };\n";
  b += "    " + d.acc + " acc[" + std::to_string(tm) + "][" + std::to_string(tn) + "];\n";
  b += "    for (int i = 0; i < " + std::to_string(tm) + "; ++i)\n      for (int j = 0; j < " + std::to_string(tn) +
       "; ++j) acc[i][j] = (" + d.acc + ")0;\n";
  b += "    __syncthreads();  // the previous tile is done with shared memory\n";
  const std::string groups = Int(d.groups);
  if (d.grouping == TiledDot::kRowGroups) {
    // Each row's group as the CPU finds it: the first g with start_g <= row < start_g + size_g.
    b += "    if (tid == 0) s_cur = " + groups + ";\n";
    b += "    if (tid < " + std::to_string(bm) + ") {\n      const idx_t m = m0 + tid;\n      int g = " + groups + ";\n";
    b += "      if (m < " + Int(d.M) + ") {\n        const long long row = " + d.row_ragged + ";\n        long long start = 0;\n";
    b += "        for (g = 0; g < " + groups + "; ++g) {\n          const long long size = (long long)GS[" + d.sizes_base +
         " + g];\n          if (row >= start && row < start + size) break;\n          start += size;\n        }\n      }\n";
    b += "      s_group[tid] = g;\n    }\n    __syncthreads();\n";
    b += "    if (tid < " + std::to_string(bm) + " && s_group[tid] < " + groups + ") atomicMin(&s_cur, s_group[tid]);\n";
    b += "    __syncthreads();\n    int grp = s_cur;\n    int row_group[" + std::to_string(tm) + "];\n";
    b += "    for (int i = 0; i < " + std::to_string(tm) + "; ++i) row_group[i] = s_group[ty + 16 * i];\n";
    b += "    const idx_t klo = 0, khi = " + Int(d.K) + ";\n";
    b += "    while (grp < " + groups + ") {\n";
    b += "      bool active[" + std::to_string(tm) + "];\n";
    b += "      for (int i = 0; i < " + std::to_string(tm) + "; ++i) active[i] = row_group[i] == grp;\n";
    b += "      auto RHS = [&](idx_t n, idx_t k) -> " + d.acc + " { return " + d.rhs + "; };\n";
    b += KLoop(d, tm, tn, "", true);
    b += "      __syncthreads();  // every thread has read s_cur / s_next\n      if (tid == 0) s_next = " + groups + ";\n";
    b += "      __syncthreads();\n      if (tid < " + std::to_string(bm) + " && s_group[tid] > grp && s_group[tid] < " + groups +
         ") atomicMin(&s_next, s_group[tid]);\n      __syncthreads();\n      grp = s_next;\n    }\n";
  } else {
    b += "    auto RHS = [&](idx_t n, idx_t k) -> " + d.acc + " { return " + d.rhs + "; };\n";
    std::string in_group;
    if (d.grouping == TiledDot::kKRange) {
      // Group p's range [lo, hi) of the ragged contracting dim: the prefix of group_sizes.
      b += "    if (tid == 0) {\n      long long start = 0;\n      const idx_t g = " + d.group_of_p + ";\n";
      b += "      for (idx_t j = 0; j < g; ++j) start += (long long)GS[" + d.sizes_base + " + j];\n";
      b += "      s_lo = start;\n      s_hi = start + (long long)GS[" + d.sizes_base + " + g];\n    }\n    __syncthreads();\n";
      b += "    const long long lo = s_lo, hi = s_hi;\n";
      if (d.k_ragged.empty()) {
        b += "    const idx_t klo = (idx_t)(lo > 0 ? lo : 0), khi = (idx_t)(hi < " + Int(d.K) + " ? hi : " + Int(d.K) + ");\n";
      } else {
        b += "    const idx_t klo = 0, khi = " + Int(d.K) + ";\n";
        in_group = " && " + d.k_ragged + " >= lo && " + d.k_ragged + " < hi";
      }
    } else {
      b += "    const idx_t klo = 0, khi = " + Int(d.K) + ";\n";
    }
    b += KLoop(d, tm, tn, in_group, false);
  }
  b += "    for (int i = 0; i < " + std::to_string(tm) + "; ++i) {\n      const idx_t m = m0 + ty + 16 * i;\n";
  b += "      if (m >= " + Int(d.M) + ") continue;\n      for (int j = 0; j < " + std::to_string(tn) + "; ++j) {\n";
  b += "        const idx_t n = n0 + tx + 16 * j;\n        if (n >= " + Int(d.N) + ") continue;\n";
  b += "        const idx_t o = (p * " + Int(d.M) + " + m) * " + Int(d.N) + " + n;\n        const " + d.acc + " v = acc[i][j];\n";
  b += "        " + d.store + "\n      }\n    }\n  }\n}\n";
  LaunchDims launch;
  launch.grid = std::clamp<int64_t>(tiles, 1, codegen::kMaxGrid);
  launch.block = 256;
  return codegen::Finish(d.kind, std::move(b), launch, d.num_pointers, d.strategy);
}

std::string Pointer(int i, DType t, bool out = false) {
  const std::string ct = StorageType(t);
  return "  " + std::string(out ? "" : "const ") + ct + "* P" + std::to_string(i) + " = (" + (out ? "" : "const ") + ct +
         "*)a.p[" + std::to_string(i) + "];\n";
}

std::string Decoders(std::vector<DType> types) {
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  std::string s;
  for (DType t : types) {
    if (IsF8(t)) s += F8Decoder(t);
  }
  return s;
}

StatusOr<std::vector<GeneratedKernel>> RaggedDot(const Instruction& inst) {
  if (inst.operand_count() != 3 || !inst.attrs().lhs_ragged_dims || inst.attrs().lhs_ragged_dims->size() != 1 ||
      !inst.shape().IsArray()) {
    return InvalidArgument("ragged-dot '", inst.name(), "' needs (lhs, rhs, group_sizes), one lhs_ragged_dims entry and an array result");
  }
  const DotDimensionNumbers dn = inst.attrs().dot.value_or(DotDimensionNumbers{});
  const std::vector<int64_t> rhs_group = inst.attrs().rhs_group_dims.value_or(std::vector<int64_t>{});
  const int64_t ragged = (*inst.attrs().lhs_ragged_dims)[0];
  const Shape& ls = inst.operand(0)->shape();
  const Shape& rs = inst.operand(1)->shape();
  const Shape& gs = inst.operand(2)->shape();
  const Shape& os = inst.shape();
  if (!ls.IsArray() || !rs.IsArray() || !gs.IsArray()) return InvalidArgument("ragged-dot '", inst.name(), "' has a tuple operand");
  XS_RETURN_IF_ERROR(CheckOperandType(inst, ls.dtype()));
  XS_RETURN_IF_ERROR(CheckOperandType(inst, rs.dtype()));
  XS_RETURN_IF_ERROR(codegen::RequireDType(inst, os.dtype()));
  if (!IsInteger(gs.dtype())) {
    return Unimplemented("cuda: ragged-dot '", inst.name(), "' has group_sizes of type ", DTypeName(gs.dtype()),
                         "; generated kernels read integer group sizes");
  }
  const int nb = static_cast<int>(dn.lhs_batch.size());
  if (dn.rhs_batch.size() != dn.lhs_batch.size() || dn.lhs_contracting.size() != dn.rhs_contracting.size() || ragged < 0 ||
      ragged >= ls.rank() || (gs.rank() != 1 && gs.rank() != 1 + nb)) {
    return InvalidArgument("ragged-dot '", inst.name(), "': dimension numbers, lhs_ragged_dims or group_sizes do not fit the operands");
  }
  const bool contracting = Has(dn.lhs_contracting, ragged), batch = Has(dn.lhs_batch, ragged);
  const int64_t groups = gs.rank() >= 1 ? gs.dims().back() : 0;
  if (!contracting && !batch && (rhs_group.size() != 1 || rs.dim(static_cast<int>(rhs_group[0])) != groups)) {
    return InvalidArgument("ragged-dot '", inst.name(), "': a ragged non-contracting dim needs rhs_group_dims={g} of ", groups, " groups");
  }
  const std::vector<int64_t> lstr = RowMajorStrides(ls.dims()), rstr = RowMajorStrides(rs.dims());
  std::vector<int64_t> bsz, lbs, rbs, lf, lfs, lfst, rfs, rfst, kdims, lks, rks;
  for (int i = 0; i < nb; ++i) {
    bsz.push_back(ls.dim(static_cast<int>(dn.lhs_batch[i])));
    lbs.push_back(lstr[dn.lhs_batch[i]]);
    rbs.push_back(rstr[dn.rhs_batch[i]]);
  }
  for (int i = 0; i < ls.rank(); ++i) {
    if (Has(dn.lhs_batch, i) || Has(dn.lhs_contracting, i)) continue;
    lf.push_back(i);
    lfs.push_back(ls.dim(i));
    lfst.push_back(lstr[i]);
  }
  for (int i = 0; i < rs.rank(); ++i) {
    if (Has(dn.rhs_batch, i) || Has(dn.rhs_contracting, i) || Has(rhs_group, i)) continue;
    rfs.push_back(rs.dim(i));
    rfst.push_back(rstr[i]);
  }
  for (size_t c = 0; c < dn.lhs_contracting.size(); ++c) {
    kdims.push_back(ls.dim(static_cast<int>(dn.lhs_contracting[c])));
    lks.push_back(lstr[dn.lhs_contracting[c]]);
    rks.push_back(rstr[dn.rhs_contracting[c]]);
  }
  std::vector<int64_t> want;
  if (contracting) want.push_back(groups);
  for (const auto* v : {&bsz, &lfs, &rfs}) want.insert(want.end(), v->begin(), v->end());
  if (want != os.dims()) return InvalidArgument("ragged-dot '", inst.name(), "': result ", os.ToString(false), " does not match the operands");

  TiledDot d;
  d.kind = "ragged_dot";
  d.strategy = "ragged_dot_tiled";
  d.num_pointers = 4;
  const int64_t B = Product(bsz);
  d.P = (contracting ? groups : 1) * B;
  d.M = Product(lfs);
  d.N = Product(rfs);
  d.K = Product(kdims);
  d.groups = groups;
  d.acc = IsHalf(ls.dtype()) && IsHalf(rs.dtype()) ? "float" : "double";
  d.largest = std::max({ls.num_elements(), rs.num_elements(), gs.num_elements(), os.num_elements()});
  d.prologue = Pointer(0, ls.dtype()) + Pointer(1, rs.dtype()) + Pointer(2, gs.dtype()) + Pointer(3, os.dtype(), true) +
               "  const " + StorageType(gs.dtype()) + "* GS = P2;\n" + Decoders({ls.dtype(), rs.dtype()});
  const std::string b = contracting ? "(p % " + Int(B) + ")" : "p";
  d.lhs = Widen(ls.dtype(), "P0[" + Spread(b, bsz, lbs) + " + " + Spread("m", lfs, lfst) + " + " + Spread("k", kdims, lks) + "]", d.acc);
  std::string roff = Spread(b, bsz, rbs) + " + " + Spread("n", rfs, rfst) + " + " + Spread("k", kdims, rks);
  if (!contracting && !batch) roff += " + (idx_t)grp * " + Int(rstr[rhs_group[0]]);
  d.rhs = Widen(rs.dtype(), "P1[" + roff + "]", d.acc);
  // group_sizes row of p's batch index (the CPU's row-major index over gs's leading dims).
  std::vector<int64_t> gstr = RowMajorStrides(gs.dims());
  gstr.resize(gs.rank() > 1 ? nb : 0);
  d.sizes_base = gs.rank() > 1 ? "(" + Spread(b, bsz, gstr) + ")" : "0";
  d.lhs_k_minor = lks.empty() || lfst.empty() || lks.back() < lfst.back();
  d.rhs_k_minor = !rks.empty() && (rfst.empty() || rks.back() < rfst.back());
  if (contracting) {
    d.grouping = TiledDot::kKRange;
    d.group_of_p = "(p / " + Int(B) + ")";
    if (kdims.size() > 1) {
      const size_t c = std::find(dn.lhs_contracting.begin(), dn.lhs_contracting.end(), ragged) - dn.lhs_contracting.begin();
      int64_t inner = 1;
      for (size_t j = c + 1; j < kdims.size(); ++j) inner *= kdims[j];
      d.k_ragged = "(k / " + Int(inner) + " % " + Int(kdims[c]) + ")";
    }
  } else if (!batch) {
    d.grouping = TiledDot::kRowGroups;
    const size_t q = std::find(lf.begin(), lf.end(), ragged) - lf.begin();
    int64_t inner = 1;
    for (size_t j = q + 1; j < lfs.size(); ++j) inner *= lfs[j];
    d.row_ragged = "(m / " + Int(inner) + " % " + Int(lfs[q]) + ")";
  }
  d.store = "P3[o] = " + codegen::ConvertExpr(d.acc == "float" ? DType::kF32 : DType::kF64, os.dtype(), "v") + ";";
  return std::vector<GeneratedKernel>{EmitTiled(d)};
}

// `x` times its block scale: the scale element (p / r0, row / r1, k / r2) (no p for rank 2).
std::string Scaled(const std::string& x, const Shape& xs, const Shape* scale, int ptr, const std::string& row) {
  if (scale == nullptr) return x;
  const int r = xs.rank();
  const std::vector<int64_t> st = RowMajorStrides(scale->dims());
  std::vector<std::string> idx = {"p", row, "k"};
  if (r == 2) idx.erase(idx.begin());
  std::string off = "(idx_t)0";
  for (int d = 0; d < r; ++d) off += " + (" + idx[d] + " / " + Int(xs.dim(d) / scale->dim(d)) + ") * " + Int(st[d]);
  return "(" + x + " * " + Widen(scale->dtype(), "P" + std::to_string(ptr) + "[" + off + "]", "double") + ")";
}

StatusOr<std::vector<GeneratedKernel>> BlockScaledDot(const Instruction& inst) {
  const int n = inst.operand_count();
  if (n < 2 || n > 4 || !inst.shape().IsArray()) {
    return InvalidArgument("custom-call __op$block_scaled_dot '", inst.name(), "' needs (lhs, rhs[, lhs_scale[, rhs_scale]]) and an array result");
  }
  for (const Instruction* o : inst.operands()) {
    if (!o->shape().IsArray()) return InvalidArgument("block_scaled_dot '", inst.name(), "' has a tuple operand");
    XS_RETURN_IF_ERROR(CheckOperandType(inst, o->shape().dtype()));
  }
  const Shape& ls = inst.operand(0)->shape();
  const Shape& rs = inst.operand(1)->shape();
  const Shape& os = inst.shape();
  XS_RETURN_IF_ERROR(codegen::RequireDType(inst, os.dtype()));
  const int r = ls.rank();
  if ((r != 2 && r != 3) || rs.rank() != r || ls.dim(r - 1) != rs.dim(r - 1) || (r == 3 && ls.dim(0) != rs.dim(0))) {
    return InvalidArgument("block_scaled_dot '", inst.name(), "' needs lhs [B?, M, K] and rhs [B?, N, K], got ", ls.ToString(false),
                           " and ", rs.ToString(false));
  }
  const Shape* scales[2] = {n > 2 ? &inst.operand(2)->shape() : nullptr, n > 3 ? &inst.operand(3)->shape() : nullptr};
  for (int s = 0; s < 2; ++s) {
    const Shape* sc = scales[s];
    const Shape& x = s == 0 ? ls : rs;
    bool ok = sc == nullptr || sc->rank() == r;
    for (int i = 0; ok && sc != nullptr && i < r; ++i) ok = sc->dim(i) > 0 && x.dim(i) % sc->dim(i) == 0;
    if (!ok) {
      return InvalidArgument("block_scaled_dot '", inst.name(), "': scale ", sc->ToString(false), " must have the rank of ",
                             x.ToString(false), " with every dim dividing it");
    }
  }
  TiledDot d;
  d.kind = "block_scaled_dot";
  d.strategy = "block_scaled_dot_tiled";
  d.num_pointers = n + 1;
  d.P = r == 3 ? ls.dim(0) : 1;
  d.M = ls.dim(r - 2);
  d.N = rs.dim(r - 2);
  d.K = ls.dim(r - 1);
  std::vector<int64_t> want = {d.M, d.N};
  if (r == 3) want.insert(want.begin(), d.P);
  if (os.dims() != want) return InvalidArgument("block_scaled_dot '", inst.name(), "': result ", os.ToString(false), " must be [B?, M, N]");
  std::vector<DType> types;
  for (int i = 0; i < n; ++i) {
    d.prologue += Pointer(i, inst.operand(i)->shape().dtype());
    types.push_back(inst.operand(i)->shape().dtype());
    d.largest = std::max(d.largest, inst.operand(i)->shape().num_elements());
  }
  d.prologue += Pointer(n, os.dtype(), true) + Decoders(types);
  d.largest = std::max(d.largest, os.num_elements());
  // The CPU scales in f64 and sums in f64: so does the kernel (the scales are powers of two).
  d.lhs = Scaled(Widen(ls.dtype(), "P0[(p * " + Int(d.M) + " + m) * " + Int(d.K) + " + k]", "double"), ls,
                 scales[0], 2, "m");
  d.rhs = Scaled(Widen(rs.dtype(), "P1[(p * " + Int(d.N) + " + n) * " + Int(d.K) + " + k]", "double"), rs,
                 scales[1], 3, "n");
  d.lhs_k_minor = d.rhs_k_minor = true;
  d.store = "P" + std::to_string(n) + "[o] = " + codegen::ConvertExpr(DType::kF64, os.dtype(), "v") + ";";
  return std::vector<GeneratedKernel>{EmitTiled(d)};
}

}  // namespace

StatusOr<std::vector<GeneratedKernel>> GenerateRaggedDotKernels(const Instruction& inst) {
  if (inst.opcode() == Opcode::kRaggedDot) return RaggedDot(inst);
  if (inst.opcode() == Opcode::kCustomCall && inst.attrs().custom_call_target.value_or("") == "__op$block_scaled_dot") {
    return BlockScaledDot(inst);
  }
  return InvalidArgument("'", inst.name(), "' is neither a ragged-dot nor a __op$block_scaled_dot custom-call");
}

}  // namespace xs::cuda
