// Abstract evaluation of the primitives behind the jnp / jax.nn / lax additions of tensor_math.cc
// and control.h: the extra elementwise math (square, log1p, expm1, erf, is_finite), reduce_prod,
// the cumulative reductions (cumsum, cumprod, cummax, cummin), gather and scatter-add, sort and
// top_k, and the control-flow primitives cond, while and scan, with JAX's names and parameters.
#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/frontend/primitive_rules.h"

namespace xs::fe::internal {
namespace {

using Out = StatusOr<std::vector<AVal>>;

Out FloatUnary(const std::string& prim, const std::vector<AVal>& in, const Params&) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  if (!IsFloating(in[0].dtype) && !IsComplex(in[0].dtype)) {
    return InvalidArgument(prim, ": operand ", in[0].ToString(),
                           " must be floating point; convert it with Astype(x, f32)");
  }
  if (prim == "is_finite") return std::vector<AVal>{AVal{DType::kPred, in[0].dims, false}};
  return std::vector<AVal>{in[0]};
}

Out AnyUnary(const std::string& prim, const std::vector<AVal>& in, const Params&) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  return std::vector<AVal>{in[0]};
}

Out Cumulative(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(int64_t axis, GetInt(prim, p, "axis"));
  auto it = p.find("reverse");
  if (it == p.end() || !std::holds_alternative<bool>(it->second)) {
    return InvalidArgument(prim, ": missing parameter 'reverse' (a bool)");
  }
  if (axis < 0 || axis >= in[0].rank()) {
    return InvalidArgument(prim, ": axis ", axis, " is not a dim of ", in[0].ToString());
  }
  return std::vector<AVal>{in[0]};
}

// gather(operand, indices): XLA's gather with the index vector in the last dim of `indices`.
// dimension_numbers: (offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
// start_indices_batching_dims).
Out Gather(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 2, 2));
  XS_ASSIGN_OR_RETURN(IntLists dn, GetIntLists(prim, p, "dimension_numbers"));
  XS_ASSIGN_OR_RETURN(IntList sizes, GetInts(prim, p, "slice_sizes"));
  const AVal &op = in[0], &idx = in[1];
  if (dn.size() != 5) {
    return InvalidArgument(prim,
                           ": dimension_numbers needs 5 lists (offset_dims, "
                           "collapsed_slice_dims, start_index_map, operand_batching_dims, "
                           "start_indices_batching_dims)");
  }
  if (!IsInteger(idx.dtype) || idx.rank() < 1) {
    return InvalidArgument(prim, ": indices ", idx.ToString(),
                           " must be integers with the index vector as the last dim");
  }
  if (static_cast<int64_t>(sizes.size()) != op.rank()) {
    return InvalidArgument(prim, ": slice_sizes needs ", op.rank(), " entries for ", op.ToString());
  }
  if (static_cast<int64_t>(dn[2].size()) != idx.dims.back()) {
    return InvalidArgument(prim, ": start_index_map has ", dn[2].size(), " entries but the index vector of ",
                           idx.ToString(), " has ", idx.dims.back());
  }
  for (int64_t i = 0; i < op.rank(); ++i) {
    if (sizes[i] < 0 || sizes[i] > op.dims[i]) {
      return InvalidArgument(prim, ": slice size ", sizes[i], " of dim ", i, " exceeds ", op.ToString());
    }
  }
  std::vector<int64_t> offsets;
  for (int64_t i = 0; i < op.rank(); ++i) {
    bool gone = std::count(dn[1].begin(), dn[1].end(), i) || std::count(dn[3].begin(), dn[3].end(), i);
    if (gone) {
      if (sizes[i] != 1) {
        return InvalidArgument(prim, ": collapsed / batching dim ", i, " needs slice size 1");
      }
      continue;
    }
    offsets.push_back(sizes[i]);
  }
  if (offsets.size() != dn[0].size()) {
    return InvalidArgument(prim, ": offset_dims has ", dn[0].size(), " entries, needs ", offsets.size());
  }
  int64_t batch_rank = idx.rank() - 1;
  int64_t rank = batch_rank + static_cast<int64_t>(offsets.size());
  AVal out{op.dtype, std::vector<int64_t>(rank), false};
  size_t next_offset = 0;
  int64_t next_batch = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::count(dn[0].begin(), dn[0].end(), i)) {
      out.dims[i] = offsets[next_offset++];
    } else {
      if (next_batch >= batch_rank) {
        return InvalidArgument(prim, ": offset_dims (", StrJoin(dn[0], ", "), ") do not fit an output of rank ", rank);
      }
      out.dims[i] = idx.dims[next_batch++];
    }
  }
  return std::vector<AVal>{out};
}

