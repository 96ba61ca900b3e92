// Non-fused reduce and reduce-window kernels, GenerateOpKernel's dispatch, and CombineKernels.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"
#include "xshard/kernels/reduce.h"

namespace xs::cuda {
namespace {

using codegen::CType;
using codegen::Int;


Status OneOperand(const Instruction& inst) {
  if (inst.operand_count() != 2 || !inst.shape().IsArray()) {
    return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()),
                         ") reduces several operands together; generated kernels reduce one");
  }
  return OkStatus();
}

// The reducer computation of `inst` as `auto comb = [&](acc..., x..., out&...) {...};`.
StatusOr<std::string> CombinerLambda(const Instruction& inst, const std::vector<DType>& types) {
  const Computation* c = inst.to_apply();
  if (c == nullptr) return InvalidArgument("'", inst.name(), "' has no to_apply");
  std::vector<DType> params = types;
  params.insert(params.end(), types.begin(), types.end());
  return codegen::ScalarLambda(inst, *c, "comb", params, types);
}

// A bf16 / f16 sum or product of one operand in a reduce-window accumulates in f32 and rounds once
// when stored, as the CPU executor's kernels::ReduceWindow computes it (XLA's CPU backend scans
// long windows in f32): rounding every step stalls a long sum (a bf16 running sum of ones stops
// at 256).
// The f32 combiner for such an `inst` of n operands of `types`, or nullopt (fold in the element
// types with the inlined reducer).
std::optional<std::string> WidenedCombiner(const Instruction& inst, const std::vector<DType>& types) {
  if (types.size() != 1 || (types[0] != DType::kBF16 && types[0] != DType::kF16)) return std::nullopt;
  StatusOr<kernels::CombineKind> kind = codegen::TypedCombiner(inst);
  if (!kind.ok() || (*kind != kernels::CombineKind::kAdd && *kind != kernels::CombineKind::kMultiply)) {
    return std::nullopt;
  }
  return std::string("auto comb = [&](const float a0, const float x0, float& r0) { r0 = a0 ") +
         (*kind == kernels::CombineKind::kAdd ? "+" : "*") + " x0; };";
}

// The types the running values of `types` are kept in: f32 where `widened`, else their own.
std::vector<DType> AccumulatorTypes(const std::vector<DType>& types, bool widened) {
  return widened ? std::vector<DType>(types.size(), DType::kF32) : types;
}

// Code over the n operands of a reducer `comb` (CombinerLambda, or WidenedCombiner's), for the
// scan and block-per-row kernels: operand k's expression of a term comes from a Term. Running
// values (acc, shared totals) have the accumulator types; inputs and inits are converted to them
// when read (Input, Init) and results rounded back when written (Store). Pointers: n inputs, n
// inits, n results.
class Operands {
 public:
  using Term = std::function<std::string(int)>;
  Operands(const std::vector<DType>& types, const std::vector<DType>& acc)
      : types_(types), acc_(acc), n_(static_cast<int>(types.size())) {}
  explicit Operands(const std::vector<DType>& types) : Operands(types, types) {}

  static Term Named(const std::string& var) {
    return [var](int k) { return var + std::to_string(k); };
  }
  static Term Indexed(const std::string& var, const std::string& at) {
    return [var, at](int k) { return var + std::to_string(k) + "[" + at + "]"; };
  }
  // Input k at `at`, the init (0-d), both in the accumulator type; result k at `at` (storage).
  Term Input(const std::string& at) const {
    return [this, at](int k) { return ToAcc(k, Ptr(k, 0, true) + "[" + at + "]"); };
  }
  Term Init() const {
    return [this](int k) { return ToAcc(k, Ptr(k, 1, true) + "[0]"); };
  }
  Term Result(const std::string& at) const { return [this, at](int k) { return Ptr(k, 2, false) + "[" + at + "]"; }; }

