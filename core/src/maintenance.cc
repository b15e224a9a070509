#include "schedwatch/maintenance.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace schedwatch {

std::optional<TimeSpan> MaintenanceWindow::OpenAt(std::int64_t t) const {
  if (!opens) return fixed.Contains(t) ? std::optional<TimeSpan>(fixed) : std::nullopt;
  auto start = opens->Previous(t);
  if (!start || t >= *start + duration) return std::nullopt;
  return TimeSpan{*start, *start + duration};
}

std::optional<TimeSpan> MaintenanceWindow::NextAfter(std::int64_t t) const {
  if (!opens) return fixed.start > t ? std::optional<TimeSpan>(fixed) : std::nullopt;
  auto start = opens->Next(t);
  if (!start) return std::nullopt;
  return TimeSpan{*start, *start + duration};
}

bool MaintenanceWindow::operator==(const MaintenanceWindow& other) const {
  if (!(fixed == other.fixed) || duration != other.duration || text != other.text ||
      !opens != !other.opens) {
    return false;
  }
  // The same text opens the same windows only in the same zone and dialect.
  return !opens ||
         (opens->zone() == other.opens->zone() && opens->policy() == other.opens->policy() &&
          opens->is_calendar() == other.opens->is_calendar() &&
          opens->expression().dialect() == other.opens->expression().dialect());
}

namespace {

// OpenWindow, and how many passes it took: each takes in the windows open at the current end.
// `open_at(i, t)`: windows[i].OpenAt(t), however it is found.
template <typename OpenAt>
std::optional<TimeSpan> Joined(std::size_t count, const OpenAt& open_at, std::int64_t t,
                               int& passes) {
  std::optional<TimeSpan> open;
  for (passes = 0; passes <= kMaxJoinedWindows; ++passes) {
    std::int64_t at = open ? open->end : t;
    bool grew = false;
    for (std::size_t i = 0; i < count; ++i) {
      auto span = open_at(i, at);
      if (!span) continue;
      if (!open) {
        open = span;
        grew = true;
      } else if (span->end > open->end) {
        open->end = span->end;
        grew = true;
      }
      if (passes == 0) open->start = std::min(open->start, span->start);
    }
    if (!grew) break;
  }
  return open;
}

std::optional<TimeSpan> Joined(const MaintenanceWindows& windows, std::int64_t t, int& passes) {
  return Joined(
      windows.size(), [&](std::size_t i, std::int64_t at) { return windows[i].OpenAt(at); }, t,
      passes);
}

// `spans` sorted and merged where they overlap or touch: the downtimes they make, ascending.
std::vector<TimeSpan> Merged(std::vector<TimeSpan> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const TimeSpan& a, const TimeSpan& b) { return a.start < b.start; });
  std::vector<TimeSpan> merged;
  for (const TimeSpan& span : spans) {
    if (span.start >= span.end) continue;
    if (!merged.empty() && span.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, span.end);
    } else {
      merged.push_back(span);
    }
  }
  return merged;
}

}  // namespace

std::optional<TimeSpan> OpenWindow(const MaintenanceWindows& windows, std::int64_t t) {
  int passes = 0;
  return Joined(windows, t, passes);
}

bool JoinTooMany(const MaintenanceWindows& windows, std::int64_t from) {
  for (const auto& window : windows) {
    auto first = window.NextAfter(from);
    int passes = 0;
    if (first && Joined(windows, first->start, passes) && passes > kMaxJoinedWindows) return true;
  }
  return false;
}

std::optional<TimeSpan> NextWindow(const MaintenanceWindows& windows, std::int64_t t) {
  std::optional<TimeSpan> next;
  for (const auto& window : windows) {
    auto span = window.NextAfter(t);
    if (span && (!next || span->start < next->start)) next = span;
  }
  return next;
}

std::int64_t CoveredSeconds(const MaintenanceWindows& windows, std::int64_t from, std::int64_t to) {
  if (to <= from) return 0;
  std::vector<TimeSpan> spans;
  auto add = [&](TimeSpan span) {
    span.start = std::max(span.start, from);
    span.end = std::min(span.end, to);
    if (span.start < span.end) spans.push_back(span);
  };
  for (const auto& window : windows) {
    if (!window.opens) {
      add(window.fixed);
      continue;
    }
    // Back from the last opening before `to`, while the windows reach past `from`.
    std::optional<std::int64_t> start = window.opens->Previous(to - 1);
    for (int walked = 0; start && *start + window.duration > from && walked < kMaxWindowsWalked;
         ++walked) {
      add({*start, *start + window.duration});
      start = window.opens->Previous(*start - 1);
    }
  }
  std::int64_t covered = 0;
  for (const TimeSpan& span : Merged(std::move(spans))) covered += span.end - span.start;
  return covered;
}

