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
#include <initializer_list>
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
  std::string s = "  auto xs_dec_" + std::string(DTypeName(t)) + " = [](unsigned char b) -> double {\n";
  s += "    const double nan = __longlong_as_double(0x7ff8000000000000LL), inf = "
       "__longlong_as_double(0x7ff0000000000000LL);\n";
  s += "    (void)inf;\n";
  if (t == DType::kF8E8M0FNU) return s + "    return b == 0xff ? nan : ldexp(1.0, (int)b - 127);\n  };\n";
  int e_bits = 4, m_bits = 3, bias = 7;
  if (t == DType::kF8E5M2) e_bits = 5, m_bits = 2, bias = 15;
  if (t == DType::kF8E4M3B11FNUZ) bias = 11;
  const int emask = (1 << e_bits) - 1, mmask = (1 << m_bits) - 1;
  s += StrCat("    const int e = (b >> ", m_bits, ") & ", emask, ", m = b & ", mmask, ";\n");
  if (t == DType::kF8E4M3FN) s += StrCat("    if (e == ", emask, " && m == ", mmask, ") return nan;\n");
  if (t == DType::kF8E4M3B11FNUZ) s += "    if (b == 0x80) return nan;\n";
  if (t == DType::kF8E5M2) s += "    if (e == 31) return m != 0 ? nan : (b & 0x80) ? -inf : inf;\n";
  s += StrCat("    const double v = e == 0 ? ldexp((double)m, ", 1 - bias - m_bits, ") : ldexp((double)(m | ",
              mmask + 1, "), e - ", bias + m_bits, ");\n");
  return s + "    return (b & 0x80) ? -v : v;\n  };\n";
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
  std::string prologue;                          // pointers and decoders
  std::string lhs, rhs;                          // acc-typed values at (p, m, k) and (p, n, k) (rhs may use `grp`)
  bool lhs_k_minor = true, rhs_k_minor = false;  // which tile index is contiguous in memory
  enum { kPlain, kRowGroups, kKRange } grouping = kPlain;
  int64_t groups = 0;
  std::string sizes_base;  // offset of p's group_sizes row (uses p)
  std::string row_ragged;  // kRowGroups: the ragged index of row m
  std::string group_of_p;  // kKRange: the group of p
  std::string k_ragged;    // kKRange: the ragged component of k; empty when it is k itself
  std::string store;       // statement storing acc-typed `v` at output element `o`
  int64_t largest = 0;     // largest element count / index any operand needs
};

// `text` with every "$(key)" replaced by its value; `pairs` alternates keys and values.
std::string Fill(std::string text, std::initializer_list<std::string> pairs) {
  for (auto it = pairs.begin(); it != pairs.end() && it + 1 != pairs.end(); it += 2) {
    const std::string token = "$(" + *it + ")";
    const std::string& value = *(it + 1);
    for (size_t at = text.find(token); at != std::string::npos; at = text.find(token, at + value.size())) {
      text.replace(at, token.size(), value);
    }
  }
  return text;
}

// The k loop of a tile: BK = 16 slices of lhs (As[k][m]) and rhs (Bs[k][n]) staged in shared
// memory (consecutive threads on the operand's contiguous index), then each thread's TM x TN
// sums extended in k order; $(INGROUP) masks k outside a ragged contracting group, $(SKIP)
// skips rows outside the current group.
constexpr const char* kKLoop = R"(    for (idx_t k0 = klo; k0 < khi; k0 += 16) {
      for (int r = 0; r < $(TM); ++r) {
        const int e = tid + 256 * r;
        $(AIDX)
        const idx_t k = k0 + kk, i = m0 + ii;
        As[kk][ii] = i < $(M) && k < khi$(INGROUP) ? LHS(i, k) : ($(ACC))0;
      }
      for (int r = 0; r < $(TN); ++r) {
        const int e = tid + 256 * r;
        $(BIDX)
        const idx_t k = k0 + kk, i = n0 + ii;
        Bs[kk][ii] = i < $(N) && k < khi$(INGROUP) ? RHS(i, k) : ($(ACC))0;
      }
      __syncthreads();
      for (int kk = 0; kk < 16; ++kk) {
        $(ACC) av[$(TM)], bv[$(TN)];
        for (int i = 0; i < $(TM); ++i) av[i] = As[kk][ty + 16 * i];
        for (int j = 0; j < $(TN); ++j) bv[j] = Bs[kk][tx + 16 * j];
        for (int i = 0; i < $(TM); ++i) {
          $(SKIP)for (int j = 0; j < $(TN); ++j) acc[i][j] = acc[i][j] + av[i] * bv[j];
        }
      }
      __syncthreads();
    }
)";

