// Validation and indexing of replica groups and permute pairs.
#include "xshard/comm/replica_groups.h"

#include <algorithm>

namespace xs {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

std::string GroupsText(const std::vector<std::vector<int64_t>>& groups) {
  std::string out = "{";
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g > 0) out += ",";
    StrAppend(&out, "{", StrJoin(groups[g], ","), "}");
  }
  return out + "}";
}

}  // namespace

StatusOr<DeviceGroups> DeviceGroups::Create(std::vector<std::vector<int64_t>> groups,
                                              int64_t num_ranks, std::string_view op_name,
                                              Coverage coverage) {
  if (num_ranks < 1) {
    return InvalidArgument(op_name, ": a collective needs at least one device, got ", num_ranks);
  }
  if (groups.empty()) return All(num_ranks);
  const std::string text = GroupsText(groups);
  DeviceGroups out;
  out.group_of_.assign(num_ranks, -1);
  out.index_in_group_.assign(num_ranks, -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) {
      return InvalidArgument(op_name, ": replica groups ", text, " have an empty group (number ",
                             g, "); every group needs at least one device");
    }
    for (size_t i = 0; i < groups[g].size(); ++i) {
      const int64_t id = groups[g][i];
      if (id < 0 || id >= num_ranks) {
        return InvalidArgument(op_name, ": replica groups ", text, " name device ", id,
                               ", out of range for ", num_ranks, " devices (ids 0..",
                               num_ranks - 1, ")");
      }
      if (out.group_of_[id] != -1) {
        return InvalidArgument(op_name, ": replica groups ", text, " list device ", id,
                               " twice; every device must be in exactly one group");
      }
      out.group_of_[id] = static_cast<int64_t>(g);
      out.index_in_group_[id] = static_cast<int64_t>(i);
    }
  }
  if (coverage == Coverage::kEveryRank) {
    std::vector<int64_t> missing;
    for (int64_t r = 0; r < num_ranks; ++r) {
      if (out.group_of_[r] == -1) missing.push_back(r);
    }
    if (!missing.empty()) {
      return InvalidArgument(op_name, ": replica groups ", text, " leave out device",
                             missing.size() > 1 ? "s " : " ", StrJoin(missing, ","), " of ",
                             num_ranks, "; every device must be in exactly one group (no groups "
                             "at all means one group of every device)");
    }
  }
  out.offsets_.clear();
  out.offsets_.push_back(0);
  for (const auto& g : groups) {
    out.members_.insert(out.members_.end(), g.begin(), g.end());
    out.offsets_.push_back(static_cast<int64_t>(out.members_.size()));
  }
  out.Index();
  return out;
}

DeviceGroups DeviceGroups::All(int64_t num_ranks) {
  DeviceGroups out;
  out.members_.resize(num_ranks);
  out.group_of_.assign(num_ranks, 0);
  out.index_in_group_.resize(num_ranks);
  for (int64_t r = 0; r < num_ranks; ++r) {
    out.members_[r] = r;
    out.index_in_group_[r] = r;
  }
  out.offsets_ = {0, num_ranks};
  out.Index();
  return out;
}

void DeviceGroups::Index() {
  uint64_t h = Mix(0, static_cast<uint64_t>(group_of_.size()));
  for (int64_t v : members_) h = Mix(h, static_cast<uint64_t>(v));
  for (int64_t v : offsets_) h = Mix(h, static_cast<uint64_t>(v) + 0x100000000ull);
  fingerprint_ = h;
}

std::span<const int64_t> DeviceGroups::group(int64_t g) const {
  return std::span<const int64_t>(members_.data() + offsets_[g],
                                  static_cast<size_t>(offsets_[g + 1] - offsets_[g]));
}

std::span<const int64_t> DeviceGroups::GroupOf(int64_t rank) const {
  const int64_t g = group_of_[rank];
  if (g < 0) return {};
  return group(g);
}

std::string DeviceGroups::ToString() const {
  std::string out = "{";
  for (int64_t g = 0; g < num_groups(); ++g) {
    if (g > 0) out += ",";
    StrAppend(&out, "{", StrJoin(group(g), ","), "}");
  }
  return out + "}";
}

StatusOr<PermutePairs> PermutePairs::Create(std::vector<std::pair<int64_t, int64_t>> pairs,
                                            int64_t num_ranks, std::string_view op_name) {
  PermutePairs out;
  out.pairs_ = std::move(pairs);
  const std::string text = out.ToString();
  if (num_ranks < 1) {
    return InvalidArgument(op_name, ": a collective needs at least one device, got ", num_ranks);
  }
  out.source_of_.assign(num_ranks, -1);
  out.target_of_.assign(num_ranks, -1);
  uint64_t h = Mix(1, static_cast<uint64_t>(num_ranks));
  for (const auto& [src, dst] : out.pairs_) {
    for (int64_t id : {src, dst}) {
      if (id < 0 || id >= num_ranks) {
        return InvalidArgument(op_name, ": source_target_pairs ", text, " name device ", id,
                               ", out of range for ", num_ranks, " devices (ids 0..",
                               num_ranks - 1, ")");
      }
    }
    if (out.target_of_[src] != -1) {
      return InvalidArgument(op_name, ": source_target_pairs ", text, " send from device ", src,
                             " twice; each device sends to at most one target");
    }
    if (out.source_of_[dst] != -1) {
      return InvalidArgument(op_name, ": source_target_pairs ", text, " send to device ", dst,
                             " twice; each device receives from at most one source");
    }
    out.target_of_[src] = dst;
    out.source_of_[dst] = src;
    h = Mix(Mix(h, static_cast<uint64_t>(src)), static_cast<uint64_t>(dst));
  }
  out.fingerprint_ = h;
  return out;
}

