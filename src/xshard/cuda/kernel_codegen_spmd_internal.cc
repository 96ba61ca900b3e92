// Kernels for XLA's _SPMDInternalOp_* custom-calls (RotateRight, MultiRotate, Wrap, MultiSlice,
// MultiPad; semantics and backend_config as exec/executable_spmd_internal.cc). Pure data
// movement: one kernel per instruction, one thread per element of all its results together
// (grid-stride), each working out the operand element it copies (an index map along
// `dimension`; MultiSlice maps every dim, MultiPad writes the pad value outside the operand).
// Elements are moved as unsigned words of their size, so every dtype of 1 to 16 bytes is copied.
#include <map>
#include <string>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/core/shape.h"
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/exec/spmd_internal_config.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

using codegen::Int;

// Kernel parameters are at most 4 KiB: the pointers of the results and the operands.
constexpr int kMaxPointers = 500;

int64_t Mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

// An unsigned word of `bytes` bytes, declared by the kernel as `w_t`.
StatusOr<std::string> WordTypedef(const Instruction& inst, DType t) {
  switch (DTypeSize(t)) {
    case 1: return std::string("  typedef unsigned char w_t;\n");
    case 2: return std::string("  typedef unsigned short w_t;\n");
    case 4: return std::string("  typedef unsigned int w_t;\n");
    case 8: return std::string("  typedef unsigned long long w_t;\n");
    case 16: return std::string("  struct w_t { unsigned long long lo, hi; };\n");
    default:
      return Unimplemented("cuda: '", inst.name(), "' (", inst.attrs().custom_call_target.value_or(""), ") moves ",
                           DTypeName(t), " elements, which generated kernels do not address (sub-byte types)");
  }
}

}  // namespace

