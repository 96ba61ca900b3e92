// AbstractEval: the primitive table (JAX's names and parameters) with the elementwise and
// shape-manipulation rules; contractions, windows and calls are in primitives_contract.cc, the
// extra math, gather / scatter-add, sort / top_k and control flow in primitives_extra.cc.
#include <algorithm>
#include <set>

#include "xshard/base/strings.h"
#include "xshard/frontend/jaxpr.h"
#include "xshard/frontend/primitive_rules.h"

namespace xs::fe {
namespace internal {

namespace {

using Out = StatusOr<std::vector<AVal>>;

bool AllWeak(const std::vector<AVal>& in) {
  return std::all_of(in.begin(), in.end(), [](const AVal& a) { return a.weak_type; });
}

// Operand i of an n-ary elementwise op: equal dtypes; equal dims, or rank-0 operands (a literal
// like `1.0` next to an f32[10]) that broadcast.
StatusOr<AVal> ElementwiseResult(const std::string& prim, const std::vector<AVal>& in) {
  AVal out = in[0];
  for (const AVal& a : in) {
    if (a.dtype != in[0].dtype) {
      return InvalidArgument(prim, ": operand dtypes differ ", AValsText(in),
                             "; convert one with Astype (lax ops do not promote)");
    }
    if (a.rank() > 0) {
      if (out.rank() > 0 && out.dims != a.dims) {
        return InvalidArgument(prim, ": operand shapes differ ", AValsText(in),
                               "; broadcast them to one shape first (broadcast_in_dim)");
      }
      out.dims = a.dims;
    }
  }
  out.weak_type = AllWeak(in);
  return out;
}

enum class Kind { kAny, kFloat, kLogical };

Status CheckKind(const std::string& prim, const AVal& a, Kind kind) {
  if (kind == Kind::kFloat && !IsFloating(a.dtype) && !IsComplex(a.dtype)) {
    return InvalidArgument(prim, ": operand ", a.ToString(),
                           " must be floating point; convert it with Astype(x, f32)");
  }
  if (kind == Kind::kLogical && a.dtype != DType::kPred && !IsInteger(a.dtype)) {
    return InvalidArgument(prim, ": operand ", a.ToString(), " must be bool or integer");
  }
  return OkStatus();
}

Rule Unary(Kind kind) {
  return [kind](const std::string& prim, const std::vector<AVal>& in, const Params&) -> Out {
    XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
    XS_RETURN_IF_ERROR(CheckKind(prim, in[0], kind));
    return std::vector<AVal>{in[0]};
  };
}

Rule Binary(Kind kind, bool compare) {
  return [kind, compare](const std::string& prim, const std::vector<AVal>& in,
                         const Params&) -> Out {
    XS_RETURN_IF_ERROR(CheckArity(prim, in, 2, 2));
    for (const AVal& a : in) XS_RETURN_IF_ERROR(CheckKind(prim, a, kind));
    XS_ASSIGN_OR_RETURN(AVal out, ElementwiseResult(prim, in));
    if (compare) out = AVal{DType::kPred, out.dims, false};
    return std::vector<AVal>{out};
  };
}

Out IntegerPow(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_RETURN_IF_ERROR(GetInt(prim, p, "y").status());
  return std::vector<AVal>{in[0]};
}

Out SelectN(const std::string& prim, const std::vector<AVal>& in, const Params&) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 2, 1 << 20));
  const AVal& which = in[0];
  if (which.dtype != DType::kPred && which.dtype != DType::kS32) {
    return InvalidArgument(prim, ": the predicate ", which.ToString(), " must be bool or int32");
  }
  std::vector<AVal> cases(in.begin() + 1, in.end());
  for (const AVal& c : cases) {
    if (c.dtype != cases[0].dtype || c.dims != cases[0].dims) {
      return InvalidArgument(prim, ": cases must have one type, got ", AValsText(cases));
    }
  }
  if (which.rank() > 0 && which.dims != cases[0].dims) {
    return InvalidArgument(prim, ": predicate ", which.ToString(), " must be a scalar or match ",
                           cases[0].ToString());
  }
  AVal out = cases[0];
  out.weak_type = AllWeak(cases);
  return std::vector<AVal>{out};
}

Out ConvertElementType(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(DType t, GetDType(prim, p, "new_dtype"));
  auto it = p.find("weak_type");
  bool weak = it != p.end() && std::holds_alternative<bool>(it->second) &&
              std::get<bool>(it->second);
  return std::vector<AVal>{AVal{t, in[0].dims, weak}};
}

