// Parsing and expansion of mesh-axes replica groups (see the header for the rule and examples).
#include "xshard/text/mesh_replica_groups.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/limits.h"
#include "xshard/base/strings.h"

namespace xs {
namespace {

constexpr std::string_view kForm =
    "; the form is mesh['x'=4,'y'=2] {'y'} (sub-axes 'x':(pre_size)size, a device order as "
    "mesh[...], device_ids=(...) {...})";

// One (sub-)axis named in the braces.
struct MeshAxisRef {
  int64_t axis = 0;
  std::optional<int64_t> pre_size;  // set for a sub-axis 'x':(pre_size)size
  int64_t size = 0;
  size_t pos = 0;  // where it is written, for errors
};

Status Bad(const Lexer& lex, size_t pos, std::string_view why) {
  return lex.ErrorAt(pos, StrCat("replica_groups=mesh[...]: ", why, kForm));
}

// 'x', "x" or x.
StatusOr<std::string> AxisName(Lexer& lex, std::string_view what) {
  lex.SkipSpace();
  const char quote = lex.PeekRaw();
  if (quote == '\'' || quote == '"') {
    const size_t end = lex.text().find(quote, lex.pos() + 1);
    if (end == std::string_view::npos) return Bad(lex, lex.pos(), "unterminated axis name");
    std::string name(lex.text().substr(lex.pos() + 1, end - lex.pos() - 1));
    lex.set_pos(end + 1);
    return name;
  }
  const std::string_view word = lex.PeekWord();
  if (word.empty()) return Bad(lex, lex.pos(), StrCat("expected ", what));
  lex.set_pos(lex.pos() + word.size());
  return std::string(word);
}

StatusOr<int64_t> Int(Lexer& lex, std::string_view what) {
  int64_t v = 0;
  if (!lex.ScanInt(&v)) return Bad(lex, lex.pos(), StrCat("expected an integer for ", what));
  return v;
}

// After `device_ids=(`: `0,2,1,3)` or the iota form `[2,2,2]T(0,2,1))`. The ids of the mesh's
// positions in row-major order, checked to be a permutation of 0..n-1.
StatusOr<std::vector<int64_t>> DeviceIds(Lexer& lex, int64_t n) {
  const size_t at = (lex.SkipSpace(), lex.pos());
  std::vector<int64_t> ids;
  if (lex.TryConsume('[')) {
    std::vector<int64_t> dims, perm;
    int64_t total = 1;
    do {
      const size_t dim_at = (lex.SkipSpace(), lex.pos());
      XS_ASSIGN_OR_RETURN(int64_t d, Int(lex, "a device_ids reshape dim"));
      if (d < 1 || d > kMaxDevices || dims.size() >= 16 || (total *= d) > kMaxDevices) {
        return Bad(lex, dim_at, StrCat("device_ids=([dims]T(perm)) needs at most 16 dims of "
                                       "size >= 1 and at most ", kMaxDevices, " devices"));
      }
      dims.push_back(d);
    } while (lex.TryConsume(','));
    XS_RETURN_IF_ERROR(lex.Expect(']', "to close the device_ids reshape dims"));
    if (lex.TryConsume('T')) {
      XS_RETURN_IF_ERROR(lex.Expect('(', "after T in device_ids"));
      do {
        XS_ASSIGN_OR_RETURN(int64_t p, Int(lex, "a device_ids transpose dim"));
        perm.push_back(p);
      } while (lex.TryConsume(','));
      XS_RETURN_IF_ERROR(lex.Expect(')', "to close T(...) in device_ids"));
    } else {
      perm.resize(dims.size());
      std::iota(perm.begin(), perm.end(), 0);
    }
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] != static_cast<int64_t>(i) || sorted.size() != dims.size()) {
        return Bad(lex, at, "T(...) of device_ids must be a permutation of its reshape dims");
      }
    }
    if (total != n) {
      return Bad(lex, at,
                 StrCat("device_ids=([...]) holds ", total, " devices but the mesh has ", n));
    }
    // arange(n).reshape(dims).transpose(perm), flattened: position k unravels over the permuted
    // dims.
    std::vector<int64_t> strides(dims.size(), 1);
    for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
      strides[i] = strides[i + 1] * dims[i + 1];
    }
    for (int64_t k = 0; k < n; ++k) {
      int64_t rest = k, id = 0;
      for (int i = static_cast<int>(perm.size()) - 1; i >= 0; --i) {
        id += (rest % dims[perm[i]]) * strides[perm[i]];
        rest /= dims[perm[i]];
      }
      ids.push_back(id);
    }
  } else {
    const std::string rule =
        StrCat("device_ids must list each of 0..", n - 1, " once (one id per mesh position)");
    do {
      const size_t id_at = (lex.SkipSpace(), lex.pos());
      XS_ASSIGN_OR_RETURN(int64_t id, Int(lex, "a device id"));
      if (static_cast<int64_t>(ids.size()) == n) {
        return Bad(lex, id_at, StrCat(rule, ", but lists more than ", n, " ids"));
      }
      ids.push_back(id);
    } while (lex.TryConsume(','));
    std::vector<int64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    if (static_cast<int64_t>(sorted.size()) != n) {
      return Bad(lex, at, StrCat(rule, ", but lists ", sorted.size()));
    }
    for (int64_t k = 0; k < n; ++k) {
      if (sorted[k] != k) return Bad(lex, at, StrCat(rule, ", but it is not a permutation"));
    }
  }
  XS_RETURN_IF_ERROR(lex.Expect(')', "to close device_ids=(...)"));
  return ids;
}

// How one mesh axis is split into dims, and which of them each ref on it names (in ref order).
struct AxisSplit {
  std::vector<int64_t> dims;
  std::vector<int64_t> named;
};

StatusOr<AxisSplit> SplitAxis(const Lexer& lex, const std::string& name, int64_t size,
                              const std::vector<MeshAxisRef>& refs) {
  AxisSplit split;
  if (refs.empty()) {
    split.dims = {size};
    return split;
  }
  if (refs.size() == 1 && !refs[0].pre_size) {
    split.dims = {size};
    split.named = {0};
    return split;
  }
  for (const MeshAxisRef& r : refs) {
    if (!r.pre_size) {  // reported at the second mention of the axis
      return Bad(lex, refs[1].pos, StrCat("axis '", name, "' is named twice (whole, or whole and "
                                          "in parts); name each (sub-)axis once"));
    }
  }
  std::vector<size_t> order(refs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return *refs[a].pre_size < *refs[b].pre_size; });
  split.named.resize(refs.size());
  int64_t prefix = 1;  // product of the pieces so far
  for (size_t k : order) {
    const MeshAxisRef& r = refs[k];
    if (*r.pre_size % prefix != 0) {
      return Bad(lex, r.pos, StrCat("sub-axes of '", name, "' overlap or leave a gap that does "
                                    "not divide: the pieces before ':(", *r.pre_size,
                                    ")' already make ", prefix));
    }
    if (*r.pre_size != prefix) split.dims.push_back(*r.pre_size / prefix);
    split.named[k] = static_cast<int64_t>(split.dims.size());
    split.dims.push_back(r.size);
    prefix = *r.pre_size * r.size;
  }
  if (prefix != size) split.dims.push_back(size / prefix);
  return split;
}

// The groups: mesh ids reshaped to the split dims, named dims moved last (in the order named).
std::vector<std::vector<int64_t>> Expand(const std::vector<int64_t>& ids,
                                         const std::vector<int64_t>& dims,
                                         const std::vector<int64_t>& grouped) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (std::find(grouped.begin(), grouped.end(), d) == grouped.end()) perm.push_back(d);
  }
  perm.insert(perm.end(), grouped.begin(), grouped.end());
  int64_t group_size = 1;
  for (int64_t d : grouped) group_size *= dims[d];
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * dims[d + 1];
  }
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<std::vector<int64_t>> groups(n / group_size);
  std::vector<int64_t> index(dims.size(), 0);  // over the permuted dims, row-major
  for (int64_t k = 0; k < n; ++k) {
    int64_t source = 0;
    for (size_t j = 0; j < perm.size(); ++j) source += index[j] * strides[perm[j]];
    groups[k / group_size].push_back(ids[source]);
    for (int64_t j = static_cast<int64_t>(perm.size()) - 1; j >= 0; --j) {
      if (++index[j] < dims[perm[j]]) break;
      index[j] = 0;
    }
  }
  return groups;
}

}  // namespace

