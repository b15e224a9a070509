#include "sources/gitlab/gitlab_discoverer.h"
#include "sources/gitlab/gitlab_repairer.h"
#include "sources/gitlab/gitlab_source.h"
#include "sources/module.h"

namespace schedwatch::gitlab {

SourceModule Module() {
  return {MakeGitLabSource, MakeGitLabRepairer, "",
          [](const SourceOptions& options) { return MakeGitLabDiscoverer(options); }};
}

}  // namespace schedwatch::gitlab
