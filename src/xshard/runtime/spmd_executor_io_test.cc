// Per-device .npy folders (dev<d>/arg<i>.npy, dev<d>/out<i>.npy) and per-device random inputs.
#include "xshard/runtime/spmd_executor_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "xshard/core/npy.h"

namespace xs {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SpmdIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            StrCat("xshard_spmd_io_", ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(SpmdIoTest, OutputsWrittenPerDeviceReadBackAsArguments) {
  const std::vector<int64_t> devices = {0, 2};
  std::vector<std::vector<Array>> outs = {
      {Array::FromVector<int32_t>({2}, {1, 2}), Array::FromVector<float>({1}, {0.5f})},
      {Array::FromVector<int32_t>({2}, {3, 4}), Array::FromVector<float>({1}, {1.5f})}};
  ASSERT_TRUE(WriteDeviceOutputs(dir_, devices, outs).ok());
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "dev2" / "out1.npy"));
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "dev1"));
  // Rename out<i> to arg<i> and read them back as the two devices' arguments.
  for (int64_t d : devices) {
    for (int i = 0; i < 2; ++i) {
      fs::rename(fs::path(dir_) / StrCat("dev", d) / StrCat("out", i, ".npy"),
                 fs::path(dir_) / StrCat("dev", d) / StrCat("arg", i, ".npy"));
    }
  }
  StatusOr<std::vector<std::vector<Array>>> args = ReadDeviceArguments(
      dir_, devices, {Shape(DType::kS32, {2}), Shape(DType::kF32, {1})});
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_TRUE((*args)[1][0] == outs[1][0]);
  EXPECT_TRUE((*args)[1][1] == outs[1][1]);
  EXPECT_TRUE((*args)[0][0] == outs[0][0]);
}

TEST_F(SpmdIoTest, MissingWrongOrExtraArgumentFilesAreErrorsNamingTheFile) {
  const std::vector<Shape> shapes = {Shape(DType::kF32, {2})};
  Status st = ReadDeviceArguments(dir_, {0}, shapes).status();
  EXPECT_THAT(st.message(), HasSubstr("is not a directory"));

  fs::create_directories(fs::path(dir_) / "dev0");
  st = ReadDeviceArguments(dir_, {0}, shapes).status();
  EXPECT_THAT(st.message(), HasSubstr("dev0/arg0.npy is missing: device 0 needs argument 0 (f32[2])"));

  ASSERT_TRUE(WriteNpy((fs::path(dir_) / "dev0" / "arg0.npy").string(),
                       Array(DType::kS32, {2})).ok());
  st = ReadDeviceArguments(dir_, {0}, shapes).status();
  EXPECT_THAT(st.message(), HasSubstr("dev0/arg0.npy: holds s32[2] but device 0's argument 0 is f32[2]"));

  ASSERT_TRUE(WriteNpy((fs::path(dir_) / "dev0" / "arg0.npy").string(),
                       Array(DType::kF32, {2})).ok());
  ASSERT_TRUE(WriteNpy((fs::path(dir_) / "dev0" / "arg1.npy").string(),
                       Array(DType::kF32, {2})).ok());
  st = ReadDeviceArguments(dir_, {0}, shapes).status();
  EXPECT_THAT(st.message(), HasSubstr("dev0/arg1.npy is one argument too many: the module takes 1 "
                                      "argument(s), arg0.npy to arg0.npy"));
}

TEST(SpmdIo, RandomArgumentsDifferPerDeviceAndRepeatPerSeed) {
  const std::vector<Shape> shapes = {Shape(DType::kF32, {16}), Shape(DType::kS32, {16})};
  auto a = RandomDeviceArguments(7, 2, shapes);
  auto b = RandomDeviceArguments(7, 2, shapes);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_TRUE(a[1][0] == b[1][0]);
  EXPECT_FALSE(a[0][0] == a[1][0]);
  for (int64_t k = 0; k < 16; ++k) {
    EXPECT_GE(a[0][0].GetDouble(k), -1.0);
    EXPECT_LT(a[0][0].GetDouble(k), 1.0);
    EXPECT_GE(a[1][1].GetDouble(k), 0.0);
    EXPECT_LE(a[1][1].GetDouble(k), 9.0);
  }
}

// --random-args values must not change with the fast path: the same draws as
// std::uniform_real_distribution<double>(-1, 1) stored through SetDouble, in every float type.
TEST(SpmdIo, RandomFloatsAreTheStandardDistributionsDraws) {
  for (DType t : {DType::kF32, DType::kF64, DType::kBF16, DType::kF16}) {
    std::mt19937_64 fast_rng(11), std_rng(11);
    const Array fast = RandomArray(Shape(t, {20000}), fast_rng);
    Array want(Shape(t, {20000}));
    std::uniform_real_distribution<double> real(-1.0, 1.0);
    for (int64_t k = 0; k < want.num_elements(); ++k) want.SetDouble(k, real(std_rng));
    EXPECT_TRUE(fast == want) << DTypeName(t);
  }
}

}  // namespace
}  // namespace xs
