// Generated sources of the virtual-GPU collective kernels and their launches (see the header).
#include "xshard/cuda/virtual_gpu_kernels.h"

#include <algorithm>
#include <map>
#include <cstring>
#include <mutex>
#include <tuple>

#include "xshard/base/strings.h"
#include "xshard/comm/collective_shapes.h"
#include "xshard/comm/reduction.h"
#include "xshard/cuda/kernel_loader.h"

namespace xs::cuda {
namespace {

constexpr char kPrelude[] = R"(typedef long long i64;
typedef unsigned long long u64;
struct alignas(16) V16 { unsigned int x, y, z, w; };
)";

constexpr char kCopyBody[] = R"(struct CopyArgs {
  const char* src[64];
  char* dst[64];
  i64 dims[6];        // outermost first, in units
  i64 src_stride[6];  // in units; the innermost is 1
  i64 dst_stride[6];
  i64 count;          // units per piece
  int unit;           // bytes per unit: 1, 2, 4, 8 or 16
};
template <typename U>
__device__ void CopyPiece(const CopyArgs& a, int piece) {
  const U* s = reinterpret_cast<const U*>(a.src[piece]);
  U* d = reinterpret_cast<U*>(a.dst[piece]);
  const i64 step = (i64)gridDim.x * blockDim.x;
  const i64 inner = a.dims[5];
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < a.count; i += step) {
    if (inner == a.count) {
      d[i] = s[i];
      continue;
    }
    i64 r = i / inner;
    const i64 x = i - r * inner;
    i64 so = x, dof = x;
    for (int k = 4; k >= 0 && r > 0; --k) {
      const i64 q = r / a.dims[k];
      const i64 y = r - q * a.dims[k];
      so += y * a.src_stride[k];
      dof += y * a.dst_stride[k];
      r = q;
    }
    d[dof] = s[so];
  }
}
extern "C" __global__ void xs_collective_copy(const CopyArgs a) {
  switch (a.unit) {
    case 16: CopyPiece<V16>(a, blockIdx.y); break;
    case 8: CopyPiece<u64>(a, blockIdx.y); break;
    case 4: CopyPiece<unsigned int>(a, blockIdx.y); break;
    case 2: CopyPiece<unsigned short>(a, blockIdx.y); break;
    default: CopyPiece<unsigned char>(a, blockIdx.y); break;
  }
}
)";

constexpr char kReduceBody[] = R"(struct ReduceArgs {
  const char* src[64];
  char* out;
  int n;
  int vec;             // 1: every pointer and row is 16-byte aligned
  i64 rows, row_elems, src_row_stride;
};
extern "C" __global__ void xs_collective_reduce(const ReduceArgs a) {
  const i64 step = (i64)gridDim.x * blockDim.x;
  const i64 tid = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  const int kv = a.vec ? 16 / (int)sizeof(S) : 1;
  const i64 row_units = a.row_elems / kv;
  const i64 total = a.rows * row_units;
  for (i64 i = tid; i < total; i += step) {
    const i64 r = a.rows == 1 ? 0 : i / row_units;
    const i64 c = (i - r * row_units) * kv;
    const i64 so = r * a.src_row_stride + c;
    S* out = reinterpret_cast<S*>(a.out) + r * a.row_elems + c;
    if (a.vec) {
      constexpr int kE = 16 / (int)sizeof(S);
      V16 v = *reinterpret_cast<const V16*>(reinterpret_cast<const S*>(a.src[0]) + so);
      S* sv = reinterpret_cast<S*>(&v);
      C acc[kE];
#pragma unroll
      for (int e = 0; e < kE; ++e) acc[e] = Load(sv[e]);
      for (int j = 1; j < a.n; ++j) {
        const V16 b = *reinterpret_cast<const V16*>(reinterpret_cast<const S*>(a.src[j]) + so);
        const S* bv = reinterpret_cast<const S*>(&b);
#pragma unroll
        for (int e = 0; e < kE; ++e) acc[e] = Round(Op(acc[e], Load(bv[e])));
      }
#pragma unroll
      for (int e = 0; e < kE; ++e) sv[e] = Store(acc[e]);
      *reinterpret_cast<V16*>(out) = v;
    } else {
      C acc = Load(reinterpret_cast<const S*>(a.src[0])[so]);
      for (int j = 1; j < a.n; ++j) acc = Round(Op(acc, Load(reinterpret_cast<const S*>(a.src[j])[so])));
      *out = Store(acc);
    }
  }
}
)";

