// The `github_actions` source type as the spec sees it: its settings and its jobs' keys
// (`workflow`, `require_concurrency`), decoded without I/O.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "schedwatch/source_type.h"

namespace schedwatch::github_actions {

struct GitHubActionsSettings : SourceSettings {
  std::string repository;  // owner/name
  std::string token_file;  // at most one of token_file and token_env; neither: anonymous
  std::string token_env;
  std::string api_url = "https://api.github.com";    // http:// or https://, no trailing '/'
  std::string branch;                                // empty: the repository's default branch
  std::optional<std::chrono::seconds> min_interval;  // floor between real reads; unset: 60s
  std::string ca_file;                               // CAs trusted instead of the system's
};

const SourceDescriptor& Descriptor();

}  // namespace schedwatch::github_actions
