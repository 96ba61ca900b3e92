// Device ids, the in-process transport (copies into peers' buffers, atomic semaphores on futex
// doorbells, a generation barrier, all with deadlines) and the async copy descriptors.
#include "xshard/cmm/remote_copy.h"

#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/cmm/kernel_invocation.h"
#include "xshard/comm/wait.h"

namespace xs::cmm {

DeviceId DeviceId::Mesh(std::vector<int64_t> coords) {
  DeviceId d;
  d.kind_ = Kind::kMesh;
  d.coords_ = std::move(coords);
  return d;
}

DeviceId DeviceId::Axes(std::vector<std::pair<std::string, int64_t>> axes) {
  DeviceId d;
  d.kind_ = Kind::kAxes;
  d.axes_ = std::move(axes);
  return d;
}

DeviceId DeviceId::Logical(int64_t device) {
  DeviceId d;
  d.kind_ = Kind::kLogical;
  d.coords_ = {device};
  return d;
}

std::string DeviceId::ToString() const {
  switch (kind_) {
    case Kind::kMesh:
      return StrCat("mesh(", StrJoin(coords_, ", "), ")");
    case Kind::kAxes: {
      std::vector<std::string> parts;
      for (const auto& [name, c] : axes_) parts.push_back(StrCat("'", name, "': ", c));
      return StrCat("{", StrJoin(parts, ", "), "}");
    }
    case Kind::kLogical:
      break;
  }
  return StrCat("logical ", coords_[0]);
}

StatusOr<int64_t> DeviceId::Resolve(const xs::Mesh& mesh, int64_t self) const {
  if (kind_ == Kind::kLogical) {
    if (coords_[0] < 0 || coords_[0] >= mesh.num_devices()) {
      return InvalidArgument("device id ", ToString(), " is not a device of ", mesh.ToString(),
                             "; logical ids run 0..", mesh.num_devices() - 1);
    }
    return coords_[0];
  }
  std::vector<int64_t> coords = mesh.CoordsOf(self);
  if (kind_ == Kind::kMesh) {
    if (static_cast<int>(coords_.size()) != mesh.num_axes()) {
      return InvalidArgument("device id ", ToString(), " has ", coords_.size(), " coordinates but ",
                             mesh.ToString(), " has ", mesh.num_axes(),
                             " axes; give one coordinate per axis, or name axes with "
                             "DeviceId::Axes");
    }
    coords = coords_;
  } else {
    for (const auto& [name, c] : axes_) {
      XS_ASSIGN_OR_RETURN(int a, mesh.AxisIndex(name));
      coords[a] = c;
    }
  }
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (coords[a] < 0 || coords[a] >= mesh.AxisSize(a)) {
      return InvalidArgument("device id ", ToString(), ": coordinate ", coords[a], " of axis '",
                             mesh.axis_names()[a], "' is outside 0..", mesh.AxisSize(a) - 1, " of ",
                             mesh.ToString());
    }
  }
  return mesh.DeviceAt(coords);
}

const KernelFrame::Buffer* KernelFrame::Find(BufferId id) const {
  for (const Buffer& b : buffers) {
    if (b.id == id) return &b;
  }
  return nullptr;
}

struct InProcessTransport::Slot {
  std::atomic<const KernelFrame*> frame{nullptr};
  std::atomic<int64_t> users{0};  // peers inside a Copy or Signal to this device
  std::atomic<int64_t> arrivals{0};
  Doorbell bell;
};

InProcessTransport::InProcessTransport(int64_t num_devices, std::chrono::milliseconds timeout)
    : num_devices_(num_devices), timeout_(timeout) {
  for (int64_t d = 0; d < num_devices; ++d) slots_.push_back(std::make_unique<Slot>());
}

InProcessTransport::~InProcessTransport() = default;

Status InProcessTransport::AbortStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return abort_status_;
}

void InProcessTransport::Abort(const Status& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_.load()) return;
    abort_status_ = reason.ok() ? Cancelled("aborted") : reason;
    aborted_.store(true);
  }
  for (auto& s : slots_) s->bell.Ring();
}

void InProcessTransport::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_.store(false);
  abort_status_ = OkStatus();
  arrived_.store(0);
  for (auto& s : slots_) {
    s->frame.store(nullptr);
    s->arrivals.store(0);
  }
}

