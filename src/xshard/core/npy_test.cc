// .npy reading and writing: files written by real numpy / ml_dtypes (tests/data/npy, made by
// tests/tools/gen_npy.py), byte-identical writing, round trips of every DType, and every error.
#include "xshard/core/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace xs {
namespace {

using ::testing::HasSubstr;

std::string DataPath(const std::string& name) {
  return std::string(XSHARD_SOURCE_DIR) + "/tests/data/npy/" + name;
}

std::vector<std::byte> FileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return std::vector<std::byte>(p, p + s.size());
}

Array Read(const std::string& name, std::optional<DType> opaque = std::nullopt) {
  StatusOr<Array> a = ReadNpy(DataPath(name), opaque);
  EXPECT_TRUE(a.ok()) << name << ": " << a.status().ToString();
  return a.ok() ? *a : Array();
}

// A .npy image with the given header text (padded like numpy) and data.
std::vector<std::byte> MakeNpy(const std::string& header, const std::string& data,
                               int major = 1) {
  std::string h = header;
  const size_t len_bytes = major == 1 ? 2 : 4;
  while ((6 + 2 + len_bytes + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  out += h + data;
  const auto* p = reinterpret_cast<const std::byte*>(out.data());
  return std::vector<std::byte>(p, p + out.size());
}

std::string ParseError(const std::vector<std::byte>& bytes,
                       std::optional<DType> opaque = std::nullopt) {
  StatusOr<Array> a = ParseNpy(bytes, opaque);
  EXPECT_FALSE(a.ok());
  if (a.ok()) return "";
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  return a.status().message();
}

TEST(NpyTest, ReadsNumpyFilesOfEveryPlainDType) {
  const std::pair<const char*, DType> files[] = {
      {"bool", DType::kPred}, {"i1", DType::kS8},   {"i2", DType::kS16}, {"i4", DType::kS32},
      {"i8", DType::kS64},    {"u1", DType::kU8},   {"u2", DType::kU16}, {"u4", DType::kU32},
      {"u8", DType::kU64},    {"f2", DType::kF16},  {"f4", DType::kF32}, {"f8", DType::kF64},
      {"c8", DType::kC64},    {"c16", DType::kC128}};
  for (const auto& [name, dtype] : files) {
    // np.arange(6).reshape(2, 3).astype(dtype): values 0..5 (bool: False, True x5).
    EXPECT_EQ(Read(StrCat("iota_", name, ".npy")), Array::Iota(dtype, {2, 3})) << name;
  }
}

TEST(NpyTest, ReadsSignedAndFractionalValues) {
  const Array f4 = Read("vals_f4.npy");
  EXPECT_EQ(f4, Array::FromVector<float>({2, 3}, {-1.5f, 0.25f, 3.0f, -0.0f, 65504.0f, 1e-3f}));
  // ml_dtypes saves bfloat16 with descr '<V2'; values are the f32 ones rounded to bf16.
  EXPECT_EQ(Read("vals_bf16.npy"), f4.Convert(DType::kBF16));
  Array f8(DType::kF8E4M3FN, {2, 3});
  const double f8_values[] = {-1.5, 0.25, 3.0, -0.0, 448.0, 0.015625};
  for (int i = 0; i < 6; ++i) f8.SetDouble(i, f8_values[i]);
  EXPECT_EQ(Read("vals_f8e4m3fn.npy", DType::kF8E4M3FN), f8);
  Array s4(DType::kS4, {2, 3});
  const double s4_values[] = {-8, -1, 0, 1, 2, 7};
  for (int i = 0; i < 6; ++i) s4.SetDouble(i, s4_values[i]);
  EXPECT_EQ(Read("vals_int4.npy", DType::kS4), s4);
  // ml_dtypes 0.6 saves f8e5m2 as '<f1' (read without an opaque dtype); int2 as '<V1'.
  Array e5m2(DType::kF8E5M2, {3});
  const double e5m2_values[] = {-1.5, 0.25, 57344.0};
  for (int i = 0; i < 3; ++i) e5m2.SetDouble(i, e5m2_values[i]);
  EXPECT_EQ(Read("vals_f8e5m2.npy"), e5m2);
  Array s2(DType::kS2, {3});
  const double s2_values[] = {-2, -1, 1};
  for (int i = 0; i < 3; ++i) s2.SetDouble(i, s2_values[i]);
  EXPECT_EQ(Read("vals_int2.npy", DType::kS2), s2);
  EXPECT_EQ(SerializeNpy(s2), FileBytes(DataPath("vals_int2.npy")));  // the low two bits
}

TEST(NpyTest, OpaqueDTypeIsTheTypeForTheTypesNumpyLacks) {
  EXPECT_EQ(NpyOpaqueDType(DType::kF8E4M3FNUZ), DType::kF8E4M3FNUZ);
  EXPECT_EQ(NpyOpaqueDType(DType::kS2), DType::kS2);
  EXPECT_EQ(NpyOpaqueDType(DType::kBF16), DType::kBF16);
  EXPECT_EQ(NpyOpaqueDType(DType::kF32), std::nullopt);
  EXPECT_EQ(NpyOpaqueDType(DType::kToken), std::nullopt);
}

TEST(NpyTest, SwapsBigEndianData) {
  EXPECT_EQ(Read("big_f4.npy"), Array::Iota(DType::kF32, {2, 3}));
  EXPECT_EQ(Read("big_i8.npy"), Array::Iota(DType::kS64, {2, 3}));
  EXPECT_EQ(Read("big_c16.npy"),
            Array::FromVector<std::complex<double>>({2}, {{1, 2}, {-3.5, -0.5}}));
}

TEST(NpyTest, TransposesFortranOrderToRowMajor) {
  EXPECT_EQ(Read("fortran_f4.npy"), Array::Iota(DType::kF32, {3, 4}));
  EXPECT_EQ(Read("fortran_i4_3d.npy"), Array::Iota(DType::kS32, {2, 3, 4}));
}

TEST(NpyTest, ReadsScalarsEmptyArraysAndLaterFormatVersions) {
  EXPECT_EQ(Read("scalar_f8.npy"), Array::Scalar<double>(2.5));
  EXPECT_EQ(Read("empty_f4.npy"), Array(DType::kF32, {0, 3}));
  EXPECT_EQ(Read("iota5_i4.npy"), Array::Iota(DType::kS32, {5}));
  EXPECT_EQ(Read("v2_f4.npy"), Array::Iota(DType::kF32, {2, 3}));
  EXPECT_EQ(Read("v3_f4.npy"), Array::Iota(DType::kF32, {2, 3}));
}

TEST(NpyTest, WritesTheBytesNumpyWrites) {
  for (const char* name : {"iota_bool.npy", "iota_i1.npy", "iota_u8.npy", "iota_f2.npy",
                           "iota_f4.npy", "iota_c16.npy", "vals_f4.npy", "vals_bf16.npy",
                           "scalar_f8.npy", "empty_f4.npy", "iota5_i4.npy"}) {
    EXPECT_EQ(SerializeNpy(Read(name)), FileBytes(DataPath(name))) << name;
  }
  // ml_dtypes' 1-byte types are saved as '<V1'.
  EXPECT_EQ(SerializeNpy(Read("vals_int4.npy", DType::kS4)),
            FileBytes(DataPath("vals_int4.npy")));
  EXPECT_EQ(SerializeNpy(Read("vals_f8e4m3fn.npy", DType::kF8E4M3FN)),
            FileBytes(DataPath("vals_f8e4m3fn.npy")));
}

TEST(NpyTest, EveryDTypeRoundTrips) {
  for (int i = 0; i < static_cast<int>(DType::kToken); ++i) {
    const DType t = static_cast<DType>(i);
    Array a = Array::Iota(t, {3, 5});
    a.SetDouble(4, -2.5);
    const std::optional<DType> opaque = DTypeNumpyDescr(t).empty() ? std::optional(t) : std::nullopt;
    StatusOr<Array> b = ParseNpy(SerializeNpy(a), opaque);
    ASSERT_TRUE(b.ok()) << DTypeName(t) << ": " << b.status().ToString();
    EXPECT_EQ(*b, a) << DTypeName(t);
  }
}

TEST(NpyTest, WriteThenReadAFile) {
  const std::string path = ::testing::TempDir() + "/xs_npy_test.npy";
  const Array a = Array::Iota(DType::kBF16, {4, 2});
  ASSERT_TRUE(WriteNpy(path, a).ok());
  StatusOr<Array> b = ReadNpy(path);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*b, a);
  std::remove(path.c_str());
}

TEST(NpyTest, AcceptsHeaderVariantsNumpyAccepts) {
  const std::string data(12, '\0');
  // Python 2 'L' suffixes, double quotes, keys in any order, no trailing comma.
  StatusOr<Array> a = ParseNpy(
      MakeNpy("{\"shape\": (3L,), 'fortran_order': False, 'descr': '=i4'}", data));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->shape().ToString(), "s32[3]");
  // A 1-D Fortran array is the same as C order; '|u1' and '>u1' are both bytes.
  StatusOr<Array> b = ParseNpy(MakeNpy("{'descr': '>u1', 'fortran_order': True, 'shape': (12,), }",
                                       data));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->shape().ToString(), "u8[12]");
}

