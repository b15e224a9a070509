// `schedwatch_exporter check`: validate a spec and print each role's schedule maths.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "schedwatch/spec.h"

namespace schedwatch {

// Both write as they go: the listing of 1,000,000 jobs is never held whole. `total_shards`
// (check --total-shards N): each role's shard of N is listed too; 0: not asked.
void RenderCheckText(const Spec& spec, std::int64_t from, int count, std::uint32_t total_shards,
                     std::ostream& out);
void RenderCheckJson(const Spec& spec, std::int64_t from, int count, std::uint32_t total_shards,
                     std::ostream& out);

}  // namespace schedwatch
