// MapDevicesToGpus on made-up GPU counts: one device per GPU while there are GPUs enough, else the
// same number of virtual devices on each GPU, consecutive devices together; uneven splits refused.
#include "xshard/platform/gpu_mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "xshard/testing/value_or_fail.h"

namespace xs {
namespace {

using ::testing::ElementsAre;

TEST(GpuMappingTest, FewerDevicesThanGpusTakeOneGpuEach) {
  EXPECT_THAT(testing::ValueOrFail(MapDevicesToGpus(3, 8)),
              ElementsAre(GpuSlot{0, 0, 1}, GpuSlot{1, 0, 1}, GpuSlot{2, 0, 1}));
  EXPECT_THAT(testing::ValueOrFail(MapDevicesToGpus(2, 2)),
              ElementsAre(GpuSlot{0, 0, 1}, GpuSlot{1, 0, 1}));
}

TEST(GpuMappingTest, MoreDevicesThanGpusShareEachGpuEvenly) {
  EXPECT_THAT(testing::ValueOrFail(MapDevicesToGpus(8, 1)),
              ElementsAre(GpuSlot{0, 0, 8}, GpuSlot{0, 1, 8}, GpuSlot{0, 2, 8}, GpuSlot{0, 3, 8},
                          GpuSlot{0, 4, 8}, GpuSlot{0, 5, 8}, GpuSlot{0, 6, 8},
                          GpuSlot{0, 7, 8}));
  EXPECT_THAT(testing::ValueOrFail(MapDevicesToGpus(6, 3)),
              ElementsAre(GpuSlot{0, 0, 2}, GpuSlot{0, 1, 2}, GpuSlot{1, 0, 2}, GpuSlot{1, 1, 2},
                          GpuSlot{2, 0, 2}, GpuSlot{2, 1, 2}));
}

TEST(GpuMappingTest, SlotsPrintWhereTheDeviceLives) {
  EXPECT_EQ((GpuSlot{1, 0, 1}).ToString(), "GPU 1");
  EXPECT_EQ((GpuSlot{0, 3, 4}).ToString(), "GPU 0, virtual 3 of 4");
}

TEST(GpuMappingTest, UnevenSplitIsAnErrorNamingTheCountsAndTheFix) {
  StatusOr<std::vector<GpuSlot>> r = MapDevicesToGpus(6, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--devices 6 does not split evenly over the 4 GPUs: with more devices than GPUs every "
            "GPU hosts the same number of virtual devices; pass at most 4 (one device per GPU) or "
            "a multiple of 4 (e.g. 8), or make a divisor of 6 GPUs visible with "
            "CUDA_VISIBLE_DEVICES");
}

TEST(GpuMappingTest, CountsBelowOneAreErrors) {
  EXPECT_EQ(MapDevicesToGpus(0, 2).status().message(), "--devices must be at least 1, got 0");
  EXPECT_EQ(MapDevicesToGpus(4, 0).status().message(), "no GPU to place 4 device(s) on");
}

}  // namespace
}  // namespace xs