TEST(NpyTest, RejectsAWrongMagicString) {
  const std::string text = "PK\x03\x04 not npy";
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  EXPECT_EQ(ParseError({p, p + text.size()}),
            "not a .npy file: expected the magic string \"\\x93NUMPY\" at the start, got "
            "\"PK\\x03\\x04 not\"");
  EXPECT_THAT(ParseError({}), HasSubstr("not a .npy file"));
}

TEST(NpyTest, RejectsTruncatedHeaders) {
  std::vector<std::byte> full = FileBytes(DataPath("iota_f4.npy"));
  EXPECT_EQ(ParseError({full.begin(), full.begin() + 7}), "truncated header: no format version");
  EXPECT_EQ(ParseError({full.begin(), full.begin() + 9}),
            "truncated header: the file ends inside the header length field");
  EXPECT_EQ(ParseError({full.begin(), full.begin() + 50}),
            "truncated header: the header length field says 118 bytes but only 40 follow");
}

TEST(NpyTest, RejectsUnknownFormatVersions) {
  std::vector<std::byte> bytes = FileBytes(DataPath("iota_f4.npy"));
  bytes[6] = std::byte{4};
  EXPECT_EQ(ParseError(bytes), "unsupported .npy format version 4.0; supported: 1.0, 2.0, 3.0");
}