// scatter-add(operand, indices, updates): typed like operand.
Out ScatterAdd(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 3, 3));
  XS_ASSIGN_OR_RETURN(IntLists dn, GetIntLists(prim, p, "dimension_numbers"));
  if (dn.size() != 5) {
    return InvalidArgument(prim,
                           ": dimension_numbers needs 5 lists (update_window_dims, "
                           "inserted_window_dims, scatter_dims_to_operand_dims, "
                           "operand_batching_dims, scatter_indices_batching_dims)");
  }
  if (in[2].dtype != in[0].dtype) {
    return InvalidArgument(prim, ": updates ", in[2].ToString(), " and operand ", in[0].ToString(),
                           " must have one dtype");
  }
  if (!IsInteger(in[1].dtype)) {
    return InvalidArgument(prim, ": indices ", in[1].ToString(), " must be integers");
  }
  AVal out = in[0];
  out.weak_type = false;
  return std::vector<AVal>{out};
}

Out Sort(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1 << 20));
  XS_ASSIGN_OR_RETURN(int64_t dim, GetInt(prim, p, "dimension"));
  XS_ASSIGN_OR_RETURN(int64_t num_keys, GetInt(prim, p, "num_keys"));
  if (dim < 0 || dim >= in[0].rank()) {
    return InvalidArgument(prim, ": dimension ", dim, " is not a dim of ", in[0].ToString());
  }
  if (num_keys < 1 || num_keys > static_cast<int64_t>(in.size())) {
    return InvalidArgument(prim, ": num_keys ", num_keys, " must be 1..", in.size());
  }
  for (const AVal& a : in) {
    if (a.dims != in[0].dims) {
      return InvalidArgument(prim, ": operands ", AValsText(in), " must have one shape");
    }
  }
  return in;
}

Out TopK(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1));
  XS_ASSIGN_OR_RETURN(int64_t k, GetInt(prim, p, "k"));
  XS_ASSIGN_OR_RETURN(int64_t axis, GetInt(prim, p, "axis"));
  if (axis < 0 || axis >= in[0].rank()) {
    return InvalidArgument(prim, ": axis ", axis, " is not a dim of ", in[0].ToString());
  }
  if (k < 0 || k > in[0].dims[axis]) {
    return InvalidArgument(prim, ": k=", k, " must be in 0..", in[0].dims[axis], " (dim ", axis, " of ",
                           in[0].ToString(), ")");
  }
  AVal values = in[0];
  values.dims[axis] = k;
  values.weak_type = false;
  AVal indices{DType::kS32, values.dims, false};
  return std::vector<AVal>{values, indices};
}

std::vector<AVal> InAVals(const Jaxpr& j) {
  std::vector<AVal> out;
  for (const Var& v : j.invars) out.push_back(v.aval);
  return out;
}
std::vector<AVal> OutAValsOf(const Jaxpr& j) {
  std::vector<AVal> out;
  for (const Atom& a : j.outvars) out.push_back(a.aval());
  return out;
}
bool SameTypes(const std::vector<AVal>& a, const std::vector<AVal>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dtype != b[i].dtype || a[i].dims != b[i].dims) return false;
  return true;
}

// cond(index, *operands), branches: each branch takes the operands and returns one type list.
Out Cond(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_RETURN_IF_ERROR(CheckArity(prim, in, 1, 1 << 20));
  auto it = p.find("branches");
  const JaxprList* branches = it == p.end() ? nullptr : std::get_if<JaxprList>(&it->second);
  if (branches == nullptr || branches->empty()) {
    return InvalidArgument(prim, ": parameter 'branches' must be a non-empty tuple of jaxprs");
  }
  if (in[0].rank() != 0 || in[0].dtype != DType::kS32) {
    return InvalidArgument(prim, ": the branch index ", in[0].ToString(), " must be an int32 scalar");
  }
  std::vector<AVal> ops(in.begin() + 1, in.end());
  std::vector<AVal> outs;
  for (size_t b = 0; b < branches->size(); ++b) {
    const auto& j = (*branches)[b];
    if (!j) return InvalidArgument(prim, ": branch ", b, " is a null jaxpr");
    if (!SameTypes(InAVals(*j), ops)) {
      return InvalidArgument(prim, ": branch ", b, " takes ", AValsText(InAVals(*j)), " but the operands are ",
                             AValsText(ops));
    }
    if (b == 0) {
      outs = OutAValsOf(*j);
    } else if (!SameTypes(OutAValsOf(*j), outs)) {
      return InvalidArgument(prim, ": branch ", b, " returns ", AValsText(OutAValsOf(*j)), " but branch 0 returns ",
                             AValsText(outs), "; every branch must return the same types");
    }
  }
  for (AVal& a : outs) a.weak_type = false;
  return outs;
}

