// The `discover` command line: the spec to add to, or one source from flags (a draft); the
// spec to standard output or --output, the report to standard error. discover.h does the work.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "schedwatch/spec.h"

namespace schedwatch {

struct DiscoverFlags {
  std::string type;                  // --type: one source from the flags below, a draft
  std::vector<std::string> sources;  // --source
  std::map<std::string, std::vector<std::string>> settings;  // by key, from --<key>
  bool write_markers = false;
  std::string output;
  std::size_t max_spec_bytes = kDefaultMaxSpecBytes;  // --config.max-size
};

// Exit code: 0 fine, 1 a source or a marker failed, 2 bad arguments or spec.
int RunDiscoverCommand(const std::string& config_file, const DiscoverFlags& flags);

}  // namespace schedwatch
