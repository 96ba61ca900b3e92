// Typed attribute values of HLO instructions (slice, padding, window, dot / convolution / gather /
// scatter dimension numbers, replica groups, comparisons, literals). Plain structs: the parser
// fills them from text, the printer writes them back, passes and the executor read them.
#ifndef XSHARD_IR_ATTRIBUTES_H_
#define XSHARD_IR_ATTRIBUTES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xshard/core/array.h"

namespace xs {

// compare(a, b), direction=LT, type=TOTALORDER. kNone: no `type=` written (the verifier derives
// it from the element type as XLA does).
enum class ComparisonDirection { kEq, kNe, kGe, kGt, kLe, kLt };
enum class ComparisonType { kNone, kFloat, kTotalOrder, kSigned, kUnsigned };
std::string_view ComparisonDirectionName(ComparisonDirection d);  // "LT"
std::string_view ComparisonTypeName(ComparisonType t);            // "TOTALORDER" ("" for kNone)
std::optional<ComparisonDirection> ParseComparisonDirection(std::string_view s);
std::optional<ComparisonType> ParseComparisonType(std::string_view s);

// One dim of slice={[start:limit:stride], ...}; stride 1 when omitted.
struct SliceDim {
  int64_t start = 0, limit = 0, stride = 1;
  friend bool operator==(const SliceDim&, const SliceDim&) = default;
};

// One dim of pad's padding=low_high_interior (x-separated per dim); low / high may be negative.
struct PaddingDim {
  int64_t low = 0, high = 0, interior = 0;
  friend bool operator==(const PaddingDim&, const PaddingDim&) = default;
};

// One spatial dim of window={size=3x3 stride=2x2 pad=1_1x0_0 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}.
struct WindowDim {
  int64_t size = 1, stride = 1, pad_low = 0, pad_high = 0;
  int64_t lhs_dilation = 1, rhs_dilation = 1;
  bool window_reversal = false;
  friend bool operator==(const WindowDim&, const WindowDim&) = default;
};
struct Window {
  std::vector<WindowDim> dims;
  friend bool operator==(const Window&, const Window&) = default;
};

// dot(lhs, rhs), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0},
// rhs_contracting_dims={1}. Result dims: batch, lhs free dims, rhs free dims (in order).
struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
  friend bool operator==(const DotDimensionNumbers&, const DotDimensionNumbers&) = default;
};

// Convolution dims from dim_labels=b01f_01io->b01f: 'b' batch, 'f' feature, digits the spatial
// dims in window order; kernel 'i' input feature, 'o' output feature.
struct ConvolutionDimensionNumbers {
  int64_t input_batch = 0, input_feature = 0;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0, kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 0;
  std::vector<int64_t> output_spatial;
  friend bool operator==(const ConvolutionDimensionNumbers&,
                         const ConvolutionDimensionNumbers&) = default;
};

// gather(operand, indices), offset_dims={..}, collapsed_slice_dims={..}, start_index_map={..},
// operand_batching_dims={..}, start_indices_batching_dims={..}, index_vector_dim=N,
// slice_sizes={..} (slice sizes live in Attributes::slice_sizes).
struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  std::vector<int64_t> operand_batching_dims, start_indices_batching_dims;
  int64_t index_vector_dim = 0;
  friend bool operator==(const GatherDimensionNumbers&, const GatherDimensionNumbers&) = default;
};

// scatter(operands..., indices, updates...), update_window_dims, inserted_window_dims,
// scatter_dims_to_operand_dims, input_batching_dims, scatter_indices_batching_dims,
// index_vector_dim.
struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  std::vector<int64_t> input_batching_dims, scatter_indices_batching_dims;
  int64_t index_vector_dim = 0;
  friend bool operator==(const ScatterDimensionNumbers&, const ScatterDimensionNumbers&) = default;
};

