// `schedwatch_exporter check`: validate a spec and print each role's schedule maths.
#pragma once

#include <cstdint>
#include <string>

#include "schedwatch/spec.h"

namespace schedwatch {

std::string RenderCheckText(const Spec& spec, std::int64_t from, int count);
std::string RenderCheckJson(const Spec& spec, std::int64_t from, int count);

}  // namespace schedwatch
