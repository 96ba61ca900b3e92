// Parser behaviour: what each piece of HLO text becomes in the IR. Expected values are derived by
// hand from XLA's documented semantics (bit patterns from the IEEE / fp8 encodings).
#include <gtest/gtest.h>

#include <cstring>

#include "xshard/text/literal_text.h"
#include "xshard/text/parse_test_util.h"

namespace xs {
namespace {

using xs::testing::ParseOrFail;

const Instruction* Get(const Module& m, std::string_view name) {
  for (const Computation* c : m.computations())
    if (const Instruction* i = c->GetInstruction(name)) return i;
  ADD_FAILURE() << "no instruction " << name;
  return nullptr;
}

template <typename T>
T Bits(const Array& a, int64_t i = 0) {
  T v;
  std::memcpy(&v, a.data() + i * sizeof(T), sizeof(T));
  return v;
}

TEST(Parser, ReadsXlaToStringFormWithTiledLayoutsAndHeader) {
  auto m = ParseOrFail(R"(HloModule jit_matmul, is_scheduled=true, entry_computation_layout={(f32[4,4]{1,0:T(4,128)})->f32[]{:T(256)}}, allow_spmd_sharding_propagation_to_output={true}

%add (x: f32[], y: f32[]) -> f32[] {
  %y = f32[]{:T(256)} parameter(1)
  %x = f32[]{:T(256)} parameter(0)
  ROOT %add = f32[]{:T(256)} add(f32[]{:T(256)} %x, f32[]{:T(256)} %y)
}

ENTRY %main (p: f32[4,4]) -> f32[] {
  %p = f32[4,4]{1,0:T(4,128)(2,1)} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4,4]{1,0:T(4,128)(2,1)} %p, f32[] %z), dimensions={0,1}, to_apply=%add
})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name(), "jit_matmul");
  EXPECT_TRUE(m->config().is_scheduled);
  EXPECT_EQ(m->config().entry_computation_layout, "(f32[4,4]{1,0:T(4,128)})->f32[]{:T(256)}");
  EXPECT_EQ(m->config().allow_spmd_sharding_propagation_to_output, std::vector<bool>{true});
  const Instruction* p = Get(*m, "p");
  ASSERT_TRUE(p->shape().layout().has_value());
  EXPECT_EQ(p->shape().layout()->minor_to_major, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(p->shape().layout()->tail, "T(4,128)(2,1)");
  const Instruction* x = Get(*m, "x");
  EXPECT_TRUE(x->shape().layout()->minor_to_major.empty());
  EXPECT_EQ(x->shape().layout()->tail, "T(256)");
  const Computation* add = m->GetComputation("add");
  EXPECT_EQ(add->parameter(0)->name(), "x");  // by number, not text order
  EXPECT_EQ(add->root()->name(), "add");
  const Instruction* r = Get(*m, "r");
  EXPECT_EQ(r->to_apply(), add);
  EXPECT_EQ(r->dimensions(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(m->entry()->name(), "main");
}

TEST(Parser, ReadsShortFormWithoutHeaderForwardReferencesAndAnyComputationOrder) {
  auto m = ParseOrFail(R"(
ENTRY e {
  ROOT c = f32[2] call(n), to_apply=neg  // defined below
  n = f32[2] negate(p)  /* p comes later too */
  p = f32[2] parameter(0)
}
neg {
  a = f32[2] parameter(0)
  ROOT b = f32[2] negate(a)
})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name(), "e");  // no header: the entry's name
  EXPECT_EQ(m->entry()->root()->name(), "c");
  EXPECT_EQ(Get(*m, "n")->operand(0)->name(), "p");
  EXPECT_EQ(Get(*m, "p")->users(), std::vector<Instruction*>{m->entry()->GetInstruction("n")});
  EXPECT_EQ(Get(*m, "c")->to_apply()->name(), "neg");
}

TEST(Parser, WithoutEntryTheLastComputationIsTheEntryAndWithoutRootTheLastInstruction) {
  auto m = ParseOrFail("HloModule m\nc1 {\n  ROOT a = f32[] constant(1)\n}\nc2 {\n  a = f32[] constant(1)\n"
                 "  b = f32[] negate(a)\n}\n");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->entry()->name(), "c2");
  EXPECT_EQ(m->entry()->root()->name(), "b");
}

