// Remote asynchronous copies and semaphores between the devices running one Pallas-style kernel
// (cmm/kernel.h), addressed by mesh coordinates on meshes of any rank or by logical device id:
// MakeAsyncRemoteCopy(src, dst, send_sem, recv_sem, device_id).Start() / .Wait(),
// SemaphoreSignal, SemaphoreWait, and the RemoteTransport interface that moves the bytes. The
// in-process transport copies into the peer's buffer and counts on atomics; every wait has a
// deadline, and a peer that never arrives or never signals ends in an error naming the kernel, the
// device and the semaphore (and aborts the transport so the other devices stop too).
//
//   // inside a kernel body on a 2x2x2 mesh ('x', 'y', 'z'): send my shard to x + 1
//   XS_ASSIGN_OR_RETURN(AsyncCopy c, MakeAsyncRemoteCopy(k.in(0), slot, k.sem(0), k.sem(1),
//                                        DeviceId::Axes({{"x", (x + 1) % nx}})));
//   XS_RETURN_IF_ERROR(c.Start());
//   XS_RETURN_IF_ERROR(c.Wait());   // my send is done and my left neighbour's data arrived
#ifndef XSHARD_CMM_REMOTE_COPY_H_
#define XSHARD_CMM_REMOTE_COPY_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/cmm/kernel_ref.h"
#include "xshard/sharding/mesh.h"

namespace xs::cmm {

// The destination of a remote copy or signal (Pallas's device_id with its DeviceIdType).
class DeviceId {
 public:
  // DeviceIdType.MESH with a tuple: one coordinate per mesh axis, in mesh order.
  static DeviceId Mesh(std::vector<int64_t> coords);
  // DeviceIdType.MESH with a dict: the named axes take the given coordinates, the others keep
  // the calling device's.
  static DeviceId Axes(std::vector<std::pair<std::string, int64_t>> axes);
  // DeviceIdType.LOGICAL: a device id of the mesh.
  static DeviceId Logical(int64_t device);

  // The device id this names for `self` on `mesh`. Errors name the id, the mesh and the rule
  // (coordinate count, unknown axis, coordinate out of range, id not in the mesh).
  StatusOr<int64_t> Resolve(const xs::Mesh& mesh, int64_t self) const;
  // "mesh(1, 0, 1)", "{'x': 1}", "logical 5".
  std::string ToString() const;

 private:
  enum class Kind { kMesh, kAxes, kLogical };
  Kind kind_ = Kind::kLogical;
  std::vector<int64_t> coords_;
  std::vector<std::pair<std::string, int64_t>> axes_;
};

// One device's buffers and semaphores for one kernel invocation, as a transport sees them.
struct KernelFrame {
  struct Buffer {
    BufferId id;
    std::byte* data = nullptr;
    int64_t byte_size = 0;
    bool writable = false;  // inputs are read-only
  };
  std::string kernel;       // the kernel's name, for messages
  std::string device_name;  // "device 3 (x=1, y=1)", for messages
  std::vector<Buffer> buffers;
  std::atomic<int64_t>* semaphores = nullptr;  // the invocation's semaphores (index order)
  std::vector<SemaphoreType> semaphore_types;

  const Buffer* Find(BufferId id) const;
};

// Moves bytes and signals between the devices of one kernel invocation. Every device of the mesh
// runs the same kernels in the same order; each call names the calling device. Implementations:
// InProcessTransport (device threads of one process); an MPI one would put / accumulate into
// registered windows. No call blocks past the transport's timeout.
class RemoteTransport {
 public:
  virtual ~RemoteTransport() = default;
  virtual int64_t num_devices() const = 0;

