// The tile program of one fusion group: values (inputs read in place, scalars filled once,
// uniform values computed once per thread, scratch tiles, outputs written in place), the ops of
// the prologue and of every tile, and the fused step that runs it (executable_fusion.cc).
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "xshard/exec/executable_plan.h"
#include "xshard/exec/fusion_plan.h"
#include "xshard/kernels/elementwise.h"

namespace xs {

// RunFusedLoop (executable_fusion.cc), timed into the trace under XSHARD_TRACE.
RunFn FusedLoopRunFn();  // executable_trace.cc

namespace {

// Builds the tile program and the fused step of one group (members in post order).
class LoopBuilder {
 public:
  LoopBuilder(const FusionGroup& g, const std::unordered_map<const Instruction*, int>& slot,
              const std::unordered_map<const Instruction*, const Step*>& step_of)
      : g_(g), slot_(slot), step_of_(step_of), members_(g.members.begin(), g.members.end()) {}

  Step Build() {
    loop_ = std::make_shared<FusedLoop>();
    loop_->dims = g_.dims;
    loop_->count = 1;
    for (int64_t d : g_.dims) loop_->count *= d;
    loop_->members = static_cast<int64_t>(g_.members.size());
    for (const Instruction* m : g_.members) FindRotate(*m);
    for (const Instruction* m : g_.members) AddMember(*m);
    if (g_.reduce != nullptr) {
      AddReduce(*g_.reduce);
    } else {
      // The primary output is the last member; it may take over a dying input of its type.
      const Instruction* primary = g_.members.back();
      step_.inst = primary;
      step_.out = slot_.at(primary);
      step_.count = loop_->count;
      // Prefer an input some step made over a parameter (only a donated one can be taken over)
      // or a constant: `w - 0.01 * g` then runs in g's dying buffer.
      int donor = -1;
      for (size_t i = 0; i < step_.operands.size(); ++i) {
        const Shape& s = input_insts_[i]->shape();
        if (s.dtype() != primary->shape().dtype() || s.dims() != primary->shape().dims()) continue;
        // A row gather, a broadcast (which may transpose: dimensions={1,0}) or a concatenate's
        // piece reads it at other positions than the tile's.
        if (random_access_.count(static_cast<int>(i)) || broadcast_.count(static_cast<int>(i))) continue;
        const Opcode op = input_insts_[i]->opcode();
        const bool made = op != Opcode::kParameter && op != Opcode::kConstant;
        if (donor < 0 || made) donor = static_cast<int>(i);
        if (made) break;
      }
      loop_->donor = donor;
      step_.inplace_operand = donor;
      AssignOtherDonors(donor);
    }
    AssignScratchBuffers();
    int64_t bytes = 0;
    for (const Instruction* in : input_insts_) bytes += in->shape().byte_size();
    for (const FusedOutput& o : loop_->outputs) bytes += o.inst->shape().byte_size();
    bytes += step_.inst->shape().byte_size();
    step_.gated = bytes >= (int64_t{1} << 20);
    // The loop writes every element of its result (the primary output, or the reduce's result,
    // which starts as the init value): the planner gives it an arena buffer.
    step_.writes_result_buffer = true;
    step_.run = FusedLoopRunFn();
    step_.SetPayload(FusedPayload{loop_, {}});
    return std::move(step_);
  }

 private:
  int NewValue(FusedValueKind kind, DType dtype) {
    FusedValue v;
    v.kind = kind;
    v.esize = static_cast<int>(DTypeSize(dtype));
    loop_->max_esize = std::max(loop_->max_esize, v.esize);
    // Scratch tiles get their buffers once the body is known (AssignScratchBuffers).
    if (kind == FusedValueKind::kUniform || kind == FusedValueKind::kScalarInput) v.buffer = loop_->num_buffers++;
    loop_->values.push_back(v);
    return static_cast<int>(loop_->values.size()) - 1;
  }

  // Scratch tiles share buffers: a value's buffer is free again after the last op that reads it,
  // so a long chain keeps a few tiles live instead of one per member (jax.random.normal's erf_inv
  // loop has 48 members: 96 KiB of f32 tiles, three times L1, with one buffer each). An op never
  // writes a buffer one of its own operands is in: kernels that change the element size
  // (converts) would overwrite elements they have not read yet.
  static bool ReadsValues(const FusedOp& op) {
    return op.kind == FusedOpKind::kUnary || op.kind == FusedOpKind::kBinary || op.kind == FusedOpKind::kTernary ||
           op.kind == FusedOpKind::kCopy || op.kind == FusedOpKind::kRotateLeft;
  }

