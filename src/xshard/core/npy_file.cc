// .npy files on disk: reading the header before the data (and the data straight into the array),
// inputs that are pipes or devices without waiting forever, and writes through a temporary file
// renamed when complete, so that no reader ever finds a half-written file.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

#include "xshard/core/npy.h"

namespace xs {
namespace {

// The most bytes read from a device or pipe (no file size to check first).
constexpr int64_t kMaxStreamBytes = int64_t{1} << 30;
// The most header bytes read from a regular file (numpy writes well under 64 KiB; np.load
// refuses headers over 10,000 bytes by default).
constexpr int64_t kMaxHeaderBytes = int64_t{16} << 20;
// Writes go out in blocks of this size; a stop is noticed between two blocks.
constexpr size_t kWriteBlock = size_t{16} << 20;

// Closes a file descriptor at scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads exactly `n` bytes at `offset` (retrying short reads and EINTR); false on an error or an
// early end of file (errno 0 then).
bool ReadAt(int fd, std::byte* out, int64_t n, int64_t offset) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, static_cast<size_t>(std::min<int64_t>(n, int64_t{1} << 30)), offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0) errno = 0;
      return false;
    }
    out += got;
    n -= got;
    offset += got;
  }
  return true;
}

// Writes all of `data`, retrying short writes and EINTR; false with errno on an error.
bool WriteAll(int fd, const std::byte* data, size_t n) {
  while (n > 0) {
    const ssize_t put = ::write(fd, data, std::min(n, kWriteBlock));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      if (put == 0) errno = EIO;
      return false;
    }
    data += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

std::string ErrnoText(int err) { return err == 0 ? "the file ended early" : std::strerror(err); }

// A device or pipe: read up to kMaxStreamBytes, then parse as a whole.
StatusOr<Array> ReadNpyStream(int fd, const std::string& path, std::optional<DType> opaque_dtype,
                              const NpyHeaderCheck& check) {
  std::vector<std::byte> bytes;
  std::byte buf[1 << 16];
  try {
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Unavailable("error reading '", path, "': ", std::strerror(errno));
      if (n == 0) break;
      bytes.insert(bytes.end(), buf, buf + n);
      // Not a .npy at all (/dev/zero): the header check names the missing magic string.
      if (bytes.size() >= 6 && std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) break;
      if (static_cast<int64_t>(bytes.size()) > kMaxStreamBytes) {
        return ResourceExhausted("reading '", path, "' stopped after ", kMaxStreamBytes >> 30,
                                 " GiB: it is a device or pipe with more data than that (one that never "
                                 "ends?); give a .npy file");
      }
    }
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("reading '", path, "' needs more host memory than is available (", bytes.size(),
                             " bytes read so far)");
  }
  StatusOr<NpyHeader> header = ParseNpyHeader(bytes, opaque_dtype);
  if (!header.ok()) return Annotate(header.status(), StrCat(path, ": "));
  if (check) XS_RETURN_IF_ERROR(check(*header));
  StatusOr<Array> a = ParseNpy(bytes, opaque_dtype);
  if (!a.ok()) return Annotate(a.status(), StrCat(path, ": "));
  return a;
}

}  // namespace

StatusOr<int> OpenInputFile(const std::string& path, double pipe_wait_seconds) {
  // O_NONBLOCK: opening a named pipe for reading would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NotFound("cannot open '", path, "' for reading: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
    // A writer may still be on its way: wait a little for data (or for its end of file).
    pollfd p{fd, POLLIN, 0};
    int ready = 0;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(pipe_wait_seconds * 1000));
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now()).count();
      ready = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left, 100))));
      if (ready != 0 || left <= 0) break;
    }
    if (ready <= 0) {
      ::close(fd);
      return InvalidArgument("'", path, "' is a named pipe and nothing was written to it within ",
                             pipe_wait_seconds, " s; give a regular file (or start the writer first)");
    }
  }
  // Reads from here on may block as usual (a pipe with a writer, a terminal).
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

