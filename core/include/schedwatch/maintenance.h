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
// Timelines a refresh's MaintenanceMemo holds at most.
inline constexpr std::size_t kMaxMemoTimelines = 64;

// The windows as a classification at `now` sees them: each recurring window through its latest
// kMaxWindowsWalked + 1 openings at or before now (an opening before those is not looked at:
// less is excused, never more), found once and kept, and through the openings of the downtime
// open at now. OpenWindow answers as the free function for times those openings reach.
// `eager`: all of them walked at once and the time they cover before now summed once, for a set
// of windows many roles share (the defaults'); otherwise walked as far as asked, for one role.
// `windows` must outlive it.
class MaintenanceTimeline {
 public:
  MaintenanceTimeline(const MaintenanceWindows& windows, std::int64_t now, bool eager);

  std::optional<TimeSpan> OpenWindow(std::int64_t t);
  std::int64_t CoveredSince(std::int64_t from) const;  // CoveredSeconds(windows, from, now)

 private:
  std::optional<TimeSpan> OpenAt(std::size_t window, std::int64_t t);
  // The latest opening of window `window` at or before `t` <= now, walking back as needed;
  // none past kMaxWindowsWalked + 1.
  std::optional<std::int64_t> LatestAtOrBefore(std::size_t window, std::int64_t t);

  const MaintenanceWindows& windows_;
  std::int64_t now_;
  bool eager_;
  // Per window (none for a fixed one): its openings at or before now walked so far, the latest
  // first; `all_` once there are no more to walk (none earlier, or kMaxWindowsWalked + 1).
  std::vector<std::vector<std::int64_t>> past_;
  std::vector<bool> all_;
  // Per window, ascending: its openings after now up to `known_until_`.
  std::vector<std::vector<std::int64_t>> after_;
  std::vector<std::int64_t> known_until_;
  std::optional<TimeSpan> open_now_;
  bool now_known_ = false;                    // open_now_ is found
  std::vector<TimeSpan> covered_;             // eager: the downtimes before now, merged, ascending
  std::vector<std::int64_t> covered_before_;  // seconds covered_[0..i) cover; one more: all
};

// The eager timelines of one classification pass (a refresh, at one `now`): built for a set of
// windows the second time a role with an equal set asks (a set one role has costs less walked as
// far as that role needs), kMaxMemoTimelines at most (16 windows: 400 KiB each).
class MaintenanceMemo {
 public:
  // Null when the role walks its own (a timeline that is not eager): the set's first asking, or
  // past kMaxMemoTimelines.
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
