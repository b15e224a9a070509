#include "schedwatch/timefmt.h"

#include <date/date.h>
#include <date/tz.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace schedwatch {

std::optional<std::int64_t> ParseRfc3339(std::string_view text) {
  int year, month, day, hour, minute, second, consumed = 0;
  std::string buffer(text.substr(0, 64));
  if (std::sscanf(buffer.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &year, &month, &day, &hour,
                  &minute, &second, &consumed) != 6 ||
      consumed != 19) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(19);
  if (!rest.empty() && rest[0] == '.') {  // fraction of a second
    std::size_t digits = 1;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits == 1) return std::nullopt;
    rest.remove_prefix(digits);
  }
  int offset_seconds = 0;
  if (rest == "Z" || rest == "z") {
    offset_seconds = 0;
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int offset_hours = 0, offset_minutes = 0;
    if (std::sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &offset_hours,
                    &offset_minutes) != 2) {
      return std::nullopt;
    }
    offset_seconds = (rest[0] == '-' ? -1 : 1) * (offset_hours * 3600 + offset_minutes * 60);
  } else {
    return std::nullopt;
  }
  date::year_month_day ymd{date::year{year}, date::month{static_cast<unsigned>(month)},
                           date::day{static_cast<unsigned>(day)}};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  auto days = date::sys_days(ymd).time_since_epoch().count();
  return static_cast<std::int64_t>(days) * 86400 + hour * 3600 + minute * 60 + second -
         offset_seconds;
}

std::string FormatRfc3339(std::int64_t unix_seconds, const date::time_zone* zone) {
  // Peers send any 64-bit number (an 18-digit rate-limit reset): bounded to years 0000-9999
  // before the calendar arithmetic, which would overflow into a garbage date.
  constexpr std::int64_t kFirst = -62167219200;  // 0000-01-01T00:00:00Z
  constexpr std::int64_t kLast = 253402300799;   // 9999-12-31T23:59:59Z
  unix_seconds = std::min(std::max(unix_seconds, kFirst), kLast);
  date::sys_seconds instant{std::chrono::seconds(unix_seconds)};
  if (zone == nullptr) return date::format("%FT%TZ", instant);
  auto local = date::make_zoned(zone, instant);
  auto offset = local.get_info().offset.count();
  std::string text = date::format("%FT%T", local.get_local_time());
  char sign = offset < 0 ? '-' : '+';
  offset = offset < 0 ? -offset : offset;
  return fmt::format("{}{}{:02}:{:02}", text, sign, offset / 3600, offset / 60 % 60);
}

}  // namespace schedwatch
