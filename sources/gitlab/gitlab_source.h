// The `gitlab` source: a project's pipeline schedules, the marker in their descriptions, and the
// pipelines each started, read through the GitLab REST API v4.
//
//   sources:
//     ci:
//       type: gitlab
//       project: acme/widgets           # a project ID or its full path
//       token_file: /etc/schedwatch/gitlab-token   # or token_env: GITLAB_TOKEN; read_api scope
//       api_url: https://gitlab.com/api/v4        # self-managed: https://HOST/api/v4
//       ref: main                       # the ref its jobs' schedules run on (a job may say)
//       worker_interval: 10m            # the instance's pipeline_schedule_worker_cron interval
//   jobs:
//     - {role: nightly, source: ci, schedule: "0 3 * * *", timezone: Europe/Berlin}
//
// Per read: every page of GET /projects/:id/pipeline_schedules (100 a page, `Link` or
// `x-next-page`), then for each schedule whose description holds the marker of a job's role
// (`[schedwatch: role=nightly spec_version=3]`) its newest pipelines,
// GET .../pipeline_schedules/:id/pipelines?sort=desc (20).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sources/gitlab/gitlab_api.h"
#include "sources/gitlab/gitlab_descriptor.h"
#include "sources/gitlab/gitlab_mapping.h"
#include "sources/source.h"
#include "sources/token.h"

namespace schedwatch {

// Knobs that are not spec keys (tests).
struct GitLabTuning {
  platform::HttpTransport send;      // empty: libcurl through HttpClient
  platform::Clock* clock = nullptr;  // of the retry backoffs; null: the real one
};

class GitLabSource : public Source {
 public:
  static Result<std::unique_ptr<GitLabSource>> Create(const SourceOptions& options,
                                                      GitLabTuning tuning = {});

  Result<SourceSnapshot> List(const ListContext& context) override;
  void InheritCaches(Source& previous) override;
  std::optional<SourceRequestCounts> RequestCounts() const override { return api_->Usage(); }

  // Every page of the project's schedules (for the repairer's re-read too).
  Result<std::vector<gitlab::PipelineSchedule>> Schedules(const ListContext& context,
                                                          std::vector<SourceProblem>& problems);
  // "https://.../api/v4/projects/acme%2Fwidgets".
  std::string ProjectUrl() const;
  gitlab::Api& api() { return *api_; }
  // Loads the token (a rotated file is re-read) and hands it to the API client.
  Result<bool> PrepareToken();
  // The schedule's newest pipelines (for discover too).
  Result<RunHistory> History(const ListContext& context, const gitlab::PipelineSchedule& schedule,
                             std::vector<SourceProblem>& problems);

 private:
  GitLabSource() = default;

  std::string project_;
  TokenSource token_source_{"", ""};
  std::vector<JobSpec> jobs_;              // copies: a slow read may outlive a reloaded spec
  std::vector<std::string> desired_refs_;  // by job
  std::unique_ptr<gitlab::Api> api_;
  std::string token_;
  // Inactive schedules reported before: their problem stays listed but is counted once.
  std::set<std::int64_t> reported_inactive_;
  bool counts_shared_reads_ = true;  // ShardAssignment::CountsSharedReads
};

Result<std::unique_ptr<Source>> MakeGitLabSource(const SourceOptions& options);

}  // namespace schedwatch
