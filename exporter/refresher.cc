#include "exporter/refresher.h"

#include <fmt/format.h>
#include <malloc.h>
#include <prometheus/text_serializer.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "exporter/checkpoint.h"
#include "exporter/exposition.h"
#include "reconcile/ledger.h"
#include "schedwatch/build_info.h"
#include "schedwatch/platform/log.h"
#include "schedwatch/timefmt.h"
#include "sources/problems.h"
#include "sources/catalog.h"
#include "sources/run_record.h"

namespace schedwatch {

// One source of the spec, and the bookkeeping that keeps a hung read from piling up.
struct Refresher::Runner {
  std::string name;
  std::string type;
  std::chrono::milliseconds timeout;
  std::shared_ptr<Source> source;
  std::vector<std::string> desired_roles;
  std::shared_ptr<std::atomic<bool>> busy = std::make_shared<std::atomic<bool>>(false);
};

namespace {

// A read of one source: the snapshot of the last list, and the roles that had no object in
// the first list (the second list, after a short delay, confirms or refutes their absence).
struct ReadOutcome {
  Result<SourceSnapshot> snapshot = Error{"not read"};
  std::set<std::string> absent_in_first_read;
  std::vector<SourceProblem> recovered_in_first_read;  // when a confirming read followed
  double seconds = 0;
};

struct PendingRead {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  ReadOutcome outcome;
  std::atomic<bool> cancelled{false};
};

std::set<std::string> RolesWithoutObject(const std::vector<std::string>& roles,
                                         const SourceSnapshot& snapshot) {
  std::set<std::string> present;
  for (const auto& object : snapshot.objects) present.insert(object.role);
  std::set<std::string> absent;
  for (const auto& role : roles) {
    if (!present.count(role)) absent.insert(role);
  }
  return absent;
}

ReadOutcome ReadSource(Source& source, const std::vector<std::string>& desired_roles,
                       ListContext context, std::chrono::milliseconds confirm_delay) {
  auto start = std::chrono::steady_clock::now();
  ReadOutcome outcome;
  outcome.snapshot = source.List(context);
  if (outcome.snapshot) {
    outcome.absent_in_first_read = RolesWithoutObject(desired_roles, *outcome.snapshot);
    if (!outcome.absent_in_first_read.empty()) {
      for (auto& problem : outcome.snapshot->problems) {
        if (problem.recovered) outcome.recovered_in_first_read.push_back(std::move(problem));
      }
      auto until = std::chrono::steady_clock::now() + confirm_delay;
      while (std::chrono::steady_clock::now() < until && !context.cancelled->load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      outcome.snapshot = source.List(context);
    }
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

void SortFamilies(std::vector<prometheus::MetricFamily>& families) {
  std::sort(families.begin(), families.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  for (auto& family : families) {
    std::sort(family.metric.begin(), family.metric.end(), [](const auto& a, const auto& b) {
      return std::lexicographical_compare(a.label.begin(), a.label.end(), b.label.begin(),
                                          b.label.end(), [](const auto& x, const auto& y) {
                                            return std::tie(x.name, x.value) <
                                                   std::tie(y.name, y.value);
                                          });
    });
  }
}

}  // namespace

Refresher::Refresher(RefresherOptions options)
    : options_(std::move(options)),
      source_up_(prometheus::BuildGauge()
                     .Name("schedwatch_source_up")
                     .Help("1 if the source's last list succeeded, else 0.")
                     .Register(registry_)),
      source_last_sync_(prometheus::BuildGauge()
                            .Name("schedwatch_source_last_sync_timestamp_seconds")
                            .Help("End of the source's last successful list, Unix seconds.")
                            .Register(registry_)),
      source_sync_duration_(prometheus::BuildGauge()
                                .Name("schedwatch_source_sync_duration_seconds")
                                .Help("Duration of the source's last list, confirming re-read "
                                      "included.")
                                .Register(registry_)),
      source_errors_(prometheus::BuildCounter()
                         .Name("schedwatch_source_errors_total")
                         .Help("Failed lists and malformed items, by reason.")
                         .Register(registry_)),
      source_unowned_(prometheus::BuildGauge()
                          .Name("schedwatch_source_unowned_objects")
                          .Help("Objects carrying the schedwatch marker whose role is not in the "
                                "spec.")
                          .Register(registry_)),
      duplicate_runs_prevented_(
          prometheus::BuildCounter()
              .Name("schedwatch_job_duplicate_runs_prevented_total")
              .Help("Runs schedwatch_run skipped because another copy of the role held its "
                    "guard (from its skipped records).")
              .Register(registry_)),
      last_cycle_(prometheus::BuildGauge()
                      .Name("schedwatch_exporter_last_cycle_timestamp_seconds")
                      .Help("End of the last complete refresh, Unix seconds: the watcher's own "
                            "heartbeat.")
                      .Register(registry_)
                      .Add({})),
      reload_successful_(prometheus::BuildGauge()
                             .Name("schedwatch_exporter_config_last_reload_successful")
                             .Help("1 if the last spec (re)load succeeded, else 0.")
                             .Register(registry_)
                             .Add({})),
      reload_success_time_(
          prometheus::BuildGauge()
              .Name("schedwatch_exporter_config_last_reload_success_timestamp_seconds")
              .Help("Unix time of the last successful spec (re)load.")
              .Register(registry_)
              .Add({})) {
  const BuildInfo& build = GetBuildInfo();
  prometheus::BuildGauge()
      .Name("schedwatch_exporter_build_info")
      .Help(
          "A metric with a constant '1' value labeled by version, revision, branch, compiler "
          "and platform from which schedwatch_exporter was built.")
      .Register(registry_)
      .Add({{"version", build.version},
            {"revision", build.revision},
            {"branch", build.branch},
            {"compiler", build.compiler},
            {"platform", build.platform}})
      .Set(1);
  reload_successful_.Set(1);
}

Refresher::~Refresher() { Stop(); }

Result<std::unique_ptr<Refresher>> Refresher::Create(RefresherOptions options,
                                                     std::shared_ptr<const Spec> spec) {
  std::unique_ptr<Refresher> refresher(new Refresher(std::move(options)));
  auto config = refresher->Build(std::move(spec));
  if (!config) return Error{config.error()};
  std::int64_t now = refresher->Now();
  for (const auto& job : (*config)->spec->jobs) refresher->desired_since_[job.role] = now;
  refresher->config_ = *config;
  refresher->reload_success_time_.Set(static_cast<double>(now));
  RefreshResult empty;
  empty.spec = refresher->config_->spec;
  refresher->Publish(std::move(empty));
  return refresher;
}

Result<std::shared_ptr<Refresher::Config>> Refresher::Build(std::shared_ptr<const Spec> spec) {
  auto config = std::make_shared<Config>();
  config->spec = spec;
  for (const auto& [name, source_spec] : spec->sources) {
    SourceOptions source_options;
    source_options.spec = &source_spec;
    auto runner = std::make_shared<Runner>();
    for (const auto& job : spec->jobs) {
      if (job.source != name) continue;
      source_options.jobs.push_back(&job);
      runner->desired_roles.push_back(job.role);
    }
    auto source = MakeSource(source_options);
    if (!source) return Error{fmt::format("source {}: {}", name, source.error())};
    runner->name = name;
    runner->type = source_spec.type;
    runner->timeout = source_spec.settings && source_spec.settings->timeout
                          ? std::chrono::milliseconds(*source_spec.settings->timeout)
                          : options_.source_timeout;
    runner->source = std::move(*source);
    config->runners.push_back(std::move(runner));
  }
  return config;
}

std::int64_t Refresher::Now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Refresher::Start() {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      RefreshOnce();
      std::unique_lock<std::mutex> lock(wake_mutex_);
      wake_.wait_for(lock, options_.interval,
                     [this] { return stop_.load() || refresh_now_.exchange(false); });
    }
  });
}

void Refresher::Stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Refresher::RefreshOnce() {
  std::lock_guard<std::mutex> refresh_lock(refresh_mutex_);
  ApplyPendingConfig();
  std::shared_ptr<Config> config;
  std::map<std::string, std::int64_t> desired_since;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    config = config_;
    desired_since = desired_since_;
  }
  const Spec& spec = *config->spec;
  const std::int64_t now = Now();

