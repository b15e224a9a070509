#include <fmt/format.h>

#include "sources/crontab/crontab_source.h"
#include "sources/file/file_source.h"
#include "sources/github_actions/github_actions_source.h"
#include "sources/kubernetes/kubernetes_source.h"
#include "sources/source.h"

namespace schedwatch {

const std::map<std::string, SourceFactory>& SourceFactories() {
  static const auto* factories = new std::map<std::string, SourceFactory>{
      {"crontab", crontab::MakeCrontabSource},
      {"file", MakeFileSource},
      {"kubernetes", MakeKubernetesSource},
      {"github_actions", MakeGitHubActionsSource},
  };
  return *factories;
}

Result<std::unique_ptr<Source>> MakeSource(const SourceOptions& options) {
  auto it = SourceFactories().find(options.spec->type);
  if (it == SourceFactories().end()) {
    return Error{
        fmt::format("source type \"{}\" is not built into this exporter", options.spec->type)};
  }
  return it->second(options);
}

}  // namespace schedwatch
