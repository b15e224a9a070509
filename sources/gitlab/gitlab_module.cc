#include "sources/gitlab/gitlab_repairer.h"
#include "sources/gitlab/gitlab_source.h"
#include "sources/module.h"

namespace schedwatch::gitlab {

SourceModule Module() { return {MakeGitLabSource, MakeGitLabRepairer, ""}; }

}  // namespace schedwatch::gitlab