// while(cond_consts..., body_consts..., init...): cond_jaxpr(cond_consts, carry) -> bool[],
// body_jaxpr(body_consts, carry) -> carry.
Out While(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_ASSIGN_OR_RETURN(auto cond, GetJaxpr(prim, p, "cond_jaxpr"));
  XS_ASSIGN_OR_RETURN(auto body, GetJaxpr(prim, p, "body_jaxpr"));
  XS_ASSIGN_OR_RETURN(int64_t cn, GetInt(prim, p, "cond_nconsts"));
  XS_ASSIGN_OR_RETURN(int64_t bn, GetInt(prim, p, "body_nconsts"));
  if (cn < 0 || bn < 0 || cn + bn > static_cast<int64_t>(in.size())) {
    return InvalidArgument(prim, ": cond_nconsts ", cn, " + body_nconsts ", bn, " exceed the ", in.size(), " operands");
  }
  std::vector<AVal> carry(in.begin() + cn + bn, in.end());
  std::vector<AVal> cond_in(in.begin(), in.begin() + cn), body_in(in.begin() + cn, in.begin() + cn + bn);
  cond_in.insert(cond_in.end(), carry.begin(), carry.end());
  body_in.insert(body_in.end(), carry.begin(), carry.end());
  if (!SameTypes(InAVals(*cond), cond_in)) {
    return InvalidArgument(prim, ": cond_jaxpr takes ", AValsText(InAVals(*cond)), " but gets ", AValsText(cond_in));
  }
  std::vector<AVal> co = OutAValsOf(*cond);
  if (co.size() != 1 || co[0].dtype != DType::kPred || co[0].rank() != 0) {
    return InvalidArgument(prim, ": cond_jaxpr must return one bool scalar, returns ", AValsText(co));
  }
  if (!SameTypes(InAVals(*body), body_in) || !SameTypes(OutAValsOf(*body), carry)) {
    return InvalidArgument(prim, ": body_jaxpr maps ", AValsText(InAVals(*body)), " to ", AValsText(OutAValsOf(*body)),
                           " but the loop carries ", AValsText(carry), "; the body must return the carry's types");
  }
  for (AVal& a : carry) a.weak_type = false;
  return carry;
}

// scan(consts..., init..., xs...): jaxpr(consts, carry, x) -> (carry, y); outputs the final carry
// and the ys stacked along a new leading dim of size `length`.
Out Scan(const std::string& prim, const std::vector<AVal>& in, const Params& p) {
  XS_ASSIGN_OR_RETURN(auto body, GetJaxpr(prim, p, "jaxpr"));
  XS_ASSIGN_OR_RETURN(int64_t length, GetInt(prim, p, "length"));
  XS_ASSIGN_OR_RETURN(int64_t nc, GetInt(prim, p, "num_consts"));
  XS_ASSIGN_OR_RETURN(int64_t ncar, GetInt(prim, p, "num_carry"));
  if (nc < 0 || ncar < 0 || nc + ncar > static_cast<int64_t>(in.size()) || length < 0) {
    return InvalidArgument(prim, ": num_consts ", nc, " + num_carry ", ncar, " exceed the ", in.size(),
                           " operands (or length ", length, " < 0)");
  }
  std::vector<AVal> body_in(in.begin(), in.begin() + nc + ncar);
  for (size_t i = nc + ncar; i < in.size(); ++i) {
    if (in[i].rank() < 1 || in[i].dims[0] != length) {
      return InvalidArgument(prim, ": scanned operand ", in[i].ToString(),
                             " must have a leading dim of size length=", length);
    }
    AVal x = in[i];
    x.dims.erase(x.dims.begin());
    body_in.push_back(x);
  }
  if (!SameTypes(InAVals(*body), body_in)) {
    return InvalidArgument(prim, ": jaxpr takes ", AValsText(InAVals(*body)), " but gets ", AValsText(body_in));
  }
  std::vector<AVal> bo = OutAValsOf(*body);
  std::vector<AVal> carry(in.begin() + nc, in.begin() + nc + ncar);
  if (bo.size() < carry.size() || !SameTypes(std::vector<AVal>(bo.begin(), bo.begin() + ncar), carry)) {
    return InvalidArgument(prim, ": jaxpr returns ", AValsText(bo), " whose first ", ncar,
                           " values must match the carry ", AValsText(carry));
  }
  std::vector<AVal> outs = carry;
  for (size_t i = ncar; i < bo.size(); ++i) {
    AVal y = bo[i];
    y.dims.insert(y.dims.begin(), length);
    outs.push_back(y);
  }
  for (AVal& a : outs) a.weak_type = false;
  return outs;
}

}  // namespace

void AddExtraRules(std::map<std::string, Rule>& table) {
  for (const char* p : {"log1p", "expm1", "erf", "erfc", "is_finite"}) table[p] = FloatUnary;
  table["square"] = AnyUnary;
  for (const char* p : {"cumsum", "cumprod", "cummax", "cummin"}) table[p] = Cumulative;
  table["gather"] = Gather;
  table["scatter-add"] = ScatterAdd;
  table["sort"] = Sort;
  table["top_k"] = TopK;
  table["cond"] = Cond;
  table["while"] = While;
  table["scan"] = Scan;
}

}  // namespace xs::fe::internal
