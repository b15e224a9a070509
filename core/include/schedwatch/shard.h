// Shards: one spec watched by N exporters, each role by exactly one. A role's shard is a
// consistent hash of its name (FNV-1a 64 of its bytes, then Lamping and Veach's jump consistent
// hash), the same on every platform and run; growing N to N+1 moves only about 1/(N+1) of the
// roles, each to the new shard.
#pragma once

#include <string_view>

namespace schedwatch {

// The shard in [0, total_shards) that watches `role_name`; 0 when total_shards <= 1.
int ShardOf(std::string_view role_name, int total_shards);

}  // namespace schedwatch
