// sort (n operands, any comparator) and top-k (the topk op and the TopK custom-call) kernels: one
// block per row, a bitonic network over the row padded to a power of two in shared memory, stable
// by breaking comparator ties with the original position (the CPU's stable merge sort). Longer
// rows: top-k keeps the best k while it streams the row in chunks; sort ranks chunks against
// each other (slow, but needs no scratch buffer).
#include <algorithm>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

using codegen::CType;
using codegen::Int;

// Shared memory a kernel may use without an opt-in attribute, and sm_90's opt-in maximum.
constexpr int64_t kDefaultShared = 48 * 1024;
constexpr int64_t kMaxShared = 227 * 1024;

// What the network sorts: `types` the operands (top-k: the one operand), rows of `n` elements
// `inner` apart; `rows` rows; `keep` elements of each sorted row written (top-k: k).
struct SortProblem {
  std::vector<DType> types;
  int64_t n = 0, inner = 1, rows = 0, keep = 0, total = 0;
};

// The `before(i, j)` lambda of a sort: the element in slot i goes before the one in slot j when
// the comparator says so, or when neither is less than the other and i's position is lower.
StatusOr<std::string> SortBefore(const Instruction& inst, const std::vector<DType>& types,
                                 const std::vector<std::string>& key) {
  const Computation* c = inst.to_apply();
  if (c == nullptr) return InvalidArgument("sort '", inst.name(), "' has no comparator (to_apply=)");
  std::vector<DType> params;
  for (DType t : types) params.insert(params.end(), {t, t});
  XS_ASSIGN_OR_RETURN(std::string cmp, codegen::ScalarLambda(inst, *c, "cmp", params, {DType::kPred}));
  std::string ij, ji;
  for (size_t k = 0; k < types.size(); ++k) {
    const std::string ki = key[k] + "(i)", kj = key[k] + "(j)";
    ij += ki + ", " + kj + ", ";
    ji += kj + ", " + ki + ", ";
  }
  return "  " + cmp + "\n  auto before = [&](int i, int j) -> bool {\n    bool r = false;\n    cmp(" + ij +
         "r);\n    if (r) return true;\n    cmp(" + ji + "r);\n    return !r && pos[i] < pos[j];\n  };\n";
}

// An integer with the order of XLA's total order on `t` (floats: -NaN < -inf < ... < -0 < +0 <
// ... < +inf < +NaN, NaNs quieted first as the CPU's widening to f64 quiets them), as topk.cc.
std::string OrderKey(DType t, const std::string& x) {
  auto flt = [&](const std::string& bits, const std::string& s, const std::string& abs_mask,
                 const std::string& inf, const std::string& quiet) {
    return "([&]() { " + s + " b = (" + s + ")(" + bits + "); if ((b & " + abs_mask + ") > " + inf + ") b |= " +
           quiet + "; return b < 0 ? (" + s + ")(b ^ " + abs_mask + ") : b; }())";
  };
  switch (t) {
    case DType::kF32:
      return flt("__float_as_int(" + x + ")", "int", "0x7fffffff", "0x7f800000", "0x400000");
    case DType::kF64:
      return flt("__double_as_longlong(" + x + ")", "long long", "0x7fffffffffffffffLL", "0x7ff0000000000000LL",
                 "0x8000000000000LL");
    case DType::kF16:
      return flt("(short)" + x, "short", "0x7fff", "0x7c00", "0x200");
    case DType::kBF16:
      return flt("(short)" + x, "short", "0x7fff", "0x7f80", "0x40");
    default:
      return x;
  }
}

// A bitonic network over `padded` shared slots in which every compare-exchange is ascending: the
// first step of a merge pairs a slot with its mirror in the merged block, so slots from `valid`
// on act as +infinity (pairs reaching them are skipped and never read). `swap` exchanges slots
// lo and hi; `before(i, j)` orders them.
std::string Network(int64_t padded, const std::string& valid, const std::string& swap,
                    const std::string& before = "before") {
  std::string b = "    for (int size = 2; size <= " + Int(padded) + "; size <<= 1) {\n";
  b += "      for (int half = size >> 1; half > 0; half >>= 1) {\n";
  b += "        for (int t = threadIdx.x; t < " + Int(padded / 2) + "; t += blockDim.x) {\n";
  b += "          const int lo = ((t & ~(half - 1)) << 1) | (t & (half - 1));\n";
  b += "          const int hi = half == (size >> 1) ? (lo ^ (size - 1)) : lo + half;\n";
  b += "          if (hi < " + valid + " && " + before + "(hi, lo)) {\n" + swap + "          }\n";
  return b + "        }\n        __syncthreads();\n      }\n    }\n";
}