  // Start every source's read at once; each gets its own deadline.
  struct Launched {
    std::shared_ptr<Runner> runner;
    std::shared_ptr<PendingRead> pending;  // null: the previous read is still running
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Launched> launched;
  auto started = std::chrono::steady_clock::now();
  for (const auto& runner : config->runners) {
    Launched entry{runner, nullptr, started + runner->timeout};
    if (!runner->busy->exchange(true)) {
      entry.pending = std::make_shared<PendingRead>();
      std::thread([runner, pending = entry.pending, now, delay = options_.confirm_delay] {
        ListContext context{now, &pending->cancelled};
        ReadOutcome outcome = ReadSource(*runner->source, runner->desired_roles, context, delay);
        {
          std::lock_guard<std::mutex> lock(pending->mutex);
          pending->outcome = std::move(outcome);
          // Free before done: a refresh right after this one must not find the source busy.
          runner->busy->store(false);
          pending->done = true;
        }
        pending->done_cv.notify_all();
      }).detach();
    }
    launched.push_back(std::move(entry));
  }

  RefreshResult result;
  result.spec = config->spec;
  result.time = now;
  result.complete = true;
  std::map<std::string, ReadOutcome> outcomes;
  std::map<std::string, std::vector<SourceProblem>> problems;
  for (auto& entry : launched) {
    SourceStatus status;
    status.name = entry.runner->name;
    status.type = entry.runner->type;
    ReadOutcome& outcome = outcomes[status.name];
    if (!entry.pending) {
      outcome.snapshot = Error{"the previous read has not finished yet"};
      problems[status.name].push_back({"timeout", outcome.snapshot.error()});
    } else {
      std::unique_lock<std::mutex> lock(entry.pending->mutex);
      if (entry.pending->done_cv.wait_until(lock, entry.deadline,
                                            [&] { return entry.pending->done; })) {
        outcome = std::move(entry.pending->outcome);
      } else {
        entry.pending->cancelled = true;
        outcome.snapshot =
            Error{fmt::format("no answer within {}s", entry.runner->timeout.count() / 1000.0)};
        outcome.seconds = entry.runner->timeout.count() / 1000.0;
        problems[status.name].push_back({"timeout", outcome.snapshot.error()});
      }
    }
    status.sync_duration_seconds = outcome.seconds;
    if (outcome.snapshot) {
      status.up = true;
      status.last_sync = now;
      status.objects = static_cast<int>(outcome.snapshot->objects.size());
      for (const auto& object : outcome.snapshot->objects) {
        if (spec.FindJob(object.role) == nullptr) ++status.unowned_objects;
      }
      status.problems = outcome.snapshot->problems;
      for (const auto& problem : status.problems) problems[status.name].push_back(problem);
    } else {
      status.error = outcome.snapshot.error();
      if (problems[status.name].empty())
        problems[status.name].push_back(MakeProblem(Reason::kListFailed, status.error));
      Log(LogLevel::kWarn, "list failed", {{"source", status.name}, {"err", status.error}});
    }
    for (const auto& problem : outcome.recovered_in_first_read) {
      problems[status.name].push_back(problem);
    }
    result.sources.push_back(std::move(status));
  }

