// Parsing of Shardy's attribute syntax (meshes, tensor shardings, manual axes) as JAX writes it in
// HLO frontend_attributes, and its conversion to HloSharding.
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/sharding/tile_assignment.h"
#include "xshard/spmd/shardy_import.h"

namespace xs {
namespace {

constexpr std::string_view kFix = " (lower with jax_use_shardy_partitioner=False)";

// A cursor over one attribute's text (with \" unescaped), skipping spaces between tokens.
class SdyReader {
 public:
  explicit SdyReader(std::string_view text) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '"') continue;
      text_.push_back(text[i]);
    }
  }
  void Skip() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  bool Done() { Skip(); return pos_ >= text_.size(); }
  char Peek() { Skip(); return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(std::string_view token) {
    Skip();
    if (text_.compare(pos_, token.size(), token) != 0) return false;
    pos_ += token.size();
    return true;
  }
  Status Expect(std::string_view token) {
    if (Consume(token)) return OkStatus();
    return Error(StrCat("expected '", token, "'"));
  }
  Status Error(std::string_view what) const {
    return InvalidArgument("sdy attribute '", text_, "': ", what, " at offset ", pos_);
  }
  StatusOr<std::string> Quoted() {
    XS_RETURN_IF_ERROR(Expect("\""));
    size_t end = text_.find('"', pos_);
    if (end == std::string::npos) return Error("unterminated string");
    std::string s = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  StatusOr<std::string> Identifier() {
    Skip();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
                                   text_[pos_] == '.' || text_[pos_] == '$' || text_[pos_] == '-')) {
      ++pos_;
    }
    if (pos_ == start) return Error("expected a name");
    return text_.substr(start, pos_ - start);
  }
  StatusOr<int64_t> Integer() {
    Skip();
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (pos_ == start) return Error("expected an integer");
    return std::stoll(text_.substr(start, pos_ - start));
  }
  // `{"a", "b"}`: a list of quoted axis names (sub-axes "a":(1)2 are refused).
  StatusOr<std::vector<std::string>> AxisList() {
    XS_RETURN_IF_ERROR(Expect("{"));
    std::vector<std::string> axes;
    while (!Consume("}")) {
      if (!axes.empty()) XS_RETURN_IF_ERROR(Expect(","));
      XS_ASSIGN_OR_RETURN(std::string a, Quoted());
      if (Peek() == ':') return Unsupported("sdy sub-axis of '", a, "' in '", text_, "'", kFix);
      axes.push_back(std::move(a));
    }
    return axes;
  }

  // `["x"=2, "y"=4]` + optional `, device_ids=[...]`, after `#sdy.mesh<` up to and with `>`.
  StatusOr<SdyMesh> MeshBody() {
    SdyMesh mesh;
    XS_RETURN_IF_ERROR(Expect("["));
    while (!Consume("]")) {
      if (!mesh.axis_names.empty()) XS_RETURN_IF_ERROR(Expect(","));
      XS_ASSIGN_OR_RETURN(std::string name, Quoted());
      XS_RETURN_IF_ERROR(Expect("="));
      XS_ASSIGN_OR_RETURN(int64_t size, Integer());
      mesh.axis_names.push_back(std::move(name));
      mesh.axis_sizes.push_back(size);
    }
    if (Consume(",")) {
      XS_RETURN_IF_ERROR(Expect("device_ids"));
      XS_RETURN_IF_ERROR(Expect("="));
      XS_RETURN_IF_ERROR(Expect("["));
      while (!Consume("]")) {
        if (!mesh.device_ids.empty()) XS_RETURN_IF_ERROR(Expect(","));
        XS_ASSIGN_OR_RETURN(int64_t id, Integer());
        mesh.device_ids.push_back(id);
      }
    }
    XS_RETURN_IF_ERROR(Expect(">"));
    return mesh;
  }

  // `<@mesh, [{...}, ...], replicated={...}, unreduced={...}>`.
  StatusOr<SdyTensorSharding> TensorSharding() {
    SdyTensorSharding s;
    XS_RETURN_IF_ERROR(Expect("<"));
    if (Consume("mesh<")) {  // an inline mesh: named by its text
      XS_ASSIGN_OR_RETURN(SdyMesh mesh, MeshBody());
      std::vector<std::string> axes;
      for (size_t a = 0; a < mesh.axis_names.size(); ++a) {
        axes.push_back(StrCat("\"", mesh.axis_names[a], "\"=", mesh.axis_sizes[a]));
      }
      s.mesh = StrCat("mesh<[", StrJoin(axes, ", "), "]",
                      mesh.device_ids.empty() ? "" : StrCat(", device_ids=[", StrJoin(mesh.device_ids, ","), "]"), ">");
      s.inline_mesh = std::move(mesh);
    } else if (!Consume("@")) {
      return Error("expected '@mesh' or 'mesh<[...]>'");
    } else {
      XS_ASSIGN_OR_RETURN(s.mesh, Identifier());
    }
    XS_RETURN_IF_ERROR(Expect(","));
    XS_RETURN_IF_ERROR(Expect("["));
    while (!Consume("]")) {
      if (!s.dims.empty()) XS_RETURN_IF_ERROR(Expect(","));
      SdyDimSharding dim;
      XS_RETURN_IF_ERROR(Expect("{"));
      while (!Consume("}")) {
        if (!dim.axes.empty() || dim.open) XS_RETURN_IF_ERROR(Expect(","));
        if (Consume("?")) {
          dim.open = true;
          continue;
        }
        XS_ASSIGN_OR_RETURN(std::string a, Quoted());
        if (Peek() == ':') return Unsupported("sdy sub-axis of '", a, "' in '", text_, "'", kFix);
        dim.axes.push_back(std::move(a));
      }
      if (Peek() == 'p') {  // dim priority p0, p1, ...: irrelevant to the value's sharding
        Consume("p");
        XS_RETURN_IF_ERROR(Integer().status());
      }
      s.dims.push_back(std::move(dim));
    }
    while (Consume(",")) {
      XS_ASSIGN_OR_RETURN(std::string key, Identifier());
      XS_RETURN_IF_ERROR(Expect("="));
      XS_ASSIGN_OR_RETURN(std::vector<std::string> axes, AxisList());
      if (key == "replicated") {
        s.replicated = std::move(axes);
      } else if (key == "unreduced") {
        s.unreduced = std::move(axes);
      } else {
        return Unsupported("sdy sharding field '", key, "' in '", text_, "'", kFix);
      }
    }
    XS_RETURN_IF_ERROR(Expect(">"));
    return s;
  }

 private:
  std::string text_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<std::map<std::string, SdyMesh>> ParseSdyMeshes(std::string_view text) {
  SdyReader r(text);
  std::map<std::string, SdyMesh> meshes;
  XS_RETURN_IF_ERROR(r.Expect("{"));
  while (!r.Consume("}")) {
    if (!meshes.empty()) XS_RETURN_IF_ERROR(r.Expect(","));
    XS_ASSIGN_OR_RETURN(std::string name, r.Identifier());
    XS_RETURN_IF_ERROR(r.Expect("="));
    XS_RETURN_IF_ERROR(r.Expect("#sdy.mesh<"));
    XS_ASSIGN_OR_RETURN(SdyMesh mesh, r.MeshBody());
    meshes[name] = std::move(mesh);
  }
  if (!r.Done()) return r.Error("trailing text");
  return meshes;
}