TEST(NpyTest, RejectsTruncatedAndExtraData) {
  std::vector<std::byte> bytes = FileBytes(DataPath("iota_f4.npy"));
  bytes.resize(bytes.size() - 4);
  EXPECT_EQ(ParseError(bytes), "truncated data: shape (2, 3) of '<f4' needs 24 data bytes but "
                               "the file has 20 after the header");
  bytes.resize(bytes.size() + 8);
  EXPECT_EQ(ParseError(bytes), "extra data: shape (2, 3) of '<f4' needs 24 data bytes but the "
                               "file has 28 after the header");
  EXPECT_THAT(ParseError(MakeNpy(
                  "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                  "")),
              HasSubstr("is too large"));
}

TEST(NpyTest, RejectsUnsupportedDescrsNamingTheSupportedOnes) {
  EXPECT_EQ(ParseError(MakeNpy("{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", std::string(16, '\0'))),
            "unsupported dtype descr '<f16'; supported: b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, "
            "f4, f8, c8, c16 (byte order '<', '>', '|' or '='), f1 (float8_e5m2 as ml_dtypes saves "
            "it), V2 (bfloat16) and V1 (float8_*, float4_e2m1fn, int2, int4, uint2, uint4) with an "
            "explicit element type");
  EXPECT_THAT(ParseError(MakeNpy("{'descr': '<U3', 'fortran_order': False, 'shape': (), }",
                                 std::string(12, '\0'))),
              HasSubstr("unsupported dtype descr '<U3'"));
  EXPECT_THAT(ParseError(MakeNpy("{'descr': 5, 'fortran_order': False, 'shape': (), }", "")),
              HasSubstr("'descr' must be a dtype string"));
}

TEST(NpyTest, RejectsOpaqueOneByteTypesWithoutAnElementType) {
  EXPECT_EQ(ParseError(FileBytes(DataPath("vals_f8e4m3fn.npy"))),
            "descr '<V1' is an opaque 1-byte type (how ml_dtypes saves float8_*, float4_e2m1fn, "
            "int2, int4, uint2 and uint4); pass its element type (e.g. f8e4m3fn, s4) as the opaque "
            "dtype");
  EXPECT_THAT(ParseError(FileBytes(DataPath("vals_bf16.npy")), DType::kF32),
              HasSubstr("has 2-byte elements but the opaque dtype f32 has 4"));
}

TEST(NpyTest, RejectsObjectAndStructuredArrays) {
  StatusOr<Array> obj = ReadNpy(DataPath("object.npy"));
  ASSERT_FALSE(obj.ok());
  EXPECT_THAT(obj.status().message(),
              HasSubstr("object.npy: descr '|O' is an object array (pickled Python objects); "
                        "xshard reads numeric arrays only"));
  StatusOr<Array> rec = ReadNpy(DataPath("structured.npy"));
  ASSERT_FALSE(rec.ok());
  EXPECT_THAT(rec.status().message(),
              HasSubstr("structured.npy: structured dtypes (a list descr) are not supported"));
}

TEST(NpyTest, RejectsMalformedHeaderDicts) {
  EXPECT_THAT(ParseError(MakeNpy("{'descr': '<f4' 'fortran_order': False, 'shape': (), }", "")),
              HasSubstr("malformed .npy header: expected ',' or '}' at character 16 of "
                        "\"{'descr': '<f4' 'fortran_order'"));
  EXPECT_THAT(ParseError(MakeNpy("{'descr': '<f4', 'shape': (), }", "")),
              HasSubstr("the dict must have exactly the keys 'descr', 'fortran_order' and "
                        "'shape'; it has 'descr', 'shape'"));
  EXPECT_THAT(ParseError(MakeNpy("[1, 2]", "")),
              HasSubstr("malformed .npy header: it is not a dict"));
  EXPECT_THAT(ParseError(MakeNpy("{'descr': '<f4', 'fortran_order': 0, 'shape': (), }", "")),
              HasSubstr("'fortran_order' must be True or False"));
  EXPECT_THAT(ParseError(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }",
                                 "")),
              HasSubstr("'shape' must hold non-negative ints"));
  EXPECT_THAT(ParseError(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': 6, }", "")),
              HasSubstr("'shape' must be a tuple of ints like (2, 3)"));
  EXPECT_THAT(ParseError(MakeNpy("{'descr': '<f4, 'fortran_order': False}", "")),
              HasSubstr("malformed .npy header"));
  EXPECT_THAT(ParseError(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", "")),
              HasSubstr("unexpected text after the dict"));
  EXPECT_THAT(ParseError(MakeNpy(std::string(100, '[') + std::string(100, ']'), "")),
              HasSubstr("nesting too deep"));
}

TEST(NpyTest, ReadNpyNamesAMissingFile) {
  StatusOr<Array> a = ReadNpy("/nonexistent/dir/x.npy");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(a.status().message(),
            "cannot open '/nonexistent/dir/x.npy' for reading: No such file or directory");
  Status w = WriteNpy("/nonexistent/dir/x.npy", Array());
  EXPECT_THAT(w.message(), HasSubstr("cannot open '/nonexistent/dir/x.npy' for writing"));
}

TEST(NpyTest, ReadNpyPrefixesParseErrorsWithThePath) {
  const std::string path = ::testing::TempDir() + "/xs_npy_bad.npy";
  {
    std::ofstream f(path, std::ios::binary);
    f << "hello";
  }
  StatusOr<Array> a = ReadNpy(path);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr(path + ": not a .npy file"));
  std::remove(path.c_str());
}

// Writes go through "<path>.tmp.<pid>", renamed when complete: nothing else is left in the
// folder, and the file reads back.
TEST(NpyFileTest, WriteLeavesOnlyTheFinishedFile) {
  const std::string dir = ::testing::TempDir() + "/xs_npy_atomic";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const Array a = Array::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(WriteNpy(dir + "/a.npy", a).ok());
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"a.npy"});
  StatusOr<Array> back = ReadNpy(dir + "/a.npy");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, a);
  std::filesystem::remove_all(dir);
}

