// gather and scatter as generated kernels with the CPU executor's semantics (kernels/gather_scatter.h,
// XLA's): operand / indices batching dims, an implicit trailing index vector dim, gather starts
// clamped so the slice fits, scatter update windows that do not fit skipped whole.
#include <algorithm>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

using codegen::CType;
using codegen::Int;

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * dims[d + 1];
  return s;
}

// `((const T*)a.p[p])` (or without const).
std::string Ptr(int p, DType t, bool writable = false) {
  return "((" + std::string(writable ? "" : "const ") + codegen::ElemCType(t) + "*)a.p[" + std::to_string(p) + "])";
}

// Operand dims that are neither collapsed (inserted) nor batching: the window's dims, in order.
std::vector<int64_t> WindowDims(int rank, const std::vector<int64_t>& collapsed, const std::vector<int64_t>& batching) {
  std::vector<int64_t> w;
  for (int d = 0; d < rank; ++d) {
    if (!Contains(collapsed, d) && !Contains(batching, d)) w.push_back(d);
  }
  return w;
}

// Where a window's operand start comes from (the CPU's StartIndex): the index vector of the
// window's batch index through `index_map`, and batching dims from the batch index itself.
struct StartSpec {
  int indices_ptr = 0;
  DType indices_type = DType::kS32;
  std::vector<int64_t> indices_dims;
  int64_t ivd = 0;
  std::vector<int64_t> index_map, operand_batching, indices_batching;
  int operand_rank = 0;
};

// The indices' dims other than index_vector_dim (the batch dims), in order.
std::vector<int64_t> BatchDims(const StartSpec& s) {
  std::vector<int64_t> b;
  for (int64_t d = 0; d < static_cast<int64_t>(s.indices_dims.size()); ++d) {
    if (d != s.ivd) b.push_back(s.indices_dims[d]);
  }
  return b;
}

Status CheckStart(const Instruction& inst, const StartSpec& s) {
  const int64_t ir = static_cast<int64_t>(s.indices_dims.size());
  if (!IsInteger(s.indices_type)) {
    return InvalidArgument("'", inst.name(), "': indices must have an integer type, got ", DTypeName(s.indices_type));
  }
  if (s.ivd < 0 || s.ivd > ir) {
    return InvalidArgument("'", inst.name(), "': index_vector_dim=", s.ivd, " is out of range for indices of rank ", ir);
  }
  for (int64_t d : s.index_map) {
    if (d < 0 || d >= s.operand_rank) return InvalidArgument("'", inst.name(), "': start index map entry ", d, " is not an operand dim");
  }
  if (s.operand_batching.size() != s.indices_batching.size()) {
    return InvalidArgument("'", inst.name(), "': operand and indices batching dims differ in number");
  }
  for (size_t i = 0; i < s.operand_batching.size(); ++i) {
    if (s.operand_batching[i] < 0 || s.operand_batching[i] >= s.operand_rank || s.indices_batching[i] < 0 ||
        s.indices_batching[i] >= ir || s.indices_batching[i] == s.ivd) {
      return InvalidArgument("'", inst.name(), "': batching dims ", s.operand_batching[i], " / ", s.indices_batching[i],
                             " are out of range");
    }
  }
  return OkStatus();
}

