// Cron expressions and their fire times in an IANA time zone. Pure: no clock, no I/O
// (the tz database is read through Howard Hinnant's date/tz, which uses the system zoneinfo).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/calendar_spec.h"
#include "schedwatch/result.h"

namespace date {
class time_zone;
}

namespace schedwatch {

class CronCalendar;  // schedule.cc: calendar search over a CronExpression's bitsets

// What a scheduler does when DST skips or repeats a wall-clock time.
enum class DstPolicy {
  // Debian's Vixie cron 3.0pl1: after a forward jump (< 3 h), fixed-time jobs (neither the
  // minute nor the hour field starts with '*') whose times were skipped run once right after
  // the jump; wildcard jobs skip them. In a repeated hour fixed-time jobs run only the first
  // time, wildcard jobs run both times.
  kVixieCron,
  // Kubernetes CronJob (robfig/cron): fires at every real minute whose local wall clock
  // matches, so skipped wall times never fire and repeated ones fire twice.
  kWallClock,
  // Celery beat (crontab schedules, django-celery-beat's DatabaseScheduler), as a real beat run
  // under libfaketime across Europe/Berlin's changes of 2026 showed: beat waits for the next
  // matching wall-clock minute after its last run, so the first wall time a forward jump skips
  // runs once right at the jump (the others are skipped), and a repeated wall-clock stretch runs
  // only the first time. Vixie cron's rule for fixed-time jobs, for every job and every jump.
  kCeleryBeat,
};

// Whose reading of cron text applies: each scheduler parses schedules its own way, and the
// same text can fire on different days under two of them.
enum class CronDialect {
  // Debian cron 3.0pl1 (crontab sources, and file snapshots): 0 and 7 are Sunday, @reboot and
  // the @daily-style macros in any case; a day field whose first character is '*' (`*/10`
  // included) is unrestricted, so the day-of-month / day-of-week OR rule needs both fields to
  // start with something else.
  kDebianCron,
  // Kubernetes CronJob, which reads schedules with robfig/cron v3's standard parser: '?' means
  // '*', day-of-week is 0-6, macros are case-sensitive and @every, @reboot and TZ= prefixes are
  // refused; a day field is unrestricted only when one of its items is '*' or '?' without a
  // step above 1, so `*/10` restricts and `0 0 */10 * 0` fires on days 1, 11, 21, 31 and on
  // Sundays.
  kKubernetes,
  // GitHub Actions `on.schedule`, as its documentation states: POSIX cron fields with `*`, `,`,
  // `-`, `/`, month and weekday names, day-of-week 0-6, no macros. GitHub does not document its
  // day OR rule; Debian cron's is used.
  kGitHubActions,
  // systemd timers' OnCalendar= (systemd.time(7)), read by CalendarSpec, not CronExpression:
  // a schedule is one or more calendar expressions, DST as systemd handles it.
  kSystemdCalendar,
  // GitLab pipeline schedules, read by the fugit gem (`Fugit::Cron.parse`) as GitLab does:
  // Debian cron's fields plus an optional leading seconds field, `L` and negative days
  // (`-1` is the last day of the month), nth weekdays (`mon#2`, `fri#-1`), ranges that wrap
  // (`fri-mon`, `22-2`) and hour 24 as 0; no macros (GitLab appends the time zone, and fugit
  // reads no `@daily UTC`). Day-of-month is unrestricted when an item is `*` (or `*/1`),
  // day-of-week only when it is `*` alone; so `*/10` with a weekday is an OR.
  kGitLab,
  // Celery's crontab (celery.schedules.crontab_parser, Celery 5.2) in django-celery-beat's
  // order `minute hour day_of_month month_of_year day_of_week`: `*`, lists, ranges, `*/n` and
  // `a-b/n` (no `a/n`), ranges that wrap (`22-2`, `fri-mon`), day-of-week 0-6 (7 refused),
  // weekday names (any word whose first three letters name one, in any field: `mon` is 1 even
  // as a minute) but no month names; numbers as Python's int() reads them (`+5`, `1_0`), and
  // after a range or step whatever follows the part Celery's pattern matched is ignored, as
  // Celery's re.match ignores it. Day of month AND day of week AND month, always. No macros
  // but `@every <duration>`: an interval schedule (Celery's `schedule(run_every=...)`), a
  // period with no fire times of its own.
  kCelery,
  // Sidekiq-cron 1.8's `cron` (Fugit.do_parse, fugit 1.5): kGitLab's fields, and fugit's macros
  // (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @noon, @hourly; lower case only),
  // but neither @reboot nor @every. The time zone suffix fugit reads after the fields is split
  // off by the source (the job's `timezone`); fugit's natural language ("every 5 minutes") is
  // not read.
  kSidekiqCron,
};

// The five cron fields, parsed. No time zone.
class CronExpression {
 public:
  // Accepts the 5-field syntax of `dialect`: `*`, lists, ranges, steps (`*/n`, `a-b/n`, `a/n`),
  // 3-letter month and weekday names (any case, also as range ends), and the differences
  // CronDialect lists. The error names the field, e.g.
  // `minute field "61": 61 is out of range 0-59`.
  static Result<CronExpression> Parse(std::string_view text,
                                      CronDialect dialect = CronDialect::kDebianCron);