  // "A0 var0 = from(0); ..." in the accumulator types.
  std::string Declare(const std::string& var, const Term& from) const {
    std::string c;
    for (int k = 0; k < n_; ++k) c += CType(acc_[k]) + " " + var + std::to_string(k) + " = " + from(k) + "; ";
    return c;
  }
  // "to(0) = from(0); ..." between running values.
  std::string Assign(const Term& to, const Term& from) const {
    std::string c;
    for (int k = 0; k < n_; ++k) c += to(k) + " = " + from(k) + "; ";
    return c;
  }
  // "result(0) = from(0); ...", rounded to the element types.
  std::string Store(const Term& result, const Term& from) const {
    std::string c;
    for (int k = 0; k < n_; ++k) {
      c += result(k) + " = " + (acc_[k] == types_[k] ? from(k) : codegen::FromCompute(types_[k], from(k))) + "; ";
    }
    return c;
  }
  // acc = comb(acc, x), operand by operand.
  std::string Fold(const std::string& acc, const Term& x) const {
    std::string c = "{ ";
    for (int k = 0; k < n_; ++k) c += CType(acc_[k]) + " r" + std::to_string(k) + "; ";
    c += "comb(";
    for (int k = 0; k < n_; ++k) c += acc + std::to_string(k) + ", ";
    for (int k = 0; k < n_; ++k) c += x(k) + ", ";
    for (int k = 0; k < n_; ++k) c += StrCat("r", k, k + 1 < n_ ? ", " : "); ");
    return c + Assign(Named(acc), Named("r")) + "}";
  }
  // A block of 256 threads splitting `len` elements into chunks: shared chunk totals tot<k>[256]
  // and lane totals lane<k>[32]; thread t's chunk is [lo, hi). Returns the threads that have a
  // chunk (lo < len) in `used`.
  std::string ChunkPrologue(int64_t len, int64_t* used) const {
    const int64_t chunk = (len + 255) / 256;
    *used = (len + chunk - 1) / chunk;
    std::string b;
    for (int k = 0; k < n_; ++k) {
      b += "  __shared__ " + CType(acc_[k]) + " tot" + std::to_string(k) + "[256];\n";
      b += "  __shared__ " + CType(acc_[k]) + " lane" + std::to_string(k) + "[32];\n";
    }
    b += "  const int t = (int)threadIdx.x;\n";
    b += "  const idx_t lo = (idx_t)t * " + Int(chunk) + ";\n";
    b += "  const idx_t hi = lo + " + Int(chunk) + " < " + Int(len) + " ? lo + " + Int(chunk) + " : " + Int(len) + ";\n";
    return b;
  }
  // Warp 0's first step over the `used` chunk totals: lane l folds totals [8l, 8l + 8) in order
  // into lane<k>[l]. Opens `if (t < 32) {` and declares first / last, which the caller closes.
  std::string LaneTotals(int64_t used) const {
    std::string b = "    if (t < 32) {\n";
    b += "      const int first = t * 8, last = first + 8 < " + Int(used) + " ? first + 8 : " + Int(used) + ";\n";
    b += "      if (first < last) {\n        " + Declare("acc", Indexed("tot", "first")) + "\n";
    b += "        for (int c = first + 1; c < last; ++c) " + Fold("acc", Indexed("tot", "c")) + "\n";
    b += "        " + Assign(Indexed("lane", "t"), Named("acc")) + "\n      }\n      __syncwarp();\n";
    return b;
  }

 private:
  std::string Ptr(int k, int slot, bool is_const) const {
    return "((" + std::string(is_const ? "const " : "") + CType(types_[k]) + "*)a.p[" + std::to_string(slot * n_ + k) + "])";
  }
  std::string ToAcc(int k, const std::string& e) const {
    return acc_[k] == types_[k] ? e : codegen::ToCompute(types_[k], e);
  }
  std::vector<DType> types_, acc_;
  int n_;
};

// GenericReduce with few long rows (fewer than kGenericRowsForThreads outputs of at least
// kGenericLenForBlocks elements: JAX's argmax over a vocabulary): one block per output. Each of
// 256 threads folds a contiguous chunk of the row's elements (in row-major order of the reduced
// dims), warp 0 folds the chunk totals in order (8 per lane, then the lane totals on lane 0 from
// the init) and writes the result. Reassociated, as XLA's GPU backend reduces (a reducer is
// associative by XLA's semantics): argmax-like selections and integers are exact, float sums
// round differently from the CPU's one fold. `b` holds the kernel's opening and the combiner
// lambda; `decompose(want_reduced, from, into)` adds the offsets of a row's or an element's
// coordinates.
constexpr int64_t kGenericRowsForThreads = 32768;
constexpr int64_t kGenericLenForBlocks = 1024;