// The kernel: `before` and the `key_k(slot)` accessors it uses are defined by the body; when
// `keys_in_shared`, the operands are copied into shared memory and swapped with the positions,
// else only positions are (the keys read through them from global memory).
GeneratedKernel Emit(const SortProblem& p, bool topk, const std::string& before_code, bool keys_in_shared,
                     int64_t padded, const std::string& pos_t, int64_t shared_bytes) {
  const int n_ops = static_cast<int>(p.types.size());
  const int outs = topk ? 2 : n_ops;
  const int block = static_cast<int>(std::clamp<int64_t>(padded / 2, 32, 512));
  std::string b = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " +
                  std::string(codegen::kName) + "(xs_args<" + std::to_string(n_ops + outs) + "> a) {\n";
  b += "  typedef " + codegen::IndexType(p.total + padded) + " idx_t;\n";
  b += "  extern __shared__ __align__(16) unsigned char xs_smem[];\n";
  // Shared arrays by decreasing element size, so every one is aligned.
  struct Arr {
    std::string decl;
    int64_t size;
  };
  std::vector<Arr> arrays;
  for (int k = 0; k < n_ops; ++k) {
    const std::string t = CType(p.types[k]), s = std::to_string(k);
    b += "  const " + t + "* in" + s + " = (const " + t + "*)a.p[" + s + "];\n";
    if (keys_in_shared) arrays.push_back({t + "* sk" + s, DTypeSize(p.types[k])});
  }
  arrays.push_back({pos_t + "* pos", pos_t == "int" ? 4 : 2});
  std::stable_sort(arrays.begin(), arrays.end(), [](const Arr& x, const Arr& y) { return x.size > y.size; });
  int64_t offset = 0;
  for (const Arr& arr : arrays) {
    const std::string t = arr.decl.substr(0, arr.decl.find('*'));
    b += "  " + arr.decl + " = (" + t + "*)(xs_smem + " + Int(offset) + ");\n";
    offset += padded * arr.size;
  }
  b += "  idx_t base = 0;\n";  // the row's first element
  for (int k = 0; k < n_ops; ++k) {
    const std::string s = std::to_string(k);
    b += keys_in_shared ? "  auto key" + s + " = [&](int i) { return sk" + s + "[i]; };\n"
                        : "  auto key" + s + " = [&](int i) { return in" + s + "[base + (idx_t)pos[i] * " +
                              Int(p.inner) + "]; };\n";
  }
  b += before_code;
  std::string swap = "      const " + pos_t + " tp = pos[lo]; pos[lo] = pos[hi]; pos[hi] = tp;\n";
  if (keys_in_shared) {
    for (int k = 0; k < n_ops; ++k) {
      const std::string s = std::to_string(k);
      swap += "      { const " + CType(p.types[k]) + " v = sk" + s + "[lo]; sk" + s + "[lo] = sk" + s + "[hi]; sk" + s +
              "[hi] = v; }\n";
    }
  }
  b += "  for (idx_t row = blockIdx.x; row < " + Int(p.rows) + "; row += gridDim.x) {\n";
  b += "    base = row / " + Int(p.inner) + " * " +
       Int(p.n * p.inner) + " + row % " + Int(p.inner) + ";\n";
  b += "    for (int j = threadIdx.x; j < " + Int(p.n) + "; j += blockDim.x) {\n      pos[j] = (" + pos_t + ")j;\n";
  if (keys_in_shared) {
    for (int k = 0; k < n_ops; ++k) {
      const std::string s = std::to_string(k);
      b += "      sk" + s + "[j] = in" + s + "[base + (idx_t)j * " + Int(p.inner) + "];\n";
    }
  }
  b += "    }\n    __syncthreads();\n";
  b += Network(padded, Int(p.n), swap);
  const std::string out_base = topk ? "row * " + Int(p.keep) : "base";
  const std::string out_step = topk ? "1" : Int(p.inner);
  b += "    for (int j = threadIdx.x; j < " + Int(p.keep) + "; j += blockDim.x) {\n";
  b += "      const idx_t o = " + out_base + " + (idx_t)j * " + out_step + ";\n";
  for (int k = 0; k < n_ops; ++k) {
    const std::string s = std::to_string(k), t = CType(p.types[k]);
    b += "      ((" + t + "*)a.p[" + std::to_string(n_ops + k) + "])[o] = key" + s + "(j);\n";
  }
  if (topk) b += "      ((int*)a.p[" + std::to_string(n_ops + 1) + "])[o] = (int)pos[j];\n";
  b += "    }\n    __syncthreads();\n  }\n}\n";
  LaunchDims launch;
  launch.grid = std::clamp<int64_t>(p.rows, 1, codegen::kMaxGrid);
  launch.block = block;
  launch.shared_bytes = shared_bytes;
  return codegen::Finish(topk ? "topk" : "sort", std::move(b), launch, n_ops + outs,
                         keys_in_shared ? "sort_bitonic_shared" : "sort_bitonic_index");
}

