// The setting keys each source type accepts. Adding a scheduler source adds one entry here.
#include "spec_sources.h"

namespace schedwatch {

const std::map<std::string, std::vector<SourceKey>, std::less<>>& SourceKeyTable() {
  static const auto* table = new std::map<std::string, std::vector<SourceKey>, std::less<>>{
      {"crontab",
       {{"paths", SourceKey::kPathList, false},
        {"syslog", SourceKey::kPath, false},
        {"history", SourceKey::kString, false},  // syslog | journal
        {"journal_directory", SourceKey::kPath, false},
        {"root", SourceKey::kPath, false},      // prefix for every path (tests, chroots)
        {"runs_dir", SourceKey::kPath, false},  // schedwatch_run's records, <runs_dir>/<role>
        {"timeout", SourceKey::kDuration, false}}},
      {"kubernetes",
       {{"kubeconfig", SourceKey::kPath, false},
        {"context", SourceKey::kString, false},
        {"in_cluster", SourceKey::kBool, false},
        {"namespaces", SourceKey::kList, false},
        {"page_size", SourceKey::kString, false},
        {"runs_dir", SourceKey::kPath, false},  // schedwatch_run's records, <runs_dir>/<role>
        {"timeout", SourceKey::kDuration, false}}},
      {"github_actions",
       {{"repository", SourceKey::kString, true},
        {"token_file", SourceKey::kPath, false},
        {"token_env", SourceKey::kString, false},
        {"api_url", SourceKey::kString, false},
        {"branch", SourceKey::kString, false},
        {"min_interval", SourceKey::kDuration, false},
        {"ca_file", SourceKey::kPath, false},  // CAs trusted instead of the system's
        {"timeout", SourceKey::kDuration, false}}},
      {"file",
       {{"path", SourceKey::kPath, true},       // a live-state snapshot, YAML or JSON
        {"runs_dir", SourceKey::kPath, false},  // schedwatch_run's records, <runs_dir>/<role>
        {"timeout", SourceKey::kDuration, false}}},
  };
  return *table;
}

}  // namespace schedwatch
