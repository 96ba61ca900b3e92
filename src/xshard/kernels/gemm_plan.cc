// DotPlan: decides once per dot shape how it runs (BLAS transpose flags and leading dims, oneDNN
// for bf16, copies into scratch only when no strided view fits) and runs it.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <climits>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "xshard/core/allocation_failure.h"
#include "xshard/kernels/cpu_features.h"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/onednn_matmul.h"
#include "xshard/kernels/parallel.h"
#include "xshard/kernels/scalar_ops.h"
#include "xshard/kernels/shape_ops.h"

namespace xs::kernels {
namespace {

constexpr int64_t kAlign = 64;
// Multiply-adds per oneDNN call below which a second OpenMP thread does not pay: 2^26 is about
// 100 us on one AMX core, against a ~30 us wake-up on a quiet machine. On a loaded one an OpenMP
// barrier waits for the descheduled thread: 512^3 bf16 took 22 ms on 2 threads vs 0.2 ms on 1
// at load 23 on 2 cores.
constexpr int64_t kOneDnnWorkPerThread = int64_t{1} << 26;

int64_t AlignUp(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

bool HasDim(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

int64_t SizeOf(const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
  int64_t n = 1;
  for (int64_t d : which) n *= dims[d];
  return n;
}

// Stride (elements) of `group`'s dims merged into one index in the listed order, or nullopt when
// they do not form one evenly strided run. Size-1 dims do not count; an empty run gives 0.
std::optional<int64_t> MergedStride(const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& strides,
                                    const std::vector<int64_t>& group) {
  int64_t stride = 0, expected = -1;
  for (auto it = group.rbegin(); it != group.rend(); ++it) {
    if (dims[*it] == 1) continue;
    if (expected < 0) {
      stride = strides[*it];
    } else if (strides[*it] != expected) {
      return std::nullopt;
    }
    expected = strides[*it] * dims[*it];
  }
  return stride;
}

// A rows x cols matrix view at (row_stride, col_stride) as BLAS sees it: row-major, possibly
// transposed, with leading dim `ld`. False when neither direction has unit stride.
bool BlasView(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool* trans, int64_t* ld) {
  if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= cols)) {
    *trans = false;
    *ld = rows <= 1 ? std::max<int64_t>(cols, 1) : rs;
    return true;
  }
  if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= rows)) {
    *trans = true;
    *ld = cols <= 1 ? std::max<int64_t>(rows, 1) : cs;
    return true;
  }
  return false;
}

// Grow-only 64-byte aligned scratch per thread, for callers that pass none.
std::byte* ThreadScratch(int64_t bytes) {
  struct Buffer {
    void* p = nullptr;
    int64_t size = 0;
    ~Buffer() { std::free(p); }
  };
  thread_local Buffer buf;
  if (bytes > buf.size) {
    std::free(buf.p);
    buf.size = AlignUp(bytes);
    buf.p = std::aligned_alloc(kAlign, static_cast<size_t>(buf.size));
    if (buf.p == nullptr) {
      buf.size = 0;
      throw AllocationFailure(bytes, "GEMM packing scratch");
    }
  }
  return static_cast<std::byte*>(buf.p);
}

}  // namespace

// How one operand reaches the GEMM: optional convert + transpose into scratch, then a strided
// [batch..., rows, cols] view.
struct OperandPlan {
  DType dtype = DType::kF32;  // as stored
  std::vector<int64_t> dims;
  int64_t elements = 0;
  UnaryKernel convert = nullptr;  // to the compute type, same layout
  int64_t convert_offset = 0;
  bool transpose = false;
  std::vector<int64_t> perm;  // operand dims in the copy's order
  int64_t transpose_offset = 0;
  int64_t elem_size = 0;  // of the compute type
  bool trans = false;     // BLAS flag
  int64_t ld = 0;
  int64_t row_stride = 0, col_stride = 0;
  std::vector<int64_t> batch_strides;  // per batch dim, dnums order
};

struct BatchDim {
  int64_t size, lhs, rhs, out;  // strides in elements
};