  const std::string& text() const { return text_; }
  // Seconds into the minute each fire time falls (fugit's optional first field), else 0.
  int second() const { return second_; }
  CronDialect dialect() const { return dialect_; }
  bool is_reboot() const { return reboot_; }
  // kCelery's `@every <duration>`: seconds between runs, counted from the last run; 0 otherwise.
  std::int64_t every() const { return every_; }
  // Neither the minute nor the hour field starts with '*' (Vixie cron's "fixed-time" job).
  bool fixed_time() const { return !minute_star_ && !hour_star_; }
  // Same set of fire times (`*/15` and `0,15,30,45` are equivalent).
  bool Equivalent(const CronExpression& other) const;

  bool MatchesMinute(int minute) const { return (minutes_ >> minute) & 1; }
  bool MatchesHour(int hour) const { return (hours_ >> hour) & 1; }
  // Day-of-month / day-of-week OR rule: when both fields are restricted (as the dialect decides),
  // a match of either runs the job. weekday: 0 = Sunday.
  bool MatchesDay(int month, int day_of_month, int weekday) const;

 private:
  friend class CronCalendar;

  std::string text_;
  CronDialect dialect_ = CronDialect::kDebianCron;
  bool reboot_ = false;
  std::int64_t every_ = 0;
  bool fires_ = false;  // some real calendar day matches (false for `0 0 30 2 *`)
  bool minute_star_ = false, hour_star_ = false, dom_star_ = false, dow_star_ = false;
  std::uint64_t minutes_ = 0;  // bits 0-59
  std::uint32_t hours_ = 0;    // bits 0-23
  std::uint32_t days_ = 0;     // bits 1-31
  std::uint16_t months_ = 0;   // bits 1-12
  std::uint8_t weekdays_ = 0;  // bits 0-6, Sunday = 0
  // kGitLab only. Bit n: the n-th day from the month's end (`L` and `-1` are 1).
  std::uint32_t days_from_end_ = 0;
  // [w] bit i: `w#(i+1)` for i < 5, `w#-(i-4)` for i >= 5 (weekday w, Sunday = 0).
  std::array<std::uint16_t, 7> nth_weekdays_{};
  std::uint8_t second_ = 0;  // the optional seconds field's first value
};

// What a systemd job's `schedule` says for a timer with only monotonic triggers (OnBootSec=,
// OnUnitActiveSec=, ... and no OnCalendar=), and what the systemd source reports as such a
// timer's live schedule.
inline constexpr std::string_view kMonotonicSchedule = "monotonic";

// A cron expression evaluated in a time zone under one scheduler's DST policy, or systemd
// calendar expressions (a timer fires at the earliest next time of its OnCalendar= lines), or a
// monotonic timer's, which has no fire times of its own.
// All times are Unix seconds; calendar fire times within a second count as that second.
class Schedule {
 public:
  Schedule() = default;  // never fires, until assigned
  Schedule(CronExpression expression, const date::time_zone* zone, DstPolicy policy);
  // `calendars` must not be empty; those that name no zone are evaluated in `zone`.
  Schedule(std::vector<CalendarSpec> calendars, const date::time_zone* zone);

  // A systemd timer with only monotonic triggers: no fire times, no period; the scheduler
  // says when it starts next (LiveObject::next_start).
  static Schedule Monotonic(const date::time_zone* zone);

  bool is_calendar() const { return !parts().calendars.empty(); }
  bool is_monotonic() const { return parts().monotonic; }
  // The cron expression (an empty one for calendar schedules).
  const CronExpression& expression() const { return parts().expression; }
  const std::vector<CalendarSpec>& calendars() const { return parts().calendars; }
  // As written: the cron line, the calendar expressions one per line, or "monotonic".
  std::string text() const;
  bool is_reboot() const { return expression().is_reboot(); }
  const date::time_zone* zone() const { return parts().zone; }
  DstPolicy policy() const { return parts().policy; }

  // Whether a scheduler's live schedule text means this schedule: for cron, the same text or an
  // equivalent expression of the dialect; for calendars, the same set of normalised
  // expressions (systemd reports each OnCalendar= normalised, the lines joined with "\n"); for
  // a monotonic schedule, a live "monotonic".
  bool SameAs(std::string_view live) const;

  // First fire time strictly after `after`; nullopt for @reboot, a monotonic schedule, a
  // Celery interval (`@every 30s`, whose runs follow the last one) or when it never fires
  // (`0 0 30 2 *`).
  std::optional<std::int64_t> Next(std::int64_t after) const;
  // Last fire time at or before `at_or_before`.
  std::optional<std::int64_t> Previous(std::int64_t at_or_before) const;
  // The longest gap between consecutive fire times over the year that starts at `from`
  // (the gap that crosses the year's end included), DST included. Schedules that fire
  // fewer than twice a year (`0 0 29 2 *`) look as many years ahead as they need.
  // nullopt for @reboot, a monotonic schedule or a schedule that never fires; a Celery
  // interval's own period. Calendar schedules
  // whose fire times are more than 200,000 a year are measured over their first 200,000.
  std::optional<std::int64_t> Period(std::int64_t from) const;

 private:
  // Immutable, so copies share it: jobs of one schedule (a fleet has many, "0 * * * *") hold it
  // once when the spec loader reuses the first job's (100,000 jobs: 16 bytes a job, not 128).
  struct Parts {
    CronExpression expression;
    std::vector<CalendarSpec> calendars;
    const date::time_zone* zone = nullptr;
    DstPolicy policy = DstPolicy::kWallClock;
    bool monotonic = false;
  };
  const Parts& parts() const;

  std::shared_ptr<const Parts> parts_;  // null: never fires
};

// Resolves an IANA zone name ("Asia/Seoul", "UTC") through the system tz database;
// nullptr when unknown.
const date::time_zone* FindZone(std::string_view name);

}  // namespace schedwatch
