// The collective-matmul API: names, seed 003's shapes, divisibility checks, inputs, the
// single-device reference, and Run (place once, time shard_map calls of the algorithm).
#include "xshard/cmm/cmm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <sys/resource.h>

#include "xshard/cmm/algorithms.h"
#include "xshard/kernels/dot.h"
#include "xshard/shard_map/shard_map.h"
#include "xshard/shard_map/sharded_array.h"

namespace xs::cmm {
namespace {

struct AlgorithmInfo {
  Algorithm algo;
  const char* name;
  DeviceFn os, is, ws;  // seed 004's algorithms: one layout (os), any variant
  bool seed004;
};

constexpr AlgorithmInfo kAlgorithms[] = {
    {Algorithm::kGspmd, "gspmd", &GspmdOs, &GspmdIs, &GspmdWs, false},
    {Algorithm::kWang, "wang", &WangOs, &WangIs, &WangWs, false},
    {Algorithm::kSystolic, "systolic", &SystolicOs, &SystolicIs, &SystolicWs, false},
    {Algorithm::kAgDot, "ag_dot", &AgDot, &AgDot, &AgDot, true},
    {Algorithm::kSlicePsum, "slice_psum", &SlicePsum, &SlicePsum, &SlicePsum, true},
};

constexpr const char* kVariantNames[] = {"os", "is", "ws"};

const AlgorithmInfo& Info(Algorithm a) {
  for (const AlgorithmInfo& i : kAlgorithms) {
    if (i.algo == a) return i;
  }
  XS_CHECK(false, "unknown cmm algorithm ", static_cast<int>(a));
  return kAlgorithms[0];
}

// One divisibility rule: `dim` (its name and size) must divide by `divisor`, because `why`.
struct Rule {
  const char* dim;
  int64_t size;
  int64_t divisor;
  std::string divisor_text, why;
};

std::vector<Rule> Rules(const CmmSpec& s) {
  const int64_t r = s.rows, c = s.cols, kb = s.chunks * s.block;
  const MatmulDims& d = s.dims;
  const std::string rs = StrCat("rows with rows=", r), cs = StrCat("cols with cols=", c);
  if (Info(s.algo).seed004) {
    std::vector<Rule> rules = {
        {"m", d.m, r, rs, "A's rows are sharded over 'row'"},
        {"k", d.k, c, cs, "A's columns are sharded over 'col'"},
        {"k", d.k, r, rs, "B's rows are sharded over 'row'"}};
    return rules;
  }
  // The stored layouts, every operand and the result P('row', 'col').
  std::vector<Rule> rules = {{"m", d.m, r, rs, "C's rows are sharded over 'row'"},
                             {"n", d.n, c, cs, "C's columns are sharded over 'col'"}};
  const auto add = [&](const char* dim, int64_t size, int64_t divisor, std::string text,
                       std::string why) {
    rules.push_back({dim, size, divisor, std::move(text), std::move(why)});
  };
  switch (s.variant) {
    case Variant::kOS:
      add("k", d.k, c, cs, "A [m,k]'s columns are sharded over 'col'");
      add("k", d.k, r, rs, "B [k,n]'s rows are sharded over 'row'");
      break;
    case Variant::kIS:
      add("k", d.k, c, cs, "A [m,k] and B [n,k] have their columns sharded over 'col'");
      add("n", d.n, r, rs, "B [n,k]'s rows are sharded over 'row'");
      break;
    case Variant::kWS:
      add("k", d.k, r, rs, "A [k,m] and B [k,n] have their rows sharded over 'row'");
      add("m", d.m, c, cs, "A [k,m]'s columns are sharded over 'col'");
      break;
  }
  const std::string chunk_text = StrCat(", chunks=", s.chunks, ", block=", s.block);
  const auto systolic = [&](const char* dim, int64_t size) {
    add(dim, size, r * kb, StrCat("rows*chunks*block with rows=", r, chunk_text),
        "each 'row' shard of it is cut into chunks of blocks");
    add(dim, size, c * kb, StrCat("cols*chunks*block with cols=", c, chunk_text),
        "each 'col' shard of it is cut into chunks of blocks");
  };
  const char* halves = "the ring splits each device's block of it into two halves";
  if (s.algo == Algorithm::kWang) {
    if (s.variant == Variant::kOS) add("k", d.k, 2 * c, StrCat("2*", cs), halves);
    if (s.variant == Variant::kIS) add("n", d.n, 2 * c, StrCat("2*", cs), halves);
    if (s.variant == Variant::kWS) {
      // Check the branch's divisor only once its inputs are known to divide.
      const bool split_out = d.k % r == 0 && d.n % c == 0 && WangWsSplitsOutput(s);
      if (split_out) add("m", d.m, 2 * r, StrCat("2*", rs), halves);
      if (!split_out) add("m", d.m, 2 * c, StrCat("2*", cs), halves);
    }
  } else if (s.algo == Algorithm::kSystolic) {
    if (s.variant == Variant::kOS) systolic("k", d.k);
    if (s.variant == Variant::kIS) systolic("n", d.n);
    if (s.variant == Variant::kWS) systolic("m", d.m);
  }
  return rules;
}

// CPU seconds (user + system) this process has used so far, over all its threads.
double ProcessCpuMs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) * 1e-3;
  };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

