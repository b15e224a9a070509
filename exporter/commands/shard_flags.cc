#include "exporter/commands/shard_flags.h"

#include <fmt/format.h>

namespace schedwatch {
namespace {

// Far more shards than any fleet needs; keeps K + 1 and the hash's bucket count in range.
constexpr long long kMaxShards = 1 << 20;

std::optional<long long> Number(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::stoll(text);
}

}  // namespace

std::optional<std::uint32_t> PodOrdinal(const std::string& pod_name) {
  auto dash = pod_name.rfind('-');
  if (dash == std::string::npos || dash == 0) return std::nullopt;
  auto ordinal = Number(pod_name.substr(dash + 1));
  if (!ordinal || *ordinal >= kMaxShards) return std::nullopt;
  return static_cast<std::uint32_t>(*ordinal);
}

Result<ShardAssignment> ResolveShard(const ShardFlags& flags) {
  ShardAssignment shard;
  if (flags.total && (*flags.total < 1 || *flags.total > kMaxShards)) {
    return Error{fmt::format("--total-shards: {} is not a number of shards from 1 to {}",
                             *flags.total, kMaxShards)};
  }
  if (flags.shard.empty()) {
    if (flags.total && *flags.total > 1) {
      return Error{fmt::format(
          "--total-shards {} needs --shard K (0 to {}) or --shard=auto: which shard is this?",
          *flags.total, *flags.total - 1)};
    }
    return shard;
  }
  if (!flags.total) {
    return Error{
        fmt::format("--shard {} needs --total-shards N: how many shards are there?", flags.shard)};
  }
  shard.total = static_cast<std::uint32_t>(*flags.total);
  if (flags.shard == "auto") {
    auto ordinal = PodOrdinal(flags.pod_name);
    if (!ordinal) {
      return Error{
          flags.pod_name.empty()
              ? std::string("--shard=auto: no pod name: give --pod-name or set $POD_NAME (a "
                            "StatefulSet's pod name, \"name-<ordinal>\", from the downward API)")
              : fmt::format("--shard=auto: the pod name \"{}\" does not end in -<ordinal>",
                            flags.pod_name)};
    }
    shard.ordinal = *ordinal;
    if (shard.ordinal >= shard.total) shard.spare_of = shard.ordinal + 1;
    return shard;
  }
  auto ordinal = Number(flags.shard);
  if (!ordinal) {
    return Error{fmt::format("--shard: \"{}\" is neither a shard number nor auto", flags.shard)};
  }
  if (*ordinal >= shard.total) {
    return Error{fmt::format("--shard {} is not below --total-shards {}: shards are 0 to {}",
                             *ordinal, shard.total, shard.total - 1)};
  }
  shard.ordinal = static_cast<std::uint32_t>(*ordinal);
  return shard;
}

}  // namespace schedwatch
