// `schedwatch_exporter check`: validate a spec and print each role's schedule maths.
#pragma once

#include <cstdint>
#include <string>

#include "schedwatch/spec.h"

namespace schedwatch {

// `total_shards` (check --total-shards N): each role's shard of N is listed too; 0: not asked.
std::string RenderCheckText(const Spec& spec, std::int64_t from, int count,
                            std::uint32_t total_shards = 0);
std::string RenderCheckJson(const Spec& spec, std::int64_t from, int count,
                            std::uint32_t total_shards = 0);

}  // namespace schedwatch