enum class Family { kFloat, kF16, kBF16, kInt, kPred, kNone };

struct TypeInfo {
  Family family = Family::kNone;
  const char* storage = "";
  const char* wrap = "";  // unsigned type integers add and multiply through
};

TypeInfo InfoOf(DType t) {
  switch (t) {
    case DType::kF32: return {Family::kFloat, "float", ""};
    case DType::kF64: return {Family::kFloat, "double", ""};
    case DType::kF16: return {Family::kF16, "unsigned short", ""};
    case DType::kBF16: return {Family::kBF16, "unsigned short", ""};
    case DType::kPred: return {Family::kPred, "unsigned char", ""};
    // 8- and 16-bit values multiply as unsigned int: as their own unsigned type they would be
    // promoted to int, whose overflow is undefined.
    case DType::kS8: return {Family::kInt, "signed char", "unsigned int"};
    case DType::kS16: return {Family::kInt, "short", "unsigned int"};
    case DType::kS32: return {Family::kInt, "int", "unsigned int"};
    case DType::kS64: return {Family::kInt, "long long", "unsigned long long"};
    case DType::kU8: return {Family::kInt, "unsigned char", "unsigned int"};
    case DType::kU16: return {Family::kInt, "unsigned short", "unsigned int"};
    case DType::kU32: return {Family::kInt, "unsigned int", "unsigned int"};
    case DType::kU64: return {Family::kInt, "unsigned long long", "unsigned long long"};
    default: return {};
  }
}

// Load / Store between the storage type S and the compute type C, and Round, what a running
// value goes through after each step, as comm/reduction.cc's ReduceMany does: f16 rounds to f16
// every step; bf16 stays in f32 until stored (its sums and products accumulate in f32, as XLA's
// CPU backend promotes them; min and max are exact either way).
std::string Conversions(const TypeInfo& info) {
  switch (info.family) {
    case Family::kF16:
      return "typedef float C;\n"
             "__device__ C Load(S v) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(v)); return f; }\n"
             "__device__ S Store(C f) { S h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
             "__device__ C Round(C f) { return Load(Store(f)); }\n";
    case Family::kBF16:
      return "typedef float C;\n"
             "__device__ C Load(S v) {\n"
             "  union { unsigned int u; float f; } x; x.u = (unsigned int)v << 16; return x.f;\n"
             "}\n"
             "__device__ S Store(C f) {\n"
             "  union { float f; unsigned int u; } x; x.f = f; unsigned int u = x.u;\n"
             "  if ((u & 0x7fffffffu) > 0x7f800000u) return (S)((u >> 16) | 0x40u);\n"
             "  u += 0x7fffu + ((u >> 16) & 1u);\n"
             "  return (S)(u >> 16);\n}\n"
             "__device__ C Round(C f) { return f; }\n";
    default:
      return "typedef S C;\n__device__ C Load(S v) { return v; }\n__device__ S Store(C v) { return v; }\n"
             "__device__ C Round(C v) { return v; }\n";
  }
}

