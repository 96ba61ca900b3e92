// Convolution and reduce-window along sharded spatial dims (window_halo.h), strided slices of a
// sharded dim (handlers_halo.cc) and dynamic-update-slice into a sharded base (handlers_dus.cc):
// each runs on N devices against the one-device run, and the collectives (kinds and bytes per
// device, worked out by hand in the comments) are pinned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "xshard/base/strings.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

using testing::CollectiveKinds;
using testing::CompareOptions;
using testing::PartitionAndCompare;
using Kinds = std::vector<std::string>;

constexpr char kMax[] = "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n";
constexpr char kAdd[] = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n";

// x[2,H,8,3] sharded along H, a 3x3x3x4 kernel replicated, the result sharded along H.
std::string Conv(int64_t h, int64_t out_h, int64_t n, const std::string& window, int64_t ow = 8,
                 const std::string& extra = "", int64_t in_c = 3, int64_t k_c = 3) {
  return StrCat("ENTRY e {\n  x = f32[2,", h, ",8,", in_c, "] parameter(0), sharding={devices=[1,", n,
                ",1,1]<=[", n, "]}\n  w = f32[3,3,", k_c, ",4] parameter(1), sharding={replicated}\n",
                "  ROOT c = f32[2,", out_h, ",", ow, ",4] convolution(x, w), window={", window,
                "}, dim_labels=b01f_01io->b01f", extra, ", sharding={devices=[1,", n, ",1,1]<=[", n, "]}\n}\n");
}

std::string Pool(const std::string& reducer, const std::string& init, int64_t h, int64_t out_h, int64_t n,
                 const std::string& window, int64_t w = 8, int64_t ow = 8) {
  return StrCat(reducer, "ENTRY e {\n  x = f32[2,", h, ",", w, ",3] parameter(0), sharding={devices=[1,", n,
                ",1,1]<=[", n, "]}\n  i = f32[] constant(", init, ")\n  ROOT r = f32[2,", out_h, ",", ow,
                ",3] reduce-window(x, i), window={", window, "}, to_apply=", reducer[0] == 'm' ? "max" : "add",
                ", sharding={devices=[1,", n, ",1,1]<=[", n, "]}\n}\n");
}

// 3x3 SAME over H=16 on 4 devices: each device receives one row [2,1,8,3] f32 = 192 B from each
// neighbour (XLA's ExchangeHalo: two collective-permutes); nothing is gathered.
TEST(WindowHaloTest, SamePaddedConvExchangesOneRowEachWay) {
  const PartitionResult r = PartitionAndCompare(Conv(16, 16, 4, "size=3x3 pad=1_1x1_1"), 4);
  ASSERT_EQ(CollectiveKinds(r), (Kinds{"collective-permute", "collective-permute"}));
  EXPECT_EQ(r.report.collectives[0].bytes, 192);
  EXPECT_EQ(r.report.collectives[1].bytes, 192);
}

// VALID: H 16 -> 14, result tiles of 4 rows (the last holds 2); each tile reads 6 rows starting
// at its own first: two rows [2,2,8,3] = 384 B from the next device only.
TEST(WindowHaloTest, ValidConvReadsTwoRowsFromTheNextDevice) {
  const PartitionResult r = PartitionAndCompare(Conv(16, 14, 4, "size=3x3", 6), 4);
  ASSERT_EQ(CollectiveKinds(r), (Kinds{"collective-permute"}));
  EXPECT_EQ(r.report.collectives[0].bytes, 384);
}

// Stride 2 with SAME padding (H 16 -> 8): result tile k (2 rows) reads input rows 4k-1 .. 4k+3,
// one row from the previous device; rhs dilation 2 (reach 5, pad 2_2): two rows each way.
TEST(WindowHaloTest, StrideAndDilation) {
  PartitionResult r = PartitionAndCompare(Conv(16, 8, 4, "size=3x3 stride=2x1 pad=1_1x1_1"), 4);
  ASSERT_EQ(CollectiveKinds(r), (Kinds{"collective-permute"}));
  EXPECT_EQ(r.report.collectives[0].bytes, 192);
  r = PartitionAndCompare(Conv(16, 16, 4, "size=3x3 pad=2_2x1_1 rhs_dilate=2x1"), 4);
  ASSERT_EQ(CollectiveKinds(r), (Kinds{"collective-permute", "collective-permute"}));
  EXPECT_EQ(r.report.collectives[0].bytes, 384);
}