// Statements declaring `long long s<d>` for every operand dim d (0 where nothing sets it) for the
// batch index whose j-th coordinate is `b[j]`; `set[d]` says which dims an index or a batching
// dim sets (the others stay 0).
std::string StartCode(const StartSpec& s, const std::vector<std::string>& b, std::vector<bool>& set) {
  const std::vector<int64_t> is = Strides(s.indices_dims);
  const int64_t ir = static_cast<int64_t>(s.indices_dims.size());
  std::string base = "0";
  for (int64_t d = 0, j = 0; d < ir; ++d) {
    if (d != s.ivd) base += " + " + b[j++] + " * " + Int(is[d]);
  }
  const int64_t vsize = s.ivd < ir ? s.indices_dims[s.ivd] : 1, vstride = s.ivd < ir ? is[s.ivd] : 0;
  std::string code = "    const idx_t ib = " + base + ";\n";
  set.assign(s.operand_rank, false);
  for (int d = 0; d < s.operand_rank; ++d) code += "    long long s" + std::to_string(d) + " = 0;\n";
  for (int64_t k = 0; k < static_cast<int64_t>(s.index_map.size()) && k < vsize; ++k) {
    code += "    s" + std::to_string(s.index_map[k]) + " = (long long)" + Ptr(s.indices_ptr, s.indices_type) + "[ib + " +
            Int(k * vstride) + "];\n";
    set[s.index_map[k]] = true;
  }
  for (size_t i = 0; i < s.operand_batching.size(); ++i) {
    const int64_t pos = s.indices_batching[i] > s.ivd ? s.indices_batching[i] - 1 : s.indices_batching[i];
    code += "    s" + std::to_string(s.operand_batching[i]) + " = (long long)" + b[pos] + ";\n";
    set[s.operand_batching[i]] = true;
  }
  return code;
}

std::string Header(int num_pointers, int64_t largest) {
  return "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
         std::to_string(num_pointers) + "> a) {\n  typedef " + codegen::IndexType(largest) + " idx_t;\n";
}

// The CUDA atomic doing `kind` on storage type t in one instruction, as "function|word type";
// empty when there is none (then a compare-and-swap loop or the serial kernel).
std::string NativeAtomic(kernels::CombineKind kind, DType t) {
  const bool s32 = t == DType::kS32, u32 = t == DType::kU32, s64 = t == DType::kS64, u64 = t == DType::kU64;
  const std::string w = s32 ? "int" : u32 ? "unsigned" : (s64 || u64) ? "unsigned long long" : "";
  switch (kind) {
    case kernels::CombineKind::kAdd:
      if (t == DType::kF32 || t == DType::kF64) return "atomicAdd|" + CType(t);
      return w.empty() ? "" : "atomicAdd|" + w;
    case kernels::CombineKind::kMaximum: case kernels::CombineKind::kMinimum:
      if (w.empty()) return "";
      return std::string(kind == kernels::CombineKind::kMaximum ? "atomicMax|" : "atomicMin|") + (s64 ? "long long" : w);
    case kernels::CombineKind::kAnd: return w.empty() ? "" : "atomicAnd|" + w;
    case kernels::CombineKind::kOr: return w.empty() ? "" : "atomicOr|" + w;
    default: return "";
  }
}

}  // namespace

