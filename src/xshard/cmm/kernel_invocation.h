// internal::Invocation: one device's run of one Pallas-style kernel: its name and device, its
// buffers and semaphores (the KernelFrame a transport publishes), its transport, and the first
// error a kernel-body call recorded. Used by cmm/kernel.cc and cmm/remote_copy.cc only.
#ifndef XSHARD_CMM_KERNEL_INVOCATION_H_
#define XSHARD_CMM_KERNEL_INVOCATION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "xshard/base/status.h"
#include "xshard/cmm/kernel_ref.h"
#include "xshard/cmm/remote_copy.h"
#include "xshard/sharding/mesh.h"

namespace xs::cmm::internal {

class Invocation {
 public:
  // `mesh` null: a single-device run with no peers (device 0).
  Invocation(std::string kernel, const Mesh* mesh, int64_t device, RemoteTransport* transport,
             std::vector<SemaphoreType> semaphore_types);

  const std::string& kernel() const { return frame_.kernel; }
  const std::string& device_name() const { return frame_.device_name; }
  const Mesh* mesh() const { return mesh_; }
  int64_t device() const { return device_; }
  RemoteTransport* transport() const { return transport_; }
  KernelFrame& frame() { return frame_; }
  int num_semaphores() const { return static_cast<int>(frame_.semaphore_types.size()); }

  // "kernel 'ring' on device 3 (x=1, y=1)".
  std::string Where() const;
  // The device `id` names; errors name the kernel and this device.
  StatusOr<int64_t> Resolve(const DeviceId& id) const;
  // Checks that `sem` belongs to this invocation (op names the call in the message).
  Status CheckSemaphore(const Semaphore& sem, std::string_view op) const;
  // Adds inc to semaphore `index` of `target` (this device or a peer through the transport).
  Status Signal(int64_t target, int index, int64_t inc);
  // Waits until this device's semaphore `index` reaches value, then subtracts it.
  Status Wait(int index, int64_t value, std::string_view what);
  // Semaphores not back at zero at the end of the kernel, as an error (OK when all are zero).
  Status CheckSemaphoresZero() const;

  // The first error of a call that cannot return one (ProgramId with a bad axis); OK if none.
  void Record(Status status);
  const Status& recorded() const { return recorded_; }

 private:
  const Mesh* mesh_;
  int64_t device_;
  RemoteTransport* transport_;
  std::unique_ptr<std::atomic<int64_t>[]> semaphores_;
  KernelFrame frame_;
  Status recorded_;
};

}  // namespace xs::cmm::internal

#endif  // XSHARD_CMM_KERNEL_INVOCATION_H_
