// Implementation of RunPlanOnHost (kernel_codegen_test_util.h; test binary only, holds no tests):
// a GpuPlan's actions walked as gpu_executable_run.cc's Runner walks them, in host memory, with
// the generated kernels on the SIMT emulator and plain loops for cuBLASLt's and cuDNN's calls as
// GemmLayout and ConvLayout describe them.
#ifdef XSHARD_WITH_CUDA

#include <cstring>
#include <map>
#include <set>

#include "xshard/cuda/conv.h"
#include "xshard/cuda/gemm.h"
#include "xshard/cuda/gpu_executable_plan.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/ir/computation.h"

namespace xs::cuda::testing {
namespace {

// A scalar Array per dtype to decode and encode the other types through (Array's codecs):
// built once per thread, not once per element (the GEMM and convolution loops below call Load
// and Store for every multiply-add).
Array& Scalar(DType t) {
  thread_local std::map<DType, Array> scalars;
  auto it = scalars.find(t);
  if (it == scalars.end()) it = scalars.emplace(t, Array(Shape(t, {}))).first;
  return it->second;
}

double Load(DType t, const std::byte* p, int64_t i) {
  switch (t) {
    case DType::kF32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kF64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case DType::kBF16: { BFloat16 v; std::memcpy(&v, p + 2 * i, 2); return BFloat16ToFloat(v); }
    case DType::kF16: { Half v; std::memcpy(&v, p + 2 * i, 2); return HalfToFloat(v); }
    default: {
      Array& a = Scalar(t);
      std::memcpy(a.data(), p + DTypeSize(t) * i, DTypeSize(t));
      return a.GetDouble(0);
    }
  }
}

void Store(DType t, std::byte* p, int64_t i, double v) {
  switch (t) {
    case DType::kF32: { const float f = static_cast<float>(v); std::memcpy(p + 4 * i, &f, 4); return; }
    case DType::kF64: std::memcpy(p + 8 * i, &v, 8); return;
    case DType::kBF16: { const BFloat16 b = DoubleToBFloat16(v); std::memcpy(p + 2 * i, &b, 2); return; }
    case DType::kF16: { const Half h = DoubleToHalf(v); std::memcpy(p + 2 * i, &h, 2); return; }
    default: {
      Array& a = Scalar(t);
      a.SetDouble(0, v);
      std::memcpy(p + DTypeSize(t) * i, a.data(), DTypeSize(t));
    }
  }
}

// cuBLASLt's column-major C = op(A) * op(B) with A the rhs and B the lhs (gemm.h), per batch.
void Gemm(const GemmLayout& l, const std::byte* lhs, const std::byte* rhs, std::byte* out) {
  for (int64_t b = 0; b < l.batch; ++b) {
    for (int64_t j = 0; j < l.m; ++j) {      // C's columns: the lhs's free size
      for (int64_t i = 0; i < l.n; ++i) {    // C's rows: the rhs's free size
        double sum = 0;
        for (int64_t p = 0; p < l.k; ++p) {
          const int64_t a = b * l.stride_a + (l.transa ? p + i * l.lda : i + p * l.lda);
          const int64_t bb = b * l.stride_b + (l.transb ? j + p * l.ldb : p + j * l.ldb);
          sum += Load(l.rhs_type, rhs, a) * Load(l.lhs_type, lhs, bb);
        }
        Store(l.out_type, out, b * l.stride_c + i + j * l.ldc, sum);
      }
    }
  }
}

// cuDNN's forward cross-correlation over ConvLayout's strided tensors (conv.h).
void Conv(const ConvLayout& l, const std::byte* x, const std::byte* w, std::byte* y) {
  const size_t ns = l.x_dims.size() - 2;
  const int64_t n = l.y_dims[0], k = l.y_dims[1], cg = l.w_dims[1];
  const int64_t kper = k / l.groups;
  // The filter's packed strides: [k, c, spatial...] (KCRS) or [k, spatial..., c] (KRSC).
  std::vector<int64_t> wdims = {l.w_dims[0]};
  std::vector<int> order;  // logical dim of each memory dim
  if (l.w_channels_last) {
    for (size_t s = 0; s < ns; ++s) order.push_back(static_cast<int>(2 + s));
    order.push_back(1);
  } else {
    order.push_back(1);
    for (size_t s = 0; s < ns; ++s) order.push_back(static_cast<int>(2 + s));
  }
  std::vector<int64_t> wstride(l.w_dims.size(), 0);
  int64_t acc = 1;
  for (int d = static_cast<int>(order.size()) - 1; d >= 0; --d) {
    wstride[order[d]] = acc;
    acc *= l.w_dims[order[d]];
  }
  wstride[0] = acc;
  int64_t out_spatial = 1, win = 1;
  for (size_t s = 0; s < ns; ++s) {
    out_spatial *= l.y_dims[2 + s];
    win *= l.w_dims[2 + s];
  }
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t o = 0; o < k; ++o) {
      const int64_t g = o / kper;
      for (int64_t pos = 0; pos < out_spatial; ++pos) {
        std::vector<int64_t> op(ns);
        int64_t q = pos;
        for (int s = static_cast<int>(ns) - 1; s >= 0; --s) {
          op[s] = q % l.y_dims[2 + s];
          q /= l.y_dims[2 + s];
        }
        double sum = 0;
        for (int64_t c = 0; c < cg; ++c) {
          for (int64_t t = 0; t < win; ++t) {
            int64_t r = t, xo = b * l.x_strides[0] + (g * cg + c) * l.x_strides[1], wo = o * wstride[0] + c * wstride[1];
            bool inside = true;
            for (int s = static_cast<int>(ns) - 1; s >= 0; --s) {
              const int64_t tap = r % l.w_dims[2 + s];
              r /= l.w_dims[2 + s];
              const int64_t at = op[s] * l.stride[s] - l.pad[s] + tap * l.dilation[s];
              if (at < 0 || at >= l.x_dims[2 + s]) inside = false;
              xo += at * l.x_strides[2 + s];
              wo += tap * wstride[2 + s];
            }
            if (inside) sum += Load(l.dtype, x, xo) * Load(l.dtype, w, wo);
          }
        }
        int64_t yo = b * l.y_strides[0] + o * l.y_strides[1];
        for (size_t s = 0; s < ns; ++s) yo += op[s] * l.y_strides[2 + s];
        Store(l.dtype, y, yo, sum);
      }
    }
  }
}