const KernelFrame* InProcessTransport::Pin(int64_t device) {
  if (device < 0 || device >= num_devices_) return nullptr;
  // Dekker with Withdraw (seq_cst): either Withdraw sees users > 0 and waits, or this sees null.
  Slot& slot = *slots_[device];
  slot.users.fetch_add(1);
  const KernelFrame* f = slot.frame.load();
  if (f == nullptr) slot.users.fetch_sub(1);
  return f;
}

void InProcessTransport::Unpin(int64_t device) { slots_[device]->users.fetch_sub(1); }

void InProcessTransport::Withdraw(int64_t device) {
  Slot& slot = *slots_[device];
  slot.frame.store(nullptr);
  while (slot.users.load() != 0) YieldThread();
}

Status InProcessTransport::NoFrame(int64_t device, int64_t peer, std::string_view op) const {
  if (aborted_.load()) return AbortStatus();
  return Internal("device ", device, " ", op, " device ", peer, ", which is not inside the kernel");
}

Status InProcessTransport::Rendezvous(int64_t device, std::string_view where,
                                      std::chrono::milliseconds timeout) {
  if (aborted_.load()) return AbortStatus();
  Slot& me = *slots_[device];
  const int64_t gen = generation_.load();
  const int64_t mine = me.arrivals.fetch_add(1) + 1;
  if (arrived_.fetch_add(1) + 1 == num_devices_) {
    arrived_.store(0);
    generation_.fetch_add(1);
    for (auto& s : slots_) s->bell.Ring();
    return OkStatus();
  }
  const WaitPolicy policy = DefaultWaitPolicy(num_devices_, AvailableCores());
  me.bell.WaitUntil([&] { return generation_.load() != gen || aborted_.load(); },
                    SteadyClock::now() + timeout, policy);
  if (generation_.load() != gen) return OkStatus();
  if (aborted_.load()) return AbortStatus();
  std::vector<int64_t> arrived, missing;
  for (int64_t d = 0; d < num_devices_; ++d) {
    (slots_[d]->arrivals.load() >= mine ? arrived : missing).push_back(d);
  }
  const KernelFrame* f = me.frame.load();
  Status st = DeadlineExceeded(
      f != nullptr ? StrCat("kernel '", f->kernel, "' on ", f->device_name)
                   : StrCat("device ", device),
      ": timed out after ", timeout.count(), " ms at ", where, " waiting for device(s) ",
      StrJoin(missing, ", "), " (arrived: ", StrJoin(arrived, ", "),
      "); every device of the mesh must run the same kernels in the same order");
  Abort(st);
  return st;
}

Status InProcessTransport::Enter(int64_t device, const KernelFrame* frame) {
  if (device < 0 || device >= num_devices_) {
    return InvalidArgument("kernel '", frame->kernel, "': ", frame->device_name,
                           " is not one of the transport's ", num_devices_,
                           " devices; make the transport for the mesh's device count");
  }
  slots_[device]->frame.store(frame);
  return Rendezvous(device, "the kernel's entry", timeout_);
}

Status InProcessTransport::Exit(int64_t device) {
  // Twice the timeout: a device still waiting inside the body times out first and reports its own
  // cause (the semaphore it waits for) rather than its peers reporting that it is late.
  Status st = Rendezvous(device, "the kernel's exit", 2 * timeout_);
  Withdraw(device);
  return st;
}

Status InProcessTransport::Barrier(int64_t device) {
  return Rendezvous(device, "a Barrier", timeout_);
}

Status InProcessTransport::Signal(int64_t device, int64_t dst_device, int semaphore, int64_t inc) {
  if (aborted_.load()) return AbortStatus();
  const KernelFrame* f = Pin(dst_device);
  if (f == nullptr) return NoFrame(device, dst_device, "signals");
  XS_CHECK(semaphore < static_cast<int>(f->semaphore_types.size()), "semaphore ", semaphore);
  f->semaphores[semaphore].fetch_add(inc);
  slots_[dst_device]->bell.Ring();
  Unpin(dst_device);
  return OkStatus();
}