StatusOr<GeneratedKernel> GenericReduceBlockPerRow(
    const std::vector<DType>& types, std::string b, int64_t rows, int64_t len,
    const std::function<std::string(bool, const std::string&, const std::string&)>& decompose) {
  const Operands ops(types);
  const int n = static_cast<int>(types.size());
  int64_t used = 0;
  b += ops.ChunkPrologue(len, &used);
  b += "  for (idx_t row = (idx_t)blockIdx.x; row < " + Int(rows) + "; row += (idx_t)gridDim.x) {\n";
  b += "    idx_t base = 0;\n" + decompose(false, "row", "base");
  // Each thread's chunk total, without the init.
  b += "    if (t < " + Int(used) + ") {\n";
  b += "      idx_t i = base;\n" + decompose(true, "lo", "i") + "      " + ops.Declare("acc", ops.Input("i")) + "\n";
  b += "      for (idx_t k = lo + 1; k < hi; ++k) {\n        idx_t i = base;\n" + decompose(true, "k", "i") +
       "        " + ops.Fold("acc", ops.Input("i")) + "\n      }\n";
  b += "      " + ops.Assign(Operands::Indexed("tot", "t"), Operands::Named("acc")) + "\n    }\n    __syncthreads();\n";
  // Lane totals, then lane 0 folds them in order after the init.
  b += ops.LaneTotals(used);
  b += "      if (t == 0) {\n        " + ops.Declare("acc", ops.Init()) + "\n";
  b += "        for (int l = 0; l * 8 < " + Int(used) + "; ++l) " + ops.Fold("acc", Operands::Indexed("lane", "l")) + "\n";
  b += "        " + ops.Store(ops.Result("row"), Operands::Named("acc")) + "\n";
  b += "      }\n      __syncwarp();\n    }\n    __syncthreads();\n  }\n}\n";
  LaunchDims launch;
  launch.grid = std::min<int64_t>(rows, codegen::kMaxGrid);
  return codegen::Finish("reduce_generic", std::move(b), launch, 3 * n, "reduce_general_block_per_row");
}

