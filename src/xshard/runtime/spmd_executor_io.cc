// Per-device .npy folders and random inputs for SPMD runs.
#include "xshard/runtime/spmd_executor_io.h"

#include <cmath>
#include <filesystem>

#include "xshard/core/npy.h"

namespace xs {
namespace {

namespace fs = std::filesystem;

std::string DevicePath(const std::string& dir, int64_t device, std::string_view stem, size_t i) {
  return (fs::path(dir) / StrCat("dev", device) / StrCat(stem, i, ".npy")).string();
}

}  // namespace

StatusOr<std::vector<std::vector<Array>>> ReadDeviceArguments(const std::string& dir,
                                                              const std::vector<int64_t>& devices,
                                                              const std::vector<Shape>& shapes) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return InvalidArgument("--args-dir '", dir, "' is not a directory; it must hold "
                           "dev<d>/arg<i>.npy for every device d and argument i");
  }
  std::vector<std::vector<Array>> args(devices.size());
  for (size_t k = 0; k < devices.size(); ++k) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      const std::string path = DevicePath(dir, devices[k], "arg", i);
      if (!fs::exists(path, ec)) {
        return InvalidArgument(path, " is missing: device ", devices[k], " needs argument ", i,
                               " (", shapes[i].ToString(false), "); --args-dir holds "
                               "dev<d>/arg<i>.npy for every device d and argument i");
      }
      // The header is checked before the data is read.
      const std::optional<DType> opaque = NpyOpaqueDType(shapes[i].dtype());  // ml_dtypes' '<V1' types
      XS_ASSIGN_OR_RETURN(Array a, ReadNpy(path, opaque, [&](const NpyHeader& h) -> Status {
        if (h.shape.dtype() == shapes[i].dtype() && h.shape.dims() == shapes[i].dims()) return OkStatus();
        return InvalidArgument(path, ": holds ", h.shape.ToString(false), " but device ",
                               devices[k], "'s argument ", i, " is ", shapes[i].ToString(false));
      }));
      args[k].push_back(std::move(a));
    }
    const std::string extra = DevicePath(dir, devices[k], "arg", shapes.size());
    if (fs::exists(extra, ec)) {
      return InvalidArgument(extra, " is one argument too many: the module takes ",
                             shapes.size(), " argument(s)",
                             shapes.empty() ? "" : StrCat(", arg0.npy to arg", shapes.size() - 1, ".npy"));
    }
  }
  return args;
}

Status WriteDeviceOutputs(const std::string& dir, const std::vector<int64_t>& devices,
                          const std::vector<std::vector<Array>>& outputs) {
  for (size_t k = 0; k < devices.size() && k < outputs.size(); ++k) {
    const fs::path folder = fs::path(dir) / StrCat("dev", devices[k]);
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) return Unavailable("cannot create directory '", folder.string(), "': ", ec.message());
    for (size_t i = 0; i < outputs[k].size(); ++i) {
      XS_RETURN_IF_ERROR(WriteNpy(DevicePath(dir, devices[k], "out", i), outputs[k][i]));
    }
  }
  return OkStatus();
}

double UniformMinusOneToOne(std::mt19937_64& rng) {
  double u = static_cast<double>(rng()) * 0x1p-64;
  if (u >= 1.0) u = std::nextafter(1.0, 0.0);
  return 2.0 * u - 1.0;
}

Array RandomArray(const Shape& shape, std::mt19937_64& rng) {
  Array a(shape);
  const int64_t n = a.num_elements();
  const DType t = shape.dtype();
  if (t == DType::kPred || IsInteger(t)) {
    std::uniform_int_distribution<int> small(0, 9);
    for (int64_t k = 0; k < n; ++k) a.SetDouble(k, t == DType::kPred ? small(rng) % 2 : small(rng));
  } else if (t == DType::kF32) {
    float* p = reinterpret_cast<float*>(a.data());
    for (int64_t k = 0; k < n; ++k) p[k] = static_cast<float>(UniformMinusOneToOne(rng));
  } else {
    for (int64_t k = 0; k < n; ++k) a.SetDouble(k, UniformMinusOneToOne(rng));
  }
  return a;
}

std::vector<std::vector<Array>> RandomDeviceArguments(uint64_t seed, int64_t count,
                                                      const std::vector<Shape>& shapes) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<Array>> args(count);
  for (auto& device_args : args) {
    for (const Shape& s : shapes) device_args.push_back(RandomArray(s, rng));
  }
  return args;
}

}  // namespace xs