std::string PermutePairs::ToString() const {
  std::string out = "{";
  for (size_t i = 0; i < pairs_.size(); ++i) {
    if (i > 0) out += ",";
    StrAppend(&out, "{", pairs_[i].first, ",", pairs_[i].second, "}");
  }
  return out + "}";
}

std::string_view GroupModeName(GroupMode mode) {
  static constexpr std::string_view kNames[] = {"cross_replica", "cross_partition",
                                                "cross_replica_and_partition", "flattened_id"};
  return kNames[static_cast<int>(mode)];
}

StatusOr<GroupMode> GroupModeFor(bool has_channel_id, std::optional<bool> use_global_device_ids) {
  if (!has_channel_id) {
    if (use_global_device_ids.value_or(false)) {
      return InvalidArgument("use_global_device_ids=true needs a channel_id; add channel_id=1 or "
                             "drop use_global_device_ids");
    }
    return GroupMode::kCrossReplica;
  }
  if (!use_global_device_ids.has_value()) return GroupMode::kCrossPartition;
  return *use_global_device_ids ? GroupMode::kFlattenedId : GroupMode::kCrossReplicaAndPartition;
}

StatusOr<DeviceGroups> ResolveGroupMode(GroupMode mode,
                                         const std::vector<std::vector<int64_t>>& groups,
                                         int64_t num_replicas, int64_t num_partitions,
                                         std::string_view op_name) {
  if (num_replicas < 1 || num_partitions < 1) {
    return InvalidArgument(op_name, ": need at least one replica and one partition, got ",
                           num_replicas, " x ", num_partitions);
  }
  const int64_t R = num_replicas, P = num_partitions;
  const int64_t id_count = mode == GroupMode::kCrossPartition ? P : R;
  std::vector<std::vector<int64_t>> given = groups;
  if (given.empty()) {
    if (mode == GroupMode::kFlattenedId) {
      return InvalidArgument(op_name, ": replica_groups cannot be empty with "
                             "use_global_device_ids=true; list the groups of logical ids");
    }
    given.emplace_back();
    for (int64_t i = 0; i < id_count; ++i) given.back().push_back(i);
  }
  if (mode != GroupMode::kFlattenedId) {
    for (const auto& g : given) {
      for (int64_t id : g) {
        if (id < 0 || id >= id_count) {
          return InvalidArgument(op_name, ": replica groups ", GroupsText(groups), " (",
                                 GroupModeName(mode), ") name ",
                                 mode == GroupMode::kCrossPartition ? "partition " : "replica ",
                                 id, ", but there are ", id_count, "; ids run 0..",
                                 id_count - 1);
        }
      }
    }
  }
  std::vector<std::vector<int64_t>> out;
  switch (mode) {
    case GroupMode::kFlattenedId:
      out = given;
      break;
    case GroupMode::kCrossReplica:
      for (const auto& g : given) {
        for (int64_t p = 0; p < P; ++p) {
          out.emplace_back();
          for (int64_t r : g) out.back().push_back(r * P + p);
        }
      }
      break;
    case GroupMode::kCrossPartition:
      for (const auto& g : given) {
        for (int64_t r = 0; r < R; ++r) {
          out.emplace_back();
          for (int64_t p : g) out.back().push_back(r * P + p);
        }
      }
      break;
    case GroupMode::kCrossReplicaAndPartition:
      for (const auto& g : given) {
        out.emplace_back();
        for (int64_t r : g) {
          for (int64_t p = 0; p < P; ++p) out.back().push_back(r * P + p);
        }
      }
      break;
  }
  return DeviceGroups::Create(std::move(out), R * P, op_name);
}

StatusOr<PermutePairs> ResolvePermutePairs(bool cross_partition,
                                           const std::vector<std::pair<int64_t, int64_t>>& pairs,
                                           int64_t num_replicas, int64_t num_partitions,
                                           std::string_view op_name) {
  const int64_t R = num_replicas, P = num_partitions;
  const int64_t id_count = cross_partition ? P : R;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& [src, dst] : pairs) {
    for (int64_t id : {src, dst}) {
      if (id < 0 || id >= id_count) {
        return InvalidArgument(op_name, ": source_target_pairs name ",
                               cross_partition ? "partition " : "replica ", id,
                               ", but there are ", id_count, "; ids run 0..", id_count - 1);
      }
    }
  }
  const int64_t copies = cross_partition ? R : P;
  for (int64_t c = 0; c < copies; ++c) {
    for (const auto& [src, dst] : pairs) {
      if (cross_partition) {
        out.emplace_back(c * P + src, c * P + dst);
      } else {
        out.emplace_back(src * P + c, dst * P + c);
      }
    }
  }
  return PermutePairs::Create(std::move(out), R * P, op_name);
}

}  // namespace xs
