#include "sources/problems.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace schedwatch {

const std::vector<ReasonInfo>& Reasons() {
  static const std::vector<ReasonInfo> reasons = {
      {Reason::kListFailed, "list_failed", "the list as a whole could not be read"},
      {Reason::kTimeout, "timeout", "no complete answer within the source's timeout"},
      {Reason::kHistoryFailed, "history_failed",
       "the list was read but its run history could not be; existence is still judged"},
      {Reason::kTransportError, "transport_error", "a request got no answer; retried"},
      {Reason::kRateLimited, "rate_limited", "the API answered 429; retried after Retry-After"},
      {Reason::kServerError, "server_error", "the API answered 5xx; retried"},
      {Reason::kMalformedJson, "malformed_json", "an answer was not the JSON expected; retried"},
      {Reason::kListRestarted, "list_restarted",
       "a Kubernetes continue token expired; the list started again"},
      {Reason::kPathNotFound, "path_not_found", "a configured crontab path does not exist"},
      {Reason::kFileNotFound, "file_not_found", "a job's workflow file is not on the branch"},
      {Reason::kMalformedObject, "malformed_object", "an item of a list could not be read"},
      {Reason::kCrontabIgnored, "crontab_ignored", "a crontab that cron would not run"},
      {Reason::kNonUtf8Crontab, "non_utf8_crontab", "a crontab line that is not UTF-8"},
      {Reason::kMarkerWithoutEntry, "marker_without_entry",
       "a schedwatch marker with no entry under it"},
      {Reason::kMalformedMarker, "malformed_marker", "a schedwatch marker that does not parse"},
      {Reason::kWorkflowWithoutConcurrency, "workflow_without_concurrency",
       "require_concurrency, and the workflow has no concurrency group"},
      {Reason::kScheduleDeactivated, "schedule_deactivated",
       "a GitLab pipeline schedule is inactive; GitLab deactivates one whose owner is gone"},
      {Reason::kUnmatchedLine, "unmatched_line", "a cron log line that matches no run"},
      {Reason::kGarbledLine, "garbled_line",
       "a cron log line or journal entry that does not parse"},
      {Reason::kPendingOverflow, "pending_overflow",
       "too many runs without END; the oldest was forgotten"},
      {Reason::kCronLogLevel, "cron_log_level", "cron does not log what a run history needs"},
      {Reason::kBadRunRecord, "bad_run_record", "a schedwatch_run record that cannot be used"},
      {Reason::kBadCheckpoint, "bad_checkpoint", "a job's progress checkpoint that cannot be read"},
      {Reason::kRunsDirFull, "runs_dir_full",
       "a runs_dir without room for schedwatch_run's next records"},
      {Reason::kRunInFuture, "run_in_future",
       "a run or checkpoint dated after now plus the clock skew allowance (5m); not counted"},
  };
  return reasons;
}

std::string_view ReasonName(Reason reason) {
  return Reasons()[static_cast<std::size_t>(reason)].name;
}

SourceProblem MakeProblem(Reason reason, std::string message, bool recovered) {
  return {std::string(ReasonName(reason)), std::move(message), recovered};
}

Reason ReasonOf(platform::RetryCause cause) {
  switch (cause) {
    case platform::RetryCause::kTransport:
      return Reason::kTransportError;
    case platform::RetryCause::kRateLimited:
      return Reason::kRateLimited;
    case platform::RetryCause::kServerError:
      return Reason::kServerError;
    case platform::RetryCause::kMalformed:
      return Reason::kMalformedJson;
  }
  return Reason::kTransportError;
}

SourceProblem RecoveredProblem(const platform::RecoveredFailure& failure) {
  return MakeProblem(ReasonOf(failure.cause), failure.message, /*recovered=*/true);
}

ProblemSink::Entry& ProblemSink::EntryFor(std::string_view reason) {
  for (auto& entry : entries_) {
    if (entry.reason == reason) return entry;
  }
  entries_.push_back({std::string(reason), 0, {}});
  return entries_.back();
}

void ProblemSink::Add(SourceProblem problem) {
  Entry& entry = EntryFor(problem.reason);
  if (entry.listed.size() < cap_) {
    entry.listed.push_back({std::move(problem.message), problem.recovered});
  }
  ++entry.count;
}

void ProblemSink::Merge(const ProblemSink& other) {
  for (const auto& theirs : other.entries_) {
    Entry& entry = EntryFor(theirs.reason);
    for (const auto& listed : theirs.listed) {
      if (entry.listed.size() >= cap_) break;
      entry.listed.push_back(listed);
    }
    entry.count += theirs.count;
  }
}

std::size_t ProblemSink::Count(Reason reason) const {
  for (const auto& entry : entries_) {
    if (entry.reason == ReasonName(reason)) return entry.count;
  }
  return 0;
}

std::size_t ProblemSink::Total() const {
  std::size_t total = 0;
  for (const auto& entry : entries_) total += entry.count;
  return total;
}

namespace {

std::string Tallied(std::size_t count, std::size_t listed, const std::string& message) {
  return fmt::format("{} problems like this one ({} listed): {}", count, listed, message);
}

}  // namespace

void ProblemSink::AppendTo(std::vector<SourceProblem>& out) const {
  for (const auto& entry : entries_) {
    for (std::size_t i = 0; i < entry.listed.size(); ++i) {
      const Listed& listed = entry.listed[i];
      out.push_back({entry.reason,
                     i == 0 && entry.count > entry.listed.size()
                         ? Tallied(entry.count, entry.listed.size(), listed.message)
                         : listed.message,
                     listed.recovered});
    }
  }
}

namespace {

// A message Tallied made, as the count it gives besides itself and the message untallied; a
// sink's problems capped again (a list's, with its history's) are counted from what it said.
std::size_t Unlisted(std::string& message) {
  std::size_t count = 0, listed = 0;
  int end = 0;
  if (std::sscanf(message.c_str(), "%zu problems like this one (%zu listed): %n", &count, &listed,
                  &end) != 2 ||
      end == 0 || count < listed) {
    return 0;
  }
  message.erase(0, static_cast<std::size_t>(end));
  return count - listed;
}

}  // namespace

std::vector<SourceProblem> CapProblems(std::vector<SourceProblem> problems, std::size_t cap) {
  std::unordered_map<std::string, std::size_t> counts, entries;
  bool tallied = false;
  for (auto& problem : problems) {
    std::size_t unlisted = Unlisted(problem.message);
    tallied |= unlisted > 0;
    counts[problem.reason] += 1 + unlisted;
    ++entries[problem.reason];
  }
  bool over = std::any_of(counts.begin(), counts.end(),
                          [cap](const auto& count) { return count.second > cap; });
  if (!over && !tallied) return problems;
  std::unordered_map<std::string, std::size_t> kept;
  std::vector<SourceProblem> capped;
  for (auto& problem : problems) {
    std::size_t& so_far = kept[problem.reason];
    if (so_far >= cap) continue;
    std::size_t count = counts[problem.reason];
    std::size_t listed = std::min(cap, entries[problem.reason]);
    if (so_far++ == 0 && count > listed) problem.message = Tallied(count, listed, problem.message);
    capped.push_back(std::move(problem));
  }
  return capped;
}

}  // namespace schedwatch
