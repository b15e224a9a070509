#include "exporter/refresh/observe.h"

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "schedwatch/platform/log.h"

namespace schedwatch {
namespace {

bool Desired(const Spec& spec, const RoleOrder& order, std::string_view role) {
  auto it = std::lower_bound(
      order.jobs().begin(), order.jobs().end(), role,
      [&spec](std::uint32_t job, std::string_view wanted) { return spec.jobs[job].role < wanted; });
  return it != order.jobs().end() && spec.jobs[*it].role == role;
}

SourceStatus StatusOf(const SourceRead& read, const Spec& spec, const RoleOrder& desired,
                      std::int64_t now, std::vector<SourceProblem>& problems) {
  SourceStatus status;
  status.name = read.runner->name;
  status.type = read.runner->type;
  status.sync_duration_seconds = read.seconds;
  if (read.runner->source) status.requests = read.runner->source->RequestCounts();
  const Result<SourceSnapshot>& snapshot = read.reads.snapshot;
  if (read.timed_out) problems.push_back(MakeProblem(Reason::kTimeout, snapshot.error()));
  if (snapshot) {
    status.up = true;
    status.last_sync = now;
    status.objects = static_cast<int>(snapshot->objects.size());
    for (const auto& object : snapshot->objects) {
      if (!Desired(spec, desired, object.role())) ++status.unowned_objects;
    }
    status.problems = snapshot->problems;
    status.history_up = snapshot->history_error.empty();
    if (!status.history_up) {
      status.history_error = snapshot->history_error;
      status.problems.push_back(MakeProblem(Reason::kHistoryFailed, status.history_error));
      Log(LogLevel::kWarn, "history failed",
          {{"source", status.name}, {"err", status.history_error}});
    }
    problems.insert(problems.end(), status.problems.begin(), status.problems.end());
  } else {
    status.error = snapshot.error();
    if (problems.empty()) problems.push_back(MakeProblem(Reason::kListFailed, status.error));
    Log(LogLevel::kWarn, "list failed", {{"source", status.name}, {"err", status.error}});
  }
  problems.insert(problems.end(), read.reads.recovered_in_first_read.begin(),
                  read.reads.recovered_in_first_read.end());
  return status;
}

void AddProblem(Observed& observed, std::size_t source_index, SourceProblem problem) {
  observed.sources[source_index].problems.push_back(problem);
  observed.problems[observed.sources[source_index].name].push_back(std::move(problem));
}

// Each job's objects, in the order of spec.jobs: the published refresh's list where it is
// unchanged (the common case), so the reads' objects are dropped before any role is classified
// and the new refresh holds no second copy of them. `by_role`: spec.jobs sorted by role.
std::vector<RoleObjects> ObjectsByJob(const Spec& spec, const RoleOrder& by_role,
                                      std::vector<SourceRead>& reads, const RoleList& published) {
  // Every list's objects sorted by role (a role's in the order read): pointers, no map.
  std::vector<LiveObject*> objects;
  std::size_t count = 0;
  for (const auto& read : reads) {
    if (read.reads.snapshot) count += read.reads.snapshot->objects.size();
  }
  objects.reserve(count);
  for (auto& read : reads) {
    if (!read.reads.snapshot) continue;
    for (auto& object : read.reads.snapshot->objects) objects.push_back(&object);
  }
  std::stable_sort(objects.begin(), objects.end(),
                   [](const LiveObject* a, const LiveObject* b) { return a->role() < b->role(); });
  std::vector<RoleObjects> by_job(spec.jobs.size());
  auto at = objects.begin();
  auto before = published.begin();
  for (std::uint32_t job : by_role.jobs()) {
    const std::string& role = spec.jobs[job].role;
    while (at != objects.end() && (*at)->role() < role) ++at;
    auto end = at;
    while (end != objects.end() && (*end)->role() == role) ++end;
    if (at == end) continue;
    while (before != published.end() && before->job->role < role) ++before;
    const bool known = before != published.end() && before->job->role == role;
    auto equal = [](const LiveObject* a, const LiveObject& b) { return *a == b; };
    if (known && std::equal(at, end, before->objects.begin(), before->objects.end(), equal)) {
      by_job[job] = before->objects;
    } else {
      by_job[job] = RoleObjects(static_cast<std::size_t>(end - at),
                                [at](std::size_t i) { return std::move(*at[i]); });
    }
    at = end;
  }
  for (auto& read : reads) {
    // Freed now, with their storage (`= {}` would keep it).
    if (read.reads.snapshot) read.reads.snapshot->objects = std::vector<LiveObject>();
  }
  return by_job;
}

}  // namespace

Observed Observer::Observe(const Spec& spec, std::vector<SourceRead>& reads,
                           const DesiredSinceList& desired_since, std::int64_t now,
                           const RoleOrder& by_role, const RoleList& published,
                           const RunHistoryStore& kept, const LedgerIds& ledger,
                           const EachObservation& each) {
  Observed observed;
  std::unordered_map<std::string_view, std::size_t> source_index;
  for (const auto& read : reads) {
    source_index.emplace(read.runner->name, observed.sources.size());
    observed.sources.push_back(
        StatusOf(read, spec, by_role, now, observed.problems[read.runner->name]));
  }
  std::vector<RoleObjects> objects = ObjectsByJob(spec, by_role, reads, published);
  // The read's objects were just freed, in small pieces: handed back now, the heap's top is not
  // left high through the rest of the refresh (100,000 roles: 107 MiB resident between refreshes
  // with this, 113–122 MiB without).
  malloc_trim(0);

  // Each job's role in the published refresh, found in one walk of both in role order: a search
  // per job compared about 20 names a role.
  constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> published_at(spec.jobs.size(), kNone);
  std::size_t next_published = 0;
  for (std::uint32_t job : by_role.jobs()) {
    const std::string& role = spec.jobs[job].role;
    auto published_role = [&] { return std::string_view(published[next_published].job->role); };
    while (next_published < published.size() && published_role() < role) ++next_published;
    if (next_published < published.size() && published_role() == role) {
      published_at[job] = static_cast<std::uint32_t>(next_published);
    }
  }

  observed.roles.reserve(spec.jobs.size());
  std::vector<std::size_t> next_files(reads.size());  // each read's job_files, walked in order
  for (std::size_t i = 0; i < spec.jobs.size(); ++i) {
    const JobSpec& job = spec.jobs[i];
    RoleObservation observation;  // one role's at a time: handed to `each`, then dropped
    RoleResult role;
    role.job = &job;
    observation.desired_since = i < desired_since.size() ? desired_since[i] : now;
    const bool known = published_at[i] != kNone;
    auto before = known ? published.begin() + published_at[i] : published.end();
    JobFilesRead* files = nullptr;
    if (auto index = source_index.find(job.source); index != source_index.end()) {
      std::vector<JobFilesRead>& read = reads[index->second].job_files;
      std::size_t& next = next_files[index->second];
      if (next < read.size() && read[next].job == i) files = &read[next++];
    }
    std::optional<RunSummary> carried;
    ObserveRole(job, std::move(objects[i]), reads, source_index, ledger, kept, files,
                known ? &*before : nullptr, observation, carried, role, observed);
    // Thresholds judged from runs: those the scheduler has since forgotten still count.
    if (observation.source_up && observation.history_up && JudgedFromKeptRuns(job)) {
      kept.AddKeptRuns(job, observation.history);
    }
    each(observation, role, carried ? &*carried : nullptr);
    if (before != published.end() && role.Unchanged(*before)) {
      observed.roles.push_back(before.item());
    } else {
      observed.roles.push_back(std::move(role));
    }
  }
  Forget(spec);
  return observed;
}

void Observer::ObserveRole(const JobSpec& job, RoleObjects objects, std::vector<SourceRead>& reads,
                           const std::unordered_map<std::string_view, std::size_t>& source_index,
                           const LedgerIds& ledger, const RunHistoryStore& kept,
                           JobFilesRead* files, const RoleResult* before,
                           RoleObservation& observation, std::optional<RunSummary>& carried,
                           RoleResult& role, Observed& observed) {
  auto index = source_index.find(job.source);
  if (index == source_index.end()) return;  // no such source: the spec check prevents it
  SourceRead& read = reads[index->second];
  observation.source_up = read.reads.snapshot.ok();
  if (observation.source_up) {
    SourceSnapshot& snapshot = *read.reads.snapshot;
    observation.objects.assign(objects.begin(), objects.end());
    role.objects = std::move(objects);
    observation.absence_confirmed = read.reads.confirmed_absent.count(job.role) > 0;
    observation.history_up = snapshot.history_error.empty();
    if (auto it = snapshot.history.find(job.role); it != snapshot.history.end()) {
      observation.history = std::move(it->second);
      snapshot.history.erase(it);  // freed as it goes, not when the reads are dropped
    }
    if (snapshot.news_read != 0 && observation.history_up) {
      kept.AddKept(job, observation.history);
      carried =
          static_cast<const RunSummary&>(observation.history);  // before run records replace it
    }
    if (auto it = snapshot.progress.find(job.role); it != snapshot.progress.end()) {
      observation.last_progress = it->second;
    } else if (files != nullptr && files->checkpoint) {
      // Written by the job: a bad one leaves progress unknown and is counted, never fatal.
      const auto& checkpoint = *files->checkpoint;
      if (checkpoint) {
        observation.last_progress = *checkpoint;
      } else {
        AddProblem(observed, index->second,
                   MakeProblem(Reason::kBadCheckpoint,
                               fmt::format("role {}: {}", job.role, checkpoint.error())));
      }
    }
    if (auto it = ledger.find(job.role); it != ledger.end()) observation.ledger_id = it->second;
  }
  if (job.runs_dir().empty()) return;
  if (files != nullptr && files->records) {
    ApplyRunRecords(job, *files->records, observation, role, observed);
    files->records.reset();  // freed as it goes, as the reads' history is
  } else {
    // Not read: the source's read timed out or was late. What the last read said stands (the
    // role is unknown meanwhile), and no skipped record is counted.
    if (before != nullptr) role.records = before->records;
    observed.new_duplicates_prevented[job.role] = 0;
  }
}

void Observer::ApplyRunRecords(const JobSpec& job, RunRecordsRead& read,
                               RoleObservation& observation, RoleResult& role, Observed& observed) {
  for (const auto& message : read.new_problems) {
    Log(LogLevel::kWarn, "bad run record", {{"role", job.role}, {"err", message}});
  }
  for (auto& problem : read.problems) {
    observed.problems[job.source].push_back(problem);
    for (auto& source : observed.sources) {
      if (source.name == job.source) source.problems.push_back(problem);
    }
  }
  RunRecordSummary& summary = read.summary;
  // Each skipped record is counted once; pruned names are forgotten (names never repeat).
  auto& counted = prevented_counted_[job.role];
  std::set<std::string> still_there;
  int fresh = 0;
  for (const auto& name : summary.skipped_files) {
    if (!counted.count(name)) ++fresh;
    still_there.insert(name);
  }
  counted = std::move(still_there);
  observed.new_duplicates_prevented[job.role] = fresh;
  auto facts = std::make_shared<RunRecordFacts>();
  facts->run_records = read.records;
  facts->skipped_duplicates = summary.skipped;
  if (summary.has_runs) {
    // A wrapper's record is exact: it replaces what the scheduler's log or status said, and
    // stands in for a history the source could not read.
    observation.history = std::move(summary.history);
    observation.history_up = true;
    facts->last_duration = summary.last_duration;
    if (summary.last_exit_code) facts->last_exit_code = summary.last_exit_code;
    if (summary.last_signal) facts->last_exit_code = 128 + *summary.last_signal;
    facts->guarded = summary.guarded;
  }
  role.records = std::move(facts);
}

void Observer::Forget(const Spec& spec) {
  std::unordered_set<std::string_view> with_records;
  for (const auto& job : spec.jobs) {
    if (!job.runs_dir().empty()) with_records.insert(job.role);
  }
  auto kept = [&](const std::string& role) { return with_records.count(role) > 0; };
  for (auto it = prevented_counted_.begin(); it != prevented_counted_.end();) {
    it = kept(it->first) ? std::next(it) : prevented_counted_.erase(it);
  }
}

}  // namespace schedwatch