StatusOr<GeneratedKernel> GenerateGatherKernel(const Instruction& inst) {
  if (!inst.attrs().gather || !inst.attrs().slice_sizes || inst.operand_count() != 2) {
    return InvalidArgument("gather '", inst.name(), "' needs an operand, indices, dimension numbers and slice_sizes");
  }
  if (!inst.shape().IsArray()) return Unimplemented("cuda: '", inst.name(), "' has a tuple result");
  const Shape& op = inst.operand(0)->shape();
  const Shape& out = inst.shape();
  XS_RETURN_IF_ERROR(codegen::RequireMovable(inst, op.dtype()));  // gather only moves elements
  if (out.dtype() != op.dtype()) return InvalidArgument("gather '", inst.name(), "': result and operand types differ");
  const GatherDimensionNumbers& dn = *inst.attrs().gather;
  const std::vector<int64_t>& slice = *inst.attrs().slice_sizes;
  const int rank = op.rank();
  if (static_cast<int>(slice.size()) != rank) {
    return InvalidArgument("gather '", inst.name(), "': slice_sizes has ", slice.size(), " entries for operand rank ", rank);
  }
  for (int d = 0; d < rank; ++d) {
    if (slice[d] < 0 || slice[d] > op.dim(d)) {
      return InvalidArgument("gather '", inst.name(), "': slice size ", slice[d], " does not fit operand dim ", d);
    }
  }
  StartSpec ss{1, inst.operand(1)->shape().dtype(), inst.operand(1)->shape().dims(), dn.index_vector_dim, dn.start_index_map,
               dn.operand_batching_dims, dn.start_indices_batching_dims, rank};
  XS_RETURN_IF_ERROR(CheckStart(inst, ss));
  const std::vector<int64_t> window = WindowDims(rank, dn.collapsed_slice_dims, dn.operand_batching_dims);
  const std::vector<int64_t> batch = BatchDims(ss);
  if (window.size() != dn.offset_dims.size() || out.rank() != static_cast<int>(batch.size() + window.size())) {
    return InvalidArgument("gather '", inst.name(), "': offset_dims, collapsed and batching dims do not match the result rank");
  }
  // Result dim i: the k-th offset dim (in increasing order) walks operand dim window[k]; the
  // others are the indices' batch dims in order.
  std::vector<std::string> b;
  std::vector<int> offset_of(rank, -1);  // operand dim -> result dim
  for (int i = 0, k = 0; i < out.rank(); ++i) {
    const std::string o = "o" + std::to_string(i);
    if (Contains(dn.offset_dims, i)) {
      if (out.dim(i) != slice[window[k]]) return InvalidArgument("gather '", inst.name(), "': result dim ", i, " is not its slice size");
      offset_of[window[k++]] = i;
    } else {
      if (b.size() >= batch.size() || out.dim(i) != batch[b.size()]) return InvalidArgument("gather '", inst.name(), "': result dim ", i, " is not its batch size");
      b.push_back(o);
    }
  }
  std::vector<bool> set;
  const std::string starts = StartCode(ss, b, set);
  const std::vector<int64_t> os = Strides(op.dims());
  const int64_t n = out.num_elements();
  std::string body = Header(3, std::max({n, op.num_elements(), inst.operand(1)->shape().num_elements()}));
  body += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  body += "  for (idx_t i = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); i < " + Int(n) + "; i += stride) {\n";
  body += "    idx_t q = i;\n";
  for (int d = out.rank() - 1; d >= 0; --d) {
    body += "    const idx_t o" + std::to_string(d) + " = q % " + Int(out.dim(d)) + "; q /= " + Int(out.dim(d)) + ";\n";
  }
  body += starts;
  std::string src = "0";
  for (int d = 0; d < rank; ++d) {
    const std::string s = "s" + std::to_string(d);
    if (set[d]) {  // clamped to [0, dim - slice] as XLA does
      const std::string lim = Int(op.dim(d) - slice[d]);
      body += "    " + s + " = " + s + " < 0 ? 0 : " + s + " > " + lim + " ? " + lim + " : " + s + ";\n";
    }
    std::string term = set[d] ? "(idx_t)" + s : "";
    if (offset_of[d] >= 0) term += (term.empty() ? "o" : " + o") + std::to_string(offset_of[d]);
    if (!term.empty() && op.dim(d) > 1) src += " + (" + term + ") * " + Int(os[d]);
  }
  body += "    " + Ptr(2, out.dtype(), true) + "[i] = " + Ptr(0, op.dtype()) + "[" + src + "];\n  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(n);
  return codegen::Finish("gather", std::move(body), launch, 3, "gather");
}

