// CombineAllReduces: groups independent all-reduces of one kind in post order (see the header),
// then replaces each group by one tuple all-reduce and get-tuple-elements named as the members.
//
// Why closing a group keeps the program acyclic: a group stays open only while no later
// all-reduce depends on one of its members. A cycle between two combined groups needs a member
// of each to depend on a member of the other; whichever of the two dependent members came second
// in post order found the other group already closed (its dependence on that group's member, or
// the first dependent member's, closed it), so it could not have joined.
#include "xshard/passes/all_reduce_combine.h"

#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"

namespace xs {
namespace {

// The reduction of a to_apply that is one binary op of its two parameters, else nullopt.
std::optional<Opcode> Reduction(const Instruction& ar) {
  if (ar.calls().size() != 1) return std::nullopt;
  return CollectiveReduction(*ar.calls()[0].computation);
}

// What all-reduces must share to be combined.
using Key = std::tuple<std::vector<std::vector<int64_t>>, bool, bool, DType, Opcode>;

std::optional<Key> KeyOf(const Instruction& inst) {
  if (inst.opcode() != Opcode::kAllReduce || inst.operand_count() != 1 || !inst.shape().IsArray() ||
      !inst.operand(0)->shape().IsArray() || !inst.control_predecessors().empty() ||
      !inst.control_successors().empty() || inst.sharding().has_value()) {
    return std::nullopt;
  }
  std::optional<Opcode> op = Reduction(inst);
  if (!op) return std::nullopt;
  const Attributes& a = inst.attrs();
  std::vector<std::vector<int64_t>> groups;
  if (a.replica_groups) groups = a.replica_groups->Groups();
  return Key{std::move(groups), a.use_global_device_ids, a.channel_id.has_value(), inst.shape().dtype(), *op};
}

using Bits = std::vector<uint64_t>;

bool Intersects(const Bits& a, const Bits& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] & b[i]) return true;
  }
  return false;
}

struct Group {
  Key key;
  std::vector<Instruction*> members;
  int64_t bytes = 0;
  Bits bits;
  bool open = true;
};

// At most this many all-reduces of one computation are considered (the dependence bitsets grow
// with their count); the rest stay as they are.
constexpr size_t kMaxCandidates = 4096;

StatusOr<std::vector<CombinedAllReduce>> CombineIn(Computation& comp, int64_t max_bytes) {
  const std::vector<Instruction*> order = comp.MakeInstructionPostOrder();
  std::unordered_map<const Instruction*, size_t> index;
  std::vector<std::optional<Key>> keys(order.size());
  for (size_t i = 0; i < order.size() && index.size() < kMaxCandidates; ++i) {
    keys[i] = KeyOf(*order[i]);
    if (keys[i] && order[i]->operand(0)->shape().byte_size() <= max_bytes) index.emplace(order[i], index.size());
  }
  std::vector<CombinedAllReduce> out;
  if (index.size() < 2) return out;
  const size_t words = (index.size() + 63) / 64;
  // deps[i]: the candidates instruction order[i] depends on (itself included).
  std::unordered_map<const Instruction*, Bits> deps;
  std::vector<Group> groups;
  for (size_t i = 0; i < order.size(); ++i) {
    Instruction* inst = order[i];
    Bits d(words, 0);
    auto merge = [&](const Instruction* from) {
      auto it = deps.find(from);
      if (it == deps.end()) return;
      for (size_t w = 0; w < words; ++w) d[w] |= it->second[w];
    };
    for (const Instruction* o : inst->operands()) merge(o);
    for (const Instruction* p : inst->control_predecessors()) merge(p);
    auto at = index.find(inst);
    if (at != index.end()) {
      const Key& key = *keys[i];
      Group* open_of_key = nullptr;
      for (Group& g : groups) {
        if (g.open && Intersects(d, g.bits)) g.open = false;  // a dependent all-reduce closes it
        if (g.open && g.key == key) open_of_key = &g;
      }
      const int64_t bytes = inst->operand(0)->shape().byte_size();
      if (open_of_key != nullptr && open_of_key->bytes + bytes > max_bytes) {
        open_of_key->open = false;
        open_of_key = nullptr;
      }
      if (open_of_key == nullptr) {
        groups.push_back(Group{key, {}, 0, Bits(words, 0), true});
        open_of_key = &groups.back();
      }
      open_of_key->members.push_back(inst);
      open_of_key->bytes += bytes;
      open_of_key->bits[at->second / 64] |= uint64_t{1} << (at->second % 64);
      d[at->second / 64] |= uint64_t{1} << (at->second % 64);
    }
    deps.emplace(inst, std::move(d));
  }
  for (Group& g : groups) {
    if (g.members.size() < 2) continue;
    std::vector<Instruction*> operands;
    std::vector<Shape> shapes;
    for (Instruction* m : g.members) {
      operands.push_back(m->operand(0));
      shapes.push_back(m->shape());
    }
    const Instruction& first = *g.members.front();
    std::unique_ptr<Instruction> combined =
        Instruction::Create(Opcode::kAllReduce, Shape::Tuple(std::move(shapes)), std::move(operands), "all-reduce");
    combined->mutable_attrs() = first.attrs();
    combined->set_calls(first.calls());
    Instruction* c = comp.AddInstruction(std::move(combined));
    CombinedAllReduce record{comp.name(), c->name(), {}};
    for (size_t k = 0; k < g.members.size(); ++k) {
      Instruction* m = g.members[k];
      record.members.push_back(m->name());
      // The element takes the member's name: what read the member reads the same name.
      std::unique_ptr<Instruction> element = Instruction::Create(Opcode::kGetTupleElement, m->shape(), {c});
      element->mutable_attrs().tuple_index = static_cast<int64_t>(k);
      m->ReplaceAllUsesWith(element.get());
      const std::string name = m->name();
      XS_RETURN_IF_ERROR(comp.RemoveInstruction(m));
      element->set_name(name);
      comp.AddInstruction(std::move(element));
    }
    out.push_back(std::move(record));
  }
  return out;
}

}  // namespace

StatusOr<std::vector<CombinedAllReduce>> CombineAllReduces(Module& module, int64_t max_bytes) {
  std::vector<CombinedAllReduce> out;
  if (max_bytes <= 0) return out;
  for (Computation* c : module.computations()) {
    XS_ASSIGN_OR_RETURN(std::vector<CombinedAllReduce> done, CombineIn(*c, max_bytes));
    for (CombinedAllReduce& r : done) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace xs
