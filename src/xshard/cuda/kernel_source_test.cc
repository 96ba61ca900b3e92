// CompileToCubin (NVRTC, memory and disk caches) and LoadKernel / LaunchKernel. Compiling needs
// no GPU, so these run on the build machines; launching skips there with one line.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_loader.h"
#include "xshard/cuda/kernel_source.h"
#include "xshard/cuda/platform.h"

namespace xs::cuda {
namespace {

// A kernel whose code is unique to this process and call, so no cache holds it yet.
KernelSource FreshAxpy() {
  static int counter = 0;
  const std::string tag = std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" +
                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  KernelSource src;
  src.name = "xs_test_axpy";
  src.code = "// " + tag + R"(
extern "C" __global__ void xs_test_axpy(float a, const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
}
)";
  return src;
}

// Points XSHARD_CACHE_DIR at a fresh folder for the test's life.
class ScopedCacheDir {
 public:
  ScopedCacheDir() {
    dir_ = std::filesystem::temp_directory_path() /
           ("xshard_cache_test_" + std::to_string(getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::remove_all(dir_);
    const char* old = std::getenv("XSHARD_CACHE_DIR");
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    setenv("XSHARD_CACHE_DIR", dir_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (had_old_) {
      setenv("XSHARD_CACHE_DIR", old_.c_str(), 1);
    } else {
      unsetenv("XSHARD_CACHE_DIR");
    }
    std::filesystem::remove_all(dir_);
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  bool had_old_ = false;
  std::string old_;
};

bool IsElf(const std::string& cubin) { return cubin.size() > 4 && cubin.compare(0, 4, "\x7f" "ELF") == 0; }

TEST(CompileToCubin, CompilesForSm90WithoutAGpu) {
  ScopedCacheDir cache;
  StatusOr<std::shared_ptr<const std::string>> cubin = CompileToCubin(FreshAxpy(), 9, 0);
  ASSERT_TRUE(cubin.ok()) << cubin.status().message();
  EXPECT_TRUE(IsElf(**cubin));
}

TEST(CompileToCubin, SecondCompileHitsTheMemoryThenTheDiskCache) {
  ScopedCacheDir cache;
  const KernelSource src = FreshAxpy();
  const CompileCacheStats s0 = GetCompileCacheStats();
  StatusOr<std::shared_ptr<const std::string>> first = CompileToCubin(src, 9, 0);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const CompileCacheStats s1 = GetCompileCacheStats();
  EXPECT_EQ(s1.compiles, s0.compiles + 1);
  EXPECT_EQ(s1.disk_writes, s0.disk_writes + 1);
  StatusOr<std::string> path = CompileCachePath(src, 9, 0);
  ASSERT_TRUE(path.ok());
  ASSERT_TRUE(std::filesystem::exists(*path)) << *path;
  EXPECT_EQ(path->rfind(cache.dir().string(), 0), 0u) << *path;

  StatusOr<std::shared_ptr<const std::string>> again = CompileToCubin(src, 9, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(GetCompileCacheStats().memory_hits, s1.memory_hits + 1);
  EXPECT_EQ(again->get(), first->get());  // the same cached bytes

  ClearCompileMemoryCache();
  StatusOr<std::shared_ptr<const std::string>> from_disk = CompileToCubin(src, 9, 0);
  ASSERT_TRUE(from_disk.ok());
  const CompileCacheStats s2 = GetCompileCacheStats();
  EXPECT_EQ(s2.disk_hits, s1.disk_hits + 1);
  EXPECT_EQ(s2.compiles, s1.compiles);
  EXPECT_EQ(**from_disk, **first);
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache.dir())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(CompileToCubin, OtherArchitectureIsAnotherEntry) {
  ScopedCacheDir cache;
  const KernelSource src = FreshAxpy();
  StatusOr<std::string> a = CompileCachePath(src, 9, 0), b = CompileCachePath(src, 8, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
}

TEST(CompileToCubin, CorruptCacheFileIsIgnoredAndRewritten) {
  ScopedCacheDir cache;
  const KernelSource src = FreshAxpy();
  StatusOr<std::shared_ptr<const std::string>> good = CompileToCubin(src, 9, 0);
  ASSERT_TRUE(good.ok()) << good.status().message();
  const std::string path = *CompileCachePath(src, 9, 0);
  const std::vector<std::string> damages = {"not a cubin", std::string("XSCUBIN1") + std::string(40, '\0')};
  for (const std::string& junk : damages) {
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << junk;
    }
    ClearCompileMemoryCache();
    const CompileCacheStats before = GetCompileCacheStats();
    StatusOr<std::shared_ptr<const std::string>> again = CompileToCubin(src, 9, 0);
    ASSERT_TRUE(again.ok()) << again.status().message();
    const CompileCacheStats after = GetCompileCacheStats();
    EXPECT_EQ(after.corrupt_files, before.corrupt_files + 1);
    EXPECT_EQ(after.compiles, before.compiles + 1);
    EXPECT_EQ(**again, **good);
    // Rewritten: the next read comes from disk.
    ClearCompileMemoryCache();
    ASSERT_TRUE(CompileToCubin(src, 9, 0).ok());
    EXPECT_EQ(GetCompileCacheStats().disk_hits, after.disk_hits + 1);
  }
  // A flipped byte of the payload fails the checksum.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(bytes.size(), 100u);
  bytes[bytes.size() / 2] ^= 0x5a;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  ClearCompileMemoryCache();
  const CompileCacheStats before = GetCompileCacheStats();
  ASSERT_TRUE(CompileToCubin(src, 9, 0).ok());
  EXPECT_EQ(GetCompileCacheStats().corrupt_files, before.corrupt_files + 1);
}

TEST(CompileToCubin, CacheOffWritesNoFile) {
  ScopedCacheDir cache;
  setenv("XSHARD_CACHE_DIR", "off", 1);
  EXPECT_EQ(CompileCacheDir(), "");
  const KernelSource src = FreshAxpy();
  const CompileCacheStats before = GetCompileCacheStats();
  ASSERT_TRUE(CompileToCubin(src, 9, 0).ok());
  EXPECT_EQ(GetCompileCacheStats().disk_writes, before.disk_writes);
  EXPECT_FALSE(std::filesystem::exists(cache.dir()));
}

TEST(CompileToCubin, CompileErrorNamesTheKernelAndQuotesNvrtcsLog) {
  ScopedCacheDir cache;
  KernelSource bad;
  bad.name = "xs_test_broken";
  bad.code = "extern \"C\" __global__ void xs_test_broken(float* y) { y[0] = undeclared_thing; }\n";
  StatusOr<std::shared_ptr<const std::string>> r = CompileToCubin(bad, 9, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("xs_test_broken"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("undeclared_thing"), std::string::npos) << r.status().message();
}

TEST(CompileToCubin, CudaHeadersAreOnTheIncludePath) {
  ScopedCacheDir cache;
  KernelSource src;
  src.name = "xs_test_half";
  src.code = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
             "extern \"C\" __global__ void xs_test_half(__half* y, __nv_bfloat16* z) {\n"
             "  y[0] = __float2half(1.5f); z[0] = __float2bfloat16(2.5f);\n}\n";
  StatusOr<std::shared_ptr<const std::string>> r = CompileToCubin(src, 9, 0);
  EXPECT_TRUE(r.ok()) << r.status().message();
}

TEST(LoadKernel, LaunchesAnAxpyOnTheGpu) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << NoGpuReason();
  const KernelSource src = FreshAxpy();
  StatusOr<cudaKernel_t> k = LoadKernel(src, 0);
  ASSERT_TRUE(k.ok()) << k.status().message();
  StatusOr<cudaKernel_t> again = LoadKernel(src, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *k);
  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i), y[i] = 1.0f;
  float *dx = nullptr, *dy = nullptr;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dx, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  float a = 2.0f;
  int count = n;
  void* args[] = {&a, &dx, &dy, &count};
  Status launched = LaunchKernel(*k, dim3(4), dim3(128), args, 0, nullptr);
  ASSERT_TRUE(launched.ok()) << launched.message();
  ASSERT_EQ(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < n; ++i) EXPECT_EQ(y[i], 2.0f * i + 1.0f) << i;
  cudaFree(dx);
  cudaFree(dy);
}

}  // namespace
}  // namespace xs::cuda

#else

TEST(KernelSource, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif
