// Executor handlers for XLA's `_SPMDInternalOp_*` custom-calls (the halo ops Enzyme-JAX emits for
// stencil codes, partitioned by XLA's SPMD partitioner; in the XLA corpus) on whole arrays. Their
// attributes are `backend_config="key=value,..."` (integers, or [a,b,...] lists); along
// `dimension` of size n:
//   _SPMDInternalOp_RotateRight  amount=a              out[i] = x[(i - a) mod n]
//   _SPMDInternalOp_MultiRotate  left_amount=L, right_amount=R
//                                (L + R + 1 results)   result k = x rotated left by L - k:
//                                                      out_k[i] = x[(i + L - k) mod n]
//   _SPMDInternalOp_Wrap         left_amount=L, right_amount=R
//                                                      concat(x[n-L:n], x, x[0:R])
//   _SPMDInternalOp_MultiSlice   amount=A, start_indices, limit_indices, strides
//                                (A + 1 results)       result k = slice(x, start + k, limit + k)
//                                                      (shifted by k along `dimension` only)
//   _SPMDInternalOp_MultiPad     amt=p, operands (x, pad value)
//                                (2 results)           pad(x, low p), pad(x, high p)
// `bufferize` (a buffer-placement hint) is accepted and ignored.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/kernels/shape_ops.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/exec/spmd_internal_config.h"

namespace xs {
namespace {

using Config = SpmdInternalConfig;

Status ConfigError(const Instruction& inst, std::string_view target, std::string_view what) {
  return InvalidArgument("custom-call '", inst.name(), "' (", target, "): ", what);
}

StatusOr<int64_t> Scalar(const Instruction& inst, std::string_view target, const Config& c, std::string_view key) {
  auto it = c.find(key);
  if (it == c.end() || it->second.list || it->second.values.size() != 1) {
    return ConfigError(inst, target, StrCat("backend_config needs an integer ", key, "=N"));
  }
  return it->second.values[0];
}

StatusOr<std::vector<int64_t>> List(const Instruction& inst, std::string_view target, const Config& c,
                                    std::string_view key, int64_t rank) {
  auto it = c.find(key);
  if (it == c.end() || !it->second.list || static_cast<int64_t>(it->second.values.size()) != rank) {
    return ConfigError(inst, target, StrCat("backend_config needs ", key, "=[...] with one entry per operand dim (", rank, ")"));
  }
  return it->second.values;
}

int64_t Mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

enum class Kind { kRotateRight, kMultiRotate, kWrap, kMultiSlice, kMultiPad };

struct InternalOpParams : ExtraParams {
  Kind kind = Kind::kRotateRight;
  int64_t dim = 0;
  // Rotations (left, as `out[i] = x[(i + r) mod n]`), one per result.
  std::vector<int64_t> rotations;
  int64_t left = 0, right = 0;              // wrap
  std::vector<SliceDim> slice;              // multi-slice: result 0's slice
  int64_t results = 1;                      // multi-slice
  int64_t pad = 0;                          // multi-pad
};

const InternalOpParams& ParamsOf(const Step& step) { return static_cast<const InternalOpParams&>(step.extra()); }

// x[start:limit] along dim, whole along the other dims.
Array SliceAlong(const Array& x, int64_t dim, int64_t start, int64_t limit) {
  std::vector<SliceDim> s;
  for (int64_t d = 0; d < x.shape().rank(); ++d) {
    s.push_back(d == dim ? SliceDim{start, limit, 1} : SliceDim{0, x.shape().dims()[d], 1});
  }
  return kernels::Slice(x, s);
}

// x rotated left by r along dim (0 <= r < n): concat(x[r:n], x[0:r]).
Array RotateLeft(const Array& x, int64_t dim, int64_t r) {
  const int64_t n = x.shape().dims()[dim];
  if (n == 0 || r == 0) return Array(x);
  const Array a = SliceAlong(x, dim, r, n), b = SliceAlong(x, dim, 0, r);
  const Array* parts[] = {&a, &b};
  return kernels::Concatenate(parts, dim);
}

Status RunInternalOp(const Step& step, Frame& frame, RunContext& ctx) {
  const InternalOpParams& p = ParamsOf(step);
  const Array& x = OperandArray(step, frame, 0);
  const bool tuple = step.inst->shape().IsTuple();
  std::vector<Array> out;
  switch (p.kind) {
    case Kind::kRotateRight:
    case Kind::kMultiRotate:
      for (int64_t r : p.rotations) out.push_back(RotateLeft(x, p.dim, r));
      break;
    case Kind::kWrap: {
      const int64_t n = x.shape().dims()[p.dim];
      const Array a = SliceAlong(x, p.dim, n - p.left, n), c = SliceAlong(x, p.dim, 0, p.right);
      const Array* parts[] = {&a, &x, &c};
      out.push_back(kernels::Concatenate(parts, p.dim));
      break;
    }
    case Kind::kMultiSlice:
      for (int64_t k = 0; k < p.results; ++k) {
        std::vector<SliceDim> s = p.slice;
        s[p.dim].start += k;
        s[p.dim].limit += k;
        out.push_back(kernels::Slice(x, s));
      }
      break;
    case Kind::kMultiPad: {
      const Array& value = OperandArray(step, frame, 1);
      std::vector<PaddingDim> low(x.shape().rank()), high(x.shape().rank());
      low[p.dim].low = p.pad;
      high[p.dim].high = p.pad;
      out.push_back(kernels::Pad(x, value, low));
      out.push_back(kernels::Pad(x, value, high));
      break;
    }
  }
  if (tuple) {
    SetTuple(step, frame, ctx, std::move(out));
  } else {
    SetArray(step, frame, ctx, std::move(out[0]));
  }
  return OkStatus();
}

// The results of `inst` (one array, or a tuple of arrays), each of which must equal `expected`.
Status CheckResults(const Instruction& inst, std::string_view target, const std::vector<Shape>& expected) {
  const Shape& s = inst.shape();
  std::vector<Shape> got;
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes()) got.push_back(e);
  } else {
    got.push_back(s);
  }
  bool ok = got.size() == expected.size();
  for (size_t i = 0; ok && i < got.size(); ++i) ok = got[i].IsArray() && got[i].Compatible(expected[i]);
  if (ok) return OkStatus();
  std::string want = expected.size() == 1 ? expected[0].ToString(false) : "(";
  if (expected.size() != 1) {
    for (size_t i = 0; i < expected.size(); ++i) want += (i ? ", " : "") + expected[i].ToString(false);
    want += ")";
  }
  return ConfigError(inst, target, StrCat("the result must be ", want, " for this operand and backend_config, got ",
                                          s.ToString(false)));
}

}  // namespace