struct DotPlan::Impl {
  DType compute = DType::kF32;  // operand type the engine reads
  DType out_compute = DType::kF32;  // type the engine writes
  OperandPlan lhs, rhs;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  std::vector<BatchDim> batch_dims;  // merged, size-1 dropped, outermost first
  UnaryKernel out_convert = nullptr;  // engine result -> result type
  int64_t out_offset = 0;
  std::unique_ptr<OneDnnMatmul> onednn;
  int onednn_batch_dims = 0;  // innermost batch_dims taken by one oneDNN call (0, 1 or 2)
  int64_t onednn_work = 0;  // multiply-adds per oneDNN call
};

namespace {

// Plans operand `a` for a [batch, rows, cols] view with elements of `compute` (the operand is
// converted first when its dtype differs). `force_copy`: always copy into the canonical layout.
Status PlanOperand(const Shape& a, DType compute, const std::vector<int64_t>& batch,
                   const std::vector<int64_t>& rows, const std::vector<int64_t>& cols,
                   bool force_copy, int64_t* scratch, OperandPlan* p) {
  p->dtype = a.dtype();
  p->dims = a.dims();
  p->elements = a.num_elements();
  p->elem_size = DTypeSize(compute);
  if (a.dtype() != compute) {
    XS_ASSIGN_OR_RETURN(p->convert, FindConvertKernel(a.dtype(), compute));
    p->convert_offset = *scratch;
    *scratch += AlignUp(p->elements * p->elem_size);
  }
  const int64_t nrows = SizeOf(p->dims, rows), ncols = SizeOf(p->dims, cols);
  std::vector<int64_t> strides = RowMajorStrides(p->dims);
  std::optional<int64_t> rs = MergedStride(p->dims, strides, rows);
  std::optional<int64_t> cs = MergedStride(p->dims, strides, cols);
  bool ok = !force_copy && rs && cs && BlasView(nrows, ncols, *rs, *cs, &p->trans, &p->ld);
  if (!ok) {
    // Copy as [batch, rows, cols], or [batch, cols, rows] when the operand's innermost dim is a
    // row dim, so the copy reads its inner dim contiguously.
    int64_t inner = -1;
    for (int64_t d = a.rank() - 1; d >= 0; --d) {
      if (p->dims[d] != 1) {
        inner = d;
        break;
      }
    }
    const bool swap = inner >= 0 && HasDim(rows, inner);
    p->perm = batch;
    const std::vector<int64_t>& first = swap ? cols : rows;
    const std::vector<int64_t>& second = swap ? rows : cols;
    p->perm.insert(p->perm.end(), first.begin(), first.end());
    p->perm.insert(p->perm.end(), second.begin(), second.end());
    p->transpose = true;
    p->transpose_offset = *scratch;
    *scratch += AlignUp(p->elements * p->elem_size);
    // The copy's strides, seen through the operand's own dim numbers.
    std::vector<int64_t> permuted_dims;
    for (int64_t d : p->perm) permuted_dims.push_back(p->dims[d]);
    const std::vector<int64_t> ps = RowMajorStrides(permuted_dims);
    for (size_t i = 0; i < p->perm.size(); ++i) strides[p->perm[i]] = ps[i];
    rs = MergedStride(p->dims, strides, rows);
    cs = MergedStride(p->dims, strides, cols);
    XS_CHECK(rs && cs && BlasView(nrows, ncols, *rs, *cs, &p->trans, &p->ld), "dot copy layout");
  }
  p->row_stride = p->trans ? 1 : p->ld;
  p->col_stride = p->trans ? p->ld : 1;
  for (int64_t d : batch) p->batch_strides.push_back(strides[d]);
  return OkStatus();
}

std::vector<int64_t> GemmFreeDims(int rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> out;
  for (int i = 0; i < rank; ++i) {
    if (!HasDim(batch, i) && !HasDim(contracting, i)) out.push_back(i);
  }
  return out;
}

template <typename T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T* c, int64_t ldc) {
  const auto trans_a = ta ? CblasTrans : CblasNoTrans;
  const auto trans_b = tb ? CblasTrans : CblasNoTrans;
  const blasint M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
  const blasint LA = static_cast<blasint>(lda), LB = static_cast<blasint>(ldb);
  const blasint LC = static_cast<blasint>(ldc);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, trans_a, trans_b, M, N, K, 1.0f, a, LA, b, LB, 0.0f, c, LC);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, trans_a, trans_b, M, N, K, 1.0, a, LA, b, LB, 0.0, c, LC);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    const T one(1), zero(0);
    cblas_cgemm(CblasRowMajor, trans_a, trans_b, M, N, K, &one, a, LA, b, LB, &zero, c, LC);
  } else {
    const T one(1), zero(0);
    cblas_zgemm(CblasRowMajor, trans_a, trans_b, M, N, K, &one, a, LA, b, LB, &zero, c, LC);
  }
}

