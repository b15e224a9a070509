// The `gitlab` source type as the spec sees it: a project's pipeline schedules, its settings and
// its jobs' `ref`, decoded without I/O.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "schedwatch/source_type.h"

namespace schedwatch::gitlab {

struct GitLabSettings : SourceSettings {
  std::string project;     // a numeric ID or a group/name path (URL-encoded in requests)
  std::string token_file;  // at most one of token_file and token_env; neither: anonymous
  std::string token_env;
  std::string api_url = "https://gitlab.com/api/v4";  // http:// or https://, no trailing '/'
  std::string ca_file;                                // CAs trusted instead of the system's
  std::string ref;  // the branch or tag its jobs' schedules run on, unless a job says
  // How often the instance's pipeline_schedule_worker_cron runs: a schedule starts up to this
  // late. GitLab's default (and GitLab.com's) is every 10 minutes (`3-59/10 * * * *`).
  std::chrono::seconds worker_interval{600};
};

struct GitLabJobSettings : JobSettings {
  std::string ref;  // empty: the source's `ref`, else not compared
};

// A job's ref: its own, else its source's; empty when neither says.
std::string DesiredRef(const JobSpec& job, const GitLabSettings& settings);

const SourceDescriptor& Descriptor();

}  // namespace schedwatch::gitlab
