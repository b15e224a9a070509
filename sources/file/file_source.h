// The `file` source: a live-state snapshot in YAML or JSON, re-read at every refresh. It is the
// embedded example's scheduler and a way to feed schedwatch from anything that can write a file.
//
//   objects:                       # what the scheduler holds
//     - {id: cron.d/gate:3, role: gate, schedule: "*/5 * * * *", spec_version: "3",
//        enabled: true, timezone: UTC}
//   runs:                          # run history; result: success | failure | running
//     - {role: gate, started: -4m, finished: -3m, result: success}
//   progress:                      # business checkpoints
//     - {role: retry, time: 2026-11-30T11:00:00Z}
//
// Times are RFC 3339, or relative to the refresh's now: "now", "-15m", "-1h30m".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sources/source.h"

namespace schedwatch {

// Parses snapshot text. Items that are malformed become problems; the rest is kept. A snapshot
// that is not a mapping with an `objects` list (`objects: []` when empty), or whose `runs` or
// `progress` is not a list, is an Error: a malformed read is a failed read, never an empty one.
Result<SourceSnapshot> ParseSnapshot(std::string_view text, std::int64_t now);

Result<std::unique_ptr<Source>> MakeFileSource(const SourceOptions& options);

}  // namespace schedwatch