// A reduce of n operands with any reducer: one thread per output element combining its
// elements in row-major order from the init values, in the element types (bit-identical to the
// CPU executor); few long rows take a block each (GenericReduceBlockPerRow). Pointers: n inputs,
// n inits, n results.
StatusOr<GeneratedKernel> GenericReduce(const Instruction& inst) {
  const int n = inst.operand_count() / 2;
  std::vector<DType> types;
  for (int k = 0; k < n; ++k) {
    const Shape& s = inst.operand(k)->shape();
    if (!s.IsArray() || s.dims() != inst.operand(0)->shape().dims()) {
      return InvalidArgument("'", inst.name(), "': reduce operands must be arrays of one shape");
    }
    XS_RETURN_IF_ERROR(codegen::RequireDType(inst, s.dtype()));
    types.push_back(s.dtype());
  }
  XS_ASSIGN_OR_RETURN(std::string comb, CombinerLambda(inst, types));
  const std::vector<int64_t>& dims = inst.operand(0)->shape().dims();
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t d : inst.dimensions()) reduced[d] = true;
  std::vector<int64_t> stride(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) stride[d] = stride[d + 1] * dims[d + 1];
  int64_t rows = 1, len = 1;
  for (size_t d = 0; d < dims.size(); ++d) (reduced[d] ? len : rows) *= dims[d];
  auto decompose = [&](bool want, const std::string& from, const std::string& into) {
    std::string code = "      { idx_t q = " + from + ";\n";
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (reduced[d] != want || dims[d] == 1) continue;
      code += "        { const idx_t m = q / " + Int(dims[d]) + "; " + into + " += (q - m * " + Int(dims[d]) + ") * " +
              Int(stride[d]) + "; q = m; }\n";
    }
    return code + "      }\n";
  };
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(3 * n) + "> a) {\n  typedef long long idx_t;\n  " + comb + "\n";
  if (rows < kGenericRowsForThreads && len >= kGenericLenForBlocks) {
    return GenericReduceBlockPerRow(types, std::move(b), rows, len, decompose);
  }
  b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  b += "  for (idx_t row = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); row < " + Int(rows) + "; row += stride) {\n";
  b += "    idx_t base = 0;\n" + decompose(false, "row", "base");
  for (int k = 0; k < n; ++k) {
    b += "    " + CType(types[k]) + " acc" + std::to_string(k) + " = ((const " + CType(types[k]) + "*)a.p[" +
         std::to_string(n + k) + "])[0];\n";
  }
  b += "    for (idx_t k = 0; k < " + Int(len) + "; ++k) {\n      idx_t i = base;\n" + decompose(true, "k", "i");
  std::string call = "      comb(";
  for (int k = 0; k < n; ++k) call += StrCat("acc", k) + ", ";
  for (int k = 0; k < n; ++k) call += "((const " + CType(types[k]) + "*)a.p[" + std::to_string(k) + "])[i], ";
  for (int k = 0; k < n; ++k) {
    b += "      " + CType(types[k]) + " r" + std::to_string(k) + ";\n";
    call += StrCat("r", k) + (k + 1 < n ? ", " : ");\n");
  }
  b += call;
  for (int k = 0; k < n; ++k) b += "      acc" + std::to_string(k) + " = r" + std::to_string(k) + ";\n";
  b += "    }\n";
  for (int k = 0; k < n; ++k) {
    b += "    ((" + CType(types[k]) + "*)a.p[" + std::to_string(2 * n + k) + "])[row] = acc" + std::to_string(k) + ";\n";
  }
  b += "  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(rows);
  return codegen::Finish("reduce_generic", std::move(b), launch, 3 * n, "reduce_general");
}

// A prefix-scan reduce-window (kernels::PrefixScanDim: JAX's cumsum, cumprod, cummax, ...) of n
// operands along a dim of `len` elements, `inner` apart; out dims == in dims. Rows (the other
// dims) are independent scans.
// - Many rows or short ones: one thread per row folds it in order from the init, writing each
//   prefix (the CPU's combines in the CPU's order: bit-identical), in linear time where walking
//   each window is quadratic. Adjacent threads take adjacent rows (coalesced when inner > 1).
// - Few long rows (fewer than kScanRowsForThreads, at least kScanLenForBlocks elements): one block
//   per row, reassociated as XLA's GPU backend does a scan (reduce-window's reducer is
//   associative by XLA's semantics; floats round differently from the CPU's fold, within
//   tolerance; integers, max / min and argmax-like selections are exact). Each of 256 threads
//   folds a contiguous chunk, warp 0 turns the chunk totals into exclusive prefixes (8 per lane,
//   then the 32 lane totals from the init on lane 0), and each thread refolds its chunk from its
//   prefix, writing the results. Only associativity is used: the init joins once, in front.
constexpr int64_t kScanRowsForThreads = 32768;  // ~256 threads on each of an H200's 132 SMs
constexpr int64_t kScanLenForBlocks = 512;