// Naive strided GEMM in storage type S with XLA's wrapping integer math.
template <typename S>
void NaiveGemm(const DotPlan::Impl& p, const std::byte* a, const std::byte* b, std::byte* c) {
  const S* A = reinterpret_cast<const S*>(a);
  const S* B = reinterpret_cast<const S*>(b);
  S* C = reinterpret_cast<S*>(c);
  for (int64_t i = 0; i < p.m && !Interrupted(); ++i) {  // a stopped run drops the output
    for (int64_t j = 0; j < p.n; ++j) {
      auto acc = ComputeT<S>(0);
      for (int64_t q = 0; q < p.k; ++q) {
        const auto x = ToCompute(A[i * p.lhs.row_stride + q * p.lhs.col_stride]);
        const auto y = ToCompute(B[q * p.rhs.row_stride + j * p.rhs.col_stride]);
        acc = ops::Add::Apply(acc, ops::Multiply::Apply(x, y));
      }
      C[i * p.n + j] = FromCompute<S>(acc);
    }
  }
}

// Multiply-adds of one BLAS call at most when the product is split into row blocks, and the
// fewest rows a block has.
constexpr int64_t kGemmBlockWork = int64_t{1} << 30;
constexpr int64_t kGemmBlockRows = 1024;
// A device sharing the cores with other devices splits its GEMM over its DeviceThreadShare into
// blocks of at least this many multiply-adds (~1 ms on one AVX-512 core, against a pool wake-up
// of ~30 us) and kSplitMinDim rows or columns.
constexpr int64_t kSplitMinWork = int64_t{1} << 26;
constexpr int64_t kSplitMinDim = 64;

// Blocks a BLAS product is split into for the calling device (1: one call, as OpenBLAS threads
// it). Only when other devices compute at once: then OpenBLAS runs single-threaded and the blocks
// go to xshard's pool, each a one-thread call.
int64_t GemmSplits(const DotPlan::Impl& p) {
  const DeviceThreadShare share = CurrentDeviceThreadShare();
  if (!share.concurrent || share.threads <= 1) return 1;
  const int64_t work = p.m * p.n * p.k;
  return std::max<int64_t>(1, std::min<int64_t>({share.threads, work / kSplitMinWork,
                                                 std::max(p.m, p.n) / kSplitMinDim}));
}

// One [m, n] (or, for oneDNN, the innermost batch dim at once) product at the given pointers.

