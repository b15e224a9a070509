// Pure mapping of django-celery-beat's rows (celery_beat_db.h) to schedwatch's live objects and
// run history, and the judgement of whether beat itself runs. No I/O, no clock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/result.h"
#include "sources/celery_beat/celery_beat_db.h"
#include "sources/marker.h"

namespace schedwatch::celery_beat {

// One periodic task, read.
struct Task {
  std::string name;  // PeriodicTask.name, unique: the live object's id
  std::string task;  // the Celery task it sends ("app.tasks.export")
  std::string description;
  bool enabled = true;
  bool one_off = false;
  std::int64_t total_run_count = 0;
  std::optional<std::int64_t> last_run_at, expires;
  // As the spec writes it: the crontab's five fields in django-celery-beat's order
  // ("*/15 1-2 * * *"), "@every 30s" for an interval, "solar sunrise", "clocked <RFC 3339>".
  std::string schedule;
  std::string timezone;                  // a crontab's own zone; empty for the others
  std::optional<std::int64_t> every;     // an interval's seconds
  std::optional<Result<Marker>> marker;  // from the description; nullopt: not schedwatch's
};

// An Error names what is wrong with the row (never its description, which may be long).
Result<Task> ParseTask(const Row& row);

// Why beat will not send the task (any more), for people; empty when it will.
std::string InactiveReason(const Task& task, std::int64_t now);

// The task as a live object: its name, role and spec_version from the marker, schedule, zone,
// enabled unless InactiveReason says why (then its state).
LiveObject MakeLiveObject(const Task& task, const Marker& marker, std::int64_t now);

// last_run_at is when beat last sent the task: a start, whose outcome the table does not say.
RunHistory LastRunHistory(const Task& task);

// The runs django_celery_results recorded, by periodic task name. A result belongs to the
// periodic task its periodic_task_name names (Celery writes it with result_extended); one without
// (older Celery, or result_extended off) to the one periodic task that sends its task_name, when
// exactly one does. date_created is the start (the row is made when the task starts only with
// task_track_started; else at its end), date_done the end. SUCCESS succeeded; FAILURE and
// REVOKED failed; STARTED, RETRY, RECEIVED and PENDING are running. Unreadable rows are skipped
// and counted in `unreadable`.
std::map<std::string, RunHistory> ResultHistories(const std::vector<Task>& tasks,
                                                  const std::vector<Row>& results,
                                                  std::size_t* unreadable);

// Beat is down when no task's last_run_at has moved since a time at which some active task was
// due (a crontab task's fire time, an interval task's last run plus its interval) longer than
// `lag` seconds ago: a running beat would have sent it and written a newer last_run_at. Then
// the reason, for people; nullopt while beat runs (or nothing ever ran).
std::optional<std::string> BeatDown(const std::vector<Task>& tasks, std::int64_t now,
                                    std::int64_t lag);

}  // namespace schedwatch::celery_beat