  std::map<std::string, std::string> ledger;
  if (!options_.ledger_file.empty()) {
    auto read = ReadLedger(options_.ledger_file);
    if (read) {
      for (const auto& [role, entry] : read->entries) ledger[role] = entry.id;
    } else {
      Log(LogLevel::kWarn, "ledger unreadable", {{"err", read.error()}});
    }
  }

  for (const auto& job : spec.jobs) {
    const ReadOutcome& outcome = outcomes[job.source];
    RoleObservation observation;
    observation.source_up = outcome.snapshot.ok();
    observation.desired_since = desired_since.count(job.role) ? desired_since[job.role] : now;
    RoleResult role;
    role.job = &job;
    if (observation.source_up) {
      const SourceSnapshot& snapshot = *outcome.snapshot;
      for (const auto& object : snapshot.objects) {
        if (object.role == job.role) observation.objects.push_back(object);
      }
      observation.absence_confirmed =
          observation.objects.empty() && outcome.absent_in_first_read.count(job.role);
      if (auto it = snapshot.history.find(job.role); it != snapshot.history.end()) {
        observation.history = it->second;
      }
      if (auto it = snapshot.progress.find(job.role); it != snapshot.progress.end()) {
        observation.last_progress = it->second;
      } else if (job.progress) {
        // Written by the job: a bad one leaves progress unknown and is counted, never fatal.
        auto checkpoint = ReadCheckpoint(job.progress->file);
        if (checkpoint) {
          observation.last_progress = *checkpoint;
        } else {
          SourceProblem problem = MakeProblem(
              Reason::kBadCheckpoint, fmt::format("role {}: {}", job.role, checkpoint.error()));
          for (auto& source : result.sources) {
            if (source.name == job.source) source.problems.push_back(problem);
          }
          problems[job.source].push_back(std::move(problem));
        }
      }
      if (auto it = ledger.find(job.role); it != ledger.end()) observation.ledger_id = it->second;
    }
    if (!job.runs_dir.empty()) ApplyRunRecords(job, observation, role, result, problems);
    role.status = Classify(job, observation, now);
    role.objects = std::move(observation.objects);
    result.roles.push_back(std::move(role));
  }
  ForgetRunRecordRoles(spec);
  std::sort(result.roles.begin(), result.roles.end(),
            [](const RoleResult& a, const RoleResult& b) { return a.job->role < b.job->role; });
  std::sort(result.sources.begin(), result.sources.end(),
            [](const SourceStatus& a, const SourceStatus& b) { return a.name < b.name; });
  run_history_.Update(result);  // runs kept across refreshes, for the status page