Status InProcessTransport::Wait(int64_t device, int semaphore, int64_t value,
                                std::string_view what) {
  if (aborted_.load()) return AbortStatus();
  const KernelFrame* f = slots_[device]->frame.load();  // our own frame: no pin needed
  XS_CHECK(f != nullptr, "Wait outside a kernel on device ", device);
  std::atomic<int64_t>& sem = f->semaphores[semaphore];
  const WaitPolicy policy = DefaultWaitPolicy(num_devices_, AvailableCores());
  slots_[device]->bell.WaitUntil([&] { return sem.load() >= value || aborted_.load(); },
                                 SteadyClock::now() + timeout_, policy);
  if (sem.load() >= value) {
    sem.fetch_sub(value);
    return OkStatus();
  }
  if (aborted_.load()) return AbortStatus();
  Status st = DeadlineExceeded(
      what, ": timed out after ", timeout_.count(), " ms waiting for semaphore ", semaphore, " (",
      SemaphoreTypeName(f->semaphore_types[semaphore]), ") to reach ", value, " (it is at ",
      sem.load(), "); no peer signaled it in time: a peer failed, never ran this kernel, or ",
      "sent to another device");
  Abort(st);
  return st;
}

Status InProcessTransport::Copy(int64_t device, const Ref& src, int64_t dst_device, const Ref& dst,
                                int recv_semaphore) {
  if (aborted_.load()) return AbortStatus();
  const KernelFrame* f = Pin(dst_device);
  if (f == nullptr) return NoFrame(device, dst_device, "copies to");
  const KernelFrame::Buffer* b = f->Find(dst.id());
  const int64_t esize = DTypeSize(dst.dtype());
  int64_t last = dst.offset();
  for (int d = 0; d < dst.rank(); ++d) last += (dst.dims()[d] - 1) * dst.strides()[d];
  if (b == nullptr || !b->writable ||
      (dst.num_elements() > 0 && (last + 1) * esize > b->byte_size)) {
    Unpin(dst_device);
    return InvalidArgument(
        "kernel '", f->kernel, "': a copy from device ", device, " into ", dst.ToString(),
        " does not fit ", f->device_name, "'s ", dst.id().ToString(),
        b == nullptr ? " (no such buffer)" : (!b->writable ? " (read-only)" : " (out of bounds)"),
        "; every device must run the kernel with the same shapes");
  }
  CopyStrided(b->data + dst.offset() * esize, dst.strides(), src.data(), src.strides(), dst.dims(),
              esize);
  f->semaphores[recv_semaphore].fetch_add(dst.byte_size());
  slots_[dst_device]->bell.Ring();
  Unpin(dst_device);
  return OkStatus();
}

namespace {

Status CheckPair(const Ref& src, const Ref& dst, std::string_view op) {
  if (src.invocation() == nullptr || src.invocation() != dst.invocation()) {
    return InvalidArgument(op, ": src ", src.ToString(), " and dst ", dst.ToString(),
                           " must both be refs of the running kernel");
  }
  const std::string where = src.invocation()->Where();
  if (src.dtype() != dst.dtype() || src.dims() != dst.dims()) {
    return InvalidArgument(where, ": ", op, " from ", src.ToString(), " to ", dst.ToString(),
                           ": dtypes and dims must match; slice one with At");
  }
  if (dst.id().kind == BufferId::Kind::kInput && !dst.id().block) {
    return InvalidArgument(where, ": ", op, " into ", dst.ToString(),
                           ": inputs are read-only; copy into an output or a scratch buffer");
  }
  return OkStatus();
}

}  // namespace

StatusOr<AsyncCopy> MakeAsyncRemoteCopy(const Ref& src, const Ref& dst, Semaphore send_sem,
                                        Semaphore recv_sem, const DeviceId& device_id) {
  XS_RETURN_IF_ERROR(CheckPair(src, dst, "MakeAsyncRemoteCopy"));
  internal::Invocation* inv = src.invocation();
  XS_RETURN_IF_ERROR(inv->CheckSemaphore(send_sem, "MakeAsyncRemoteCopy's send_sem"));
  XS_RETURN_IF_ERROR(inv->CheckSemaphore(recv_sem, "MakeAsyncRemoteCopy's recv_sem"));
  if (send_sem.type() != SemaphoreType::kDma || recv_sem.type() != SemaphoreType::kDma) {
    return InvalidArgument(inv->Where(), ": MakeAsyncRemoteCopy needs DMA semaphores; got ",
                           send_sem.ToString(), " and ", recv_sem.ToString());
  }
  XS_ASSIGN_OR_RETURN(int64_t target, inv->Resolve(device_id));
  if (inv->transport() == nullptr && target != inv->device()) {
    return FailedPrecondition(inv->Where(), ": a remote copy to ", device_id.ToString(),
                              " needs a RemoteTransport in PallasOptions::transport");
  }
  AsyncCopy c;
  c.src_ = src;
  c.dst_ = dst;
  c.send_ = send_sem;
  c.recv_ = recv_sem;
  c.target_ = target;
  return c;
}

