// CompileToCubin: NVRTC with the backend's fixed options, an in-memory cache and a disk cache of
// CUBIN files (one per source, architecture and NVRTC version; written atomically).
#include "xshard/cuda/kernel_source.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "xshard/cuda/nvrtc_api.h"

namespace xs::cuda {
namespace {

constexpr char kMagic[8] = {'X', 'S', 'C', 'U', 'B', 'I', 'N', '1'};

// 64-bit FNV-1a with a final avalanche (splitmix64's); two seeds give the 128-bit cache key.
uint64_t Hash64(std::string_view s, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string IncludeDir() {
#ifdef XSHARD_CUDA_INCLUDE_DIR
  // CMake may pass a list; the first folder holds cuda_fp16.h.
  std::string dir = XSHARD_CUDA_INCLUDE_DIR;
  if (const size_t semi = dir.find(';'); semi != std::string::npos) dir.resize(semi);
  if (!dir.empty()) return dir;
#endif
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/include";
  }
  return "/usr/local/cuda/include";
}

std::vector<std::string> Options(int major, int minor) {
  return {"--gpu-architecture=sm_" + std::to_string(major) + std::to_string(minor), "-std=c++17",
          "-default-device", "--fmad=false", "-I" + IncludeDir()};
}

struct Cache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<const std::string>> entries;
  CompileCacheStats stats;
};
Cache& TheCache() {
  static Cache* cache = new Cache;
  return *cache;
}

// The cache key: the source, the name, the options (architecture included) and NVRTC's version.
std::string Key(const KernelSource& src, const std::vector<std::string>& options, const NvrtcApi& api) {
  std::string material = src.name;
  material += '\0';
  material += src.code;
  for (const std::string& o : options) (material += '\0') += o;
  material += "\0nvrtc " + std::to_string(api.major) + "." + std::to_string(api.minor);
  return Hex(Hash64(material, 0)) + Hex(Hash64(material, 0x9e3779b97f4a7c15ull));
}

// The CUBIN in `path`, or nullopt when the file is missing or corrupt (`*corrupt` set then).
std::optional<std::string> ReadCacheFile(const std::string& path, bool* corrupt) {
  *corrupt = false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  *corrupt = true;
  if (data.size() < 24 || std::memcmp(data.data(), kMagic, 8) != 0) return std::nullopt;
  uint64_t size = 0, sum = 0;
  std::memcpy(&size, data.data() + 8, 8);
  std::memcpy(&sum, data.data() + 16, 8);
  if (size != data.size() - 24) return std::nullopt;
  std::string cubin = data.substr(24);
  if (Hash64(cubin, 1) != sum) return std::nullopt;
  *corrupt = false;
  return cubin;
}

// Writes the cache file through a temporary file renamed into place, so a reader never sees a
// partial file. Failures are ignored: the cache is an optimization.
bool WriteCacheFile(const std::string& path, const std::string& cubin) {
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    const uint64_t size = cubin.size(), sum = Hash64(cubin, 1);
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char*>(&size), 8);
    out.write(reinterpret_cast<const char*>(&sum), 8);
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    if (!out.flush()) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

StatusOr<std::string> RunNvrtc(const NvrtcApi& api, const KernelSource& src,
                               const std::vector<std::string>& options) {
  nvrtcProgram prog = nullptr;
  const std::string file = src.name + ".cu";
  XS_RETURN_IF_ERROR(NvrtcStatus(
      api, api.CreateProgram(&prog, src.code.c_str(), file.c_str(), 0, nullptr, nullptr),
      "nvrtcCreateProgram(" + src.name + ")"));
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult compiled = api.CompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  std::string log;
  size_t log_size = 0;
  if (api.GetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (api.GetProgramLog(prog, log.data()) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  Status status;
  std::string cubin;
  if (compiled != NVRTC_SUCCESS) {
    status = Internal("NVRTC could not compile generated kernel '", src.name, "' (",
                      api.GetErrorString(compiled), "):\n", log);
  } else {
    size_t size = 0;
    status = NvrtcStatus(api, api.GetCUBINSize(prog, &size), "nvrtcGetCUBINSize(" + src.name + ")");
    if (status.ok()) {
      cubin.resize(size);
      status = NvrtcStatus(api, api.GetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN(" + src.name + ")");
    }
  }
  api.DestroyProgram(&prog);
  if (!status.ok()) return status;
  return cubin;
}

}  // namespace

std::string CompileCacheDir() {
  const char* dir = std::getenv("XSHARD_CACHE_DIR");
  if (dir != nullptr && *dir != '\0') return std::string(dir) == "off" ? "" : std::string(dir);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/xshard";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/xshard";
  }
  return "";
}

StatusOr<std::string> CompileCachePath(const KernelSource& src, int major, int minor) {
  XS_ASSIGN_OR_RETURN(const NvrtcApi* api, Nvrtc());
  const std::string dir = CompileCacheDir();
  if (dir.empty()) return std::string();
  return dir + "/kernels/" + Key(src, Options(major, minor), *api) + ".cubin";
}

StatusOr<std::shared_ptr<const std::string>> CompileToCubin(const KernelSource& src, int major,
                                                             int minor) {
  XS_ASSIGN_OR_RETURN(const NvrtcApi* api, Nvrtc());
  const std::vector<std::string> options = Options(major, minor);
  const std::string key = Key(src, options, *api);
  Cache& cache = TheCache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) {
      ++cache.stats.memory_hits;
      return it->second;
    }
  }
  const std::string dir = CompileCacheDir();
  const std::string path = dir.empty() ? "" : dir + "/kernels/" + key + ".cubin";
  std::shared_ptr<const std::string> cubin;
  bool corrupt = false;
  if (!path.empty()) {
    if (std::optional<std::string> c = ReadCacheFile(path, &corrupt)) {
      cubin = std::make_shared<const std::string>(std::move(*c));
    }
  }
  bool wrote = false;
  double seconds = 0;
  const bool compile = cubin == nullptr;
  if (compile) {
    const auto start = std::chrono::steady_clock::now();
    XS_ASSIGN_OR_RETURN(std::string compiled, RunNvrtc(*api, src, options));
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cubin = std::make_shared<const std::string>(std::move(compiled));
    if (!path.empty()) wrote = WriteCacheFile(path, *cubin);
  }
  std::lock_guard<std::mutex> lock(cache.mu);
  if (corrupt) ++cache.stats.corrupt_files;
  if (compile) {
    ++cache.stats.compiles;
    cache.stats.compile_seconds += seconds;
  } else {
    ++cache.stats.disk_hits;
  }
  if (wrote) ++cache.stats.disk_writes;
  auto [it, inserted] = cache.entries.emplace(key, cubin);
  return it->second;
}

CompileCacheStats GetCompileCacheStats() {
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.stats;
}

void ClearCompileMemoryCache() {
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.entries.clear();
}

}  // namespace xs::cuda
