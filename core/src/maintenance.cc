#include "schedwatch/maintenance.h"

#include <algorithm>

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
std::optional<TimeSpan> Joined(const MaintenanceWindows& windows, std::int64_t t, int& passes) {
  std::optional<TimeSpan> open;
  for (passes = 0; passes <= kMaxJoinedWindows; ++passes) {
    std::int64_t at = open ? open->end : t;
    bool grew = false;
    for (const auto& window : windows) {
      auto span = window.OpenAt(at);
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
    // The window that may already be open at `from`, then each one opening before `to`.
    std::optional<std::int64_t> start = window.opens->Previous(from);
    if (!start) start = window.opens->Next(from);
    for (int walked = 0; start && *start < to && walked < kMaxWindowsWalked; ++walked) {
      add({*start, *start + window.duration});
      start = window.opens->Next(*start);
    }
  }
  std::sort(spans.begin(), spans.end(),
            [](const TimeSpan& a, const TimeSpan& b) { return a.start < b.start; });
  std::int64_t covered = 0;
  std::int64_t reached = from;
  for (const auto& span : spans) {
    std::int64_t start = std::max(span.start, reached);
    if (span.end > start) {
      covered += span.end - start;
      reached = span.end;
    }
  }
  return covered;
}

}  // namespace schedwatch