TEST(Parser, ReadsDotConvolutionAndWindowAttributes) {
  auto m = ParseOrFail(R"(ENTRY e {
  a = f32[2,4,8] parameter(0)
  b = f32[2,8,3] parameter(1)
  d = f32[2,4,3] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={HIGH,default}
  x = f32[1,5,5,2] parameter(2)
  k = f32[3,3,2,4] parameter(3)
  ROOT c = f32[1,3,2,4] convolution(x, k), window={size=3x3 stride=2x1 pad=1_1x0_-1 lhs_dilate=1x2 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=1
})");
  ASSERT_NE(m, nullptr);
  const Attributes& d = Get(*m, "d")->attrs();
  ASSERT_TRUE(d.dot.has_value());
  EXPECT_EQ(d.dot->lhs_batch, std::vector<int64_t>{0});
  EXPECT_EQ(d.dot->lhs_contracting, std::vector<int64_t>{2});
  EXPECT_EQ(d.dot->rhs_contracting, std::vector<int64_t>{1});
  EXPECT_EQ(*d.operand_precision, (std::vector<Precision>{Precision::kHigh, Precision::kDefault}));
  const Attributes& c = Get(*m, "c")->attrs();
  ASSERT_EQ(c.window->dims.size(), 2u);
  const WindowDim& w0 = c.window->dims[0];
  const WindowDim& w1 = c.window->dims[1];
  EXPECT_EQ(std::vector<int64_t>({w0.size, w0.stride, w0.pad_low, w0.pad_high, w0.lhs_dilation}),
            std::vector<int64_t>({3, 2, 1, 1, 1}));
  EXPECT_EQ(std::vector<int64_t>({w1.size, w1.stride, w1.pad_low, w1.pad_high, w1.lhs_dilation}),
            std::vector<int64_t>({3, 1, 0, -1, 2}));
  EXPECT_FALSE(w0.window_reversal);
  EXPECT_TRUE(w1.window_reversal);
  EXPECT_EQ(w1.rhs_dilation, 1);
  const ConvolutionDimensionNumbers& cd = *c.conv_dims;
  EXPECT_EQ(cd.input_batch, 0);
  EXPECT_EQ(cd.input_feature, 3);
  EXPECT_EQ(cd.input_spatial, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(cd.kernel_input_feature, 2);
  EXPECT_EQ(cd.kernel_output_feature, 3);
  EXPECT_EQ(cd.kernel_spatial, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(cd.output_feature, 3);
}

TEST(Parser, DimLabelsWithPermutedSpatialDims) {
  auto m = ParseOrFail(R"(ENTRY e {
  x = f32[5,1,2,7] parameter(0)
  k = f32[2,2,3,1] parameter(1)
  ROOT c = f32[4,1,2,6] convolution(x, k), window={size=1x2}, dim_labels=1bf0_o1i0->1bf0
})");
  ASSERT_NE(m, nullptr);
  const ConvolutionDimensionNumbers& cd = *Get(*m, "c")->attrs().conv_dims;
  EXPECT_EQ(cd.input_spatial, (std::vector<int64_t>{3, 0}));  // '0' at index 3, '1' at index 0
  EXPECT_EQ(cd.kernel_output_feature, 0);
  EXPECT_EQ(cd.kernel_input_feature, 2);
  EXPECT_EQ(cd.kernel_spatial, (std::vector<int64_t>{3, 1}));
}

TEST(Parser, ReadsGatherScatterSlicePadAndDynamicSliceAttributes) {
  auto m = ParseOrFail(R"(add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  o = f32[3,4,5] parameter(0)
  i = s32[2,3,1] parameter(1)
  g = f32[2,3,4,5] gather(o, i), offset_dims={2,3}, collapsed_slice_dims={}, start_index_map={0}, operand_batching_dims={0}, start_indices_batching_dims={1}, index_vector_dim=2, slice_sizes={1,4,5}, indices_are_sorted=true
  u = f32[2,3,4,5] parameter(2)
  sc = f32[3,4,5] scatter(o, i, u), update_window_dims={2,3}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, input_batching_dims={0}, scatter_indices_batching_dims={1}, index_vector_dim=2, unique_indices=true, to_apply=add
  sl = f32[3,2,5] slice(o), slice={[0:3], [0:4:2], [0:5]}
  z = f32[] constant(0)
  pd = f32[4,4,13] pad(o, z), padding=0_1x1_-1_0x0_0_2
  k = s32[] constant(1)
  ROOT ds = f32[1,2,5] dynamic-slice(o, k, k, k), dynamic_slice_sizes={1,2,5}
})");
  ASSERT_NE(m, nullptr);
  const GatherDimensionNumbers& g = *Get(*m, "g")->attrs().gather;
  EXPECT_EQ(g.offset_dims, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(g.collapsed_slice_dims.empty());
  EXPECT_EQ(g.operand_batching_dims, std::vector<int64_t>{0});
  EXPECT_EQ(g.start_indices_batching_dims, std::vector<int64_t>{1});
  EXPECT_EQ(g.index_vector_dim, 2);
  EXPECT_EQ(*Get(*m, "g")->attrs().slice_sizes, (std::vector<int64_t>{1, 4, 5}));
  EXPECT_TRUE(Get(*m, "g")->attrs().indices_are_sorted);
  const ScatterDimensionNumbers& s = *Get(*m, "sc")->attrs().scatter;
  EXPECT_EQ(s.update_window_dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s.scatter_dims_to_operand_dims, std::vector<int64_t>{0});
  EXPECT_EQ(s.input_batching_dims, std::vector<int64_t>{0});
  EXPECT_EQ(s.index_vector_dim, 2);
  EXPECT_FALSE(Get(*m, "sc")->attrs().gather.has_value());
  EXPECT_TRUE(Get(*m, "sc")->attrs().unique_indices);
  EXPECT_EQ(*Get(*m, "sl")->attrs().slice,
            (std::vector<SliceDim>{{0, 3, 1}, {0, 4, 2}, {0, 5, 1}}));
  EXPECT_EQ(*Get(*m, "pd")->attrs().padding,
            (std::vector<PaddingDim>{{0, 1, 0}, {1, -1, 0}, {0, 0, 2}}));
  EXPECT_EQ(*Get(*m, "ds")->attrs().dynamic_slice_sizes, (std::vector<int64_t>{1, 2, 5}));
}

TEST(Parser, ExpandsIotaReplicaGroupsLikeNumpy) {
  auto m = ParseOrFail(R"(ENTRY e {
  p = f32[2] parameter(0)
  a = f32[8] all-gather(p), dimensions={0}, replica_groups=[2,4]<=[4,2]T(1,0), channel_id=3, use_global_device_ids=true
  b = f32[4] all-gather(p), dimensions={0}, replica_groups=[2,2]<=[4]
  c = f32[4] all-gather(p), dimensions={0}, replica_groups={{0,2},{1,3}}
  ROOT cp = f32[2] collective-permute(p), source_target_pairs={{0,1},{1,0}}
})");
  ASSERT_NE(m, nullptr);
  // arange(8).reshape(4,2).transpose(1,0).reshape(2,4)
  const ReplicaGroups& a = *Get(*m, "a")->attrs().replica_groups;
  EXPECT_TRUE(a.iota);
  EXPECT_EQ(a.Groups(), (std::vector<std::vector<int64_t>>{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(*Get(*m, "a")->attrs().channel_id, 3);
  EXPECT_TRUE(Get(*m, "a")->attrs().use_global_device_ids);
  EXPECT_EQ(Get(*m, "b")->attrs().replica_groups->Groups(),
            (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_FALSE(Get(*m, "c")->attrs().replica_groups->iota);
  EXPECT_EQ(Get(*m, "c")->attrs().replica_groups->Groups(),
            (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(*Get(*m, "cp")->attrs().source_target_pairs,
            (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 0}}));
}

TEST(Parser, EncodesConstantsBitExactly) {
  auto m = ParseOrFail(R"(ENTRY e {
  f = f32[4] constant({nan, -inf, 1.5, -0})
  h = f16[2] constant({500, -nan})
  b = bf16[2] constant({nan(0x3f), 1})
  e4 = f8e4m3fn[2] constant({448, -nan})
  e5 = f8e5m2[2] constant({-inf, 0.5})
  fz = f8e4m3b11fnuz[1] constant({nan})
  c = c64[] constant((1, -2))
  pr = pred[2] constant({1, 0})
  s = s4[2] constant({-8, 7})
  u = u64[] constant(18446744073709551615)
  splat = s32[2,2] constant(7)
  t = (f32[], s32[2]) constant((2.5, {1, 2}))
  ROOT r = f32[] constant(0.1)
})");
  ASSERT_NE(m, nullptr);
  const Array& f = Get(*m, "f")->literal();
  // The other narrow types (values by hand from their formats, dtype.h).
  auto n = ParseOrFail(R"(ENTRY e {
  a = f8e4m3fnuz[2] constant({240, nan})
  b = f8e5m2fnuz[2] constant({-0.5, 57344})
  c = f8e4m3[2] constant({-inf, 240})
  d = f8e3m4[2] constant({15.5, 0.25})
  g = f4e2m1fn[3] constant({-6, 0.5, 3})
  i = s2[2] constant({-2, 1})
  ROOT j = u2[2] constant({3, 0})
})");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "a")->literal(), 0), 0x7f);  // 1.875 * 2^7: exponent 7 + 8
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "a")->literal(), 1), 0x80);
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "b")->literal(), 0), 0xbc);  // -2^-1: exponent 15, sign
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "b")->literal(), 1), 0x7f);
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "c")->literal(), 0), 0xf8);
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "c")->literal(), 1), 0x77);
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "d")->literal(), 0), 0x6f);  // 1.9375 * 2^3: exponent 6
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "d")->literal(), 1), 0x10);  // 2^-2: exponent 1
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "g")->literal(), 0), 0xf);
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "g")->literal(), 1), 0x1);
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "g")->literal(), 2), 0x5);
  EXPECT_EQ(Bits<int8_t>(Get(*n, "i")->literal(), 0), -2);
  EXPECT_EQ(Bits<uint8_t>(Get(*n, "j")->literal(), 0), 3);
  EXPECT_EQ(PrintLiteral(*Get(*n, "g")->attrs().literal), "{-6, 0.5, 3}");
  EXPECT_FALSE(ParseHloModule("ENTRY e {\n  ROOT z = s2[] constant(2)\n}").ok());  // out of range
  EXPECT_EQ(Bits<uint32_t>(f, 0), 0x7fc00000u);
  EXPECT_EQ(Bits<uint32_t>(f, 1), 0xff800000u);
  EXPECT_EQ(Bits<uint32_t>(f, 2), 0x3fc00000u);
  EXPECT_EQ(Bits<uint32_t>(f, 3), 0x80000000u);
  // 500 = 1.953125 * 2^8: exponent 8 + 15 = 0b10111, mantissa 0.953125 * 1024 = 0x3d0.
  EXPECT_EQ(Bits<uint16_t>(Get(*m, "h")->literal(), 0), 0x5fd0);
  EXPECT_EQ(Bits<uint16_t>(Get(*m, "h")->literal(), 1), 0xfe00);
  EXPECT_EQ(Bits<uint16_t>(Get(*m, "b")->literal(), 0), 0x7fbf);
  EXPECT_EQ(Bits<uint16_t>(Get(*m, "b")->literal(), 1), 0x3f80);
  // e4m3fn: 448 = 1.75 * 2^8 -> exponent 8 + 7 = 15, mantissa 0b110; NaN is S.1111.111.
  EXPECT_EQ(Bits<uint8_t>(Get(*m, "e4")->literal(), 0), 0x7e);
  EXPECT_EQ(Bits<uint8_t>(Get(*m, "e4")->literal(), 1), 0xff);
  EXPECT_EQ(Bits<uint8_t>(Get(*m, "e5")->literal(), 0), 0xfc);
  EXPECT_EQ(Bits<uint8_t>(Get(*m, "e5")->literal(), 1), 0x38);  // 2^-1: exponent 14
  EXPECT_EQ(Bits<uint8_t>(Get(*m, "fz")->literal(), 0), 0x80);
  EXPECT_EQ(Bits<float>(Get(*m, "c")->literal(), 0), 1.0f);
  EXPECT_EQ(Bits<float>(Get(*m, "c")->literal(), 1), -2.0f);
  EXPECT_EQ(Bits<uint8_t>(Get(*m, "pr")->literal(), 0), 1);
  EXPECT_EQ(Bits<uint8_t>(Get(*m, "pr")->literal(), 1), 0);
  EXPECT_EQ(Bits<int8_t>(Get(*m, "s")->literal(), 0), -8);
  EXPECT_EQ(Bits<uint64_t>(Get(*m, "u")->literal(), 0), ~uint64_t{0});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Bits<int32_t>(Get(*m, "splat")->literal(), i), 7);
  const Literal& t = *Get(*m, "t")->attrs().literal;
  ASSERT_TRUE(t.IsTuple());
  ASSERT_EQ(t.elements.size(), 2u);
  EXPECT_EQ(Bits<float>(*t.elements[0].array), 2.5f);
  EXPECT_EQ(Bits<int32_t>(*t.elements[1].array, 1), 2);
  EXPECT_EQ(Bits<float>(Get(*m, "r")->literal()), 0.1f);
}