StatusOr<Array> ReadNpy(const std::string& path, std::optional<DType> opaque_dtype,
                        const NpyHeaderCheck& check) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return InvalidArgument("'", path, "' is a directory, not a file; give the path of a .npy file");
  }
  XS_ASSIGN_OR_RETURN(const int fd, OpenInputFile(path));
  FdCloser closer{fd};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return ReadNpyStream(fd, path, opaque_dtype, check);
  // A regular file: the header first, checked before any data is read or memory taken for it.
  const int64_t size = st.st_size;
  std::vector<std::byte> head(static_cast<size_t>(std::min<int64_t>(size, 1 << 16)));
  if (!ReadAt(fd, head.data(), static_cast<int64_t>(head.size()), 0)) {
    return Unavailable("error reading '", path, "': ", ErrnoText(errno));
  }
  // Versions 2.0 and 3.0 may announce a header longer than the first block.
  if (head.size() >= 12 && std::memcmp(head.data(), "\x93NUMPY", 6) == 0 &&
      static_cast<int>(head[6]) >= 2 && static_cast<int>(head[6]) <= 3) {
    uint32_t len = 0;
    std::memcpy(&len, head.data() + 8, 4);
    const int64_t total = 12 + static_cast<int64_t>(len);
    if (total > static_cast<int64_t>(head.size()) && total <= size) {
      if (total > kMaxHeaderBytes) {
        return InvalidArgument(path, ": malformed .npy header: its length field says ", len,
                               " bytes, more than any numpy writes");
      }
      const size_t had = head.size();
      head.resize(static_cast<size_t>(total));
      if (!ReadAt(fd, head.data() + had, total - static_cast<int64_t>(had), static_cast<int64_t>(had))) {
        return Unavailable("error reading '", path, "': ", ErrnoText(errno));
      }
    }
  }
  StatusOr<NpyHeader> parsed = ParseNpyHeader(head, opaque_dtype);
  if (!parsed.ok()) return Annotate(parsed.status(), StrCat(path, ": "));
  const NpyHeader& h = *parsed;
  const int64_t available = size - h.data_offset;
  if (h.data_bytes != available) {
    std::string dims = StrJoin(h.shape.dims(), ", ");
    if (h.shape.rank() == 1) dims += ",";
    return InvalidArgument(path, ": ", h.data_bytes > available ? "truncated data" : "extra data",
                           ": shape (", dims, ") of '", h.descr, "' needs ", h.data_bytes,
                           " data bytes but the file has ", available, " after the header");
  }
  if (check) XS_RETURN_IF_ERROR(check(h));
  try {
    Array raw = Array::Uninitialized(h.shape);
    if (!ReadAt(fd, raw.data(), h.data_bytes, h.data_offset)) {
      return Unavailable("error reading '", path, "': ", ErrnoText(errno));
    }
    return DecodeNpyData(h, std::move(raw));
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("reading '", path, "' needs ", h.data_bytes,
                             " bytes of host memory for its data, more than is available");
  }
}

Status WriteFileAtomically(const std::string& path, const std::vector<std::span<const std::byte>>& pieces,
                           const std::atomic<bool>* stop) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    return InvalidArgument("cannot write '", path, "': it is a directory; give a file name");
  }
  // A device or pipe that exists is written in place: there is nothing to rename over it.
  const bool in_place = exists && !S_ISREG(st.st_mode);
  const std::string target = in_place ? path : StrCat(path, ".tmp.", ::getpid());
  const int fd = in_place ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC)
                          : ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return Unavailable("cannot open '", path, "' for writing: ", std::strerror(errno));
  auto fail = [&](Status status) {
    ::close(fd);
    if (!in_place) ::unlink(target.c_str());
    return status;
  };
  for (std::span<const std::byte> piece : pieces) {
    for (size_t done = 0; done < piece.size();) {
      if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
        return fail(Cancelled("'", path, "' was not written: stopped while writing it"));
      }
      const size_t n = std::min(kWriteBlock, piece.size() - done);
      if (!WriteAll(fd, piece.data() + done, n)) {
        return fail(Unavailable("error writing '", path, "': ", std::strerror(errno)));
      }
      done += n;
    }
  }
  if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
    return fail(Cancelled("'", path, "' was not written: stopped while writing it"));
  }
  if (::close(fd) != 0) {
    const int err = errno;
    if (!in_place) ::unlink(target.c_str());
    return Unavailable("error writing '", path, "': ", std::strerror(err));
  }
  if (!in_place && ::rename(target.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(target.c_str());
    return Unavailable("cannot write '", path, "': renaming the finished temporary file failed: ",
                       std::strerror(err));
  }
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, std::string_view text, const std::atomic<bool>* stop) {
  return WriteFileAtomically(path, {std::as_bytes(std::span<const char>(text.data(), text.size()))}, stop);
}

Status WriteNpy(const std::string& path, const Array& array, const std::atomic<bool>* stop) {
  if (array.dtype() == DType::kS4 || array.dtype() == DType::kS2) {  // as ml_dtypes: the low bits only (a copy)
    const std::vector<std::byte> bytes = SerializeNpy(array);
    return WriteFileAtomically(path, {std::span<const std::byte>(bytes)}, stop);
  }
  const std::vector<std::byte> header = SerializeNpyHeader(array);
  return WriteFileAtomically(
      path, {std::span<const std::byte>(header),
             std::span<const std::byte>(array.data(), static_cast<size_t>(array.byte_size()))},
      stop);
}

}  // namespace xs