  // The outputs other than the primary one may each write over a dying input of their dtype and
  // dims too, a different one each (RunFusedLoop takes it over when nothing else holds it): the
  // state of a while loop updated in place (threefry's two counters, an optimizer's weights and
  // moments), which otherwise gets fresh pages every iteration. Safe when no op reads the input
  // after the output is written: streamed outputs are written after all of a tile's ops, the
  // others as their op runs. Inputs a broadcast or row gather reads are never taken.
  void AssignOtherDonors(int primary_donor) {
    const std::vector<FusedValue>& values = loop_->values;
    const size_t inputs = step_.operands.size();
    std::vector<int> last_read(inputs, -1);
    for (size_t k = 0; k < loop_->body.size(); ++k) {
      const FusedOp& op = loop_->body[k];
      if (!ReadsValues(op)) continue;
      for (int v : op.in) {
        if (v >= 0 && values[v].kind == FusedValueKind::kInput) last_read[values[v].input] = static_cast<int>(k);
      }
    }
    const bool streams = StreamsOutputs(*loop_);
    std::vector<char> taken(inputs, 0);
    if (primary_donor >= 0) taken[primary_donor] = 1;
    for (size_t o = 0; o + 1 < loop_->outputs.size(); ++o) {
      FusedOutput& out = loop_->outputs[o];
      int writer = -1;
      for (size_t k = 0; k < loop_->body.size(); ++k) {
        if (loop_->body[k].out == out.value) writer = static_cast<int>(k);
      }
      const Shape& want = out.inst->shape();
      for (size_t i = 0; i < inputs && writer >= 0; ++i) {
        const Instruction* in = input_insts_[i];
        if (taken[i] || random_access_.count(static_cast<int>(i)) || broadcast_.count(static_cast<int>(i)) ||
            in->opcode() == Opcode::kConstant || in->shape().dtype() != want.dtype() ||
            in->shape().dims() != want.dims() || (!streams && last_read[i] > writer)) {
          continue;
        }
        out.donor = static_cast<int>(i);
        taken[i] = 1;
        break;
      }
    }
  }

  void AssignScratchBuffers() {
    const std::vector<FusedValue>& values = loop_->values;
    const int end = static_cast<int>(loop_->body.size());
    std::vector<int> last_use(values.size(), -1);
    auto reads_values = [](const FusedOp& op) { return ReadsValues(op); };
    for (int i = 0; i < end; ++i) {
      const FusedOp& op = loop_->body[i];
      if (!reads_values(op)) continue;
      for (int v : op.in) {
        if (v >= 0) last_use[v] = i;
      }
    }
    if (loop_->has_reduce) last_use[loop_->reduce.value] = end;  // read after the tile's ops
    std::vector<int> free_buffers;
    for (int i = 0; i < end; ++i) {
      const FusedOp& op = loop_->body[i];
      FusedValue& out = loop_->values[op.out];
      if (out.kind == FusedValueKind::kScratch && out.buffer < 0) {
        if (free_buffers.empty()) {
          out.buffer = loop_->num_buffers++;
        } else {
          out.buffer = free_buffers.back();
          free_buffers.pop_back();
        }
        if (last_use[op.out] < i) last_use[op.out] = i;  // never read: free after this op
      }
      std::vector<int> dying;
      if (reads_values(op)) dying.assign(std::begin(op.in), std::end(op.in));
      dying.push_back(op.out);
      std::sort(dying.begin(), dying.end());
      dying.erase(std::unique(dying.begin(), dying.end()), dying.end());
      for (int v : dying) {
        if (v >= 0 && values[v].kind == FusedValueKind::kScratch && last_use[v] == i) {
          free_buffers.push_back(values[v].buffer);
        }
      }
    }
  }

  int InputIndex(const Instruction* inst) {
    auto it = input_index_.find(inst);
    if (it != input_index_.end()) return it->second;
    const int k = static_cast<int>(step_.operands.size());
    step_.operands.push_back(slot_.at(inst));
    input_insts_.push_back(inst);
    input_index_[inst] = k;
    return k;
  }