StatusOr<std::vector<GeneratedKernel>> GenerateSpmdInternalKernels(const Instruction& inst) {
  const std::string target = inst.attrs().custom_call_target.value_or("");
  auto invalid = [&](auto&&... parts) {
    return InvalidArgument("custom-call '", inst.name(), "' (", target, "): ", std::forward<decltype(parts)>(parts)...);
  };
  const bool pad = target == "_SPMDInternalOp_MultiPad";
  if (inst.opcode() != Opcode::kCustomCall || inst.operand_count() != (pad ? 2 : 1) ||
      !inst.operand(0)->shape().IsArray()) {
    return invalid(pad ? "needs an array and a scalar pad value" : "needs one array operand");
  }
  StatusOr<SpmdInternalConfig> parsed = ParseSpmdInternalConfig(inst);
  const bool ok = parsed.ok();
  const SpmdInternalConfig config = ok ? std::move(parsed).value() : SpmdInternalConfig{};
  auto scalar = [&](std::string_view key, int64_t* v) {
    auto it = config.find(key);
    if (it == config.end() || it->second.values.size() != 1) return false;
    *v = it->second.values[0];
    return true;
  };
  const Shape& x = inst.operand(0)->shape();
  const std::vector<int64_t>& xd = x.dims();
  const int rank = x.rank();
  int64_t dim = -1;
  if (!ok || !scalar("dimension", &dim) || dim < 0 || dim >= rank) {
    return invalid("backend_config \"", inst.attrs().backend_config.value_or(""),
                   "\" needs dimension=D within the operand's rank");
  }
  const int64_t n = xd[dim];
  std::vector<Shape> results;
  if (inst.shape().IsTuple()) {
    for (const Shape& s : inst.shape().tuple_shapes()) results.push_back(s);
  } else {
    results.push_back(inst.shape());
  }
  const int count = static_cast<int>(results.size());
  const int ptrs = inst.operand_count() + count;
  if (ptrs > kMaxPointers) {
    return Unimplemented("cuda: '", inst.name(), "' (", target, ") has ", count,
                         " results; generated kernels take at most ", kMaxPointers - inst.operand_count());
  }
  // Per result k (its dims `out`), the code setting `value` from o0..o<r-1> (the result element's
  // coordinates), `k`, and `src` (the operand's linear index, to be built).
  std::vector<int64_t> out = xd;
  std::string code;
  std::vector<int64_t> xstrides = RowMajorStrides(xd);
  auto linear = [&](const std::string& along) {  // operand index with coordinate `along` at dim
    std::string e;
    for (int d = 0; d < rank; ++d) {
      e += (d ? " + " : "") + (d == dim ? "(" + along + ")" : StrCat("o", d)) + " * " + Int(xstrides[d]);
    }
    return e.empty() ? std::string("0") : e;
  };
  const std::string o = StrCat("o", dim);
  if (target == "_SPMDInternalOp_RotateRight" || target == "_SPMDInternalOp_MultiRotate") {
    // Result k is x rotated left by r_k: out[i] = x[(i + r_k) mod n].
    std::vector<int64_t> rotations;
    int64_t amount = 0, left = 0, right = 0;
    if (target == "_SPMDInternalOp_RotateRight") {
      if (!scalar("amount", &amount) || amount < 0) return invalid("needs amount=N >= 0");
      rotations.push_back(n == 0 ? 0 : Mod(-amount, n));
    } else {
      if (!scalar("left_amount", &left) || !scalar("right_amount", &right) || left + right < 0) {
        return invalid("needs left_amount=L and right_amount=R with L + R >= 0");
      }
      for (int64_t k = 0; k <= left + right; ++k) rotations.push_back(n == 0 ? 0 : Mod(left - k, n));
    }
    if (static_cast<int>(rotations.size()) != count) {
      return invalid("has ", count, " results; ", rotations.size(), " expected");
    }
    code = "    idx_t r = 0;\n    switch (k) {\n";
    for (int k = 0; k < count; ++k) {
      code += "      case " + std::to_string(k) + ": r = " + Int(rotations[k]) + "; break;\n";
    }
    code += "    }\n    idx_t j = " + o + " + r;\n    if (j >= " + Int(n) + ") j -= " + Int(n) + ";\n";
    code += "    const w_t value = src[" + linear("j") + "];\n";
  } else if (target == "_SPMDInternalOp_Wrap") {
    int64_t left = 0, right = 0;
    if (!scalar("left_amount", &left) || !scalar("right_amount", &right) || left < 0 || right < 0 || left > n ||
        right > n) {
      return invalid("needs left_amount=L and right_amount=R in [0, ", n, "]");
    }
    out[dim] = n + left + right;
    // concat(x[n-L:n], x, x[0:R]) along dim.
    code = "    idx_t j = " + o + " - " + Int(left) + ";\n    if (j < 0) j += " + Int(n) + "; else if (j >= " + Int(n) +
           ") j -= " + Int(n) + ";\n    const w_t value = src[" + linear("j") + "];\n";
  } else if (target == "_SPMDInternalOp_MultiSlice") {
    int64_t amount = 0;
    auto list = [&](std::string_view key) -> const std::vector<int64_t>* {
      auto it = config.find(key);
      return it == config.end() || static_cast<int>(it->second.values.size()) != rank ? nullptr : &it->second.values;
    };
    const std::vector<int64_t>*starts = list("start_indices"), *limits = list("limit_indices"),
          *strides = list("strides");
    if (!scalar("amount", &amount) || amount < 0 || amount + 1 != count || !starts || !limits || !strides) {
      return invalid("needs amount=A (A + 1 results), start_indices, limit_indices and strides of ", rank, " entries");
    }
    std::string e;
    for (int d = 0; d < rank; ++d) {
      const int64_t st = (*strides)[d], lo = (*starts)[d], hi = (*limits)[d], shift = d == dim ? amount : 0;
      if (st < 1 || lo < 0 || lo > hi || hi + shift > xd[d]) return invalid("slice of dim ", d, " is out of bounds");
      out[d] = (hi - lo + st - 1) / st;
      e += (d ? " + " : "") +
           StrCat("(", Int(lo), " + o", d, " * ", Int(st), d == dim ? " + k" : "", ") * ", Int(xstrides[d]));
    }
    code = "    const w_t value = src[" + (e.empty() ? std::string("0") : e) + "];\n";
  } else if (pad) {
    int64_t amt = 0;
    const Shape& v = inst.operand(1)->shape();
    if (!scalar("amt", &amt) || amt < 0) return invalid("needs amt=P >= 0");
    if (!v.IsArray() || v.rank() != 0 || v.dtype() != x.dtype() || count != 2) {
      return invalid("needs a scalar pad value of the operand's type and two results");
    }
    out[dim] = n + amt;
    // Result 0: pad(x, low amt); result 1: pad(x, high amt).
    code = "    const idx_t j = k == 0 ? " + o + " - " + Int(amt) + " : " + o + ";\n";
    code +=
        "    const w_t value = (j < 0 || j >= " + Int(n) + ") ? ((const w_t*)a.p[1])[0] : src[" + linear("j") + "];\n";
  } else {
    return invalid("is not an _SPMDInternalOp_ target generated kernels know");
  }
  const Shape want(x.dtype(), out);
  int64_t per = 1;
  for (int64_t s : out) per *= s;
  for (int k = 0; k < count; ++k) {
    if (!results[k].IsArray() || !results[k].Compatible(want)) {
      return invalid("result ", k, " is ", results[k].ToString(false), "; ", want.ToString(false), " expected");
    }
  }
  XS_ASSIGN_OR_RETURN(std::string word, WordTypedef(inst, x.dtype()));
  const int64_t total = per * count;
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(ptrs) + "> a) {\n  typedef " + codegen::IndexType(std::max(total, x.num_elements())) +
                  " idx_t;\n" + word + "  const w_t* src = (const w_t*)a.p[0];\n";
  b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  b += "  for (idx_t t = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); t < " + Int(total) + "; t += stride) {\n";
  b += "    const int k = (int)(t / " + Int(std::max<int64_t>(per, 1)) + ");\n    const idx_t i = t % " +
       Int(std::max<int64_t>(per, 1)) + ";\n    idx_t q = i;\n";
  for (int d = rank - 1; d >= 0; --d) {
    b += StrCat("    const idx_t o", d, " = q % ", Int(out[d]), "; q /= ", Int(out[d]), ";\n");
  }
  // The result's pointer by a switch on constant indices: indexing the parameter block with `k`
  // would copy it to local memory.
  b += code + "    w_t* dst = (w_t*)a.p[" + std::to_string(inst.operand_count()) + "];\n";
  if (count > 1) {
    b += "    switch (k) {\n";
    for (int k = 1; k < count; ++k) {
      b += StrCat("      case ", k, ": dst = (w_t*)a.p[", inst.operand_count() + k, "]; break;\n");
    }
    b += "    }\n";
  }
  b += "    dst[i] = value;\n  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(total);
  std::vector<GeneratedKernel> ks;
  ks.push_back(codegen::Finish("spmd_internal", std::move(b), launch, ptrs, "index_map"));
  return ks;
}

}  // namespace xs::cuda
