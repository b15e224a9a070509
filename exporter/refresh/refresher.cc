#include "exporter/refresh/refresher.h"

#include <fmt/format.h>
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <cmath>

#include "exporter/exposition/exposition.h"
#include "schedwatch/duration.h"
#include "schedwatch/platform/log.h"
#include "schedwatch/timefmt.h"
#include "sources/catalog.h"
#include "sources/problems.h"

namespace schedwatch {
namespace {

// Seconds of CPU this thread has used: a refresh's stages run on it, its reads beside it.
double ThreadCpuSeconds() {
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  return static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) / 1e9;
}

std::string Seconds(double seconds) { return fmt::format("{:.3f}", seconds); }

}  // namespace

Refresher::Refresher(RefresherOptions options)
    : options_(std::move(options)),
      time_(options_.time != nullptr ? *options_.time : platform::RealClock()) {}

Refresher::~Refresher() { Stop(); }

Result<std::unique_ptr<Refresher>> Refresher::Create(RefresherOptions options,
                                                     std::shared_ptr<const Spec> spec) {
  std::unique_ptr<Refresher> refresher(new Refresher(std::move(options)));
  auto config = refresher->Build(std::move(spec));
  if (!config) return Error{config.error()};
  std::int64_t now = refresher->Now();
  refresher->desired_since_ = CarryDesiredSince(nullptr, {}, **config, now);
  refresher->config_ = *config;
  refresher->self_metrics_.SetReload(true, now);
  refresher->counting_since_ = now;
  RefreshResult empty;
  empty.spec = refresher->config_->spec;
  empty.shard = refresher->options_.shard;
  empty.spec_roles = refresher->config_->spec_roles;
  refresher->Publish(std::move(empty));
  return refresher;
}