// Ragged rows: each row's group as the CPU finds it (the first g with start <= row < start +
// size), then one k pass per group present in the tile, in increasing order.
constexpr const char* kRowGroups = R"(    if (tid == 0) s_cur = $(G);
    if (tid < $(BM)) {
      const idx_t m = m0 + tid;
      int g = $(G);
      if (m < $(M)) {
        const long long row = $(ROW);
        long long start = 0;
        for (g = 0; g < $(G); ++g) {
          const long long size = (long long)GS[$(BASE) + g];
          if (row >= start && row < start + size) break;
          start += size;
        }
      }
      s_group[tid] = g;
    }
    __syncthreads();
    if (tid < $(BM) && s_group[tid] < $(G)) atomicMin(&s_cur, s_group[tid]);
    __syncthreads();
    int grp = s_cur, row_group[$(TM)];
    for (int i = 0; i < $(TM); ++i) row_group[i] = s_group[ty + 16 * i];
    const idx_t klo = 0, khi = $(K);
    while (grp < $(G)) {
      bool active[$(TM)];
      for (int i = 0; i < $(TM); ++i) active[i] = row_group[i] == grp;
      auto RHS = [&](idx_t n, idx_t k) -> $(ACC) { return $(RHS); };
$(KLOOP)      __syncthreads();  // every thread has read s_cur / s_next
      if (tid == 0) s_next = $(G);
      __syncthreads();
      if (tid < $(BM) && s_group[tid] > grp && s_group[tid] < $(G)) atomicMin(&s_next, s_group[tid]);
      __syncthreads();
      grp = s_next;
    }
)";

// Ragged contraction: group p's range [lo, hi) of the ragged dim, the prefix of group_sizes.
constexpr const char* kKRange = R"(    auto RHS = [&](idx_t n, idx_t k) -> $(ACC) { return $(RHS); };
    if (tid == 0) {
      const idx_t g = $(GP);
      long long start = 0;
      for (idx_t j = 0; j < g; ++j) start += (long long)GS[$(BASE) + j];
      s_lo = start;
      s_hi = start + (long long)GS[$(BASE) + g];
    }
    __syncthreads();
    const long long lo = s_lo, hi = s_hi;
)";

constexpr const char* kTiled = R"(extern "C" __global__ void __launch_bounds__(256) $(NAME)(xs_args<$(NP)> a) {
  typedef $(IDX) idx_t;
$(PROLOGUE)  __shared__ $(ACC) As[16][$(BM) + 1];
  __shared__ $(ACC) Bs[16][$(BN) + 1];
$(SHARED)  const int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16;
  for (idx_t tile = (idx_t)blockIdx.x; tile < $(TILES); tile += (idx_t)gridDim.x) {
    const idx_t p = tile / ($(MT) * $(NT)), m0 = tile / $(NT) % $(MT) * $(BM), n0 = tile % $(NT) * $(BN);
    (void)p;
    auto LHS = [&](idx_t m, idx_t k) -> $(ACC) { return $(LHS); };
    $(ACC) acc[$(TM)][$(TN)];
    for (int i = 0; i < $(TM); ++i)
      for (int j = 0; j < $(TN); ++j) acc[i][j] = ($(ACC))0;
    __syncthreads();  // the previous tile is done with shared memory
$(BODY)    for (int i = 0; i < $(TM); ++i) {
      const idx_t m = m0 + ty + 16 * i;
      if (m >= $(M)) continue;
      for (int j = 0; j < $(TN); ++j) {
        const idx_t n = n0 + tx + 16 * j;
        if (n >= $(N)) continue;
        const idx_t o = (p * $(M) + m) * $(N) + n;
        const $(ACC) v = acc[i][j];
        $(STORE)
      }
    }
  }
}
)";