  // Publishes `frame` (valid until Exit returns) and waits until every device has entered.
  virtual Status Enter(int64_t device, const KernelFrame* frame) = 0;
  // Waits until every device has finished the kernel body, then withdraws `device`'s frame.
  virtual Status Exit(int64_t device) = 0;
  // Unpublishes `device`'s frame and returns once no peer is copying into it or signaling it, so
  // its buffers may be freed (after a failure, with the transport aborted, and inside Exit).
  virtual void Withdraw(int64_t device) = 0;
  // Writes the elements of `src` (on `device`) into the view `dst` of the same buffer id on
  // `dst_device`, then adds dst's byte size to `dst_device`'s semaphore `recv_semaphore`.
  virtual Status Copy(int64_t device, const Ref& src, int64_t dst_device, const Ref& dst,
                      int recv_semaphore) = 0;
  // Adds `inc` to semaphore `semaphore` of `dst_device` (which may be `device`).
  virtual Status Signal(int64_t device, int64_t dst_device, int semaphore, int64_t inc) = 0;
  // Waits until `device`'s own semaphore reaches `value`, then subtracts it. `what` describes the
  // wait for the timeout message ("WaitRecv of a copy of out[0] f32[2,4]").
  virtual Status Wait(int64_t device, int semaphore, int64_t value, std::string_view what) = 0;
  // Returns once every device has called Barrier.
  virtual Status Barrier(int64_t device) = 0;
  // Makes every pending and later call fail with `reason` until Reset(); the first reason wins.
  virtual void Abort(const Status& reason) = 0;
  // Clears an abort; only while no device is inside a kernel.
  virtual void Reset() = 0;
};

// The transport for device threads of one process. Create one per mesh, capture it in the
// shard_map function and pass it in PallasOptions::transport; after a failed run call Reset()
// before using it again. A kernel that fails aborts it, so its peers stop at once; a shard_map
// function that fails outside a kernel should call Abort too (the transport cannot see that
// failure, and peers waiting inside a kernel would otherwise wait for the timeout).
class InProcessTransport : public RemoteTransport {
 public:
  explicit InProcessTransport(int64_t num_devices,
                              std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~InProcessTransport() override;

  int64_t num_devices() const override { return num_devices_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  Status Enter(int64_t device, const KernelFrame* frame) override;
  Status Exit(int64_t device) override;
  void Withdraw(int64_t device) override;
  Status Copy(int64_t device, const Ref& src, int64_t dst_device, const Ref& dst,
              int recv_semaphore) override;
  Status Signal(int64_t device, int64_t dst_device, int semaphore, int64_t inc) override;
  Status Wait(int64_t device, int semaphore, int64_t value, std::string_view what) override;
  Status Barrier(int64_t device) override;
  void Abort(const Status& reason) override;
  void Reset() override;

 private:
  struct Slot;
  // Every device meets here; `where` names the meeting point in a timeout message.
  Status Rendezvous(int64_t device, std::string_view where, std::chrono::milliseconds timeout);
  Status AbortStatus() const;
  // Pins `device`'s frame against Withdraw (null, unpinned, when it has none); Unpin releases.
  const KernelFrame* Pin(int64_t device);
  void Unpin(int64_t device);
  // The error for a peer without a frame: the abort status, or an internal error.
  Status NoFrame(int64_t device, int64_t peer, std::string_view op) const;

  int64_t num_devices_;
  std::chrono::milliseconds timeout_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<int64_t> arrived_{0};
  std::atomic<int64_t> generation_{0};
  std::atomic<bool> aborted_{false};
  mutable std::mutex mu_;
  Status abort_status_;
};

// A started-or-not copy (Pallas's AsyncCopyDescriptor). Remote: src on this device, dst the same
// view of the same buffer on the target device; send_sem counts on this device, recv_sem on the
// target. Local (MakeAsyncCopy): both on this device, one semaphore.
class AsyncCopy {
 public:
  // Copies the bytes and signals the semaphores (in-process copies complete at once).
  Status Start() const;
  // Waits until this device's send semaphore has the copy's bytes (src may be reused).
  Status WaitSend() const;
  // Waits until this device's receive semaphore has the bytes of one copy of dst's size: the
  // matching copy some peer sent to this device has landed.
  Status WaitRecv() const;
  // WaitSend then WaitRecv (a local copy waits on its one semaphore once).
  Status Wait() const;

 private:
  friend StatusOr<AsyncCopy> MakeAsyncRemoteCopy(const Ref&, const Ref&, Semaphore, Semaphore,
                                                 const DeviceId&);
  friend StatusOr<AsyncCopy> MakeAsyncCopy(const Ref&, const Ref&, Semaphore);
  Ref src_, dst_;
  Semaphore send_, recv_;
  int64_t target_ = -1;  // -1: a local copy
};

// pltpu.make_async_remote_copy. Errors: refs of another invocation, dtype or dims differing, a
// destination that is an input, non-DMA semaphores, a device id the mesh does not have, no
// transport in the kernel's options.
StatusOr<AsyncCopy> MakeAsyncRemoteCopy(const Ref& src, const Ref& dst, Semaphore send_sem,
                                        Semaphore recv_sem, const DeviceId& device_id);
// pltpu.make_async_copy: a copy within this device.
StatusOr<AsyncCopy> MakeAsyncCopy(const Ref& src, const Ref& dst, Semaphore sem);

// pl.semaphore_signal: adds `inc` (>= 1) to `sem` on `device_id` (this device when absent).
Status SemaphoreSignal(Semaphore sem, int64_t inc = 1,
                       const std::optional<DeviceId>& device_id = std::nullopt);
// pl.semaphore_wait: waits until this device's `sem` reaches `value` (>= 1), then subtracts it.
// kRegular semaphores only (wait on DMA semaphores through the copy).
Status SemaphoreWait(Semaphore sem, int64_t value = 1);

}  // namespace xs::cmm

#endif  // XSHARD_CMM_REMOTE_COPY_H_
