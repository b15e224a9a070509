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

  bool Sharded() const { return total > 1; }
  // The shard of `role`: the one that watches it, or counts it unowned when it is not in the spec.
  static std::uint32_t Of(std::string_view role, std::uint32_t total) {
    return total <= 1 ? 0 : JumpConsistentHash(Fnv1a64(role), total);
  }
  bool Owns(std::string_view role) const { return Of(role, total) == ordinal; }
};

// Keeps the jobs of `spec` that `shard` owns, in file order; returns how many jobs the whole spec
// had. Its sources stay: every shard reads each of them for its own roles.
std::size_t KeepShard(Spec& spec, const ShardAssignment& shard);

}  // namespace schedwatch