StatusOr<SdyTensorSharding> ParseSdyTensorSharding(std::string_view text) {
  SdyReader r(text);
  r.Consume("#sdy.sharding");
  XS_ASSIGN_OR_RETURN(SdyTensorSharding s, r.TensorSharding());
  if (!r.Done()) return r.Error("trailing text");
  return s;
}

StatusOr<std::vector<SdyTensorSharding>> ParseSdyShardingPerValue(std::string_view text) {
  SdyReader r(text);
  XS_RETURN_IF_ERROR(r.Expect("#sdy.sharding_per_value<"));
  XS_RETURN_IF_ERROR(r.Expect("["));
  std::vector<SdyTensorSharding> out;
  while (!r.Consume("]")) {
    if (!out.empty()) XS_RETURN_IF_ERROR(r.Expect(","));
    XS_ASSIGN_OR_RETURN(SdyTensorSharding s, r.TensorSharding());
    out.push_back(std::move(s));
  }
  XS_RETURN_IF_ERROR(r.Expect(">"));
  if (!r.Done()) return r.Error("trailing text");
  return out;
}

StatusOr<std::vector<std::string>> ParseSdyManualAxes(std::string_view text) {
  SdyReader r(text);
  XS_RETURN_IF_ERROR(r.Expect("#sdy<"));
  XS_RETURN_IF_ERROR(r.Expect("manual_axes"));
  XS_ASSIGN_OR_RETURN(std::vector<std::string> axes, r.AxisList());
  XS_RETURN_IF_ERROR(r.Expect(">"));
  if (!r.Done()) return r.Error("trailing text");
  return axes;
}