  bool Uniform(int v) const {
    const FusedValueKind k = loop_->values[v].kind;
    return k == FusedValueKind::kScalarInput || k == FusedValueKind::kUniform;
  }

  // The value of operand `o` of a member.
  int ValueOf(const Instruction* o) {
    auto it = value_of_.find(o);
    if (it != value_of_.end()) return it->second;
    int v;
    if (o->shape().rank() == 0) {
      v = NewValue(FusedValueKind::kScalarInput, o->shape().dtype());
      loop_->values[v].input = InputIndex(o);
      FusedOp fill;
      fill.kind = FusedOpKind::kFill;
      fill.in[0] = loop_->values[v].input;
      fill.out = v;
      fill.inst = o;
      loop_->prologue.push_back(fill);
    } else if (!members_.count(o) && IsFusionGenerator(*o)) {
      v = Generate(*o);
    } else {
      XS_CHECK(!members_.count(o), "fused member '", o->name(), "' used before it is computed");
      v = NewValue(FusedValueKind::kInput, o->shape().dtype());
      loop_->values[v].input = InputIndex(o);
    }
    value_of_[o] = v;
    return v;
  }

  int Generate(const Instruction& gen) {
    FusedOp op;
    if (gen.opcode() == Opcode::kBroadcast && gen.operand(0)->shape().rank() == 0) {
      return ValueOf(gen.operand(0));  // a scalar broadcast stays a scalar
    }
    const int v = NewValue(FusedValueKind::kScratch, gen.shape().dtype());
    const std::vector<int64_t>& dims = g_.dims;
    if (gen.opcode() == Opcode::kIota || gen.opcode() == Opcode::kSlice) {
      // A slice of an iota takes element start + stride * i of the iota's dim.
      const Instruction& iota = gen.opcode() == Opcode::kSlice ? *gen.operand(0) : gen;
      const int64_t d = *iota.attrs().iota_dimension;
      op.kind = FusedOpKind::kIota;
      op.size = dims[d];
      for (size_t k = d + 1; k < dims.size(); ++k) op.inner *= dims[k];
      if (&iota != &gen) {
        op.start = (*gen.attrs().slice)[d].start;
        op.step = (*gen.attrs().slice)[d].stride;
      }
      if (gen.shape().dtype() != DType::kS64) {
        op.unary = *kernels::FindConvertKernel(DType::kS64, gen.shape().dtype());
      }
    } else if (gen.opcode() == Opcode::kConcatenate || gen.opcode() == Opcode::kReshape) {
      const Instruction& c = gen.opcode() == Opcode::kReshape ? *gen.operand(0) : gen;
      op.kind = FusedOpKind::kConcat;
      op.bounds.push_back(0);
      for (const Instruction* piece : c.operands()) {
        op.pieces.push_back(InputIndex(piece));
        broadcast_.insert(op.pieces.back());  // read at other offsets: never a donor
        op.bounds.push_back(op.bounds.back() + piece->shape().num_elements());
      }
    } else if (gen.opcode() == Opcode::kGather) {
      const Shape& table = gen.operand(0)->shape();
      op.kind = FusedOpKind::kRowGather;
      op.in[0] = InputIndex(gen.operand(0));
      op.in[1] = InputIndex(gen.operand(1));
      random_access_.insert(op.in[0]);
      random_access_.insert(op.in[1]);
      op.size = table.dim(0);
      op.inner = table.num_elements() / table.dim(0);
    } else {
      const Shape& in = gen.operand(0)->shape();
      op.kind = FusedOpKind::kGather;
      op.in[0] = InputIndex(gen.operand(0));
      broadcast_.insert(op.in[0]);
      op.strides.assign(dims.size(), 0);
      std::vector<int64_t> in_strides(in.rank(), 1);
      for (int k = in.rank() - 2; k >= 0; --k) in_strides[k] = in_strides[k + 1] * in.dim(k + 1);
      for (size_t k = 0; k < gen.dimensions().size(); ++k) {
        op.strides[gen.dimensions()[k]] = in_strides[k];
      }
      int64_t period = 1;
      int k = static_cast<int>(dims.size());
      while (k > 0 && op.strides[k - 1] == period) period *= dims[--k];
      bool periodic = period > 1;
      for (int d = 0; d < k && periodic; ++d) periodic = op.strides[d] == 0;
      if (periodic) op.period = period;
    }
    op.out = v;
    op.inst = &gen;
    loop_->body.push_back(op);
    return v;
  }