StatusOr<GeneratedKernel> PrefixScanWindow(const Instruction& inst, const std::vector<DType>& types,
                                           const std::string& comb, bool widened, int scan_dim) {
  const int n = static_cast<int>(types.size());
  const Shape& in = inst.operand(0)->shape();
  int64_t inner = 1;
  for (int d = scan_dim + 1; d < in.rank(); ++d) inner *= in.dim(d);
  const int64_t len = in.dim(scan_dim);
  const int64_t rows = len == 0 ? 0 : in.num_elements() / len;
  const Operands ops(types, AccumulatorTypes(types, widened));
  const std::string row_base = "(row / " + Int(inner) + ") * " + Int(len * inner) + " + row % " + Int(inner);
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(3 * n) + "> a) {\n  typedef long long idx_t;\n  " + comb + "\n";
  LaunchDims launch;
  std::string strategy;
  if (rows >= kScanRowsForThreads || len < kScanLenForBlocks) {
    b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
    b += "  for (idx_t row = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); row < " + Int(rows) +
         "; row += stride) {\n";
    b += "    idx_t p = " + row_base + ";\n";
    b += "    " + ops.Declare("acc", ops.Init()) + "\n";
    b += "    for (idx_t j = 0; j < " + Int(len) + "; ++j, p += " + Int(inner) + ") {\n";
    b += "      " + ops.Fold("acc", ops.Input("p")) + "\n      " + ops.Store(ops.Result("p"), Operands::Named("acc")) +
         "\n    }\n  }\n}\n";
    launch.grid = codegen::GridFor(rows);
    strategy = "reduce_window_scan_thread_per_row";
  } else {
    int64_t used = 0;
    b += ops.ChunkPrologue(len, &used);
    const Operands::Term acc = Operands::Named("acc"), run = Operands::Named("run");
    b += "  for (idx_t row = (idx_t)blockIdx.x; row < " + Int(rows) + "; row += (idx_t)gridDim.x) {\n";
    b += "    const idx_t base = " + row_base + ";\n";
    // Each thread's chunk total, without the init.
    b += "    if (t < " + Int(used) + ") {\n";
    b += "      " + ops.Declare("acc", ops.Input("base + lo * " + Int(inner))) + "\n";
    b += "      for (idx_t j = lo + 1; j < hi; ++j) " + ops.Fold("acc", ops.Input("base + j * " + Int(inner))) + "\n";
    b += "      " + ops.Assign(Operands::Indexed("tot", "t"), acc) + "\n    }\n    __syncthreads();\n";
    // Lane totals; lane 0 rewrites them as exclusive prefixes from the init; each lane rewrites
    // its 8 chunk totals as exclusive prefixes from its own.
    b += ops.LaneTotals(used);
    b += "      if (t == 0) {\n        " + ops.Declare("run", ops.Init()) + "\n";
    b += "        for (int l = 0; l * 8 < " + Int(used) + "; ++l) {\n";
    b += "          " + ops.Declare("c", Operands::Indexed("lane", "l")) + ops.Assign(Operands::Indexed("lane", "l"), run) +
         "\n          " + ops.Fold("run", Operands::Named("c")) + "\n        }\n      }\n      __syncwarp();\n";
    b += "      if (first < last) {\n        " + ops.Declare("run", Operands::Indexed("lane", "t")) + "\n";
    b += "        for (int c = first; c < last; ++c) {\n";
    b += "          " + ops.Declare("x", Operands::Indexed("tot", "c")) + ops.Assign(Operands::Indexed("tot", "c"), run) +
         "\n          " + ops.Fold("run", Operands::Named("x")) + "\n        }\n      }\n    }\n    __syncthreads();\n";
    // Each chunk again from its prefix, writing every result.
    b += "    if (t < " + Int(used) + ") {\n      " + ops.Declare("acc", Operands::Indexed("tot", "t")) + "\n";
    b += "      for (idx_t j = lo; j < hi; ++j) {\n        const idx_t p = base + j * " + Int(inner) + ";\n";
    b += "        " + ops.Fold("acc", ops.Input("p")) + "\n        " + ops.Store(ops.Result("p"), acc) +
         "\n      }\n    }\n";
    b += "    __syncthreads();\n  }\n}\n";
    launch.grid = std::min<int64_t>(rows, codegen::kMaxGrid);
    strategy = "reduce_window_scan_block_per_row";
  }
  return codegen::Finish("reduce_window_scan", std::move(b), launch, 3 * n, strategy);
}