// lhs dilation 2 (the input gradient of a stride-2 conv: H 16 -> 32 on 8 devices): result tile
// k (4 rows) reads input rows 2k-1 .. 2k+1, one row [2,1,8,3] = 192 B from the previous device.
// With 3-row result tiles (H 6 -> 11 on 4) the tiles' first windows start at different
// distances from their first rows (tile 0 one position before row 0, tile 1 at row 2): every
// tile's local window starts one position before its first row, the tiles that start on a row
// compute one extra leading result, and each cuts its own 3 rows out (a per-tile dynamic-slice):
// halos, no gather. The same on a Whisper-like input gradient (50 frames of a stride-2 conv1d
// over 8 devices to 100, uneven, its 13-row tiles alternating) and with a dilated kernel.
TEST(WindowHaloTest, LhsDilation) {
  PartitionResult r = PartitionAndCompare(Conv(16, 32, 8, "size=3x3 pad=2_1x2_1 lhs_dilate=2x2", 16), 8);
  ASSERT_EQ(CollectiveKinds(r), (Kinds{"collective-permute"}));
  EXPECT_EQ(r.report.collectives[0].bytes, 192);
  r = PartitionAndCompare(Conv(6, 11, 4, "size=3x3 pad=1_1x1_1 lhs_dilate=2x1"), 4);
  ASSERT_FALSE(CollectiveKinds(r).empty());
  for (const std::string& k : CollectiveKinds(r)) EXPECT_EQ(k, "collective-permute");
  const std::string whisper =
      "ENTRY e {\n  g = f32[2,50,16] parameter(0), sharding={devices=[1,8,1]<=[8]}\n"
      "  w = f32[3,16,16] parameter(1), sharding={replicated}\n"
      "  ROOT c = f32[2,100,16] convolution(g, w), window={size=3 pad=1_2 lhs_dilate=2}, dim_labels=b0f_0oi->b0f, "
      "sharding={devices=[1,8,1]<=[8]}\n}\n";
  r = PartitionAndCompare(whisper, 8);
  ASSERT_FALSE(CollectiveKinds(r).empty());
  for (const std::string& k : CollectiveKinds(r)) EXPECT_EQ(k, "collective-permute");
  std::string dilated = whisper;
  dilated.replace(dilated.find("size=3 pad=1_2 lhs_dilate=2"), 27, "size=3 pad=2_3 lhs_dilate=2 rhs_dilate=2");
  for (const std::string& k : CollectiveKinds(PartitionAndCompare(dilated, 8))) EXPECT_NE(k, "all-gather");
  // Stride 2 over the dilated input (tiles shifted by odd amounts cannot be cut on the result's
  // grid): gathered, still right.
  std::string strided = whisper;
  strided.replace(strided.find("f32[2,100,16] convolution"), 13, "f32[2,50,16] ");
  strided.replace(strided.find("size=3 pad=1_2 lhs_dilate=2"), 27, "size=3 stride=2 pad=1_1 lhs_dilate=2");
  PartitionAndCompare(strided, 8);
}

// Uneven H (10 over 4: shards of 3, the last holds 1 real row) with padding: the padding rows of
// the last shard must read as zeros, not as whatever the buffer holds.
TEST(WindowHaloTest, UnevenShardsAreMasked) {
  const PartitionResult r = PartitionAndCompare(Conv(10, 10, 4, "size=3x3 pad=1_1x1_1"), 4);
  for (const std::string& k : CollectiveKinds(r)) EXPECT_EQ(k, "collective-permute");
  PartitionAndCompare(Conv(10, 8, 4, "size=3x3", 6), 4);
  PartitionAndCompare(Conv(11, 5, 4, "size=3x3 stride=2x1 pad=0_1x1_1"), 4);
}

// Feature groups (4 groups of 1 channel, 2 outputs each) keep working with the spatial split.
TEST(WindowHaloTest, FeatureGroupsStay) {
  const PartitionResult r = PartitionAndCompare(
      "ENTRY e {\n  x = f32[2,16,8,4] parameter(0), sharding={devices=[1,4,1,1]<=[4]}\n"
      "  w = f32[3,3,1,8] parameter(1), sharding={replicated}\n"
      "  ROOT c = f32[2,16,8,8] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
      "feature_group_count=4, sharding={devices=[1,4,1,1]<=[4]}\n}\n",
      4);
  for (const std::string& k : CollectiveKinds(r)) EXPECT_EQ(k, "collective-permute");
}