  bool IsOutput(const Instruction& m) const {
    if (m.IsRoot() || (g_.reduce == nullptr && &m == g_.members.back())) return true;
    for (const Instruction* u : m.users()) {
      if (!members_.count(u) && u != g_.reduce) return true;
    }
    return false;
  }

  void AddReduce(const Instruction& r) {
    const Step& s = *step_of_.at(&r);
    FusedReduce& fr = loop_->reduce;
    loop_->has_reduce = true;
    fr.inst = &r;
    fr.fn = *kernels::FindReduceRange(s.combine().combine, r.operand(0)->shape().dtype());
    fr.value = ValueOf(r.operand(0));
    fr.init = InputIndex(r.operand(1));
    const std::vector<int64_t>& dims = g_.dims;
    std::vector<char> reduced(dims.size(), 0);
    for (int64_t d : r.dimensions()) reduced[d] = 1;
    fr.ostride.assign(dims.size(), 0);
    int64_t stride = 1;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (reduced[d]) continue;
      fr.ostride[d] = stride;
      stride *= dims[d];
    }
    fr.blocks = kernels::PlanColumnBlocks(s.combine().combine, r.operand(0)->shape().dtype(), dims, fr.ostride);
    step_.inst = &r;
    step_.out = slot_.at(&r);
    step_.count = r.shape().num_elements();
  }

  // The scalar value of a rank-0 integer constant, as unsigned bits.
  static std::optional<uint64_t> ConstantBits(const Instruction* c) {
    if (c->opcode() != Opcode::kConstant || c->shape().rank() != 0 || !IsInteger(c->shape().dtype()))
      return std::nullopt;
    uint64_t bits = 0;
    std::memcpy(&bits, c->literal().data(), static_cast<size_t>(DTypeSize(c->shape().dtype())));
    return bits;
  }

  // `a` and `b` are broadcasts of scalars with b = bits - a, wrapping: b = subtract(constant(bits),
  // s) of a = broadcast(s) (threefry in a loop), or two constants (rounds written out).
  static bool Complementary(const Instruction* a, const Instruction* b, int bits) {
    if (a->opcode() != Opcode::kBroadcast || b->opcode() != Opcode::kBroadcast) return false;
    const Instruction* sa = a->operand(0);
    const Instruction* sb = b->operand(0);
    if (sa->shape().rank() != 0 || sb->shape().rank() != 0) return false;
    const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    if (sb->opcode() == Opcode::kSubtract && sb->operand(1) == sa) {
      const std::optional<uint64_t> w = ConstantBits(sb->operand(0));
      return w && *w == static_cast<uint64_t>(bits);
    }
    const std::optional<uint64_t> ka = ConstantBits(sa), kb = ConstantBits(sb);
    return ka && kb && ((*ka + *kb) & mask) == static_cast<uint64_t>(bits);
  }

  // or(shift-left(x, a), shift-right-logical(x, b)) with b = bits - a, whose shifts are members
  // read by the or alone: JAX's rotate_left (threefry's rounds). It becomes one kRotateLeft op and
  // the shifts are not computed: 5 tile ops of a round are 3.
  void FindRotate(const Instruction& m) {
    if (m.opcode() != Opcode::kOr || m.operand_count() != 2 || !m.shape().IsArray()) return;
    const DType t = m.shape().dtype();
    if (t != DType::kS32 && t != DType::kU32 && t != DType::kS64 && t != DType::kU64) return;
    const Instruction* shl = m.operand(0);
    const Instruction* shr = m.operand(1);
    if (shl->opcode() == Opcode::kShiftRightLogical) std::swap(shl, shr);
    if (shl->opcode() != Opcode::kShiftLeft || shr->opcode() != Opcode::kShiftRightLogical || shl == shr) return;
    if (shl->operand(0) != shr->operand(0)) return;
    for (const Instruction* part : {shl, shr}) {
      if (!members_.count(part) || IsOutput(*part) || part->users().size() != 1) return;
    }
    if (!Complementary(shl->operand(1), shr->operand(1), static_cast<int>(DTypeSize(t) * 8))) return;
    StatusOr<kernels::BinaryKernel> k = kernels::FindRotateLeftKernel(t);
    if (!k.ok()) return;
    rotates_[&m] = {shl->operand(0), shl->operand(1), *k};
    rotate_parts_.insert(shl);
    rotate_parts_.insert(shr);
  }

