// Shape ops as generated kernels: each result element computes where it comes from (an index
// map: broadcast, transpose, slice, reverse, pad, concatenate, iota, dynamic-slice and -update-
// slice), a 32x32 shared-memory tile for transposes that swap the two minor blocks of dims, and
// plain vectorized copies for copy / reshape / bitcast. Complex elements move as the prelude's
// 8- / 16-byte structs.
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

using codegen::Int;

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * dims[d + 1];
  return s;
}

std::string O(int d) { return StrCat("o", d); }

// out[i] = <value>: `code` declares `value` (of the result's storage type) from o0..o<r-1>,
// `prologue` runs once per thread. The element's linear index is `i`.
GeneratedKernel IndexMap(const Instruction& inst, const std::string& prologue, const std::string& code,
                         int num_pointers) {
  const Shape& s = inst.shape();
  const int64_t n = s.num_elements();
  int64_t largest = n;
  for (const Instruction* o : inst.operands()) largest = std::max(largest, o->shape().num_elements());
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(num_pointers) + "> a) {\n  typedef " + codegen::IndexType(largest) + " idx_t;\n" + prologue;
  b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  b += "  for (idx_t i = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); i < " + Int(n) + "; i += stride) {\n";
  b += "    idx_t q = i;\n";
  for (int d = s.rank() - 1; d >= 0; --d) {
    b += "    const idx_t " + O(d) + " = q % " + Int(s.dim(d)) + "; q /= " + Int(s.dim(d)) + ";\n";
  }
  b += code + "    ((" + codegen::ElemCType(s.dtype()) + "*)a.p[" + std::to_string(num_pointers - 1) + "])[i] = value;\n  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(n);
  return codegen::Finish(OpcodeName(inst.opcode()), std::move(b), launch, num_pointers, "index_map");
}

std::string Load(const Instruction& inst, int operand, const std::string& index) {
  return "((const " + codegen::ElemCType(inst.operand(operand)->shape().dtype()) + "*)a.p[" + std::to_string(operand) + "])[" + index + "]";
}

std::string Value(const Instruction& inst, const std::string& e) {
  return "    const " + codegen::ElemCType(inst.shape().dtype()) + " value = " + e + ";\n";
}

// Start index d of a dynamic-slice / -update-slice, clamped to [0, limit] as XLA does: one
// scalar operand per dim, or (the older form) element d of one rank-1 operand.
std::string Starts(const Instruction& inst, int first, const std::vector<int64_t>& limits) {
  std::string p;
  const bool array = inst.operand_count() == first + 1 && inst.operand(first)->shape().rank() == 1;
  for (size_t d = 0; d < limits.size(); ++d) {
    const std::string s = StrCat("s", d);
    const std::string load = array ? Load(inst, first, std::to_string(d)) : Load(inst, first + static_cast<int>(d), "0");
    p += "  long long " + s + " = (long long)" + load + ";\n";
    p += "  " + s + " = " + s + " < 0 ? 0 : " + s + " > " + Int(limits[d]) + " ? " + Int(limits[d]) + " : " + s + ";\n";
  }
  return p;
}

Status CheckStarts(const Instruction& inst, int first, int rank) {
  if (inst.operand_count() == first + 1 && inst.operand(first)->shape().rank() == 1) {
    const Shape& s = inst.operand(first)->shape();
    if (s.dim(0) == rank && IsInteger(s.dtype())) return OkStatus();
    return InvalidArgument("'", inst.name(), "': the start index array must be an integer array of ", rank, " elements");
  }
  if (inst.operand_count() != first + rank) {
    return InvalidArgument("'", inst.name(), "' has ", inst.operand_count() - first, " start index operands for rank ", rank);
  }
  for (int k = first; k < inst.operand_count(); ++k) {
    const Shape& s = inst.operand(k)->shape();
    if (s.rank() != 0 || !IsInteger(s.dtype())) {
      return InvalidArgument("'", inst.name(), "': start index operand ", k, " must be an integer scalar");
    }
  }
  return OkStatus();
}

