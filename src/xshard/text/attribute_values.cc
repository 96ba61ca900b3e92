// Values of the structured HLO attributes: padding, window, slice, dim_labels, replica groups,
// source-target pairs, frontend attributes, sharding, operand precision, and the scalar / list
// building blocks the attribute table uses.
#include <algorithm>
#include <cctype>

#include "xshard/base/limits.h"
#include "xshard/base/strings.h"
#include "xshard/text/mesh_replica_groups.h"
#include "xshard/text/parser_internal.h"

namespace xs::text_internal {
namespace {

// a_b[_c] joined by 'x' (padding=0_1x2_3_1, pad=1_1x0_0).
StatusOr<std::vector<std::vector<int64_t>>> ParseUnderscoreGroups(Lexer& lex,
                                                                  std::string_view what) {
  std::vector<std::vector<int64_t>> out;
  lex.SkipSpace();
  do {
    std::vector<int64_t> g;
    do {
      int64_t v;
      if (!lex.ScanInt(&v)) return lex.Error(StrCat("expected an integer in ", what));
      g.push_back(v);
      if (lex.PeekRaw() != '_') break;
      lex.set_pos(lex.pos() + 1);
    } while (g.size() < 4);
    out.push_back(std::move(g));
    if (lex.PeekRaw() != 'x') break;
    lex.set_pos(lex.pos() + 1);
  } while (out.size() < 4096);
  return out;
}

// 3x3x1.
StatusOr<std::vector<int64_t>> ParseXList(Lexer& lex, std::string_view what) {
  std::vector<int64_t> out;
  lex.SkipSpace();
  do {
    int64_t v;
    if (!lex.ScanInt(&v)) return lex.Error(StrCat("expected an integer in ", what));
    out.push_back(v);
    if (lex.PeekRaw() != 'x') break;
    lex.set_pos(lex.pos() + 1);
  } while (out.size() < 4096);
  return out;
}

}  // namespace

StatusOr<bool> ParseBool(Lexer& lex, std::string_view name) {
  if (lex.TryConsumeWord("true")) return true;
  if (lex.TryConsumeWord("false")) return false;
  return lex.Error(StrCat("expected true or false for ", name, ", got '", lex.PeekWord(), "'"));
}

StatusOr<int64_t> ParseInt(Lexer& lex, std::string_view name) {
  int64_t v;
  if (!lex.ScanInt(&v)) return lex.Error(StrCat("expected an integer for ", name));
  return v;
}

StatusOr<std::string> ParseString(Lexer& lex) {
  std::string s;
  Status st;
  if (!lex.ScanString(&s, &st)) return st;
  return s;
}

StatusOr<std::string> ParseName(Lexer& lex, std::string_view what) {
  std::string_view n = lex.ScanIdentifier();
  if (n.empty()) return lex.Error(StrCat("expected ", what));
  return std::string(n);
}

// {name, name, ...} (names with or without '%').
StatusOr<std::vector<NameRef>> ParseNameList(Lexer& lex, std::string_view what) {
  XS_RETURN_IF_ERROR(lex.Expect('{', StrCat("to open the list of ", what)));
  std::vector<NameRef> out;
  if (lex.TryConsume('}')) return out;
  do {
    size_t pos = (lex.SkipSpace(), lex.pos());
    XS_ASSIGN_OR_RETURN(std::string n, ParseName(lex, what));
    out.push_back({n, pos});
  } while (lex.TryConsume(','));
  XS_RETURN_IF_ERROR(lex.Expect('}', StrCat("to close the list of ", what)));
  return out;
}

Status ParsePadding(Lexer& lex, AttrSink& s) {
  size_t at = (lex.SkipSpace(), lex.pos());
  XS_ASSIGN_OR_RETURN(auto groups, ParseUnderscoreGroups(lex, "padding"));
  std::vector<PaddingDim> pads;
  for (const auto& g : groups) {
    if (g.size() < 2 || g.size() > 3)
      return lex.ErrorAt(at, "padding dims are low_high or low_high_interior, joined by 'x' "
                             "(e.g. padding=0_1x2_2_1)");
    pads.push_back({g[0], g[1], g.size() == 3 ? g[2] : 0});
  }
  s.inst->mutable_attrs().padding = std::move(pads);
  return OkStatus();
}

Status ParseWindow(Lexer& lex, AttrSink& s) {
  XS_RETURN_IF_ERROR(lex.Expect('{', "to open window={...}"));
  Window w;
  bool sized = false;
  auto ensure = [&](size_t n, size_t at) -> Status {
    if (!sized) {
      w.dims.resize(n);
      sized = true;
    } else if (w.dims.size() != n) {
      return lex.ErrorAt(at, StrCat("window fields disagree on the number of dims (", w.dims.size(),
                                    " vs ", n, ")"));
    }
    return OkStatus();
  };
  while (!lex.TryConsume('}')) {
    size_t at = (lex.SkipSpace(), lex.pos());
    std::string_view key = lex.PeekWord();
    lex.set_pos(at + key.size());
    if (key.empty() || !lex.TryConsume('='))
      return lex.ErrorAt(at, "expected size=, stride=, pad=, lhs_dilate=, rhs_dilate= or "
                             "rhs_reversal= in window, or '}'");
    if (key == "pad") {
      XS_ASSIGN_OR_RETURN(auto groups, ParseUnderscoreGroups(lex, "window pad"));
      XS_RETURN_IF_ERROR(ensure(groups.size(), at));
      for (size_t i = 0; i < groups.size(); ++i) {
        if (groups[i].size() != 2) return lex.ErrorAt(at, "window pad dims are low_high");
        w.dims[i].pad_low = groups[i][0];
        w.dims[i].pad_high = groups[i][1];
      }
      continue;
    }
    XS_ASSIGN_OR_RETURN(auto v, ParseXList(lex, key));
    XS_RETURN_IF_ERROR(ensure(v.size(), at));
    for (size_t i = 0; i < v.size(); ++i) {
      WindowDim& d = w.dims[i];
      if (key == "size") d.size = v[i];
      else if (key == "stride") d.stride = v[i];
      else if (key == "lhs_dilate") d.lhs_dilation = v[i];
      else if (key == "rhs_dilate") d.rhs_dilation = v[i];
      else if (key == "rhs_reversal") d.window_reversal = v[i] != 0;
      else return lex.ErrorAt(at, StrCat("unknown window field '", key, "'"));
    }
  }
  s.inst->mutable_attrs().window = std::move(w);
  return OkStatus();
}

Status ParseSlice(Lexer& lex, AttrSink& s) {
  XS_RETURN_IF_ERROR(lex.Expect('{', "to open slice={[start:limit], ...}"));
  std::vector<SliceDim> dims;
  if (!lex.TryConsume('}')) {
    do {
      XS_RETURN_IF_ERROR(lex.Expect('[', "to open a slice dim [start:limit:stride]"));
      SliceDim d;
      XS_ASSIGN_OR_RETURN(d.start, ParseInt(lex, "slice start"));
      XS_RETURN_IF_ERROR(lex.Expect(':', "between slice start and limit"));
      XS_ASSIGN_OR_RETURN(d.limit, ParseInt(lex, "slice limit"));
      if (lex.TryConsume(':')) {
        XS_ASSIGN_OR_RETURN(d.stride, ParseInt(lex, "slice stride"));
      }
      XS_RETURN_IF_ERROR(lex.Expect(']', "to close a slice dim"));
      dims.push_back(d);
    } while (lex.TryConsume(','));
    XS_RETURN_IF_ERROR(lex.Expect('}', "to close slice={...}"));
  }
  s.inst->mutable_attrs().slice = std::move(dims);
  return OkStatus();
}

// b01f_01io->b01f.
Status ParseDimLabels(Lexer& lex, AttrSink& s) {
  size_t at = (lex.SkipSpace(), lex.pos());
  std::string_view rest = lex.text().substr(at);
  if (rest.substr(0, rest.find_first_of(",\n")).find('?') != std::string_view::npos) {
    // Custom calls may use '?' (unknown dims): not a convolution, kept verbatim.
    XS_ASSIGN_OR_RETURN(std::string v, lex.ScanVerbatimValue());
    s.inst->mutable_attrs().other.push_back({"dim_labels", std::move(v)});
    return OkStatus();
  }
  std::string_view t = lex.text();
  size_t p = at;
  while (p < t.size() && (std::isalnum(static_cast<unsigned char>(t[p])) || t[p] == '_' ||
                          t[p] == '?' || (t[p] == '-' && p + 1 < t.size() && t[p + 1] == '>') ||
                          (t[p] == '>' && p > at && t[p - 1] == '-')))
    ++p;
  std::string_view text = t.substr(at, p - at);
  size_t us = text.find('_'), arrow = text.find("->");
  auto bad = [&](std::string_view why) {
    return lex.ErrorAt(at, StrCat("bad dim_labels '", text, "': ", why,
                                  " (expected e.g. b01f_01io->b01f)"));
  };
  if (us == std::string_view::npos || arrow == std::string_view::npos || arrow < us)
    return bad("missing '_' or '->'");
  std::string_view in = text.substr(0, us), ker = text.substr(us + 1, arrow - us - 1),
                   out = text.substr(arrow + 2);
  // Assigns each label of `labels` a position; a, b are the two non-spatial letters.
  auto decode = [&](std::string_view labels, char a, char b, int64_t* pa, int64_t* pb,
                    std::vector<int64_t>* spatial) -> Status {
    *pa = *pb = -1;
    size_t n = labels.size() < 2 ? 0 : labels.size() - 2;
    spatial->assign(n, -1);
    for (size_t i = 0; i < labels.size(); ++i) {
      char c = labels[i];
      int64_t* slot = c == a ? pa : c == b ? pb : nullptr;
      if (slot == nullptr) {
        size_t k = static_cast<size_t>(c - '0');
        if (c < '0' || c > '9' || k >= n) return bad(StrCat("unexpected label '", std::string(1, c), "'"));
        slot = &(*spatial)[k];
      }
      if (*slot != -1) return bad(StrCat("label '", std::string(1, c), "' appears twice"));
      *slot = static_cast<int64_t>(i);
    }
    if (*pa < 0 || *pb < 0) return bad(StrCat("needs one '", std::string(1, a), "' and one '",
                                              std::string(1, b), "'"));
    return OkStatus();
  };
  ConvolutionDimensionNumbers c;
  XS_RETURN_IF_ERROR(decode(in, 'b', 'f', &c.input_batch, &c.input_feature, &c.input_spatial));
  XS_RETURN_IF_ERROR(decode(ker, 'i', 'o', &c.kernel_input_feature, &c.kernel_output_feature,
                            &c.kernel_spatial));
  XS_RETURN_IF_ERROR(decode(out, 'b', 'f', &c.output_batch, &c.output_feature, &c.output_spatial));
  if (c.kernel_spatial.size() != c.input_spatial.size() ||
      c.output_spatial.size() != c.input_spatial.size())
    return bad("input, kernel and output have different numbers of spatial dims");
  lex.set_pos(p);
  s.inst->mutable_attrs().conv_dims = std::move(c);
  return OkStatus();
}

// {{0,1},{2,3}}, {}, the iota form [2,4]<=[4,2]T(1,0), or the mesh-axes form
// mesh['x'=4,'y'=2] {'y'} (mesh_replica_groups.h).
Status ParseReplicaGroups(Lexer& lex, AttrSink& s) {
  ReplicaGroups rg;
  size_t at = (lex.SkipSpace(), lex.pos());
  if (lex.PeekWord() == "mesh") {
    XS_ASSIGN_OR_RETURN(s.inst->mutable_attrs().replica_groups, ParseMeshAxesReplicaGroups(lex));
    return OkStatus();
  }
  if (lex.PeekRaw() == '[') {
    lex.set_pos(at + 1);
    rg.iota = true;
    XS_ASSIGN_OR_RETURN(rg.num_groups, ParseInt(lex, "replica group count"));
    XS_RETURN_IF_ERROR(lex.Expect(',', "in replica_groups=[num_groups,group_size]"));
    XS_ASSIGN_OR_RETURN(rg.group_size, ParseInt(lex, "replica group size"));
    XS_RETURN_IF_ERROR(lex.Expect(']', "to close replica_groups=[num_groups,group_size]"));
    if (!lex.TryConsume("<=["))
      return lex.Error("expected '<=[' in iota replica_groups (e.g. [2,4]<=[8])");
    int64_t total = 1;
    do {
      XS_ASSIGN_OR_RETURN(int64_t d, ParseInt(lex, "iota reshape dim"));
      if (d <= 0 || d > kMaxDevices || rg.reshape_dims.size() >= 16)
        return lex.ErrorAt(at, StrCat("iota replica_groups reshape dims must be 1..", kMaxDevices, " (at most 16)"));
      total *= d;
      if (total > kMaxDevices) return lex.ErrorAt(at, StrCat("iota replica_groups over ", kMaxDevices, " devices"));
      rg.reshape_dims.push_back(d);
    } while (lex.TryConsume(','));
    XS_RETURN_IF_ERROR(lex.Expect(']', "to close the iota reshape dims"));
    if (lex.TryConsume('T')) {
      XS_RETURN_IF_ERROR(lex.Expect('(', "after T in iota replica_groups"));
      do {
        XS_ASSIGN_OR_RETURN(int64_t d, ParseInt(lex, "transpose dim"));
        rg.transpose_perm.push_back(d);
      } while (lex.TryConsume(','));
      XS_RETURN_IF_ERROR(lex.Expect(')', "to close T(...)"));
    }
    std::vector<int64_t> perm = rg.transpose_perm;
    if (perm.empty())
      for (size_t i = 0; i < rg.reshape_dims.size(); ++i) perm.push_back(static_cast<int64_t>(i));
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != static_cast<int64_t>(i) || sorted.size() != rg.reshape_dims.size())
        return lex.ErrorAt(at, "T(...) must be a permutation of the reshape dims");
    if (rg.num_groups < 0 || rg.group_size < 0 || rg.num_groups * rg.group_size != total)
      return lex.ErrorAt(at, StrCat("iota replica_groups [", rg.num_groups, ",", rg.group_size,
                                    "] must hold as many devices as the reshape dims (", total, ")"));
    // Device at position k of the transposed array: unravel k over the permuted dims.
    std::vector<int64_t> tdims, strides(rg.reshape_dims.size(), 1);
    for (int64_t p : perm) tdims.push_back(rg.reshape_dims[p]);
    for (int i = static_cast<int>(strides.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * rg.reshape_dims[i + 1];
    rg.groups.assign(rg.num_groups, {});
    for (int64_t k = 0; k < total; ++k) {
      int64_t rem = k, dev = 0;
      for (int i = static_cast<int>(tdims.size()) - 1; i >= 0; --i) {
        dev += (rem % tdims[i]) * strides[perm[i]];
        rem /= tdims[i];
      }
      rg.groups[k / rg.group_size].push_back(dev);
    }
  } else {
    XS_RETURN_IF_ERROR(lex.Expect('{', "to open replica_groups={{...}, ...}"));
    if (!lex.TryConsume('}')) {
      do {
        XS_ASSIGN_OR_RETURN(auto g, ParseIntList(lex, "a replica group"));
        rg.groups.push_back(std::move(g));
      } while (lex.TryConsume(','));
      XS_RETURN_IF_ERROR(lex.Expect('}', "to close replica_groups"));
    }
  }
  s.inst->mutable_attrs().replica_groups = std::move(rg);
  return OkStatus();
}

Status ParseSourceTargetPairs(Lexer& lex, AttrSink& s) {
  XS_RETURN_IF_ERROR(lex.Expect('{', "to open source_target_pairs={{src,dst}, ...}"));
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (!lex.TryConsume('}')) {
    do {
      size_t at = (lex.SkipSpace(), lex.pos());
      XS_ASSIGN_OR_RETURN(auto p, ParseIntList(lex, "a source-target pair"));
      if (p.size() != 2) return lex.ErrorAt(at, "a source-target pair is {source,target}");
      pairs.push_back({p[0], p[1]});
    } while (lex.TryConsume(','));
    XS_RETURN_IF_ERROR(lex.Expect('}', "to close source_target_pairs"));
  }
  s.inst->mutable_attrs().source_target_pairs = std::move(pairs);
  return OkStatus();
}

Status ParseFrontendAttributes(Lexer& lex, AttrSink& s) {
  XS_RETURN_IF_ERROR(lex.Expect('{', "to open frontend_attributes={key=\"value\", ...}"));
  std::vector<std::pair<std::string, std::string>> kv;
  if (!lex.TryConsume('}')) {
    do {
      std::string key;
      if (lex.Peek() == '"') {
        XS_ASSIGN_OR_RETURN(key, ParseString(lex));
      } else {
        XS_ASSIGN_OR_RETURN(key, ParseName(lex, "a frontend attribute name"));
      }
      XS_RETURN_IF_ERROR(lex.Expect('=', "after a frontend attribute name"));
      std::string value;
      if (lex.Peek() == '{') {  // structured value, e.g. composite.attributes={n = 1 : i32}
        XS_ASSIGN_OR_RETURN(value, lex.ScanBraced());
      } else {
        XS_ASSIGN_OR_RETURN(value, ParseString(lex));
      }
      kv.push_back({std::move(key), std::move(value)});
    } while (lex.TryConsume(','));
    XS_RETURN_IF_ERROR(lex.Expect('}', "to close frontend_attributes"));
  }
  s.inst->mutable_attrs().frontend_attributes = std::move(kv);
  return OkStatus();
}

Status ParseSharding(Lexer& lex, AttrSink& s) {
  size_t at = (lex.SkipSpace(), lex.pos());
  XS_ASSIGN_OR_RETURN(std::string text, lex.ScanBraced());
  auto sharding = HloSharding::Parse(text);
  if (!sharding.ok()) return lex.ErrorAt(at, StrCat("bad sharding: ", sharding.status().message()));
  s.inst->set_sharding(std::move(sharding).value());
  return OkStatus();
}

Status ParseOperandPrecision(Lexer& lex, AttrSink& s) {
  XS_RETURN_IF_ERROR(lex.Expect('{', "to open operand_precision={default, ...}"));
  std::vector<Precision> out;
  if (!lex.TryConsume('}')) {
    do {
      size_t at = (lex.SkipSpace(), lex.pos());
      std::string w(lex.ScanIdentifier());
      for (char& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      auto p = ParsePrecision(w);
      if (!p) return lex.ErrorAt(at, StrCat("unknown precision '", w,
                                            "': use default, high, highest or packed_nibble"));
      out.push_back(*p);
    } while (lex.TryConsume(','));
    XS_RETURN_IF_ERROR(lex.Expect('}', "to close operand_precision"));
  }
  s.inst->mutable_attrs().operand_precision = std::move(out);
  return OkStatus();
}
}  // namespace xs::text_internal
