#include "sources/github_actions/github_actions_discoverer.h"
#include "sources/github_actions/github_actions_source.h"
#include "sources/module.h"

namespace schedwatch::github_actions {

SourceModule Module() {
  return {MakeGitHubActionsSource, nullptr, "a workflow is a commit to the repository",
          [](const SourceOptions& options) { return MakeGitHubActionsDiscoverer(options); }};
}

}  // namespace schedwatch::github_actions
