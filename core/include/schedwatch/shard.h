// Shards: one spec watched by N exporters, each role by exactly one. A role's shard is a
// consistent hash of its name (FNV-1a 64, then Lamping and Veach's jump consistent hash), so it
// is the same on every platform and run, and growing N to N+1 moves only about 1/(N+1) of the
// roles, every one of them to the new shard N.
#pragma once

#include <cstdint>
#include <string_view>

namespace schedwatch {

struct Spec;

// FNV-1a, 64 bits, of the bytes of `text`.
std::uint64_t Fnv1a64(std::string_view text);

// Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm" (2014): a bucket in
// [0, buckets) for `key`; buckets >= 1.
std::uint32_t JumpConsistentHash(std::uint64_t key, std::uint32_t buckets);

// Which of N exporters this one is. total = 1 is an unsharded exporter (shard 0 of 1).
struct ShardAssignment {
  std::uint32_t ordinal = 0;
  std::uint32_t total = 1;
  // A pod of a shrinking StatefulSet whose ordinal is `total` or more (a spare, until it is
  // removed) keeps what it watched: the roles of shard `ordinal` of `ordinal + 1`, a superset of
  // those of shard `ordinal` of any larger total. 0 for the others.
  std::uint32_t spare_of = 0;

  bool Sharded() const { return total > 1 || spare_of != 0; }
  // The shard of `role`: the one that watches it, or counts it unowned when it is not in the spec.
  static std::uint32_t Of(std::string_view role, std::uint32_t total) {
    return total <= 1 ? 0 : JumpConsistentHash(Fnv1a64(role), total);
  }
  bool Owns(std::string_view role) const {
    return Of(role, spare_of != 0 ? spare_of : total) == ordinal;
  }
  // What every shard reads whole (a host's crontabs and logs, a repository's list of workflows,
  // a project's pipeline schedules): its problems are counted by shard 0 only, once in the fleet.
  bool CountsSharedReads() const { return ordinal == 0; }
};

// The shard of `role` among `total_shards` (rulegen's form of ShardAssignment::Of).
inline int ShardOf(std::string_view role, int total_shards) {
  return total_shards <= 1 ? 0 : static_cast<int>(ShardAssignment::Of(role, total_shards));
}

// The spec of one shard: the sources of `spec` (each shard reads every one for its own roles) and
// the jobs `shard` owns, in file order.
Spec SpecOfShard(const Spec& spec, const ShardAssignment& shard);

}  // namespace schedwatch