// A window reaching three shards away (H=8 over 8, 7 rows, pad 3): whole neighbour tiles are
// fetched by six permutes (each 192 B) where a collective costs 2 us and a device computes
// 9 GFLOP/s; where a collective costs 20 us (more devices than cores), one all-gather of this
// small image is cheaper. The result is right either way, and under the default figures.
TEST(WindowHaloTest, WindowWiderThanTwoShardsTakesFarHalosOrFallsBack) {
  std::string text = Conv(8, 8, 8, "size=7x3 pad=3_3x1_1");
  text.replace(text.find("w = f32[3,3,"), 12, "w = f32[7,3,");
  PartitionAndCompare(text, 8);
  CompareOptions fast_links;
  fast_links.partition.machine.collective_latency_us = 2;
  fast_links.partition.machine.device_gflops = 9;
  const PartitionResult halos = PartitionAndCompare(text, 8, fast_links);
  ASSERT_FALSE(CollectiveKinds(halos).empty());
  for (const std::string& k : CollectiveKinds(halos)) EXPECT_EQ(k, "collective-permute");
  CompareOptions shared_host = fast_links;
  shared_host.partition.machine.collective_latency_us = 20;
  const PartitionResult gathered = PartitionAndCompare(text, 8, shared_host);
  ASSERT_FALSE(CollectiveKinds(gathered).empty());
  EXPECT_NE(CollectiveKinds(gathered)[0], "collective-permute");
}

// A weight gradient: conv(x f32[2,16,8,3] as "f01b", g f32[2,16,8,4] as "i01o") -> f32[3,3,3,4],
// window 16x8 pad 1_1 sliding over all of g; x and g sharded along H over 4. Each device
// convolves its 4 rows of g with its x rows plus one halo row each way ([2,1,8,3] = 192 B per
// permute) into a partial f32[3,3,3,4], all-reduced: no gather of x or g (2 x 1.5 KiB).
TEST(WindowHaloTest, ConvOverAShardedKernelIsPartialSums) {
  const std::string text =
      "ENTRY e {\n  x = f32[2,16,8,3] parameter(0), sharding={devices=[1,4,1,1]<=[4]}\n"
      "  g = f32[2,16,8,4] parameter(1), sharding={devices=[1,4,1,1]<=[4]}\n"
      "  ROOT c = f32[3,3,3,4] convolution(x, g), window={size=16x8 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, "
      "sharding={replicated}\n}\n";
  const PartitionResult r = PartitionAndCompare(text, 4);
  ASSERT_EQ(CollectiveKinds(r), (Kinds{"collective-permute", "collective-permute", "all-reduce"}));
  EXPECT_EQ(r.report.collectives[0].bytes, 192);
  // Uneven (H 10 over 4: kernel shards of 3, the last holds 1) and rhs dilation 2.
  std::string uneven = text;
  for (const char* from : {"2,16,8,3]", "2,16,8,4]"}) {
    std::string to = from;
    to.replace(2, 2, "10");
    uneven.replace(uneven.find(from), std::string(from).size(), to);
  }
  uneven.replace(uneven.find("size=16x8"), 9, "size=10x8");
  // g computed (exp) so that the padding rows of its last shard hold exp(0) = 1, not zeros.
  uneven.replace(uneven.find("  g = "), 6, "  p = ");
  uneven.replace(uneven.find("  ROOT"), 0,
                 "  g = f32[2,10,8,4] exponential(p), sharding={devices=[1,4,1,1]<=[4]}\n");
  for (const std::string& k : CollectiveKinds(PartitionAndCompare(uneven, 4))) EXPECT_NE(k, "all-gather");
  std::string dilated = text;
  dilated.replace(dilated.find("size=16x8 pad=1_1x1_1"), 21, "size=16x8 pad=8_9x1_1 rhs_dilate=2x1");
  for (const std::string& k : CollectiveKinds(PartitionAndCompare(dilated, 4))) EXPECT_NE(k, "all-gather");
}

// Result tiles shorter than the input's (a sum window of 3 over a padded f32[18,4096] split in
// tiles of 3 rows, result f32[16,4096] in tiles of 2): the last tiles' windows lie up to three
// tiles back. Whole-tile fetches (collective-permutes of f32[3,4096]) move less than gathering
// the 288 KiB input, so no all-gather.
TEST(WindowHaloTest, FarWindowsFetchWholeTiles) {
  const PartitionResult r = PartitionAndCompare(
      StrCat(kAdd, "ENTRY e {\n  x = f32[16,4096] parameter(0), sharding={devices=[8,1]<=[8]}\n",
             "  z = f32[] constant(0)\n  p = f32[18,4096] pad(x, z), padding=1_1x0_0, sharding={devices=[8,1]<=[8]}\n",
             "  ROOT r = f32[16,4096] reduce-window(p, z), window={size=3x1}, to_apply=add,",
             " sharding={devices=[8,1]<=[8]}\n}\n"),
      8, {1});
  ASSERT_FALSE(CollectiveKinds(r).empty());
  for (const std::string& k : CollectiveKinds(r)) EXPECT_EQ(k, "collective-permute");
}

