// Schedule's side for systemd calendar expressions (schedule.cc dispatches here).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/calendar_spec.h"

namespace schedwatch {

std::string CalendarText(const std::vector<CalendarSpec>& calendars);
bool SameCalendars(const std::vector<CalendarSpec>& calendars, std::string_view live);
std::optional<std::int64_t> CalendarNext(const std::vector<CalendarSpec>& calendars,
                                         const date::time_zone* zone, std::int64_t after);
std::optional<std::int64_t> CalendarPrevious(const std::vector<CalendarSpec>& calendars,
                                             const date::time_zone* zone,
                                             std::int64_t at_or_before);
std::optional<std::int64_t> CalendarPeriod(const std::vector<CalendarSpec>& calendars,
                                           const date::time_zone* zone, std::int64_t from);

}  // namespace schedwatch
