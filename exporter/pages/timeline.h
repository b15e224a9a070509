// The timeline picture of one role, rendered by the server as inline SVG (no scripts, styles or
// fonts to fetch): expected fire times as ticks with their start grace, runs as bars with their
// max_runtime window, and now. Pure: a function of the spec, the runs, the status and `now`.
#pragma once

#include <cstdint>
#include <string>

#include "exporter/state/state.h"

namespace schedwatch {

struct TimelineWindow {
  std::int64_t start = 0;
  std::int64_t end = 0;  // a little after now, so the next fire time shows
};

// The last 24 hours or two periods, whichever is longer, at most 62 days.
TimelineWindow TimelineWindowFor(const JobSpec& job, std::int64_t now);

// "succeeded", "failed", "running", or "hung" for a run still going past the job's max_runtime:
// the word the pages and the picture show, and the picture's CSS class.
const char* RunOutcomeName(const RecordedRun& run, const JobSpec& job, std::int64_t now);

enum class TimelineSize { kLarge, kSparkline };

// Every run bar carries class "run <outcome>", a <title> and (large) a text mark, so the
// outcome never depends on colour alone.
std::string RenderTimelineSvg(const JobSpec& job, const RoleRuns* runs, std::int64_t now,
                              TimelineSize size);

}  // namespace schedwatch
