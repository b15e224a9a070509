#include "exporter/refresh/read_sources.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_set>

#include "exporter/refresh/checkpoint.h"
#include "reconcile/ledger.h"
#include "schedwatch/platform/log.h"
#include "sources/problems.h"

namespace schedwatch {

// One read of one source, shared by the refresh that waits for it and the worker that runs it.
struct SourceReaders::Task {
  std::shared_ptr<SourceRunner> runner;
  std::int64_t now = 0;
  std::chrono::milliseconds confirm_delay{0};
  std::atomic<bool> cancelled{false};

  std::mutex mutex;  // guards what follows
  std::condition_variable done_cv;
  bool done = false;
  AbsenceReads reads;
  std::vector<JobFilesRead> job_files;
  double seconds = 0;

  void Finish(AbsenceReads result, std::vector<JobFilesRead> files, double took) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      reads = std::move(result);
      job_files = std::move(files);
      seconds = took;
      // Free before done: a refresh right after this one must not find the source busy.
      runner->busy->store(false);
      done = true;
    }
    done_cv.notify_all();
  }
};

namespace {

AbsenceReads Read(SourceRunner& runner, const ListContext& context,
                  std::chrono::milliseconds confirm_delay) {
  return ConfirmAbsence(
      runner.desired_roles,
      [&] {
        Result<SourceSnapshot> snapshot = runner.source->List(context);
        // GitHub and GitLab shards read their own jobs' workflow files and pipelines: their
        // problems are their own (the sources leave their shared lists' to shard 0 themselves).
        if (snapshot && runner.shard.Sharded()) {
          KeepShardOf(*snapshot, runner.shard,
                      runner.type != "github_actions" && runner.type != "gitlab");
        }
        return snapshot;
      },
      [&] {
        // Waits for the confirming read, or less when the read is cancelled.
        auto until = std::chrono::steady_clock::now() + confirm_delay;
        while (std::chrono::steady_clock::now() < until && !context.cancelled->load()) {
          std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
              std::chrono::milliseconds(20), until - std::chrono::steady_clock::now()));
        }
        return !context.cancelled->load();
      });
}

// Two reserved records (schedwatch_run's kReservedRecordBytes each): less and the next run's
// records may find no room.
constexpr std::uint64_t kRunsDirLowBytes = 8192;

RunRecordsRead ReadRecords(const JobSpec& job, RunRecordCache& cache) {
  RunRecordRead read = ReadRunRecords(job.runs_dir(), job.role, &cache);
  // A run that cannot write its records would be invisible: say so while the room is gone.
  struct statvfs space {};
  if (statvfs(job.runs_dir().c_str(), &space) == 0 &&
      static_cast<std::uint64_t>(space.f_bavail) * space.f_frsize < kRunsDirLowBytes) {
    read.problems.push_back(MakeProblem(
        Reason::kRunsDirFull,
        fmt::format("role {}: {} has {} bytes free: schedwatch_run cannot record new runs there",
                    job.role, job.runs_dir(),
                    static_cast<std::uint64_t>(space.f_bavail) * space.f_frsize)));
  }
  RunRecordsRead out;
  // Summed up here: only what observing needs is held until then, not every record.
  out.summary = SummarizeRunRecords(read.records);
  out.records = static_cast<int>(read.records.size());
  out.problems = std::move(read.problems);
  out.new_problems = std::move(read.new_problems);
  return out;
}

}  // namespace

void KeepShardOf(SourceSnapshot& snapshot, const ShardAssignment& shard, bool shared_problems) {
  auto other = [&shard](std::string_view role) { return !shard.Owns(role); };
  snapshot.objects.erase(
      std::remove_if(snapshot.objects.begin(), snapshot.objects.end(),
                     [&other](const LiveObject& object) { return other(object.role()); }),
      snapshot.objects.end());
  auto drop_roles = [&other](auto& by_role) {
    for (auto it = by_role.begin(); it != by_role.end();) {
      it = other(it->first) ? by_role.erase(it) : std::next(it);
    }
  };
  drop_roles(snapshot.history);
  drop_roles(snapshot.progress);
  if (shard.CountsSharedReads() || !shared_problems) return;
  // What the host holds is read by every shard: counted once, by shard 0. The shard's own
  // requests (retries, timeouts) are its own.
  static const std::set<std::string_view> kHostData = {
      ReasonName(Reason::kPathNotFound),       ReasonName(Reason::kMalformedObject),
      ReasonName(Reason::kCrontabIgnored),     ReasonName(Reason::kNonUtf8Crontab),
      ReasonName(Reason::kMarkerWithoutEntry), ReasonName(Reason::kMalformedMarker),
      ReasonName(Reason::kUnmatchedLine),      ReasonName(Reason::kGarbledLine),
      ReasonName(Reason::kPendingOverflow),    ReasonName(Reason::kCronLogLevel)};
  snapshot.problems.erase(std::remove_if(snapshot.problems.begin(), snapshot.problems.end(),
                                         [](const SourceProblem& problem) {
                                           return kHostData.count(problem.reason) > 0;
                                         }),
                          snapshot.problems.end());
}

