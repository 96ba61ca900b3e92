// The executor's memory plan: which buffers each value may reference (aliases through tuple,
// get-tuple-element, reshape, copy, calls, loops), their live ranges in steps, and their offsets
// in the computation's arena region (buffer_assignment.h). The entry's results are planned in the
// arena too, alive to the end (the caller's views keep that arena from the next run); a callee's
// results get owned buffers, as its region is reused. Also the run-time side: the arena pool and
// the buffer helpers (NewArray, AdoptArray, OwnedSlot).
#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "xshard/exec/buffer_assignment.h"
#include "xshard/core/allocation_failure.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/exec/fusion_plan.h"

namespace xs {
namespace {

void Union(std::vector<int>& into, const std::vector<int>& from) {
  into.insert(into.end(), from.begin(), from.end());
}

void SortUnique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

void PlanMemory(ComputationPlan& plan, bool root_in_arena) {
  const int n = static_cast<int>(plan.steps.size());
  // Buffer ids: 0..n-1 the steps' results, n.. the extra outputs of multi-output fused loops.
  struct Extra {
    int step, output;
  };
  std::vector<Extra> extras;
  for (int k = 0; k < n; ++k) {
    Step& st = plan.steps[k];
    if (st.payload_kind() != PayloadKind::kFused) continue;
    FusedPayload& fused = st.MutablePayload<FusedPayload>();
    fused.output_offsets.assign(fused.loop->outputs.size(), -1);
    for (size_t i = 0; i < fused.loop->outputs.size(); ++i) {
      const FusedOutput& o = fused.loop->outputs[i];
      if (o.slot != st.out && o.slot >= 0 && o.inst->shape().IsArray()) extras.push_back({k, static_cast<int>(i)});
    }
  }
  const int total = n + static_cast<int>(extras.size());
  auto shape_of = [&](int id) -> const Shape& {
    if (id < n) return plan.steps[id].inst->shape();
    const Extra& e = extras[id - n];
    return plan.steps[e.step].fused().loop->outputs[e.output].inst->shape();
  };
  auto first_of = [&](int id) { return id < n ? id : extras[id - n].step; };
  // bufs[slot]: the buffer ids the slot's value may reference; for tuple steps, elems[slot]
  // holds the same per element (so get-tuple-element of a tuple op stays precise).
  std::vector<std::vector<int>> bufs(plan.num_slots);
  std::vector<std::vector<std::vector<int>>> elems(plan.num_slots);
  std::vector<char> candidate(total, 0);
  for (int id = n; id < total; ++id) {
    const Extra& e = extras[id - n];
    bufs[plan.steps[e.step].fused().loop->outputs[e.output].slot] = {id};
    candidate[id] = 1;
  }
  for (int k = 0; k < n; ++k) {
    const Step& st = plan.steps[k];
    const Instruction& inst = *st.inst;
    std::vector<int>& b = bufs[st.out];
    if (st.writes_result_buffer && inst.shape().IsArray()) {
      b = {k};
      candidate[k] = 1;
    } else if (ProducesFreshResult(inst.opcode())) {
      b.clear();
    } else if (inst.opcode() == Opcode::kTuple) {
      for (int o : st.operands) {
        elems[st.out].push_back(bufs[o]);
        Union(b, bufs[o]);
      }
    } else if (inst.opcode() == Opcode::kGetTupleElement && !st.operands.empty() &&
               inst.tuple_index() >= 0 &&
               inst.tuple_index() < static_cast<int64_t>(elems[st.operands[0]].size())) {
      b = elems[st.operands[0]][inst.tuple_index()];
    } else {
      for (int o : st.operands) Union(b, bufs[o]);
    }
    SortUnique(b);
  }
  // Live ranges: a buffer lives from its step to the last step reading any value holding it.
  std::vector<int> last(total);
  for (int k = 0; k < total; ++k) last[k] = first_of(k);
  for (int t = 0; t < n; ++t) {
    for (int o : plan.steps[t].operands) {
      for (int b : bufs[o]) last[b] = std::max(last[b], t);
    }
  }
  // The operand buffer step k may overwrite in place: the only buffer of its in-place operand,
  // dying at k, read by no other operand of k. -1: none.
  auto inplace_source = [&](int k) {
    const Step& st = plan.steps[k];
    if (!st.writes_result_buffer || st.inplace_operand < 0 ||
        st.inplace_operand >= static_cast<int>(st.operands.size())) {
      return -1;
    }
    const int o = st.operands[st.inplace_operand];
    if (bufs[o].size() != 1) return -1;
    const int b = bufs[o][0];
    // Same bytes and (elementwise) the same count, so the same element size: each element is
    // read before it is overwritten. Sizes that only match after alignment do not qualify.
    const Shape& from = shape_of(b);
    if (last[b] != k || !from.IsArray() || from.byte_size() != st.inst->shape().byte_size() ||
        from.num_elements() != st.inst->shape().num_elements()) {
      return -1;
    }
    for (int other : st.operands) {
      if (other != o && std::binary_search(bufs[other].begin(), bufs[other].end(), b)) return -1;
    }
    return b;
  };
  // Buffers that may reach the root are the caller's. In the entry (root_in_arena) they stay in
  // the arena, alive past the last step. Otherwise they are owned, never in the arena, and so is
  // a chain of in-place operands leading to them (x1 = f(x0), ..., root = g(xn) then runs in one
  // owned buffer, as ResultBuffer overwrites dying owned operands).
  if (root_in_arena && plan.root_slot >= 0) {
    for (int b : bufs[plan.root_slot]) last[b] = n;
  }
  std::vector<char> owned(total, 0);
  if (!root_in_arena && plan.root_slot >= 0) {
    for (int b : bufs[plan.root_slot]) owned[b] = 1;
  }
  for (int k = total - 1; k >= 0; --k) {
    if (!owned[k]) continue;
    candidate[k] = 0;
    const int b = k < n ? inplace_source(k) : -1;
    if (b >= 0 && candidate[b]) owned[b] = 1;
  }
  // Values under one alignment unit (scalars, tiny vectors) stay owned: malloc serves them from
  // its heap without page faults, and a 64-byte slot each would only inflate the arena.
  for (int k = 0; k < total; ++k) {
    if (candidate[k] && shape_of(k).byte_size() < kBufferAlignment) candidate[k] = 0;
  }
  // A result written over a dying owned operand (a kernel's fresh buffer, or a result already
  // kept out of the arena) needs no arena memory: ResultBuffer takes the operand's buffer.
  std::vector<int> def(plan.num_slots, -1), last_reader(plan.num_slots, -1);
  for (int k = 0; k < n; ++k) {
    def[plan.steps[k].out] = k;
    for (int o : plan.steps[k].operands) last_reader[o] = k;
  }
  std::vector<char> owned_value(n, 0);
  for (int k = 0; k < n; ++k) {
    const Step& st = plan.steps[k];
    const Opcode op = st.inst->opcode();
    if (st.writes_result_buffer ? !candidate[k] : (ProducesFreshResult(op) && op != Opcode::kConstant)) {
      owned_value[k] = 1;
      continue;
    }
    if (!candidate[k] || st.inplace_operand < 0 || st.inplace_operand >= static_cast<int>(st.operands.size())) {
      continue;
    }
    const int o = st.operands[st.inplace_operand];
    const int d = def[o];
    if (d < 0 || !owned_value[d] || last_reader[o] != k || !st.inst->shape().IsArray()) continue;
    const Shape& from = plan.steps[d].inst->shape();
    if (from.IsArray() && from.dtype() == st.inst->shape().dtype() && from.dims() == st.inst->shape().dims()) {
      candidate[k] = 0;
      owned_value[k] = 1;
    }
  }
  std::vector<BufferInterval> intervals;
  std::vector<int> interval_of(total, -1), scratch_of(n, -1);
  for (int k = 0; k < total; ++k) {
    if (!candidate[k]) continue;
    interval_of[k] = static_cast<int>(intervals.size());
    intervals.push_back({shape_of(k).byte_size(), first_of(k), last[k], -1});
  }
  for (int k = 0; k < n; ++k) {
    Step& st = plan.steps[k];
    if (interval_of[k] >= 0) {
      const int b = inplace_source(k);
      if (b >= 0 && interval_of[b] >= 0) intervals[interval_of[k]].reuse = interval_of[b];
    }
    int64_t callee_bytes = 0;
    for (const ComputationPlan* c : st.callees) callee_bytes = std::max(callee_bytes, c->arena_bytes);
    if (callee_bytes > 0) {
      scratch_of[k] = static_cast<int>(intervals.size());
      intervals.push_back({callee_bytes, k, k, -1});
    }
  }
  const BufferAssignment a = AssignBuffers(intervals);
  for (int k = 0; k < n; ++k) {
    Step& st = plan.steps[k];
    st.arena_offset = interval_of[k] >= 0 ? a.offsets[interval_of[k]] : -1;
    st.callee_offset = scratch_of[k] >= 0 ? a.offsets[scratch_of[k]] : 0;
  }
  for (int id = n; id < total; ++id) {
    const Extra& e = extras[id - n];
    const int64_t offset = interval_of[id] >= 0 ? a.offsets[interval_of[id]] : -1;
    plan.steps[e.step].MutablePayload<FusedPayload>().output_offsets[e.output] = offset;
  }
  plan.arena_bytes = a.arena_bytes;
}

std::shared_ptr<Array> NewArray(const Shape& shape, RunContext& ctx) {
  const Step* step = ctx.step;
  if (step != nullptr && step->writes_result_buffer && !ctx.result_given) {
    const Shape& want = step->inst->shape();
    if (want.IsArray() && shape.dtype() == want.dtype() && shape.dims() == want.dims()) {
      ctx.result_given = true;
      if (step->arena_offset >= 0 && ctx.frame_arena != nullptr) {
        return std::make_shared<Array>(Array::View(shape.WithoutLayout(), ctx.frame_arena + step->arena_offset));
      }
      return AdoptArray(Array::Uninitialized(shape.WithoutLayout()), ctx);
    }
  }
  const int64_t bytes = shape.byte_size();
  ctx.memory.Add(bytes);
  MemoryCounter* counter = &ctx.memory;
  return std::shared_ptr<Array>(new Array(shape.WithoutLayout()), [counter, bytes](Array* a) {
    counter->Sub(bytes);
    delete a;
  });
}

void SetArray(const Step& step, Frame& frame, RunContext& ctx, Array a) {
  frame.slots[step.out] = OwnedSlot(AdoptArray(std::move(a), ctx));
}

void SetTuple(const Step& step, Frame& frame, RunContext& ctx, std::vector<Array> arrays) {
  std::vector<Slot> elements;
  for (Array& a : arrays) elements.push_back(OwnedSlot(AdoptArray(std::move(a), ctx)));
  frame.slots[step.out] = TupleSlot(std::move(elements));
}

std::shared_ptr<Array> AdoptArray(Array array, RunContext& ctx) {
  const int64_t bytes = array.byte_size();
  ctx.memory.Add(bytes);
  MemoryCounter* counter = &ctx.memory;
  return std::shared_ptr<Array>(new Array(std::move(array)), [counter, bytes](Array* a) {
    counter->Sub(bytes);
    delete a;
  });
}

Slot OwnedSlot(std::shared_ptr<Array> array) {
  const bool owns = array != nullptr && array->owns_data();
  return Slot{std::move(array), nullptr, owns};
}

// A value of `s` whose arrays are zero-filled (tokens are empty tuples).
Slot ZeroSlot(const Shape& s, RunContext& ctx) {
  if (s.IsTuple()) {
    std::vector<Slot> e;
    for (const Shape& x : s.tuple_shapes()) e.push_back(ZeroSlot(x, ctx));
    return TupleSlot(std::move(e));
  }
  if (s.IsToken()) return TupleSlot({});
  return OwnedSlot(NewArray(s, ctx));
}

int64_t Executable::arena_bytes(bool fused) const {
  const Program& p = fused || program_->unfused == nullptr ? *program_ : *program_->unfused;
  return p.entry->arena_bytes;
}

std::shared_ptr<std::byte> Executable::LeaseArena(bool fused) const {
  const int64_t bytes = arena_bytes(fused);
  if (bytes == 0) return nullptr;
  std::byte* data = nullptr;
  {
    std::lock_guard<std::mutex> lock(arenas_->mu);
    std::vector<std::byte*>& free = arenas_->free[fused];
    if (!free.empty()) {
      data = free.back();
      free.pop_back();
    }
  }
  if (data == nullptr) {
    data = static_cast<std::byte*>(AllocateBuffer(static_cast<size_t>(bytes)));
    if (data == nullptr) throw AllocationFailure(bytes, "the executor's arena");
  }
  // The pool outlives the Executable while a result still views one of its arenas.
  std::shared_ptr<ArenaPool> pool = arenas_;
  return std::shared_ptr<std::byte>(data, [pool, fused](std::byte* p) {
    std::lock_guard<std::mutex> lock(pool->mu);
    pool->free[fused].push_back(p);
  });
}

}  // namespace xs