bool IsSpmdInternalCustomCall(std::string_view target) {
  return target == "_SPMDInternalOp_RotateRight" || target == "_SPMDInternalOp_MultiRotate" ||
         target == "_SPMDInternalOp_Wrap" || target == "_SPMDInternalOp_MultiSlice" ||
         target == "_SPMDInternalOp_MultiPad";
}

Status PrepareSpmdInternalCustomCall(const Instruction& inst, std::string_view target, Step& step) {
  const bool pad = target == "_SPMDInternalOp_MultiPad";
  if (inst.operand_count() != (pad ? 2 : 1) || !inst.operand(0)->shape().IsArray()) {
    return ConfigError(inst, target, pad ? "needs two operands: an array and a scalar pad value"
                                         : "needs one array operand");
  }
  const Shape& xs = inst.operand(0)->shape();
  const int64_t rank = xs.rank();
  XS_ASSIGN_OR_RETURN(Config c, ParseSpmdInternalConfig(inst));
  auto p = std::make_shared<InternalOpParams>();
  XS_ASSIGN_OR_RETURN(p->dim, Scalar(inst, target, c, "dimension"));
  if (p->dim < 0 || p->dim >= rank) {
    return ConfigError(inst, target, StrCat("dimension=", p->dim, " is outside the operand's rank ", rank, " (",
                                            xs.ToString(false), ")"));
  }
  const int64_t n = xs.dims()[p->dim];
  std::vector<Shape> expected;
  auto with_dim = [&](int64_t size) {
    std::vector<int64_t> dims = xs.dims();
    dims[p->dim] = size;
    return Shape(xs.dtype(), dims);
  };
  if (target == "_SPMDInternalOp_RotateRight") {
    p->kind = Kind::kRotateRight;
    XS_ASSIGN_OR_RETURN(int64_t amount, Scalar(inst, target, c, "amount"));
    if (amount < 0) return ConfigError(inst, target, StrCat("amount=", amount, " must be >= 0"));
    p->rotations.push_back(n == 0 ? 0 : Mod(-amount, n));
    expected.push_back(xs);
  } else if (target == "_SPMDInternalOp_MultiRotate") {
    p->kind = Kind::kMultiRotate;
    XS_ASSIGN_OR_RETURN(int64_t left, Scalar(inst, target, c, "left_amount"));
    XS_ASSIGN_OR_RETURN(int64_t right, Scalar(inst, target, c, "right_amount"));
    if (left + right < 0 || left + right + 1 > 4096) {
      return ConfigError(inst, target, StrCat("left_amount=", left, " and right_amount=", right,
                                              " give ", left + right + 1, " results (1 to 4096 allowed)"));
    }
    for (int64_t k = 0; k <= left + right; ++k) {
      p->rotations.push_back(n == 0 ? 0 : Mod(left - k, n));
      expected.push_back(xs);
    }
  } else if (target == "_SPMDInternalOp_Wrap") {
    p->kind = Kind::kWrap;
    XS_ASSIGN_OR_RETURN(p->left, Scalar(inst, target, c, "left_amount"));
    XS_ASSIGN_OR_RETURN(p->right, Scalar(inst, target, c, "right_amount"));
    if (p->left < 0 || p->right < 0 || p->left > n || p->right > n) {
      return ConfigError(inst, target, StrCat("left_amount=", p->left, " and right_amount=", p->right,
                                              " must be in [0, ", n, "] (the size of dimension ", p->dim, ")"));
    }
    expected.push_back(with_dim(n + p->left + p->right));
  } else if (target == "_SPMDInternalOp_MultiSlice") {
    p->kind = Kind::kMultiSlice;
    XS_ASSIGN_OR_RETURN(int64_t amount, Scalar(inst, target, c, "amount"));
    XS_ASSIGN_OR_RETURN(std::vector<int64_t> starts, List(inst, target, c, "start_indices", rank));
    XS_ASSIGN_OR_RETURN(std::vector<int64_t> limits, List(inst, target, c, "limit_indices", rank));
    XS_ASSIGN_OR_RETURN(std::vector<int64_t> strides, List(inst, target, c, "strides", rank));
    if (amount < 0 || amount >= 4096) return ConfigError(inst, target, StrCat("amount=", amount, " must be in [0, 4096)"));
    p->results = amount + 1;
    std::vector<int64_t> dims(rank);
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t shift = d == p->dim ? amount : 0;
      if (strides[d] < 1 || starts[d] < 0 || starts[d] > limits[d] || limits[d] + shift > xs.dims()[d]) {
        return ConfigError(inst, target, StrCat("slice [", starts[d], ":", limits[d], ":", strides[d], "] of dim ", d,
                                                " (size ", xs.dims()[d], ")", shift ? StrCat(" shifted by up to ", shift) : "",
                                                " is out of bounds or has a stride below 1"));
      }
      p->slice.push_back({starts[d], limits[d], strides[d]});
      dims[d] = (limits[d] - starts[d] + strides[d] - 1) / strides[d];
    }
    for (int64_t k = 0; k <= amount; ++k) expected.push_back(Shape(xs.dtype(), dims));
  } else {
    p->kind = Kind::kMultiPad;
    XS_ASSIGN_OR_RETURN(p->pad, Scalar(inst, target, c, "amt"));
    const Shape& v = inst.operand(1)->shape();
    if (p->pad < 0) return ConfigError(inst, target, StrCat("amt=", p->pad, " must be >= 0"));
    if (!v.IsArray() || v.rank() != 0 || v.dtype() != xs.dtype()) {
      return ConfigError(inst, target, StrCat("the pad value must be a ", DTypeName(xs.dtype()), "[] scalar, got ",
                                              v.ToString(false)));
    }
    expected.push_back(with_dim(n + p->pad));
    expected.push_back(with_dim(n + p->pad));
  }
  XS_RETURN_IF_ERROR(CheckResults(inst, target, expected));
  step.SetPayload(ExtraPayload{std::move(p)});
  step.run = &RunInternalOp;
  return OkStatus();
}

}  // namespace xs