std::vector<SourceRead> SourceReaders::ReadAll(
    const std::vector<std::shared_ptr<SourceRunner>>& runners, std::int64_t now,
    std::chrono::milliseconds confirm_delay) {
  auto started = std::chrono::steady_clock::now();
  ForgetRecordCaches(runners);
  std::vector<std::shared_ptr<Task>> tasks;
  for (const auto& runner : runners) {
    if (runner->busy->exchange(true)) {
      tasks.push_back(nullptr);  // the previous read has not returned
      continue;
    }
    auto task = std::make_shared<Task>();
    task->runner = runner;
    task->now = now;
    task->confirm_delay = confirm_delay;
    Submit(task);
    tasks.push_back(std::move(task));
  }

  std::vector<SourceRead> reads;
  reads.reserve(runners.size());
  for (std::size_t i = 0; i < runners.size(); ++i) {
    SourceRead read;
    read.runner = runners[i];
    const std::shared_ptr<Task>& task = tasks[i];
    if (!task) {
      read.reads.snapshot = Error{"the previous read has not finished yet"};
      read.timed_out = true;
    } else {
      std::unique_lock<std::mutex> lock(task->mutex);
      if (task->done_cv.wait_until(lock, started + runners[i]->timeout,
                                   [&] { return task->done; })) {
        read.reads = std::move(task->reads);
        read.job_files = std::move(task->job_files);
        read.seconds = task->seconds;
      } else {
        task->cancelled = true;  // the worker finishes it; nobody waits for it any more
        read.reads.snapshot =
            Error{fmt::format("no answer within {}s", runners[i]->timeout.count() / 1000.0)};
        read.timed_out = true;
        read.seconds = runners[i]->timeout.count() / 1000.0;
      }
    }
    reads.push_back(std::move(read));
  }
  return reads;
}

void SourceReaders::Submit(std::shared_ptr<Task> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      queue_.push_back(task);
      running_.push_back(task);
      // One worker per read running at once: a hung read holds its worker, not the others'.
      if (idle_ < queue_.size()) workers_.emplace_back([this] { Work(); });
      wake_.notify_one();
      return;
    }
  }
  task->Finish(FirstRead({}, Error{"shutting down"}), {}, 0);
}

void SourceReaders::Work() {
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++idle_;
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      --idle_;
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    auto start = std::chrono::steady_clock::now();
    ListContext context{task->now, &task->cancelled};
    AbsenceReads reads = Read(*task->runner, context, task->confirm_delay);
    std::vector<JobFilesRead> files = ReadJobFiles(*task->runner, reads.snapshot, task->cancelled);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      running_.erase(std::find(running_.begin(), running_.end(), task));
    }
    task->Finish(std::move(reads), std::move(files), took);
  }
}

std::vector<JobFilesRead> SourceReaders::ReadJobFiles(const SourceRunner& runner,
                                                      const Result<SourceSnapshot>& snapshot,
                                                      const std::atomic<bool>& cancelled) {
  std::vector<JobFilesRead> files;
  if (runner.job_files.empty()) return files;
  const std::vector<JobSpec>& jobs = runner.spec->jobs;
  using CacheNode = decltype(record_caches_)::node_type;
  std::vector<CacheNode> caches(runner.job_files.size());
  {
    std::lock_guard<std::mutex> lock(record_caches_mutex_);
    for (std::size_t i = 0; i < caches.size(); ++i) {
      const JobSpec& job = jobs[runner.job_files[i]];
      if (!job.runs_dir().empty()) caches[i] = record_caches_.extract(job.role);
    }
  }
  files.reserve(runner.job_files.size());
  for (std::size_t i = 0; i < caches.size() && !cancelled.load(); ++i) {
    const JobSpec& job = jobs[runner.job_files[i]];
    JobFilesRead& file = files.emplace_back();
    file.job = runner.job_files[i];
    // A source may report progress itself (a `file` snapshot); the job's checkpoint is read only
    // when it did not, and never for a source that could not be listed.
    if (job.progress() && snapshot && snapshot->progress.count(job.role) == 0) {
      file.checkpoint = ReadCheckpoint(job.progress()->file);
    }
    if (job.runs_dir().empty()) continue;
    if (caches[i]
            .empty()) {  // first read of the role, or its cache is with a read that outlived us
      decltype(record_caches_) cold;
      caches[i] = cold.extract(cold.try_emplace(job.role).first);
    }
    file.records = std::make_unique<RunRecordsRead>(ReadRecords(job, caches[i].mapped()));
  }
  std::lock_guard<std::mutex> lock(record_caches_mutex_);
  for (CacheNode& cache : caches) {
    if (!cache.empty()) record_caches_.insert(std::move(cache));
  }
  return files;
}

void SourceReaders::ForgetRecordCaches(const std::vector<std::shared_ptr<SourceRunner>>& runners) {
  // Roles no longer desired with run records: their caches go.
  std::unordered_set<std::string_view> wanted;
  for (const auto& runner : runners) {
    for (std::uint32_t job : runner->job_files) {
      if (!runner->spec->jobs[job].runs_dir().empty()) wanted.insert(runner->spec->jobs[job].role);
    }
  }
  std::lock_guard<std::mutex> lock(record_caches_mutex_);
  for (auto it = record_caches_.begin(); it != record_caches_.end();) {
    it = wanted.count(it->first) ? std::next(it) : record_caches_.erase(it);
  }
}

void SourceReaders::Shutdown() {
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (const auto& task : running_) task->cancelled = true;
    workers.swap(workers_);
  }
  wake_.notify_all();
  // Sources return soon once cancelled (the HTTP client within about 100 ms, file reads between
  // chunks): joining waits for that, never for a source's own timeout.
  for (auto& worker : workers) worker.join();
}

std::size_t SourceReaders::WorkerCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return workers_.size();
}

LedgerIds ReadLedgerIds(const std::string& file) {
  LedgerIds ids;
  if (file.empty()) return ids;
  auto read = ReadLedger(file);
  if (!read) {
    Log(LogLevel::kWarn, "ledger unreadable", {{"err", read.error()}});
    return ids;
  }
  for (const auto& [role, entry] : read->entries) ids[role] = entry.id;
  return ids;
}

}  // namespace schedwatch
