// The virtual-GPU collective kernels without a GPU: their generated sources compiled for the host
// and run by the SIMT emulator (kernel_codegen_test_util.h) with the parameters EnqueueCopy /
// EnqueueReduce would launch (PrepareCopy / PrepareReduce), against plain loops and the CPU
// communicators' reduction (comm/reduction.h). f16 reductions convert through PTX and run only
// on a GPU.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/comm/reduction.h"
#include "xshard/core/dtype.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/cuda/virtual_gpu_kernels.h"

namespace xs::cuda {
namespace {

using Entry = const char* (*)(const void* params, long long grid_x, long long grid_y, int block);

// Each source in a namespace of its own, its entry renamed, with a host entry run_<i>.
std::string Wrap(const KernelSource& src, int i, const std::string& entry, const std::string& args_type) {
  std::string code = src.code;
  const std::string renamed = StrCat("xs_k", i);
  for (size_t at = code.find(entry); at != std::string::npos; at = code.find(entry, at + renamed.size())) {
    code.replace(at, entry.size(), renamed);
  }
  return StrCat("namespace k", i, " {\n", code, "\n}\nextern \"C\" const char* run_", i,
                "(const void* params, long long gx, long long gy, int block) {\n  k", i, "::", args_type,
                " a;\n  std::memcpy(&a, params, sizeof(a));\n  const std::function<void()> run = [&] { k", i, "::", renamed,
                "(a); };\n  return xs_emu::Launch(run, gx, block, 0, false, 3, gy);\n}\n");
}

class Library {
 public:
  explicit Library(const std::string& code) {
    StatusOr<void*> h = testing::CompileHostLibrary(std::string(testing::HostShim()) + code);
    EXPECT_TRUE(h.ok()) << h.status().message();
    if (h.ok()) handle_ = *h;
  }
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  Entry Find(int i) const {
    return handle_ == nullptr ? nullptr : reinterpret_cast<Entry>(dlsym(handle_, StrCat("run_", i).c_str()));
  }

