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
  return LoadCeleryBeatDsn(settings_.dsn, settings_.dsn_file);
}

Result<std::string> LoadCeleryBeatDsn(const std::string& dsn_text, const std::string& dsn_file) {
  if (dsn_file.empty()) return dsn_text;
  auto text = platform::ReadRegularFile(dsn_file, kMaxDsnBytes);
  if (!text) return Error{text.error()};  // names the file, never its content
  std::string dsn = std::move(*text);
  while (!dsn.empty() && (dsn.back() == '\n' || dsn.back() == '\r' || dsn.back() == ' ')) {
    dsn.pop_back();
  }
  if (dsn.empty()) return Error{fmt::format("{} is empty", dsn_file)};
  return dsn;
}

Result<celery_beat::Tables> CeleryBeatSource::Read(const ListContext& context) const {
  auto dsn = Dsn();
  if (!dsn) return Error{dsn.error()};
  return celery_beat::ReadTables(*dsn, settings_.timeout.value_or(std::chrono::seconds(10)),
                                 context.cancelled);
}

Result<SourceSnapshot> CeleryBeatSource::List(const ListContext& context) {
  auto tables = Read(context);
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

namespace {

// SQL's quoting of a text literal.
std::string SqlText(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  return quoted + "'";
}

// A description without its marker: "Export [schedwatch: role=x]" is "Export".
std::string WithoutMarker(const std::string& description) {
  const std::size_t at = description.find("[schedwatch:");
  if (at == std::string::npos) return description;
  const std::size_t close = description.find(']', at);
  std::string text =
      description.substr(0, at) + (close == std::string::npos ? "" : description.substr(close + 1));
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

class CeleryBeatDiscoverer : public Discoverer {
 public:
  explicit CeleryBeatDiscoverer(std::unique_ptr<CeleryBeatSource> source)
      : source_(std::move(source)) {}

  Result<Discovery> Discover(const ListContext& context) override {
    auto tables = source_->Read(context);
    if (!tables) return Error{tables.error()};
    Discovery discovery;
    std::vector<celery_beat::Task> tasks;
    for (const auto& row : tables->tasks) {
      auto task = celery_beat::ParseTask(row);
      if (task) {
        tasks.push_back(std::move(*task));
      } else {
        discovery.notes.push_back(task.error());
      }
    }
    std::size_t bad_results = 0;
    const auto results = tables->results
                             ? celery_beat::ResultHistories(tasks, *tables->results, &bad_results)
                             : std::map<std::string, RunHistory>{};
    if (!tables->results) {
      discovery.notes.push_back(
          "no django_celery_results_taskresult: run history is last_run_at alone");
    }
    descriptions_.clear();
    for (const auto& task : tasks) {
      FoundObject object;
      object.id = task.name;
      if (task.marker && !*task.marker) {
        discovery.notes.push_back(fmt::format("periodic task \"{}\": {}: its marker is no job's",
                                              task.name, task.marker->error()));
        continue;
      }
      if (task.marker) {
        object.role = (*task.marker)->role;
        object.spec_version = (*task.marker)->spec_version;
        object.marked = !object.spec_version.empty();
      }
      object.suggested_role = task.name;
      object.schedule = task.schedule;
      object.timezone = task.timezone;
      if (task.every) {
        object.repeat_seconds = *task.every;
        object.repeat_from = task.schedule;
      }
      object.not_run_because = celery_beat::InactiveReason(task, context.now);
      if (object.not_run_because.empty() && task.timezone.empty() && !task.every) {
        object.not_run_because = "a solar or clocked schedule, which no spec schedule means";
      }
      if (auto it = results.find(task.name); it != results.end()) {
        AddLongestRun(it->second, /*successes_only=*/true, object);
      }
      descriptions_[task.name] = WithoutMarker(task.description);
      discovery.objects.push_back(std::move(object));
    }
    return discovery;
  }

  // The UPDATE that sets the marker (or the Django admin's Description field).
  std::string MarkerInstructions(const FoundObject& object, const std::string& role,
                                 const std::string& spec_version) const override {
    auto text = descriptions_.find(object.id);
    const std::string description = DescriptionWithMarker(
        text == descriptions_.end() ? "" : text->second, Marker{role, spec_version});
    return fmt::format(
        "periodic task \"{}\": set its description (Django admin: Periodic tasks, Description) "
        "to\n  {}\n  UPDATE django_celery_beat_periodictask SET description = {} WHERE name = "
        "{};\n",
        object.id, description, SqlText(description), SqlText(object.id));
  }

 private:
  std::unique_ptr<CeleryBeatSource> source_;
  std::map<std::string, std::string> descriptions_;  // by task name, without the marker
};

}  // namespace

Result<std::unique_ptr<Discoverer>> MakeCeleryBeatDiscoverer(const SourceOptions& options) {
  auto source = CeleryBeatSource::Create(SourceOptions{options.spec, {}, {}});
  if (!source) return Error{source.error()};
  return std::unique_ptr<Discoverer>(std::make_unique<CeleryBeatDiscoverer>(std::move(*source)));
}

}  // namespace schedwatch
