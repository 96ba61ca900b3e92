// The propagation engine's state: one node per instruction of the visited computations, one
// sharding state per array leaf, call edges and while / conditional sharing groups. Internal to
// propagation/ (the API is propagation.h).
#ifndef XSHARD_PROPAGATION_ENGINE_H_
#define XSHARD_PROPAGATION_ENGINE_H_

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "xshard/propagation/policy.h"
#include "xshard/propagation/propagation.h"
#include "xshard/rules/projection.h"
#include "xshard/rules/sharding_rule.h"

namespace xs::propagation_internal {

// The sharding state of one leaf.
struct Leaf {
  enum class Kind : uint8_t {
    kNone,    // nothing yet
    kAxes,    // a tiled / replicated (possibly partially manual) sharding on the TileMesh
    kManual,  // fully manual
    kOpaque,  // a sharding not expressible on the mesh (maximal, non-iota device order, ...)
  };
  Kind kind = Kind::kNone;
  AxesSharding axes;
  int opaque = -1;         // index into Engine::opaque_
  bool fixed = false;      // user annotation or closed entry parameter / output
  uint64_t open_dims = 0;  // dims of a fixed leaf that propagation may still refine
  bool refined = false;    // a fixed leaf whose open dims propagation filled
  ShardingOrigin origin;
};

struct Node {
  Instruction* inst = nullptr;
  OpShardingRule rule;
  OpPolicy policy;
  std::vector<Leaf> leaves;
  int non_root_users = 0;
  bool annotated = false;
  std::vector<int> operand_ids;  // node of each operand (-1 outside the visited computations)
  std::vector<int> user_ids;     // node of each user, in users() order
  std::vector<int> fwd_readers;  // nodes whose forward inference reads this node
  std::vector<int> bwd_readers;  // nodes whose backward inference reads this node
};

// Bit set of a list of mesh axes.
uint64_t AxisMask(const std::vector<int>& axes);
// True for a custom-call with that target.
bool IsCustomCall(const Instruction& inst, std::string_view target);
// True when tensor `from` maps to tensor `to` dim by dim with one shared, propagating factor per
// non-trivial dim (a manual or opaque sharding may be copied between them verbatim).
bool IdentityMapping(const OpShardingRule& rule, const TensorFactors& from,
                     const TensorFactors& to);
// Clears the axes of need-replication factors (propagation never carries them).
void DropNeedReplication(const OpShardingRule& rule, FactorAxes& fa);

class Engine {
 public:
  Engine(Module& module, const PropagationOptions& options) : module_(module), options_(options) {}
  Status Setup();
  Status Run();
  PropagationResult Finish();

 private:
  // Validation and mesh view of one annotation leaf, cached per distinct (sharding, shape).
  struct LeafFit {
    Status status;
    bool added = false;
    bool axes_done = false;
    std::optional<AxesSharding> axes;
  };
  LeafFit& FitOf(const HloSharding& leaf, const Shape& shape);

  // Setup helpers (engine.cc).
  void CollectComputations();
  Status AddNodes();
  Status ReadAnnotations();
  Status ApplyAnnotation(int id, const HloSharding& sharding, bool fixed, ShardingOrigin origin,
                         uint64_t open_dims);
  // Errors for annotations that cannot fit their value; notes for ones kept verbatim; adds the
  // usable leaves' cuts to the mesh builder.
  Status CheckAnnotation(int id, const HloSharding& sharding, bool explicit_count,
                         TileMesh::Builder& builder);
  void CloseEntryBoundary();
  void BuildEdgesAndGroups();
  void OnChanged(int id);
  void FillTupleLeaves(int id);
  void ReplicateUnevenBoundaries();
  // The concatenate or pad producing output leaf `leaf` of a root tuple (its only use) takes that
  // leaf's sharding after ReplicateUnevenBoundaries changed it.
  void OutputProducerFollows(int root, int leaf);
  void SyncGroups(int id);

  // Inference (infer.cc, infer_backward.cc).
  bool InferFromOperands(int id, int level);
  // A manual-region boundary (SPMDFullToShardShape / SPMDShardToFullShape) with open dims takes
  // its operand's free axes into them, as its operand's Sharding custom-call did.
  bool BoundaryFromOperand(int id, int level);
  bool InferFromUsers(int id, int level);
  // Concatenate and pad: clears the axes of a dim the op lengthens when every user needs that dim
  // whole (a dynamic-slice along it: jnp.roll by a traced shift slices concatenate(x, x)).
  // Gathering the shorter operands then moves less than splitting the result and gathering it.
  void DropDimsEveryUserGathers(int id, FactorAxes& fa) const;
  bool ForwardGeneric(int id, int level);
  // The sharding every user that has one already holds this array value in (a tuple's element,
  // as a loop body's root tied to the loop state; an elementwise user's result); nullopt when
  // none has one or two disagree.
  std::optional<AxesSharding> UsersAgreeOn(int id) const;
  // An elementwise op whose operands split it differently (tanh(b) + a, a and b split on other
  // dims) takes first the operand sharding its users already hold, as Shardy resolves such a
  // conflict from the other side, instead of the first operand's and a reshard after it: the
  // index of that source, or -1.
  int SourceUsersAgreeWith(int id, const std::vector<const Leaf*>& sources) const;
  bool BackwardFrom(int id, int user, int level);
  // Accepts `cand` for leaf `leaf` of `id` when it improves it (improve.cc).
  bool Improve(int id, int leaf, const AxesSharding& cand, int level, bool aggressive,
               ShardingOrigin origin);
  // Identity copy of a leaf state across an edge (call / conditional / fallback).
  bool CopyLeaf(int id, int leaf, const Leaf& src, int level, ShardingOrigin origin);
  // Makes every unsharded leaf manual (`closed_too`: also closed entry parameters / outputs).
  bool SetManual(int id, ShardingOrigin origin, bool closed_too);
  bool FullyManual(const Node& n) const;
  bool AllFixed(const Node& n) const;
  bool AnyNone(const Node& n) const;
  int64_t OpaqueTiles(const Leaf& leaf) const;

  int IdOf(const Instruction* inst) const {
    auto it = ids_.find(inst);
    return it == ids_.end() ? -1 : it->second;
  }

  Module& module_;
  PropagationOptions options_;
  int64_t num_devices_ = 1;
  TileMesh mesh_;
  std::vector<Computation*> comps_;           // visited, callees first
  std::vector<std::vector<int>> post_order_;  // node ids per computation
  std::vector<Node> nodes_;
  std::unordered_map<const Instruction*, int> ids_;
  // Call-like callers (call, fusion, async-start, conditional) of each visited computation.
  std::unordered_map<const Computation*, std::vector<int>> callers_;
  std::vector<std::vector<int>> groups_;  // while / conditional sharing groups
  std::unordered_map<int, std::vector<int>> group_of_;
  std::vector<HloSharding> opaque_;
  std::unordered_map<std::string, LeafFit> fits_;
  std::vector<char> done_fwd_, done_bwd_;
  int iterations_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace xs::propagation_internal

#endif  // XSHARD_PROPAGATION_ENGINE_H_
