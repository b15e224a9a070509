// Fire times of a list of systemd calendar expressions, in whole seconds.
#include "calendar_schedule.h"

#include <date/tz.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "civil.h"
#include "schedwatch/schedule.h"

namespace schedwatch {
namespace {

constexpr std::int64_t kUsecPerSec = 1000000;
constexpr std::int64_t kSecondsPerDay = 86400;
constexpr std::int64_t kLastTime = 253402300799;  // 9999-12-31T23:59:59Z
// Period gives up counting after as many fire times (a timer firing every second of the year).
constexpr int kMaxPeriodSteps = 200000;

const date::time_zone* ZoneOf(const CalendarSpec& spec, const date::time_zone* local) {
  if (spec.zone_name().empty()) return local;
  return spec.zone_name() == "UTC" ? nullptr : FindZone(spec.zone_name());
}

std::optional<std::int64_t> NextOf(const CalendarSpec& spec, const date::time_zone* zone,
                                   std::int64_t after) {
  if (after >= kLastTime) return std::nullopt;
  // Fire times inside second `after` do not count: the first one from second after + 1.
  const std::int64_t base = std::max<std::int64_t>(after, -1) * kUsecPerSec + (kUsecPerSec - 1);
  auto next = spec.NextUsec(base, zone);
  if (!next) return std::nullopt;
  return FloorDiv(*next, kUsecPerSec);
}

// The longest gap over [from, end) of one expression. Inside a day with no DST change the fire
// times are the expression's seconds of the day, so such a day is crossed at once.
std::optional<std::int64_t> PeriodOf(const CalendarSpec& spec, const date::time_zone* local,
                                     std::int64_t from, std::int64_t end) {
  const date::time_zone* zone = ZoneOf(spec, local);
  const std::vector<int> seconds = spec.SecondsOfDay();
  std::int64_t within_day = 0;
  for (std::size_t i = 1; i < seconds.size(); ++i) {
    within_day = std::max<std::int64_t>(within_day, seconds[i] - seconds[i - 1]);
  }
  std::optional<std::int64_t> t = NextOf(spec, zone, from - 1);
  if (!t) return std::nullopt;
  if (*t >= end) {
    auto second = NextOf(spec, zone, *t);
    if (!second) return std::nullopt;
    return *second - *t;
  }
  std::optional<std::int64_t> longest;
  for (int step = 0; step < kMaxPeriodSteps; ++step) {
    if (seconds.size() > 1) {
      std::int64_t offset = 0;
      bool plain = true;
      std::int64_t day_start = 0;
      if (zone != nullptr) {
        const date::sys_info info = zone->get_info(date::sys_seconds{std::chrono::seconds{*t}});
        offset = info.offset.count();
        day_start = FloorDiv(*t + offset, kSecondsPerDay) * kSecondsPerDay - offset;
        plain = info.begin.time_since_epoch().count() <= day_start - kSecondsPerDay &&
                info.end.time_since_epoch().count() >= day_start + 2 * kSecondsPerDay;
      } else {
        day_start = FloorDiv(*t, kSecondsPerDay) * kSecondsPerDay;
      }
      const std::int64_t last = day_start + seconds.back();
      if (plain && last > *t) {
        longest = std::max(longest.value_or(0), within_day);
        t = last;
      }
    }
    auto next = NextOf(spec, zone, *t);
    if (!next) return longest;  // it stops firing (a date range, or the end of 2199)
    longest = std::max(longest.value_or(0), *next - *t);
    if (*next >= end) break;
    t = next;
  }
  return longest;
}

}  // namespace

std::string CalendarText(const std::vector<CalendarSpec>& calendars) {
  std::string text;
  for (const auto& calendar : calendars) {
    if (!text.empty()) text += '\n';
    text += calendar.text();
  }
  return text;
}

bool SameCalendars(const std::vector<CalendarSpec>& calendars, std::string_view live) {
  std::set<std::string, std::less<>> desired, seen;
  for (const auto& calendar : calendars) desired.insert(calendar.normalized());
  std::size_t start = 0;
  while (start <= live.size()) {
    const std::size_t end = std::min(live.find('\n', start), live.size());
    const std::string_view line = live.substr(start, end - start);
    auto parsed = CalendarSpec::Parse(line);
    seen.insert(parsed ? parsed->normalized() : std::string(line));
    start = end + 1;
  }
  return desired == seen;
}

std::optional<std::int64_t> CalendarNext(const std::vector<CalendarSpec>& calendars,
                                         const date::time_zone* zone, std::int64_t after) {
  std::optional<std::int64_t> earliest;
  for (const auto& calendar : calendars) {
    auto next = NextOf(calendar, ZoneOf(calendar, zone), after);
    if (next && (!earliest || *next < *earliest)) earliest = next;
  }
  return earliest;
}

std::optional<std::int64_t> CalendarPrevious(const std::vector<CalendarSpec>& calendars,
                                             const date::time_zone* zone,
                                             std::int64_t at_or_before) {
  if (at_or_before < 0) return std::nullopt;
  at_or_before = std::min(at_or_before, kLastTime);
  auto next = [&](std::int64_t after) { return CalendarNext(calendars, zone, after); };
  // A window (low, at_or_before] with a fire time in it, widened until there is one.
  std::optional<std::int64_t> fire;
  for (std::int64_t window = 3600;; window *= 8) {
    const std::int64_t low = std::max<std::int64_t>(at_or_before - window, -1);
    fire = next(low);
    if (fire && *fire <= at_or_before) break;
    if (low == -1) return std::nullopt;
  }
  // The last fire time in it: no fire time lies in (high, at_or_before].
  std::int64_t high = at_or_before;
  while (true) {
    auto after = next(*fire);
    if (!after || *after > high) return fire;
    fire = after;
    const std::int64_t middle = *fire + (high - *fire) / 2;
    auto later = next(middle);
    if (later && *later <= high) {
      fire = later;
    } else {
      high = middle;
    }
  }
}

std::optional<std::int64_t> CalendarPeriod(const std::vector<CalendarSpec>& calendars,
                                           const date::time_zone* zone, std::int64_t from) {
  if (from < 0 || from > kLastTime) return std::nullopt;
  const std::int64_t end = from + 365 * kSecondsPerDay;
  if (calendars.size() == 1) return PeriodOf(calendars.front(), zone, from, end);
  auto next = [&](std::int64_t after) { return CalendarNext(calendars, zone, after); };
  std::optional<std::int64_t> t = next(from - 1);
  if (!t) return std::nullopt;
  if (*t >= end) {
    auto second = next(*t);
    if (!second) return std::nullopt;
    return *second - *t;
  }
  std::optional<std::int64_t> longest;
  for (int step = 0; step < kMaxPeriodSteps; ++step) {
    auto after = next(*t);
    if (!after) return longest;
    longest = std::max(longest.value_or(0), *after - *t);
    if (*after >= end) break;
    t = after;
  }
  return longest;
}

}  // namespace schedwatch
