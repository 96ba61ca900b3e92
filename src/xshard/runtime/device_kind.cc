// The CPU device kind: its programs are exec's Executable on host arrays.
#include "xshard/runtime/device_kind.h"

namespace xs {
namespace {

class CpuProgram final : public DeviceProgram {
 public:
  explicit CpuProgram(const Executable& plan) : plan_(plan) {}
  StatusOr<std::vector<Array>> Run(std::span<const Array* const> args,
                                   const ExecuteOptions& options,
                                   ExecuteStats* stats) const override {
    return plan_.Run(args, options, stats);
  }

 private:
  const Executable& plan_;
};

class CpuKind final : public DeviceKind {
 public:
  std::string_view name() const override { return "cpu"; }
  StatusOr<std::unique_ptr<DeviceProgram>> Compile(const Executable& plan,
                                                   int64_t) const override {
    return std::unique_ptr<DeviceProgram>(new CpuProgram(plan));
  }
};

}  // namespace

std::string DeviceKind::Describe(int64_t device) const { return StrCat(name(), ":", device); }

int64_t DeviceKind::DefaultMemoryLimit(int64_t) const { return 0; }

std::shared_ptr<const DeviceKind> CpuDeviceKind() {
  static const std::shared_ptr<const DeviceKind> kind = std::make_shared<CpuKind>();
  return kind;
}

}  // namespace xs