TEST(Parser, DesugarsAsyncStartUpdateDone) {
  auto m = ParseOrFail(R"(ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  s = ((f32[4], f32[4]), f32[4], u32[]) add-start(a, b), async_execution_thread="t1", sharding={replicated}
  u = ((f32[4], f32[4]), f32[4], u32[]) add-update(s)
  ROOT d = f32[4] add-done(u)
})");
  ASSERT_NE(m, nullptr);
  const Instruction* s = Get(*m, "s");
  EXPECT_EQ(s->opcode(), Opcode::kAsyncStart);
  const Computation* w = s->async_wrapped_computation();
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->is_async_sugar());
  EXPECT_EQ(w->root()->opcode(), Opcode::kAdd);
  EXPECT_EQ(w->root()->shape().ToString(), "f32[4]");
  EXPECT_EQ(w->num_parameters(), 2);
  EXPECT_EQ(s->attrs().async_execution_thread, "t1");
  EXPECT_TRUE(s->sharding()->IsReplicated());
  EXPECT_EQ(Get(*m, "u")->opcode(), Opcode::kAsyncUpdate);
  EXPECT_EQ(Get(*m, "u")->async_wrapped_computation(), w);
  EXPECT_EQ(Get(*m, "d")->opcode(), Opcode::kAsyncDone);
  EXPECT_EQ(Get(*m, "d")->async_wrapped_computation(), w);
}