std::string OpBody(const TypeInfo& info, ReductionKind r) {
  const bool floating = info.family == Family::kFloat || info.family == Family::kF16 ||
                        info.family == Family::kBF16;
  if (info.family == Family::kPred) {
    const bool is_or = r == ReductionKind::kSum || r == ReductionKind::kMax || r == ReductionKind::kOr;
    return is_or ? "return (C)(a | b);" : "return (C)(a & b);";
  }
  switch (r) {
    case ReductionKind::kSum:
      return floating ? "return a + b;" : StrCat("return (C)((", info.wrap, ")a + (", info.wrap, ")b);");
    case ReductionKind::kProduct:
      return floating ? "return a * b;" : StrCat("return (C)((", info.wrap, ")a * (", info.wrap, ")b);");
    case ReductionKind::kMin:
      return floating ? "if (a != a) return a; if (b != b) return b; return b < a ? b : a;"
                      : "return b < a ? b : a;";
    case ReductionKind::kMax:
      return floating ? "if (a != a) return a; if (b != b) return b; return a < b ? b : a;"
                      : "return a < b ? b : a;";
    case ReductionKind::kAnd: return "return (C)(a & b);";
    case ReductionKind::kOr: return "return (C)(a | b);";
  }
  return "return a;";
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The loaded kernel for (source family, reducer, dtype, GPU), generating the source only the
// first time (a collective launches one per call, so the lookup must stay cheap).
template <typename MakeSource>
StatusOr<cudaKernel_t> Kernel(int family, ReductionKind r, DType t, int device, MakeSource make) {
  static std::mutex mu;
  static auto* cache = new std::map<std::tuple<int, int, int, int>, cudaKernel_t>();
  const auto key = std::make_tuple(family, static_cast<int>(r), static_cast<int>(t), device);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache->find(key); it != cache->end()) return it->second;
  }
  XS_ASSIGN_OR_RETURN(KernelSource src, make());
  XS_ASSIGN_OR_RETURN(cudaKernel_t k, LoadKernel(src, device));
  std::lock_guard<std::mutex> lock(mu);
  (*cache)[key] = k;
  return k;
}

// The kernel's by-value parameter as bytes, and its geometry (256 threads a block).
template <typename Args>
CollectiveLaunch Launch(const Args& args, dim3 grid) {
  CollectiveLaunch launch;
  launch.params.resize(sizeof(Args));
  std::memcpy(launch.params.data(), &args, sizeof(Args));
  launch.grid = grid;
  launch.block = dim3(256);
  return launch;
}

dim3 Grid(int64_t units, int64_t pieces) {
  return dim3(static_cast<unsigned>(std::clamp<int64_t>(CeilDiv(units, 256), 1, 2048)),
              static_cast<unsigned>(pieces));
}

}  // namespace

KernelSource CollectiveCopySource() {
  return {"xs_collective_copy", StrCat("// xshard collective copy\n", kPrelude, kCopyBody)};
}

StatusOr<KernelSource> CollectiveReduceSource(ReductionKind reduction, DType dtype) {
  XS_RETURN_IF_ERROR(CheckReduction(reduction, dtype, "virtual-GPU reduction"));
  const TypeInfo info = InfoOf(dtype);
  if (info.family == Family::kNone) {
    return Unimplemented("virtual-GPU reduction: ", ReductionKindName(reduction), " over ",
                         DTypeName(dtype), " has no GPU kernel yet");
  }
  return KernelSource{"xs_collective_reduce",
                      StrCat("// xshard collective ", ReductionKindName(reduction), " over ",
                             DTypeName(dtype), "\n", kPrelude, "typedef ", info.storage, " S;\n",
                             Conversions(info), "__device__ C Op(C a, C b) { ",
                             OpBody(info, reduction), " }\n", kReduceBody)};
}

std::vector<KernelSource> AllCollectiveSources() {
  std::vector<KernelSource> out = {CollectiveCopySource()};
  for (DType t : {DType::kPred, DType::kS8, DType::kS16, DType::kS32, DType::kS64, DType::kU8,
                  DType::kU16, DType::kU32, DType::kU64, DType::kF16, DType::kBF16, DType::kF32,
                  DType::kF64}) {
    for (ReductionKind r : {ReductionKind::kSum, ReductionKind::kProduct, ReductionKind::kMin,
                            ReductionKind::kMax, ReductionKind::kAnd, ReductionKind::kOr}) {
      if (StatusOr<KernelSource> s = CollectiveReduceSource(r, t); s.ok()) out.push_back(*s);
    }
  }
  return out;
}