// P('row', 'col') and P('row', None).
PartitionSpec RowCol() { return PartitionSpec({{"row"}, {"col"}}); }
PartitionSpec RowNone() { return PartitionSpec({{"row"}, {}}); }

}  // namespace

std::string_view AlgorithmName(Algorithm a) { return Info(a).name; }
std::string_view VariantName(Variant v) { return kVariantNames[static_cast<int>(v)]; }

StatusOr<Algorithm> ParseAlgorithm(std::string_view name) {
  std::vector<std::string> names;
  for (const AlgorithmInfo& i : kAlgorithms) {
    if (name == i.name) return i.algo;
    names.push_back(i.name);
  }
  return InvalidArgument("unknown collective-matmul algorithm '", name, "'; use one of ",
                         StrJoin(names, ", "));
}

StatusOr<Variant> ParseVariant(std::string_view name) {
  for (int v = 0; v < 3; ++v) {
    if (name == kVariantNames[v]) return static_cast<Variant>(v);
  }
  return InvalidArgument("unknown variant '", name, "'; use os (output-stationary), is "
                         "(input-stationary) or ws (weight-stationary)");
}

MatmulDims DimsFromBshd(const Bshd& x, Variant variant) {
  const int64_t bs = x.b * x.s, hd = x.h * x.d;
  switch (variant) {
    case Variant::kOS: return {bs, hd, 4 * hd};
    case Variant::kIS: return {bs, 4 * hd, hd};
    case Variant::kWS: return {hd, bs, 4 * hd};
  }
  return {};
}

std::string SpecString(const CmmSpec& s) {
  const bool fixed = Info(s.algo).seed004;
  return StrCat(AlgorithmName(s.algo), fixed ? "" : " ", fixed ? "" : VariantName(s.variant),
                " ", s.rows, "x", s.cols, " m=", s.dims.m, " k=", s.dims.k, " n=", s.dims.n, " ",
                DTypeName(s.dtype));
}

Status Validate(const CmmSpec& s) {
  if (s.rows < 1 || s.cols < 1) {
    return InvalidArgument("mesh ", s.rows, "x", s.cols, ": both axes need at least 1 device");
  }
  if (s.dtype != DType::kF32 && s.dtype != DType::kBF16) {
    return InvalidArgument("dtype ", DTypeName(s.dtype), " is not supported by the collective "
                           "matmuls; use f32 or bf16 (accumulated in f32)");
  }
  if (s.dims.m < 1 || s.dims.k < 1 || s.dims.n < 1) {
    return InvalidArgument("m=", s.dims.m, " k=", s.dims.k, " n=", s.dims.n,
                           ": every dim must be at least 1");
  }
  if (s.algo == Algorithm::kSystolic && (s.chunks < 1 || s.block < 1)) {
    return InvalidArgument("systolic: chunks=", s.chunks, " block=", s.block,
                           ": both must be at least 1");
  }
  std::vector<std::string> bad;
  for (const Rule& rule : Rules(s)) {
    if (rule.size % rule.divisor == 0) continue;
    bad.push_back(StrCat(rule.dim, "=", rule.size, " must divide by ", rule.divisor, " = ",
                         rule.divisor_text, " (", rule.why, ")"));
  }
  if (bad.empty()) return OkStatus();
  return InvalidArgument(SpecString(s), ": ", StrJoin(bad, "; "),
                         "; pick sizes that divide, or another mesh");
}

std::vector<int64_t> ADims(const CmmSpec& s) {
  if (!Info(s.algo).seed004 && s.variant == Variant::kWS) return {s.dims.k, s.dims.m};
  return {s.dims.m, s.dims.k};
}

std::vector<int64_t> BDims(const CmmSpec& s) {
  if (!Info(s.algo).seed004 && s.variant == Variant::kIS) return {s.dims.n, s.dims.k};
  return {s.dims.k, s.dims.n};
}

StatusOr<CmmInputs> MakeInputs(const CmmSpec& spec, uint64_t seed) {
  XS_RETURN_IF_ERROR(Validate(spec));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto make = [&](std::vector<int64_t> dims) {
    Array a(DType::kF32, std::move(dims));
    for (float& v : a.values<float>()) v = u(rng);
    return spec.dtype == DType::kF32 ? a : a.Convert(spec.dtype);
  };
  CmmInputs in;
  in.a = make(ADims(spec));
  in.b = make(BDims(spec));
  return in;
}