// Top-k of rows too long for shared memory: `padded` slots hold the best k seen so far (sorted,
// in the first k slots) followed by the next chunk of the row; each round sorts them with the
// network and keeps the first k. Exact: `before` is a total order (key, then position).
GeneratedKernel EmitTopKChunked(const SortProblem& p, const std::string& before_code, int64_t padded,
                                int64_t chunk) {
  const DType t = p.types[0];
  const std::string ct = CType(t);
  const int block = 512;
  const bool wide = DTypeSize(t) >= 4;  // arrays by decreasing element size
  const int64_t keys_at = wide ? 0 : padded * 4, pos_at = wide ? padded * DTypeSize(t) : 0;
  std::string b = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " +
                  std::string(codegen::kName) + "(xs_args<3> a) {\n";
  b += "  typedef " + codegen::IndexType(p.total + padded) + " idx_t;\n";
  b += "  extern __shared__ __align__(16) unsigned char xs_smem[];\n";
  b += "  const " + ct + "* in0 = (const " + ct + "*)a.p[0];\n";
  b += "  " + ct + "* sk0 = (" + ct + "*)(xs_smem + " + Int(keys_at) + ");\n";
  b += "  int* pos = (int*)(xs_smem + " + Int(pos_at) + ");\n";
  b += "  auto key0 = [&](int i) { return sk0[i]; };\n" + before_code;
  const std::string swap = "      const int tp = pos[lo]; pos[lo] = pos[hi]; pos[hi] = tp;\n      { const " + ct +
                           " v = sk0[lo]; sk0[lo] = sk0[hi]; sk0[hi] = v; }\n";
  b += "  for (idx_t row = blockIdx.x; row < " + Int(p.rows) + "; row += gridDim.x) {\n";
  b += "    const idx_t base = row * " + Int(p.n) + ";\n";
  b += "    for (idx_t c0 = 0; c0 < " + Int(p.n) + "; c0 += " + Int(chunk) + ") {\n";
  b += "      const int held = c0 < " + Int(p.keep) + " ? (int)c0 : " + Int(p.keep) + ";\n";
  b += "      const int m = " + Int(p.n) + " - c0 < " + Int(chunk) + " ? (int)(" + Int(p.n) + " - c0) : " + Int(chunk) + ";\n";
  b += "      for (int j = threadIdx.x; j < m; j += blockDim.x) {\n";
  b += "        sk0[held + j] = in0[base + c0 + j];\n        pos[held + j] = (int)(c0 + j);\n      }\n";
  b += "      __syncthreads();\n      const int valid = held + m;\n";
  b += Network(padded, "valid", swap);
  b += "    }\n    for (int j = threadIdx.x; j < " + Int(p.keep) + "; j += blockDim.x) {\n";
  b += "      ((" + ct + "*)a.p[1])[row * " + Int(p.keep) + " + j] = sk0[j];\n";
  b += "      ((int*)a.p[2])[row * " + Int(p.keep) + " + j] = pos[j];\n    }\n    __syncthreads();\n  }\n}\n";
  LaunchDims launch;
  launch.grid = std::clamp<int64_t>(p.rows, 1, codegen::kMaxGrid);
  launch.block = block;
  launch.shared_bytes = padded * (DTypeSize(t) + 4);
  return codegen::Finish("topk", std::move(b), launch, 3, "topk_chunked");
}

