#include "sources/github_actions/github_actions_source.h"
#include "sources/module.h"

namespace schedwatch::github_actions {

SourceModule Module() {
  return {MakeGitHubActionsSource, nullptr, "a workflow is a commit to the repository"};
}

}  // namespace schedwatch::github_actions
