// The problems a read reports (SourceProblem, source.h): a declared vocabulary of reasons, the
// label values of schedwatch_source_errors_total{reason}, and a sink that caps how many of one
// reason a read lists, so a log of a million garbled lines costs a hundred entries.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/platform/api_client.h"
#include "sources/source.h"

namespace schedwatch {

enum class Reason {
  // Reading a scheduler's list.
  kListFailed,      // the list as a whole could not be read (its roles become unknown)
  kTimeout,         // no complete answer within the source's timeout (its roles become unknown)
  kHistoryFailed,   // the list was read, its run history not (its roles' runs become unknown)
  kTransportError,  // a request got no answer (refused, reset, timed out); retried
  kRateLimited,     // 429 from the API; retried after Retry-After
  kServerError,     // 5xx from the API; retried
  kMalformedJson,   // an answer that is not the JSON expected; retried
  kListRestarted,   // an expired Kubernetes continue token; the list started again
  kPathNotFound,    // a configured crontab path does not exist
  kFileNotFound,    // a job's workflow file is not on the branch
  // Items of a list.
  kMalformedObject,             // an item (CronJob, Job, workflow, run, snapshot entry) unreadable
  kCrontabIgnored,              // a crontab cron would not run (owner, mode, size, syntax)
  kNonUtf8Crontab,              // a crontab line that is not UTF-8
  kMarkerWithoutEntry,          // a schedwatch marker with no entry under it
  kMalformedMarker,             // a schedwatch marker that does not parse
  kWorkflowWithoutConcurrency,  // require_concurrency, and the workflow has no group
  kScheduleDeactivated,         // a GitLab pipeline schedule is inactive (its owner gone?)
  // Run history.
  kUnmatchedLine,    // a cron log line that matches no run (END without CMD, CMD twice)
  kGarbledLine,      // a cron log line or journal entry that does not parse
  kPendingOverflow,  // too many runs without END; the oldest was forgotten
  kCronLogLevel,     // cron does not log what a run history needs (-L)
  kBadRunRecord,     // a schedwatch_run record that is unreadable or not this role's
  kBadCheckpoint,    // a job's progress checkpoint that is unreadable
  kRunsDirFull,      // a runs_dir with no room left: new runs there go unrecorded
  kRunInFuture,      // a run or checkpoint dated after now + the clock skew allowance
};

struct ReasonInfo {
  Reason reason;
  std::string_view name;     // the label value
  std::string_view meaning;  // for docs and the status page
};

// Every reason, in the order above.
const std::vector<ReasonInfo>& Reasons();
std::string_view ReasonName(Reason reason);

SourceProblem MakeProblem(Reason reason, std::string message, bool recovered = false);
// A failure the API client's retry got past, as a recovered problem.
SourceProblem RecoveredProblem(const platform::RecoveredFailure& failure);
Reason ReasonOf(platform::RetryCause cause);

// Per-read problems, at most `cap` listed per reason; the rest are counted, and the first of
// a reason says how many there were. Messages are made only for the problems listed. Reasons
// come out in the order they first came in.
class ProblemSink {
 public:
  static constexpr std::size_t kDefaultCap = 100;
  explicit ProblemSink(std::size_t cap = kDefaultCap) : cap_(cap) {}

  template <typename MakeMessage>
  void Add(Reason reason, MakeMessage&& make_message) {
    Entry& entry = EntryFor(ReasonName(reason));
    if (entry.listed.size() < cap_) entry.listed.push_back({make_message(), false});
    ++entry.count;
  }
  void Add(SourceProblem problem);
  void Merge(const ProblemSink& other);
  std::size_t Count(Reason reason) const;
  std::size_t Total() const;
  void AppendTo(std::vector<SourceProblem>& out) const;
  void Clear() { entries_.clear(); }

 private:
  struct Listed {
    std::string message;
    bool recovered;
  };
  struct Entry {
    std::string reason;
    std::size_t count = 0;
    std::vector<Listed> listed;
  };
  Entry& EntryFor(std::string_view reason);

  std::size_t cap_;
  std::vector<Entry> entries_;  // a handful of reasons: a scan beats a map
};

// `problems` with at most `cap` per reason, in their order; the first of a reason past the
// cap says how many there were, counting those a sink's tally said it counted (AppendTo).
std::vector<SourceProblem> CapProblems(std::vector<SourceProblem> problems,
                                       std::size_t cap = ProblemSink::kDefaultCap);

}  // namespace schedwatch