  for (const auto& role : result.roles) {
    std::string conditions = role.status.ConditionList();
    auto& last = last_conditions_[role.job->role];
    if (last != conditions) {
      Log(last.empty() ? LogLevel::kDebug : LogLevel::kInfo, "role condition changed",
          {{"role", role.job->role},
           {"source", role.job->source},
           {"from", last.empty() ? "none" : last},
           {"to", conditions}});
      last = conditions;
    }
  }
  UpdateSelfMetrics(result, problems);
  std::size_t role_count = result.roles.size();
  Publish(std::move(result));
  ready_ = true;
  Log(LogLevel::kDebug, "refresh done",
      {{"roles", std::to_string(role_count)},
       {"seconds",
        fmt::format(
            "{:.3f}",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count())}});
}

void Refresher::ApplyRunRecords(const JobSpec& job, RoleObservation& observation, RoleResult& role,
                                RefreshResult& result,
                                std::map<std::string, std::vector<SourceProblem>>& problems) {
  RunRecordRead read = ReadRunRecords(job.runs_dir, job.role, &run_record_cache_[job.role]);
  for (auto& problem : read.problems) {
    Log(LogLevel::kWarn, "bad run record", {{"role", job.role}, {"err", problem.message}});
    problems[job.source].push_back(problem);
    for (auto& source : result.sources) {
      if (source.name == job.source) source.problems.push_back(problem);
    }
  }
  RunRecordSummary summary = SummarizeRunRecords(read.records);
  // Each skipped record is counted once; pruned names are forgotten (names never repeat).
  auto& counter = duplicate_runs_prevented_.Add({{"role", job.role}, {"source", job.source}});
  auto& counted = prevented_counted_[job.role];
  std::set<std::string> still_there;
  for (const auto& name : summary.skipped_files) {
    if (!counted.count(name)) counter.Increment();
    still_there.insert(name);
  }
  counted = std::move(still_there);
  role.run_records = static_cast<int>(read.records.size());
  role.skipped_duplicates = summary.skipped;
  if (!summary.has_runs) return;
  // A wrapper's record is exact: it replaces what the scheduler's log or status said.
  observation.history = summary.history;
  role.last_duration = summary.last_duration;
  if (summary.last_exit_code) role.last_exit_code = summary.last_exit_code;
  if (summary.last_signal) role.last_exit_code = 128 + *summary.last_signal;
  role.guarded = summary.guarded;
}

void Refresher::ForgetRunRecordRoles(const Spec& spec) {
  auto kept = [&spec](const std::string& role) {
    const JobSpec* job = spec.FindJob(role);
    return job != nullptr && !job->runs_dir.empty();
  };
  for (const auto& family : registry_.Collect()) {
    if (family.name != "schedwatch_job_duplicate_runs_prevented_total") continue;
    for (const auto& metric : family.metric) {
      prometheus::Labels labels;
      for (const auto& label : metric.label) labels[label.name] = label.value;
      const JobSpec* job = spec.FindJob(labels["role"]);
      if (!kept(labels["role"]) || job->source != labels["source"]) {
        duplicate_runs_prevented_.Remove(&duplicate_runs_prevented_.Add(labels));
      }
    }
  }
  for (auto it = prevented_counted_.begin(); it != prevented_counted_.end();) {
    it = kept(it->first) ? std::next(it) : prevented_counted_.erase(it);
  }
  for (auto it = run_record_cache_.begin(); it != run_record_cache_.end();) {
    it = kept(it->first) ? std::next(it) : run_record_cache_.erase(it);
  }
}

void Refresher::UpdateSelfMetrics(
    const RefreshResult& result,
    const std::map<std::string, std::vector<SourceProblem>>& problems) {
  // Forget sources that left the spec.
  std::set<std::string> names;
  for (const auto& source : result.sources) names.insert(source.name);
  for (auto& family : registry_.Collect()) {
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        if (label.name != "source" || names.count(label.value)) continue;
        prometheus::Labels labels;
        for (const auto& l : metric.label) labels[l.name] = l.value;
        if (family.name == "schedwatch_source_up") source_up_.Remove(&source_up_.Add(labels));
        if (family.name == "schedwatch_source_last_sync_timestamp_seconds") {
          source_last_sync_.Remove(&source_last_sync_.Add(labels));
        }
        if (family.name == "schedwatch_source_sync_duration_seconds") {
          source_sync_duration_.Remove(&source_sync_duration_.Add(labels));
        }
        if (family.name == "schedwatch_source_errors_total") {
          source_errors_.Remove(&source_errors_.Add(labels));
        }
        if (family.name == "schedwatch_source_unowned_objects") {
          source_unowned_.Remove(&source_unowned_.Add(labels));
        }
      }
    }
  }
  for (const auto& source : result.sources) {
    source_up_.Add({{"source", source.name}, {"type", source.type}}).Set(source.up ? 1 : 0);
    source_sync_duration_.Add({{"source", source.name}}).Set(source.sync_duration_seconds);
    if (source.last_sync) {
      source_last_sync_.Add({{"source", source.name}}).Set(static_cast<double>(*source.last_sync));
    }
    if (source.up) {
      source_unowned_.Add({{"source", source.name}}).Set(source.unowned_objects);
    }
    if (auto it = problems.find(source.name); it != problems.end()) {
      for (const auto& problem : it->second) {
        source_errors_.Add({{"source", source.name}, {"reason", problem.reason}}).Increment();
      }
    }
  }
  last_cycle_.Set(static_cast<double>(result.time));
}

