// ComputeGate: lets at most `slots` virtual devices of one SPMD run execute a large kernel at
// once. Devices outnumber cores (8, 128, even 1536 virtual devices on 2 cores); ungated, every
// device's kernel runs at the same time, time-sliced, and every kernel's scratch (im2col patches,
// f32 copies of bf16 operands) is alive at once: 128 devices x 150 MB of convolution scratch is
// 19 GB. Gated to twice the core count (Client::kGateSlotsPerCore), scratch peaks at 2 x cores x
// that, at the same or better throughput (the cores were the limit; one slot per core left a core
// idle while a freed slot's next holder woke up). Only kernels that cannot wait on another device are gated (never a
// collective or a call / while / conditional whose body communicates), so a gate can never deadlock a run. The gate
// does spread the devices' arrival at the next collective (the last of N devices starts its kernel N / cores kernels
// after the first): collectives keep waiting, instead of timing out, while any device is queued at or inside the gate
// (Busy()), since a device that computes has not hung.
#ifndef XSHARD_KERNELS_COMPUTE_GATE_H_
#define XSHARD_KERNELS_COMPUTE_GATE_H_

#include <atomic>
#include <cstdint>
#include <semaphore>

namespace xs {

class ComputeGate {
 public:
  // XS_CHECK: 1 <= slots <= kMaxSlots.
  explicit ComputeGate(int64_t slots);
  ComputeGate(const ComputeGate&) = delete;
  ComputeGate& operator=(const ComputeGate&) = delete;

  static constexpr int64_t kMaxSlots = 4096;
  int64_t slots() const { return slots_; }

  // Blocks until a slot is free and takes it / gives it back.
  void Enter() {
    busy_.fetch_add(1, std::memory_order_seq_cst);
    semaphore_.acquire();
  }
  void Leave() {
    semaphore_.release();
    busy_.fetch_sub(1, std::memory_order_seq_cst);
  }
  // Some thread is queued at or inside the gate.
  bool Busy() const { return busy_.load(std::memory_order_seq_cst) > 0; }

 private:
  const int64_t slots_;
  std::counting_semaphore<kMaxSlots> semaphore_;
  std::atomic<int64_t> busy_{0};
};

}  // namespace xs

#endif  // XSHARD_KERNELS_COMPUTE_GATE_H_
