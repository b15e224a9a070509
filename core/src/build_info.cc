#include "schedwatch/build_info.h"

#include <fmt/format.h>

namespace schedwatch {

std::string VersionText(const std::string& program) {
  const BuildInfo& build = GetBuildInfo();
  return fmt::format("{}, version {} (branch: {}, revision: {})\n  compiler: {}\n  platform: {}",
                     program, build.version, build.branch, build.revision, build.compiler,
                     build.platform);
}

}  // namespace schedwatch