Result<std::shared_ptr<Refresher::Config>> Refresher::Build(std::shared_ptr<const Spec> spec) {
  auto config = std::make_shared<Config>();
  config->spec_roles = spec->SpecRoles();
  // A shard keeps its roles only (LoadSpecFile kept only them already when it was given the
  // shard): the whole spec, validated, goes when the caller drops it.
  if (options_.shard.Sharded() && !spec->whole_spec_roles)
    spec = std::make_shared<const Spec>(SpecOfShard(*spec, options_.shard));
  config->spec = spec;
  config->by_role = RoleOrder(*spec);
  for (const auto& [name, source_spec] : spec->sources) {
    SourceOptions source_options;
    source_options.spec = &source_spec;
    source_options.shard = options_.shard;
    auto runner = std::make_shared<SourceRunner>();
    runner->shard = options_.shard;
    runner->spec = spec;
    // Sized first: grown by doubling, the role names held up to twice the room they need
    // (1,000,000 roles: 32 MiB for 30.5).
    auto jobs = static_cast<std::size_t>(
        std::count_if(spec->jobs.begin(), spec->jobs.end(),
                      [&name = name](const JobSpec& job) { return job.source == name; }));
    source_options.jobs.reserve(jobs);
    runner->desired_roles.reserve(jobs);
    for (std::uint32_t i = 0; i < spec->jobs.size(); ++i) {
      const JobSpec& job = spec->jobs[i];
      if (job.source != name) continue;
      source_options.jobs.push_back(&job);
      runner->desired_roles.push_back(job.role);
      if (job.progress() || !job.runs_dir().empty()) runner->job_files.push_back(i);
    }
    std::sort(runner->desired_roles.begin(), runner->desired_roles.end());
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

DesiredSinceList Refresher::CarryDesiredSince(const Config* from, const DesiredSinceList& since,
                                              const Config& to, std::int64_t now) {
  DesiredSinceList carried(to.spec->jobs.size(), now);
  if (from == nullptr) return carried;
  const std::vector<std::uint32_t>& before = from->by_role.jobs();
  std::size_t at = 0;
  for (std::uint32_t job : to.by_role.jobs()) {
    const std::string& role = to.spec->jobs[job].role;
    while (at < before.size() && from->spec->jobs[before[at]].role < role) ++at;
    if (at < before.size() && from->spec->jobs[before[at]].role == role) {
      carried[job] = since[before[at]];
    }
  }
  return carried;
}

std::int64_t Refresher::Now() const {
  if (options_.clock) return options_.clock();
  return time_.UnixSeconds();
}

std::optional<ClockStep> Refresher::WatchClock(std::int64_t now) {
  platform::Clock::TimePoint monotonic = time_.Now();
  if (!options_.clock && last_wall_) {
    auto elapsed = std::llround(std::chrono::duration<double>(monotonic - last_monotonic_).count());
    std::int64_t expected = *last_wall_ + elapsed;
    std::int64_t step = now - expected;
    if (step > kClockStepThreshold || step < -kClockStepThreshold) {
      bool within_hold = recent_step_ && monotonic < hold_until_;
      // Steps within one hold window add up: the clock without them is what both agree on.
      recent_step_ = ClockStep{step + (within_hold ? recent_step_->seconds : 0), now};
      hold_until_ = monotonic + kClockStepHold;
      self_metrics_.SetClockStep(step, now);
      Log(LogLevel::kWarn, "wall clock stepped",
          {{"seconds", std::to_string(step)},
           {"expected", FormatRfc3339(expected)},
           {"now", FormatRfc3339(now)},
           {"held_for", FormatDuration(kClockStepHold.count())}});
      // When each role became desired is the exporter's own reading of the clock: it moves
      // with the clock, so a step makes no role look desired for longer (or shorter).
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::int64_t& since : desired_since_) since += step;
    }
  }
  last_wall_ = now;
  last_monotonic_ = monotonic;
  if (recent_step_ && monotonic >= hold_until_) recent_step_.reset();
  return recent_step_;
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
  // Cancelled reads return soon, so a refresh waiting for one ends too.
  readers_.Shutdown();
  if (thread_.joinable()) thread_.join();
}

void Refresher::RefreshOnce() {
  std::lock_guard<std::mutex> refresh_lock(refresh_mutex_);
  const auto started = std::chrono::steady_clock::now();
  auto since = [&started] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  const std::int64_t now = Now();
  // Before a new spec's roles get their desired_since from the clock as it reads now.
  const std::optional<ClockStep> recent_step = WatchClock(now);
  ApplyPendingConfig();
  std::shared_ptr<Config> config;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    config = config_;
  }

  // Read, observe, classify, publish. desired_since_ changes only here, under refresh_mutex_:
  // it is read in place, not copied (a map of every role).
  std::vector<SourceRead> reads = readers_.ReadAll(config->runners, now, options_.confirm_delay);
  const LedgerIds ledger = ReadLedgerIds(options_.ledger_file);
  const double read_seconds = since(), cpu_after_read = ThreadCpuSeconds();
  // Each role is classified as soon as it is observed: one observation is held at a time. Its
  // objects are the published refresh's when they are unchanged, not a second copy.
  std::shared_ptr<const Published> last = Current();
  const RoleList& before = last->result.roles;
  MaintenanceMemo maintenance;  // roles sharing windows (the defaults') walk them once
  Observed observed = observer_.Observe(
      *config->spec, reads, desired_since_, now, config->by_role, before, run_history_, ledger,
      [&](RoleObservation& observation, RoleResult& role, const RunSummary* carried) {
        std::vector<Run> runs;
        role.status = Classify(*role.job, observation, now, recent_step, &runs, &maintenance);
        run_history_.Add(role, runs, carried);  // kept across refreshes
      });
  last.reset();
  for (const SourceRead& read : reads) {
    // A read without its history showed no runs: its news stay to be shown.
    if (read.reads.snapshot && read.reads.snapshot->news_read != 0 &&
        read.reads.snapshot->history_error.empty()) {
      read.runner->source->Used(read.reads.snapshot->news_read, read.runner->desired_roles);
    }
  }
  reads.clear();  // the snapshots' rest: objects of no role, the history of roles not desired
  RefreshResult result = ClassifyRoles(observed, *config, now, recent_step);
  result.shard = options_.shard;
  result.spec_roles = config->spec_roles;
  run_history_.Finish(result, config->by_role);
  LogChanges(result);
  self_metrics_.Update(result, observed.problems, observed.new_duplicates_prevented);
  std::size_t role_count = result.roles.size();
  const double cpu_before_publish = ThreadCpuSeconds();
  Publish(std::move(result));
  ready_ = true;
  // Where a slow refresh spends its time: the reads' wall (they run beside this thread), then
  // this thread's CPU in observe and classify, and in publishing the exposition.
  Log(LogLevel::kDebug, "refresh done",
      {{"roles", std::to_string(role_count)},
       {"seconds", Seconds(since())},
       {"read_seconds", Seconds(read_seconds)},
       {"classify_cpu_seconds", Seconds(cpu_before_publish - cpu_after_read)},
       {"publish_cpu_seconds", Seconds(ThreadCpuSeconds() - cpu_before_publish)}});
}

RefreshResult Refresher::ClassifyRoles(Observed& observed, const Config& config, std::int64_t now,
                                       const std::optional<ClockStep>& recent_step) {
  RefreshResult result;
  result.spec = config.spec;
  result.time = now;
  result.complete = true;
  result.clock_step = recent_step;
  result.roles = std::move(observed.roles);
  std::map<std::string, std::int64_t> future_counted;
  for (const RoleResult& role : result.roles) {
    if (!role.status.in_future().empty()) AddFutureProblem(observed, role, now, future_counted);
  }
  future_counted_ = std::move(future_counted);  // roles whose future times went are forgotten
  for (auto& source : observed.sources) source.problems = CapProblems(std::move(source.problems));
  result.sources = std::move(observed.sources);
  result.roles.SortByRole(config.by_role);
  std::sort(result.sources.begin(), result.sources.end(),
            [](const SourceStatus& a, const SourceStatus& b) { return a.name < b.name; });
  return result;
}

