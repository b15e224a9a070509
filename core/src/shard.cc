#include "schedwatch/shard.h"

#include <algorithm>

#include "schedwatch/spec.h"

namespace schedwatch {

std::uint64_t Fnv1a64(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ull;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

std::uint32_t JumpConsistentHash(std::uint64_t key, std::uint32_t buckets) {
  std::int64_t bucket = -1, next = 0;
  while (next < static_cast<std::int64_t>(buckets)) {
    bucket = next;
    key = key * 2862933555777941757ull + 1;
    // As the paper writes it: doubles are IEEE 754 on every platform we build for.
    next = static_cast<std::int64_t>(
        static_cast<double>(bucket + 1) *
        (static_cast<double>(1ull << 31) / static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<std::uint32_t>(bucket);
}

Spec SpecOfShard(const Spec& spec, const ShardAssignment& shard) {
  Spec own;
  own.file = spec.file;
  own.version = spec.version;
  own.sources = spec.sources;
  own.whole_spec_roles = spec.SpecRoles();
  for (const auto& job : spec.jobs) {
    if (shard.Owns(job.role)) own.jobs.push_back(job);
  }
  return own;
}

}  // namespace schedwatch