TEST(Parser, InfersShapesOfNestedAnonymousOperands) {
  auto m = ParseOrFail(R"(ENTRY test {
  ROOT root = add(f32[10] parameter(0), multiply(f32[10] parameter(1), f32[10] parameter(2)))
})");
  ASSERT_NE(m, nullptr);
  const Instruction* root = m->entry()->root();
  EXPECT_EQ(root->shape().ToString(), "f32[10]");
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kMultiply);
  EXPECT_EQ(root->operand(1)->shape().ToString(), "f32[10]");
  EXPECT_EQ(m->entry()->num_parameters(), 3);
  EXPECT_EQ(m->entry()->instruction_count(), 5);
}

TEST(Parser, KeepsShardingMetadataFrontendAttributesAndVerbatimAttributes) {
  auto m = ParseOrFail(R"(HloModule m, num_partitions=4, replica_count=2, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  p = f32[8,2]{1,0} parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  c = f32[8,2] custom-call(p), custom_call_target="Sharding", custom_call_has_side_effect=true, api_version=API_VERSION_TYPED_FFI, backend_config={"a": 1}, frontend_attributes={_xla_x="1",b="two"}, metadata={op_name="jit(f)/mul" source_line=7}
  t = token[] after-all()
  r = (f32[<=4,2], token[]) recv(t), channel_id=5, is_host_transfer=true, control-predecessors={c}
  ROOT n = f32[8,2] negate(c)
})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->config().num_partitions, 4);
  EXPECT_EQ(m->config().replica_count, 2);
  ASSERT_EQ(m->config().other.size(), 1u);
  EXPECT_EQ(m->config().other[0].first, "input_output_alias");
  const Instruction* p = Get(*m, "p");
  ASSERT_TRUE(p->has_sharding());
  EXPECT_EQ(p->sharding()->TileCounts(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(p->sharding()->ReplicationFactor(), 2);
  const Attributes& c = Get(*m, "c")->attrs();
  EXPECT_EQ(c.custom_call_target, "Sharding");
  EXPECT_TRUE(c.custom_call_has_side_effect);
  EXPECT_EQ(c.api_version, "API_VERSION_TYPED_FFI");
  EXPECT_EQ(c.backend_config, "{\"a\": 1}");
  EXPECT_EQ(c.metadata, "op_name=\"jit(f)/mul\" source_line=7");
  ASSERT_TRUE(c.frontend_attributes.has_value());
  EXPECT_EQ((*c.frontend_attributes)[1], (std::pair<std::string, std::string>{"b", "two"}));
  const Instruction* r = Get(*m, "r");
  EXPECT_TRUE(r->shape().tuple_shape(0).is_dynamic_dim(0));
  EXPECT_FALSE(r->shape().tuple_shape(0).is_dynamic_dim(1));
  EXPECT_EQ(r->shape().tuple_shape(0).dim(0), 4);
  EXPECT_EQ(*r->attrs().Other("is_host_transfer"), "true");
  EXPECT_EQ(r->control_predecessors(), std::vector<Instruction*>{m->entry()->GetInstruction("c")});
}

TEST(Parser, ParseShapeTextReadsTuplesAndRejectsTrailingText) {
  auto s = ParseShapeText("(f32[2,3]{0,1}, s32[], token[])");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->tuple_size(), 3);
  EXPECT_EQ(s->tuple_shape(0).layout()->minor_to_major, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(s->tuple_shape(2).IsToken());
  EXPECT_FALSE(ParseShapeText("f32[2] x").ok());
}

}  // namespace
}  // namespace xs