void Refresher::AddFutureProblem(Observed& observed, const RoleResult& role, std::int64_t now,
                                 std::map<std::string, std::int64_t>& counted) {
  // Times the scheduler or the job reported, never their text: a file's bytes stay out.
  const std::vector<FutureTime>& times = role.status.in_future();
  constexpr std::size_t kTimesNamed = 3;
  std::string named;
  std::int64_t latest = times.front().time;
  for (std::size_t i = 0; i < times.size(); ++i) {
    latest = std::max(latest, times[i].time);
    if (i < kTimesNamed) {
      named +=
          fmt::format("{}{} {}", i == 0 ? "" : ", ", times[i].what, FormatRfc3339(times[i].time));
    }
  }
  if (times.size() > kTimesNamed) named += fmt::format(" and {} more", times.size() - kTimesNamed);
  SourceProblem problem = MakeProblem(
      Reason::kRunInFuture,
      fmt::format("role {}: {} later than now ({}) plus the clock skew allowance {}: not "
                  "counted as a start or a success",
                  role.job->role, named, FormatRfc3339(now), FormatDuration(kClockSkewAllowance)));
  // Counted once while it stands, as a bad run record is: again only when a later one comes.
  auto before = future_counted_.find(role.job->role);
  problem.counted_before = before != future_counted_.end() && before->second >= latest;
  counted[role.job->role] = latest;
  for (auto& source : observed.sources) {
    if (source.name == role.job->source) source.problems.push_back(problem);
  }
  observed.problems[role.job->source].push_back(std::move(problem));
}

void Refresher::LogChanges(const RefreshResult& result) {
  // Against the published refresh, sorted by role as `result` is: no map of every role's last
  // conditions is kept.
  std::shared_ptr<const Published> last = Current();
  const RoleList& before = last->result.roles;
  // Both lists are sorted by role: walked side by side, not searched (a binary search per role
  // reached into the whole list, cache miss after cache miss: 0.35 s of CPU at 100,000 roles).
  auto previous = before.begin();
  for (const auto& role : result.roles) {
    while (previous != before.end() && previous->job->role < role.job->role) ++previous;
    bool seen = previous != before.end() && previous->job->role == role.job->role;
    if (seen && previous->status.conditions == role.status.conditions) continue;
    std::string from = seen ? previous->status.ConditionList() : "none";
    Log(seen ? LogLevel::kInfo : LogLevel::kDebug, "role condition changed",
        {{"role", role.job->role},
         {"source", role.job->source},
         {"from", from},
         {"to", role.status.ConditionList()}});
  }
}

void Refresher::Publish(RefreshResult result) {
  std::lock_guard<std::mutex> publish_lock(publish_mutex_);
  auto published = std::make_shared<Published>();
  {
    // Chunks equal to the last exposition's are shared with it, not held twice.
    // Both forms, each a chunked text, rendered here and never per scrape. Most lines are the
    // same in both, so the OpenMetrics form shares the text form's equal chunks too: at 100,000
    // roles it then costs about a tenth of the text form, not as much again.
    std::shared_ptr<const Published> last = Current();
    published->counting_since = counting_since_;
    // Chunks of the last exposition whose roles' series are unchanged are reused unwritten:
    // when little changed, most of the text is neither written, hashed nor compressed again.
    auto render = [&](const ChunkedText* previous, bool open_metrics, const ChunkedText* same) {
      ChunkedTextWriter writer(previous);
      if (same != nullptr) writer.ShareWith(*same);
      ExpositionForm form{open_metrics, counting_since_};
      RenderRoleMetrics(result, form, writer, last ? &last->result : nullptr);
      self_metrics_.Render(result, form, writer);
      std::size_t reused = writer.reused_chunks(), shared = writer.shared_chunks();
      ChunkedText text = writer.Finish();
      Log(LogLevel::kDebug, "exposition written",
          {{"form", open_metrics ? "openmetrics" : "text"},
           {"chunks", std::to_string(text.chunks().size())},
           {"reused", std::to_string(reused)},
           {"compressed", std::to_string(text.chunks().size() - shared)}});
      return text;
    };
    published->metrics = render(last ? &last->metrics : nullptr, false, nullptr);
    published->openmetrics = render(last ? &last->openmetrics : nullptr, true, &published->metrics);
  }
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
  // Caches move from the old sources to the new ones here, where no read of this refresh runs.
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
  desired_since_ = CarryDesiredSince(old.get(), desired_since_, *config, Now());
  config_ = std::move(config);
}

void Refresher::SetReconcileLockUnavailable(bool unavailable) {
  self_metrics_.SetReconcileLockUnavailable(unavailable);
  RepublishSelfMetrics();
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
  auto spec = LoadSpecFile(options_.config_file, options_.max_spec_bytes, options_.shard);
  Result<std::shared_ptr<Config>> config = Error{""};
  if (spec) config = Build(std::make_shared<const Spec>(std::move(*spec)));
  if (!spec || !config) {
    std::string error = spec ? config.error() : spec.error();
    self_metrics_.SetReload(false, std::nullopt);
    RepublishSelfMetrics();  // the next scrape says so, not the one after the next refresh
    Log(LogLevel::kError, "reload failed, keeping the last good spec",
        {{"file", options_.config_file}, {"err", error}});
    return Error{error};
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_config_ = *config;  // a reload not yet applied is replaced by this newer one
  }
  self_metrics_.SetReload(true, Now());
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
