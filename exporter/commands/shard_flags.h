// --shard and --total-shards: which shard of the spec this exporter watches (schedwatch/shard.h).
#pragma once

#include <optional>
#include <string>

#include "schedwatch/result.h"
#include "schedwatch/shard.h"

namespace schedwatch {

struct ShardFlags {
  std::string shard;               // "K", "auto" or empty (not given)
  std::optional<long long> total;  // --total-shards, when given
  std::string pod_name;            // --pod-name, else $POD_NAME (for auto)
};

// The assignment the flags ask for, or why they are refused: K >= N, K without N, N < 1,
// N > 1 without K, auto without a pod name ending in "-<ordinal>". `auto` on a pod whose ordinal
// is N or more (a StatefulSet shrinking) makes a spare (ShardAssignment::spare_of).
Result<ShardAssignment> ResolveShard(const ShardFlags& flags);

// The ordinal of a StatefulSet pod's name ("schedwatch-3" -> 3); nullopt when it has none.
std::optional<std::uint32_t> PodOrdinal(const std::string& pod_name);

}  // namespace schedwatch