// replica_groups={{0,1},{2,3}} (explicit) or replica_groups=[2,2]<=[4] / [2,4]<=[4,2]T(1,0)
// (iota: `[num_groups,group_size]<=[reshape]T(perm)`, numpy
// arange(N).reshape(reshape).transpose(perm).reshape(num_groups, group_size)) or
// replica_groups=mesh['x'=4,'y'=2] {'y'} (mesh axes, text/mesh_replica_groups.h). Printed in the
// form it was given. Groups() always gives the explicit lists.
struct ReplicaGroups {
  std::vector<std::vector<int64_t>> groups;  // explicit form (also filled for the other forms)
  bool iota = false;                         // true: print as the iota form below
  // Set: the mesh-axes text as written (`mesh['x'=4,'y'=2] {'y'}`), printed verbatim so dumps
  // compare with XLA's; `groups` holds its expansion. Whoever changes `groups` clears it.
  std::string mesh_form;
  int64_t num_groups = 0, group_size = 0;
  std::vector<int64_t> reshape_dims;
  std::vector<int64_t> transpose_perm;  // empty: identity
  const std::vector<std::vector<int64_t>>& Groups() const { return groups; }
  friend bool operator==(const ReplicaGroups&, const ReplicaGroups&) = default;
};

// operand_precision={default,highest}.
enum class Precision { kDefault, kHigh, kHighest, kPacketNibble };
std::string_view PrecisionName(Precision p);  // "default", "high", "highest", "packed_nibble"
std::optional<Precision> ParsePrecision(std::string_view s);

// rng distribution=rng_uniform / rng_normal; rng-bit-generator algorithm=rng_three_fry /
// rng_philox / rng_default.
enum class RngDistribution { kUniform, kNormal };
enum class RngAlgorithm { kDefault, kThreeFry, kPhilox };

// fft fft_type=FFT / IFFT / RFFT / IRFFT.
enum class FftType { kFft, kIfft, kRfft, kIrfft };
std::string_view FftTypeName(FftType t);  // "RFFT"
std::optional<FftType> ParseFftType(std::string_view s);

// triangular-solve transpose_a=NO_TRANSPOSE / TRANSPOSE / ADJOINT (op(a) = a, a^T or a^H).
enum class TransposeKind { kNoTranspose, kTranspose, kAdjoint };
std::string_view TransposeKindName(TransposeKind t);  // "NO_TRANSPOSE"
std::optional<TransposeKind> ParseTransposeKind(std::string_view s);

// A constant's value: an array, or a tuple of literals (`constant((1, {2, 3}))`).
struct Literal {
  std::optional<Array> array;     // set for array literals
  std::vector<Literal> elements;  // tuple literals (array unset)
  bool elided = false;            // written as {...} (values not in the text; zeros here)
  bool IsTuple() const { return !array.has_value(); }
  friend bool operator==(const Literal&, const Literal&) = default;
};