Status CheckCollectiveArgs(const CollectiveArgs& op, std::string_view name, int64_t n) {
  if (op.in.dims.size() > static_cast<size_t>(kMaxCollectiveDims)) {
    return Unimplemented(name, ": arrays of rank ", op.in.dims.size(), " (at most ", kMaxCollectiveDims,
                         " on virtual GPU devices)");
  }
  switch (op.kind) {
    case CollectiveKind::kAllGather: {
      XS_ASSIGN_OR_RETURN(auto dims, AllGatherDims(name, op.in.dims, op.dim0, n));
      return CheckOutput(name, op.in, op.out, dims);
    }
    case CollectiveKind::kReduceScatter: {
      XS_RETURN_IF_ERROR(CheckReduction(op.reduction, op.in.dtype, name));
      XS_ASSIGN_OR_RETURN(auto dims, ReduceScatterDims(name, op.in.dims, op.dim0, n));
      return CheckOutput(name, op.in, op.out, dims);
    }
    case CollectiveKind::kAllReduce:
      XS_RETURN_IF_ERROR(CheckReduction(op.reduction, op.in.dtype, name));
      return CheckOutput(name, op.in, op.out, op.in.dims);
    case CollectiveKind::kAllToAll: {
      if (!op.tuple_in.empty() || !op.tuple_out.empty()) {
        if (static_cast<int64_t>(op.tuple_in.size()) != n ||
            static_cast<int64_t>(op.tuple_out.size()) != n) {
          return InvalidArgument(name, ": the tuple all-to-all has ", op.tuple_in.size(),
                                 " operands and ", op.tuple_out.size(), " results but its group has ",
                                 n, " members; pass one operand per member");
        }
        for (size_t j = 0; j < op.tuple_in.size(); ++j) {
          if (op.tuple_in[j].dtype != op.in.dtype || !std::ranges::equal(op.tuple_in[j].dims, op.in.dims)) {
            return InvalidArgument(name, ": tuple operand ", j, " is ", op.tuple_in[j].ShapeString(),
                                   " but operand 0 is ", op.in.ShapeString(),
                                   "; every operand of a tuple all-to-all has the same shape");
          }
          XS_RETURN_IF_ERROR(CheckOutput(name, op.tuple_in[j], op.tuple_out[j], op.tuple_in[j].dims));
        }
        return OkStatus();
      }
      XS_ASSIGN_OR_RETURN(auto dims, AllToAllDims(name, op.in.dims, op.dim0, op.dim1, n));
      return CheckOutput(name, op.in, op.out, dims);
    }
    default:
      return CheckOutput(name, op.in, op.out, op.in.dims);
  }
}


StatusOr<CollectiveLaunch> PrepareCopy(const CopyJob& job) {
  const size_t pieces = job.src.size();
  if (pieces == 0) return CollectiveLaunch{};
  if (pieces > static_cast<size_t>(kMaxCollectivePeers) || job.dst.size() != pieces) {
    return Unimplemented("a virtual-GPU collective copy of ", pieces, " pieces: at most ",
                         kMaxCollectivePeers, " peers are supported");
  }
  // In bytes: the element becomes an innermost dim of element_bytes bytes with stride 1.
  std::vector<int64_t> dims, ss, ds;
  for (size_t i = 0; i < job.dims.size(); ++i) {
    if (job.dims[i] == 0) return CollectiveLaunch{};
    if (job.dims[i] == 1) continue;
    dims.push_back(job.dims[i]);
    ss.push_back(job.src_strides[i] * job.element_bytes);
    ds.push_back(job.dst_strides[i] * job.element_bytes);
  }
  dims.push_back(job.element_bytes);
  ss.push_back(1);
  ds.push_back(1);
  // Merge dim i into i+1 where both sides are contiguous across them.
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    if (ss[i] == dims[i + 1] * ss[i + 1] && ds[i] == dims[i + 1] * ds[i + 1]) {
      dims[i + 1] *= dims[i];
      dims.erase(dims.begin() + i);
      ss.erase(ss.begin() + i);
      ds.erase(ds.begin() + i);
    }
  }
  if (dims.size() > static_cast<size_t>(kMaxCopyDims)) {
    return Unimplemented("a virtual-GPU collective copy with ", dims.size(),
                         " non-contiguous dims: at most ", kMaxCopyDims, " are supported");
  }
  int unit = 16;
  auto fits = [&](int u) {
    if (dims.back() % u != 0) return false;
    for (size_t i = 0; i + 1 < dims.size(); ++i) {
      if (ss[i] % u != 0 || ds[i] % u != 0) return false;
    }
    for (size_t p = 0; p < pieces; ++p) {
      if (reinterpret_cast<uintptr_t>(job.src[p]) % u != 0 ||
          reinterpret_cast<uintptr_t>(job.dst[p]) % u != 0) {
        return false;
      }
    }
    return true;
  };
  while (unit > 1 && !fits(unit)) unit /= 2;
  struct Args {
    const std::byte* src[kMaxCollectivePeers];
    std::byte* dst[kMaxCollectivePeers];
    int64_t dims[kMaxCopyDims], src_stride[kMaxCopyDims], dst_stride[kMaxCopyDims];
    int64_t count;
    int32_t unit;
  } args{};
  const size_t pad = kMaxCopyDims - dims.size();
  int64_t count = 1;
  for (int i = 0; i < kMaxCopyDims; ++i) {
    args.dims[i] = 1;
    if (static_cast<size_t>(i) < pad) continue;
    const size_t j = i - pad;
    const bool inner = j + 1 == dims.size();
    args.dims[i] = inner ? dims[j] / unit : dims[j];
    args.src_stride[i] = inner ? 1 : ss[j] / unit;
    args.dst_stride[i] = inner ? 1 : ds[j] / unit;
    count *= args.dims[i];
  }
  args.count = count;
  args.unit = unit;
  for (size_t p = 0; p < pieces; ++p) {
    args.src[p] = job.src[p];
    args.dst[p] = job.dst[p];
  }
  return Launch(args, Grid(count, pieces));
}