// A sort of rows longer than 65536 elements without scratch memory: for each chunk A of the row,
// sorted in shared memory with positions, every other chunk B is sorted in turn and each element
// of A counts, by binary search, the elements of B that go before it (B's earlier chunks: those
// not greater; later ones: those less), which gives its final rank; A is then written there.
// O((n / chunk)^2 chunk log^2 chunk) work per row: slow, but exact and stable.
GeneratedKernel EmitSortRanked(const SortProblem& p, const std::string& before_code, int64_t chunk) {
  const int n_ops = static_cast<int>(p.types.size());
  const int block = 512;
  std::string b = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " +
                  std::string(codegen::kName) + "(xs_args<" + std::to_string(2 * n_ops) + "> a) {\n";
  b += "  typedef " + codegen::IndexType(p.total + chunk) + " idx_t;\n";
  b += "  extern __shared__ __align__(16) unsigned char xs_smem[];\n";
  struct Arr {
    std::string type, name;
    int64_t size;
  };
  std::vector<Arr> arrays = {{"int", "pos", 4}, {"int", "acc", 4}};
  for (int k = 0; k < n_ops; ++k) {
    const std::string t = CType(p.types[k]), s = std::to_string(k);
    b += "  const " + t + "* in" + s + " = (const " + t + "*)a.p[" + s + "];\n";
    arrays.push_back({t, "sa" + s, DTypeSize(p.types[k])});
    arrays.push_back({t, "sb" + s, DTypeSize(p.types[k])});
  }
  std::stable_sort(arrays.begin(), arrays.end(), [](const Arr& x, const Arr& y) { return x.size > y.size; });
  int64_t offset = 0;
  for (const Arr& arr : arrays) {
    b += "  " + arr.type + "* " + arr.name + " = (" + arr.type + "*)(xs_smem + " + Int(offset) + ");\n";
    offset += chunk * arr.size;
  }
  std::string ab, ba, bb, swap_a = "      { const int v = pos[lo]; pos[lo] = pos[hi]; pos[hi] = v; }\n", swap_b;
  for (int k = 0; k < n_ops; ++k) {
    const std::string s = std::to_string(k), t = CType(p.types[k]);
    b += "  auto key" + s + " = [&](int i) { return sa" + s + "[i]; };\n";
    ab += "sa" + s + "[i], sb" + s + "[j], ";
    ba += "sb" + s + "[j], sa" + s + "[i], ";
    bb += "sb" + s + "[i], sb" + s + "[j], ";
    for (const std::string& arr : {"sa" + s, "sb" + s}) {
      (arr[1] == 'a' ? swap_a : swap_b) += "      { const " + t + " v = " + arr + "[lo]; " + arr + "[lo] = " + arr +
                                           "[hi]; " + arr + "[hi] = v; }\n";
    }
  }
  b += before_code;  // cmp and before (over A's slots)
  b += "  auto less_b = [&](int i, int j) -> bool { bool r = false; cmp(" + bb + "r); return r; };\n";
  b += "  auto less_ab = [&](int i, int j) -> bool { bool r = false; cmp(" + ab + "r); return r; };\n";
  b += "  auto less_ba = [&](int j, int i) -> bool { bool r = false; cmp(" + ba + "r); return r; };\n";
  const std::string n = Int(p.n), c = Int(chunk), inner = Int(p.inner);
  b += "  for (idx_t row = blockIdx.x; row < " + Int(p.rows) + "; row += gridDim.x) {\n";
  b += "    const idx_t base = row / " + inner + " * " + Int(p.n * p.inner) + " + row % " + inner + ";\n";
  b += "    for (idx_t a0 = 0; a0 < " + n + "; a0 += " + c + ") {\n";
  b += "      const int ma = " + n + " - a0 < " + c + " ? (int)(" + n + " - a0) : " + c + ";\n";
  b += "      for (int j = threadIdx.x; j < ma; j += blockDim.x) {\n        pos[j] = j;\n";
  for (int k = 0; k < n_ops; ++k) b += "        sa" + std::to_string(k) + "[j] = in" + std::to_string(k) + "[base + (a0 + j) * " + inner + "];\n";
  b += "      }\n      __syncthreads();\n" + Network(chunk, "ma", swap_a);
  b += "      for (int j = threadIdx.x; j < ma; j += blockDim.x) acc[j] = j;\n";
  b += "      for (idx_t b0 = 0; b0 < " + n + "; b0 += " + c + ") {\n        if (b0 == a0) continue;\n";
  b += "        const int mb = " + n + " - b0 < " + c + " ? (int)(" + n + " - b0) : " + c + ";\n";
  b += "        for (int j = threadIdx.x; j < mb; j += blockDim.x) {\n";
  for (int k = 0; k < n_ops; ++k) b += "          sb" + std::to_string(k) + "[j] = in" + std::to_string(k) + "[base + (b0 + j) * " + inner + "];\n";
  b += "        }\n        __syncthreads();\n" + Network(chunk, "mb", swap_b, "less_b");
  b += "        for (int i = threadIdx.x; i < ma; i += blockDim.x) {\n          int lo = 0, hi = mb;\n";
  b += "          while (lo < hi) {\n            const int j = (lo + hi) >> 1;\n";
  b += "            if (b0 < a0 ? !less_ab(i, j) : less_ba(j, i)) lo = j + 1; else hi = j;\n          }\n";
  b += "          acc[i] += lo;\n        }\n        __syncthreads();\n      }\n";
  b += "      for (int j = threadIdx.x; j < ma; j += blockDim.x) {\n        const idx_t o = base + (idx_t)acc[j] * " + inner + ";\n";
  for (int k = 0; k < n_ops; ++k) {
    b += "        ((" + CType(p.types[k]) + "*)a.p[" + std::to_string(n_ops + k) + "])[o] = sa" + std::to_string(k) + "[j];\n";
  }
  b += "      }\n      __syncthreads();\n    }\n  }\n}\n";
  LaunchDims launch;
  launch.grid = std::clamp<int64_t>(p.rows, 1, codegen::kMaxGrid);
  launch.block = block;
  launch.shared_bytes = offset;
  return codegen::Finish("sort", std::move(b), launch, 2 * n_ops, "sort_ranked_chunks");
}

