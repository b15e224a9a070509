#include "exporter/observe.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "exporter/checkpoint.h"
#include "reconcile/ledger.h"
#include "schedwatch/platform/log.h"

namespace schedwatch {
namespace {

using RoleSet = std::unordered_set<std::string_view>;

// Two reserved records (schedwatch_run's kReservedRecordBytes each): less and the next run's
// records may find no room.
constexpr std::uint64_t kRunsDirLowBytes = 8192;

SourceStatus StatusOf(const SourceRead& read, const RoleSet& desired, std::int64_t now,
                      std::vector<SourceProblem>& problems) {
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
      if (!desired.count(object.role)) ++status.unowned_objects;
    }
    status.problems = snapshot->problems;
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

std::map<std::string, std::string> ReadLedgerIds(const std::string& file) {
  std::map<std::string, std::string> ids;
  if (file.empty()) return ids;
  auto read = ReadLedger(file);
  if (!read) {
    Log(LogLevel::kWarn, "ledger unreadable", {{"err", read.error()}});
    return ids;
  }
  for (const auto& [role, entry] : read->entries) ids[role] = entry.id;
  return ids;
}

void AddProblem(Observed& observed, std::size_t source_index, SourceProblem problem) {
  observed.sources[source_index].problems.push_back(problem);
  observed.problems[observed.sources[source_index].name].push_back(std::move(problem));
}

}  // namespace

Observed Observer::Observe(const Spec& spec, std::vector<SourceRead>& reads,
                           const std::map<std::string, std::int64_t>& desired_since,
                           std::int64_t now) {
  Observed observed;
  RoleSet desired;
  desired.reserve(spec.jobs.size());
  for (const auto& job : spec.jobs) desired.insert(job.role);
  std::unordered_map<std::string_view, std::size_t> source_index;
  for (const auto& read : reads) {
    source_index.emplace(read.runner->name, observed.sources.size());
    observed.sources.push_back(StatusOf(read, desired, now, observed.problems[read.runner->name]));
  }
  // Each role's objects, found in one pass over each list (not one pass per role).
  std::unordered_map<std::string_view, std::vector<LiveObject*>> objects_by_role;
  for (auto& read : reads) {
    if (!read.reads.snapshot) continue;
    for (auto& object : read.reads.snapshot->objects)
      objects_by_role[object.role].push_back(&object);
  }
  const std::map<std::string, std::string> ledger = ReadLedgerIds(ledger_file_);

  observed.observations.resize(spec.jobs.size());
  observed.roles.resize(spec.jobs.size());
  for (std::size_t i = 0; i < spec.jobs.size(); ++i) {
    const JobSpec& job = spec.jobs[i];
    RoleObservation& observation = observed.observations[i];
    RoleResult& role = observed.roles[i];
    role.job = &job;
    auto desired = desired_since.find(job.role);
    observation.desired_since = desired == desired_since.end() ? now : desired->second;
    auto index = source_index.find(job.source);
    if (index == source_index.end()) continue;  // no such source: the spec check prevents it
    SourceRead& read = reads[index->second];
    observation.source_up = read.reads.snapshot.ok();
    if (observation.source_up) {
      SourceSnapshot& snapshot = *read.reads.snapshot;
      if (auto it = objects_by_role.find(job.role); it != objects_by_role.end()) {
        // Out of the index first: its key views the role of an object about to be moved.
        std::vector<LiveObject*> objects = std::move(it->second);
        objects_by_role.erase(it);
        observation.objects.reserve(objects.size());
        for (LiveObject* object : objects) observation.objects.push_back(std::move(*object));
      }
      observation.absence_confirmed = read.reads.confirmed_absent.count(job.role) > 0;
      if (auto it = snapshot.history.find(job.role); it != snapshot.history.end()) {
        observation.history = std::move(it->second);
      }
      if (auto it = snapshot.progress.find(job.role); it != snapshot.progress.end()) {
        observation.last_progress = it->second;
      } else if (job.progress) {
        // Written by the job: a bad one leaves progress unknown and is counted, never fatal.
        auto checkpoint = ReadCheckpoint(job.progress->file);
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
    if (!job.runs_dir.empty()) ApplyRunRecords(job, observation, role, observed);
  }
  Forget(spec);
  return observed;
}

void Observer::ApplyRunRecords(const JobSpec& job, RoleObservation& observation, RoleResult& role,
                               Observed& observed) {
  RunRecordRead read = ReadRunRecords(job.runs_dir, job.role, &run_record_cache_[job.role]);
  // A run that cannot write its records would be invisible: say so while the room is gone.
  struct statvfs space {};
  if (statvfs(job.runs_dir.c_str(), &space) == 0 &&
      static_cast<std::uint64_t>(space.f_bavail) * space.f_frsize < kRunsDirLowBytes) {
    read.problems.push_back(MakeProblem(
        Reason::kRunsDirFull,
        fmt::format("role {}: {} has {} bytes free: schedwatch_run cannot record new runs there",
                    job.role, job.runs_dir,
                    static_cast<std::uint64_t>(space.f_bavail) * space.f_frsize)));
  }
  for (const auto& message : read.new_problems) {
    Log(LogLevel::kWarn, "bad run record", {{"role", job.role}, {"err", message}});
  }
  for (auto& problem : read.problems) {
    observed.problems[job.source].push_back(problem);
    for (auto& source : observed.sources) {
      if (source.name == job.source) source.problems.push_back(problem);
    }
  }
  RunRecordSummary summary = SummarizeRunRecords(read.records);
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

void Observer::Forget(const Spec& spec) {
  std::unordered_set<std::string_view> with_records;
  for (const auto& job : spec.jobs) {
    if (!job.runs_dir.empty()) with_records.insert(job.role);
  }
  auto kept = [&](const std::string& role) { return with_records.count(role) > 0; };
  for (auto it = prevented_counted_.begin(); it != prevented_counted_.end();) {
    it = kept(it->first) ? std::next(it) : prevented_counted_.erase(it);
  }
  for (auto it = run_record_cache_.begin(); it != run_record_cache_.end();) {
    it = kept(it->first) ? std::next(it) : run_record_cache_.erase(it);
  }
}

}  // namespace schedwatch
