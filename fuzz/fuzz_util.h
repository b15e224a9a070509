// What the fuzz targets share: the input as text, and a job to check parsed objects against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "schedwatch/spec.h"
#include "sources/catalog.h"

namespace schedwatch::fuzz {

inline std::string_view AsText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// 2026-11-30T12:00:00Z, the tests' "now".
inline constexpr std::int64_t kNow = 1796040000;

// The job `role` of the source `source` (a flow mapping: "{type: file, path: x}"), in a zone
// with DST. `extra` goes into the job's flow mapping (e.g. "workflow: x.yml").
inline JobSpec MakeJob(const std::string& source, const std::string& role,
                       const std::string& schedule, const std::string& extra = "") {
  auto spec = ParseSpec("version: 1\nsources:\n  s: " + source + "\njobs:\n  - {role: " + role +
                            ", source: s, schedule: \"" + schedule +
                            "\", timezone: Europe/Berlin, spec_version: \"3\"" +
                            (extra.empty() ? "" : ", " + extra) + "}\n",
                        "/fuzz/spec.yaml", BuiltInCatalog());
  if (!spec) std::abort();  // the fuzz target itself is wrong
  return spec->jobs.at(0);
}

}  // namespace schedwatch::fuzz