// "key0", "key1", ...: the accessors of the operands' values in a slot.
std::vector<std::string> KeyNames(size_t n) {
  std::vector<std::string> key;
  for (size_t k = 0; k < n; ++k) key.push_back(StrCat("key", k));
  return key;
}

// The largest k EmitTopKChunked takes: the best k padded to a power of two are half its slots.
int64_t MaxChunkedK(DType t) {
  int64_t k = 1;
  while (4 * k * (DTypeSize(t) + 4) <= kDefaultShared) k <<= 1;
  return k;
}

}  // namespace

StatusOr<GeneratedKernel> GenerateSortKernel(const Instruction& inst) {
  const bool topk = inst.opcode() != Opcode::kSort;
  const std::string what = StrCat("'", inst.name(), "' (", OpcodeName(inst.opcode()), ")");
  SortProblem p;
  if (inst.operand_count() < 1) return InvalidArgument(what, " has no operands");
  const Shape& in = inst.operand(0)->shape();
  if (!in.IsArray() || in.rank() < 1) {
    return InvalidArgument(what, " needs array operands of rank >= 1");
  }
  for (const Instruction* o : inst.operands()) {
    if (!o->shape().IsArray() || o->shape().dims() != in.dims()) {
      return InvalidArgument(what, ": operand '", o->name(), "' is not an array of the first operand's dims");
    }
    XS_RETURN_IF_ERROR(codegen::RequireDType(inst, o->shape().dtype()));
    p.types.push_back(o->shape().dtype());
  }
  int64_t dim = in.rank() - 1;
  if (!topk) {
    if (inst.dimensions().size() != 1) return InvalidArgument("sort ", what, " needs dimensions={d}");
    dim = inst.dimensions()[0];
    if (dim < 0 || dim >= in.rank()) return InvalidArgument(what, ": sort dimension ", dim, " is out of range");
    p.keep = in.dim(static_cast<int>(dim));
  } else {
    if (inst.operand_count() != 1 || !inst.shape().IsTuple() || inst.shape().tuple_size() != 2 ||
        !inst.shape().tuple_shape(0).IsArray() || inst.shape().tuple_shape(0).rank() != in.rank() ||
        inst.shape().tuple_shape(0).dtype() != in.dtype() ||
        inst.shape().tuple_shape(1).dtype() != DType::kS32) {
      return InvalidArgument(what, " needs one operand and a (values[..., k], s32[..., k]) result");
    }
    p.keep = inst.shape().tuple_shape(0).dims().back();
    if (inst.opcode() == Opcode::kTopK && inst.attrs().k && *inst.attrs().k != p.keep) {
      return InvalidArgument(what, ": k=", *inst.attrs().k, " but the result's last dim is ", p.keep);
    }
  }
  p.n = in.dim(static_cast<int>(dim));
  if (p.keep < 0 || p.keep > p.n) return InvalidArgument(what, ": k=", p.keep, " is not in [0, ", p.n, "]");
  for (int d = static_cast<int>(dim) + 1; d < in.rank(); ++d) p.inner *= in.dim(d);
  p.total = in.num_elements();
  p.rows = p.n == 0 ? 0 : p.total / p.n;
  int64_t padded = 1;
  while (padded < p.n) padded <<= 1;
  const std::string pos_t = padded <= 65536 ? "unsigned short" : "int";
  const int64_t pos_size = padded <= 65536 ? 2 : 4;
  int64_t elem = pos_size;
  for (DType t : p.types) elem += DTypeSize(t);
  const int64_t keyed = padded * elem, indexed = padded * pos_size;
  // Top-k of a long row: the best k and a chunk of the row in shared memory, round after round.
  int64_t held = 1;
  while (held < p.keep) held <<= 1;
  const int64_t slots = 2 * std::max<int64_t>(held, 1024);
  const bool chunked = topk && keyed > kDefaultShared && held <= MaxChunkedK(p.types[0]);
  bool keys_in_shared = false;
  int64_t shared = 0;
  if (!chunked) {
    if (keyed <= kDefaultShared || (indexed > kDefaultShared && keyed <= kMaxShared)) {
      keys_in_shared = true, shared = keyed;
    } else if (indexed <= kMaxShared) {
      shared = indexed;
    } else if (!topk) {
      int64_t chunk = 1;  // chunks A and B, A's positions and ranks in the default 48 KiB
      while (2 * chunk * (2 * (elem - pos_size) + 8) <= kDefaultShared) chunk <<= 1;
      XS_ASSIGN_OR_RETURN(std::string before, SortBefore(inst, p.types, KeyNames(p.types.size())));
      return EmitSortRanked(p, before, chunk);
    } else {
      return Unimplemented("cuda: ", what, " sorts rows of ", p.n, " elements; generated sort kernels hold a row's ",
                           "16-bit positions in shared memory (", kMaxShared / 1024, " KiB): at most 65536 elements",
                           topk ? StrCat(" (or top-k with k <= ", MaxChunkedK(p.types[0]), ")") : "");
    }
  }
  const std::vector<std::string> key = KeyNames(p.types.size());
  std::string before;
  if (topk) {
    const DType t = p.types[0];
    const bool largest = inst.attrs().largest.value_or(true);
    before = "  auto order = [&](const " + CType(t) + " x) { return " + OrderKey(t, "x") + "; };\n";
    before += "  auto before = [&](int i, int j) -> bool {\n    const auto x = order(key0(i)), y = order(key0(j));\n";
    before += std::string("    return x ") + (largest ? ">" : "<") + " y || (x == y && pos[i] < pos[j]);\n  };\n";
  } else {
    XS_ASSIGN_OR_RETURN(before, SortBefore(inst, p.types, key));
  }
  if (chunked) return EmitTopKChunked(p, before, slots, slots - held);
  return Emit(p, topk, before, keys_in_shared, padded, pos_t, shared);
}

}  // namespace xs::cuda
