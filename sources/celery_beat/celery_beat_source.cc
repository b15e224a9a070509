#include "sources/celery_beat/celery_beat_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "schedwatch/platform/file.h"
#include "sources/celery_beat/celery_beat_db.h"
#include "sources/celery_beat/celery_beat_mapping.h"
#include "sources/problems.h"

namespace schedwatch {
namespace {

constexpr std::size_t kMaxDsnBytes = 64 * 1024;

}  // namespace

Result<std::unique_ptr<CeleryBeatSource>> CeleryBeatSource::Create(const SourceOptions& options) {
  const auto* settings = options.spec->SettingsAs<celery_beat::CeleryBeatSettings>();
  if (settings == nullptr) return Error{"the settings are not a celery_beat source's"};
  std::unique_ptr<CeleryBeatSource> source(new CeleryBeatSource());
  source->settings_ = *settings;
  for (const JobSpec* job : options.jobs) source->roles_.push_back(job->role);
  std::sort(source->roles_.begin(), source->roles_.end());
  return source;
}

Result<std::unique_ptr<Source>> MakeCeleryBeatSource(const SourceOptions& options) {
  auto source = CeleryBeatSource::Create(options);
  if (!source) return Error{source.error()};
  return std::unique_ptr<Source>(std::move(*source));
}

Result<std::string> CeleryBeatSource::Dsn() const {
  if (settings_.dsn_file.empty()) return settings_.dsn;
  auto text = platform::ReadRegularFile(settings_.dsn_file, kMaxDsnBytes);
  if (!text) return Error{text.error()};  // names the file, never its content
  std::string dsn = std::move(*text);
  while (!dsn.empty() && (dsn.back() == '\n' || dsn.back() == '\r' || dsn.back() == ' ')) {
    dsn.pop_back();
  }
  if (dsn.empty()) return Error{fmt::format("{} is empty", settings_.dsn_file)};
  return dsn;
}

Result<SourceSnapshot> CeleryBeatSource::List(const ListContext& context) {
  auto dsn = Dsn();
  if (!dsn) return Error{dsn.error()};
  auto tables = celery_beat::ReadTables(*dsn, settings_.timeout.value_or(std::chrono::seconds(10)),
                                        context.cancelled);
  if (!tables) return Error{tables.error()};

  SourceSnapshot snapshot;
  std::vector<celery_beat::Task> tasks;
  ProblemSink unreadable;
  for (const auto& row : tables->tasks) {
    auto task = celery_beat::ParseTask(row);
    if (task) {
      tasks.push_back(std::move(*task));
    } else {
      unreadable.Add(MakeProblem(Reason::kMalformedObject, task.error()));
    }
  }
  std::vector<SourceProblem> problems;
  unreadable.AppendTo(problems);
  if (tasks.empty() && !problems.empty()) {
    return Error{fmt::format("none of the {} periodic tasks can be read ({})", tables->tasks.size(),
                             problems.front().message)};
  }
  snapshot.problems = std::move(problems);
  // Beat down: one problem of the source (its history), not a not_started per task.
  if (auto down = celery_beat::BeatDown(tasks, context.now, settings_.beat_lag.count())) {
    snapshot.history_error = *down;
  } else if (!tables->results_error.empty()) {
    snapshot.history_error =
        fmt::format("reading django_celery_results_taskresult: {}", tables->results_error);
  }

  std::size_t bad_results = 0;
  const auto results = tables->results
                           ? celery_beat::ResultHistories(tasks, *tables->results, &bad_results)
                           : std::map<std::string, RunHistory>{};
  if (bad_results > 0) {
    snapshot.problems.push_back(MakeProblem(
        Reason::kMalformedObject,
        fmt::format("{} rows of django_celery_results_taskresult unreadable", bad_results)));
  }
  for (const auto& task : tasks) {
    if (!task.marker) continue;  // not schedwatch's
    if (!*task.marker) {
      snapshot.problems.push_back(
          MakeProblem(Reason::kMalformedMarker,
                      fmt::format("periodic task \"{}\": {}", task.name, task.marker->error())));
      continue;
    }
    const Marker& marker = **task.marker;
    snapshot.objects.push_back(celery_beat::MakeLiveObject(task, marker, context.now));
    if (snapshot.history_error.empty() &&
        std::binary_search(roles_.begin(), roles_.end(), marker.role)) {
      RunHistory& history = snapshot.history[marker.role];
      if (auto it = results.find(task.name); it != results.end()) history.Merge(it->second);
      // last_run_at: a send the results may not show yet (queued, or results not kept).
      const RunHistory sent = celery_beat::LastRunHistory(task);
      if (sent.last_started &&
          (!history.last_started || *history.last_started < *sent.last_started)) {
        history.last_started = sent.last_started;
      }
    }
  }
  snapshot.problems = CapProblems(std::move(snapshot.problems));
  return snapshot;
}

}  // namespace schedwatch
