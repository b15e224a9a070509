// The `github_actions` source: a repository's scheduled workflows, their state, and their
// scheduled runs, read through the GitHub REST API.
//
//   sources:
//     ci:
//       type: github_actions
//       repository: acme/widgets        # owner/name
//       token_file: /etc/schedwatch/github-token   # or token_env: GITHUB_TOKEN; neither: anonymous
//       api_url: https://api.github.com # GitHub Enterprise Server: https://HOST/api/v3
//       branch: main                    # default: the repository's default branch
//       min_interval: 60s               # floor between real reads; closer refreshes reuse the last
//       ca_file: /etc/ssl/my-ca.pem     # CAs trusted instead of the system's (private GHES)
//   jobs:
//     - {role: nightly, source: ci, workflow: .github/workflows/nightly.yml, schedule: "0 3 * * *"}
//
// Per real read: the default branch (GET /repos/{o}/{r}, unless `branch` is set), every page of
// workflows, one listing of .github/workflows (blob shas, so unchanged files are not fetched
// again), each changed workflow file (raw), and the repository's scheduled runs, newest first,
// 100 a page, until every workflow a job names has shown a success (at most the 1,000 runs
// GitHub lists for a filtered query). Runs are attributed by workflow_id. Only a workflow that
// showed no success there is asked for by itself: its newest page of runs if it showed no run at
// all, then one `status=success` query. Every GET is conditional (If-None-Match): 304 answers
// reuse what was parsed before and cost no primary quota.
//
// Real reads are at least `min_interval` apart, and further when the last read's cost asks for
// it: at most half of the primary limit (x-ratelimit-limit an hour, 5,000 when unsaid; 304s are
// free with a token) and half of the secondary one (900 points a minute, one per GET); a shard of
// N, 1/N of those halves.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sources/github_actions/github_actions_descriptor.h"
#include "sources/github_actions/github_api.h"
#include "sources/github_actions/github_mapping.h"
#include "sources/source.h"
#include "sources/token.h"

namespace schedwatch {

// Knobs that are not spec keys: the transport and conditional requests (tests, the bench).
struct GitHubActionsTuning {
  github::HttpSend send;  // empty: libcurl through HttpClient
  bool conditional_requests = true;
  platform::Clock* clock = nullptr;  // of the retry backoffs; null: the real one
  // false: the runs of each workflow asked for by itself, one request or two per workflow (the
  // bench compares).
  bool repository_runs = true;
  bool budget_floor = true;  // false: min_interval alone spaces the reads
};

// Every workflow of the repository with what its file and its runs say, for discover.
struct FoundWorkflow {
  github::Workflow workflow;
  std::optional<github::WorkflowFile> file;  // nullopt: not on the branch, or not YAML
  std::string file_problem;                  // then why
  RunHistory runs;
};

class GitHubActionsSource : public Source {
 public:
  // Every workflow that is not deleted, in path order, each file read and its runs asked for
  // (List reads only those the jobs name). An Error: the repository could not be read.
  Result<std::vector<FoundWorkflow>> ListEverything(const ListContext& context);

  static Result<std::unique_ptr<GitHubActionsSource>> Create(const SourceOptions& options,
                                                             GitHubActionsTuning tuning = {});

  // Within `min_interval` of the last real read this returns that read's outcome again, except
  // for one confirming re-read when the last read found a desired role without a workflow.
  Result<SourceSnapshot> List(const ListContext& context) override;

  // The cached answers and their ETags, so that a reload costs 304s, not quota. The refresh
  // floor starts afresh: the jobs may have changed.
  void InheritCaches(Source& previous) override;

  // Requests of the last List that reached the API.
  github::RequestStats last_read_stats() const { return last_read_stats_; }

  // The interval between real reads in force: min_interval, or longer when GitHub's limits ask
  // for it: until our share of the hour's quota (refilled evenly) holds another read as costly
  // as the last, and the last read's points spread at our share of the per-minute rate.
  std::int64_t ReadFloor() const;

  std::optional<SourceRequestCounts> RequestCounts() const override;

 private:
  template <typename T>
  struct Cached {
    std::string etag;
    std::string next;
    T value;
  };
  template <typename T>
  using Cache = std::map<std::string, Cached<T>>;

  struct ParsedFile {
    std::optional<github::WorkflowFile> file;
    std::string error;     // why the YAML could not be read
    std::string blob_sha;  // from the directory listing, when known
  };

  struct Reading;  // one real read in progress

  GitHubActionsSource() = default;
  // Loads the token and gives it to the API client; answers cached with another are dropped.
  Result<bool> UseToken();
  Result<SourceSnapshot> Read(const ListContext& context);
  Result<std::string> Branch(Reading& reading);
  Result<std::vector<github::Workflow>> Workflows(Reading& reading);
  Result<const github::DirectoryListing*> Listing(Reading& reading, const std::string& directory,
                                                  const std::string& ref);
  Result<const ParsedFile*> WorkflowFile(Reading& reading, const std::string& path,
                                         const std::string& branch);
  Result<RunHistory> Runs(Reading& reading, const github::Workflow& workflow);
  Result<RunHistory> LatestSuccess(Reading& reading, const github::Workflow& workflow);
  Result<std::map<std::int64_t, RunHistory>> RepositoryRuns(
      Reading& reading, const std::vector<const github::Workflow*>& watched);
  void AddRunPage(Reading& reading, const github::RunPage& page, RunHistory& history);
  template <typename T, typename Parse>
  Result<const Cached<T>*> Fetch(Reading& reading, Cache<T>& cache, const std::string& url,
                                 std::string_view accept, Parse parse, bool* not_found = nullptr);
  void ForgetUnused(const std::set<std::string>& used);
  bool SomeRoleAbsent(const SourceSnapshot& snapshot) const;
  std::int64_t ChargedByLastRead() const;
  double HourlyShare() const;
  void SpendBudget(std::int64_t now);
  std::string RepoUrl() const;

  // Settings.
  std::string repository_;  // owner/name
  TokenSource token_source_{"", ""};
  std::string branch_;
  std::int64_t min_interval_ = 60;
  bool conditional_requests_ = true;
  bool repository_runs_ = true;
  bool budget_floor_ = true;
  double budget_share_ = 0;          // of GitHub's limits, this source's
  bool counts_shared_reads_ = true;  // ShardAssignment::CountsSharedReads
  std::vector<JobSpec> jobs_;        // copies: a slow read may outlive a reloaded spec
  std::unique_ptr<github::Api> api_;

  std::string token_;  // the token the cached answers were obtained with

  // Answers by URL, for conditional requests.
  Cache<std::string> branches_;
  Cache<github::WorkflowPage> workflow_pages_;
  Cache<github::DirectoryListing> listings_;
  Cache<ParsedFile> files_;
  Cache<github::RunPage> run_pages_;

  // The refresh floor.
  std::optional<std::int64_t> last_read_at_;
  std::optional<Result<SourceSnapshot>> last_outcome_;
  bool confirm_pending_ = false;
  github::RequestStats last_read_stats_;
  // What is left of our share of the primary limit, as of budget_at_ (unset before a read).
  double budget_left_ = 0;
  std::optional<std::int64_t> budget_at_;
  std::atomic<std::int64_t> read_floor_{0};  // ReadFloor() after the last read, for the metrics
};

Result<std::unique_ptr<Source>> MakeGitHubActionsSource(const SourceOptions& options);

}  // namespace schedwatch
