// Pure mapping of GitHub REST answers and workflow files to schedwatch's live objects and run
// history. No I/O, no clock: the
// source (github_actions_source.h) fetches, these functions read what it fetched.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/platform/api_client.h"
#include "schedwatch/result.h"
#include "schedwatch/spec.h"
#include "sources/source.h"

namespace schedwatch::github {

// One item of GET /repos/{owner}/{repo}/actions/workflows.
struct Workflow {
  std::int64_t id = 0;
  std::string name;
  std::string path;   // ".github/workflows/nightly.yml"
  std::string state;  // active | deleted | disabled_fork | disabled_inactivity | disabled_manually
};

// One page of workflows; malformed items become problems, the rest is kept.
struct WorkflowPage {
  std::vector<Workflow> workflows;
  std::vector<SourceProblem> problems;  // at most one per item
  std::size_t listed = 0;               // items on the page, readable or not
};
Result<WorkflowPage> ParseWorkflowPage(std::string_view body);

// A list (all its pages) of which every item is a problem is no list to read: a failed read,
// never an empty list whose roles would look missing. `key` names the list in the error.
Result<bool> SomethingReadable(std::size_t items, const std::vector<SourceProblem>& problems,
                               const char* key);

// `default_branch` of GET /repos/{owner}/{repo}.
Result<std::string> ParseDefaultBranch(std::string_view body);

// GET /repos/{owner}/{repo}/contents/{directory}: path -> blob sha of every file in it.
// The API returns at most 1,000 entries, so a listing of that size may be incomplete.
struct DirectoryListing {
  std::map<std::string, std::string> blob_sha_by_path;
  bool complete = true;
};
Result<DirectoryListing> ParseDirectoryListing(std::string_view body);
inline constexpr std::size_t kMaxDirectoryEntries = 1000;

// One `on.schedule[]` entry of a workflow file.
struct CronEntry {
  std::string cron;
  std::string timezone;  // the entry's `timezone:` key; empty when absent (GitHub runs in UTC)
  int line = 0;
};

// What a workflow file says about its schedule.
struct WorkflowFile {
  std::vector<CronEntry> schedules;
  std::string spec_version;           // from `# schedwatch: spec_version=N`; empty when none
  bool has_concurrency = false;       // a workflow-level `concurrency:` key (GitHub's own guard)
  std::vector<std::string> problems;  // malformed schedule entries, by line
};
// Fails only when the text is not YAML at all; a file without `on.schedule` has no entries.
// The marker counts only on a YAML comment line (not inside a `run: |` block); two markers that
// disagree are a problem and give no version. A file GitHub refuses (a key twice in a mapping,
// a second document) is a problem with no schedule and no version.
Result<WorkflowFile> ParseWorkflowFile(std::string_view text);

// "retry.yml" -> ".github/workflows/retry.yml"; "./.github/workflows/x.yml" -> without "./".
std::string NormalizeWorkflowPath(std::string_view path);

// The live object a workflow is for `job`. Of several cron entries, the one equivalent to the
// job's schedule is reported (no drift), else the first (drift); a file that could not be read
// (`file` null) or has no schedule reports an empty schedule, which is drift.
LiveObject MakeLiveObject(const Workflow& workflow, const WorkflowFile* file, const JobSpec& job);

// A scheduled run, reduced to what the run history needs.
struct ScheduledRun {
  enum class State {
    kRunning,    // queued, in_progress, waiting, pending, requested
    kSucceeded,  // completed + success
    kFailed,     // completed + failure, timed_out, startup_failure, stale
    kEnded,      // completed + cancelled, skipped, neutral, action_required: started, no verdict
  };
  std::int64_t started = 0;              // run_started_at (the current attempt), else created_at
  std::optional<std::int64_t> finished;  // updated_at once completed
  State state = State::kRunning;
  std::int64_t created = 0;      // created_at, else started: the order of the lists
  std::int64_t workflow_id = 0;  // 0 when the item names none
  std::shared_ptr<const RunIdentity> identity = nullptr;  // id and html_url, when it has an id
};

// One page of GET .../actions/workflows/{id}/runs or of the repository's .../actions/runs:
// newest first. A page of nothing readable is an Error.
struct RunPage {
  std::vector<ScheduledRun> runs;
  std::vector<SourceProblem> problems;
  // The workflow_id of the item of each problem (0 when unknown): on a page of the repository's
  // runs, problems of workflows no job names are not the spec's business.
  std::vector<std::int64_t> problem_workflows;
  std::size_t listed = 0;  // items on the page, readable or not
};
// `what` names the workflow in problem messages.
Result<RunPage> ParseRunPage(std::string_view body, const std::string& what);

void AddRun(RunHistory& history, const ScheduledRun& run);

// Shared with the other API sources (platform/api_client.h).
using platform::IntegerHeader;
using platform::NextLink;

// Why a request failed, from its status, headers and body.
struct ApiFailure {
  enum class Kind { kRateLimited, kUnauthorized, kForbidden, kNotFound, kServer, kOther };
  Kind kind = Kind::kOther;
  // For kRateLimited: Unix seconds before which no request should be sent.
  std::optional<std::int64_t> retry_at;
  bool secondary = false;  // a secondary (abuse) limit, which backs off exponentially
  bool capped = false;     // the server asked for a longer wait than max_wait
  std::string message;     // GitHub's `message`, shortened; may be empty
};
// GitHub's primary limit resets within its hour: a longer wait is the server's mistake.
inline constexpr std::chrono::seconds kMaxRateLimitWait{3600};
// `headers` keys are lower case. `now` anchors retry-after (seconds or an HTTP-date, read by
// platform::ParseRetryAfter); `secondary_backoff` is used for a
// secondary limit that names no retry-after. retry_at is at most `now + max_wait`
// (platform::BoundedRetryAt), whatever retry-after or x-ratelimit-reset said.
ApiFailure ClassifyFailure(long status, const std::map<std::string, std::string>& headers,
                           std::string_view body, std::int64_t now, std::int64_t secondary_backoff,
                           std::chrono::seconds max_wait = kMaxRateLimitWait);

}  // namespace schedwatch::github
