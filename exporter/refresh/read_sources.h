// Stage 1 of a refresh: read every source at once, on a pool of worker threads that is joined at
// shutdown. Each read has its own deadline; a read that misses it is cancelled (its
// ListContext.cancelled is set), the refresh goes on without it (its roles are unknown), and the
// read finishes on its worker, which is then free again. Absences are confirmed by a second read
// (sources/absence.h). The files a source's jobs write themselves (progress.file, runs_dir) are
// read after its list, as part of its read: under its timeout, in its duration and its problems.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "schedwatch/shard.h"
#include "schedwatch/spec.h"
#include "sources/absence.h"
#include "sources/run_record.h"
#include "sources/source.h"

namespace schedwatch {

// One source of the spec, as the refresh reads it.
struct SourceRunner {
  std::string name;
  std::string type;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<Source> source;
  std::vector<std::string> desired_roles;  // sorted
  ShardAssignment shard;                   // what its reads keep (KeepShardOf)
  // Its jobs with files of their own (progress.file, runs_dir), as indices into spec->jobs in
  // ascending order; the spec is held for a read that outlives a reload.
  std::shared_ptr<const Spec> spec;
  std::vector<std::uint32_t> job_files;
  // A read is running: the next refresh does not start another (it reports the source late).
  std::shared_ptr<std::atomic<bool>> busy = std::make_shared<std::atomic<bool>>(false);
};

// The reconciler's ledger: the id of the object it made for each role it re-created. Empty with
// no file (`file` empty) or an unreadable one (logged; the roles then show no ledger id).
using LedgerIds = std::map<std::string, std::string>;
LedgerIds ReadLedgerIds(const std::string& file);

// Drops from a read what another shard counts: objects and runs of roles of other shards (in the
// spec or not) and, with `shared_problems`, the problems of the data every shard reads alike (a
// host's crontabs, a cluster's CronJobs), which shard 0 counts.
void KeepShardOf(SourceSnapshot& snapshot, const ShardAssignment& shard, bool shared_problems);

// What a role's schedwatch_run records said at one read.
struct RunRecordsRead {
  RunRecordSummary summary;
  int records = 0;
  std::vector<SourceProblem> problems;    // every standing one, runs_dir_full included
  std::vector<std::string> new_problems;  // those first seen at this read (to log them once)
};

// What one read found in the files of one job of the source, which the job's user writes: outside
// input, opened with platform::OpenGuarded.
struct JobFilesRead {
  std::uint32_t job = 0;  // index into the spec's jobs
  // progress.file, read when the list succeeded without the role's progress: its time (nullopt:
  // none yet) or why it could not be read or parsed (ReadCheckpoint).
  std::optional<Result<std::optional<std::int64_t>>> checkpoint;
  // runs_dir, read whether the list succeeded or not; apart, so that a job with a checkpoint
  // only takes 64 bytes.
  std::unique_ptr<RunRecordsRead> records;
};

// What one refresh got from one source.
struct SourceRead {
  std::shared_ptr<const SourceRunner> runner;
  AbsenceReads reads;      // reads.snapshot is an error when the read failed, timed out or was late
  bool timed_out = false;  // no answer in time, or the previous read still running
  double seconds = 0;
  // In the order of runner->job_files; none when the read timed out or was late.
  std::vector<JobFilesRead> job_files;
};

class SourceReaders {
 public:
  SourceReaders() = default;
  SourceReaders(const SourceReaders&) = delete;
  SourceReaders& operator=(const SourceReaders&) = delete;
  ~SourceReaders() { Shutdown(); }

  // Reads every runner's source, all at once, and waits for each until its timeout. `now` is
  // the refresh's ListContext.now. Results are in the order of `runners`.
  std::vector<SourceRead> ReadAll(const std::vector<std::shared_ptr<SourceRunner>>& runners,
                                  std::int64_t now, std::chrono::milliseconds confirm_delay);

  // Cancels every read still running, waits for them to return and joins the workers. Reads
  // asked for afterwards fail at once.
  void Shutdown();

  std::size_t WorkerCount() const;

 private:
  struct Task;
  void Submit(std::shared_ptr<Task> task);
  void Work();
  std::vector<JobFilesRead> ReadJobFiles(const SourceRunner& runner,
                                         const Result<SourceSnapshot>& snapshot,
                                         const std::atomic<bool>& cancelled);
  void ForgetRecordCaches(const std::vector<std::shared_ptr<SourceRunner>>& runners);

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Task>> queue_;
  std::vector<std::shared_ptr<Task>> running_;  // queued or running, to cancel at shutdown
  std::vector<std::thread> workers_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
  // Run record files already read, by role, kept across reads and reloads. A read takes its
  // roles' caches out while it runs and puts them back: a read that outlives its refresh leaves
  // the next read of those roles cold, never sharing one.
  std::mutex record_caches_mutex_;
  std::unordered_map<std::string, RunRecordCache> record_caches_;
};

}  // namespace schedwatch