GeneratedKernel EmitTiled(const TiledDot& d) {
  const int tm = d.M >= 64 ? 4 : d.M >= 32 ? 2 : 1, tn = d.N >= 64 ? 4 : d.N >= 32 ? 2 : 1;
  const int bm = 16 * tm, bn = 16 * tn;
  const int64_t mt = (d.M + bm - 1) / bm, nt = (d.N + bn - 1) / bn, tiles = d.P * mt * nt;
  auto index = [](bool k_minor, int width) {
    return k_minor ? std::string("const int kk = e % 16, ii = e / 16;")
                   : StrCat("const int ii = e % ", width, ", kk = e / ", width, ";");
  };
  std::string in_group, body, shared;
  if (d.grouping == TiledDot::kKRange && !d.k_ragged.empty()) {
    in_group = " && " + d.k_ragged + " >= lo && " + d.k_ragged + " < hi";
  }
  const std::string skip = d.grouping == TiledDot::kRowGroups ? "if (!active[i]) continue;\n          " : "";
  const std::string kloop = Fill(
      kKLoop, {"INGROUP", in_group, "SKIP", skip, "AIDX", index(d.lhs_k_minor, bm), "BIDX", index(d.rhs_k_minor, bn)});
  if (d.grouping == TiledDot::kRowGroups) {
    shared = "  __shared__ int s_group[$(BM)];\n  __shared__ int s_cur, s_next;\n";
    body = Fill(kRowGroups, {"KLOOP", kloop, "ROW", d.row_ragged});
  } else if (d.grouping == TiledDot::kKRange) {
    shared = "  __shared__ long long s_lo, s_hi;\n";
    body = kKRange;
    // One ragged contracting dim: the loop covers [lo, hi) clipped to [0, K); else every k, masked.
    body += d.k_ragged.empty() ? "    const idx_t klo = lo > 0 ? (idx_t)lo : 0, khi = hi < $(K) ? (idx_t)hi : $(K);\n"
                               : "    const idx_t klo = 0, khi = $(K);\n";
    body += kloop;
  } else {
    body = "    auto RHS = [&](idx_t n, idx_t k) -> $(ACC) { return $(RHS); };\n    const idx_t klo = 0, khi = $(K);\n";
    body += kloop;
  }
  const std::string idx = codegen::IndexType(std::max({d.largest, tiles * bm * bn, d.P * d.M * d.N + d.K}));
  std::string b = Fill(kTiled, {"BODY", body, "SHARED", shared, "PROLOGUE", d.prologue});
  b = Fill(b, {"NAME", codegen::kName, "NP", Int(d.num_pointers), "IDX", idx, "ACC", d.acc});
  b = Fill(b, {"LHS", d.lhs, "RHS", d.rhs, "STORE", d.store, "BASE", d.sizes_base, "GP", d.group_of_p});
  b = Fill(b, {"G", Int(d.groups), "TILES", Int(tiles), "MT", Int(mt), "NT", Int(nt), "BM", Int(bm), "BN", Int(bn)});
  b = Fill(b, {"TM", Int(tm), "TN", Int(tn), "M", Int(d.M), "N", Int(d.N), "K", Int(d.K)});
  LaunchDims launch;
  launch.grid = std::clamp<int64_t>(tiles, 1, codegen::kMaxGrid);
  launch.block = 256;
  return codegen::Finish(d.kind, std::move(b), launch, d.num_pointers, d.strategy);
}