// A transpose that, after dropping unit dims and merging dims that stay adjacent, is
// [B, R, C] -> [B, C, R]: through 32x32 tiles in shared memory (both sides coalesced).
std::optional<GeneratedKernel> TiledTranspose(const Instruction& inst) {
  const Shape& in = inst.operand(0)->shape();
  const std::vector<int64_t>& perm = inst.dimensions();
  std::vector<int64_t> kept;  // input dims in output order, unit dims dropped
  for (int64_t p : perm) {
    if (in.dim(static_cast<int>(p)) != 1) kept.push_back(p);
  }
  // Groups of consecutive output dims that are consecutive input dims.
  std::vector<std::vector<int64_t>> groups;
  for (size_t k = 0; k < kept.size(); ++k) {
    if (k > 0 && kept[k] == kept[k - 1] + 1) {
      groups.back().push_back(kept[k]);
    } else {
      groups.push_back({kept[k]});
    }
  }
  auto size = [&](const std::vector<int64_t>& g) {
    int64_t n = 1;
    for (int64_t d : g) n *= in.dim(static_cast<int>(d));
    return n;
  };
  int64_t batch = 1, rows, cols;
  if (groups.size() == 2 && groups[0][0] > groups[1][0]) {
    rows = size(groups[1]), cols = size(groups[0]);
  } else if (groups.size() == 3 && groups[0][0] < groups[2][0] && groups[2][0] < groups[1][0]) {
    batch = size(groups[0]), rows = size(groups[2]), cols = size(groups[1]);
  } else {
    return std::nullopt;
  }
  if (rows < 8 || cols < 8) return std::nullopt;
  const std::string t = codegen::ElemCType(in.dtype());
  const int64_t tr = (rows + 31) / 32, tc = (cols + 31) / 32, tiles = batch * tr * tc;
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) +
                  "(xs_args<2> a) {\n  typedef " + codegen::IndexType(in.num_elements() + 32 * 32) + " idx_t;\n";
  b += "  __shared__ " + t + " tile[32][33];\n  const " + t + "* in = (const " + t + "*)a.p[0];\n  " + t + "* out = (" + t + "*)a.p[1];\n";
  b += "  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;\n";
  b += "  const idx_t R = " + Int(rows) + ", C = " + Int(cols) + ";\n";
  b += "  for (idx_t t = blockIdx.x; t < " + Int(tiles) + "; t += gridDim.x) {\n";
  b += "    const idx_t b = t / " + Int(tr * tc) + ", r0 = (t / " + Int(tc) + ") % " + Int(tr) + " * 32, c0 = t % " + Int(tc) + " * 32;\n";
  b += "    for (int k = ty; k < 32; k += 8) {\n      const idx_t r = r0 + k, c = c0 + tx;\n";
  b += "      if (r < R && c < C) tile[k][tx] = in[(b * R + r) * C + c];\n    }\n    __syncthreads();\n";
  b += "    for (int k = ty; k < 32; k += 8) {\n      const idx_t c = c0 + k, r = r0 + tx;\n";
  b += "      if (c < C && r < R) out[(b * C + c) * R + r] = tile[tx][k];\n    }\n    __syncthreads();\n  }\n}\n";
  LaunchDims launch;
  launch.grid = std::min<int64_t>(tiles, codegen::kMaxGrid);
  return codegen::Finish("transpose", std::move(b), launch, 2, "transpose_tiled");
}

}  // namespace