StatusOr<HloSharding> SdyToHloSharding(const SdyMesh& mesh, const SdyTensorSharding& sharding, int rank,
                                       const std::vector<std::string>& manual_axes) {
  const int n_axes = static_cast<int>(mesh.axis_names.size());
  auto axis_index = [&](const std::string& name) -> StatusOr<int> {
    for (int i = 0; i < n_axes; ++i)
      if (mesh.axis_names[i] == name) return i;
    return InvalidArgument("sdy sharding names axis '", name, "' that mesh @", sharding.mesh, " (",
                           StrJoin(mesh.axis_names, ", "), ") does not have");
  };
  if (static_cast<int>(sharding.dims.size()) != rank) {
    return InvalidArgument("sdy sharding on mesh @", sharding.mesh, " has ", sharding.dims.size(),
                           " dims for a value of rank ", rank);
  }
  if (!sharding.unreduced.empty()) {
    return Unsupported("sdy sharding with unreduced axes {", StrJoin(sharding.unreduced, ", "), "}",
                       kFix);
  }
  std::vector<bool> used(n_axes, false), manual(n_axes, false);
  for (const std::string& a : manual_axes) {
    XS_ASSIGN_OR_RETURN(int i, axis_index(a));
    manual[i] = true;
  }
  // Assignment dims: data dims (their non-manual axes), then the manual and replicated groups.
  std::vector<std::vector<int>> groups(rank);
  for (int d = 0; d < rank; ++d) {
    bool seen_free = false;
    for (const std::string& a : sharding.dims[d].axes) {
      XS_ASSIGN_OR_RETURN(int i, axis_index(a));
      if (used[i]) return InvalidArgument("sdy sharding uses axis '", a, "' twice");
      used[i] = true;
      if (manual[i]) {
        if (seen_free) {
          return Unsupported("manual axis '", a, "' after a free axis in dim ", d,
                             " of an sdy sharding", kFix);
        }
        continue;
      }
      seen_free = true;
      groups[d].push_back(i);
    }
  }
  std::vector<int> manual_group, replicated_group;
  for (int i = 0; i < n_axes; ++i) {
    if (manual[i]) manual_group.push_back(i);
    else if (!used[i]) replicated_group.push_back(i);
  }
  std::vector<SubgroupType> types;
  if (!manual_axes.empty()) {
    groups.push_back(manual_group);
    types.push_back(SubgroupType::kManual);
  }
  groups.push_back(replicated_group);
  types.push_back(SubgroupType::kReplicated);
  std::vector<int64_t> dims;
  for (const auto& g : groups) {
    int64_t size = 1;
    for (int i : g) size *= mesh.axis_sizes[i];
    dims.push_back(size);
  }
  int64_t total = 1;
  for (int64_t s : mesh.axis_sizes) total *= s;
  std::vector<int64_t> devices(total);
  std::vector<int64_t> coords(n_axes, 0);
  for (int64_t pos = 0; pos < total; ++pos) {
    int64_t rest = pos;  // decode the assignment position into mesh coordinates, minor first
    for (int g = static_cast<int>(groups.size()) - 1; g >= 0; --g) {
      int64_t index = rest % dims[g];
      rest /= dims[g];
      for (int k = static_cast<int>(groups[g].size()) - 1; k >= 0; --k) {
        int axis = groups[g][k];
        coords[axis] = index % mesh.axis_sizes[axis];
        index /= mesh.axis_sizes[axis];
      }
    }
    int64_t linear = 0;
    for (int i = 0; i < n_axes; ++i) linear = linear * mesh.axis_sizes[i] + coords[i];
    devices[pos] = mesh.device_ids.empty() ? linear : mesh.device_ids[linear];
  }
  XS_ASSIGN_OR_RETURN(TileAssignment tiles, TileAssignment::FromDevices(dims, std::move(devices)));
  if (std::optional<IotaForm> iota = tiles.FindIota()) {
    XS_ASSIGN_OR_RETURN(tiles, TileAssignment::FromIota(dims, *iota));
  }
  return HloSharding::Subgroup(std::move(tiles), std::move(types));
}

}  // namespace xs
