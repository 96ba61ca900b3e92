// Pieces the oneDNN wrappers share (onednn_matmul.cc, onednn_conv.cc). Internal to kernels/.
#ifndef XSHARD_KERNELS_ONEDNN_INTERNAL_H_
#define XSHARD_KERNELS_ONEDNN_INTERNAL_H_

#include <omp.h>

#include <cstddef>

#include "oneapi/dnnl/dnnl.hpp"

namespace xs::kernels::onednn {

// The process's CPU engine.
dnnl::engine& Engine();

// Grow-only 64-byte aligned buffer per thread for oneDNN's scratchpads (AllocationFailure when
// the memory is not there).
void* ThreadScratch(size_t bytes);

// Sets the calling thread's OpenMP thread count for the scope (oneDNN sizes its parallel
// regions by it, at primitive creation and at execution).
class OmpThreads {
 public:
  explicit OmpThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~OmpThreads() { omp_set_num_threads(saved_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

}  // namespace xs::kernels::onednn

#endif  // XSHARD_KERNELS_ONEDNN_INTERNAL_H_