StatusOr<std::vector<GeneratedKernel>> GenerateScatterKernels(const Instruction& inst, bool in_place) {
  const int count = inst.operand_count();
  if (!inst.attrs().scatter || count < 3 || count % 2 == 0 || inst.to_apply() == nullptr) {
    return InvalidArgument("scatter '", inst.name(), "' needs N operands, indices, N updates, dimension numbers and to_apply");
  }
  const int n = (count - 1) / 2;
  const Shape& op0 = inst.operand(0)->shape();
  const Shape& up0 = inst.operand(n + 1)->shape();
  if (!op0.IsArray() || !up0.IsArray()) return Unimplemented("cuda: scatter '", inst.name(), "' has tuple operands");
  std::vector<DType> types;
  for (int k = 0; k < n; ++k) {
    const Shape& o = inst.operand(k)->shape();
    const Shape& u = inst.operand(n + 1 + k)->shape();
    const Shape* r = n == 1 ? &inst.shape() : (inst.shape().IsTuple() && static_cast<int>(inst.shape().tuple_shapes().size()) == n
                                                   ? &inst.shape().tuple_shapes()[k] : nullptr);
    if (!o.IsArray() || !u.IsArray() || r == nullptr || !r->IsArray() || o.dims() != op0.dims() || u.dims() != up0.dims() ||
        u.dtype() != o.dtype() || r->dtype() != o.dtype() || r->dims() != o.dims()) {
      return InvalidArgument("scatter '", inst.name(), "': operand ", k, ", its updates and its result must agree in type and shape");
    }
    XS_RETURN_IF_ERROR(codegen::RequireDType(inst, o.dtype()));
    types.push_back(o.dtype());
  }
  const ScatterDimensionNumbers& dn = *inst.attrs().scatter;
  const int rank = op0.rank();
  StartSpec ss{n, inst.operand(n)->shape().dtype(), inst.operand(n)->shape().dims(), dn.index_vector_dim,
               dn.scatter_dims_to_operand_dims, dn.input_batching_dims, dn.scatter_indices_batching_dims, rank};
  XS_RETURN_IF_ERROR(CheckStart(inst, ss));
  const std::vector<int64_t> window = WindowDims(rank, dn.inserted_window_dims, dn.input_batching_dims);
  const std::vector<int64_t> batch = BatchDims(ss);
  const std::vector<int64_t>& uwd = dn.update_window_dims;
  std::vector<int64_t> scatter_pos, win_sizes;
  for (int d = 0; d < up0.rank(); ++d) {
    if (!Contains(uwd, d)) scatter_pos.push_back(d);
  }
  bool ok = window.size() == uwd.size() && scatter_pos.size() == batch.size();
  for (size_t j = 0; ok && j < uwd.size(); ++j) {
    ok = uwd[j] >= 0 && uwd[j] < up0.rank() && up0.dim(static_cast<int>(uwd[j])) <= op0.dim(static_cast<int>(window[j]));
    if (ok) win_sizes.push_back(up0.dim(static_cast<int>(uwd[j])));
  }
  for (size_t j = 0; ok && j < batch.size(); ++j) ok = up0.dim(static_cast<int>(scatter_pos[j])) == batch[j];
  if (!ok) return InvalidArgument("scatter '", inst.name(), "': update_window_dims, the indices and the updates do not agree");
  // Which window element each thread combines: element t of the CPU's walk is window element
  // t % W (row-major over update_window_dims) of batch index t / W (row-major).
  std::vector<std::string> b;
  for (size_t j = 0; j < batch.size(); ++j) b.push_back("b" + std::to_string(j));
  std::vector<bool> set;
  const std::string starts = StartCode(ss, b, set);
  int64_t win_total = 1;
  for (int64_t w : win_sizes) win_total *= w;
  const int64_t total = up0.num_elements();
  const int64_t batches = win_total == 0 ? 0 : total / win_total;
  // Windows of two batch indices meet only at equal window offsets when no index moves a window
  // dim (one the window spans whole can only start at 0): then a thread per window offset,
  // walking the batch indices in order, combines in the CPU's order without atomics.
  bool disjoint = true;
  for (size_t j = 0; j < window.size(); ++j) {
    if (set[window[j]] && win_sizes[j] != op0.dim(static_cast<int>(window[j]))) disjoint = false;
  }
  const bool wide = disjoint && win_total >= 32;
  const Computation& comb = *inst.to_apply();
  const kernels::CombineKind kind = n == 1 ? ClassifyCombiner(comb, /*allow_overwrite=*/true) : kernels::CombineKind::kGeneric;
  const int64_t esize = DTypeSize(types[0]);
  const bool cas_size = n == 1 && (esize == 2 || esize == 4 || esize == 8);
  const std::string atomic = n == 1 ? NativeAtomic(kind, types[0]) : "";
  // Whether another order than the CPU's keeps results close: not for 16-bit float sums and
  // products, rounded to 8 or 11 bits every step (f32 / f64 adds: atomics, as XLA's GPU backend).
  const bool any_order = !(types[0] == DType::kF16 || types[0] == DType::kBF16) ||
                         (kind != kernels::CombineKind::kAdd && kind != kernels::CombineKind::kMultiply);
  std::string strategy;
  if (inst.attrs().unique_indices) {
    strategy = "scatter_unique";  // every thread reads, combines and writes its own element
  } else if (kind == kernels::CombineKind::kOverwrite) {
    // Plain stores: of duplicate indices one wins (unordered, as in XLA) unless ordered windows.
    strategy = wide ? "scatter_ordered_windows" : "scatter_overwrite";
  } else if (!atomic.empty() && any_order) {
    strategy = "scatter_atomic";
  } else if (cas_size && kind != kernels::CombineKind::kGeneric && any_order) {
    strategy = "scatter_atomic_cas";
  } else if (wide) {
    strategy = "scatter_ordered_windows";
  } else if (cas_size) {
    strategy = "scatter_atomic_cas";
  } else {
    // pred / 8-bit, or several operands, over small or overlapping windows.
    strategy = disjoint && win_total > 1 ? "scatter_ordered_windows" : "scatter_serial";
  }
  std::string lambda;
  if (strategy == "scatter_overwrite" || strategy == "scatter_atomic") {
    // A store or one atomic: no combiner call.
  } else if (kind != kernels::CombineKind::kGeneric) {
    // A typed combiner (add ... or, overwrite) computes in the operand's type, as the CPU's typed
    // path does, whatever scalar type its computation declares.
    const DType t = types[0];
    std::string e = "a1";
    if (kind != kernels::CombineKind::kOverwrite) {
      XS_ASSIGN_OR_RETURN(e, codegen::CombineExpr(kind, t, codegen::ToCompute(t, "a0"), codegen::ToCompute(t, "a1")));
      e = codegen::FromCompute(t, e);
    }
    lambda = "  auto comb = [&](const " + CType(t) + " a0, const " + CType(t) + " a1, " + CType(t) + "& r0) { r0 = " + e + "; };\n";
  } else {
    std::vector<DType> params = types;
    params.insert(params.end(), types.begin(), types.end());
    XS_ASSIGN_OR_RETURN(lambda, codegen::ScalarLambda(inst, comb, "comb", params, types));
    lambda = "  " + lambda + "\n";
  }

  std::vector<GeneratedKernel> out;
  const int ptrs = 3 * n + 1;  // operands, indices, updates, results
  if (!in_place) {
    codegen::ElemSpec spec;
    std::string loads, stores, copies;
    for (int k = 0; k < n; ++k) {
      const std::string x = "x" + std::to_string(k), y = "y" + std::to_string(k);
      spec.loads.push_back({k, types[k]});
      spec.stores.push_back({2 * n + 1 + k, types[k]});
      loads += ", const " + CType(types[k]) + " " + x;
      stores += ", " + CType(types[k]) + "& " + y;
      copies += " " + y + " = " + x + ";";
    }
    spec.lambda = "auto elem = [&](idx_t" + loads + stores + ") {" + copies + " };";
    out.push_back(codegen::EmitElementwise("scatter_copy", spec, op0.num_elements(), ptrs));
  }

  const bool ordered = strategy == "scatter_ordered_windows" || strategy == "scatter_serial";
  const int64_t lanes = strategy == "scatter_ordered_windows" ? win_total : 1, per = lanes == 0 ? 0 : win_total / lanes;
  std::string body = Header(ptrs, std::max({total, op0.num_elements(), inst.operand(n)->shape().num_elements()})) + lambda;
  body += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  body += "  const idx_t tid = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x);\n";
  if (ordered) {
    body += "  for (idx_t lane = tid; lane < " + Int(lanes) + "; lane += stride)\n";
    body += "  for (idx_t bb = 0; bb < " + Int(batches) + "; ++bb)\n";
    body += "  for (idx_t wi = 0; wi < " + Int(per) + "; ++wi) {\n";
    body += "    const idx_t t = bb * " + Int(win_total) + " + lane * " + Int(per) + " + wi;\n";
  } else {
    body += "  for (idx_t t = tid; t < " + Int(total) + "; t += stride) {\n";
  }
  body += "    idx_t q = t;\n";
  for (int j = static_cast<int>(win_sizes.size()) - 1; j >= 0; --j) {
    body += "    const idx_t w" + std::to_string(j) + " = q % " + Int(win_sizes[j]) + "; q /= " + Int(win_sizes[j]) + ";\n";
  }
  for (int j = static_cast<int>(batch.size()) - 1; j >= 0; --j) {
    body += "    const idx_t b" + std::to_string(j) + " = q % " + Int(batch[j]) + "; q /= " + Int(batch[j]) + ";\n";
  }
  body += starts;
  const std::vector<int64_t> us = Strides(up0.dims()), os = Strides(op0.dims());
  std::string fits = "true", ui = "0", dst = "0";
  for (size_t j = 0; j < batch.size(); ++j) ui += " + b" + std::to_string(j) + " * " + Int(us[scatter_pos[j]]);
  for (size_t j = 0; j < uwd.size(); ++j) ui += " + w" + std::to_string(j) + " * " + Int(us[uwd[j]]);
  for (int d = 0; d < rank; ++d) {
    const auto it = std::find(window.begin(), window.end(), d);
    const int64_t j = it - window.begin();
    const std::string s = "s" + std::to_string(d);
    std::string term;
    if (set[d]) {  // the whole window must fit, else XLA skips it
      fits += " && " + s + " >= 0 && " + s + " <= " + Int(op0.dim(d) - (it == window.end() ? 1 : win_sizes[j]));
      term = "(idx_t)" + s;
    }
    if (it != window.end()) term += (term.empty() ? "w" : " + w") + std::to_string(j);
    if (!term.empty() && op0.dim(d) > 1) dst += " + (" + term + ") * " + Int(os[d]);
  }
  body += "    if (!(" + fits + ")) continue;\n";
  body += "    const idx_t ui = " + ui + ", dst = " + dst + ";\n";
  auto res = [&](int k) { return Ptr(2 * n + 1 + k, types[k], true) + "[dst]"; };
  auto upd = [&](int k) { return Ptr(n + 1 + k, types[k]) + "[ui]"; };
  const std::string t0 = CType(types[0]);
  if (strategy == "scatter_overwrite") {
    body += "    " + res(0) + " = " + upd(0) + ";\n";
  } else if (strategy == "scatter_atomic") {
    const size_t bar = atomic.find('|');
    const std::string fn = atomic.substr(0, bar), w = atomic.substr(bar + 1);
    body += "    " + fn + "((" + w + "*)&" + res(0) + ", (" + w + ")" + upd(0) + ");\n";
  } else if (strategy == "scatter_atomic_cas") {
    const std::string w = esize == 2 ? "unsigned short" : esize == 4 ? "unsigned int" : "unsigned long long";
    body += "    " + w + "* word = (" + w + "*)&" + res(0) + ";\n    const " + t0 + " u = " + upd(0) + ";\n";
    body += "    " + w + " old = *word, seen;\n    do {\n      seen = old;\n      " + t0 + " v;\n";
    body += "      comb(xs_bitcast<" + t0 + ">(seen), u, v);\n";
    body += "      old = atomicCAS(word, seen, xs_bitcast<" + w + ">(v));\n    } while (old != seen);\n";
  } else {  // unique indices or ordered: read, combine, write
    std::string decl, call = "comb(", store;
    for (int k = 0; k < n; ++k) call += res(k) + ", ";
    for (int k = 0; k < n; ++k) call += upd(k) + ", ";
    for (int k = 0; k < n; ++k) {
      decl += CType(types[k]) + " v" + std::to_string(k) + "; ";
      call += "v" + std::to_string(k) + (k + 1 < n ? ", " : ");");
      store += " " + res(k) + " = v" + std::to_string(k) + ";";
    }
    body += "    { " + decl + call + store + " }\n";
  }
  body += "  }\n}\n";
  LaunchDims launch;
  launch.grid = ordered ? codegen::GridFor(lanes) : codegen::GridFor(total);
  if (strategy == "scatter_serial") launch.block = 1;
  out.push_back(codegen::Finish("scatter", std::move(body), launch, ptrs, strategy));
  return out;
}

}  // namespace xs::cuda