// reduce-window of n operands with any reducer (the reducer computation inlined): one thread
// per output element walks its window in row-major order from the init values, in the element
// types (f32 for a bf16 / f16 sum or product: WidenedCombiner), skipping padding and dilation
// holes, as the CPU does (bit-identical; the CPU folds a suffix-scan window, a reverse cumsum,
// from its end instead, so float sums there agree within rounding). Naive: no reuse of
// overlapping windows. Pointers: n inputs, n inits, n results.
StatusOr<GeneratedKernel> ReduceWindow(const Instruction& inst) {
  const int n = inst.operand_count() / 2;
  const Shape& in = inst.operand(0)->shape();
  const Window window_attr = inst.attrs().window.value_or(Window{});  // rank 0: may be omitted
  if (static_cast<int>(window_attr.dims.size()) != in.rank()) {
    return InvalidArgument("reduce-window '", inst.name(), "' needs one window dim per operand dim");
  }
  std::vector<DType> types;
  for (int k = 0; k < n; ++k) {
    const Shape& s = inst.operand(k)->shape();
    if (!s.IsArray() || s.dims() != in.dims()) {
      return InvalidArgument("'", inst.name(), "': reduce-window operands must be arrays of one shape");
    }
    XS_RETURN_IF_ERROR(codegen::RequireDType(inst, s.dtype()));
    types.push_back(s.dtype());
  }
  const Shape& out = n == 1 && inst.shape().IsArray() ? inst.shape() : inst.shape().tuple_shapes()[0];
  const std::optional<std::string> widened = WidenedCombiner(inst, types);
  std::string comb;
  if (widened) {
    comb = *widened;
  } else {
    XS_ASSIGN_OR_RETURN(comb, CombinerLambda(inst, types));
  }
  if (const std::optional<int> scan = kernels::PrefixScanDim(in.dims(), window_attr); scan && out.dims() == in.dims()) {
    return PrefixScanWindow(inst, types, comb, widened.has_value(), *scan);
  }
  const Operands ops(types, AccumulatorTypes(types, widened.has_value()));
  const std::vector<WindowDim>& w = window_attr.dims;
  std::vector<int64_t> is(in.rank(), 1);
  for (int d = in.rank() - 2; d >= 0; --d) is[d] = is[d + 1] * in.dim(d + 1);
  int64_t window = 1;
  for (const WindowDim& wd : w) window *= wd.size;
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(3 * n) + "> a) {\n  typedef long long idx_t;\n  " + comb + "\n";
  b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  b += "  for (idx_t i = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); i < " + Int(out.num_elements()) + "; i += stride) {\n";
  b += "    idx_t q = i;\n";
  for (int d = out.rank() - 1; d >= 0; --d) {
    b += "    const idx_t o" + std::to_string(d) + " = q % " + Int(out.dim(d)) + "; q /= " + Int(out.dim(d)) + ";\n";
  }
  b += "    " + ops.Declare("acc", ops.Init()) + "\n";
  b += "    for (idx_t k = 0; k < " + Int(window) + "; ++k) {\n      idx_t r = k, src = 0;\n      bool inside = true;\n";
  for (int d = in.rank() - 1; d >= 0; --d) {
    const WindowDim& wd = w[d];
    const std::string o = StrCat("o", d);
    b += "      { const idx_t wk = r % " + Int(wd.size) + "; r /= " + Int(wd.size) + ";\n";
    b += "        idx_t pos = " + o + " * " + Int(wd.stride) + " + wk * " + Int(wd.rhs_dilation) + " - " + Int(wd.pad_low) + ";\n";
    if (wd.lhs_dilation > 1) {
      b += "        if (pos % " + Int(wd.lhs_dilation) + " != 0) inside = false;\n        pos /= " + Int(wd.lhs_dilation) + ";\n";
    }
    b += "        if (pos < 0 || pos >= " + Int(in.dim(d)) + ") inside = false;\n        src += pos * " + Int(is[d]) + "; }\n";
  }
  b += "      if (inside) " + ops.Fold("acc", ops.Input("src")) + "\n    }\n";
  b += "    " + ops.Store(ops.Result("i"), Operands::Named("acc")) + "\n  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(out.num_elements());
  return codegen::Finish("reduce_window", std::move(b), launch, 3 * n, "reduce_window");
}

}  // namespace

