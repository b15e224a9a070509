// `discover` for GitHub Actions: every scheduled workflow of the repository, one object per
// `on.schedule` cron entry, and the marker comment for files that have none.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sources/discoverer.h"
#include "sources/github_actions/github_actions_source.h"

namespace schedwatch {

class GitHubActionsDiscoverer : public Discoverer {
 public:
  GitHubActionsDiscoverer(std::unique_ptr<GitHubActionsSource> source, std::vector<JobSpec> jobs);
  Result<Discovery> Discover(const ListContext& context) override;
  // The comment line for the workflow file (a commit: discover never writes to a repository).
  std::string MarkerInstructions(const FoundObject& object, const std::string& role,
                                 const std::string& spec_version) const override;

 private:
  std::unique_ptr<GitHubActionsSource> source_;
  std::vector<JobSpec> jobs_;  // the spec's jobs of this source: a workflow path names a role
};

Result<std::unique_ptr<Discoverer>> MakeGitHubActionsDiscoverer(const SourceOptions& options,
                                                                GitHubActionsTuning tuning = {});

}  // namespace schedwatch
