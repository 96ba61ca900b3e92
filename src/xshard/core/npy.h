// numpy .npy files <-> Array: format versions 1.0, 2.0 and 3.0, every numpy dtype that has an
// xshard DType, either byte order, C or Fortran order. Writes byte-identical to numpy's np.save,
// through a temporary file renamed when complete (npy_file.cc, which also holds the file reads).
#ifndef XSHARD_CORE_NPY_H_
#define XSHARD_CORE_NPY_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

namespace xs {

// What a .npy header says about the data that follows it.
struct NpyHeader {
  Shape shape;                 // element type and dims, as the array will have them
  std::string descr;           // as written, e.g. '>f4'
  bool fortran_order = false;
  bool big_endian = false;
  int64_t data_offset = 0;     // bytes before the data (magic, version, length, dict)
  int64_t data_bytes = 0;      // the data's size, from the shape and the element size
};

// Parses the header at the start of `bytes`, which may end anywhere after the header (the data
// is not looked at). Accepted descrs (any byte order: '<', '>', '|', '='): b1, i1, i2, i4, i8,
// u1, u2, u4, u8, f2, f4, f8, c8, c16, and the opaque void types ml_dtypes saves its types as:
// 'V2' (bfloat16; the only 2-byte ml_dtypes type) and 'V1' (float8_*, float4_e2m1fn, int2, int4,
// uint2, uint4: ambiguous,
// so it needs `opaque_dtype`, e.g. DType::kF8E4M3FN). `opaque_dtype`, when given, also
// overrides the V2 default. Every malformed header returns InvalidArgument naming the problem.
StatusOr<NpyHeader> ParseNpyHeader(std::span<const std::byte> bytes,
                                   std::optional<DType> opaque_dtype = std::nullopt);

// The `opaque_dtype` to read a file meant to hold `t` with: `t` itself for the types numpy lacks
// (bf16, f8*, f4e2m1fn, s2, s4, u2, u4: ml_dtypes saves them as 'V2' / 'V1'), nullopt for the rest.
std::optional<DType> NpyOpaqueDType(DType t);

// Parses a whole .npy file held in memory (header as ParseNpyHeader, then exactly
// header.data_bytes of data). Big-endian data is byte-swapped; fortran_order data is transposed
// to row-major.
StatusOr<Array> ParseNpy(std::span<const std::byte> bytes,
                         std::optional<DType> opaque_dtype = std::nullopt);

// Turns `array`, filled with a file's raw data bytes, into the row-major native-order array the
// header describes (byte swaps, the Fortran-order transpose, canonical pred / s4 / u4 bytes).
Array DecodeNpyData(const NpyHeader& header, Array raw);

// The bytes np.save writes for `array` (version 1.0 unless the header needs 2.0; header padded to
// 64 bytes with numpy's growth space). Types numpy lacks (f8*, f4e2m1fn, s2, s4, u2, u4) are saved
// as ml_dtypes saves them: descr '<V1', one byte per element (s2 / s4 in the low bits); bf16 as
// '<V2'.
std::vector<std::byte> SerializeNpy(const Array& array);
// The header part of SerializeNpy (everything before the data).
std::vector<std::byte> SerializeNpyHeader(const Array& array);

// Called by ReadNpy once the header is parsed and the file's size matches it, before any data
// is read or memory taken for it: an error stops the read (e.g. the shape is not the parameter's,
// or the data would not fit the host-memory limit) and is returned as it is.
using NpyHeaderCheck = std::function<Status(const NpyHeader& header)>;

// Reads a .npy file: the header first (`check` runs on it), then the data straight into the
// array. Errors start with the path ("w.npy: truncated data: ..."). A device or pipe (no size
// known in advance) is read up to 1 GiB; a named pipe nobody writes to fails after a few
// seconds instead of waiting forever.
StatusOr<Array> ReadNpy(const std::string& path, std::optional<DType> opaque_dtype = std::nullopt,
                        const NpyHeaderCheck& check = nullptr);

// Writes `array` as .npy to `path` (WriteFileAtomically: a temporary file renamed over `path`
// once complete; nothing is left at `path` by a failure or a stop).
Status WriteNpy(const std::string& path, const Array& array, const std::atomic<bool>* stop = nullptr);

// Writes the concatenation of `pieces` to `path` through a temporary file in the same directory
// ("<path>.tmp.<pid>"), flushed and renamed over `path` only once complete, so a reader never
// sees a half-written file and an earlier `path` stays whole until replaced. When `stop` becomes
// true (checked between 16 MiB blocks), the temporary is removed and Cancelled returned. A
// `path` that exists and is not a regular file (/dev/null, /dev/stdout, a named pipe) is written
// in place. Errors name the path and the reason (a full disk, a missing directory).
Status WriteFileAtomically(const std::string& path, const std::vector<std::span<const std::byte>>& pieces,
                           const std::atomic<bool>* stop = nullptr);
// The same for text.
Status WriteFileAtomically(const std::string& path, std::string_view text,
                           const std::atomic<bool>* stop = nullptr);

// Opens `path` for reading without blocking: a directory is refused naming it; a named pipe or
// socket is given up to `pipe_wait_seconds` for data before an error says nobody writes to it.
// Returns the open file descriptor (the caller closes it).
StatusOr<int> OpenInputFile(const std::string& path, double pipe_wait_seconds = 3.0);

}  // namespace xs

#endif  // XSHARD_CORE_NPY_H_