void Refresher::Publish(RefreshResult result) {
  std::lock_guard<std::mutex> publish_lock(publish_mutex_);
  auto published = std::make_shared<Published>();
  // Sized from the last refresh: growing by doubling would leave up to half the buffer unused.
  published->metrics.reserve(expected_metrics_bytes_ + expected_metrics_bytes_ / 16);
  RenderRoleMetrics(result, published->metrics);
  auto families = registry_.Collect();
  if (!result.complete) {
    // Before the first refresh there is no heartbeat to report.
    families.erase(std::remove_if(families.begin(), families.end(),
                                  [](const auto& f) {
                                    return f.name ==
                                           "schedwatch_exporter_last_cycle_timestamp_seconds";
                                  }),
                   families.end());
  }
  SortFamilies(families);
  std::ostringstream self;
  prometheus::TextSerializer().Serialize(self, families);
  published->metrics += self.str();
  published->metrics.shrink_to_fit();
  expected_metrics_bytes_ = published->metrics.size();
  published->metrics_gzip = GzipStart(published->metrics);
  published->result = std::move(result);
  std::shared_ptr<const Published> previous = std::move(published);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    published_.swap(previous);
  }
  previous.reset();  // the previous refresh, unless a scrape still holds it
  malloc_trim(0);    // hand its buffers back to the system instead of keeping them
}

