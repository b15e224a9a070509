// systemd calendar events (OnCalendar=, systemd.time(7)), read and iterated as systemd 252 does.
// Pure: no clock, no I/O beyond the system tz database.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/result.h"

namespace date {
class time_zone;
}

namespace schedwatch {

// One calendar event expression, e.g. `Mon..Fri *-*-* 09:00`, `weekly`, `*-*~1 12:00 UTC`.
class CalendarSpec {
 public:
  // One item of a field: `start`, `start..stop`, `start/repeat`, `start..stop/repeat`.
  // Seconds are held in microseconds. stop is -1 when there is no upper end; repeat 0 when
  // the item is one value.
  struct Component {
    int start = 0;
    int stop = -1;
    int repeat = 0;
  };
  using Chain = std::vector<Component>;  // empty: `*`

  // Accepts exactly what systemd's calendar_spec_from_string accepts (the text as in the timer
  // file, no surrounding blanks), but time zone abbreviations such as "CET" (systemd reads those
  // against its own environment's zone): the error says what is wrong, e.g.
  // `"*-*-* 25:00": hour 25 is out of range 0-23`.
  static Result<CalendarSpec> Parse(std::string_view text);

  const std::string& text() const { return text_; }
  // What `systemd-analyze calendar` prints as "Normalized form:" and what systemd reports on
  // D-Bus (TimersCalendar): `daily` -> `*-*-* 00:00:00`.
  const std::string& normalized() const { return normalized_; }
  // The zone the expression names: "UTC", an IANA name, or "" (the host's zone applies).
  const std::string& zone_name() const { return zone_name_; }

  // First elapse strictly after `after_usec` (microseconds since the epoch), with the same
  // steps systemd takes, DST included: a wall time that a spring-forward change skips does not
  // elapse, one the fall-back change repeats elapses once. `local` is the host's zone, used
  // when the expression names none (nullptr: UTC). nullopt when it never elapses again
  // (systemd stops at the end of 2199).
  std::optional<std::int64_t> NextUsec(std::int64_t after_usec, const date::time_zone* local) const;

  // Whole seconds of the day (0-86399) at which it elapses, on a day that matches its date and
  // has no DST change. Sorted.
  std::vector<int> SecondsOfDay() const;

 private:
  friend class CalendarStepper;

  std::string text_;
  std::string normalized_;
  std::string zone_name_;
  bool utc_ = false;
  const date::time_zone* zone_ = nullptr;  // the named zone; nullptr for UTC or none
  int weekdays_ = -1;                      // bit 0 = Monday; -1 = any
  bool end_of_month_ = false;              // the day field counts back from the month's end
  Chain year_, month_, day_, hour_, minute_, microsecond_;
};

}  // namespace schedwatch