Status RunOne(DotPlan::Engine engine, const DotPlan::Impl& p, const std::byte* a,
              const std::byte* b, std::byte* c) {
  switch (engine) {
    case DotPlan::Engine::kOneDnn: {
      // A parallel region costs a thread wake-up (~30 us, far more on a loaded machine): small
      // products run on the calling thread alone (measured 64^3: 0.8 us on 1 thread, 2.8 us on
      // 2 once warm, milliseconds while the second thread is descheduled).
      const DeviceThreadShare share = CurrentDeviceThreadShare();
      const int64_t budget = share.threads > 0 ? share.threads : BlasThreads();
      const int64_t threads = std::min<int64_t>(budget, 1 + p.onednn_work / kOneDnnWorkPerThread);
      return p.onednn->Run(a, b, c, static_cast<int>(threads));
    }
    case DotPlan::Engine::kBlas: {
      // One huge product must not hold up a stopped run: past kGemmBlockWork multiply-adds the
      // rows of op(A) and C go in blocks with a stop check between (ParallelFor's interrupt).
      // Each block packs B again (N x K copies against rows x N x K multiply-adds), so blocks have
      // at least kGemmBlockRows rows: f32 4096x2048x2048 on one thread (4 blocks) measured 707 ms
      // median against 696 ms unblocked, inside the +-3 % noise of interleaved runs.
      //
      // Split over the device's threads (GemmSplits), the larger of m and n is cut, so that the
      // operand each block packs again (all of B for row blocks, all of A for column blocks) is
      // the smaller one.
      const int64_t splits = GemmSplits(p);
      const bool by_rows = p.m >= p.n;
      const int64_t span = by_rows ? p.m : p.n;
      auto call = [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* A = reinterpret_cast<const T*>(a);
        const T* B = reinterpret_cast<const T*>(b);
        T* C = reinterpret_cast<T*>(c);
        // Rows [m0, m1) x columns [n0, n1) of C, in row blocks of at most kGemmBlockWork.
        auto block = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
          const int64_t per_row = std::max<int64_t>(1, (n1 - n0) * p.k);
          const int64_t rows = m1 - m0 > kGemmBlockWork / per_row
                                   ? std::max<int64_t>(kGemmBlockRows, kGemmBlockWork / per_row)
                                   : m1 - m0;
          for (int64_t r0 = m0; r0 < m1; r0 += rows) {
            if (r0 > m0 && Interrupted()) return;  // the output is unfinished and dropped
            Gemm<T>(p.lhs.trans, p.rhs.trans, std::min(rows, m1 - r0), n1 - n0, p.k,
                    A + (p.lhs.trans ? r0 : r0 * p.lhs.ld), p.lhs.ld,
                    B + (p.rhs.trans ? n0 * p.rhs.ld : n0), p.rhs.ld, C + r0 * p.n + n0, p.n);
          }
        };
        if (splits <= 1) {
          block(0, p.m, 0, p.n);
          return;
        }
        ParallelFor(splits, static_cast<int>(splits), [&](int64_t i) {
          const int64_t lo = span * i / splits, hi = span * (i + 1) / splits;
          if (by_rows) {
            block(lo, hi, 0, p.n);
          } else {
            block(0, p.m, lo, hi);
          }
        });
      };
      switch (p.compute) {
        case DType::kF32: call(TypeTag<float>{}); break;
        case DType::kF64: call(TypeTag<double>{}); break;
        case DType::kC64: call(TypeTag<std::complex<float>>{}); break;
        default: call(TypeTag<std::complex<double>>{}); break;
      }
      return OkStatus();
    }
    default:
      VisitDType(
          p.compute, [&](auto tag) { NaiveGemm<typename decltype(tag)::type>(p, a, b, c); }, [] {});
      return OkStatus();
  }
}

// Small and medium f32 products (per call, the kind a device of a sharded model runs: attention
// heads, per-device projections) run through oneDNN's brgemm: measured on the transformer block of
// bench/jax_compare (8 devices, 1 thread each) ~6 % less CPU per call than OpenBLAS, whose sgemm
// zero-fills C and packs both operands on every call. Large ones (2048^3) stay on OpenBLAS, which
// scales them over threads well. XSHARD_F32_ONEDNN=0 / 1 forces the choice (A/B runs).
constexpr int64_t kOneDnnF32MaxWork = int64_t{1} << 30;

// When the loaded OpenBLAS core is below the CPU (a VM hiding its model, a user's
// OPENBLAS_CORETYPE, the Python module, which cannot re-execute itself), f32 goes to oneDNN at
// every size: 2048^3 on this Zen 4 with OpenBLAS forced to Prescott took 518 ms against 179 ms
// through oneDNN on one thread.
bool OpenBlasBelowCpu() {
  static const bool below = HostGemmPath().f32 == GemmLibrary::kOneDnn;
  return below;
}

bool UseOneDnnForF32(int64_t work) {
  static const int forced = [] {
    const char* v = std::getenv("XSHARD_F32_ONEDNN");
    return v == nullptr || *v == 0 ? -1 : (*v == '0' ? 0 : 1);
  }();
  static const bool supported = OneDnnMatmul::Supports(DType::kF32);
  if (forced >= 0) return forced == 1 && supported;
  if (work > 0 && OpenBlasBelowCpu()) return supported;
  return work > 0 && work <= kOneDnnF32MaxWork && supported;
}

// f16 x f16 through oneDNN where it has a non-reference f16 kernel (AVX512_FP16 CPUs with a
// oneDNN that has one; oneDNN 2.6 on AVX-512 without FP16 has none, so f16 runs on f32 copies).
bool OneDnnF16() {
  static const bool yes = HostGemmPath().f16 == HalfPath::kOneDnn;
  return yes;
}