// A stop (the CLI's signal flag) before the write is complete removes the temporary and leaves
// an earlier file at the path as it was.
TEST(NpyFileTest, StoppedWriteLeavesTheEarlierFileWhole) {
  const std::string dir = ::testing::TempDir() + "/xs_npy_stop";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/a.npy";
  const Array before = Array::FromVector<int32_t>({3}, {7, 8, 9});
  ASSERT_TRUE(WriteNpy(path, before).ok());
  std::atomic<bool> stop{true};
  Status st = WriteNpy(path, Array(DType::kF32, {1 << 20}), &stop);
  EXPECT_EQ(st.code(), StatusCode::kCancelled);
  EXPECT_THAT(st.message(), HasSubstr("'" + path + "' was not written: stopped while writing it"));
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  EXPECT_EQ(*ReadNpy(path), before);
  std::filesystem::remove_all(dir);
}

// A full device (/dev/full) is written in place and its error is returned, naming the path.
TEST(NpyFileTest, WriteErrorsNameThePath) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  Status st = WriteFileAtomically("/dev/full", std::string_view("hello"));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(st.message(), "error writing '/dev/full': No space left on device");
  Status dir = WriteFileAtomically(::testing::TempDir(), std::string_view("x"));
  EXPECT_THAT(dir.message(), HasSubstr("it is a directory"));
}