class Interpreter {
 public:
  Interpreter(const GpuPlan& plan, HostKernels& kernels, std::vector<std::byte>* constants)
      : kernels_(kernels), constants_(constants != nullptr ? *constants : own_) {
    if (constants_.empty()) constants_ = plan.data().constants;
  }

  StatusOr<std::vector<std::byte*>> Run(const GpuComputation& c, std::byte* base, std::vector<std::byte*> params) {
    for (const Action& a : c.actions) {
      Status st = RunAction(a, base, params);
      if (!st.ok()) return Annotate(st, StrCat("'", a.step->inst->name(), "' (", ActionKindName(a.kind), "): "));
    }
    std::vector<std::byte*> root;
    for (const Loc& l : c.root) root.push_back(Resolve(l, base, params));
    return root;
  }

 private:
  std::byte* Resolve(const Loc& l, std::byte* base, const std::vector<std::byte*>& params) {
    switch (l.kind) {
      case Loc::kParam: return l.index < static_cast<int64_t>(params.size()) ? params[l.index] : nullptr;
      case Loc::kFrame: return base + l.index;
      case Loc::kConstant: return constants_.data() + l.index;
      default: return nullptr;
    }
  }
  std::vector<std::byte*> All(const std::vector<Loc>& v, std::byte* base, const std::vector<std::byte*>& params,
                              size_t begin = 0, size_t end = SIZE_MAX) {
    std::vector<std::byte*> out;
    for (size_t i = begin; i < v.size() && i < end; ++i) out.push_back(Resolve(v[i], base, params));
    return out;
  }
  static void Copy(std::byte* dst, const std::byte* src, int64_t bytes) {
    if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
  }
  Status Launch(const PlannedKernel& k, const Action& a, std::byte* base, const std::vector<std::byte*>& params) {
    std::vector<void*> pointers;
    for (const KernelArg& arg : k.args) {
      const Loc& l = arg.kind == KernelArg::kInput ? a.in.at(arg.index)
                     : arg.kind == KernelArg::kOutput ? a.out.at(arg.index) : a.temps.at(arg.index);
      pointers.push_back(Resolve(l, base, params));
    }
    return kernels_.Launch(k.kernel, pointers);
  }
  Status RunAction(const Action& a, std::byte* base, const std::vector<std::byte*>& params);
  Status RunWhile(const Action& a, std::byte* base, const std::vector<std::byte*>& params);