MaintenanceTimeline::MaintenanceTimeline(const MaintenanceWindows& windows, std::int64_t now,
                                         bool eager)
    : windows_(windows),
      now_(now),
      eager_(eager),
      past_(windows.size()),
      all_(windows.size()),
      after_(windows.size()),
      known_until_(windows.size(), now) {
  if (eager) {
    std::vector<TimeSpan> spans;
    for (std::size_t i = 0; i < windows.size(); ++i) {
      const MaintenanceWindow& window = windows[i];
      if (!window.opens) {
        if (window.fixed.start < now) {
          spans.push_back({window.fixed.start, std::min(window.fixed.end, now)});
        }
        continue;
      }
      LatestAtOrBefore(i, std::numeric_limits<std::int64_t>::min());  // every one
      // The latest kMaxWindowsWalked before now: CoveredSeconds' walk.
      const std::vector<std::int64_t>& past = past_[i];
      std::size_t first = !past.empty() && past.front() == now ? 1 : 0;
      std::size_t last = std::min(past.size(), first + kMaxWindowsWalked);
      for (std::size_t k = first; k < last; ++k) {
        spans.push_back({past[k], std::min(past[k] + window.duration, now)});
      }
    }
    covered_ = Merged(std::move(spans));
    covered_before_.push_back(0);
    for (const TimeSpan& span : covered_) {
      covered_before_.push_back(covered_before_.back() + span.end - span.start);
    }
  }
  // The downtime open at now, then the openings it runs into: the rest of every role's chain.
  open_now_ = OpenWindow(now);
  now_known_ = true;
  if (open_now_) {
    for (std::size_t i = 0; i < windows.size(); ++i) {
      if (!windows[i].opens) continue;
      // At most kMaxWindowsWalked (a minutely window beside a yearly one open for months):
      // past them, each question asks the schedule.
      auto start = windows[i].opens->Next(now);
      for (; start && *start <= open_now_->end && after_[i].size() < kMaxWindowsWalked;
           start = windows[i].opens->Next(*start)) {
        after_[i].push_back(*start);
      }
      known_until_[i] = start && *start <= open_now_->end ? after_[i].back() : open_now_->end;
    }
  }
}

std::optional<std::int64_t> MaintenanceTimeline::LatestAtOrBefore(std::size_t window,
                                                                  std::int64_t t) {
  std::vector<std::int64_t>& past = past_[window];
  while (!all_[window] && (past.empty() || past.back() > t)) {
    auto earlier = windows_[window].opens->Previous(past.empty() ? now_ : past.back() - 1);
    if (earlier) past.push_back(*earlier);
    all_[window] = !earlier || past.size() > static_cast<std::size_t>(kMaxWindowsWalked);
  }
  // The first (the latest) at or before t.
  auto at = std::lower_bound(past.begin(), past.end(), t, std::greater<std::int64_t>());
  if (at == past.end()) return std::nullopt;
  return *at;
}

std::optional<TimeSpan> MaintenanceTimeline::OpenAt(std::size_t window, std::int64_t t) {
  const MaintenanceWindow& w = windows_[window];
  if (!w.opens || t > known_until_[window]) return w.OpenAt(t);
  std::optional<std::int64_t> start;
  const std::vector<std::int64_t>& after = after_[window];
  auto later = std::upper_bound(after.begin(), after.end(), t);
  if (later != after.begin()) {
    start = *(later - 1);
  } else {
    start = LatestAtOrBefore(window, std::min(t, now_));
  }
  if (!start || t >= *start + w.duration) return std::nullopt;
  return TimeSpan{*start, *start + w.duration};
}

std::optional<TimeSpan> MaintenanceTimeline::OpenWindow(std::int64_t t) {
  if (t == now_ && now_known_) return open_now_;
  int passes = 0;
  return Joined(
      windows_.size(), [this](std::size_t i, std::int64_t at) { return OpenAt(i, at); }, t, passes);
}

std::int64_t MaintenanceTimeline::CoveredSince(std::int64_t from) const {
  if (!eager_) return CoveredSeconds(windows_, from, now_);
  if (from >= now_) return 0;
  // The first downtime that ends after `from`, and all after it.
  auto first = std::upper_bound(covered_.begin(), covered_.end(), from,
                                [](std::int64_t t, const TimeSpan& span) { return t < span.end; });
  std::size_t k = first - covered_.begin();
  std::int64_t covered = covered_before_.back() - covered_before_[k];
  if (first != covered_.end() && from > first->start) covered -= from - first->start;
  return covered;
}

MaintenanceTimeline* MaintenanceMemo::Find(const MaintenanceWindows& windows, std::int64_t now) {
  if (windows.empty()) return nullptr;
  std::size_t hash = std::hash<std::int64_t>()(now);
  for (const auto& window : windows) {
    hash = hash * 31 + std::hash<std::string>()(window.text);
  }
  auto [begin, end] = entries_.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    Entry& entry = it->second;
    if (entry.now != now || (entry.windows != &windows && !(*entry.windows == windows))) continue;
    if (!entry.timeline && timelines_ < kMaxMemoTimelines) {
      // Asked a second time: the set is shared, worth walking once for all.
      entry.windows = &windows;
      entry.timeline = std::make_unique<MaintenanceTimeline>(windows, now, /*eager=*/true);
      ++timelines_;
    }
    return entry.timeline.get();
  }
  if (entries_.size() < kMaxMemoSets) entries_.emplace(hash, Entry{&windows, now, nullptr});
  return nullptr;
}

}  // namespace schedwatch