StatusOr<Array> Reference(const CmmSpec& spec, const CmmInputs& in) {
  DotDimensionNumbers d;
  const bool fixed = Info(spec.algo).seed004;
  d.lhs_contracting = {!fixed && spec.variant == Variant::kWS ? 0 : 1};
  d.rhs_contracting = {!fixed && spec.variant == Variant::kIS ? 1 : 0};
  return kernels::DotGeneral(in.a, in.b, d, DType::kF32);
}

StatusOr<double> MaxAbsError(const Array& got, const Array& want) {
  if (got.dims() != want.dims()) {
    return InvalidArgument("comparing ", got.shape().ToString(false), " with ",
                           want.shape().ToString(false), ": the shapes differ");
  }
  double worst = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double e = std::abs(got.GetDouble(i) - want.GetDouble(i));
    if (!(e <= worst)) worst = e;  // NaN sticks
  }
  return worst;
}

StatusOr<CmmResult> Run(Client& client, const CmmSpec& spec, const CmmInputs& in,
                        const RunOptions& options) {
  XS_RETURN_IF_ERROR(Validate(spec));
  if (options.iters < 1 || options.warmup < 0) {
    return InvalidArgument("iters=", options.iters, " warmup=", options.warmup,
                           ": need iters >= 1 and warmup >= 0");
  }
  for (const auto& [name, got, want] :
       {std::tuple{"a", &in.a, ADims(spec)}, std::tuple{"b", &in.b, BDims(spec)}}) {
    if (got->dims() != want || got->dtype() != spec.dtype) {
      return InvalidArgument(SpecString(spec), ": input ", name, " is ",
                             got->shape().ToString(false), " but must be ",
                             Shape(spec.dtype, want).ToString(false));
    }
  }
  const AlgorithmInfo& info = Info(spec.algo);
  const DeviceFn body = info.seed004 ? info.os
                        : spec.variant == Variant::kOS ? info.os
                        : spec.variant == Variant::kIS ? info.is
                                                       : info.ws;
  XS_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create({"row", "col"}, {spec.rows, spec.cols}));
  const PartitionSpec b_spec = info.seed004 ? RowNone() : RowCol();
  const PartitionSpec out_spec = info.seed004 ? RowNone() : RowCol();
  TraceLog trace;
  CmmCost cost;
  bool record = false;
  ShardMapFn fn = [&](ShardMapContext& ctx, std::vector<Array> args)
      -> StatusOr<std::vector<Array>> {
    Dev dev(ctx, record && !options.trace_path.empty() ? &trace : nullptr,
            record && ctx.device() == 0 ? &cost : nullptr);
    XS_ASSIGN_OR_RETURN(Array c, body(dev, spec, args[0], args[1]));
    return std::vector<Array>{std::move(c)};
  };
  XS_ASSIGN_OR_RETURN(ShardMapped f, ShardMap(mesh, {RowCol(), b_spec}, {out_spec}, fn));
  XS_ASSIGN_OR_RETURN(NamedSharding a_sharding, NamedSharding::Create(mesh, RowCol()));
  XS_ASSIGN_OR_RETURN(NamedSharding b_sharding, NamedSharding::Create(mesh, b_spec));
  XS_ASSIGN_OR_RETURN(ShardedArray a, ShardedArray::Create(client, in.a, a_sharding));
  XS_ASSIGN_OR_RETURN(ShardedArray b, ShardedArray::Create(client, in.b, b_sharding));
  std::vector<ShardedArray> placed;
  placed.push_back(std::move(a));
  placed.push_back(std::move(b));
  kernels::SetBlasThreads(static_cast<int>(client.IntraOpThreads(mesh.num_devices())));
  CmmResult result;
  std::vector<ShardedArray> out;
  for (int64_t i = 0; i < options.warmup + options.iters; ++i) {
    record = i + 1 == options.warmup + options.iters;
    cost = CmmCost{};
    const double cpu_start = ProcessCpuMs();
    const auto start = std::chrono::steady_clock::now();
    XS_ASSIGN_OR_RETURN(out, f(client, placed));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    if (i >= options.warmup) {
      result.ms.push_back(ms);
      result.cpu_ms += ProcessCpuMs() - cpu_start;
    }
  }
  if (!options.trace_path.empty()) XS_RETURN_IF_ERROR(trace.Write(options.trace_path));
  XS_ASSIGN_OR_RETURN(result.out, out[0].ToArray());
  result.cost = cost;
  return result;
}

}  // namespace xs::cmm