StatusOr<GeneratedKernel> GenerateReduceKernel(const Instruction& inst) {
  if (inst.opcode() == Opcode::kReduceWindow) return ReduceWindow(inst);
  if (inst.opcode() == Opcode::kReduce) {
    const bool typed = OneOperand(inst).ok() && codegen::TypedCombiner(inst).ok() &&
                       inst.shape().dtype() == inst.operand(0)->shape().dtype();
    if (!typed) return GenericReduce(inst);
  }
  XS_RETURN_IF_ERROR(OneOperand(inst));
  const Shape& in = inst.operand(0)->shape();
  XS_RETURN_IF_ERROR(codegen::RequireDType(inst, in.dtype()));
  if (inst.shape().dtype() != in.dtype() || inst.operand(1)->shape().dtype() != in.dtype()) {
    return InvalidArgument("'", inst.name(), "': operand, init and result types differ");
  }
  XS_ASSIGN_OR_RETURN(kernels::CombineKind combine, codegen::TypedCombiner(inst));
  codegen::ElemSpec spec;
  spec.loads = {{0, in.dtype()}};
  spec.reduced = in.dtype();
  spec.lambda = "auto elem = [&](idx_t, const " + CType(in.dtype()) + " x, " + CType(in.dtype()) + "& r) { r = x; };";
  std::vector<bool> reduced(in.rank(), false);
  for (int64_t d : inst.dimensions()) reduced[d] = true;
  return codegen::EmitReduce("reduce", spec, in.dims(), reduced, combine, 1, 2, in.dtype(), 3);
}

namespace {

// The generators of their own files (GenerateRandomKernels ...) for `inst`, or null.
using OpKernelsFn = StatusOr<std::vector<GeneratedKernel>> (*)(const Instruction&);
OpKernelsFn SpecialGenerator(const Instruction& inst) {
  const std::string target = inst.opcode() == Opcode::kCustomCall ? inst.attrs().custom_call_target.value_or("") : "";
  switch (inst.opcode()) {
    case Opcode::kRng: case Opcode::kRngBitGenerator: case Opcode::kRngGetAndUpdateState:
      return &GenerateRandomKernels;
    case Opcode::kCholesky: case Opcode::kTriangularSolve:
      return &GenerateLinalgKernels;
    case Opcode::kRaggedDot:
      return &GenerateRaggedDotKernels;
    case Opcode::kBatchNormTraining: case Opcode::kBatchNormInference: case Opcode::kBatchNormGrad:
      return &GenerateBatchNormKernels;
    case Opcode::kScan: case Opcode::kMap: case Opcode::kReducePrecision:
      return &GenerateScanKernels;
    case Opcode::kFft:
      return &GenerateFftKernels;
    case Opcode::kCustomCall:
      if (target.rfind("lapack_", 0) == 0) return &GenerateLinalgKernels;
      if (target == "__op$block_scaled_dot") return &GenerateRaggedDotKernels;
      if (target.rfind("_SPMDInternalOp_", 0) == 0) return &GenerateSpmdInternalKernels;
      return nullptr;
    default:
      return nullptr;
  }
}

}  // namespace

StatusOr<GeneratedKernel> GenerateOpKernel(const Instruction& inst) {
  const Opcode op = inst.opcode();
  if (op == Opcode::kReduce || op == Opcode::kReduceWindow) return GenerateReduceKernel(inst);
  if (op == Opcode::kBitcastConvert && inst.shape().IsArray() && inst.operand(0)->shape().IsArray() &&
      DTypeSize(inst.shape().dtype()) != DTypeSize(inst.operand(0)->shape().dtype())) {
    // Sizes differ (the shapes gain or lose a minor dim): the bytes are the same, in order.
    if (inst.shape().byte_size() != inst.operand(0)->shape().byte_size()) {
      return InvalidArgument("bitcast-convert '", inst.name(), "' changes the byte size");
    }
    codegen::ElemSpec spec;
    spec.loads = {{0, DType::kU8}};
    spec.stores = {{1, DType::kU8}};
    spec.lambda = "auto elem = [&](idx_t, const unsigned char x, unsigned char& y) { y = x; };";
    return codegen::EmitElementwise("bitcast_convert", spec, inst.shape().byte_size(), 2);
  }
  if (IsCodegenElementwise(op)) return GenerateElementwiseKernel(inst);
  if (op == Opcode::kGather) return GenerateGatherKernel(inst);
  if (op == Opcode::kConvolution) return GenerateConvolutionKernel(inst);
  if (op == Opcode::kDot) return GenerateDotKernel(inst);
  if (op == Opcode::kSort || op == Opcode::kTopK ||
      (op == Opcode::kCustomCall && inst.attrs().custom_call_target == "TopK")) {
    return GenerateSortKernel(inst);
  }
  if (op == Opcode::kScatter || op == Opcode::kSelectAndScatter || SpecialGenerator(inst) != nullptr) {
    XS_ASSIGN_OR_RETURN(std::vector<GeneratedKernel> ks, GenerateOpKernels(inst, /*in_place=*/false));
    if (ks.size() != 1) {
      return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(op), ") runs ", ks.size(), " kernels (GenerateOpKernels)");
    }
    return std::move(ks[0]);
  }
  return GenerateShapeKernel(inst);
}