// Every attribute an instruction can carry after its operand list, typed. A field that is unset
// (nullopt / false / empty) was not written in the text and is not printed. Which fields an
// opcode uses follows XLA (e.g. broadcast / transpose / reduce / concatenate / all-gather /
// all-to-all use `dimensions`). Every attribute the compiler or the executor reads is a typed
// field, parsed once by text/ (a bad value is a parse error naming the attribute); attributes
// xshard does not interpret (statistics, schedule, ...) are kept verbatim in `other` so that text
// round-trips.
struct Attributes {
  std::optional<std::vector<int64_t>> dimensions;  // dimensions={1,0}
  std::optional<int64_t> parameter_number;         // parameter(N)
  std::optional<int64_t> tuple_index;              // get-tuple-element: index=N
  std::optional<int64_t> iota_dimension;           // iota_dimension=N
  std::optional<std::vector<SliceDim>> slice;      // slice={[0:4], [1:8:2]}
  std::optional<std::vector<int64_t>> dynamic_slice_sizes;  // dynamic_slice_sizes={2,4}
  std::optional<std::vector<PaddingDim>> padding;  // pad: padding=0_1_0x2_-1
  std::optional<DotDimensionNumbers> dot;          // dot / ragged-dot / scaled-dot
  std::optional<Window> window;                    // convolution, reduce-window, select-and-scatter
  std::optional<ConvolutionDimensionNumbers> conv_dims;  // dim_labels=b01f_01io->b01f
  int64_t feature_group_count = 1;                 // printed when != 1
  int64_t batch_group_count = 1;                   // printed when != 1
  std::optional<GatherDimensionNumbers> gather;
  std::optional<std::vector<int64_t>> slice_sizes;  // gather slice_sizes={1,8}
  std::optional<ScatterDimensionNumbers> scatter;
  bool indices_are_sorted = false;
  bool unique_indices = false;
  std::optional<ComparisonDirection> comparison_direction;  // direction=LT
  ComparisonType comparison_type = ComparisonType::kNone;   // type=TOTALORDER
  std::optional<Literal> literal;                           // constant(...)
  std::optional<ReplicaGroups> replica_groups;
  std::optional<int64_t> channel_id;
  bool use_global_device_ids = false;
  bool constrain_layout = false;
  std::optional<std::vector<std::pair<int64_t, int64_t>>> source_target_pairs;  // {{0,1},{1,0}}
  std::optional<std::string> fusion_kind;          // kind=kLoop
  std::optional<std::string> custom_call_target;   // unescaped: custom_call_target="foo"
  std::optional<std::string> api_version;          // API_VERSION_TYPED_FFI
  // custom-call: operand_layout_constraints={f32[4,4]{0,1}, s32[]}, one shape per operand.
  std::optional<std::vector<Shape>> operand_layout_constraints;
  bool custom_call_has_side_effect = false;
  std::optional<std::string> backend_config;       // value text verbatim ("..." or {...})
  std::optional<std::vector<Precision>> operand_precision;
  bool is_stable = false;                          // sort
  std::optional<RngDistribution> distribution;     // rng
  std::optional<RngAlgorithm> rng_algorithm;       // rng-bit-generator
  std::optional<int64_t> exponent_bits, mantissa_bits;  // reduce-precision
  std::optional<std::string> infeed_config, outfeed_config;  // unescaped string values
  std::optional<Shape> outfeed_shape;
  std::optional<FftType> fft_type;                 // fft: fft_type=RFFT
  std::optional<std::vector<int64_t>> fft_length;  // fft: fft_length={16,8}
  std::optional<int64_t> k;                        // topk: k=N
  std::optional<bool> largest;                     // topk, TopK custom-call (unset: true)
  std::optional<bool> lower;                       // cholesky, triangular-solve (unset: false)
  std::optional<bool> left_side, unit_diagonal;    // triangular-solve (unset: false)
  std::optional<TransposeKind> transpose_a;        // triangular-solve (unset: NO_TRANSPOSE)
  std::optional<double> epsilon;                   // batch-norm-*: epsilon=0.001
  std::optional<int64_t> feature_index;            // batch-norm-*: feature_index=N
  std::optional<std::vector<int64_t>> lhs_ragged_dims, rhs_group_dims;  // ragged-dot
  std::optional<std::string> async_execution_thread;  // async-*: unescaped ("main" when unset)
  std::optional<std::string> metadata;  // text between the braces of metadata={...}, verbatim
  std::optional<std::vector<std::pair<std::string, std::string>>> frontend_attributes;  // unescaped values
  std::vector<std::pair<std::string, std::string>> other;  // (name, value text) verbatim, in order

  // Value text of a verbatim attribute (`other`), or nullopt. For presence checks of attributes
  // xshard does not interpret (sparsity); a value the compiler reads gets a typed field instead.
  std::optional<std::string_view> Other(std::string_view name) const {
    for (const auto& [n, v] : other)
      if (n == name) return std::string_view(v);
    return std::nullopt;
  }
  friend bool operator==(const Attributes&, const Attributes&) = default;
};

}  // namespace xs

#endif  // XSHARD_IR_ATTRIBUTES_H_