bool FitsBlasInt(std::initializer_list<int64_t> values) {
  for (int64_t v : values) {
    if (v > INT_MAX) return false;
  }
  return true;
}

}  // namespace

DotPlan::~DotPlan() = default;

StatusOr<std::shared_ptr<const DotPlan>> DotPlan::Create(const Shape& lhs, const Shape& rhs,
                                                         const DotDimensionNumbers& dn,
                                                         DType result) {
  if (!lhs.IsArray() || !rhs.IsArray()) return InvalidArgument("dot operands must be arrays");
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims, DotResultDims(lhs.dims(), rhs.dims(), dn));
  if (!IsElementwiseDType(result)) return UnsupportedDType("dot", result);
  if (!IsElementwiseDType(lhs.dtype())) return UnsupportedDType("dot", lhs.dtype());
  if (!IsElementwiseDType(rhs.dtype())) return UnsupportedDType("dot", rhs.dtype());
  std::shared_ptr<DotPlan> plan(new DotPlan());
  plan->result_ = Shape(result, out_dims);
  // Narrow operands (f8*, f4e2m1fn, s2 / s4 / u2 / u4) reach the compute type through the operand
  // copies' convert (exact); a narrow result is computed as its wide twin (f32, s32 / u32) and
  // rounded back as XLA rounds an op result (FindResultRoundKernel).
  const DType final_result = result;
  result = WidenedDType(result);
  plan->impl_ = std::make_unique<Impl>();
  Impl& p = *plan->impl_;
  const std::vector<int64_t> lhs_free = GemmFreeDims(lhs.rank(), dn.lhs_batch, dn.lhs_contracting);
  const std::vector<int64_t> rhs_free = GemmFreeDims(rhs.rank(), dn.rhs_batch, dn.rhs_contracting);
  p.batch = SizeOf(lhs.dims(), dn.lhs_batch);
  p.m = SizeOf(lhs.dims(), lhs_free);
  p.n = SizeOf(rhs.dims(), rhs_free);
  p.k = SizeOf(lhs.dims(), dn.lhs_contracting);

  // Engine and compute types.
  const bool half_result = result == DType::kF16 || result == DType::kBF16;
  // bf16 x bf16 -> bf16 / f32 and (where oneDNN has the kernel) f16 x f16 -> f16 / f32.
  const bool half_onednn =
      (lhs.dtype() == DType::kBF16 && rhs.dtype() == DType::kBF16 &&
       (result == DType::kBF16 || result == DType::kF32)) ||
      (lhs.dtype() == DType::kF16 && rhs.dtype() == DType::kF16 &&
       (result == DType::kF16 || result == DType::kF32) && OneDnnF16());
  Engine engine;
  const bool f32_operands = lhs.dtype() == DType::kF32 && rhs.dtype() == DType::kF32;
  // f32 products through oneDNN; other mixes computed in f32 join them when OpenBLAS is below
  // the CPU (their operands are converted to f32 copies first, as for OpenBLAS).
  const bool f32_route = (f32_operands && result == DType::kF32) ||
                         ((half_result || result == DType::kF32) && OpenBlasBelowCpu());
  if (half_onednn) {
    engine = Engine::kOneDnn;
    p.compute = lhs.dtype();
    p.out_compute = result;
  } else if (f32_route && UseOneDnnForF32(p.batch * p.m * p.n * p.k)) {
    engine = Engine::kOneDnn;
    p.compute = p.out_compute = DType::kF32;
  } else if (half_result || result == DType::kF32 || result == DType::kF64 ||
             result == DType::kC64 || result == DType::kC128) {
    engine = Engine::kBlas;
    p.compute = p.out_compute = half_result ? DType::kF32 : result;
  } else {
    engine = Engine::kNaive;
    p.compute = p.out_compute = result;
  }

  auto plan_operands = [&](bool force_copy) -> Status {
    int64_t scratch = 0;
    p.lhs = OperandPlan();
    p.rhs = OperandPlan();
    XS_RETURN_IF_ERROR(PlanOperand(lhs, p.compute, dn.lhs_batch, lhs_free, dn.lhs_contracting,
                                   force_copy, &scratch, &p.lhs));
    XS_RETURN_IF_ERROR(PlanOperand(rhs, p.compute, dn.rhs_batch, dn.rhs_contracting, rhs_free,
                                   force_copy, &scratch, &p.rhs));
    p.out_offset = scratch;
    if (p.out_compute != final_result) scratch += AlignUp(plan->result_.num_elements() * DTypeSize(p.out_compute));
    plan->scratch_bytes_ = scratch;
    // Batch loop: output batch dims are row-major over [m, n] blocks; merge runs that stay
    // evenly strided in all three buffers.
    p.batch_dims.clear();
    int64_t out_stride = p.m * p.n;
    std::vector<BatchDim> rev;
    for (size_t i = dn.lhs_batch.size(); i-- > 0;) {
      const int64_t size = lhs.dims()[dn.lhs_batch[i]];
      const BatchDim d{size, p.lhs.batch_strides[i], p.rhs.batch_strides[i], out_stride};
      out_stride *= size;
      if (size == 1) continue;
      if (!rev.empty()) {
        BatchDim& in = rev.back();
        if (d.lhs == in.lhs * in.size && d.rhs == in.rhs * in.size && d.out == in.out * in.size) {
          in.size *= size;
          continue;
        }
      }
      rev.push_back(d);
    }
    p.batch_dims.assign(rev.rbegin(), rev.rend());
    return OkStatus();
  };
  XS_RETURN_IF_ERROR(plan_operands(false));

  if (engine == Engine::kOneDnn) {
    // `dims_in_call`: batch dims one call takes (1: the innermost; 2: the two innermost).
    auto make = [&](int dims_in_call = 1) -> StatusOr<std::unique_ptr<OneDnnMatmul>> {
      OneDnnMatmulShape s;
      s.a_type = s.w_type = p.compute;
      s.out_type = p.out_compute;
      s.m = p.m;
      s.n = p.n;
      s.k = p.k;
      const BatchDim inner = p.batch_dims.empty() ? BatchDim{1, p.m * p.k, p.k * p.n, p.m * p.n}
                                                  : p.batch_dims.back();
      s.batch = inner.size;
      s.a_strides = {inner.lhs, p.lhs.row_stride, p.lhs.col_stride};
      s.w_strides = {inner.rhs, p.rhs.row_stride, p.rhs.col_stride};
      if (dims_in_call == 2) {
        const BatchDim& outer = p.batch_dims[p.batch_dims.size() - 2];
        s.outer = outer.size;
        s.outer_strides = {outer.lhs, outer.rhs, outer.out};
      }
      return OneDnnMatmul::Create(s);
    };
    const bool empty = p.batch * p.m * p.n * p.k == 0;
    // Two batch dims that do not merge (the attention's [batch, heads], heads strided inside a row)
    // go to oneDNN in one 4-d call when its brgemm takes them as they lie: per-device products of
    // bench/jax_compare's transformer block measured (gemm_bench BM_AttentionDot, one thread)
    // 612 / 661 us CPU against 702 / 755 us for the per-head OpenBLAS loop, and 1-d oneDNN calls
    // of those strides get no brgemm.
    if (!empty && p.batch_dims.size() >= 2) {
      StatusOr<std::unique_ptr<OneDnnMatmul>> two = make(2);
      if (two.ok() && (*two)->impl().rfind("brg", 0) == 0) {
        p.onednn = std::move(*two);
        p.onednn_batch_dims = 2;
        p.onednn_work = p.batch_dims.back().size * p.batch_dims[p.batch_dims.size() - 2].size * p.m * p.n * p.k;
      }
    }
    StatusOr<std::unique_ptr<OneDnnMatmul>> mm =
        empty || p.onednn ? StatusOr<std::unique_ptr<OneDnnMatmul>>(nullptr) : make();
    if (p.onednn) {
      // planned above
    } else if (p.compute == DType::kF32) {
      // f32 through oneDNN only where its brgemm kernel takes the operands as they lie: every
      // other case is OpenBLAS's (no copies, no reference kernel). Below-CPU OpenBLAS loses to
      // any of oneDNN's jit kernels (gemm:jit too).
      if (mm.ok() && *mm && (*mm)->impl().rfind("brg", 0) != 0 && !OpenBlasBelowCpu()) mm = Internal("not brgemm");
    } else if (!mm.ok()) {  // a layout only oneDNN's reference kernel takes: copy the operands dense
      XS_RETURN_IF_ERROR(plan_operands(true));
      mm = make();
    } else if (*mm && (*mm)->impl().rfind("brg", 0) != 0 && plan_operands(true).ok()) {
      // oneDNN's fast (brgemm: AMX / AVX512_BF16) kernels take dense or transposed operands but
      // not every strided view, and fall back to gemm:jit (measured 2048x1024x2048 column half
      // with ld = 2 n: gemm:jit at ~40 % of brgemm). Copying is O(n^2) against O(n^3) compute.
      StatusOr<std::unique_ptr<OneDnnMatmul>> dense = make();
      if (dense.ok() && (*dense)->impl().rfind("brg", 0) == 0) {
        mm = std::move(dense);
      } else {
        XS_RETURN_IF_ERROR(plan_operands(false));
      }
    }
    if (p.onednn) {
    } else if (mm.ok()) {
      p.onednn = std::move(*mm);
      p.onednn_batch_dims = p.batch_dims.empty() ? 0 : 1;
      p.onednn_work = (p.batch_dims.empty() ? 1 : p.batch_dims.back().size) * p.m * p.n * p.k;
    } else {  // no oneDNN bf16 (or fast f32) here: f32 GEMM, bf16 on converted copies
      engine = Engine::kBlas;
      p.compute = p.out_compute = DType::kF32;
      XS_RETURN_IF_ERROR(plan_operands(false));
    }
  }
  if (engine == Engine::kBlas &&
      !FitsBlasInt({p.m, p.n, p.k, p.lhs.ld, p.rhs.ld})) {
    return Unimplemented("dot: GEMM dims m=", p.m, " n=", p.n, " k=", p.k,
                         " exceed BLAS's 32-bit sizes; split the dot");
  }
  if (p.out_compute != final_result) {
    if (result != final_result && p.out_compute != result)
      return Internal("dot: no engine result for ", DTypeName(final_result));
    XS_ASSIGN_OR_RETURN(p.out_convert, result != final_result ? FindResultRoundKernel(p.out_compute, final_result)
                                                              : FindConvertKernel(p.out_compute, result));
  }
  plan->engine_ = p.batch * p.m * p.n == 0 ? Engine::kEmpty : engine;
  plan->copied_operands_ = (p.lhs.convert || p.lhs.transpose) + (p.rhs.convert || p.rhs.transpose);
  return std::shared_ptr<const DotPlan>(std::move(plan));
}