StatusOr<GeneratedKernel> GenerateShapeKernel(const Instruction& inst) {
  const Shape& s = inst.shape();
  if (!s.IsArray()) return Unimplemented("cuda: '", inst.name(), "' has a tuple result");
  XS_RETURN_IF_ERROR(codegen::RequireMovable(inst, s.dtype()));
  const int r = s.rank();
  const int ptrs = inst.operand_count() + 1;
  switch (inst.opcode()) {
    case Opcode::kCopy: case Opcode::kReshape: case Opcode::kBitcast: {
      if (inst.operand(0)->shape().byte_size() != s.byte_size() || inst.operand(0)->shape().dtype() != s.dtype()) {
        return Unimplemented("cuda: '", inst.name(), "' changes the element type or size");
      }
      codegen::ElemSpec spec;
      spec.loads = {{0, s.dtype()}};
      spec.stores = {{1, s.dtype()}};
      spec.lambda = "auto elem = [&](idx_t, const " + codegen::ElemCType(s.dtype()) + " x, " + codegen::ElemCType(s.dtype()) + "& y) { y = x; };";
      return codegen::EmitElementwise("copy", spec, s.num_elements(), 2);
    }
    case Opcode::kBroadcast: case Opcode::kTranspose: case Opcode::kSlice: case Opcode::kReverse: {
      const Shape& in = inst.operand(0)->shape();
      const std::vector<int64_t> is = Strides(in.dims());
      std::string src;
      auto add = [&](int in_dim, const std::string& idx) {
        if (in.dim(in_dim) != 1) src += " + (" + idx + ") * " + Int(is[in_dim]);
      };
      if (inst.opcode() == Opcode::kTranspose) {
        if (std::optional<GeneratedKernel> tiled = TiledTranspose(inst)) return *tiled;
        for (int d = 0; d < r; ++d) add(static_cast<int>(inst.dimensions()[d]), O(d));
      } else if (inst.opcode() == Opcode::kBroadcast) {
        for (size_t k = 0; k < inst.dimensions().size(); ++k) add(static_cast<int>(k), O(static_cast<int>(inst.dimensions()[k])));
      } else if (inst.opcode() == Opcode::kSlice) {
        if (!inst.attrs().slice) return InvalidArgument("slice '", inst.name(), "' has no slice=");
        for (int d = 0; d < r; ++d) {
          const SliceDim& sd = (*inst.attrs().slice)[d];
          add(d, Int(sd.start) + " + " + O(d) + " * " + Int(sd.stride));
        }
      } else {
        std::vector<bool> rev(r, false);
        for (int64_t d : inst.dimensions()) rev[d] = true;
        for (int d = 0; d < r; ++d) add(d, rev[d] ? Int(s.dim(d) - 1) + " - " + O(d) : O(d));
      }
      return IndexMap(inst, "", Value(inst, Load(inst, 0, "0" + src)), ptrs);
    }
    case Opcode::kIota: {
      if (!inst.attrs().iota_dimension) return InvalidArgument("iota '", inst.name(), "' has no iota_dimension");
      XS_RETURN_IF_ERROR(codegen::RequireDType(inst, s.dtype()));
      return IndexMap(inst, "", Value(inst, codegen::ConvertExpr(DType::kS64, s.dtype(), "(long long)" + O(static_cast<int>(*inst.attrs().iota_dimension)))), 1);
    }
    case Opcode::kPad: {
      if (!inst.attrs().padding) return InvalidArgument("pad '", inst.name(), "' has no padding=");
      const Shape& in = inst.operand(0)->shape();
      const std::vector<int64_t> is = Strides(in.dims());
      std::string code = "    bool inside = true;\n    idx_t src = 0;\n";
      for (int d = 0; d < r; ++d) {
        const PaddingDim& p = (*inst.attrs().padding)[d];
        const std::string step = Int(p.interior + 1);
        code += "    { const idx_t p = " + O(d) + " - (" + Int(p.low) + ");\n";
        code += "      if (p < 0 || p % " + step + " != 0 || p / " + step + " >= " + Int(in.dim(d)) +
                ") inside = false; else src += p / " + step + " * " + Int(is[d]) + "; }\n";
      }
      return IndexMap(inst, "", code + Value(inst, "inside ? " + Load(inst, 0, "src") + " : " + Load(inst, 1, "0")), ptrs);
    }
    case Opcode::kConcatenate: {
      const int c = static_cast<int>(inst.dimensions()[0]);
      std::string code = "    " + codegen::ElemCType(s.dtype()) + " v;\n";
      int64_t offset = 0;
      for (int k = 0; k < inst.operand_count(); ++k) {
        const Shape& in = inst.operand(k)->shape();
        const std::vector<int64_t> is = Strides(in.dims());
        std::string src = "0";
        for (int d = 0; d < r; ++d) {
          src += " + (" + O(d) + (d == c ? " - " + Int(offset) : "") + ") * " + Int(is[d]);
        }
        offset += in.dim(c);
        code += std::string(k == 0 ? "    " : " else ") + (k + 1 < inst.operand_count() ? "if (" + O(c) + " < " + Int(offset) + ") " : "") +
                "{ v = " + Load(inst, k, src) + "; }";
      }
      return IndexMap(inst, "", code + "\n" + Value(inst, "v"), ptrs);
    }
    case Opcode::kDynamicSlice: {
      const Shape& in = inst.operand(0)->shape();
      XS_RETURN_IF_ERROR(CheckStarts(inst, 1, in.rank()));
      std::vector<int64_t> limits;
      for (int d = 0; d < r; ++d) limits.push_back(in.dim(d) - s.dim(d));
      const std::vector<int64_t> is = Strides(in.dims());
      std::string src = "0";
      for (int d = 0; d < r; ++d) src += " + (s" + std::to_string(d) + " + " + O(d) + ") * " + Int(is[d]);
      return IndexMap(inst, Starts(inst, 1, limits), Value(inst, Load(inst, 0, "(idx_t)(" + src + ")")), ptrs);
    }
    case Opcode::kDynamicUpdateSlice: {
      const Shape& upd = inst.operand(1)->shape();
      XS_RETURN_IF_ERROR(CheckStarts(inst, 2, r));
      std::vector<int64_t> limits;
      for (int d = 0; d < r; ++d) limits.push_back(s.dim(d) - upd.dim(d));
      const std::vector<int64_t> us = Strides(upd.dims());
      std::string inside = "true", src = "0";
      for (int d = 0; d < r; ++d) {
        const std::string sd = StrCat("s", d);
        inside += " && " + O(d) + " >= " + sd + " && " + O(d) + " < " + sd + " + " + Int(upd.dim(d));
        src += " + (" + O(d) + " - " + sd + ") * " + Int(us[d]);
      }
      return IndexMap(inst, Starts(inst, 2, limits),
                      Value(inst, "(" + inside + ") ? " + Load(inst, 1, "(idx_t)(" + src + ")") + " : " + Load(inst, 0, "i")), ptrs);
    }
    default:
      return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), ") has no generated kernel");
  }
}

