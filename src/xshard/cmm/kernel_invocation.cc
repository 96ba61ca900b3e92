// One device's kernel invocation: names for messages, device ids, local and remote semaphores.
#include "xshard/cmm/kernel_invocation.h"

#include "xshard/base/strings.h"

namespace xs::cmm::internal {

Invocation::Invocation(std::string kernel, const Mesh* mesh, int64_t device,
                       RemoteTransport* transport, std::vector<SemaphoreType> semaphore_types)
    : mesh_(mesh), device_(device), transport_(transport) {
  semaphores_ = std::make_unique<std::atomic<int64_t>[]>(semaphore_types.size());
  for (size_t i = 0; i < semaphore_types.size(); ++i) semaphores_[i].store(0);
  frame_.kernel = std::move(kernel);
  frame_.semaphores = semaphores_.get();
  frame_.semaphore_types = std::move(semaphore_types);
  frame_.device_name = StrCat("device ", device);
  if (mesh != nullptr) {
    const std::vector<int64_t> coords = mesh->CoordsOf(device);
    std::vector<std::string> parts;
    for (int a = 0; a < mesh->num_axes(); ++a) {
      parts.push_back(StrCat(mesh->axis_names()[a], "=", coords[a]));
    }
    frame_.device_name += StrCat(" (", StrJoin(parts, ", "), ")");
  }
}

std::string Invocation::Where() const {
  return StrCat("kernel '", frame_.kernel, "' on ", frame_.device_name);
}

StatusOr<int64_t> Invocation::Resolve(const DeviceId& id) const {
  if (mesh_ == nullptr) {
    return FailedPrecondition(Where(), ": device id ", id.ToString(), " needs a mesh; run the ",
                              "kernel inside shard_map (or RunOn with a mesh)");
  }
  StatusOr<int64_t> r = id.Resolve(*mesh_, device_);
  if (!r.ok()) return Annotate(r.status(), StrCat(Where(), ": "));
  return r;
}

Status Invocation::CheckSemaphore(const Semaphore& sem, std::string_view op) const {
  if (sem.invocation() != this) {
    return InvalidArgument(Where(), ": ", op, " got ",
                           sem.valid() ? sem.ToString() + " of another kernel invocation"
                                       : std::string("an invalid semaphore"),
                           "; pass k.sem(i) of this kernel");
  }
  if (sem.index() < 0 || sem.index() >= num_semaphores()) {
    return Internal(Where(), ": ", sem.ToString(), " is out of range");
  }
  return OkStatus();
}

Status Invocation::Signal(int64_t target, int index, int64_t inc) {
  if (transport_ != nullptr) return transport_->Signal(device_, target, index, inc);
  if (target != device_) {
    return FailedPrecondition(Where(), ": signaling device ", target, " needs a RemoteTransport ",
                              "in PallasOptions::transport");
  }
  semaphores_[index].fetch_add(inc);
  return OkStatus();
}

Status Invocation::Wait(int index, int64_t value, std::string_view what) {
  if (transport_ != nullptr) {
    return transport_->Wait(device_, index, value, StrCat(Where(), ": ", what));
  }
  const int64_t have = semaphores_[index].load();
  if (have < value) {
    return FailedPrecondition(Where(), ": ", what, " would wait forever: semaphore ", index, " (",
                              SemaphoreTypeName(frame_.semaphore_types[index]), ") is at ", have,
                              " and needs ", value, ", and the kernel runs without peers");
  }
  semaphores_[index].fetch_sub(value);
  return OkStatus();
}

Status Invocation::CheckSemaphoresZero() const {
  for (int i = 0; i < num_semaphores(); ++i) {
    const int64_t v = semaphores_[i].load();
    if (v == 0) continue;
    const std::string name =
        i == num_semaphores() - 1
            ? std::string("the barrier semaphore")
            : StrCat("semaphore ", i, " (", SemaphoreTypeName(frame_.semaphore_types[i]), ")");
    return FailedPrecondition(Where(), ": ", name, " ends the kernel at ", v,
                              ", not 0; wait for every signal and copy before the kernel ends");
  }
  return OkStatus();
}

void Invocation::Record(Status status) {
  if (recorded_.ok()) recorded_ = std::move(status);
}

}  // namespace xs::cmm::internal