 private:
  void* handle_ = nullptr;
};

Status RunOnHost(Entry entry, const CollectiveLaunch& launch) {
  if (launch.params.empty()) return OkStatus();
  const char* error = entry(launch.params.data(), launch.grid.x, launch.grid.y, static_cast<int>(launch.block.x));
  if (error != nullptr) return Internal(error);
  return OkStatus();
}

// Strided copies of the shapes the communicator issues (all-gather into a slice of the output,
// all-to-all chunks, permutes), with element sizes 1-8 and offsets that defeat 16-byte access.
TEST(VirtualGpuKernelsOnTheHost, StridedCopiesMoveEveryElementOfEveryPiece) {
  Library lib(Wrap(CollectiveCopySource(), 0, "xs_collective_copy", "CopyArgs"));
  Entry entry = lib.Find(0);
  ASSERT_NE(entry, nullptr);
  std::mt19937_64 rng(11);
  int cases = 0, vectorized = 0;
  for (int iter = 0; iter < 60; ++iter) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    const int64_t esize = int64_t{1} << (rng() % 4);
    const int pieces = 1 + static_cast<int>(rng() % 8);
    std::vector<int64_t> dims(rank), src_full(rank), dst_full(rank);
    for (int d = 0; d < rank; ++d) {
      dims[d] = 1 + static_cast<int64_t>(rng() % 9);
      src_full[d] = dims[d] + (rng() % 3 == 0 ? static_cast<int64_t>(rng() % 4) : 0);
      dst_full[d] = dims[d] + (rng() % 3 == 0 ? static_cast<int64_t>(rng() % 4) : 0);
    }
    auto strides = [](const std::vector<int64_t>& full) {
      std::vector<int64_t> s(full.size(), 1);
      for (int d = static_cast<int>(full.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * full[d + 1];
      return s;
    };
    int64_t src_elems = 1, dst_elems = 1, count = 1;
    for (int d = 0; d < rank; ++d) {
      src_elems *= src_full[d];
      dst_elems *= dst_full[d];
      count *= dims[d];
    }
    const int64_t offset = rng() % 2 == 0 ? 0 : 1;  // elements: breaks 16-byte alignment
    std::vector<std::vector<std::byte>> src(pieces), dst(pieces), want(pieces);
    CopyJob job;
    job.dims = dims;
    job.src_strides = strides(src_full);
    job.dst_strides = strides(dst_full);
    job.element_bytes = esize;
    for (int p = 0; p < pieces; ++p) {
      src[p].resize((src_elems + 2) * esize + 16);
      dst[p].assign((dst_elems + 2) * esize + 16, std::byte{0});
      for (std::byte& b : src[p]) b = static_cast<std::byte>(rng());
      want[p] = dst[p];
      // 16-byte aligned bases (vector's storage is), then the offset.
      std::byte* s0 = src[p].data() + (16 - reinterpret_cast<uintptr_t>(src[p].data()) % 16) % 16;
      std::byte* d0 = dst[p].data() + (16 - reinterpret_cast<uintptr_t>(dst[p].data()) % 16) % 16;
      if (s0 + (src_elems + 1) * esize > src[p].data() + src[p].size()) s0 = src[p].data();
      if (d0 + (dst_elems + 1) * esize > dst[p].data() + dst[p].size()) d0 = dst[p].data();
      job.src.push_back(s0 + offset * esize);
      job.dst.push_back(d0 + offset * esize);
      for (int64_t i = 0; i < count; ++i) {
        int64_t q = i, so = 0, dof = 0;
        for (int d = rank - 1; d >= 0; --d) {
          const int64_t x = q % dims[d];
          q /= dims[d];
          so += x * job.src_strides[d];
          dof += x * job.dst_strides[d];
        }
        std::memcpy(want[p].data() + (job.dst[p] - dst[p].data()) + dof * esize, job.src[p] + so * esize, esize);
      }
    }
    StatusOr<CollectiveLaunch> launch = PrepareCopy(job);
    ASSERT_TRUE(launch.ok()) << launch.status().message();
    ASSERT_EQ(launch->grid.y, static_cast<unsigned>(pieces));
    int32_t unit = 0;
    std::memcpy(&unit, launch->params.data() + launch->params.size() - 8, sizeof(unit));
    vectorized += unit == 16;
    Status st = RunOnHost(entry, *launch);
    ASSERT_TRUE(st.ok()) << st.message();
    for (int p = 0; p < pieces; ++p) {
      ASSERT_EQ(dst[p], want[p]) << "case " << iter << " piece " << p << ": dims [" << StrJoin(dims, ",")
                                 << "] element " << esize << " B, offset " << offset;
    }
    ++cases;
  }
  EXPECT_EQ(cases, 60);
  EXPECT_GT(vectorized, 0) << "no case took the 16-byte path";
}

bool SameValue(DType t, const std::byte* a, const std::byte* b) {
  if (std::memcmp(a, b, DTypeSize(t)) == 0) return true;
  if (t == DType::kF32 || t == DType::kF64) {
    const double x = t == DType::kF32 ? *reinterpret_cast<const float*>(a) : *reinterpret_cast<const double*>(a);
    const double y = t == DType::kF32 ? *reinterpret_cast<const float*>(b) : *reinterpret_cast<const double*>(b);
    return std::isnan(x) && std::isnan(y);
  }
  if (t == DType::kBF16) {
    uint16_t x, y;
    std::memcpy(&x, a, 2);
    std::memcpy(&y, b, 2);
    return (x & 0x7fff) > 0x7f80 && (y & 0x7fff) > 0x7f80;
  }
  return false;
}

// Every reducer over every dtype the kernels take (f16 aside), n peers, several rows with a
// source row stride, aligned (16-byte path) and not, against comm/reduction.h's left-to-right
// combination, bit for bit (any NaN matching any NaN).
TEST(VirtualGpuKernelsOnTheHost, ReductionsEqualTheCpuCommunicatorsBitForBit) {
  struct Case {
    ReductionKind r;
    DType t;
  };
  std::vector<Case> cases;
  const ReductionKind all[] = {ReductionKind::kSum, ReductionKind::kProduct, ReductionKind::kMin,
                               ReductionKind::kMax, ReductionKind::kAnd, ReductionKind::kOr};
  for (DType t : {DType::kPred, DType::kS8, DType::kS16, DType::kS32, DType::kS64, DType::kU8, DType::kU16, DType::kU32,
                  DType::kU64, DType::kF32, DType::kF64, DType::kBF16}) {
    for (ReductionKind r : all) {
      if (CheckReduction(r, t, "test").ok()) cases.push_back({r, t});
    }
  }
  std::string code;
  for (size_t i = 0; i < cases.size(); ++i) {
    StatusOr<KernelSource> src = CollectiveReduceSource(cases[i].r, cases[i].t);
    ASSERT_TRUE(src.ok()) << src.status().message();
    code += Wrap(*src, static_cast<int>(i), "xs_collective_reduce", "ReduceArgs");
  }
  Library lib(code);
  std::mt19937_64 rng(5);
  int checked = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case c = cases[i];
    Entry entry = lib.Find(static_cast<int>(i));
    ASSERT_NE(entry, nullptr);
    const int64_t es = DTypeSize(c.t);
    for (int shape = 0; shape < 4; ++shape) {
      const int n = shape == 0 ? 1 : shape == 1 ? 2 : shape == 2 ? 3 : 8;
      const int64_t rows = shape % 2 == 0 ? 1 : 3;
      const int64_t row_elems = shape == 3 ? 16 / es * 5 : 7 + shape;  // the last: 16-byte rows
      const int64_t stride = rows == 1 ? row_elems : row_elems + (shape == 3 ? 16 / es : 3);
      std::vector<std::vector<std::byte>> srcs(n, std::vector<std::byte>(rows * stride * es + 32));
      for (auto& s : srcs) {
        for (int64_t e = 0; e < static_cast<int64_t>(s.size()) / es; ++e) {
          std::byte* p = s.data() + e * es;
          if (c.t == DType::kF32) {
            const float v = rng() % 17 == 0 ? NAN : static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 7.0f;
            std::memcpy(p, &v, 4);
          } else if (c.t == DType::kF64) {
            const double v = rng() % 17 == 0 ? NAN : static_cast<double>(static_cast<int>(rng() % 2001) - 1000) / 7.0;
            std::memcpy(p, &v, 8);
          } else if (c.t == DType::kBF16) {
            const float v = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 7.0f;
            uint32_t bits;
            std::memcpy(&bits, &v, 4);
            const uint16_t h = rng() % 17 == 0 ? 0x7fc0 : static_cast<uint16_t>(bits >> 16);
            std::memcpy(p, &h, 2);
          } else if (c.t == DType::kPred) {
            *p = static_cast<std::byte>(rng() % 2);
          } else {
            const uint64_t v = rng();
            std::memcpy(p, &v, es);
          }
        }
      }
      // 16-byte aligned sources and output for the vector path.
      auto aligned = [](std::vector<std::byte>& v) {
        return v.data() + (16 - reinterpret_cast<uintptr_t>(v.data()) % 16) % 16;
      };
      std::vector<std::byte> out(rows * row_elems * es + 32, std::byte{0}), want = out;
      ReduceJob job;
      job.reduction = c.r;
      job.dtype = c.t;
      for (auto& s : srcs) job.srcs.push_back(aligned(s));
      job.out = aligned(out);
      job.rows = rows;
      job.row_elements = row_elems;
      job.src_row_stride = stride;
      std::byte* want_out = want.data() + (job.out - out.data());
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<const std::byte*> row_srcs;
        for (const std::byte* s : job.srcs) row_srcs.push_back(s + r * stride * es);
        ReduceMany(c.r, c.t, want_out + r * row_elems * es, row_srcs, row_elems);
      }
      StatusOr<CollectiveLaunch> launch = PrepareReduce(job);
      ASSERT_TRUE(launch.ok()) << launch.status().message();
      Status st = RunOnHost(entry, *launch);
      ASSERT_TRUE(st.ok()) << st.message();
      for (int64_t e = 0; e < rows * row_elems; ++e) {
        ASSERT_TRUE(SameValue(c.t, job.out + e * es, want_out + e * es))
            << ReductionKindName(c.r) << " over " << DTypeName(c.t) << ", " << n << " peers, " << rows << " rows of "
            << row_elems << ": element " << e << " differs";
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(cases.size()) * 4);
  EXPECT_GE(cases.size(), 60u);
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(VirtualGpuKernelsOnTheHost, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif  // XSHARD_WITH_CUDA