  HostKernels& kernels_;
  std::vector<std::byte> own_;          // the constants of this run alone
  std::vector<std::byte>& constants_;  // own_ or the caller's, kept across runs
};

Status Interpreter::RunAction(const Action& a, std::byte* base, const std::vector<std::byte*>& params) {
  switch (a.kind) {
    case ActionKind::kAlias: case ActionKind::kDone:
      return OkStatus();
    case ActionKind::kKernels:
      for (const PlannedKernel& k : a.kernels) XS_RETURN_IF_ERROR(Launch(k, a, base, params));
      return OkStatus();
    case ActionKind::kGemm:
      for (const PlannedKernel& k : a.kernels) XS_RETURN_IF_ERROR(Launch(k, a, base, params));
      Gemm(*a.gemm, Resolve(a.gemm_operands[0], base, params), Resolve(a.gemm_operands[1], base, params),
           Resolve(a.out[0], base, params));
      return OkStatus();
    case ActionKind::kConv: {
      for (const PlannedKernel& k : a.kernels) XS_RETURN_IF_ERROR(Launch(k, a, base, params));
      XS_ASSIGN_OR_RETURN(ConvLayout l, ConvLayoutFor(*a.step->inst));
      Conv(l, Resolve(a.gemm_operands[0], base, params), Resolve(a.gemm_operands[1], base, params),
           Resolve(a.out[0], base, params));
      return OkStatus();
    }
    case ActionKind::kCopy:
      for (size_t i = 0; i < a.out.size() && i < a.in.size(); ++i) {
        Copy(Resolve(a.out[i], base, params), Resolve(a.in[i], base, params), a.out_bytes[i]);
      }
      return OkStatus();
    case ActionKind::kZero:
      for (size_t i = 0; i < a.out.size(); ++i) std::memset(Resolve(a.out[i], base, params), 0, a.out_bytes[i]);
      return OkStatus();
    case ActionKind::kCollective: {
      // One participant, as the Runner without a collective runner: the operand.
      const Instruction& inst = *a.collective;
      if (inst.attrs().replica_groups) {
        for (const auto& g : inst.attrs().replica_groups->Groups()) {
          if (g.size() > 1) return Unimplemented("a collective of ", g.size(), " participants");
        }
      }
      if (inst.opcode() == Opcode::kCollectivePermute || inst.opcode() == Opcode::kCollectivePermuteStart) {
        return Unimplemented("collective-permute");
      }
      if (a.in.size() != a.out.size()) return Unimplemented("a collective whose operand and result leaves differ");
      for (size_t i = 0; i < a.out.size(); ++i) Copy(Resolve(a.out[i], base, params), Resolve(a.in[i], base, params), a.out_bytes[i]);
      return OkStatus();
    }
    case ActionKind::kCall: {
      XS_ASSIGN_OR_RETURN(std::vector<std::byte*> root, Run(*a.callees[0], base + a.callee_offset, All(a.in, base, params)));
      for (size_t i = 0; i < root.size() && i < a.out.size(); ++i) Copy(Resolve(a.out[i], base, params), root[i], a.out_bytes[i]);
      return OkStatus();
    }
    case ActionKind::kWhile:
      return RunWhile(a, base, params);
    case ActionKind::kConditional: {
      const Shape& sel = a.step->inst->operand(0)->shape();
      const double v = Load(sel.dtype(), Resolve(a.in[0], base, params), 0);
      const int64_t n = static_cast<int64_t>(a.callees.size());
      const int64_t b = sel.dtype() == DType::kPred ? (v != 0 ? 0 : 1) : (v < 0 || v >= n ? n - 1 : static_cast<int64_t>(v));
      XS_ASSIGN_OR_RETURN(std::vector<std::byte*> root,
                          Run(*a.callees[b], base + a.callee_offset, All(a.in, base, params, a.in_begin[1 + b], a.in_begin[2 + b])));
      for (size_t i = 0; i < root.size() && i < a.out.size(); ++i) Copy(Resolve(a.out[i], base, params), root[i], a.out_bytes[i]);
      return OkStatus();
    }
    case ActionKind::kUnsupported:
      break;
  }
  return Unimplemented("unsupported on the GPU: ", a.why);
}

