// CUDA's built-ins for generated kernels compiled as host C++ (test binary only; holds no tests):
// a SIMT emulator that runs a launch with its real block size, each thread a fiber (a small
// context switch of its own on x86-64, ucontext elsewhere), so __syncthreads, warp shuffles and
// shared memory behave as on the GPU. See
// kernel_codegen_test_util.h (HostKernels) for what it checks and what it does not.
#ifdef XSHARD_WITH_CUDA

#include "xshard/cuda/kernel_codegen_test_util.h"

namespace xs::cuda::testing {

// The emulator, as C++ source put ahead of the kernels. Semantics:
// - blocks run one after another; the threads of a block are fibers switched only at
//   __syncthreads and warp operations (shuffles, __syncwarp), so everything between two
//   switches, an atomic included, is indivisible;
// - __syncthreads waits for every thread of the block that has not returned; a warp operation
//   waits for every lane of its warp that has not returned; a thread waiting at one while
//   another waits at the other, or a shuffle reading a lane that has returned or does not exist,
//   is reported as an error (undefined on the GPU);
// - kernels without __syncthreads or warp operations run thread after thread, without fibers;
// - `__shared__` variables are statics: one copy, reused by each block in turn, never cleared
//   (the GPU does not clear them either); dynamic shared memory is one buffer of the launch's
//   shared_bytes.
const char* HostShim() {
  return R"SHIM(#include <math.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <functional>
#include <ucontext.h>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
#define __restrict__
struct xs_dim3 { unsigned x, y, z; };
namespace xs_emu {
enum State { kReady, kAtSyncthreads, kAtWarp, kDone };
#if defined(__x86_64__)
// A context switch without glibc's swapcontext, whose signal-mask system call made warp-heavy
// kernels ~30x slower: saves the callee-saved registers on the old stack, stores its stack
// pointer in *from and resumes the context whose stack pointer is `to`.
extern "C" void xs_emu_switch(void** from, void* to);
asm(R"ASM(
.text
.p2align 4
.type xs_emu_switch,@function
xs_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size xs_emu_switch,.-xs_emu_switch
)ASM");
#endif
struct Fiber {
#if defined(__x86_64__)
  void* sp = nullptr;
#else
  ucontext_t ctx;
#endif
  State state = kReady;
};
inline xs_dim3 block_idx{0, 0, 0}, thread_idx{0, 0, 0}, block_dim{1, 1, 1}, grid_dim{1, 1, 1};
inline std::vector<Fiber> fibers;
inline std::vector<std::vector<char>> stacks;
#if defined(__x86_64__)
inline void* scheduler = nullptr;
#else
inline ucontext_t scheduler;
#endif
inline int current = 0;
inline bool use_fibers = false;
inline const std::function<void()>* body = nullptr;
inline std::vector<unsigned long long> lane_values;
inline std::vector<unsigned char> dynamic_shared;
inline char error[512];
inline void Fail(const char* what) {
  if (error[0] == 0) snprintf(error, sizeof(error), "block %u thread %u: %s", block_idx.x, thread_idx.x, what);
}
inline void Yield(State s) {
  if (!use_fibers) {
    Fail("a barrier or warp operation in a kernel run without fibers");
    return;
  }
  fibers[current].state = s;
#if defined(__x86_64__)
  xs_emu_switch(&fibers[current].sp, scheduler);
#else
  swapcontext(&fibers[current].ctx, &scheduler);
#endif
}
inline void FiberMain() {
  (*body)();
  fibers[current].state = kDone;
#if defined(__x86_64__)
  void* unused = nullptr;
  xs_emu_switch(&unused, scheduler);  // never resumed
#endif
}
// Runs one block: every thread to completion, releasing barriers as they fill.
inline void RunBlock(int threads) {
  if (!use_fibers) {
    for (int t = 0; t < threads; ++t) {
      current = t;
      thread_idx = {static_cast<unsigned>(t), 0, 0};
      (*body)();
    }
    return;
  }
  fibers.assign(threads, Fiber{});
  if (static_cast<int>(stacks.size()) < threads) stacks.resize(threads);
  for (int t = 0; t < threads; ++t) {
    stacks[t].resize(1 << 17);
#if defined(__x86_64__)
    // The first switch pops six zero registers and returns into FiberMain, whose stack then
    // looks as after a call (a 16-byte aligned top and a null return address).
    uintptr_t top = (reinterpret_cast<uintptr_t>(stacks[t].data()) + stacks[t].size()) & ~uintptr_t{15};
    void** sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;
    *--sp = reinterpret_cast<void*>(&FiberMain);
    for (int r = 0; r < 6; ++r) *--sp = nullptr;
    fibers[t].sp = sp;
#else
    getcontext(&fibers[t].ctx);
    fibers[t].ctx.uc_stack.ss_sp = stacks[t].data();
    fibers[t].ctx.uc_stack.ss_size = stacks[t].size();
    fibers[t].ctx.uc_link = &scheduler;
    makecontext(&fibers[t].ctx, FiberMain, 0);
#endif
  }
  for (;;) {
    for (int t = 0; t < threads; ++t) {
      if (fibers[t].state != kReady) continue;
      current = t;
      thread_idx = {static_cast<unsigned>(t), 0, 0};
#if defined(__x86_64__)
      xs_emu_switch(&scheduler, fibers[t].sp);
#else
      swapcontext(&scheduler, &fibers[t].ctx);
#endif
    }
    int done = 0, at_sync = 0;
    for (const Fiber& f : fibers) {
      done += f.state == kDone;
      at_sync += f.state == kAtSyncthreads;
    }
    if (done == threads) return;
    bool released = false;
    for (int w = 0; w * 32 < threads; ++w) {
      int waiting = 0, live = 0;
      for (int t = w * 32; t < threads && t < w * 32 + 32; ++t) {
        live += fibers[t].state != kDone;
        waiting += fibers[t].state == kAtWarp;
      }
      if (waiting > 0 && waiting == live) {
        for (int t = w * 32; t < threads && t < w * 32 + 32; ++t) {
          if (fibers[t].state == kAtWarp) fibers[t].state = kReady;
        }
        released = true;
      }
    }
    if (!released && at_sync > 0 && at_sync + done == threads) {
      for (Fiber& f : fibers) {
        if (f.state == kAtSyncthreads) f.state = kReady;
      }
      released = true;
    }
    if (!released) {
      if (error[0] == 0) {
        snprintf(error, sizeof(error),
                 "block %u: deadlock: %d threads wait at __syncthreads while others wait at a warp operation",
                 block_idx.x, at_sync);
      }
      return;  // the fibers are abandoned; the launch reports the error
    }
  }
}
// Runs `kernel` over min(grid, max_blocks) x grid_y blocks of `block` threads (kernels are
// grid-stride in x, so fewer blocks compute the same result); returns an error message or
// nullptr.
inline const char* Launch(const std::function<void()>& kernel, long long grid, int block, long long shared_bytes,
                          bool cooperative, long long max_blocks, long long grid_y = 1) {
  error[0] = 0;
  body = &kernel;
  use_fibers = cooperative;
  const long long blocks = grid < max_blocks ? grid : max_blocks;
  grid_dim = {static_cast<unsigned>(blocks), static_cast<unsigned>(grid_y), 1};
  block_dim = {static_cast<unsigned>(block), 1, 1};
  lane_values.assign(block, 0);
  dynamic_shared.assign(shared_bytes > 0 ? shared_bytes : 16, 0xcd);
  for (long long y = 0; y < grid_y && error[0] == 0; ++y) {
    for (long long b = 0; b < blocks && error[0] == 0; ++b) {
      block_idx = {static_cast<unsigned>(b), static_cast<unsigned>(y), 0};
      RunBlock(block);
    }
  }
  return error[0] == 0 ? nullptr : error;
}
// A shuffle: every lane of the warp publishes `v`, then reads lane `src` (its own value when
// `src` is outside the warp's segment of `width`).
template <typename T>
inline T Shuffle(T v, int src, bool inside) {
  static_assert(sizeof(T) <= sizeof(unsigned long long), "shuffle of a wide type");
  if (!use_fibers) {
    Fail("a warp shuffle in a kernel run without fibers");
    return v;
  }
  const int me = static_cast<int>(thread_idx.x);
  unsigned long long bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  lane_values[me] = bits;
  Yield(kAtWarp);
  T out = v;
  if (inside) {
    const int from = me - me % 32 + src;
    if (from >= static_cast<int>(block_dim.x) || fibers[from].state == kDone) {
      Fail("a shuffle reads a lane that has returned or does not exist");
    } else {
      std::memcpy(&out, &lane_values[from], sizeof(T));
    }
  }
  Yield(kAtWarp);
  return out;
}
}  // namespace xs_emu
#define blockIdx xs_emu::block_idx
#define threadIdx xs_emu::thread_idx
#define blockDim xs_emu::block_dim
#define gridDim xs_emu::grid_dim
template <typename D, typename S> inline D xs_host_bits(S s) { D d; std::memcpy(&d, &s, sizeof(d)); return d; }
inline unsigned __float_as_uint(float f) { return xs_host_bits<unsigned>(f); }
inline int __float_as_int(float f) { return xs_host_bits<int>(f); }
inline float __uint_as_float(unsigned u) { return xs_host_bits<float>(u); }
inline float __int_as_float(int u) { return xs_host_bits<float>(u); }
inline long long __double_as_longlong(double d) { return xs_host_bits<long long>(d); }
inline double __longlong_as_double(long long v) { return xs_host_bits<double>(v); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline void __syncthreads() { xs_emu::Yield(xs_emu::kAtSyncthreads); }
inline void __syncwarp(unsigned = 0xffffffffu) { xs_emu::Yield(xs_emu::kAtWarp); }
template <typename T> inline T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int in_segment = lane % width + static_cast<int>(delta);
  return xs_emu::Shuffle(v, lane + static_cast<int>(delta), in_segment < width);
}
template <typename T> inline T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  return xs_emu::Shuffle(v, lane - static_cast<int>(delta), lane % width >= static_cast<int>(delta));
}
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int src = lane ^ mask;
  return xs_emu::Shuffle(v, src, src / width == lane / width);
}
template <typename T> inline T __shfl_sync(unsigned, T v, int src, int width = 32) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  return xs_emu::Shuffle(v, lane - lane % width + src % width, true);
}
// Atomics (scatter kernels): fibers switch only at barriers and warp operations, so a plain
// read-modify-write is indivisible here; each returns the old value as CUDA's do.
template <typename T, typename U> inline T atomicAdd(T* p, U v) { const T old = *p; *p = (T)(old + (T)v); return old; }
template <typename T, typename U> inline T atomicMax(T* p, U v) { const T old = *p; if ((T)v > old) *p = (T)v; return old; }
template <typename T, typename U> inline T atomicMin(T* p, U v) { const T old = *p; if ((T)v < old) *p = (T)v; return old; }
template <typename T, typename U> inline T atomicAnd(T* p, U v) { const T old = *p; *p = (T)(old & (T)v); return old; }
template <typename T, typename U> inline T atomicOr(T* p, U v) { const T old = *p; *p = (T)(old | (T)v); return old; }
template <typename T, typename U> inline T atomicCAS(T* p, U compare, U v) {
  const T old = *p;
  if (old == (T)compare) *p = (T)v;
  return old;
}
)SHIM";
}

}  // namespace xs::cuda::testing

#endif  // XSHARD_WITH_CUDA