// The header is checked before the data is read: the check sees the header's shape and size,
// and its error is what ReadNpy returns, for a file whose data would not fit in memory.
TEST(NpyFileTest, HeaderCheckRunsBeforeTheDataIsRead) {
  const std::string path = ::testing::TempDir() + "/xs_npy_huge.npy";
  {
    const Array small(DType::kF32, {4});
    std::vector<std::byte> header = SerializeNpyHeader(small);
    std::string text(reinterpret_cast<const char*>(header.data()), header.size());
    const size_t at = text.find("(4,)");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 4, "(25000000000,)");  // 100 GB of f32; the header keeps its length
    text.erase(text.find("}") + 1, 10);
    std::ofstream f(path, std::ios::binary);
    f << text;
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) + int64_t{4} * 25000000000);
  int64_t seen = 0;
  StatusOr<Array> a = ReadNpy(path, std::nullopt, [&](const NpyHeader& h) -> Status {
    seen = h.data_bytes;
    return InvalidArgument("shape ", h.shape.ToString(false), " is not f32[4]");
  });
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(seen, int64_t{4} * 25000000000);
  EXPECT_EQ(a.status().message(), "shape f32[25000000000] is not f32[4]");
  std::remove(path.c_str());
}

// A named pipe with no writer is an error naming it after the wait, not a hang in open().
TEST(NpyFileTest, NamedPipeWithoutWriterIsAnError) {
  const std::string path = ::testing::TempDir() + "/xs_npy_fifo";
  std::remove(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  StatusOr<int> fd = OpenInputFile(path, 0.2);
  ASSERT_FALSE(fd.ok());
  EXPECT_THAT(fd.status().message(), HasSubstr("is a named pipe and nothing was written to it within 0.2 s"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace xs