  void AddMember(const Instruction& m) {
    if (rotate_parts_.count(&m)) return;  // computed by its rotate
    const Step& s = *step_of_.at(&m);
    std::vector<int> ins;
    const auto rotate = rotates_.find(&m);
    if (rotate != rotates_.end()) {
      ins = {ValueOf(rotate->second.x), ValueOf(rotate->second.amount)};
    } else {
      for (const Instruction* o : m.operands()) ins.push_back(ValueOf(o));
    }
    const bool output = IsOutput(m);
    bool uniform = true;
    for (int v : ins) uniform &= Uniform(v);
    FusedOp op;
    switch (s.scalar_kind) {
      case ScalarKind::kUnary: op.kind = FusedOpKind::kUnary; op.unary = s.elementwise().unary; break;
      case ScalarKind::kBinary: op.kind = FusedOpKind::kBinary; op.binary = s.elementwise().binary; break;
      case ScalarKind::kTernary: op.kind = FusedOpKind::kTernary; op.ternary = s.elementwise().ternary; break;
      default:  // copy / same-type convert share their operand's value
        if (!output) {
          value_of_[&m] = ins[0];
          return;
        }
        op.kind = FusedOpKind::kCopy;
        break;
    }
    if (rotate != rotates_.end()) {
      op.kind = FusedOpKind::kRotateLeft;
      op.binary = rotate->second.kernel;
    }
    for (size_t i = 0; i < ins.size(); ++i) op.in[i] = ins[i];
    op.inst = &m;
    const DType t = m.shape().dtype();
    if (uniform) {
      op.out = NewValue(FusedValueKind::kUniform, t);
      loop_->prologue.push_back(op);
      value_of_[&m] = op.out;
      if (!output) return;
      // A uniform output: copied out of its tile at every tile.
      op = FusedOp{};
      op.kind = FusedOpKind::kCopy;
      op.in[0] = value_of_[&m];
      op.inst = &m;
    }
    if (output) {
      op.out = NewValue(FusedValueKind::kOutput, t);
      loop_->values[op.out].output = static_cast<int>(loop_->outputs.size());
      loop_->outputs.push_back({op.out, slot_.at(&m), &m});
    } else {
      op.out = NewValue(FusedValueKind::kScratch, t);
    }
    loop_->body.push_back(op);
    value_of_[&m] = op.out;
  }

  const FusionGroup& g_;
  const std::unordered_map<const Instruction*, int>& slot_;
  const std::unordered_map<const Instruction*, const Step*>& step_of_;
  const std::unordered_set<const Instruction*> members_;
  std::shared_ptr<FusedLoop> loop_;
  Step step_;
  std::vector<const Instruction*> input_insts_;
  std::unordered_map<const Instruction*, int> input_index_;
  std::unordered_set<int> random_access_;  // operands a row gather reads out of order: never donors
  std::unordered_set<int> broadcast_;      // operands a broadcast or concatenate reads: never donors
  struct Rotate {
    const Instruction* x;
    const Instruction* amount;
    kernels::BinaryKernel kernel;
  };
  std::unordered_map<const Instruction*, Rotate> rotates_;  // or members that are rotations
  std::unordered_set<const Instruction*> rotate_parts_;     // their shifts, not computed
  std::unordered_map<const Instruction*, int> value_of_;
};

}  // namespace

bool StreamsOutputs(const FusedLoop& f) {
  if (f.has_reduce) return false;
  for (const FusedOutput& o : f.outputs) {
    if (f.count * DTypeSize(o.inst->shape().dtype()) < kernels::kStreamMinBytes) return false;
  }
  return true;
}

Step BuildFusedStep(const FusionGroup& g, const std::unordered_map<const Instruction*, int>& slot,
                    const std::unordered_map<const Instruction*, const Step*>& step_of) {
  return LoopBuilder(g, slot, step_of).Build();
}

}  // namespace xs
