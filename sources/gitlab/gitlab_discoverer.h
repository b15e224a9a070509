// `discover` for GitLab: every pipeline schedule of the project, marked or not: its cron and
// cron_timezone, its ref, inactive schedules as comments, max_runtime from its pipelines, and for
// each unmarked schedule the description to set (and the API call that sets it), never set by
// discover.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "sources/discoverer.h"
#include "sources/gitlab/gitlab_source.h"

namespace schedwatch {

class GitLabDiscoverer : public Discoverer {
 public:
  explicit GitLabDiscoverer(std::unique_ptr<GitLabSource> source);
  Result<Discovery> Discover(const ListContext& context) override;
  // The schedule's description with the marker, as the gitlab source reads it.
  std::string MarkerInstructions(const FoundObject& object, const std::string& role,
                                 const std::string& spec_version) const override;

 private:
  std::unique_ptr<GitLabSource> source_;
  std::map<std::string, std::int64_t> schedule_ids_;  // object id -> schedule id, as last read
  std::map<std::string, std::string> texts_;  // object id -> its description without the marker
};

Result<std::unique_ptr<Discoverer>> MakeGitLabDiscoverer(const SourceOptions& options,
                                                         GitLabTuning tuning = {});

}  // namespace schedwatch
