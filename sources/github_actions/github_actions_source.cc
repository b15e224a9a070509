#include "sources/github_actions/github_actions_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "schedwatch/platform/log.h"
#include "sources/absence.h"
#include "sources/problems.h"

namespace schedwatch {
namespace {

using github::Workflow;

constexpr int kWorkflowsPerPage = 100;  // GitHub's maximum
constexpr int kMaxWorkflowPages = 100;  // 10,000 workflows: beyond that the answer is suspect
// The newest scheduled runs hold the last start, the running ones and usually the latest
// success and failure; when they hold no success, one `status=success` query finds it.
constexpr int kRunsPerPage = 20;
// The repository's scheduled runs: GitHub's largest page, and the most it lists for a query with
// a filter (event=...): 1,000 runs, 10 pages. A page with no next link after that is no end.
constexpr int kRepositoryRunsPerPage = 100;
constexpr std::size_t kMaxFilteredResults = 1000;
constexpr int kMaxRepositoryRunPages = 10;

// GitHub's limits, of which a source spends at most kBudgetShare (its shard 1/N of it: the
// shards of one spec read with one token): the rest is for other clients of the token, other
// sources and the re-read that confirms an absence.
constexpr std::int64_t kDefaultPrimaryLimit = 5000;      // requests an hour for a token
constexpr std::int64_t kSecondaryPointsPerMinute = 900;  // REST; a GET costs one point
constexpr double kBudgetShare = 0.5;
constexpr std::int64_t kMaxDerivedFloor = 3600;  // a read at least every hour, whatever it costs

// Escapes each segment of a repository path, keeping the slashes.
std::string EscapePath(std::string_view path) {
  std::string result;
  while (true) {
    std::size_t slash = path.find('/');
    result += UrlEncode(path.substr(0, slash));
    if (slash == std::string_view::npos) return result;
    result += '/';
    path.remove_prefix(slash + 1);
  }
}

std::string Directory(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

template <typename T>
void KeepUsed(std::map<std::string, T>& cache, const std::set<std::string>& used) {
  for (auto it = cache.begin(); it != cache.end();) {
    it = used.count(it->first) ? std::next(it) : cache.erase(it);
  }
}

}  // namespace

struct GitHubActionsSource::Reading {
  const ListContext& context;
  SourceSnapshot snapshot;
  std::set<std::string> used_urls;
  // Directory listings fetched by this read, by URL; null: no such directory.
  std::map<std::string, const github::DirectoryListing*> listings;
};

Result<std::unique_ptr<GitHubActionsSource>> GitHubActionsSource::Create(
    const SourceOptions& options, GitHubActionsTuning tuning) {
  const SourceSpec& spec = *options.spec;
  const auto* settings = spec.SettingsAs<github_actions::GitHubActionsSettings>();
  if (settings == nullptr) return Error{"the settings are not a github_actions source's"};
  std::unique_ptr<GitHubActionsSource> source(new GitHubActionsSource());
  source->repository_ = settings->repository;
  source->token_source_ = TokenSource(settings->token_file, settings->token_env);
  source->branch_ = settings->branch;
  source->conditional_requests_ = tuning.conditional_requests;
  source->repository_runs_ = tuning.repository_runs;
  source->budget_floor_ = tuning.budget_floor;
  source->budget_share_ = kBudgetShare / std::max<std::uint32_t>(1, options.shard.total);
  source->counts_shared_reads_ = options.shard.CountsSharedReads();
  if (settings->min_interval) source->min_interval_ = settings->min_interval->count();
  source->read_floor_ = source->min_interval_;
  auto request_timeout = settings->timeout.value_or(std::chrono::seconds(10));
  std::string api_url = settings->api_url;
  if (api_url.rfind("http://", 0) == 0 && source->token_source_.configured()) {
    Log(LogLevel::kWarn, "the GitHub token goes over plain HTTP",
        {{"source", spec.name}, {"api_url", api_url}});
  }
  if (!tuning.send) {
    TlsOptions tls;
    tls.ca_file = settings->ca_file;
    tuning.send = platform::TransportOver(std::make_shared<HttpClient>(std::move(tls)));
  }
  source->api_ = std::make_unique<github::Api>(
      std::move(api_url), request_timeout, std::move(tuning.send),
      tuning.clock != nullptr ? *tuning.clock : platform::RealClock());
  for (const JobSpec* job : options.jobs) {
    source->jobs_.push_back(*job);
    source->jobs_.back().MutableExtras().workflow = github::NormalizeWorkflowPath(job->workflow());
  }
  return source;
}

Result<std::unique_ptr<Source>> MakeGitHubActionsSource(const SourceOptions& options) {
  auto source = GitHubActionsSource::Create(options);
  if (!source) return Error{source.error()};
  return std::unique_ptr<Source>(std::move(*source));
}

std::int64_t GitHubActionsSource::ChargedByLastRead() const {
  // 304s are free of the primary limit only for an authenticated request.
  return last_read_stats_.requests - (token_.empty() ? 0 : last_read_stats_.not_modified);
}

double GitHubActionsSource::HourlyShare() const {
  return static_cast<double>(api_->quota_limit().value_or(kDefaultPrimaryLimit)) * budget_share_;
}

void GitHubActionsSource::SpendBudget(std::int64_t now) {
  // A bucket of our share of the hour, refilled evenly: a one-off costly read (the first, which
  // fetches every workflow file) spends what the hour has, instead of setting the pace of all
  // reads after it.
  const double share = HourlyShare();
  if (!budget_at_) budget_left_ = share;
  double refilled = static_cast<double>(now - budget_at_.value_or(now)) * share / 3600;
  budget_left_ = std::min(share, budget_left_ + std::max(0.0, refilled));
  budget_left_ -= static_cast<double>(ChargedByLastRead());
  budget_at_ = now;
}

std::int64_t GitHubActionsSource::ReadFloor() const {
  std::int64_t floor = min_interval_;
  if (!budget_floor_ || last_read_stats_.requests == 0) return floor;
  // Primary: until the bucket holds another read like the last one.
  const double share = HourlyShare();
  double missing = static_cast<double>(ChargedByLastRead()) - std::min(share, budget_left_);
  double primary = missing <= 0 ? 0 : missing * 3600 / share;
  // Secondary: the last read's points spread over minutes at our share of GitHub's rate.
  double secondary = static_cast<double>(last_read_stats_.requests) * 60 /
                     (kSecondaryPointsPerMinute * budget_share_);
  auto derived = static_cast<std::int64_t>(std::ceil(std::max(primary, secondary) - 1e-6));
  return std::max(floor, std::min(derived, kMaxDerivedFloor));
}

std::optional<SourceRequestCounts> GitHubActionsSource::RequestCounts() const {
  SourceRequestCounts counts = api_->Usage();
  counts.read_floor_seconds = read_floor_.load();
  return counts;
}

Result<SourceSnapshot> GitHubActionsSource::List(const ListContext& context) {
  bool within_floor = last_read_at_ && context.now - *last_read_at_ < ReadFloor();
  if (within_floor && !confirm_pending_ && last_outcome_) {
    // The same answer again, but the failures its retries got past happened once: not again.
    Result<SourceSnapshot> again = *last_outcome_;
    if (again) {
      auto& problems = again->problems;
      problems.erase(std::remove_if(problems.begin(), problems.end(),
                                    [](const SourceProblem& problem) { return problem.recovered; }),
                     problems.end());
    }
    return again;
  }
  bool confirming = within_floor && confirm_pending_;
  confirm_pending_ = false;

  github::RequestStats before = api_->stats();
  Result<SourceSnapshot> outcome = Read(context);
  github::RequestStats after = api_->stats();
  last_read_stats_ = {after.requests - before.requests, after.not_modified - before.not_modified};
  SpendBudget(context.now);
  read_floor_ = ReadFloor();
  if (context.cancelled != nullptr && context.cancelled->load()) {
    return outcome;  // not remembered: the next refresh reads again
  }
  last_read_at_ = context.now;
  last_outcome_ = outcome;
  if (outcome && !confirming && SomeRoleAbsent(*outcome)) confirm_pending_ = true;
  return outcome;
}

bool GitHubActionsSource::SomeRoleAbsent(const SourceSnapshot& snapshot) const {
  // The refresher re-reads to confirm an absence (sources/absence.h); that read must not be
  // served from the floor's cache.
  std::vector<std::string> roles;
  roles.reserve(jobs_.size());
  for (const auto& job : jobs_) roles.push_back(job.role);
  return !RolesWithoutObject(roles, snapshot.objects).empty();
}

std::string GitHubActionsSource::RepoUrl() const {
  auto slash = repository_.find('/');
  return fmt::format("{}/repos/{}/{}", api_->base_url(), UrlEncode(repository_.substr(0, slash)),
                     UrlEncode(repository_.substr(slash + 1)));
}

template <typename T, typename Parse>
Result<const GitHubActionsSource::Cached<T>*> GitHubActionsSource::Fetch(
    Reading& reading, Cache<T>& cache, const std::string& url, std::string_view accept, Parse parse,
    bool* not_found) {
  reading.used_urls.insert(url);
  auto cached = cache.find(url);
  std::string etag =
      conditional_requests_ && cached != cache.end() ? cached->second.etag : std::string();
  auto answer = api_->Get(url, etag, accept, reading.context.now, reading.context.cancelled);
  for (const auto& recovered : api_->TakeRecovered()) {
    reading.snapshot.problems.push_back(RecoveredProblem(recovered));
  }
  if (!answer) return Error{answer.error()};
  if (answer->status == 304) {
    if (cached == cache.end()) {
      return Error{
          fmt::format("GET {}: 304 to a request without a validator", UrlPathForMessages(url))};
    }
    return &cached->second;
  }
  if (answer->status == 404) {
    if (not_found != nullptr) {
      *not_found = true;
      return nullptr;
    }
    return Error{fmt::format(
        "GET {}: 404 not found (can this token see {}? private repositories answer 404 without "
        "access)",
        UrlPathForMessages(url), repository_)};
  }
  Result<T> value = parse(answer->body);
  if (!value) return Error{fmt::format("GET {}: {}", UrlPathForMessages(url), value.error())};
  Cached<T>& entry = cache[url];
  entry = {conditional_requests_ ? answer->etag : std::string(), answer->next, std::move(*value)};
  return &entry;
}

Result<std::string> GitHubActionsSource::Branch(Reading& reading) {
  if (!branch_.empty()) return branch_;
  auto repository = Fetch(reading, branches_, RepoUrl(), github::kJsonMediaType,
                          [](std::string_view body) { return github::ParseDefaultBranch(body); });
  if (!repository) return Error{repository.error()};
  return (*repository)->value;
}

Result<std::vector<Workflow>> GitHubActionsSource::Workflows(Reading& reading) {
  std::vector<Workflow> workflows;
  std::string url = fmt::format("{}/actions/workflows?per_page={}", RepoUrl(), kWorkflowsPerPage);
  const std::string first_url = url;
  std::set<std::string> followed;  // a next link back to a page read already is a circle
  std::vector<SourceProblem> item_problems;
  std::size_t listed = 0;
  for (int page = 1; !url.empty(); ++page) {
    if (page > kMaxWorkflowPages) {
      return Error{fmt::format("more than {} pages of workflows", kMaxWorkflowPages)};
    }
    if (!followed.insert(url).second) {
      return Error{
          fmt::format("GET {}: the next link of workflows page {} leads back to an "
                      "earlier page; the list never completes",
                      UrlPathForMessages(url), page - 1)};
    }
    auto fetched = Fetch(reading, workflow_pages_, url, github::kJsonMediaType,
                         [](std::string_view body) { return github::ParseWorkflowPage(body); });
    if (!fetched) return Error{fetched.error()};
    const github::WorkflowPage& parsed = (*fetched)->value;
    workflows.insert(workflows.end(), parsed.workflows.begin(), parsed.workflows.end());
    for (const auto& problem : parsed.problems) {
      item_problems.push_back(
          {problem.reason, fmt::format("workflows page {}: {}", page, problem.message)});
    }
    listed += parsed.listed;
    url = (*fetched)->next;
  }
  auto readable = github::SomethingReadable(listed, item_problems, "workflows");
  if (!readable) return Error{"GET " + UrlPathForMessages(first_url) + ": " + readable.error()};
  // Every shard reads the repository's whole list of workflows.
  if (counts_shared_reads_) {
    reading.snapshot.problems.insert(reading.snapshot.problems.end(), item_problems.begin(),
                                     item_problems.end());
  }
  return workflows;
}

Result<const github::DirectoryListing*> GitHubActionsSource::Listing(Reading& reading,
                                                                     const std::string& directory,
                                                                     const std::string& ref) {
  std::string url = RepoUrl() + "/contents/" + EscapePath(directory) + ref;
  if (auto seen = reading.listings.find(url); seen != reading.listings.end()) return seen->second;
  bool no_directory = false;
  auto listing = Fetch(
      reading, listings_, url, github::kJsonMediaType,
      [](std::string_view body) { return github::ParseDirectoryListing(body); }, &no_directory);
  if (!listing) return Error{listing.error()};
  const github::DirectoryListing* result = no_directory ? nullptr : &(*listing)->value;
  reading.listings[url] = result;
  return result;
}

Result<const GitHubActionsSource::ParsedFile*> GitHubActionsSource::WorkflowFile(
    Reading& reading, const std::string& path, const std::string& branch) {
  std::string ref = "?ref=" + UrlEncode(branch);
  // The directory listing gives every file's blob sha: unchanged files are not fetched again.
  std::string blob_sha;
  bool surely_absent = false;
  std::string directory = Directory(path);
  if (!directory.empty()) {
    auto listing = Listing(reading, directory, ref);
    if (!listing) return Error{listing.error()};
    if (*listing == nullptr) {
      surely_absent = true;  // no such directory on the branch
    } else {
      auto it = (*listing)->blob_sha_by_path.find(path);
      if (it != (*listing)->blob_sha_by_path.end()) blob_sha = it->second;
      surely_absent = it == (*listing)->blob_sha_by_path.end() && (*listing)->complete;
    }
  }
  if (surely_absent) return nullptr;

  std::string url = RepoUrl() + "/contents/" + EscapePath(path) + ref;
  auto cached = files_.find(url);
  if (!blob_sha.empty() && cached != files_.end() && cached->second.value.blob_sha == blob_sha) {
    reading.used_urls.insert(url);
    return &cached->second.value;
  }
  bool not_found = false;
  auto fetched = Fetch(
      reading, files_, url, github::kRawMediaType,
      [](std::string_view body) {
        ParsedFile parsed;
        auto file = github::ParseWorkflowFile(body);
        if (file) {
          parsed.file = std::move(*file);
        } else {
          parsed.error = file.error();
        }
        return Result<ParsedFile>(std::move(parsed));
      },
      &not_found);
  if (!fetched) return Error{fetched.error()};
  if (not_found) return nullptr;
  auto& entry = files_[url];
  entry.value.blob_sha = blob_sha;
  return &entry.value;
}

void GitHubActionsSource::AddRunPage(Reading& reading, const github::RunPage& page,
                                     RunHistory& history) {
  for (const auto& run : page.runs) github::AddRun(history, run);
  for (const auto& problem : page.problems) reading.snapshot.problems.push_back(problem);
}

Result<RunHistory> GitHubActionsSource::LatestSuccess(Reading& reading, const Workflow& workflow) {
  std::string what = fmt::format("runs of {} ({})", workflow.path, workflow.id);
  auto success =
      Fetch(reading, run_pages_,
            fmt::format("{}/actions/workflows/{}/runs?event=schedule&status=success&per_page=1",
                        RepoUrl(), workflow.id),
            github::kJsonMediaType,
            [&what](std::string_view body) { return github::ParseRunPage(body, what); });
  if (!success) return Error{success.error()};
  RunHistory history;
  AddRunPage(reading, (*success)->value, history);
  return history;
}

Result<std::map<std::int64_t, RunHistory>> GitHubActionsSource::RepositoryRuns(
    Reading& reading, const std::vector<const Workflow*>& watched) {
  std::map<std::int64_t, RunHistory> histories;
  std::map<std::int64_t, const Workflow*> without_success;
  for (const Workflow* workflow : watched) {
    histories[workflow->id];
    without_success[workflow->id] = workflow;
  }
  if (watched.empty()) return histories;
  std::set<std::int64_t> seen;  // workflows with a run on the pages read
  auto add = [&](const github::RunPage& page, bool running_only) {
    for (const auto& run : page.runs) {
      auto history = histories.find(run.workflow_id);
      if (history == histories.end()) continue;  // a workflow no job names, or none named
      if (running_only && run.state != github::ScheduledRun::State::kRunning) continue;
      github::AddRun(history->second, run);
      seen.insert(run.workflow_id);
      if (run.state == github::ScheduledRun::State::kSucceeded) {
        without_success.erase(run.workflow_id);
      }
    }
    for (std::size_t i = 0; i < page.problems.size(); ++i) {
      std::int64_t id = page.problem_workflows[i];
      if (id == 0 || histories.count(id)) reading.snapshot.problems.push_back(page.problems[i]);
    }
  };

  const std::string base = RepoUrl() + "/actions/runs?event=schedule";
  std::string url = fmt::format("{}&per_page={}", base, kRepositoryRunsPerPage);
  std::set<std::string> followed;
  std::size_t listed = 0;
  bool complete = false;  // every scheduled run of the repository was on the pages read
  for (int page = 1;; ++page) {
    if (!followed.insert(url).second) {
      return Error{fmt::format(
          "GET {}: the next link of runs page {} leads back to an earlier page; the list never "
          "completes",
          UrlPathForMessages(url), page - 1)};
    }
    std::string what = fmt::format("scheduled runs page {}", page);
    auto fetched =
        Fetch(reading, run_pages_, url, github::kJsonMediaType,
              [&what](std::string_view body) { return github::ParseRunPage(body, what); });
    if (!fetched) return Error{fetched.error()};
    add((*fetched)->value, false);
    listed += (*fetched)->value.listed;
    url = (*fetched)->next;
    if (url.empty()) {
      complete = listed < kMaxFilteredResults;
      break;
    }
    // One workflow left is one request by itself: cheaper than another page.
    if (without_success.size() <= 1 || page >= kMaxRepositoryRunPages) break;
  }
  if (complete) return histories;

  // Runs still going that began before the pages read: a hung run under a newer success.
  auto running =
      Fetch(reading, run_pages_,
            fmt::format("{}&status=in_progress&per_page={}", base, kRepositoryRunsPerPage),
            github::kJsonMediaType, [](std::string_view body) {
              return github::ParseRunPage(body, "scheduled runs in progress");
            });
  if (!running) return Error{running.error()};
  add((*running)->value, true);

  for (const auto& [id, workflow] : without_success) {
    // No run on the pages read: its newest page; a run but no success: its latest success.
    auto history = seen.count(id) ? LatestSuccess(reading, *workflow) : Runs(reading, *workflow);
    if (!history) return Error{history.error()};
    histories[id].Merge(*history);
  }
  return histories;
}

Result<RunHistory> GitHubActionsSource::Runs(Reading& reading, const Workflow& workflow) {
  std::string what = fmt::format("runs of {} ({})", workflow.path, workflow.id);
  auto parse = [&what](std::string_view body) { return github::ParseRunPage(body, what); };
  std::string base =
      fmt::format("{}/actions/workflows/{}/runs?event=schedule", RepoUrl(), workflow.id);
  RunHistory history;
  bool succeeded = false;
  auto add = [&](const github::RunPage& page) {
    for (const auto& run : page.runs) {
      github::AddRun(history, run);
      succeeded |= run.state == github::ScheduledRun::State::kSucceeded;
    }
    for (const auto& problem : page.problems) reading.snapshot.problems.push_back(problem);
  };
  auto newest = Fetch(reading, run_pages_, fmt::format("{}&per_page={}", base, kRunsPerPage),
                      github::kJsonMediaType, parse);
  if (!newest) return Error{newest.error()};
  add((*newest)->value);
  if (!succeeded && !(*newest)->next.empty()) {
    auto success = LatestSuccess(reading, workflow);
    if (!success) return Error{success.error()};
    history.Merge(*success);
  }
  return history;
}

void GitHubActionsSource::ForgetUnused(const std::set<std::string>& used) {
  KeepUsed(branches_, used);
  KeepUsed(workflow_pages_, used);
  KeepUsed(listings_, used);
  KeepUsed(files_, used);
  KeepUsed(run_pages_, used);
}

void GitHubActionsSource::InheritCaches(Source& previous) {
  auto* old = dynamic_cast<GitHubActionsSource*>(&previous);
  if (old == nullptr) return;
  // Cached by URL: after a change of repository or api_url they match nothing and are dropped.
  branches_ = std::move(old->branches_);
  workflow_pages_ = std::move(old->workflow_pages_);
  listings_ = std::move(old->listings_);
  files_ = std::move(old->files_);
  run_pages_ = std::move(old->run_pages_);
  token_ = old->token_;  // what they were obtained with: a new token still forgets them
  api_->SetToken(token_);
  api_->InheritUsage(*old->api_);
  budget_left_ = old->budget_left_;  // the token's hour goes on across a reload
  budget_at_ = old->budget_at_;
}

Result<bool> GitHubActionsSource::UseToken() {
  auto token = token_source_.Load();
  if (!token) return Error{token.error()};
  if (*token != token_) {
    // Answers obtained with another token are not reused.
    ForgetUnused({});
    token_ = *token;
    api_->SetToken(*token);
  }
  return true;
}

Result<SourceSnapshot> GitHubActionsSource::Read(const ListContext& context) {
  auto token = UseToken();
  if (!token) return Error{token.error()};

  Reading reading{context, {}, {}, {}};
  auto branch = Branch(reading);
  if (!branch) return Error{branch.error()};
  auto workflows = Workflows(reading);
  if (!workflows) return Error{workflows.error()};

  // Only the workflows the jobs name are read further; deleted ones do not count as present.
  std::map<std::string, std::vector<const Workflow*>> by_path;
  for (const auto& workflow : *workflows) {
    if (workflow.state != "deleted") by_path[workflow.path].push_back(&workflow);
  }
  std::map<std::string, const github::WorkflowFile*> files;  // null: absent or unreadable
  std::map<std::int64_t, RunHistory> runs;
  if (repository_runs_) {
    std::vector<const Workflow*> watched;
    std::set<std::int64_t> ids;
    for (const auto& job : jobs_) {
      auto matching = by_path.find(job.workflow());
      if (matching == by_path.end()) continue;
      for (const Workflow* workflow : matching->second) {
        if (ids.insert(workflow->id).second) watched.push_back(workflow);
      }
    }
    auto histories = RepositoryRuns(reading, watched);
    if (histories) {
      runs = std::move(*histories);
    } else {
      reading.snapshot.history_error = histories.error();
    }
  }
  SourceSnapshot& snapshot = reading.snapshot;
  for (const auto& job : jobs_) {
    auto matching = by_path.find(job.workflow());
    if (matching == by_path.end()) continue;
    if (!files.count(job.workflow())) {
      auto file = WorkflowFile(reading, job.workflow(), *branch);
      if (!file) return Error{file.error()};
      auto problem = [&](Reason reason, const std::string& message) {
        snapshot.problems.push_back(MakeProblem(reason, job.workflow() + ": " + message));
      };
      if (*file == nullptr) {
        problem(Reason::kFileNotFound, fmt::format("not found on branch {}", *branch));
      } else if (!(*file)->file) {
        problem(Reason::kMalformedObject, "not YAML: " + (*file)->error);
      } else {
        for (const auto& message : (*file)->file->problems)
          problem(Reason::kMalformedObject, message);
      }
      files[job.workflow()] = *file != nullptr && (*file)->file ? &*(*file)->file : nullptr;
    }
    // GitHub's own guard against overlapping runs is the workflow's `concurrency:` group.
    if (job.require_concurrency() && files[job.workflow()] != nullptr &&
        !files[job.workflow()]->has_concurrency) {
      snapshot.problems.push_back(MakeProblem(
          Reason::kWorkflowWithoutConcurrency,
          fmt::format("{}: no workflow-level concurrency: group, so two runs of role {} may "
                      "overlap (add e.g. `concurrency: {{group: {}}}`)",
                      job.workflow(), job.role, job.role)));
    }
    for (const Workflow* workflow : matching->second) {
      // After one runs read failed, none is asked for: the list goes on without its history.
      if (!runs.count(workflow->id) && snapshot.history_error.empty()) {
        auto history = Runs(reading, *workflow);
        if (history) {
          runs[workflow->id] = *history;
        } else {
          snapshot.history_error = history.error();
        }
      }
      snapshot.objects.push_back(github::MakeLiveObject(*workflow, files[job.workflow()], job));
      snapshot.history[job.role].Merge(runs[workflow->id]);
    }
  }
  if (!snapshot.history_error.empty()) snapshot.history.clear();
  ForgetUnused(reading.used_urls);
  reading.snapshot.problems = CapProblems(std::move(reading.snapshot.problems));
  return std::move(reading.snapshot);
}

Result<std::vector<FoundWorkflow>> GitHubActionsSource::ListEverything(const ListContext& context) {
  auto token = UseToken();
  if (!token) return Error{token.error()};
  Reading reading{context, {}, {}, {}};
  auto branch = Branch(reading);
  if (!branch) return Error{branch.error()};
  auto workflows = Workflows(reading);
  if (!workflows) return Error{workflows.error()};
  std::vector<FoundWorkflow> found;
  for (const auto& workflow : *workflows) {
    if (workflow.state == "deleted") continue;
    FoundWorkflow item;
    item.workflow = workflow;
    auto file = WorkflowFile(reading, workflow.path, *branch);
    if (!file) return Error{file.error()};
    if (*file == nullptr) {
      item.file_problem = fmt::format("not found on branch {}", *branch);
    } else if (!(*file)->file) {
      item.file_problem = "not YAML: " + (*file)->error;
    } else {
      item.file = (*file)->file;
    }
    if (item.file && !item.file->schedules.empty()) {
      auto runs = Runs(reading, workflow);
      if (!runs) return Error{runs.error()};
      item.runs = std::move(*runs);
    }
    found.push_back(std::move(item));
  }
  std::sort(found.begin(), found.end(), [](const FoundWorkflow& a, const FoundWorkflow& b) {
    return a.workflow.path != b.workflow.path ? a.workflow.path < b.workflow.path
                                              : a.workflow.id < b.workflow.id;
  });
  return found;
}

}  // namespace schedwatch