Status CheckAxes(const std::string& prim, const AVal& a, const IntList& axes, const char* what) {
  std::set<int64_t> seen;
  for (int64_t ax : axes) {
    if (ax < 0 || ax >= a.rank() || !seen.insert(ax).second) {
      return InvalidArgument(prim, ": ", what, " ", StrCat("(", StrJoin(axes, ", "), ")"),
                             " are not distinct dimensions of ", a.ToString(),
                             " (valid: 0..", a.rank() - 1, ")");
    }
  }
  return OkStatus();
}

Out BroadcastInDim(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(IntList shape, GetInts(prim, p, "shape"));
  XS_ASSIGN_OR_RETURN(IntList bd, GetInts(prim, p, "broadcast_dimensions"));
  if (static_cast<int64_t>(bd.size()) != in[0].rank()) {
    return InvalidArgument(prim, ": broadcast_dimensions has ", bd.size(),
                           " entries for operand ", in[0].ToString(), "; give one per operand dim");
  }
  for (size_t i = 0; i < bd.size(); ++i) {
    bool ok = bd[i] >= 0 && bd[i] < static_cast<int64_t>(shape.size()) &&
              (i == 0 || bd[i] > bd[i - 1]) &&
              (in[0].dims[i] == 1 || in[0].dims[i] == shape[bd[i]]);
    if (!ok) {
      return InvalidArgument(prim, ": operand ", in[0].ToString(), " cannot broadcast to shape (",
                             StrJoin(shape, ", "), ") with broadcast_dimensions (",
                             StrJoin(bd, ", "), "); each operand dim must be 1 or equal its "
                             "target dim, targets increasing");
    }
  }
  return std::vector<AVal>{AVal{in[0].dtype, shape, in[0].weak_type}};
}

Out Reshape(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(IntList sizes, GetInts(prim, p, "new_sizes"));
  AVal out{in[0].dtype, sizes, in[0].weak_type};
  if (out.num_elements() != in[0].num_elements()) {
    return InvalidArgument(prim, ": cannot reshape ", in[0].ToString(), " (", in[0].num_elements(),
                           " elements) to ", out.ToString(), " (", out.num_elements(),
                           " elements); the element counts must match");
  }
  return std::vector<AVal>{out};
}

Out Squeeze(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(IntList dims, GetInts(prim, p, "dimensions"));
  XS_RETURN_IF_ERROR(CheckAxes(prim, in[0], dims, "dimensions"));
  AVal out{in[0].dtype, {}, in[0].weak_type};
  for (int64_t i = 0; i < in[0].rank(); ++i) {
    if (std::count(dims.begin(), dims.end(), i) == 0) {
      out.dims.push_back(in[0].dims[i]);
    } else if (in[0].dims[i] != 1) {
      return InvalidArgument(prim, ": dimension ", i, " of ", in[0].ToString(),
                             " has size ", in[0].dims[i], ", only size-1 dims can be squeezed");
    }
  }
  return std::vector<AVal>{out};
}

Out ExpandDims(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(IntList dims, GetInts(prim, p, "dimensions"));
  AVal out{in[0].dtype, {}, in[0].weak_type};
  int64_t rank = in[0].rank() + static_cast<int64_t>(dims.size());
  AVal probe{in[0].dtype, std::vector<int64_t>(rank, 1), false};
  XS_RETURN_IF_ERROR(CheckAxes(prim, probe, dims, "dimensions"));
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::count(dims.begin(), dims.end(), i)) out.dims.push_back(1);
    else out.dims.push_back(in[0].dims[next++]);
  }
  return std::vector<AVal>{out};
}

Out Transpose(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(IntList perm, GetInts(prim, p, "permutation"));
  if (static_cast<int64_t>(perm.size()) != in[0].rank()) {
    return InvalidArgument(prim, ": permutation (", StrJoin(perm, ", "), ") must have ",
                           in[0].rank(), " entries for ", in[0].ToString());
  }
  XS_RETURN_IF_ERROR(CheckAxes(prim, in[0], perm, "permutation"));
  AVal out = in[0];
  for (size_t i = 0; i < perm.size(); ++i) out.dims[i] = in[0].dims[perm[i]];
  return std::vector<AVal>{out};
}

