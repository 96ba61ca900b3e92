// TileAssignment: the N-D array of device ids behind a tiled HloSharding, stored either as an
// explicit list (V1 text "[2,4]0,2,4,6,1,3,5,7") or in iota form (V2 text "[2,4]<=[4,2]T(1,0)",
// meaning numpy: np.arange(8).reshape(4,2).transpose(1,0).reshape(2,4)).
// Construction asserts preconditions (XS_CHECK); user-facing validation is in HloSharding::Parse
// and the Create factories.
#ifndef XSHARD_SHARDING_TILE_ASSIGNMENT_H_
#define XSHARD_SHARDING_TILE_ASSIGNMENT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <span>
#include "xshard/base/limits.h"
#include "xshard/base/status.h"

namespace xs {

// Mixes `value` into the hash `seed` (boost::hash_combine's mixing step); the sharding value
// types build their hashes from it.
inline size_t HashCombine(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// The iota form: devices = iota(product(reshape_dims)).reshape(reshape_dims)
//                          .transpose(transpose_perm).reshape(dims).
// Forms stored in a TileAssignment are canonical as XLA makes them (IotaTileAssignment::Create):
// size-1 reshape dims dropped, reshape dims that stay adjacent and in order after the transpose
// merged, e.g. <=[2,4]T(0,1) -> <=[8]; a canonical form with one reshape dim has an empty perm.
struct IotaForm {
  std::vector<int64_t> reshape_dims;
  std::vector<int> transpose_perm;  // empty means identity
  friend bool operator==(const IotaForm&, const IotaForm&) = default;
  // "<=[4,2]T(1,0)" or "<=[8]". As XLA prints it: T(...) whenever there is more than one reshape
  // dim (an identity perm is then written out, e.g. T(0,1); canonical forms never have one).
  std::string ToString() const;
  // The same devices in XLA's canonical form (see above). XS_CHECKs that the form is well made.
  IotaForm Canonical() const;
};

// Copies share the device array (an immutable, reference-counted storage), so copying a
// TileAssignment costs O(rank) whatever the device count. An array with an iota form is stored as
// that form alone: devices() materializes the list on first use (once, thread-safely) and element
// lookups (operator(), IndexOf, PositionOf) are computed arithmetically; only arrays without an
// iota form keep an explicit list.
class TileAssignment {
 public:
  TileAssignment() = default;
  // Explicit device list (row-major over dims). Validated: product(dims) == devices.size(), ids
  // >= 0 and unique.
  static StatusOr<TileAssignment> FromDevices(std::vector<int64_t> dims,
                                              std::vector<int64_t> devices);
  // Iota form, stored canonicalized as XLA does: FromIota([2,4], <=[2,4]T(0,1)) prints
  // "[2,4]<=[8]". Validated: dims and reshape dims >= 1, product(dims) == product(reshape_dims),
  // perm empty or a permutation of the reshape dims.
  static StatusOr<TileAssignment> FromIota(std::vector<int64_t> dims, IotaForm iota);
  // Plain iota: devices 0..N-1 row-major over dims (each >= 1, XS_CHECK), stored as "<=[N]".
  static TileAssignment Iota(std::vector<int64_t> dims);
  // At most kMaxDevices (base/limits.h) devices per assignment: devices() may materialize the
  // whole list, so huge texts like "[1000000000]<=[1000000000]" are rejected instead of
  // exhausting memory.

  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t dim(int i) const { return dims_[i]; }
  int num_dims() const { return static_cast<int>(dims_.size()); }
  int64_t num_devices() const;
  // Devices row-major over dims. O(N) on the first call for an iota form (then cached).
  const std::vector<int64_t>& devices() const;
  // Device at a tile index (one entry per dim, in range; XS_CHECK). O(rank) for iota forms.
  int64_t operator()(const std::vector<int64_t>& index) const;
  // Device at a row-major position 0 <= position < num_devices() (XS_CHECK).
  int64_t DeviceAt(int64_t position) const;
  // Row-major position of `device`, or -1 when it is not in the assignment. O(rank) for iota
  // forms, O(log N) for explicit lists.
  int64_t PositionOf(int64_t device) const;
  // Index in dims of `device`; nullopt when the device is not in the assignment.
  std::optional<std::vector<int64_t>> IndexOf(int64_t device) const;

  // True when this assignment was given (or built) in iota form; text prints in the form it was
  // given, as XLA does.
  bool stored_as_iota() const { return print_iota_; }
  // The canonical (minimal) iota form of this device array, if one exists: detected from the
  // devices for explicit lists, e.g. [2,4] 0,2,4,6,1,3,5,7 -> <=[4,2]T(1,0); [2,2] 0,1,2,3 -> <=[4].
  std::optional<IotaForm> FindIota() const;

  // Same devices viewed with new dims (same element count; XS_CHECK). Keeps the iota form.
  TileAssignment Reshape(std::vector<int64_t> dims) const;
  // Dims permuted: result dim i = this dim perm[i] (perm a permutation; XS_CHECK). An iota-form
  // assignment stays in iota form when its transposed devices have one.
  TileAssignment Transpose(const std::vector<int>& perm) const;
  // The same array of devices with the other text form: ToV1() drops the iota form, ToIota()
  // adopts FindIota() when one exists.
  TileAssignment ToV1() const;
  TileAssignment ToIota() const;

  // "[2,4]0,2,4,6,1,3,5,7" or "[2,4]<=[4,2]T(1,0)" (the part after "devices=").
  std::string ToString() const;
  // The devices alone as XLA's mesh `device_ids=(...)` prints them: "0,2,1,3" or "[4,2]T(1,0)".
  std::string ArrayToString() const;
  // Equal when the device arrays are equal, whatever the text form. O(rank) for iota forms.
  friend bool operator==(const TileAssignment& a, const TileAssignment& b);
  // Hash of the device array (equal assignments hash equal, whatever the text form). O(rank).
  size_t Hash() const;

 private:
  struct Storage;  // the device array: an iota form or an explicit list (tile_assignment.cc)
  std::vector<int64_t> dims_;
  std::shared_ptr<const Storage> storage_;  // null: no devices
  bool print_iota_ = false;
};

}  // namespace xs

template <>
struct std::hash<xs::TileAssignment> {
  size_t operator()(const xs::TileAssignment& t) const { return t.Hash(); }
};

#endif  // XSHARD_SHARDING_TILE_ASSIGNMENT_H_
