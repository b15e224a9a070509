// Finding a role's or a source's result in what a refresh published (refresher and hostile
// input tests).
#pragma once

#include <stdexcept>
#include <string>

#include "exporter/refresh/refresher.h"

namespace schedwatch::testing {

inline const RoleResult& Role(const Published& published, const std::string& role) {
  for (const auto& result : published.result.roles) {
    if (result.job->role == role) return result;
  }
  throw std::runtime_error("no role " + role);
}

inline const SourceStatus& Source(const Published& published, const std::string& name) {
  for (const auto& source : published.result.sources) {
    if (source.name == name) return source;
  }
  throw std::runtime_error("no source " + name);
}

}  // namespace schedwatch::testing