Out Reduce(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(IntList axes, GetInts(prim, p, "axes"));
  XS_RETURN_IF_ERROR(CheckAxes(prim, in[0], axes, "axes"));
  AVal out{in[0].dtype, {}, in[0].weak_type};
  for (int64_t i = 0; i < in[0].rank(); ++i)
    if (!std::count(axes.begin(), axes.end(), i)) out.dims.push_back(in[0].dims[i]);
  if (prim == "argmax" || prim == "argmin") {
    XS_ASSIGN_OR_RETURN(out.dtype, GetDType(prim, p, "index_dtype"));
    out.weak_type = false;
  }
  return std::vector<AVal>{out};
}

Out Slice(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(IntList start, GetInts(prim, p, "start_indices"));
  XS_ASSIGN_OR_RETURN(IntList limit, GetInts(prim, p, "limit_indices"));
  XS_ASSIGN_OR_RETURN(IntList strides,
                      GetIntsOr(prim, p, "strides", IntList(in[0].dims.size(), 1)));
  size_t r = in[0].dims.size();
  if (start.size() != r || limit.size() != r || strides.size() != r) {
    return InvalidArgument(prim, ": start/limit/strides need ", r, " entries for ",
                           in[0].ToString());
  }
  AVal out = in[0];
  for (size_t i = 0; i < r; ++i) {
    if (start[i] < 0 || limit[i] > in[0].dims[i] || start[i] > limit[i] || strides[i] < 1) {
      return InvalidArgument(prim, ": dim ", i, " range [", start[i], ", ", limit[i], ") step ",
                             strides[i], " is outside ", in[0].ToString(),
                             "; need 0 <= start <= limit <= size and step >= 1");
    }
    out.dims[i] = (limit[i] - start[i] + strides[i] - 1) / strides[i];
  }
  return std::vector<AVal>{out};
}

Status CheckIndices(const std::string& prim, const std::vector<AVal>& in, size_t first,
                    int64_t rank) {
  if (static_cast<int64_t>(in.size() - first) != rank) {
    return InvalidArgument(prim, ": needs ", rank, " start indices (one per dim), got ",
                           in.size() - first);
  }
  for (size_t i = first; i < in.size(); ++i) {
    if (in[i].rank() != 0 || !IsInteger(in[i].dtype)) {
      return InvalidArgument(prim, ": start index ", i - first, " is ", in[i].ToString(),
                             "; indices must be integer scalars");
    }
  }
  return OkStatus();
}

Out DynamicSlice(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1 << 20));
  XS_ASSIGN_OR_RETURN(IntList sizes, GetInts(prim, p, "slice_sizes"));
  XS_RETURN_IF_ERROR(CheckIndices(prim, in, 1, in[0].rank()));
  if (static_cast<int64_t>(sizes.size()) != in[0].rank()) {
    return InvalidArgument(prim, ": slice_sizes needs ", in[0].rank(), " entries");
  }
  for (int64_t i = 0; i < in[0].rank(); ++i) {
    if (sizes[i] < 0 || sizes[i] > in[0].dims[i]) {
      return InvalidArgument(prim, ": slice size ", sizes[i], " of dim ", i,
                             " exceeds operand ", in[0].ToString());
    }
  }
  return std::vector<AVal>{AVal{in[0].dtype, sizes, in[0].weak_type}};
}

Out DynamicUpdateSlice(const std::string& prim, const std::vector<AVal>& in, const Params&) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 2, 1 << 20));
  XS_RETURN_IF_ERROR(CheckIndices(prim, in, 2, in[0].rank()));
  const AVal &op = in[0], &up = in[1];
  bool ok = up.dtype == op.dtype && up.rank() == op.rank();
  for (int64_t i = 0; ok && i < op.rank(); ++i) ok = up.dims[i] <= op.dims[i];
  if (!ok) {
    return InvalidArgument(prim, ": update ", up.ToString(), " does not fit in operand ",
                           op.ToString(), "; same dtype and rank, each dim no larger");
  }
  return std::vector<AVal>{op};
}

Out Concatenate(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1 << 20));
  XS_ASSIGN_OR_RETURN(int64_t dim, GetInt(prim, p, "dimension"));
  if (dim < 0 || dim >= in[0].rank()) {
    return InvalidArgument(prim, ": dimension ", dim, " is not a dim of ", in[0].ToString());
  }
  AVal out = in[0];
  out.dims[dim] = 0;
  for (const AVal& a : in) {
    AVal x = a, y = in[0];
    if (a.rank() == y.rank()) x.dims[dim] = y.dims[dim] = 0;
    if (a.dtype != y.dtype || x.dims != y.dims) {
      return InvalidArgument(prim, ": operands ", AValsText(in), " must agree in dtype and in "
                             "every dim but ", dim);
    }
    out.dims[dim] += a.dims[dim];
  }
  out.weak_type = AllWeak(in);
  return std::vector<AVal>{out};
}

