// The loop skeletons of the generated kernels: the elementwise grid-stride loop (16-byte vector
// accesses when every buffer is aligned, scalar tail) and the reduction kernels (a warp or a
// block per output row when the reduced dims are minor, else a thread per output element).
#include <algorithm>
#include <cstdio>
#include <string>

#include "xshard/cuda/kernel_codegen_internal.h"

namespace xs::cuda::codegen {
namespace {

uint64_t Fnv(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string Header(int num_pointers, const std::string& idx, int block) {
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " + kName +
         "(xs_args<" + std::to_string(std::max(1, num_pointers)) + "> a) {\n  typedef " + idx + " idx_t;\n";
}

// "elem(i, loads..., y0, ..., [r]);" with y<k> / r declared before and stores after.
std::string Call(const ElemSpec& s, const std::string& i, const std::string& reduced_var) {
  std::string out = "{\n";
  for (size_t k = 0; k < s.stores.size(); ++k) out += "      " + ElemCType(s.stores[k].second) + " y" + std::to_string(k) + ";\n";
  if (s.reduced) out += "      " + ElemCType(*s.reduced) + " " + reduced_var + ";\n";
  out += "      elem(" + i;
  for (const auto& [p, t] : s.loads) out += ", ((const " + ElemCType(t) + "*)a.p[" + std::to_string(p) + "])[" + i + "]";
  for (size_t k = 0; k < s.stores.size(); ++k) out += ", y" + std::to_string(k);
  if (s.reduced) out += ", " + reduced_var;
  out += ");\n";
  for (size_t k = 0; k < s.stores.size(); ++k) {
    out += "      ((" + ElemCType(s.stores[k].second) + "*)a.p[" + std::to_string(s.stores[k].first) + "])[" + i +
           "] = y" + std::to_string(k) + ";\n";
  }
  return out;
}

}  // namespace

int64_t GridFor(int64_t work, int block) {
  return std::clamp<int64_t>((work + block - 1) / block, 1, kMaxGrid);
}

GeneratedKernel Finish(std::string_view kind, std::string body, LaunchDims launch, int num_pointers,
                       std::string strategy) {
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(Fnv(body)));
  GeneratedKernel k;
  k.source.name = "xs_" + std::string(kind) + "_" + hash;
  for (char& c : k.source.name) {
    if (c == '-') c = '_';
  }
  for (size_t at = body.find(kName); at != std::string::npos; at = body.find(kName, at)) {
    body.replace(at, std::string_view(kName).size(), k.source.name);
  }
  k.body = std::move(body);
  k.source.code = Prelude() + "template <int N> struct xs_args { void* p[N]; };\n" + k.body;
  k.launch = launch;
  k.num_pointers = num_pointers;
  k.strategy = std::move(strategy);
  return k;
}

GeneratedKernel EmitElementwise(std::string_view kind, const ElemSpec& s, int64_t count, int num_pointers) {
  int64_t max_esize = 1;
  for (const auto& [p, t] : s.loads) max_esize = std::max(max_esize, DTypeSize(t));
  for (const auto& [p, t] : s.stores) max_esize = std::max(max_esize, DTypeSize(t));
  int vec = static_cast<int>(16 / max_esize);
  if (vec < 2 || count < 2 * vec || (s.loads.empty() && s.stores.empty())) vec = 1;
  std::string b = Header(num_pointers, IndexType(count), kBlock) + s.prologue + "  " + s.lambda + "\n";
  b += "  const idx_t n = " + Int(count) + ";\n";
  b += "  const idx_t tid = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x);\n";
  b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n  idx_t start = 0;\n";
  if (vec > 1) {
    const std::string v = std::to_string(vec);
    std::string aligned = "true";
    for (const auto& [p, t] : s.loads) {
      aligned += " && ((unsigned long long)a.p[" + std::to_string(p) + "] % " + std::to_string(vec * DTypeSize(t)) + " == 0)";
    }
    for (const auto& [p, t] : s.stores) {
      aligned += " && ((unsigned long long)a.p[" + std::to_string(p) + "] % " + std::to_string(vec * DTypeSize(t)) + " == 0)";
    }
    b += "  if (" + aligned + ") {  // vectorized: " + v + " elements per access\n";
    b += "    const idx_t nv = n / " + v + ";\n    for (idx_t v = tid; v < nv; v += stride) {\n";
    for (size_t k = 0; k < s.loads.size(); ++k) {
      const std::string vt = "xs_vec<" + ElemCType(s.loads[k].second) + ", " + v + ">";
      b += "      const " + vt + " x" + std::to_string(k) + " = ((const " + vt + "*)a.p[" +
           std::to_string(s.loads[k].first) + "])[v];\n";
    }
    for (size_t k = 0; k < s.stores.size(); ++k) {
      b += "      xs_vec<" + ElemCType(s.stores[k].second) + ", " + v + "> y" + std::to_string(k) + ";\n";
    }
    b += "#pragma unroll\n      for (int e = 0; e < " + v + "; ++e) elem(v * " + v + " + e";
    for (size_t k = 0; k < s.loads.size(); ++k) b += ", x" + std::to_string(k) + ".v[e]";
    for (size_t k = 0; k < s.stores.size(); ++k) b += ", y" + std::to_string(k) + ".v[e]";
    b += ");\n";
    for (size_t k = 0; k < s.stores.size(); ++k) {
      b += "      ((xs_vec<" + ElemCType(s.stores[k].second) + ", " + v + ">*)a.p[" + std::to_string(s.stores[k].first) +
           "])[v] = y" + std::to_string(k) + ";\n";
    }
    b += "    }\n    start = nv * " + v + ";\n  }\n";
  }
  b += "  for (idx_t i = start + tid; i < n; i += stride) " + Call(s, "i", "r") + "    }\n}\n";
  LaunchDims launch;
  launch.grid = GridFor(count / vec);
  return Finish(kind, std::move(b), launch, num_pointers,
                vec > 1 ? "elementwise_vec" + std::to_string(vec) : "elementwise");
}

StatusOr<GeneratedKernel> EmitReduce(std::string_view kind, const ElemSpec& s, const std::vector<int64_t>& dims,
                                     const std::vector<bool>& reduced, kernels::CombineKind combine,
                                     int init_ptr, int result_ptr, DType result, int num_pointers) {
  XS_CHECK(s.reduced.has_value(), "a reduce kernel needs a reduced value");
  const DType t = *s.reduced;
  const std::string acc_t = ComputeType(t), rt = ElemCType(result);
  XS_ASSIGN_OR_RETURN(std::string ident, IdentityExpr(combine, t));
  XS_ASSIGN_OR_RETURN(std::string fold, CombineExpr(combine, t, "acc", ToCompute(t, "r")));
  // Every lane shuffles once per step: CombineExpr may evaluate an operand twice or not at all
  // (integer max: a > b ? a : b; pred or: a || b), and a shuffle some lanes skip is undefined.
  XS_ASSIGN_OR_RETURN(std::string shfl, CombineExpr(combine, t, "acc", "other"));
  XS_ASSIGN_OR_RETURN(std::string fin, CombineExpr(combine, t, "init", "acc"));
  int64_t rows = 1, len = 1, count = 1;
  bool suffix = true, seen_reduced = false;
  for (size_t d = 0; d < dims.size(); ++d) {
    count *= dims[d];
    if (reduced[d]) {
      len *= dims[d];
      seen_reduced = true;
    } else {
      rows *= dims[d];
      suffix = suffix && !seen_reduced;
    }
  }
  const std::string call = Call(s, "i", "r") + "      acc = " + fold + ";\n    }\n";
  const std::string store = "((" + rt + "*)a.p[" + std::to_string(result_ptr) + "])";
  const std::string final_value = FromCompute(result, fin);
  const std::string warp_reduce =
      "    for (int o = 16; o > 0; o >>= 1) { const " + acc_t + " other = xs_shfl(acc, o); acc = " + shfl + "; }\n";
  const bool block_per_row = suffix && len > 512;
  // Reduced dims in one run with kept dims after it: a column reduction of [outer, len, inner]
  // (bias and scale gradients: a sum over the batch of [tokens, features]).
  int64_t outer = 1, inner = 1;
  bool one_run = !suffix;
  {
    int first = -1, last = -1;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) continue;
      if (first < 0) first = static_cast<int>(d);
      last = static_cast<int>(d);
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      const int di = static_cast<int>(d);
      if (di < first) outer *= dims[d];
      if (di > last) inner *= dims[d];
      if (di > first && di < last && !reduced[d] && dims[d] != 1) one_run = false;
    }
  }
  // Few outputs with long columns: one thread per output (below) would leave most of the GPU
  // idle and walk each column alone.
  const bool column_tiles = one_run && inner >= 2 && rows < 65536 && len >= 64;
  const int block = (block_per_row && rows <= 1024) || (column_tiles && len >= 1024) ? 1024 : kBlock;
  std::string b = Header(num_pointers, IndexType(std::max<int64_t>(count, 1) + int64_t{kMaxGrid} * 1024), block) +
                  s.prologue + "  " + s.lambda + "\n";
  b += "  const " + acc_t + " init = " + ToCompute(t, "((const " + ElemCType(t) + "*)a.p[" + std::to_string(init_ptr) + "])[0]") + ";\n";
  b += "  const idx_t rows = " + Int(rows) + ", len = " + Int(len) + ";\n";
  LaunchDims launch;
  launch.block = block;
  std::string strategy;
  if (suffix && !block_per_row) {
    strategy = "reduce_row_warp";
    b += "  const int lane = threadIdx.x & 31;\n";
    b += "  const idx_t warp = (idx_t)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);\n";
    b += "  const idx_t warps = (idx_t)((gridDim.x * blockDim.x) >> 5);\n";
    b += "  for (idx_t row = warp; row < rows; row += warps) {\n    " + acc_t + " acc = " + ident + ";\n";
    b += "    for (idx_t i = row * len + lane; i < (row + 1) * len; i += 32) " + call + warp_reduce;
    b += "    if (lane == 0) " + store + "[row] = " + final_value + ";\n  }\n}\n";
    launch.grid = GridFor(rows * 32, block);
  } else if (suffix) {
    strategy = "reduce_row_block";
    b += "  __shared__ " + acc_t + " partial[32];\n  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;\n";
    b += "  for (idx_t row = blockIdx.x; row < rows; row += gridDim.x) {\n    " + acc_t + " acc = " + ident + ";\n";
    b += "    for (idx_t i = row * len + threadIdx.x; i < (row + 1) * len; i += blockDim.x) " + call + warp_reduce;
    b += "    if (lane == 0) partial[wid] = acc;\n    __syncthreads();\n    if (wid == 0) {\n";
    b += "      acc = lane < (int)(blockDim.x >> 5) ? partial[lane] : " + ident + ";\n  " + warp_reduce;
    b += "      if (lane == 0) " + store + "[row] = " + final_value + ";\n    }\n    __syncthreads();\n  }\n}\n";
    launch.grid = std::clamp<int64_t>(rows, 1, kMaxGrid);
  } else if (column_tiles) {
    // A block takes a tile of `w` adjacent columns (a warp reads w consecutive elements of each
    // row it visits: coalesced) and `groups` = block / w threads per column, each folding every
    // groups-th row of it; the column's partials then fold in shared memory. Like the row
    // strategies this reassociates (the typed combiners are associative and commutative), with
    // the init joined last.
    strategy = "reduce_column_tiles";
    int w = 2;
    while (w < 32 && w < inner) w *= 2;
    const int groups = block / w;
    const int64_t ctiles = (inner + w - 1) / w;
    b += "  __shared__ " + acc_t + " partial[" + std::to_string(block) + "];\n";
    b += "  const int tx = (int)threadIdx.x % " + std::to_string(w) + ", ty = (int)threadIdx.x / " + std::to_string(w) + ";\n";
    b += "  for (idx_t tile = blockIdx.x; tile < " + Int(outer * ctiles) + "; tile += gridDim.x) {\n";
    b += "    const idx_t o = tile / " + Int(ctiles) + ", c = (tile - o * " + Int(ctiles) + ") * " + std::to_string(w) +
         " + tx;\n";
    b += "    " + acc_t + " acc = " + ident + ";\n";
    b += "    if (c < " + Int(inner) + ") {\n";
    b += "      for (idx_t k = ty; k < len; k += " + std::to_string(groups) + ") {\n";
    b += "        const idx_t i = (o * len + k) * " + Int(inner) + " + c;\n        " + call + "      }\n    }\n";
    b += "    partial[threadIdx.x] = acc;\n    __syncthreads();\n";
    b += "    if (ty == 0 && c < " + Int(inner) + ") {\n";
    b += "      for (int g = 1; g < " + std::to_string(groups) + "; ++g) { const " + acc_t + " other = partial[g * " +
         std::to_string(w) + " + tx]; acc = " + shfl + "; }\n";
    b += "      " + store + "[o * " + Int(inner) + " + c] = " + final_value + ";\n    }\n    __syncthreads();\n  }\n}\n";
    launch.grid = std::clamp<int64_t>(outer * ctiles, 1, kMaxGrid);
  } else {
    strategy = "reduce_general";
    std::vector<int64_t> stride(dims.size(), 1);
    for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) stride[d] = stride[d + 1] * dims[d + 1];
    auto decompose = [&](bool want_reduced, const std::string& from, const std::string& into) {
      std::string code = "      { idx_t q = " + from + ";\n";
      for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
        if (reduced[d] != want_reduced || dims[d] == 1) continue;
        code += "        { const idx_t n = q / " + Int(dims[d]) + "; " + into + " += (q - n * " + Int(dims[d]) +
                ") * " + Int(stride[d]) + "; q = n; }\n";
      }
      return code + "      }\n";
    };
    b += "  const idx_t tid = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x);\n";
    b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
    b += "  for (idx_t row = tid; row < rows; row += stride) {\n    idx_t base = 0;\n" + decompose(false, "row", "base");
    // One thread combines an output's elements in row-major order starting from the init value,
    // as the CPU does: results are the CPU's bit for bit.
    // f16 / bf16 accumulators round to 16 bits after every step here, as on the CPU.
    const std::string rounded = Call(s, "i", "r") + "      acc = " + ToCompute(t, FromCompute(t, fold)) + ";\n    }\n";
    b += "    " + acc_t + " acc = init;\n    for (idx_t k = 0; k < len; ++k) {\n      idx_t i = base;\n" +
         decompose(true, "k", "i") + "      " + rounded + "    }\n";
    b += "    " + store + "[row] = " + FromCompute(result, "acc") + ";\n  }\n}\n";
    launch.grid = GridFor(rows, block);
  }
  return Finish(kind, std::move(b), launch, num_pointers, strategy);
}

}  // namespace xs::cuda::codegen
