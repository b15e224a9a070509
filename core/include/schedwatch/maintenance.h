// Maintenance windows (`maintenance:`): planned downtime that holds a role's alerts and excuses
// what it covers. Pure: times in, spans out.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schedwatch/schedule.h"

namespace schedwatch {

// [start, end) in Unix seconds.
struct TimeSpan {
  std::int64_t start = 0;
  std::int64_t end = 0;
  bool Contains(std::int64_t t) const { return start <= t && t < end; }
  bool operator==(const TimeSpan& other) const { return start == other.start && end == other.end; }
};

// One `maintenance:` entry: a fixed span (`from`, `to`), or a recurring one, each fire time of
// `opens` opening a window of `duration`.
struct MaintenanceWindow {
  TimeSpan fixed;
  std::shared_ptr<const Schedule> opens;  // null for a fixed span
  std::int64_t duration = 0;
  std::string text;  // as people read it: "2026-12-05T01:00:00Z to ...", "0 1 * * 6 for 2h"

  std::optional<TimeSpan> OpenAt(std::int64_t t) const;
  // The first window opening after `t`.
  std::optional<TimeSpan> NextAfter(std::int64_t t) const;
  bool operator==(const MaintenanceWindow& other) const;
};

using MaintenanceWindows = std::vector<MaintenanceWindow>;

// The window open at `t`, stretched to the latest end of those open at `t` and of those they
// run into (overlapping windows are one downtime, of at most kMaxJoinedWindows in a row: the
// spec refuses windows that join into more); nullopt when none is open.
std::optional<TimeSpan> OpenWindow(const MaintenanceWindows& windows, std::int64_t t);
inline constexpr int kMaxJoinedWindows = 32;

// Whether some downtime the windows make after `from` joins more than kMaxJoinedWindows windows
// in a row (they would hold a role's alerts for good, or nearly): looked for from the first
// opening of each window after `from`.
bool JoinTooMany(const MaintenanceWindows& windows, std::int64_t from);

// The earliest window opening after `t`.
std::optional<TimeSpan> NextWindow(const MaintenanceWindows& windows, std::int64_t t);

// Seconds of [from, to) that some window covers (overlaps counted once). Recurring windows are
// walked one by one, at most kMaxWindowsWalked of each: past that, less is excused, never more.
std::int64_t CoveredSeconds(const MaintenanceWindows& windows, std::int64_t from, std::int64_t to);
inline constexpr int kMaxWindowsWalked = 1000;
// Fire times of a job skipped back over windows, at most, when looking for one outside them.
inline constexpr int kMaxFireTimesSkipped = 64;

}  // namespace schedwatch
