// Bindings of the collective matmul library (cmm/cmm.h): xshard.cmm runs seed 003's GSPMD, Wang
// and systolic matmuls (OS / IS / WS) and seed 004's variants on numpy operands.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>
#include <vector>

#include "python/src/convert.h"
#include "xshard/cmm/cmm.h"
#include "xshard/runtime/client.h"

namespace xs::python {

Client& ClientFor(int64_t devices);  // program.cc

namespace {

using namespace nb::literals;

cmm::CmmSpec Spec(const std::string& algo, const std::string& variant, int64_t rows, int64_t cols,
                  int64_t m, int64_t k, int64_t n, const std::string& dtype, int64_t chunks,
                  int64_t block) {
  cmm::CmmSpec spec;
  spec.algo = Unwrap(cmm::ParseAlgorithm(algo));
  spec.variant = Unwrap(cmm::ParseVariant(variant));
  spec.rows = rows;
  spec.cols = cols;
  spec.dims = {m, k, n};
  if (dtype == "f32" || dtype == "float32") {
    spec.dtype = DType::kF32;
  } else if (dtype == "bf16" || dtype == "bfloat16") {
    spec.dtype = DType::kBF16;
  } else {
    Raise(InvalidArgument("dtype '", dtype, "' is not supported by cmm: use 'f32' or 'bf16'"));
  }
  spec.chunks = chunks;
  spec.block = block;
  Check(cmm::Validate(spec));
  return spec;
}

// (out, ms, cpu_ms, (flops, bytes_in, bytes_async, collectives, dots)).
nb::tuple Run(const std::string& algo, const std::string& variant, int64_t rows, int64_t cols,
              const InArray& a, const InArray& b, int64_t m, int64_t k, int64_t n,
              const std::string& dtype, int64_t chunks, int64_t block, int64_t warmup,
              int64_t iters, const std::string& trace) {
  cmm::CmmSpec spec = Spec(algo, variant, rows, cols, m, k, n, dtype, chunks, block);
  cmm::CmmInputs in{ToArray(a), ToArray(b)};
  // f32 operands with dtype bf16: rounded to bf16 here (numpy has no bf16 type of its own).
  if (in.a.dtype() != spec.dtype) in.a = in.a.Convert(spec.dtype);
  if (in.b.dtype() != spec.dtype) in.b = in.b.Convert(spec.dtype);
  cmm::RunOptions options;
  options.warmup = warmup;
  options.iters = iters;
  options.trace_path = trace;
  Client& client = ClientFor(rows * cols);
  StatusOr<cmm::CmmResult> result = [&] {
    nb::gil_scoped_release release;
    return cmm::Run(client, spec, in, options);
  }();
  cmm::CmmResult r = Unwrap(std::move(result));
  const cmm::CmmCost& c = r.cost;
  return nb::make_tuple(ToNumpy(std::move(r.out)), r.ms, r.cpu_ms,
                        nb::make_tuple(c.flops, c.bytes_in, c.bytes_async, c.collectives, c.dots));
}

}  // namespace

void BindCmm(nb::module_& m) {
  m.def("_cmm_run", &Run, "algo"_a, "variant"_a, "rows"_a, "cols"_a, "a"_a, "b"_a, "m"_a, "k"_a,
        "n"_a, "dtype"_a, "chunks"_a, "block"_a, "warmup"_a, "iters"_a, "trace"_a);
  m.def("_cmm_dims_from_bshd", [](int64_t b, int64_t s, int64_t h, int64_t d,
                                  const std::string& variant) {
    cmm::MatmulDims dims = cmm::DimsFromBshd({b, s, h, d}, Unwrap(cmm::ParseVariant(variant)));
    return std::make_tuple(dims.m, dims.k, dims.n);
  });
}

}  // namespace xs::python
