#include "sources/celery_beat/celery_beat_mapping.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "schedwatch/duration.h"
#include "schedwatch/schedule.h"
#include "schedwatch/timefmt.h"

namespace schedwatch::celery_beat {
namespace {

// Column values longer than Django's own limits are no row Django wrote (name: 200, crontab
// fields: 240 at most in any version, timezone 63); descriptions are TEXT, kept to 64 KiB.
constexpr std::size_t kMaxShortText = 255;
constexpr std::size_t kMaxDescription = 64 * 1024;

std::optional<std::int64_t> Integer(const std::optional<std::string>& cell) {
  if (!cell || cell->empty() || cell->size() > 20) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(cell->c_str(), &end, 10);
  if (errno != 0 || end != cell->c_str() + cell->size()) return std::nullopt;
  return value;
}

// PostgreSQL says t/f, SQLite 1/0.
std::optional<bool> Bool(const std::optional<std::string>& cell) {
  if (!cell) return std::nullopt;
  if (*cell == "t" || *cell == "1" || *cell == "true") return true;
  if (*cell == "f" || *cell == "0" || *cell == "false") return false;
  return std::nullopt;
}

std::optional<std::int64_t> PeriodSeconds(std::string_view period) {
  if (period == "seconds") return 1;
  if (period == "minutes") return 60;
  if (period == "hours") return 3600;
  if (period == "days") return 86400;
  return std::nullopt;  // microseconds: not a period the spec's durations can say
}

}  // namespace

Result<Task> ParseTask(const Row& row) {
  if (row.size() != kTaskColumns) return Error{"a row of the wrong width"};
  Task task;
  if (!row[kName] || row[kName]->empty() || row[kName]->size() > kMaxShortText) {
    return Error{"a periodic task without a readable name"};
  }
  task.name = *row[kName];
  auto fail = [&task](std::string_view what) {
    return Error{fmt::format("periodic task \"{}\": {}", task.name, what)};
  };
  task.task = row[kTask].value_or("");
  task.description = row[kDescription].value_or("");
  if (task.task.size() > kMaxShortText) return fail("task name longer than 255");
  if (task.description.size() > kMaxDescription) return fail("description longer than 64 KiB");
  auto enabled = Bool(row[kEnabled]);
  auto one_off = Bool(row[kOneOff]);
  if (!enabled || !one_off) return fail("enabled or one_off is not a boolean");
  task.enabled = *enabled;
  task.one_off = *one_off;
  task.total_run_count = Integer(row[kTotalRunCount]).value_or(0);
  if (row[kLastRunAt]) {
    task.last_run_at = Integer(row[kLastRunAt]);
    if (!task.last_run_at) return fail("last_run_at is not a time");
  }
  if (row[kExpires]) {
    task.expires = Integer(row[kExpires]);
    if (!task.expires) return fail("expires is not a time");
  }
  if (row[kMinute]) {
    std::string fields;
    for (int c : {kMinute, kHour, kDayOfMonth, kMonthOfYear, kDayOfWeek}) {
      const std::string& field = row[c].value_or("");
      if (field.empty() || field.size() > kMaxShortText)
        return fail("a crontab field is empty or too long");
      if (!fields.empty()) fields += ' ';
      fields += field;
    }
    task.schedule = std::move(fields);
    task.timezone = row[kCrontabZone].value_or("UTC");
    if (task.timezone.size() > kMaxShortText) return fail("crontab timezone longer than 255");
  } else if (row[kEvery]) {
    auto every = Integer(row[kEvery]);
    auto unit = PeriodSeconds(row[kPeriod].value_or(""));
    if (!every || *every <= 0 || !unit || *every > kMaxDurationSeconds / *unit) {
      return fail(fmt::format("interval every={} period={} is not a period schedwatch can say",
                              row[kEvery]->substr(0, 20), row[kPeriod].value_or("").substr(0, 20)));
    }
    task.every = *every * *unit;
    task.schedule = "@every " + FormatDuration(*task.every);
  } else if (row[kSolarEvent]) {
    task.schedule = "solar " + row[kSolarEvent]->substr(0, kMaxShortText);
  } else if (row[kClockedTime]) {
    auto at = Integer(row[kClockedTime]);
    if (!at) return fail("clocked_time is not a time");
    task.schedule = "clocked " + FormatRfc3339(*at);
  } else {
    return fail("no schedule (crontab, interval, solar or clocked)");
  }
  task.marker = DescriptionMarker(task.description);
  return task;
}

std::string InactiveReason(const Task& task, std::int64_t now) {
  if (!task.enabled) return "disabled (enabled = false)";
  if (task.one_off && (task.total_run_count > 0 || task.last_run_at)) {
    return "a one_off task that has run";
  }
  if (task.expires && *task.expires <= now) {
    return fmt::format("expired at {}", FormatRfc3339(*task.expires));
  }
  return {};
}

LiveObject MakeLiveObject(const Task& task, const Marker& marker, std::int64_t now) {
  const std::string reason = InactiveReason(task, now);
  LiveObject object(task.name, marker.role, task.schedule, task.timezone, marker.spec_version,
                    reason.empty());
  if (!reason.empty()) object.set_state(reason);
  // An interval has no fire times: its next start is beat's own, the last run plus the period.
  if (task.every && task.last_run_at) object.next_start = *task.last_run_at + *task.every;
  return object;
}

RunHistory LastRunHistory(const Task& task) {
  RunHistory history;
  if (task.last_run_at) history.last_started = *task.last_run_at;
  return history;
}

std::map<std::string, RunHistory> ResultHistories(const std::vector<Task>& tasks,
                                                  const std::vector<Row>& results,
                                                  std::size_t* unreadable) {
  std::map<std::string, const Task*> by_name;
  std::map<std::string, const Task*> by_task;  // null: more than one periodic task sends it
  for (const Task& task : tasks) {
    by_name[task.name] = &task;
    auto [it, fresh] = by_task.emplace(task.task, &task);
    if (!fresh) it->second = nullptr;
  }
  std::map<std::string, RunHistory> histories;
  for (const Row& row : results) {
    const Task* task = nullptr;
    if (row.size() == kResultColumns && row[kPeriodicTaskName]) {
      auto it = by_name.find(*row[kPeriodicTaskName]);
      if (it != by_name.end()) task = it->second;
    } else if (row.size() == kResultColumns && row[kTaskName]) {
      auto it = by_task.find(*row[kTaskName]);
      if (it != by_task.end()) task = it->second;
    }
    if (task == nullptr) continue;  // another task's, or an ad hoc call's
    const auto created = Integer(row[kDateCreated]);
    const auto done = Integer(row[kDateDone]);
    const std::string status = row[kStatus].value_or("");
    Run run;
    if (!created || !done) {
      ++*unreadable;
      continue;
    }
    run.started = *created;
    if (status == "SUCCESS" || status == "FAILURE" || status == "REVOKED") {
      run.finished = *done;
      run.outcome = status == "SUCCESS" ? Run::Outcome::kSucceeded : Run::Outcome::kFailed;
    } else if (status != "STARTED" && status != "RETRY" && status != "RECEIVED" &&
               status != "PENDING") {
      ++*unreadable;
      continue;
    }
    histories[task->name].Add(run);
  }
  return histories;
}

std::optional<std::string> BeatDown(const std::vector<Task>& tasks, std::int64_t now,
                                    std::int64_t lag) {
  std::optional<std::int64_t> newest;
  for (const Task& task : tasks) {
    if (task.last_run_at) newest = std::max(newest.value_or(*task.last_run_at), *task.last_run_at);
  }
  if (!newest) return std::nullopt;
  const std::int64_t deadline = now - lag;
  std::optional<std::int64_t> earliest_due;
  const Task* due_task = nullptr;
  for (const Task& task : tasks) {
    if (!InactiveReason(task, now).empty()) continue;
    std::optional<std::int64_t> due;
    if (task.every) {
      if (task.last_run_at) due = *task.last_run_at + *task.every;
    } else if (!task.timezone.empty()) {
      auto expression = CronExpression::Parse(task.schedule, CronDialect::kCelery);
      const date::time_zone* zone = FindZone(task.timezone);
      if (expression && zone != nullptr) {
        due = Schedule(std::move(*expression), zone, DstPolicy::kCeleryBeat).Next(*newest);
      }
    }
    if (due && *due > *newest && *due <= deadline && (!earliest_due || *due < *earliest_due)) {
      earliest_due = due;
      due_task = &task;
    }
  }
  if (!earliest_due) return std::nullopt;
  return fmt::format(
      "beat is not running: periodic task \"{}\" was due at {} and no task's last_run_at has "
      "moved since {}",
      due_task->name, FormatRfc3339(*earliest_due), FormatRfc3339(*newest));
}

}  // namespace schedwatch::celery_beat
