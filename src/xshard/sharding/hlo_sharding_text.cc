// HloSharding text: XLA's printer (HloSharding::Print, NamedSharding::ToString) and parser
// (HloParser's ParseSharding / ParseSingleSharding, including the mesh-axes forms).
#include <algorithm>
#include <cctype>
#include <tuple>

#include "xshard/sharding/hlo_sharding.h"

namespace xs {

// The parser builds tilings exactly as written (XLA's private constructor), so it needs the
// fields; declared a friend in hlo_sharding.h.
class HloShardingText {
 public:
  static HloSharding Tiled(TileAssignment tiles) {
    HloSharding s;
    s.kind_ = HloSharding::Kind::kTiled;
    s.tiles_ = std::move(tiles);
    return s;
  }
};

namespace {

std::string_view TypeName(SubgroupType t) {
  switch (t) {
    case SubgroupType::kManual: return "manual";
    case SubgroupType::kReplicated: return "replicated";
    case SubgroupType::kUnreduced: return "unreduced";
  }
  return "?";
}

// 'name' with \ and ' escaped.
std::string QuoteName(const std::string& name) {
  std::string out = "'";
  for (char c : name) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string AxisText(const AxisRef& a) {
  std::string out = QuoteName(a.name);
  if (a.size != 0) StrAppend(&out, ":(", a.pre_size, ")", a.size);
  return out;
}

std::string AxesText(const std::vector<AxisRef>& axes) {
  std::vector<std::string> items;
  for (const AxisRef& a : axes) items.push_back(AxisText(a));
  return StrCat("{", StrJoin(items, ", "), "}");
}

// XLA's NamedSharding::ToString with the mesh printed as Mesh::ToString.
std::string MeshAxesText(const MeshAxesSharding& m, const std::vector<std::string>& metadata,
                         bool include_metadata) {
  std::string meta;
  if (include_metadata && !metadata.empty()) {
    std::vector<std::string> items;
    for (const std::string& md : metadata) items.push_back(StrCat("{", md, "}"));
    meta = StrCat(", metadata={", StrJoin(items, ", "), "}");
  }
  if (m.maximal_device) {
    return StrCat("{maximal_mesh[device_id=", *m.maximal_device, "]", meta, "}");
  }
  std::vector<std::string> axes;
  for (const auto& [name, size] : m.mesh_axes) axes.push_back(StrCat(QuoteName(name), "=", size));
  std::string out = StrCat("{mesh[", StrJoin(axes, ","), "]");
  if (m.device_ids) StrAppend(&out, ", device_ids=(", m.device_ids->ArrayToString(), ")");
  // FromMeshAxes already rewrote the lists XLA prints in the short forms to all the axes.
  std::vector<AxisRef> all;
  for (const auto& axis : m.mesh_axes) all.push_back(AxisRef{axis.first, 1, 0});
  const bool no_dims = m.dims.empty() && m.replicated.empty() && !all.empty();
  if (m.fully_replicated) {
    out += ", replicated";
  } else if (no_dims && m.manual.empty() && m.unreduced == all) {
    StrAppend(&out, ", unreduced", m.unreduced_op.empty() ? "" : "=", m.unreduced_op);
  } else if (no_dims && m.unreduced.empty() && m.manual == all) {
    out += ", manual";
  } else {
    std::vector<std::string> dims;
    for (const MeshAxesSharding::Dim& d : m.dims) {
      std::string text = AxesText(d.axes);
      if (d.open) text.insert(text.size() - 1, d.axes.empty() ? "?" : ", ?");
      dims.push_back(std::move(text));
    }
    StrAppend(&out, ", [", StrJoin(dims, ", "), "]");
    if (!m.replicated.empty()) StrAppend(&out, ", replicated=", AxesText(m.replicated));
    if (!m.unreduced.empty()) {
      StrAppend(&out, ", unreduced=", m.unreduced_op, AxesText(m.unreduced));
    }
    if (!m.manual.empty()) StrAppend(&out, ", manual=", AxesText(m.manual));
  }
  return out + meta + "}";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Printing (XLA's HloSharding::Print).

std::string HloSharding::ToString(bool include_metadata) const {
  if (kind_ == Kind::kTuple) {
    std::string out = "{";
    for (size_t i = 0; i < tuple_.size(); ++i) {
      if (i > 0) out += i % 5 == 0 ? StrCat(", /*index=", i, "*/") : std::string(", ");
      out += tuple_[i].ToString(include_metadata);
    }
    return out + "}";
  }
  if (kind_ == Kind::kMeshAxes) {
    return MeshAxesText(*mesh_axes_, metadata_, include_metadata);
  }
  std::string out = "{";
  switch (kind_) {
    case Kind::kReplicated: out += "replicated"; break;
    case Kind::kManual: out += "manual"; break;
    case Kind::kUnknown: out += "unknown"; break;
    case Kind::kUnreduced: out += "unreduced"; break;
    case Kind::kMaximal: StrAppend(&out, "maximal device=", device_); break;
    default:
      StrAppend(&out, "devices=", tiles_.ToString());
      if (replicate_on_last_tile_dim_) out += " last_tile_dim_replicate";
      if (!subgroup_types_.empty()) {
        std::vector<std::string_view> names;
        for (SubgroupType t : subgroup_types_) names.push_back(TypeName(t));
        StrAppend(&out, " last_tile_dims={", StrJoin(names, ", "), "}");
      }
  }
  if (shard_as_) StrAppend(&out, " shard_as ", *shard_as_);
  if (shard_like_) StrAppend(&out, " shard_like ", *shard_like_);
  if (include_metadata && !metadata_.empty()) {
    if (metadata_.size() == 1) {
      StrAppend(&out, " metadata={", metadata_[0], "}");
    } else {
      std::vector<std::string> items;
      for (const std::string& m : metadata_) items.push_back(StrCat("{", m, "}"));
      StrAppend(&out, " metadata={", StrJoin(items, ", "), "}");
    }
  }
  return out + "}";
}

// ---------------------------------------------------------------------------------------------
// Parsing (XLA's ParseSharding / ParseSingleSharding and the mesh-axes forms).

namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

class ShardingParser {
 public:
  explicit ShardingParser(std::string_view text) : text_(text) {}

  StatusOr<HloSharding> Run() {
    SkipSpace();
    XS_RETURN_IF_ERROR(Expect('{', "a sharding starts with '{'"));
    SkipSpace();
    HloSharding result;
    if (Peek() != '{' && Peek() != '}') {
      XS_ASSIGN_OR_RETURN(result, Single(/*lbrace_done=*/true));
    } else {
      std::vector<HloSharding> elements;
      if (!Eat('}')) {
        while (true) {
          XS_ASSIGN_OR_RETURN(HloSharding e, Single(/*lbrace_done=*/false));
          elements.push_back(std::move(e));
          SkipSpace();
          if (Eat(',')) continue;
          XS_RETURN_IF_ERROR(Expect('}', "expected ',' or '}' to end tuple sharding"));
          break;
        }
      }
      result = HloSharding::Tuple(std::move(elements));
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error(pos_, "unexpected text after the sharding");
    return result;
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Eat(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  Status Expect(char c, std::string_view what) {
    SkipSpace();
    if (Eat(c)) return OkStatus();
    return Error(pos_, what);
  }
  void SkipSpace() {
    while (pos_ < text_.size()) {
      if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
      } else if (text_.substr(pos_, 2) == "/*") {
        size_t end = text_.find("*/", pos_ + 2);
        pos_ = end == std::string_view::npos ? text_.size() : end + 2;
      } else {
        return;
      }
    }
  }
  Status Error(size_t at, std::string_view what) const {
    std::string found = at >= text_.size() ? std::string("the end of the text")
                                           : StrCat("'", text_.substr(at, 12), "'");
    return InvalidArgument("invalid sharding \"", text_, "\" at column ", at + 1, ": ", what,
                           " (found ", found, "); shardings look like {devices=[2,2]<=[4]} or "
                           "{replicated}");
  }
  std::string_view Ident() {
    SkipSpace();
    size_t start = pos_;
    if (pos_ < text_.size() && IsIdentStart(text_[pos_])) {
      while (pos_ < text_.size() && IsIdentChar(text_[pos_])) ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }
  bool LookingAtIdent(std::string_view word) {
    SkipSpace();
    size_t end = pos_ + word.size();
    return text_.substr(pos_, word.size()) == word &&
           (end >= text_.size() || !IsIdentChar(text_[end]));
  }
  Status Int(int64_t* out) {
    SkipSpace();
    size_t start = pos_;
    if (Peek() == '-') ++pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (!ParseInt64(text_.substr(start, pos_ - start), out)) {
      pos_ = start;
      return Error(start, "expected an integer (int64)");
    }
    return OkStatus();
  }
  // list ::= int (',' int)*
  Status IntList(std::vector<int64_t>* out) {
    do {
      int64_t v;
      XS_RETURN_IF_ERROR(Int(&v));
      out->push_back(v);
      SkipSpace();
    } while (Eat(','));
    return OkStatus();
  }
  Status Quoted(std::string* out) {
    SkipSpace();
    const char quote = Peek();
    const size_t start = pos_;
    if (quote != '\'' && quote != '"') return Error(pos_, "expected a quoted axis name");
    ++pos_;
    out->clear();
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out->push_back(text_[pos_++]);
    }
    if (!Eat(quote)) return Error(start, "unterminated quoted name");
    return OkStatus();
  }
  // Captures a balanced {...} (quote aware); returns the inside with runs of white space outside
  // quotes collapsed to one space, as XLA re-prints OpMetadata.
  Status Braced(std::string* out) {
    XS_RETURN_IF_ERROR(Expect('{', "expected '{' to start metadata"));
    const size_t start = pos_ - 1;
    int depth = 1;
    char quote = 0;
    out->clear();
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (quote) {
        if (c == '\\' && pos_ < text_.size()) {
          out->push_back(c);
          c = text_[pos_++];
        } else if (c == quote) {
          quote = 0;
        }
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        while (!out->empty() && out->back() == ' ') out->pop_back();
        // OpMetadata is attribute=value pairs; an entry starting with '{' would print as a list.
        if (!out->empty() && !IsIdentStart(out->front())) {
          return Error(start + 1, "metadata entries look like op_name=\"a\" source_line=3");
        }
        return OkStatus();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        if (!out->empty() && out->back() != ' ') out->push_back(' ');
        continue;
      }
      out->push_back(c);
    }
    return Error(start, "unbalanced '{' in metadata");
  }
  // metadata ::= '{' fields '}' | '{' ('{' fields '}' (',' '{' fields '}')*)? '}'
  Status Metadata(std::vector<std::string>* out) {
    SkipSpace();
    const size_t save = pos_;
    XS_RETURN_IF_ERROR(Expect('{', "expected '{' after metadata="));
    SkipSpace();
    if (Peek() != '{') {
      pos_ = save;
      out->emplace_back();
      return Braced(&out->back());
    }
    do {
      out->emplace_back();
      XS_RETURN_IF_ERROR(Braced(&out->back()));
      SkipSpace();
    } while (Eat(','));
    return Expect('}', "expected '}' to end the metadata list");
  }
  // ('[' int_list ']') 'T(' perm ')'? as in "<=[4,2]T(1,0)" (T required with several dims).
  Status IotaArray(IotaForm* iota) {
    XS_RETURN_IF_ERROR(Expect('[', "expected '[' to start sharding iota_reshape_dims"));
    XS_RETURN_IF_ERROR(IntList(&iota->reshape_dims));
    XS_RETURN_IF_ERROR(Expect(']', "expected ']' to end sharding iota_reshape_dims"));
    if (iota->reshape_dims.size() == 1) return OkStatus();
    const size_t at = pos_;
    if (Ident() != "T" || !Eat('(')) {
      return Error(at, "expected 'T(' to start sharding devices iota_transpose_perm");
    }
    std::vector<int64_t> perm;
    XS_RETURN_IF_ERROR(IntList(&perm));
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(iota->reshape_dims.size())) {
        return Error(at, StrCat("out of range iota transpose value ", p,
                                ", expecting a value in [0, ", iota->reshape_dims.size(), ")"));
      }
      iota->transpose_perm.push_back(static_cast<int>(p));
    }
    return Expect(')', "expected ')' to end sharding devices iota_transpose_perm");
  }

  StatusOr<HloSharding> Single(bool lbrace_done);
  StatusOr<HloSharding> MeshAxes();
  Status AxisRefText(const MeshAxesSharding& m, AxisRef* out);
  Status AxisList(const MeshAxesSharding& m, std::vector<AxisRef>* out);
  Status CheckAxes(const MeshAxesSharding& m, size_t at);

  std::string_view text_;
  size_t pos_ = 0;
};

StatusOr<HloSharding> ShardingParser::Single(bool lbrace_done) {
  if (!lbrace_done) XS_RETURN_IF_ERROR(Expect('{', "expected '{' to start sharding attribute"));
  const size_t loc = pos_;
  if (LookingAtIdent("mesh") || LookingAtIdent("maximal_mesh")) return MeshAxes();
  bool maximal = false, replicated = false, manual = false, unknown = false, unreduced = false;
  bool last_tile_dim_replicate = false, has_last_tile_dims = false;
  std::optional<int64_t> shard_as, shard_like;
  std::vector<int64_t> dims, devices;
  std::optional<IotaForm> iota;
  std::vector<SubgroupType> types;
  std::vector<std::string> metadata;
  while (true) {
    SkipSpace();
    if (Eat('}')) break;
    const size_t at = pos_;
    std::string_view word = Ident();
    if (word.empty()) return Error(at, "unexpected token in sharding");
    if (Eat('=')) {
      if (word == "device") {
        devices.assign(1, 0);
        const size_t device_at = pos_;
        XS_RETURN_IF_ERROR(Int(&devices[0]));
        if (devices[0] < 0) {
          return Error(device_at, StrCat("device=", devices[0],
                                         " is not a device id: give a whole number >= 0, like {maximal device=0}"));
        }
      } else if (word == "devices") {
        dims.clear();
        devices.clear();
        iota.reset();
        XS_RETURN_IF_ERROR(Expect('[', "expected '[' to start sharding devices shape"));
        XS_RETURN_IF_ERROR(IntList(&dims));
        XS_RETURN_IF_ERROR(Expect(']', "expected ']' to end sharding devices shape"));
        SkipSpace();
        if (text_.substr(pos_, 2) == "<=") {
          pos_ += 2;
          XS_RETURN_IF_ERROR(IotaArray(&iota.emplace()));
        } else {
          XS_RETURN_IF_ERROR(IntList(&devices));
        }
      } else if (word == "metadata") {
        XS_RETURN_IF_ERROR(Metadata(&metadata));
      } else if (word == "last_tile_dims") {
        has_last_tile_dims = true;
        XS_RETURN_IF_ERROR(Expect('{', "expected '{' to start last_tile_dims"));
        SkipSpace();
        while (!Eat('}')) {
          const size_t type_at = pos_;
          std::string_view t = Ident();
          if (t == "replicated") types.push_back(SubgroupType::kReplicated);
          else if (t == "manual") types.push_back(SubgroupType::kManual);
          else if (t == "unreduced") types.push_back(SubgroupType::kUnreduced);
          else return Error(type_at, "expected a subgroup type: replicated, manual or unreduced");
          SkipSpace();
          if (!Eat(',') && Peek() != '}') return Error(pos_, "expected ',' or '}'");
          SkipSpace();
        }
      } else {
        return Error(at, "unknown attribute in sharding: expected device=, devices= metadata= "
                         "or last_tile_dims=");
      }
    } else if (word == "maximal") {
      maximal = true;
    } else if (word == "replicated") {
      replicated = true;
    } else if (word == "manual") {
      manual = true;
    } else if (word == "unknown") {
      unknown = true;
    } else if (word == "unreduced") {
      unreduced = true;
    } else if (word == "last_tile_dim_replicate") {
      last_tile_dim_replicate = true;
    } else if (word == "shard_as" || word == "shard_like") {
      int64_t group;
      XS_RETURN_IF_ERROR(Int(&group));
      (word == "shard_as" ? shard_as : shard_like) = group;
      (word == "shard_as" ? shard_like : shard_as).reset();
    } else {
      return Error(at, "unexpected token in sharding");
    }
  }
  const bool has_devices = !devices.empty() || iota.has_value();
  HloSharding s;
  if (replicated || manual || unknown || unreduced) {
    if (has_devices) {
      return Error(loc, StrCat(replicated ? "replicated" : manual ? "manual" : unknown ? "unknown"
                               : "unreduced", " shardings should not have any devices assigned"));
    }
    s = replicated ? HloSharding::Replicate() : manual ? HloSharding::Manual()
        : unknown ? HloSharding::Unknown() : HloSharding::Unreduced();
  } else if (maximal) {
    if (devices.size() != 1 || iota) {
      return Error(loc, "maximal shardings should have exactly one device assigned (device=N)");
    }
    s = HloSharding::AssignDevice(devices[0]);
  } else {
    if (dims.empty()) {
      return Error(loc, "non-maximal shardings must have a tile assignment list including "
                        "dimensions (devices=[...])");
    }
    if (last_tile_dim_replicate && has_last_tile_dims) {
      return Error(loc, "use either last_tile_dim_replicate or last_tile_dims={...}, not both");
    }
    if (last_tile_dim_replicate) types.push_back(SubgroupType::kReplicated);
    if (types.size() > dims.size()) {
      return Error(loc, StrCat("last_tile_dims names ", types.size(),
                               " subgroup dims but the tile assignment has only ", dims.size()));
    }
    StatusOr<TileAssignment> tiles = TileAssignment::FromDevices(dims, devices);
    if (iota) {
      tiles = TileAssignment::FromIota(dims, *iota);
    } else if (devices.size() <= 1) {
      return Error(loc, "non-maximal shardings must have more than one device assigned");
    }
    if (!tiles.ok()) return Error(loc, tiles.status().message());
    s = types.empty() ? HloShardingText::Tiled(std::move(*tiles))
                      : HloSharding::Subgroup(std::move(*tiles), std::move(types));
  }
  if (shard_as) s = s.WithShardAs(*shard_as);
  if (shard_like) s = s.WithShardLike(*shard_like);
  return s.WithMetadata(std::move(metadata));
}

// mesh-axes body after '{': mesh[...] or maximal_mesh[...], then the shardings and '}'.
StatusOr<HloSharding> ShardingParser::MeshAxes() {
  MeshAxesSharding m;
  std::vector<std::string> metadata;
  const size_t start = pos_;
  auto metadata_if_present = [&]() -> Status {
    SkipSpace();
    if (!Eat(',')) return OkStatus();
    const size_t at = pos_;
    if (Ident() != "metadata" || !Eat('=')) return Error(at, "expected metadata= after ','");
    return Metadata(&metadata);
  };
  auto finish = [&]() -> StatusOr<HloSharding> {
    XS_RETURN_IF_ERROR(CheckAxes(m, start));
    XS_RETURN_IF_ERROR(Expect('}', "expected '}' to end sharding attribute"));
    return HloSharding::FromMeshAxes(std::move(m)).WithMetadata(std::move(metadata));
  };
  if (Ident() == "maximal_mesh") {
    XS_RETURN_IF_ERROR(Expect('[', "expected '[' after maximal_mesh"));
    const size_t at = pos_;
    if (Ident() != "device_id" || !Eat('=')) {
      return Error(at, "expected device_id= attribute in maximal_mesh");
    }
    int64_t device;
    const size_t device_at = pos_;
    XS_RETURN_IF_ERROR(Int(&device));
    if (device < 0) {
      return Error(device_at, StrCat("device_id=", device, " is not a device id: give a whole "
                                     "number >= 0, like {maximal_mesh[device_id=0]}"));
    }
    m.maximal_device = device;
    XS_RETURN_IF_ERROR(Expect(']', "expected ']' to end maximal_mesh"));
    XS_RETURN_IF_ERROR(metadata_if_present());
    return finish();
  }
  XS_RETURN_IF_ERROR(Expect('[', "expected '[' after mesh"));
  SkipSpace();
  std::vector<int64_t> sizes;
  int64_t count = 1;
  while (!Eat(']')) {
    const size_t at = pos_;
    std::string name;
    int64_t size;
    XS_RETURN_IF_ERROR(Quoted(&name));
    XS_RETURN_IF_ERROR(Expect('=', "expects '=' after axis name"));
    XS_RETURN_IF_ERROR(Int(&size));
    for (const auto& axis : m.mesh_axes) {
      if (axis.first == name) return Error(at, StrCat("mesh axis '", name, "' appears twice"));
    }
    if (size < 1 || count > kMaxDevices / size) {
      return Error(at, StrCat("mesh axis '", name, "' has size ", size, "; sizes must be >= 1 "
                              "and the mesh at most ", kMaxDevices, " devices"));
    }
    count *= size;
    m.mesh_axes.emplace_back(std::move(name), size);
    sizes.push_back(size);
    SkipSpace();
    if (!Eat(',') && Peek() != ']') return Error(pos_, "expected ',' or ']' in the mesh axes");
    SkipSpace();
  }
  const size_t save = pos_;
  SkipSpace();
  if (Eat(',') && LookingAtIdent("device_ids")) {
    Ident();
    const size_t at = pos_;
    if (!Eat('=')) return Error(at, "expected '=' after device_ids");
    XS_RETURN_IF_ERROR(Expect('(', "expected '(' for device_ids"));
    SkipSpace();
    StatusOr<TileAssignment> ids = Status(StatusCode::kInternal, "unset");
    if (Peek() == '[') {
      IotaForm iota;
      XS_RETURN_IF_ERROR(IotaArray(&iota));
      ids = TileAssignment::FromIota(sizes, iota);
      m.device_ids_iota_text = true;
    } else {
      std::vector<int64_t> list;
      if (Peek() != ')') XS_RETURN_IF_ERROR(IntList(&list));
      if (static_cast<int64_t>(list.size()) != count) {
        return Error(at, StrCat("expected ", count, " device_ids based on mesh axes, but got ",
                                list.size()));
      }
      bool identity = true;
      for (size_t i = 0; i < list.size(); ++i) {
        if (list[i] < 0 || list[i] >= count) {
          return Error(at, StrCat("device_ids must be a permutation of 0..", count - 1,
                                  "; found ", list[i]));
        }
        identity &= list[i] == static_cast<int64_t>(i);
      }
      if (identity) return Error(at, "device_ids=(0,1,2,...) is the default order; omit it");
      ids = TileAssignment::FromDevices(sizes, std::move(list));
    }
    if (!ids.ok()) return Error(at, ids.status().message());
    m.device_ids = std::move(*ids);
    XS_RETURN_IF_ERROR(Expect(')', "expected ')' to end device_ids"));
  } else {
    pos_ = save;
  }
  SkipSpace();
  Eat(',');
  SkipSpace();
  const size_t body = pos_;
  if (Peek() != '[') {
    std::string_view word = Ident();
    if (word == "replicated" && Peek() != '=') {
      XS_RETURN_IF_ERROR(metadata_if_present());
      return finish();
    }
    if (word == "unreduced" || (word == "manual" && Peek() != '=')) {
      std::vector<AxisRef>& axes = word == "manual" ? m.manual : m.unreduced;
      if (word == "unreduced" && Eat('=')) {
        const size_t at = pos_;
        std::string_view op = Ident();
        if (op != "sum" && op != "max" && op != "min") {
          return Error(at, "expected sum, max, or min for unreduced op");
        }
        m.unreduced_op = op == "sum" ? "" : std::string(op);
      }
      SkipSpace();
      if (word == "unreduced" && Peek() == '{') {
        XS_RETURN_IF_ERROR(AxisList(m, &axes));
      } else {
        for (const auto& axis : m.mesh_axes) axes.push_back(AxisRef{axis.first, 1, 0});
      }
      XS_RETURN_IF_ERROR(metadata_if_present());
      return finish();
    }
    return Error(body, "expected [dim shardings], replicated, unreduced or manual after the mesh");
  }
  ++pos_;
  SkipSpace();
  while (!Eat(']')) {
    MeshAxesSharding::Dim dim;
    XS_RETURN_IF_ERROR(Expect('{', "expected '{' to start a dim sharding"));
    SkipSpace();
    while (!Eat('}')) {
      if (dim.open) return Error(pos_, "saw an axis ref after '?'");
      if (Eat('?')) {
        dim.open = true;
      } else {
        dim.axes.emplace_back();
        XS_RETURN_IF_ERROR(AxisRefText(m, &dim.axes.back()));
      }
      SkipSpace();
      if (!Eat(',') && Peek() != '}') return Error(pos_, "expected ',' or '}' in a dim sharding");
      SkipSpace();
    }
    m.dims.push_back(std::move(dim));
    SkipSpace();
    if (!Eat(',') && Peek() != ']') return Error(pos_, "expected ',' or ']' after a dim sharding");
    SkipSpace();
  }
  while (true) {
    SkipSpace();
    if (Peek() == '}') break;
    XS_RETURN_IF_ERROR(Expect(',', "expected ',' before next attribute"));
    const size_t at = pos_;
    std::string_view attr = Ident();
    if (!Eat('=')) return Error(at, "expected an attribute like replicated={...}");
    if (attr == "replicated") {
      XS_RETURN_IF_ERROR(AxisList(m, &m.replicated));
    } else if (attr == "unreduced") {
      SkipSpace();
      if (IsIdentStart(Peek())) {
        const size_t op_at = pos_;
        std::string_view op = Ident();
        if (op != "sum" && op != "max" && op != "min") {
          return Error(op_at, "expected sum, max, or min for unreduced op");
        }
        m.unreduced_op = op == "sum" ? "" : std::string(op);
      }
      XS_RETURN_IF_ERROR(AxisList(m, &m.unreduced));
    } else if (attr == "manual") {
      XS_RETURN_IF_ERROR(AxisList(m, &m.manual));
    } else if (attr == "metadata") {
      XS_RETURN_IF_ERROR(Metadata(&metadata));
    } else {
      return Error(at, "unknown attribute in named sharding: expected replicated, unreduced, "
                       "manual or metadata");
    }
  }
  return finish();
}

// 'name' or 'name':(pre)size; the name may also be an axis index, as XLA allows.
Status ShardingParser::AxisRefText(const MeshAxesSharding& m, AxisRef* out) {
  SkipSpace();
  const size_t at = pos_;
  std::string name;
  XS_RETURN_IF_ERROR(Quoted(&name));
  int64_t axis_size = 0;
  for (const auto& axis : m.mesh_axes) {
    if (axis.first == name) axis_size = axis.second;
  }
  int64_t index;
  if (axis_size == 0 && ParseInt64(name, &index) && index >= 0 &&
      index < static_cast<int64_t>(m.mesh_axes.size())) {
    name = m.mesh_axes[index].first;
    axis_size = m.mesh_axes[index].second;
  }
  if (axis_size == 0) {
    std::vector<std::string> names;
    for (const auto& axis : m.mesh_axes) names.push_back(QuoteName(axis.first));
    return Error(at, StrCat("axis '", name, "' is not a valid axis name or index in mesh [",
                            StrJoin(names, ","), "]"));
  }
  *out = AxisRef{name, 1, 0};
  SkipSpace();
  if (!Eat(':')) return OkStatus();
  XS_RETURN_IF_ERROR(Expect('(', "expected '(' before pre_size in sub axis"));
  XS_RETURN_IF_ERROR(Int(&out->pre_size));
  XS_RETURN_IF_ERROR(Expect(')', "expected ')' after pre_size in sub axis"));
  XS_RETURN_IF_ERROR(Int(&out->size));
  if (out->pre_size < 1 || out->size < 2 || out->size >= axis_size ||
      axis_size % out->size != 0 || (axis_size / out->size) % out->pre_size != 0) {
    return Error(at, StrCat("sub-axis '", name, "':(", out->pre_size, ")", out->size,
                            " does not fit axis size ", axis_size, "; need pre-size >= 1, "
                            "1 < size < axis size and pre-size * size dividing the axis size"));
  }
  return OkStatus();
}

Status ShardingParser::AxisList(const MeshAxesSharding& m, std::vector<AxisRef>* out) {
  XS_RETURN_IF_ERROR(Expect('{', "expected '{' to start an axis list"));
  SkipSpace();
  while (!Eat('}')) {
    out->emplace_back();
    XS_RETURN_IF_ERROR(AxisRefText(m, &out->back()));
    SkipSpace();
    if (!Eat(',') && Peek() != '}') return Error(pos_, "expected ',' or '}' in an axis list");
    SkipSpace();
  }
  return OkStatus();
}

// XLA's VerifyNamedSharding (XLA aborts on these; xshard reports them): no two axis pieces may
// overlap, neighbours in one list must not be mergeable pieces ('a':(1)2, 'a':(2)2 is 'a'), and
// the replicated / unreduced / manual lists are sorted by mesh axis, then pre-size.
Status ShardingParser::CheckAxes(const MeshAxesSharding& m, size_t at) {
  auto index_of = [&](const AxisRef& a) {
    for (size_t i = 0; i < m.mesh_axes.size(); ++i) {
      if (m.mesh_axes[i].first == a.name) return static_cast<int>(i);
    }
    return -1;
  };
  auto mergeable = [](const AxisRef& a, const AxisRef& b) {
    return a.name == b.name && a.size != 0 && b.size != 0 && a.pre_size * a.size == b.pre_size;
  };
  std::vector<AxisRef> seen;
  auto track = [&](const AxisRef& a) -> Status {
    for (const AxisRef& b : seen) {
      if (a.name != b.name) continue;
      bool ok = a.size != 0 && b.size != 0;
      if (ok) {
        const int64_t a_next = a.pre_size * a.size, b_next = b.pre_size * b.size;
        ok = !(a_next > b.pre_size && b_next > a.pre_size) &&
             std::max(a.pre_size, b.pre_size) % std::min(a_next, b_next) == 0;
      }
      if (!ok) {
        return Error(at, StrCat("axes ", AxisText(b), " and ", AxisText(a),
                                " overlap or cannot coexist; each piece of a mesh axis may be "
                                "used once"));
      }
    }
    seen.push_back(a);
    return OkStatus();
  };
  auto check_list = [&](const std::vector<AxisRef>& axes, std::string_view what,
                        bool sorted) -> Status {
    for (size_t i = 0; i < axes.size(); ++i) {
      XS_RETURN_IF_ERROR(track(axes[i]));
      if (i == 0) continue;
      if (mergeable(axes[i - 1], axes[i])) {
        return Error(at, StrCat("adjacent axes in ", what, " can be merged: ",
                                AxisText(axes[i - 1]), ", ", AxisText(axes[i]), "; write the "
                                "whole piece instead"));
      }
      const AxisRef& a = axes[i - 1];
      const AxisRef& b = axes[i];
      if (sorted && std::make_tuple(index_of(b), b.pre_size, b.size) <
                        std::make_tuple(index_of(a), a.pre_size, a.size)) {
        return Error(at, StrCat(what, " axes must be sorted by mesh axis index and sub-axis "
                                "pre-size; ", AxisText(b), " comes before ", AxisText(a)));
      }
    }
    return OkStatus();
  };
  for (const MeshAxesSharding::Dim& d : m.dims) {
    XS_RETURN_IF_ERROR(check_list(d.axes, "dimension sharding", false));
  }
  XS_RETURN_IF_ERROR(check_list(m.replicated, "replicated", true));
  XS_RETURN_IF_ERROR(check_list(m.unreduced, "unreduced", true));
  return check_list(m.manual, "manual", true);
}

}  // namespace

StatusOr<HloSharding> HloSharding::Parse(std::string_view text) {
  return ShardingParser(text).Run();
}

}  // namespace xs
