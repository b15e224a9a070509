#include "exporter/refresh/read_sources.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>

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
  double seconds = 0;

  void Finish(AbsenceReads result, double took) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      reads = std::move(result);
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
        // problems are their own.
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
  if (shard.ordinal == 0 || !shared_problems) return;
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
  task->Finish(FirstRead({}, Error{"shutting down"}), 0);
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
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      running_.erase(std::find(running_.begin(), running_.end(), task));
    }
    task->Finish(std::move(reads), took);
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

}  // namespace schedwatch
