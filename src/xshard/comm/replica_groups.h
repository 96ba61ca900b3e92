// DeviceGroups and PermutePairs: the validated participant sets of one collective, as explicit
// lists of ranks (the caller resolves XLA's group modes, mesh axes or a device assignment to
// ranks first). Printed as HLO prints them: {{0,2,4,6},{1,3,5,7}} and {{0,1},{1,2}}.
#ifndef XSHARD_COMM_REPLICA_GROUPS_H_
#define XSHARD_COMM_REPLICA_GROUPS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xshard/base/status.h"

namespace xs {

class DeviceGroups {
 public:
  // Whether ranks may be left out of every group (only collective-broadcast allows it: a rank in
  // no group receives zeros).
  enum class Coverage { kEveryRank, kPartial };

  // Validates `groups` over ranks 0..num_ranks-1: every id in range, no id twice, no empty group,
  // and (kEveryRank) every rank in some group. No groups at all means one group of every rank in
  // order. `op_name` starts every error message, e.g. "all-reduce: replica groups {{0,1},{1,2}}
  // list device 1 twice; every device must be in exactly one group".
  static StatusOr<DeviceGroups> Create(std::vector<std::vector<int64_t>> groups,
                                        int64_t num_ranks, std::string_view op_name,
                                        Coverage coverage = Coverage::kEveryRank);
  // One group 0..num_ranks-1.
  static DeviceGroups All(int64_t num_ranks);

  int64_t num_ranks() const { return static_cast<int64_t>(group_of_.size()); }
  int64_t num_groups() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  // Members of group `g` in order (their position is their rank within the group).
  std::span<const int64_t> group(int64_t g) const;
  // The group of `rank`, or an empty span when it is in none.
  std::span<const int64_t> GroupOf(int64_t rank) const;
  // Position of `rank` within its group; -1 when it is in none.
  int64_t IndexInGroup(int64_t rank) const { return index_in_group_[rank]; }
  // Equal groups give equal fingerprints; used to detect ranks that disagree on the groups.
  uint64_t fingerprint() const { return fingerprint_; }

  // "{{0,2,4,6},{1,3,5,7}}".
  std::string ToString() const;

 private:
  DeviceGroups() = default;
  void Index();

  std::vector<int64_t> members_;      // all groups, concatenated
  std::vector<int64_t> offsets_{0};   // group g is members_[offsets_[g], offsets_[g+1])
  std::vector<int64_t> group_of_;     // rank -> group, -1 for none
  std::vector<int64_t> index_in_group_;
  uint64_t fingerprint_ = 0;
};

// collective-permute's source -> target pairs.
class PermutePairs {
 public:
  // Validates ids in 0..num_ranks-1, each source and each target at most once. Errors start with
  // `op_name` and name the pair, e.g. "collective-permute: source_target_pairs {{0,1},{0,2}} send
  // from device 0 twice; each device sends to at most one target".
  static StatusOr<PermutePairs> Create(std::vector<std::pair<int64_t, int64_t>> pairs,
                                       int64_t num_ranks, std::string_view op_name);

  int64_t num_ranks() const { return static_cast<int64_t>(source_of_.size()); }
  const std::vector<std::pair<int64_t, int64_t>>& pairs() const { return pairs_; }
  // The rank `rank` receives from, or -1 (it then receives zeros).
  int64_t SourceOf(int64_t rank) const { return source_of_[rank]; }
  // The rank `rank` sends to, or -1.
  int64_t TargetOf(int64_t rank) const { return target_of_[rank]; }
  uint64_t fingerprint() const { return fingerprint_; }
  // "{{0,1},{1,2}}".
  std::string ToString() const;

 private:
  PermutePairs() = default;
  std::vector<std::pair<int64_t, int64_t>> pairs_;
  std::vector<int64_t> source_of_, target_of_;
  uint64_t fingerprint_ = 0;
};

// XLA's collective group modes: how an instruction's replica_groups name its participants.
//   kCrossReplica: replica ids, one group per listed group per partition (no channel_id);
//   kCrossPartition: partition ids, one group per listed group per replica (channel_id, no
//     use_global_device_ids attribute);
//   kCrossReplicaAndPartition: replica ids, each group with all partitions of its replicas
//     (channel_id, use_global_device_ids=false);
//   kFlattenedId: logical ids replica * num_partitions + partition (use_global_device_ids=true).
enum class GroupMode { kCrossReplica, kCrossPartition, kCrossReplicaAndPartition, kFlattenedId };
std::string_view GroupModeName(GroupMode mode);  // "cross_replica", ...

// The mode XLA derives from an instruction's attributes (GetCollectiveOpGroupMode). Error for
// use_global_device_ids=true without a channel_id.
StatusOr<GroupMode> GroupModeFor(bool has_channel_id, std::optional<bool> use_global_device_ids);

// Resolves an instruction's replica_groups under `mode` to groups of logical ids (the ranks of a
// run over DeviceAssignment::LogicalDevices()), ordered exactly as XLA's
// GetParticipatingFlattenedIdGroups orders them. Empty groups mean every replica (every partition
// for kCrossPartition); kFlattenedId needs explicit groups. 2 replicas x 2 partitions,
// kCrossReplica, {{0,1}} -> {{0,2},{1,3}}.
StatusOr<DeviceGroups> ResolveGroupMode(GroupMode mode,
                                         const std::vector<std::vector<int64_t>>& groups,
                                         int64_t num_replicas, int64_t num_partitions,
                                         std::string_view op_name);

// collective-permute's source_target_pairs name partitions (with a channel_id) or replicas
// (without); this applies them within every replica (resp. partition), over logical ids.
StatusOr<PermutePairs> ResolvePermutePairs(bool cross_partition,
                                           const std::vector<std::pair<int64_t, int64_t>>& pairs,
                                           int64_t num_replicas, int64_t num_partitions,
                                           std::string_view op_name);

}  // namespace xs

#endif  // XSHARD_COMM_REPLICA_GROUPS_H_