Status Interpreter::RunWhile(const Action& a, std::byte* base, const std::vector<std::byte*>& params) {
  const std::vector<std::byte*> carry = All(a.out, base, params);
  for (size_t i = 0; i < carry.size(); ++i) Copy(carry[i], Resolve(a.in[i], base, params), a.out_bytes[i]);
  const GpuComputation& body = *a.callees[1];
  std::byte* region = base + a.callee_offset;
  for (int iteration = 0;; ++iteration) {
    XS_ASSIGN_OR_RETURN(std::vector<std::byte*> pred, Run(*a.callees[0], region, carry));
    if (std::to_integer<int>(*pred.at(0)) == 0) return OkStatus();
    if (iteration >= 100) return Unimplemented("more than 100 iterations");
    XS_ASSIGN_OR_RETURN(std::vector<std::byte*> root, Run(body, region, carry));
    std::byte* swap = a.temps.empty() ? nullptr : Resolve(a.temps[0], base, params);
    std::vector<std::pair<size_t, std::byte*>> swapped;
    for (size_t i = 0; i < root.size(); ++i) {
      const Loc& r = body.root[i];
      if (r.kind == Loc::kParam && r.index != static_cast<int64_t>(i) && swap != nullptr) {
        Copy(swap, root[i], a.out_bytes[i]);
        swapped.push_back({i, swap});
        swap += a.out_bytes[i];
      }
    }
    for (size_t i = 0; i < root.size(); ++i) {
      const Loc& r = body.root[i];
      if (!(r.kind == Loc::kParam && r.index != static_cast<int64_t>(i))) Copy(carry[i], root[i], a.out_bytes[i]);
    }
    for (const auto& [i, from] : swapped) Copy(carry[i], from, a.out_bytes[i]);
  }
}

void Collect(const GpuComputation& c, std::set<const GpuComputation*>& seen, std::vector<GeneratedKernel>& out) {
  if (!seen.insert(&c).second) return;
  for (const Action& a : c.actions) {
    for (const PlannedKernel& k : a.kernels) out.push_back(k.kernel);
    for (const GpuComputation* callee : a.callees) Collect(*callee, seen, out);
  }
}

}  // namespace

std::vector<GeneratedKernel> PlanKernels(const GpuPlan& plan) {
  std::vector<GeneratedKernel> out;
  std::set<const GpuComputation*> seen;
  if (plan.data().entry != nullptr) Collect(*plan.data().entry, seen, out);
  return out;
}

StatusOr<std::vector<Array>> RunPlanOnHost(const GpuPlan& plan, std::span<const Array> args, HostKernels& kernels,
                                           std::vector<std::byte>* constants) {
  XS_RETURN_IF_ERROR(plan.Supported());
  const GpuPlanData& d = plan.data();
  if (args.size() != d.argument_shapes.size()) return InvalidArgument("argument count");
  // The frame starts as garbage, as device memory does: a read before a write shows.
  std::vector<std::byte> frame(d.entry->frame_bytes + 64, std::byte{0xa5});
  std::byte* base = frame.data() + (64 - reinterpret_cast<uintptr_t>(frame.data()) % 64) % 64;
  std::vector<std::vector<std::byte>> arg_bytes;
  std::vector<std::byte*> params;
  for (const Array& a : args) {
    arg_bytes.emplace_back(a.byte_size() + 64);
    std::byte* p = arg_bytes.back().data() + (64 - reinterpret_cast<uintptr_t>(arg_bytes.back().data()) % 64) % 64;
    std::memcpy(p, a.data(), a.byte_size());
    params.push_back(p);
  }
  Interpreter run(plan, kernels, constants);
  XS_ASSIGN_OR_RETURN(std::vector<std::byte*> root, run.Run(*d.entry, base, params));
  std::vector<Array> out;
  for (size_t i = 0; i < root.size() && i < d.result_shapes.size(); ++i) {
    Array a = Array::Uninitialized(d.result_shapes[i]);
    if (a.byte_size() > 0) {
      if (root[i] == nullptr) return Internal("result ", i, " has no buffer");
      std::memcpy(a.data(), root[i], a.byte_size());
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace xs::cuda::testing

#endif  // XSHARD_WITH_CUDA