StatusOr<AsyncCopy> MakeAsyncCopy(const Ref& src, const Ref& dst, Semaphore sem) {
  XS_RETURN_IF_ERROR(CheckPair(src, dst, "MakeAsyncCopy"));
  internal::Invocation* inv = src.invocation();
  XS_RETURN_IF_ERROR(inv->CheckSemaphore(sem, "MakeAsyncCopy's sem"));
  if (sem.type() != SemaphoreType::kDma) {
    return InvalidArgument(inv->Where(), ": MakeAsyncCopy needs a DMA semaphore; got ",
                           sem.ToString());
  }
  AsyncCopy c;
  c.src_ = src;
  c.dst_ = dst;
  c.send_ = sem;
  return c;
}

Status AsyncCopy::Start() const {
  internal::Invocation* inv = src_.invocation();
  const int64_t self = inv->device();
  if (target_ < 0 || (target_ == self && inv->transport() == nullptr)) {
    CopyStrided(dst_.data(), dst_.strides(), src_.data(), src_.strides(), dst_.dims(),
                DTypeSize(dst_.dtype()));
    if (target_ >= 0) XS_RETURN_IF_ERROR(inv->Signal(self, recv_.index(), dst_.byte_size()));
  } else {
    XS_RETURN_IF_ERROR(inv->transport()->Copy(self, src_, target_, dst_, recv_.index()));
  }
  return inv->Signal(self, send_.index(), src_.byte_size());
}

Status AsyncCopy::WaitSend() const {
  return src_.invocation()->Wait(
      send_.index(), src_.byte_size(),
      StrCat(target_ < 0 ? "Wait of the local copy into " : "WaitSend of the copy into ",
             dst_.ToString(), target_ < 0 ? "" : StrCat(" on device ", target_)));
}

Status AsyncCopy::WaitRecv() const {
  if (target_ < 0) return WaitSend();
  return src_.invocation()->Wait(recv_.index(), dst_.byte_size(),
                                 StrCat("WaitRecv of a copy into ", dst_.ToString()));
}

Status AsyncCopy::Wait() const {
  XS_RETURN_IF_ERROR(WaitSend());
  return target_ < 0 ? OkStatus() : WaitRecv();
}

Status SemaphoreSignal(Semaphore sem, int64_t inc, const std::optional<DeviceId>& device_id) {
  if (!sem.valid()) return InvalidArgument("SemaphoreSignal: an invalid semaphore");
  internal::Invocation* inv = sem.invocation();
  XS_RETURN_IF_ERROR(inv->CheckSemaphore(sem, "SemaphoreSignal"));
  if (inc < 1) {
    return InvalidArgument(inv->Where(), ": SemaphoreSignal of ", sem.ToString(), " by ", inc,
                           "; the increment must be >= 1");
  }
  int64_t target = inv->device();
  if (device_id.has_value()) {
    XS_ASSIGN_OR_RETURN(target, inv->Resolve(*device_id));
  }
  return inv->Signal(target, sem.index(), inc);
}

Status SemaphoreWait(Semaphore sem, int64_t value) {
  if (!sem.valid()) return InvalidArgument("SemaphoreWait: an invalid semaphore");
  internal::Invocation* inv = sem.invocation();
  XS_RETURN_IF_ERROR(inv->CheckSemaphore(sem, "SemaphoreWait"));
  if (sem.type() != SemaphoreType::kRegular || value < 1) {
    return InvalidArgument(inv->Where(), ": SemaphoreWait(", sem.ToString(), ", ", value,
                           ") needs a REGULAR semaphore and a value >= 1; wait on DMA "
                           "semaphores through their copy's Wait");
  }
  return inv->Wait(sem.index(), value, StrCat("SemaphoreWait(", sem.ToString(), ", ", value, ")"));
}

}  // namespace xs::cmm
