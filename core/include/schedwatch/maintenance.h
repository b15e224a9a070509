// Maintenance windows (`maintenance:`): planned downtime that holds a role's alerts and excuses
// what it covers. Pure: times in, spans out.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
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
// walked back from `to` one by one, at most kMaxWindowsWalked of each: before those, less is
// excused, never more.
std::int64_t CoveredSeconds(const MaintenanceWindows& windows, std::int64_t from, std::int64_t to);
inline constexpr int kMaxWindowsWalked = 1000;
// Fire times of a job skipped back over windows, at most, when looking for one outside them.
inline constexpr int kMaxFireTimesSkipped = 64;
// What a refresh's MaintenanceMemo walks at most (openings take 8 bytes each).
inline constexpr std::size_t kMaxMemoTimelines = 64;
inline constexpr std::size_t kMaxTimelineWalkOn = std::size_t{1} << 15;

// The windows as they stand at `now`, for many questions: each recurring window's openings up to
// now (the latest kMaxWindowsWalked, and one more) and those of the downtime open at now are
// found once, and the time they cover before now summed once; openings further back are walked
// once when asked for, `walk_on` more at most (then each question walks its own). The roles of
// a refresh that share a set of windows (the defaults') cost a lookup each, not a walk. Answers
// exactly as the free functions do; `windows` must outlive it.
class MaintenanceTimeline {
 public:
  MaintenanceTimeline(const MaintenanceWindows& windows, std::int64_t now, std::size_t walk_on = 0);

  std::optional<TimeSpan> OpenWindow(std::int64_t t);  // OpenWindow(windows, t)
  std::int64_t CoveredSince(std::int64_t from) const;  // CoveredSeconds(windows, from, now)

 private:
  std::optional<TimeSpan> OpenAt(std::size_t window, std::int64_t t);
  // The latest opening of window `window` at or before `t` <= now, in `start`; false when the
  // walk on ended before the walk back reached `t`.
  bool LatestAtOrBefore(std::size_t window, std::int64_t t, std::optional<std::int64_t>& start);

  const MaintenanceWindows& windows_;
  std::int64_t now_;
  std::size_t walk_on_;
  // Per window (none for a fixed one): its openings at or before now, the latest first, each
  // one before the last; `all_` once the schedule has none earlier.
  std::vector<std::vector<std::int64_t>> past_;
  std::vector<bool> all_;
  // Per window, ascending: its openings after now up to `known_until_`.
  std::vector<std::vector<std::int64_t>> after_;
  std::int64_t known_until_;
  std::optional<TimeSpan> open_now_;
  bool now_known_ = false;                    // open_now_ is found
  std::vector<TimeSpan> covered_;             // the downtimes before now, merged, ascending
  std::vector<std::int64_t> covered_before_;  // seconds covered_[0..i) cover; one more: all
};

// The timelines of one classification pass (a refresh, at one `now`): built for a set of windows
// the second time a role with an equal set asks (a set one role has costs less walked as far as
// that role needs), kMaxMemoTimelines at most, each walking on kMaxTimelineWalkOn openings at
// most (past them, roles walk their own): 25 MiB at most.
class MaintenanceMemo {
 public:
  // Null when the role walks its own: the set's first asking, or past kMaxMemoTimelines.
  MaintenanceTimeline* Find(const MaintenanceWindows& windows, std::int64_t now);

 private:
  struct Entry {
    const MaintenanceWindows* windows;
    std::int64_t now;
    std::unique_ptr<MaintenanceTimeline> timeline;
  };
  // By a hash of the windows' texts and `now`; equal sets of other jobs share the entry.
  std::unordered_multimap<std::size_t, Entry> entries_;
  std::size_t timelines_ = 0;
};
inline constexpr std::size_t kMaxMemoSets = 4096;

}  // namespace schedwatch
