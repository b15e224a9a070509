// What this binary was built from, stamped when it is built (not when CMake configures).
#pragma once

#include <string>

namespace schedwatch {

struct BuildInfo {
  const char* version;   // the project version, from the root CMakeLists.txt
  const char* revision;  // short commit, "-dirty" with uncommitted changes, or "unknown"
  const char* branch;
  const char* compiler;  // e.g. "GNU 12.2.0"
  const char* platform;  // e.g. "linux/x86_64"
};

const BuildInfo& GetBuildInfo();

// What --version prints, in the layout of the Prometheus projects:
//   schedwatch_exporter, version 0.1.0 (branch: main, revision: 1935f8b)
//     compiler: GNU 12.2.0
//     platform: linux/x86_64
std::string VersionText(const std::string& program);

}  // namespace schedwatch