StatusOr<std::vector<GeneratedKernel>> GenerateOpKernels(const Instruction& inst, bool in_place) {
  if (OpKernelsFn special = SpecialGenerator(inst)) return special(inst);
  if (inst.opcode() == Opcode::kScatter) return GenerateScatterKernels(inst, in_place);
  if (inst.opcode() == Opcode::kSelectAndScatter) return GenerateSelectAndScatterKernels(inst);
  if (in_place && inst.opcode() == Opcode::kDynamicUpdateSlice) {
    XS_ASSIGN_OR_RETURN(GeneratedKernel k, GenerateDynamicUpdateSliceInPlace(inst));
    return std::vector<GeneratedKernel>{std::move(k)};
  }
  XS_ASSIGN_OR_RETURN(GeneratedKernel k, GenerateOpKernel(inst));
  return std::vector<GeneratedKernel>{std::move(k)};
}

KernelSource CombineKernels(std::span<const GeneratedKernel> kernels) {
  KernelSource src;
  src.code = codegen::Prelude() + "template <int N> struct xs_args { void* p[N]; };\n";
  std::set<std::string> seen;
  for (const GeneratedKernel& k : kernels) {
    if (!seen.insert(k.source.name).second) continue;
    if (src.name.empty()) src.name = k.source.name;
    src.code += k.body;
  }
  if (seen.size() > 1) src.name += "_and_" + std::to_string(seen.size() - 1) + "_more";
  return src;
}

bool IsCodegenElementwise(Opcode op) {
  switch (op) {
    case Opcode::kAbs: case Opcode::kNegate: case Opcode::kExp: case Opcode::kLog:
    case Opcode::kSqrt: case Opcode::kRsqrt: case Opcode::kTanh: case Opcode::kSin:
    case Opcode::kCos: case Opcode::kTan: case Opcode::kLogistic: case Opcode::kExpm1:
    case Opcode::kLog1p: case Opcode::kCbrt: case Opcode::kErf: case Opcode::kCeil:
    case Opcode::kFloor: case Opcode::kRoundNearestAfz: case Opcode::kRoundNearestEven:
    case Opcode::kAtan: case Opcode::kAcos: case Opcode::kAsin: case Opcode::kAcosh:
    case Opcode::kAsinh: case Opcode::kAtanh: case Opcode::kCosh: case Opcode::kSinh:
    case Opcode::kSign: case Opcode::kIsFinite: case Opcode::kNot:
    case Opcode::kPopulationCount: case Opcode::kClz: case Opcode::kReal: case Opcode::kImag:
    case Opcode::kAdd: case Opcode::kSubtract: case Opcode::kMultiply: case Opcode::kDivide:
    case Opcode::kRemainder: case Opcode::kMaximum: case Opcode::kMinimum: case Opcode::kPower:
    case Opcode::kAtan2: case Opcode::kAnd: case Opcode::kOr: case Opcode::kXor:
    case Opcode::kShiftLeft: case Opcode::kShiftRightArithmetic: case Opcode::kMulhi:
    case Opcode::kShiftRightLogical: case Opcode::kCompare: case Opcode::kConvert:
    case Opcode::kSelect: case Opcode::kClamp: case Opcode::kBitcastConvert: case Opcode::kComplex:
      return true;
    default:
      return false;
  }
}

}  // namespace xs::cuda