std::shared_ptr<const Published> Refresher::Current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return published_;
}

void Refresher::ApplyPendingConfig() {
  std::shared_ptr<Config> config;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    config = std::move(pending_config_);
    pending_config_.reset();
  }
  if (!config) return;
  std::shared_ptr<Config> old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    old = config_;
  }
  // Caches move from the old sources to the new ones here, where no read of this loop runs.
  for (const auto& runner : config->runners) {
    for (const auto& previous : old->runners) {
      // A read that outlived its refresh (busy) keeps its source; the new one starts cold.
      if (previous->name == runner->name && previous->type == runner->type &&
          !previous->busy->exchange(true)) {
        runner->source->InheritCaches(*previous->source);
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::int64_t now = Now();
  std::map<std::string, std::int64_t> desired_since;
  for (const auto& job : config->spec->jobs) {
    auto it = desired_since_.find(job.role);
    desired_since[job.role] = it == desired_since_.end() ? now : it->second;
  }
  desired_since_ = std::move(desired_since);
  config_ = std::move(config);
}

void Refresher::RepublishSelfMetrics() {
  std::shared_ptr<const Published> current = Current();
  RefreshResult result = current->result;
  current.reset();
  Publish(std::move(result));
}

Result<bool> Refresher::Reload() {
  // Parsing and building touch no source, so this never waits for a read; a refresh that is
  // waiting for one picks the new spec up when it starts next.
  std::lock_guard<std::mutex> reload_lock(reload_mutex_);
  auto spec = LoadSpecFile(options_.config_file, BuiltInCatalog());
  Result<std::shared_ptr<Config>> config = Error{""};
  if (spec) config = Build(std::make_shared<const Spec>(std::move(*spec)));
  if (!spec || !config) {
    std::string error = spec ? config.error() : spec.error();
    reload_successful_.Set(0);
    RepublishSelfMetrics();  // the next scrape says so, not the one after the next refresh
    Log(LogLevel::kError, "reload failed, keeping the last good spec",
        {{"file", options_.config_file}, {"err", error}});
    return Error{error};
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_config_ = *config;  // a reload not yet applied is replaced by this newer one
  }
  reload_successful_.Set(1);
  reload_success_time_.Set(static_cast<double>(Now()));
  RepublishSelfMetrics();
  if (options_.on_spec_loaded) options_.on_spec_loaded(config.value()->spec);
  Log(LogLevel::kInfo, "spec reloaded",
      {{"file", options_.config_file},
       {"jobs", std::to_string(config.value()->spec->jobs.size())}});
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    refresh_now_ = true;
  }
  wake_.notify_all();
  return true;
}

}  // namespace schedwatch