// A depthwise conv1d's weight gradient as JAX writes it: conv(h f32[4,32,16] as "f0b", g
// f32[4,32,16] as "i0o") -> f32[7,1,16], window 32 pad 3_3, batch_group_count=16 (the channels),
// with the batch (the contracted "feature" dim) split over x=2 and time over y=4. Each device
// convolves its 8 time steps with a 3-step halo each way of h into a partial f32[7,1,16]; one
// all-reduce over all 8 devices sums time and batch, as XLA does: no gather of h or g (2 x 3 KiB).
// An uneven batch (3 over 2) whose padding row holds exp(0) = 1 in h and in g must add nothing.
TEST(WindowHaloTest, DepthwiseWeightGradientWithTheBatchSplitIsPartialSums) {
  const std::string text =
      "ENTRY e {\n  h = f32[4,32,16] parameter(0), sharding={devices=[2,4,1]<=[8]}\n"
      "  g = f32[4,32,16] parameter(1), sharding={devices=[2,4,1]<=[8]}\n"
      "  ROOT c = f32[7,1,16] convolution(h, g), window={size=32 pad=3_3}, dim_labels=f0b_i0o->0bf, "
      "batch_group_count=16, sharding={replicated}\n}\n";
  const PartitionResult r = PartitionAndCompare(text, 8);
  ASSERT_EQ(CollectiveKinds(r), (Kinds{"collective-permute", "collective-permute", "all-reduce"}));
  EXPECT_EQ(r.report.collectives[0].bytes, 2 * 3 * 16 * 4);
  const std::string uneven =
      "ENTRY e {\n  a = f32[3,32,16] parameter(0), sharding={devices=[2,4,1]<=[8]}\n"
      "  b = f32[3,32,16] parameter(1), sharding={devices=[2,4,1]<=[8]}\n"
      "  h = f32[3,32,16] exponential(a), sharding={devices=[2,4,1]<=[8]}\n"
      "  g = f32[3,32,16] exponential(b), sharding={devices=[2,4,1]<=[8]}\n"
      "  ROOT c = f32[7,1,16] convolution(h, g), window={size=32 pad=3_3}, dim_labels=f0b_i0o->0bf, "
      "batch_group_count=16, sharding={replicated}\n}\n";
  for (const std::string& k : CollectiveKinds(PartitionAndCompare(uneven, 8))) EXPECT_NE(k, "all-gather");
}