StatusOr<GeneratedKernel> GenerateDynamicUpdateSliceInPlace(const Instruction& inst) {
  if (inst.opcode() != Opcode::kDynamicUpdateSlice || !inst.shape().IsArray()) {
    return InvalidArgument("'", inst.name(), "' is not a dynamic-update-slice");
  }
  const Shape& s = inst.shape();
  const Shape& upd = inst.operand(1)->shape();
  XS_RETURN_IF_ERROR(codegen::RequireMovable(inst, s.dtype()));
  XS_RETURN_IF_ERROR(CheckStarts(inst, 2, s.rank()));
  std::vector<int64_t> limits;
  for (int d = 0; d < s.rank(); ++d) limits.push_back(s.dim(d) - upd.dim(d));
  const std::vector<int64_t> os = Strides(s.dims());
  const int ptrs = inst.operand_count() + 1;
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(ptrs) + "> a) {\n  typedef " + codegen::IndexType(s.num_elements()) + " idx_t;\n" +
                  Starts(inst, 2, limits);
  b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  b += "  for (idx_t i = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); i < " + Int(upd.num_elements()) + "; i += stride) {\n";
  b += "    idx_t q = i, dst = 0;\n";
  for (int d = s.rank() - 1; d >= 0; --d) {
    b += "    { const idx_t u = q % " + Int(upd.dim(d)) + "; q /= " + Int(upd.dim(d)) + "; dst += (idx_t)(s" +
         std::to_string(d) + " + u) * " + Int(os[d]) + "; }\n";
  }
  b += "    ((" + codegen::ElemCType(s.dtype()) + "*)a.p[" + std::to_string(ptrs - 1) + "])[dst] = " + Load(inst, 1, "i") + ";\n  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(upd.num_elements());
  return codegen::Finish("dus_in_place", std::move(b), launch, ptrs, "dynamic_update_slice_in_place");
}

}  // namespace xs::cuda