std::string Pointer(int i, DType t, bool out = false) {
  const std::string ct = StorageType(t);
  return "  " + std::string(out ? "" : "const ") + ct + "* P" + std::to_string(i) + " = (" + (out ? "" : "const ") +
         ct + "*)a.p[" + std::to_string(i) + "];\n";
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
    return InvalidArgument("ragged-dot '", inst.name(),
                           "' needs (lhs, rhs, group_sizes), one lhs_ragged_dims entry and an array result");
  }
  const DotDimensionNumbers dn = inst.attrs().dot.value_or(DotDimensionNumbers{});
  const std::vector<int64_t> rhs_group = inst.attrs().rhs_group_dims.value_or(std::vector<int64_t>{});
  const int64_t ragged = (*inst.attrs().lhs_ragged_dims)[0];
  const Shape& ls = inst.operand(0)->shape();
  const Shape& rs = inst.operand(1)->shape();
  const Shape& gs = inst.operand(2)->shape();
  const Shape& os = inst.shape();
  if (!ls.IsArray() || !rs.IsArray() || !gs.IsArray())
    return InvalidArgument("ragged-dot '", inst.name(), "' has a tuple operand");
  XS_RETURN_IF_ERROR(CheckOperandType(inst, ls.dtype()));
  XS_RETURN_IF_ERROR(CheckOperandType(inst, rs.dtype()));
  XS_RETURN_IF_ERROR(codegen::RequireDType(inst, os.dtype()));
  if (!IsInteger(gs.dtype()) || IsNarrowInt(gs.dtype())) {
    return Unimplemented("cuda: ragged-dot '", inst.name(), "' has group_sizes of type ", DTypeName(gs.dtype()),
                         "; generated kernels read integer group sizes");
  }
  const int nb = static_cast<int>(dn.lhs_batch.size());
  if (dn.rhs_batch.size() != dn.lhs_batch.size() || dn.lhs_contracting.size() != dn.rhs_contracting.size() ||
      ragged < 0 || ragged >= ls.rank() || (gs.rank() != 1 && gs.rank() != 1 + nb)) {
    return InvalidArgument("ragged-dot '", inst.name(),
                           "': dimension numbers, lhs_ragged_dims or group_sizes do not fit the operands");
  }
  const bool contracting = Has(dn.lhs_contracting, ragged), batch = Has(dn.lhs_batch, ragged);
  const int64_t groups = gs.rank() >= 1 ? gs.dims().back() : 0;
  if (!contracting && !batch && (rhs_group.size() != 1 || rs.dim(static_cast<int>(rhs_group[0])) != groups)) {
    return InvalidArgument("ragged-dot '", inst.name(), "': a ragged non-contracting dim needs rhs_group_dims={g} of ",
                           groups, " groups");
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
  if (want != os.dims())
    return InvalidArgument("ragged-dot '", inst.name(), "': result ", os.ToString(false),
                           " does not match the operands");

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
  d.lhs = Widen(ls.dtype(),
                "P0[" + Spread(b, bsz, lbs) + " + " + Spread("m", lfs, lfst) + " + " + Spread("k", kdims, lks) + "]",
                d.acc);
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
      const size_t c =
          std::find(dn.lhs_contracting.begin(), dn.lhs_contracting.end(), ragged) - dn.lhs_contracting.begin();
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
    return InvalidArgument("custom-call __op$block_scaled_dot '", inst.name(),
                           "' needs (lhs, rhs[, lhs_scale[, rhs_scale]]) and an array result");
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
    return InvalidArgument("block_scaled_dot '", inst.name(), "' needs lhs [B?, M, K] and rhs [B?, N, K], got ",
                           ls.ToString(false), " and ", rs.ToString(false));
  }
  const Shape* scales[2] = {n > 2 ? &inst.operand(2)->shape() : nullptr, n > 3 ? &inst.operand(3)->shape() : nullptr};
  for (int s = 0; s < 2; ++s) {
    const Shape* sc = scales[s];
    const Shape& x = s == 0 ? ls : rs;
    bool ok = sc == nullptr || sc->rank() == r;
    for (int i = 0; ok && sc != nullptr && i < r; ++i) ok = sc->dim(i) > 0 && x.dim(i) % sc->dim(i) == 0;
    if (!ok) {
      return InvalidArgument("block_scaled_dot '", inst.name(), "': scale ", sc->ToString(false),
                             " must have the rank of ", x.ToString(false), " with every dim dividing it");
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
  if (os.dims() != want)
    return InvalidArgument("block_scaled_dot '", inst.name(), "': result ", os.ToString(false), " must be [B?, M, N]");
  std::vector<DType> types;
  for (int i = 0; i < n; ++i) {
    d.prologue += Pointer(i, inst.operand(i)->shape().dtype());
    types.push_back(inst.operand(i)->shape().dtype());
    d.largest = std::max(d.largest, inst.operand(i)->shape().num_elements());
  }
  d.prologue += Pointer(n, os.dtype(), true) + Decoders(types);
  d.largest = std::max(d.largest, os.num_elements());
  // The CPU scales and sums in f64; so does the kernel.
  d.lhs = Scaled(Widen(ls.dtype(), "P0[(p * " + Int(d.M) + " + m) * " + Int(d.K) + " + k]", "double"), ls, scales[0], 2,
                 "m");
  d.rhs = Scaled(Widen(rs.dtype(), "P1[(p * " + Int(d.N) + " + n) * " + Int(d.K) + " + k]", "double"), rs, scales[1], 3,
                 "n");
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
