#include "schedwatch/shard.h"

#include <cstdint>

namespace schedwatch {

int ShardOf(std::string_view role_name, int total_shards) {
  if (total_shards <= 1) return 0;
  std::uint64_t key = 14695981039346656037ull;  // FNV-1a 64
  for (char c : role_name) {
    key ^= static_cast<unsigned char>(c);
    key *= 1099511628211ull;
  }
  // Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm" (2014), as written
  // there: doubles are IEEE 754 on every platform we build for.
  std::int64_t bucket = -1, next = 0;
  while (next < total_shards) {
    bucket = next;
    key = key * 2862933555777941757ull + 1;
    next = static_cast<std::int64_t>(
        static_cast<double>(bucket + 1) *
        (static_cast<double>(1ll << 31) / static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<int>(bucket);
}

}  // namespace schedwatch