// Random 1-D convolutions and sum pools with lhs (base) dilation, stride, kernel dilation and
// padding (negative too) over a dim split 2, 4 or 8 ways, evenly or not: the partitioned run
// matches the one-device run whichever plan wins (halos, shifted tiles, or a gather).
// XSHARD_HALO_CASES sets the count (default 120).
TEST(WindowHaloTest, RandomDilatedWindowsMatchTheOneDeviceRun) {
  std::mt19937 rng(11);
  const int cases = std::getenv("XSHARD_HALO_CASES") ? std::atoi(std::getenv("XSHARD_HALO_CASES")) : 120;
  int tried = 0;
  for (int c = 0; tried < cases && c < 20 * cases; ++c) {
    const int64_t n = int64_t{1} << (1 + rng() % 3), h = 3 + rng() % 40, k = 1 + rng() % 4;
    const int64_t stride = 1 + rng() % 2, ld = 1 + rng() % 3, rd = 1 + rng() % 2;
    const int64_t pl = static_cast<int64_t>(rng() % 6) - 1, ph = static_cast<int64_t>(rng() % 6) - 1;
    const int64_t padded = (h - 1) * ld + 1 + pl + ph, reach = (k - 1) * rd + 1;
    if (padded < reach) continue;
    const int64_t out = (padded - reach) / stride + 1;
    if (out < 2) continue;
    ++tried;
    const std::string window =
        StrCat("size=", k, " stride=", stride, " pad=", pl, "_", ph, " lhs_dilate=", ld, " rhs_dilate=", rd);
    const std::string split = StrCat("{devices=[1,", n, ",1]<=[", n, "]}");
    std::string text;
    if (c % 3 == 0) {
      text = StrCat("add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n",
                    "ENTRY e {\n  x = f32[2,", h, ",3] parameter(0), sharding=", split,
                    "\n  z = f32[] constant(0)\n  ROOT r = f32[2,", out, ",3] reduce-window(x, z), window={size=1x", k,
                    "x1 stride=1x", stride, "x1 pad=0_0x", pl, "_", ph, "x0_0 lhs_dilate=1x", ld, "x1 rhs_dilate=1x",
                    rd, "x1}, to_apply=add, sharding=", split, "\n}\n");
    } else {
      text = StrCat("ENTRY e {\n  x = f32[2,", h, ",3] parameter(0), sharding=", split, "\n  w = f32[", k,
                    ",3,4] parameter(1), sharding={replicated}\n  ROOT c = f32[2,", out,
                    ",4] convolution(x, w), window={", window, "}, dim_labels=b0f_0io->b0f, sharding=", split, "\n}\n");
    }
    SCOPED_TRACE(text);
    PartitionAndCompare(text, n);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_EQ(tried, cases);
}

// 2x2 max pool, stride 2, over H=16 on 8 devices: every window is inside one shard (no
// collective). 3x3 stride 1 SAME max pool: out-of-range rows must read -inf (the init value),
// not the zeros a permute leaves at the edges: inputs are shifted below zero to tell them apart.
TEST(WindowHaloTest, MaxPool) {
  PartitionResult r = PartitionAndCompare(Pool(kMax, "-inf", 16, 8, 8, "size=1x2x2x1 stride=1x2x2x1", 8, 4), 8);
  EXPECT_TRUE(CollectiveKinds(r).empty());
  const std::string shifted = StrCat(
      kMax, "ENTRY e {\n  p = f32[2,16,8,3] parameter(0), sharding={devices=[1,4,1,1]<=[4]}\n",
      "  k = f32[] constant(-1000)\n  kb = f32[2,16,8,3] broadcast(k), dimensions={}\n",
      "  x = f32[2,16,8,3] add(p, kb), sharding={devices=[1,4,1,1]<=[4]}\n  i = f32[] constant(-inf)\n",
      "  ROOT r = f32[2,16,8,3] reduce-window(x, i), window={size=1x3x3x1 pad=0_0x1_1x1_1x0_0}, to_apply=max,",
      " sharding={devices=[1,4,1,1]<=[4]}\n}\n");
  r = PartitionAndCompare(shifted, 4);
  ASSERT_EQ(CollectiveKinds(r), (Kinds{"collective-permute", "collective-permute"}));
  // One row [2,1,8,3] f32 each way.
  EXPECT_EQ(r.report.collectives[0].bytes, 192);
}

// A max pool's gradient (select-and-scatter) of x[2,h,8,3], x, the source and the result split by
// `sharding` (default: H over 4 devices), the select a `direction` comparison, the scatter `scatter`.
std::string SelectScatter(const std::string& window, int64_t out_h, int64_t out_w, const std::string& direction = "GE",
                          const std::string& scatter = "add", const std::string& sharding = "{devices=[1,4,1,1]<=[4]}",
                          int64_t h = 16) {
  return StrCat(
      "sel {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=",
      direction, "\n}\n", kAdd, kMax, "ENTRY e {\n  x = f32[2,", h, ",8,3] parameter(0), sharding=", sharding,
      "\n  s = f32[2,", out_h, ",", out_w, ",3] parameter(1), sharding=", sharding,
      "\n  z = f32[] constant(0)\n  ROOT r = f32[2,", h, ",8,3] select-and-scatter(x, s, z), window={", window,
      "}, select=sel, scatter=", scatter, ", sharding=", sharding, "\n}\n");
}

// Random windows (size 2-6, stride 1-4, any padding below the size, 13-33 rows over 2-8 devices,
// every select direction), each against the one-device run with poisoned padding.
TEST(WindowHaloTest, SelectAndScatterRandomWindows) {
  std::mt19937 rng(20261202);
  const char* directions[] = {"GE", "GT", "LE", "LT"};
  int halos = 0;
  for (int c = 0; c < 40; ++c) {
    const int64_t h = std::vector<int64_t>{13, 16, 20, 33}[rng() % 4], n = int64_t{2} << (rng() % 3);
    const int64_t size = 2 + rng() % 5, stride = 1 + rng() % 4, lo = rng() % size, hi = rng() % size;
    const int64_t out = (h + lo + hi - size) / stride + 1;
    const std::string window =
        StrCat("size=1x", size, "x1x1 stride=1x", stride, "x1x1 pad=0_0x", lo, "_", hi, "x0_0x0_0");
    const std::string sharding = StrCat("{devices=[1,", n, ",1,1]<=[", n, "]}");
    const std::string text = SelectScatter(window, out, 8, directions[rng() % 4], "add", sharding, h);
    SCOPED_TRACE(StrCat(h, " rows over ", n, ", window ", window));
    const Kinds kinds = CollectiveKinds(PartitionAndCompare(text, n));
    halos += !kinds.empty() &&
             std::all_of(kinds.begin(), kinds.end(), [](const std::string& k) { return k == "collective-permute"; });
  }
  EXPECT_GE(halos, 20);  // most of them by halo exchange, not by gathering
}

// 2x2 at stride 2: every window lies in its own operand tile, the source f32[2,8,4,3] is split
// like the operand: no collective.
TEST(WindowHaloTest, SelectAndScatterInsideTiles) {
  EXPECT_TRUE(CollectiveKinds(PartitionAndCompare(SelectScatter("size=1x2x2x1 stride=1x2x2x1", 8, 4), 4)).empty());
}

// 3 rows at stride 2 (7 windows; tiles of 4 operand rows and 2 source rows): tile k takes the
// windows that touch its rows (tile 1: windows 1-3 over rows 2-8) and the rows they cover. From
// the tile before: 2 operand rows (384 B: the union of rows 2-3 for tile 1, 6-7 for tile 2,
// 10-11 for tile 3) and 1 source row (192 B: windows 1, 3, 5); from the tile after: 1 operand row
// (192 B: rows 4, 8, 12). 768 B where gathering both took 2,880. Every select direction.
TEST(WindowHaloTest, SelectAndScatterOverlappingWindowsExchangeHalos) {
  for (const char* direction : {"GE", "GT", "LE", "LT"}) {
    const PartitionResult r = PartitionAndCompare(SelectScatter("size=1x3x1x1 stride=1x2x1x1", 7, 8, direction), 4);
    ASSERT_EQ(CollectiveKinds(r), (Kinds{"collective-permute", "collective-permute", "collective-permute"}));
    EXPECT_EQ(r.report.TotalCollectiveBytes(), 768) << direction;
  }
  // Stride 1 with SAME padding (pad 1 each side), windows that reach one row either way.
  PartitionResult same = PartitionAndCompare(SelectScatter("size=1x3x1x1 pad=0_0x1_1x0_0x0_0", 16, 8), 4);
  for (const CollectiveRecord& c : same.report.collectives) EXPECT_EQ(c.kind, "collective-permute");
  // Wider windows, strides, asymmetric padding and windows past the tiles (each against the
  // one-device run, whose padding the local windows must never select).
  for (const auto& [window, out_h] :
       std::vector<std::pair<std::string, int64_t>>{{"size=1x5x1x1 stride=1x2x1x1 pad=0_0x2_2x0_0x0_0", 8},
                                                    {"size=1x4x1x1 stride=1x3x1x1 pad=0_0x1_2x0_0x0_0", 6},
                                                    {"size=1x7x1x1 stride=1x3x1x1 pad=0_0x3_3x0_0x0_0", 6},
                                                    {"size=1x3x2x1 stride=1x2x1x1 pad=0_0x0_1x0_1x0_0", 8}}) {
    const PartitionResult r = PartitionAndCompare(SelectScatter(window, out_h, 8), 4);
    for (const CollectiveRecord& c : r.report.collectives) EXPECT_EQ(c.kind, "collective-permute") << window;
  }
  // Height over 4 and width over 2 (8 devices), 3x3 windows at stride 2 overlapping along both:
  // one exchange per dim, the width's carrying the height's halo rows (the corners).
  const PartitionResult both = PartitionAndCompare(
      SelectScatter("size=1x3x3x1 stride=1x2x2x1", 7, 3, "GE", "add", "{devices=[1,4,2,1]<=[8]}"), 8);
  for (const CollectiveRecord& c : both.report.collectives) EXPECT_EQ(c.kind, "collective-permute");
  EXPECT_FALSE(both.report.collectives.empty());
  // A select other than a comparison of its parameters, or a scatter other than an add, has no
  // value the select never picks or needs every window's scatter: gathered, still right.
  PartitionResult eq = PartitionAndCompare(SelectScatter("size=1x3x1x1 stride=1x2x1x1", 7, 8, "EQ"), 4);
  EXPECT_EQ(CollectiveKinds(eq), (Kinds{"all-gather", "all-gather"}));
  // A total-order >= ranks -NaN below -inf: no padding value is safe, gathered.
  PartitionResult total =
      PartitionAndCompare(SelectScatter("size=1x3x1x1 stride=1x2x1x1", 7, 8, "GE, type=TOTALORDER"), 4);
  EXPECT_EQ(CollectiveKinds(total), (Kinds{"all-gather", "all-gather"}));
  PartitionAndCompare(SelectScatter("size=1x3x1x1 stride=1x2x1x1", 7, 8, "GE", "max"), 4);
}

// Dilated windows (jax.lax.reduce_window's window_dilation and base_dilation): a 3-wide window
// dilated by 2 reaches 2 rows either way, exchanged as halos (one [2,2,8,3] f32 block, 384 B,
// from each neighbour, as XLA) instead of gathering the dim; the others against the one-device
// run, halos or a gather as the geometry allows (base dilation by 3 over 16 rows makes 46
// outputs, whose tiles start at different distances from their first element).
TEST(WindowHaloTest, DilatedPools) {
  PartitionResult r =
      PartitionAndCompare(Pool(kAdd, "0", 16, 16, 4, "size=1x3x1x1 pad=0_0x2_2x0_0x0_0 rhs_dilate=1x2x1x1"), 4);
  ASSERT_EQ(CollectiveKinds(r), (Kinds{"collective-permute", "collective-permute"}));
  EXPECT_EQ(r.report.TotalCollectiveBytes(), 768);
  PartitionAndCompare(
      Pool(kMax, "-inf", 16, 16, 4, "size=1x3x1x1 stride=1x2x1x1 pad=0_0x1_1x0_0x0_0 lhs_dilate=1x2x1x1"), 4);
  PartitionAndCompare(Pool(kMax, "-inf", 16, 46, 4, "size=1x2x1x1 pad=0_0x1_0x0_0x0_0 lhs_dilate=1x3x1x1"), 4);
  PartitionAndCompare(Pool(kAdd, "0", 16, 6, 4, "size=1x3x1x1 stride=1x3x1x1 pad=0_0x3_3x0_0x0_0 rhs_dilate=1x3x1x1"),
                      4);
  PartitionAndCompare(Pool(kMax, "-inf", 13, 13, 4, "size=1x2x1x1 pad=0_0x2_2x0_0x0_0 rhs_dilate=1x4x1x1"), 4);
  PartitionAndCompare(
      Pool(kAdd, "0", 16, 29, 8, "size=1x3x1x1 pad=0_0x1_1x0_0x0_0 lhs_dilate=1x2x1x1 rhs_dilate=1x2x1x1"), 8);
}

// Average pool (sum window 3, stride 2, padding 1) over an uneven H (13 over 4 -> 7 rows).
TEST(WindowHaloTest, SumPoolUneven) {
  PartitionAndCompare(Pool(kAdd, "0", 13, 7, 4, "size=1x3x1x1 stride=1x2x1x1 pad=0_0x1_1x0_0x0_0"), 4);
}

// x[::2] of f32[16,4] over 8 devices: result row k is input row 2k, which device k holds: no
// collective. x[1::3] (rows 1,4,..,13 over 8 tiles of 1): tile k reads row 3k+1, up to two
// shards away: collective-permutes of at most one shard each, never a gather.
TEST(WindowHaloTest, StridedSliceOfAShardedDim) {
  const std::string head = "ENTRY e {\n  x = f32[16,4] parameter(0), sharding={devices=[8,1]<=[8]}\n";
  PartitionResult r = PartitionAndCompare(
      StrCat(head, "  ROOT s = f32[8,4] slice(x), slice={[0:16:2], [0:4]}, sharding={devices=[8,1]<=[8]}\n}\n"), 8);
  EXPECT_TRUE(CollectiveKinds(r).empty());
  r = PartitionAndCompare(
      StrCat(head, "  ROOT s = f32[5,4] slice(x), slice={[1:16:3], [0:4]}, sharding={devices=[8,1]<=[8]}\n}\n"), 8);
  for (const CollectiveRecord& c : r.report.collectives) {
    EXPECT_EQ(c.kind, "collective-permute");
    EXPECT_LE(c.bytes, 32);  // at most one shard of 2 rows
  }
}

// dynamic-update-slice of a replicated f32[4,4] update into f32[32,4] sharded over 8: each
// device writes the rows of the update that fall in its shard; no collective at all (the
// rule handler would gather the base: 448 B). Starts past the end clamp.
TEST(WindowHaloTest, DynamicUpdateSliceIntoShardedBaseIsLocal) {
  for (const char* start : {"5", "0", "29", "100", "-3"}) {
    const std::string text = StrCat(
        "ENTRY e {\n  a = f32[32,4] parameter(0), sharding={devices=[8,1]<=[8]}\n",
        "  u = f32[4,4] parameter(1), sharding={replicated}\n  i = s32[] constant(", start, ")\n",
        "  z = s32[] constant(0)\n",
        "  ROOT d = f32[32,4] dynamic-update-slice(a, u, i, z), sharding={devices=[8,1]<=[8]}\n}\n");
    const PartitionResult r = PartitionAndCompare(text, 8);
    EXPECT_TRUE(CollectiveKinds(r).empty()) << start;
  }
  // Both dims sharded (2 x 2) and an update spanning three shards of dim 0.
  PartitionAndCompare(
      "ENTRY e {\n  a = f32[12,8] parameter(0), sharding={devices=[2,2]<=[4]}\n"
      "  u = f32[7,3] parameter(1), sharding={replicated}\n  i = s32[] constant(3)\n  j = s32[] constant(4)\n"
      "  ROOT d = f32[12,8] dynamic-update-slice(a, u, i, j), sharding={devices=[2,2]<=[4]}\n}\n",
      4);
}

// A decode step's cache write (bench/xla_compare decode_wsc_loop): the cache f32[4,8,16] sharded
// over batch (2) and sequence (4), the new token's f32[4,1,16] over batch alone. The update spans
// the batch dim whole, so each device writes its own rows' piece where the position falls in its
// sequence shard: no collective (the rule handler gathered the sequence dim: 768 B per device).
// Also an uneven batch (5 rows over 2) and starts that clamp.
TEST(WindowHaloTest, DynamicUpdateSliceKeepsTheBatchDimSharded) {
  for (const char* start : {"5", "0", "7", "30", "-2"}) {
    const PartitionResult r = PartitionAndCompare(
        StrCat("ENTRY e {\n  a = f32[4,8,16] parameter(0), sharding={devices=[2,4,1]<=[8]}\n",
               "  u = f32[4,1,16] parameter(1),", " sharding={devices=[2,1,1,4]<=[8] last_tile_dim_replicate}\n",
               "  i = s32[] constant(", start, ")\n  z = s32[] constant(0)\n",
               "  ROOT d = f32[4,8,16] dynamic-update-slice(a, u, z, i, z),", " sharding={devices=[2,4,1]<=[8]}\n}\n"),
        8);
    EXPECT_TRUE(CollectiveKinds(r).empty()) << start;
  }
  const PartitionResult r = PartitionAndCompare(
      "ENTRY e {\n  a = f32[5,12,3] parameter(0), sharding={devices=[2,2,1]<=[4]}\n"
      "  u = f32[5,4,3] parameter(1), sharding={devices=[2,1,1,2]<=[4] last_tile_dim_replicate}\n"
      "  i = s32[] constant(4)\n  z = s32[] constant(0)\n"
      "  ROOT d = f32[5,12,3] dynamic-update-slice(a, u, z, i, z),"
      " sharding={devices=[2,2,1]<=[4]}\n}\n",
      4);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

// jnp.cummax and a reverse jnp.cumsum of one value (bench/xla_compare cum_ops): windows over the
// whole dim, so the last tile's window would receive every other tile. The dim is gathered
// instead (the same bytes as that halo), once: the second cumulative op reads the cached copy.
// With halos each op exchanged its own (2 permutes, 128 B; XLA: 1 all-gather, 64 B).
TEST(WindowHaloTest, CumulativeWindowsGatherTheDimOnceForEveryUser) {
  const PartitionResult r = PartitionAndCompare(R"(
max { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT m = f32[] maximum(a, b) }
add { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[16,8] parameter(0), sharding={devices=[2,1]<=[2]}
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  cmax = f32[16,8] reduce-window(x, ninf), window={size=16x1 pad=15_0x0_0}, to_apply=max, sharding={devices=[2,1]<=[2]}
  rsum = f32[16,8] reduce-window(x, zero), window={size=16x1 pad=0_15x0_0}, to_apply=add, sharding={devices=[2,1]<=[2]}
  ROOT t = (f32[16,8], f32[16,8]) tuple(cmax, rsum), sharding={{devices=[2,1]<=[2]}, {devices=[2,1]<=[2]}}
}
)", 2);
  ASSERT_EQ(CollectiveKinds(r), (Kinds{"all-gather"}));
  EXPECT_EQ(r.report.collectives[0].bytes, 8 * 8 * 4);
}

}  // namespace
}  // namespace xs::spmd