Status EnqueueCopy(const CopyJob& job, int device, cudaStream_t stream) {
  XS_ASSIGN_OR_RETURN(CollectiveLaunch launch, PrepareCopy(job));
  if (launch.params.empty()) return OkStatus();
  XS_ASSIGN_OR_RETURN(cudaKernel_t k, Kernel(0, ReductionKind::kSum, DType::kU8, device,
                                              []() -> StatusOr<KernelSource> { return CollectiveCopySource(); }));
  void* params[] = {launch.params.data()};
  return LaunchKernel(k, launch.grid, launch.block, params, 0, stream);
}

StatusOr<CollectiveLaunch> PrepareReduce(const ReduceJob& job) {
  const size_t n = job.srcs.size();
  if (n == 0 || job.rows == 0 || job.row_elements == 0) return CollectiveLaunch{};
  if (n > static_cast<size_t>(kMaxCollectivePeers)) {
    return Unimplemented("a virtual-GPU reduction over ", n, " devices: at most ",
                         kMaxCollectivePeers, " are supported");
  }
  const int64_t es = DTypeSize(job.dtype);
  bool vec = (job.row_elements * es) % 16 == 0 && (job.rows == 1 || (job.src_row_stride * es) % 16 == 0) &&
             reinterpret_cast<uintptr_t>(job.out) % 16 == 0;
  for (const std::byte* p : job.srcs) vec = vec && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  struct Args {
    const std::byte* src[kMaxCollectivePeers];
    std::byte* out;
    int32_t n, vec;
    int64_t rows, row_elems, src_row_stride;
  } args{};
  for (size_t j = 0; j < n; ++j) args.src[j] = job.srcs[j];
  args.out = job.out;
  args.n = static_cast<int32_t>(n);
  args.vec = vec ? 1 : 0;
  args.rows = job.rows;
  args.row_elems = job.row_elements;
  args.src_row_stride = job.src_row_stride;
  const int64_t units = job.rows * job.row_elements / (vec ? 16 / es : 1);
  return Launch(args, Grid(units, 1));
}

Status EnqueueReduce(const ReduceJob& job, int device, cudaStream_t stream) {
  XS_ASSIGN_OR_RETURN(CollectiveLaunch launch, PrepareReduce(job));
  if (launch.params.empty()) return OkStatus();
  XS_ASSIGN_OR_RETURN(cudaKernel_t k, Kernel(1, job.reduction, job.dtype, device, [&] {
                        return CollectiveReduceSource(job.reduction, job.dtype);
                      }));
  void* params[] = {launch.params.data()};
  return LaunchKernel(k, launch.grid, launch.block, params, 0, stream);
}

}  // namespace xs::cuda
