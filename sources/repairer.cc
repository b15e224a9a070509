#include "sources/repairer.h"

#include <fmt/format.h>

namespace schedwatch {

Result<std::unique_ptr<Repairer>> MakeRepairer(const SourceSpec& source) {
  if (source.type == "crontab") return MakeCrontabRepairer(source);
  if (source.type == "kubernetes") return MakeKubernetesRepairer(source);
  if (source.type == "github_actions") {
    return Error{"not repairable: a workflow is a commit to the repository"};
  }
  return Error{fmt::format("not repairable: reconcile cannot create {} objects", source.type)};
}

}  // namespace schedwatch
