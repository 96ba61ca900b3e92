// oneDNN matmul wrapper: one primitive descriptor per shape, primitives cached per OpenMP thread
// count, user-managed scratchpad (so concurrent devices can run one primitive at once).
#include "xshard/kernels/onednn_matmul.h"

#include <omp.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"
#include "xshard/core/allocation_failure.h"
#include "xshard/kernels/onednn_internal.h"

namespace xs::kernels {
namespace onednn {

dnnl::engine& Engine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

void* ThreadScratch(size_t bytes) {
  struct Buffer {
    void* p = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(p); }
  };
  thread_local Buffer buf;
  if (bytes > buf.size) {
    std::free(buf.p);
    buf.size = (bytes + 63) / 64 * 64;
    buf.p = std::aligned_alloc(64, buf.size);
    if (buf.p == nullptr) {
      buf.size = 0;
      throw AllocationFailure(static_cast<int64_t>(bytes), "oneDNN scratch");
    }
  }
  return buf.p;
}

}  // namespace onednn
namespace {

using onednn::Engine;
using onednn::OmpThreads;
using onednn::ThreadScratch;

StatusOr<dnnl::memory::data_type> DnnlType(DType t) {
  switch (t) {
    case DType::kBF16: return dnnl::memory::data_type::bf16;
    case DType::kF16: return dnnl::memory::data_type::f16;
    case DType::kF32: return dnnl::memory::data_type::f32;
    default: return Unimplemented("oneDNN matmul: no ", DTypeName(t), " support");
  }
}

}  // namespace

struct OneDnnMatmul::State {
  struct Entry {
    int threads;
    std::shared_ptr<const dnnl::matmul::primitive_desc> pd;
    std::shared_ptr<const dnnl::matmul> prim;
  };
  dnnl::matmul::desc desc;
  std::mutex mu;
  std::vector<Entry> entries;

  explicit State(dnnl::matmul::desc d) : desc(std::move(d)) {}

  // The primitive for `threads`, made (with that many OpenMP threads current) on first use.
  Entry Get(int threads) {
    std::lock_guard<std::mutex> lock(mu);
    for (const Entry& e : entries) {
      if (e.threads == threads) return e;
    }
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    auto pd = std::make_shared<const dnnl::matmul::primitive_desc>(desc, attr, Engine());
    entries.push_back({threads, pd, std::make_shared<const dnnl::matmul>(*pd)});
    return entries.back();
  }
};

OneDnnMatmul::~OneDnnMatmul() = default;

bool OneDnnMatmul::Supports(DType type) {
  OneDnnMatmulShape s;
  s.a_type = s.w_type = type;
  s.out_type = DType::kF32;
  s.m = s.n = s.k = 16;
  s.a_strides = {256, 16, 1};
  s.w_strides = {256, 16, 1};
  return Create(s).ok();
}

StatusOr<std::unique_ptr<OneDnnMatmul>> OneDnnMatmul::Create(const OneDnnMatmulShape& s,
                                                             bool allow_reference) {
  XS_ASSIGN_OR_RETURN(dnnl::memory::data_type at, DnnlType(s.a_type));
  XS_ASSIGN_OR_RETURN(dnnl::memory::data_type wt, DnnlType(s.w_type));
  XS_ASSIGN_OR_RETURN(dnnl::memory::data_type ot, DnnlType(s.out_type));
  using dims = dnnl::memory::dims;
  std::unique_ptr<OneDnnMatmul> mm(new OneDnnMatmul());
  try {
    dnnl::memory::desc a, w, o;
    if (s.outer > 1) {
      const auto& os = s.outer_strides;
      a = dnnl::memory::desc({s.outer, s.batch, s.m, s.k}, at, dims{os[0], s.a_strides[0], s.a_strides[1], s.a_strides[2]});
      w = dnnl::memory::desc({s.outer, s.batch, s.k, s.n}, wt, dims{os[1], s.w_strides[0], s.w_strides[1], s.w_strides[2]});
      o = dnnl::memory::desc({s.outer, s.batch, s.m, s.n}, ot, dims{os[2], s.m * s.n, s.n, 1});
    } else {
      a = dnnl::memory::desc({s.batch, s.m, s.k}, at, dims{s.a_strides[0], s.a_strides[1], s.a_strides[2]});
      w = dnnl::memory::desc({s.batch, s.k, s.n}, wt, dims{s.w_strides[0], s.w_strides[1], s.w_strides[2]});
      o = dnnl::memory::desc({s.batch, s.m, s.n}, ot, dims{s.m * s.n, s.n, 1});
    }
    mm->state_ = std::make_unique<State>(dnnl::matmul::desc(a, w, o));
    mm->impl_name_ = mm->state_->Get(omp_get_max_threads()).pd->impl_info_str();
  } catch (const dnnl::error& e) {
    return Unimplemented("oneDNN matmul ", DTypeName(s.a_type), " x ", DTypeName(s.w_type), " -> ",
                         DTypeName(s.out_type), ": ", e.what());
  }
  if (!allow_reference && mm->impl_name_.find("ref") != std::string::npos) {
    return Unimplemented("oneDNN matmul: only the reference implementation (", mm->impl_name_,
                         ") fits this shape");
  }
  return mm;
}

Status OneDnnMatmul::Run(const void* a, const void* w, void* out, int threads) const {
  if (threads < 1) threads = 1;
  OmpThreads scope(threads);
  try {
    const State::Entry e = state_->Get(threads);
    const dnnl::matmul::primitive_desc* pd = e.pd.get();
    thread_local dnnl::stream stream(Engine());
    dnnl::engine& eng = Engine();
    dnnl::memory am(pd->src_desc(), eng, const_cast<void*>(a));
    dnnl::memory wm(pd->weights_desc(), eng, const_cast<void*>(w));
    dnnl::memory om(pd->dst_desc(), eng, out);
    const dnnl::memory::desc sd = pd->scratchpad_desc();
    dnnl::memory sm(sd, eng, ThreadScratch(sd.get_size() + 64));
    e.prim->execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, om},
                           {DNNL_ARG_SCRATCHPAD, sm}});
    stream.wait();
  } catch (const dnnl::error& e) {
    return Internal("oneDNN matmul failed: ", e.what());
  }
  return OkStatus();
}

}  // namespace xs::kernels