std::string DotPlan::ToString() const {
  static const char* kNames[] = {"empty", "blas", "onednn", "naive"};
  const Impl& p = *impl_;
  std::string s = StrCat(kNames[static_cast<int>(engine_)], " ", DTypeName(p.compute), " batch=",
                         p.batch, " m=", p.m, " n=", p.n, " k=", p.k, " lhs=",
                         p.lhs.trans ? "T" : "N", " rhs=", p.rhs.trans ? "T" : "N",
                         " copies=", copied_operands_);
  if (p.onednn) StrAppend(&s, " impl=", p.onednn->impl());
  return s;
}

namespace {

const std::byte* PrepareOperand(const OperandPlan& p, const std::byte* data, std::byte* scratch) {
  if (p.convert) {
    p.convert(data, scratch + p.convert_offset, p.elements);
    data = scratch + p.convert_offset;
  }
  if (p.transpose) {
    TransposeInto(data, scratch + p.transpose_offset, p.elem_size, p.dims, p.perm);
    data = scratch + p.transpose_offset;
  }
  return data;
}

// Threads a batch of OpenBLAS products runs on at once, one product per thread (1: each product
// in turn, as OpenBLAS threads it). A device that computes alone with T > 1 threads hands its
// batches to xshard's pool, T at a time, each a one-thread call, when they split evenly (or there
// are at least 4 T of them): attention's 32 products of 512 x 512 x 64 on 2 threads each
// called OpenBLAS's threads 32 times, which then spin (sched_yield) for a while after every call,
// taking the cores from the fused loops that follow. Devices that share the cores already run
// OpenBLAS single-threaded and split big products instead (GemmSplits).
int64_t BatchThreads(DotPlan::Engine engine, int64_t batches) {
  if (engine != DotPlan::Engine::kBlas || batches < 2) return 1;
  const DeviceThreadShare share = CurrentDeviceThreadShare();
  if (share.concurrent) return 1;
  const int64_t threads = share.threads > 0 ? share.threads : BlasThreads();
  if (threads <= 1 || batches < threads) return 1;
  return batches % threads == 0 || batches >= 4 * threads ? threads : 1;
}

}  // namespace