StatusOr<ReplicaGroups> ParseMeshAxesReplicaGroups(Lexer& lex) {
  const size_t start = (lex.SkipSpace(), lex.pos());
  if (!lex.TryConsumeWord("mesh")) return Bad(lex, start, "expected mesh[");
  XS_RETURN_IF_ERROR(lex.Expect('[', "after mesh in replica_groups=mesh['x'=4] {'x'}"));
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  int64_t n = 1;
  do {
    const size_t axis_at = (lex.SkipSpace(), lex.pos());
    XS_ASSIGN_OR_RETURN(std::string name, AxisName(lex, "a mesh axis 'name'=size"));
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return Bad(lex, axis_at, StrCat("the mesh names axis '", name, "' twice; rename one"));
    }
    XS_RETURN_IF_ERROR(lex.Expect('=', "after a mesh axis name ('x'=4)"));
    const size_t size_at = (lex.SkipSpace(), lex.pos());
    XS_ASSIGN_OR_RETURN(int64_t size, Int(lex, StrCat("the size of mesh axis '", name, "'")));
    if (size < 1 || size > kMaxDevices || (n *= size) > kMaxDevices) {
      return Bad(lex, size_at, StrCat("mesh axis sizes must be >= 1 and multiply to at most ",
                                      kMaxDevices, " devices (xshard's limit), got '", name, "'=",
                                      size));
    }
    names.push_back(std::move(name));
    sizes.push_back(size);
  } while (lex.TryConsume(','));
  XS_RETURN_IF_ERROR(lex.Expect(']', "to close the mesh axes"));
  std::vector<int64_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  if (lex.TryConsume(',')) {
    const size_t at = (lex.SkipSpace(), lex.pos());
    if (!lex.TryConsumeWord("device_ids")) {
      return Bad(lex, at, "expected ' {axes}' or ', device_ids=(...)' after mesh[...]");
    }
    XS_RETURN_IF_ERROR(lex.Expect('=', "after device_ids"));
    XS_RETURN_IF_ERROR(lex.Expect('(', "to open device_ids=(...)"));
    XS_ASSIGN_OR_RETURN(ids, DeviceIds(lex, n));
  }
  XS_RETURN_IF_ERROR(lex.Expect('{', "to open the grouped axes of replica_groups=mesh[...] {...}"));
  std::vector<MeshAxisRef> refs;
  if (!lex.TryConsume('}')) {
    do {
      MeshAxisRef r;
      r.pos = (lex.SkipSpace(), lex.pos());
      XS_ASSIGN_OR_RETURN(std::string name, AxisName(lex, "a mesh axis name"));
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        return Bad(lex, r.pos, StrCat("the mesh has no axis '", name, "' (it has '",
                                      StrJoin(names, "', '"), "')"));
      }
      r.axis = it - names.begin();
      r.size = sizes[r.axis];
      if (lex.TryConsume(':')) {
        const int64_t whole = sizes[r.axis];
        XS_RETURN_IF_ERROR(lex.Expect('(', "to open a sub-axis 'x':(pre_size)size"));
        XS_ASSIGN_OR_RETURN(int64_t pre, Int(lex, "a sub-axis pre_size"));
        XS_RETURN_IF_ERROR(lex.Expect(')', "to close the pre_size of 'x':(pre_size)size"));
        XS_ASSIGN_OR_RETURN(int64_t size, Int(lex, "a sub-axis size"));
        if (pre < 1 || size < 2 || pre > whole || size > whole || whole % (pre * size) != 0) {
          return Bad(lex, r.pos, StrCat("sub-axis '", name, "':(", pre, ")", size, " needs "
                                        "pre_size >= 1, size >= 2 and pre_size * size dividing ",
                                        "the axis size ", whole));
        }
        r.pre_size = pre;
        r.size = size;
      }
      refs.push_back(r);
    } while (lex.TryConsume(','));
    XS_RETURN_IF_ERROR(lex.Expect('}', "to close the grouped axes"));
  }

  // Split every mesh axis, then find each ref's dim in the split array.
  std::vector<int64_t> dims, grouped(refs.size());
  for (size_t a = 0; a < names.size(); ++a) {
    std::vector<MeshAxisRef> on_axis;
    std::vector<size_t> which;
    for (size_t k = 0; k < refs.size(); ++k) {
      if (refs[k].axis == static_cast<int64_t>(a)) {
        on_axis.push_back(refs[k]);
        which.push_back(k);
      }
    }
    XS_ASSIGN_OR_RETURN(AxisSplit split, SplitAxis(lex, names[a], sizes[a], on_axis));
    for (size_t j = 0; j < which.size(); ++j) {
      grouped[which[j]] = static_cast<int64_t>(dims.size()) + split.named[j];
    }
    dims.insert(dims.end(), split.dims.begin(), split.dims.end());
  }
  ReplicaGroups rg;
  rg.groups = Expand(ids, dims, grouped);
  rg.mesh_form = std::string(lex.text().substr(start, lex.pos() - start));
  return rg;
}

}  // namespace xs
