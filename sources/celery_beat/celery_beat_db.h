// Reads django-celery-beat's tables, read-only, from PostgreSQL (libpq) or SQLite (libsqlite3).
// Every cell comes back as text (NULL as nullopt); times as Unix seconds, converted by the
// database (EXTRACT(EPOCH ...) / strftime('%s', ...)), so the parsing after is the same.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schedwatch/result.h"

namespace schedwatch::celery_beat {

using Row = std::vector<std::optional<std::string>>;

struct Tables {
  std::vector<Row> tasks;  // kTaskColumns, one row per periodic task
  // django_celery_results_taskresult's newest kResultsPerTask per periodic task (else per task
  // name), kResultColumns; nullopt when django_celery_results is not installed.
  std::optional<std::vector<Row>> results;
  std::string results_error;  // why the results could not be read (a missing GRANT): runs unknown
  std::uint64_t bytes = 0;    // cell bytes received
};

// The columns of Tables::tasks, in order.
enum TaskColumn {
  kName,
  kTask,
  kEnabled,
  kOneOff,
  kLastRunAt,
  kExpires,
  kDescription,
  kTotalRunCount,
  kMinute,
  kHour,
  kDayOfMonth,
  kMonthOfYear,
  kDayOfWeek,
  kCrontabZone,
  kEvery,
  kPeriod,
  kSolarEvent,
  kClockedTime,
  kTaskColumns
};

// The columns of Tables::results, in order.
enum ResultColumn {
  kPeriodicTaskName,
  kTaskName,
  kStatus,
  kDateCreated,
  kDateDone,
  kResultColumns
};
inline constexpr int kResultsPerTask = 20;

// More rows than this is no periodic-task table a beat could run: refused, not read on.
inline constexpr std::size_t kMaxTasks = 1'000'000;

// `dsn`: "sqlite:///path" or a libpq connection string. The whole read (connecting included)
// must finish within `timeout`. Errors never hold the connection string's password.
Result<Tables> ReadTables(const std::string& dsn, std::chrono::seconds timeout,
                          const std::atomic<bool>* cancelled);

// A periodic task to insert (reconcile): a crontab (the five fields and its zone) or an
// interval (every, period) schedule.
struct NewTask {
  std::string name, task, description, args = "[]", kwargs = "{}", queue;
  std::optional<std::vector<std::string>> crontab;  // minute hour day_of_month month_of_year
                                                    // day_of_week, then the zone
  std::string every, period;                        // an interval, when no crontab
};

// Inserts `task` and, unless an equal one exists, its schedule row, then bumps
// django_celery_beat_periodictasks.last_update as Django's PeriodicTasks.changed does (a
// running DatabaseScheduler re-reads its tasks), all in one read-write transaction. false,
// with nothing written, when a task of that name exists. Errors never hold the password.
Result<bool> InsertTask(const std::string& dsn, const NewTask& task, std::chrono::seconds timeout);

}  // namespace schedwatch::celery_beat
