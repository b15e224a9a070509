// Peak memory of one read of the gitlab source given a hostile schedules page: 16 MiB of
// `[<one valid schedule>, 0, 0, ...]` (8 M unreadable items), or the same schedule followed by
// 8 M nested arrays. Served by an in-process transport (no HTTP); prints the read's outcome, its
// problems and the process's peak resident memory (VmHWM).
//
//   gitlab_page_bench zeros|nested
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "sources/catalog.h"
#include "sources/gitlab/gitlab_source.h"

namespace {

std::string PeakMemory() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return line.substr(6);
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace schedwatch;
  std::string kind = argc > 1 ? argv[1] : "zeros";
  const std::size_t size = 16u << 20;
  std::string page =
      R"([{"id":13,"description":"Nightly [schedwatch: role=nightly spec_version=7]",)"
      R"("ref":"main","cron":"0 3 * * *","cron_timezone":"UTC","active":true})";
  if (kind == "nested") {
    page += ",";
    std::size_t depth = (size - page.size() - 1) / 2;
    page.append(depth, '[');
    page.append(depth, ']');
  } else {
    while (page.size() + 2 < size) page += ",0";
  }
  page += "]";
  char dir[] = "/tmp/gitlab_page_bench.XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  std::string token = std::string(dir) + "/token";
  std::ofstream(token) << "glpat-benchTOKEN0123456789\n";
  auto spec = ParseSpec(fmt::format(R"(version: 1
sources: {{ci: {{type: gitlab, project: acme/widgets, api_url: "https://gitlab.test/api/v4",
          token_file: {}, ref: main}}}}
jobs:
  - {{role: nightly, source: ci, schedule: "0 3 * * *", spec_version: "7"}}
)",
                                    token),
                        std::string(dir) + "/spec.yaml", BuiltInCatalog());
  if (!spec) {
    fmt::print(stderr, "{}\n", spec.error());
    return 1;
  }
  SourceOptions options;
  options.spec = &spec->sources.at("ci");
  for (const auto& job : spec->jobs) options.jobs.push_back(&job);
  platform::HttpTransport send = [&page](const HttpRequest& request, const std::atomic<bool>*,
                                         HttpFailure*) -> Result<HttpResponse> {
    HttpResponse response;
    response.status = 200;
    response.body = request.url.find("/pipelines") != std::string::npos ? "[]" : page;
    return response;
  };
  auto source = GitLabSource::Create(options, {send, nullptr});
  if (!source) return 1;
  std::atomic<bool> cancelled{false};
  fmt::print("{}: a {} MiB page; before the read VmHWM {}\n", kind, page.size() >> 20,
             PeakMemory());
  auto snapshot = (*source)->List(ListContext{1796040000, &cancelled});
  if (snapshot) {
    fmt::print("read: {} objects, {} problems listed\n", snapshot->objects.size(),
               snapshot->problems.size());
    if (!snapshot->problems.empty()) {
      fmt::print("first: {}: {}\n", snapshot->problems[0].reason,
                 snapshot->problems[0].message.substr(0, 160));
    }
  } else {
    fmt::print("read failed: {}\n", snapshot.error().substr(0, 200));
  }
  fmt::print("peak VmHWM {}\n", PeakMemory());
  std::remove(token.c_str());
  rmdir(dir);
  return 0;
}