Status DotPlan::Run(const std::byte* lhs, const std::byte* rhs, std::byte* out,
                    std::byte* scratch) const {
  const Impl& p = *impl_;
  if (engine_ == Engine::kEmpty) return OkStatus();
  if (p.k == 0) {
    std::memset(out, 0, static_cast<size_t>(result_.byte_size()));
    return OkStatus();
  }
  if (scratch == nullptr && scratch_bytes_ > 0) scratch = ThreadScratch(scratch_bytes_);
  const std::byte* a = PrepareOperand(p.lhs, lhs, scratch);
  const std::byte* b = PrepareOperand(p.rhs, rhs, scratch);
  std::byte* c = p.out_convert ? scratch + p.out_offset : out;
  // oneDNN takes the innermost one or two batch dims in one call; the other engines loop over all.
  const size_t looped = p.batch_dims.size() - (engine_ == Engine::kOneDnn ? p.onednn_batch_dims : 0);
  const int64_t es = p.lhs.elem_size, os = DTypeSize(p.out_compute);
  int64_t batches = 1;
  for (size_t i = 0; i < looped; ++i) batches *= p.batch_dims[i].size;
  const int64_t threads = BatchThreads(engine_, batches);
  std::vector<int64_t> idx(looped, 0);
  std::vector<std::array<int64_t, 3>> offsets;  // per batch when they run on the pool
  while (true) {
    int64_t la = 0, lb = 0, lc = 0;
    for (size_t i = 0; i < looped; ++i) {
      la += idx[i] * p.batch_dims[i].lhs;
      lb += idx[i] * p.batch_dims[i].rhs;
      lc += idx[i] * p.batch_dims[i].out;
    }
    if (threads > 1) {
      offsets.push_back({la * es, lb * es, lc * os});
    } else {
      if (Interrupted()) return OkStatus();  // a stopped run drops the output
      XS_RETURN_IF_ERROR(RunOne(engine_, p, a + la * es, b + lb * es, c + lc * os));
    }
    size_t i = looped;
    while (i > 0 && ++idx[i - 1] == p.batch_dims[i - 1].size) idx[--i] = 0;
    if (i == 0) break;
  }
  if (threads > 1) {
    const ScopedBlasThreads one_thread_each(1);
    XS_RETURN_IF_ERROR(ParallelForStatus(threads, static_cast<int>(threads), [&](int64_t t) -> Status {
      for (int64_t q = batches * t / threads; q < batches * (t + 1) / threads; ++q) {
        if (Interrupted()) return OkStatus();  // a stopped run drops the output
        const auto& o = offsets[static_cast<size_t>(q)];
        XS_RETURN_IF_ERROR(RunOne(engine_, p, a + o[0], b + o[1], c + o[2]));
      }
      return OkStatus();
    }));
  }
  if (p.out_convert) p.out_convert(c, out, result_.num_elements());
  return OkStatus();
}

StatusOr<Array> DotPlan::Run(const Array& lhs, const Array& rhs) const {
  const Impl& p = *impl_;
  if (lhs.dims() != p.lhs.dims || rhs.dims() != p.rhs.dims || lhs.dtype() != p.lhs.dtype ||
      rhs.dtype() != p.rhs.dtype) {
    return InvalidArgument("dot: operands ", lhs.shape().ToString(), " and ", rhs.shape().ToString(),
                           " differ from the planned ", Shape(p.lhs.dtype, p.lhs.dims).ToString(),
                           " and ", Shape(p.rhs.dtype, p.rhs.dims).ToString());
  }
  Array out(result_);
  XS_RETURN_IF_ERROR(Run(lhs.data(), rhs.data(), out.data()));
  return out;
}

}  // namespace xs::kernels
