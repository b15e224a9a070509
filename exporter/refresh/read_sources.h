// Stage 1 of a refresh: read every source at once, on a pool of worker threads that is joined at
// shutdown. Each read has its own deadline; a read that misses it is cancelled (its
// ListContext.cancelled is set), the refresh goes on without it (its roles are unknown), and the
// read finishes on its worker, which is then free again. Absences are confirmed by a second read
// (sources/absence.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "schedwatch/shard.h"
#include "sources/absence.h"
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
  // A read is running: the next refresh does not start another (it reports the source late).
  std::shared_ptr<std::atomic<bool>> busy = std::make_shared<std::atomic<bool>>(false);
};

// Drops from a read what another shard counts: objects and runs of roles of other shards (in the
// spec or not) and, with `shared_problems`, the problems of the data every shard reads alike (a
// host's crontabs, a cluster's CronJobs), which shard 0 counts.
void KeepShardOf(SourceSnapshot& snapshot, const ShardAssignment& shard, bool shared_problems);

// What one refresh got from one source.
struct SourceRead {
  std::shared_ptr<const SourceRunner> runner;
  AbsenceReads reads;      // reads.snapshot is an error when the read failed, timed out or was late
  bool timed_out = false;  // no answer in time, or the previous read still running
  double seconds = 0;
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

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Task>> queue_;
  std::vector<std::shared_ptr<Task>> running_;  // queued or running, to cancel at shutdown
  std::vector<std::thread> workers_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace schedwatch