Out Pad(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 2, 2));
  XS_ASSIGN_OR_RETURN(IntLists cfg, GetIntLists(prim, p, "padding_config"));
  if (in[1].rank() != 0 || in[1].dtype != in[0].dtype) {
    return InvalidArgument(prim, ": padding value ", in[1].ToString(), " must be a scalar of ",
                           in[0].ToString(), "'s dtype");
  }
  if (static_cast<int64_t>(cfg.size()) != in[0].rank()) {
    return InvalidArgument(prim, ": padding_config needs ", in[0].rank(),
                           " (low, high, interior) triples");
  }
  AVal out = in[0];
  for (size_t i = 0; i < cfg.size(); ++i) {
    int64_t d = in[0].dims[i];
    if (cfg[i].size() != 3 || cfg[i][2] < 0) {
      return InvalidArgument(prim, ": padding_config entry ", i,
                             " must be (low, high, interior) with interior >= 0");
    }
    out.dims[i] = cfg[i][0] + cfg[i][1] + d + std::max<int64_t>(d - 1, 0) * cfg[i][2];
    if (out.dims[i] < 0) return InvalidArgument(prim, ": dim ", i, " padded to a negative size");
  }
  return std::vector<AVal>{out};
}

Out Iota(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 0, 0));
  XS_ASSIGN_OR_RETURN(DType t, GetDType(prim, p, "dtype"));
  XS_ASSIGN_OR_RETURN(IntList shape, GetInts(prim, p, "shape"));
  XS_ASSIGN_OR_RETURN(int64_t dim, GetInt(prim, p, "dimension"));
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size())) {
    return InvalidArgument(prim, ": dimension ", dim, " is not a dim of shape (",
                           StrJoin(shape, ", "), ")");
  }
  return std::vector<AVal>{AVal{t, shape, false}};
}

Out Identity(const std::string& prim, const std::vector<AVal>& in, const Params&) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  return std::vector<AVal>{in[0]};
}

const std::map<std::string, Rule>& Table() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, Rule>;
    for (const char* p : {"exp", "log", "tanh", "logistic", "sqrt", "rsqrt", "sin", "cos"})
      (*t)[p] = Unary(Kind::kFloat);
    for (const char* p : {"neg", "abs", "sign"}) (*t)[p] = Unary(Kind::kAny);
    (*t)["not"] = Unary(Kind::kLogical);
    for (const char* p : {"add", "add_any", "sub", "mul", "div", "max", "min", "rem"})
      (*t)[p] = Binary(Kind::kAny, false);
    (*t)["pow"] = Binary(Kind::kFloat, false);
    for (const char* p : {"and", "or", "xor"}) (*t)[p] = Binary(Kind::kLogical, false);
    for (const char* p : {"eq", "ne", "lt", "le", "gt", "ge"}) (*t)[p] = Binary(Kind::kAny, true);
    (*t)["integer_pow"] = IntegerPow;
    (*t)["select_n"] = SelectN;
    (*t)["convert_element_type"] = ConvertElementType;
    (*t)["broadcast_in_dim"] = BroadcastInDim;
    (*t)["reshape"] = Reshape;
    (*t)["squeeze"] = Squeeze;
    (*t)["expand_dims"] = ExpandDims;
    (*t)["transpose"] = Transpose;
    for (const char* p : {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin"})
      (*t)[p] = Reduce;
    (*t)["slice"] = Slice;
    (*t)["dynamic_slice"] = DynamicSlice;
    (*t)["dynamic_update_slice"] = DynamicUpdateSlice;
    (*t)["concatenate"] = Concatenate;
    (*t)["pad"] = Pad;
    (*t)["iota"] = Iota;
    (*t)["sharding_constraint"] = Identity;
    (*t)["stop_gradient"] = Identity;
    AddContractionRules(*t);
    AddExtraRules(*t);
    return t;
  }();
  return *table;
}

}  // namespace
}  // namespace internal

StatusOr<std::vector<AVal>> AbstractEval(const std::string& primitive, const std::vector<AVal>& in,
                                         const Params& params) {
  const auto& table = internal::Table();
  auto it = table.find(primitive);
  if (it == table.end()) {
    return InvalidArgument("unknown primitive '", primitive, "' applied to ",
                           internal::AValsText(in), "; see primitives.cc for the supported set");
  }
  return it->second(primitive, in, params);
}

}  // namespace xs::fe
