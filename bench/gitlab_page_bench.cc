// Peak memory of one read of the gitlab source given a hostile schedules page: 16 MiB of
// `[<one valid schedule>, 0, 0, ...]` (8 M unreadable items), or the same schedule followed by
// 8 M nested arrays. Served by an in-process transport (no HTTP); prints the read's outcome, its
// problems and the process's peak resident memory (VmHWM).
//
//   gitlab_page_bench zeros|nested
//
// What each of N shards pays against one exporter of every schedule: a project of `schedules`
// marked pipeline schedules (1,000), 20 pipelines each, answers shaped as GitLab's; requests and
// answer bytes of a read (each refresh reads) and an hour of refreshes every 30 s, and peak
// memory, each reader a process of its own:
//
//   gitlab_page_bench shards [schedules [shards]]
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench/shard_readers.h"
#include "schedwatch/shard.h"
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

// A pipeline schedule or a pipeline as GitLab's API writes them.
std::string ScheduleJson(int id) {
  return fmt::format(
      R"({{"id":{0},"description":"Job {0} [schedwatch: role=job-{0:04d} spec_version=1]",)"
      R"("ref":"main","cron":"0 3 * * *","cron_timezone":"UTC",)"
      R"("next_run_at":"2026-12-01T03:00:00.000Z","active":true,)"
      R"("created_at":"2026-01-19T13:31:08.849Z","updated_at":"2026-11-19T13:31:08.849Z",)"
      R"("owner":{{"name":"Ops Admin","username":"ops-admin","id":1,"state":"active",)"
      R"("avatar_url":"https://gitlab.example.com/uploads/-/system/user/avatar/1/avatar.png",)"
      R"("web_url":"https://gitlab.example.com/ops-admin"}}}})",
      id);
}

std::string PipelinesJson(int schedule) {
  std::string page = "[";
  for (int i = 0; i < 20; ++i) {
    int id = schedule * 100 + 20 - i;
    page += fmt::format(
        R"({}{{"id":{},"iid":{},"project_id":278964,)"
        R"("sha":"a91957a858320c0e17f3a0eca7cfacbff50ea29a","ref":"main","status":"success",)"
        R"("source":"schedule","created_at":"2026-11-{:02d}T03:00:41.000Z",)"
        R"("updated_at":"2026-11-{:02d}T03:12:00.000Z",)"
        R"("web_url":"https://gitlab.example.com/acme/widgets/-/pipelines/{}"}})",
        i ? "," : "", id, id, 30 - i, 30 - i, id);
  }
  return page + "]";
}

int Shards(int argc, char** argv) {
  using namespace schedwatch;
  const int schedules = argc > 2 ? std::atoi(argv[2]) : 1000;
  const auto shards = static_cast<std::uint32_t>(argc > 3 ? std::atoi(argv[3]) : 10);
  constexpr int kPerPage = 100;
  constexpr double kReadsAnHour = 3600.0 / 30;  // every refresh reads
  std::vector<std::string> pages;
  for (int first = 0; first < schedules; first += kPerPage) {
    std::string page = "[";
    for (int id = first + 1; id <= std::min(schedules, first + kPerPage); ++id) {
      page += (id > first + 1 ? "," : "") + ScheduleJson(id);
    }
    pages.push_back(page + "]");
  }
  std::string text = R"(version: 1
sources: {ci: {type: gitlab, project: acme/widgets, api_url: "https://gitlab.test/api/v4"}}
jobs:
)";
  for (int id = 1; id <= schedules; ++id) {
    text += fmt::format(
        "  - {{role: job-{:04d}, source: ci, schedule: \"0 3 * * *\", spec_version: \"1\"}}\n", id);
  }
  auto spec = ParseSpec(text, "/tmp/gitlab-bench-spec.yaml", BuiltInCatalog());
  if (!spec) {
    fmt::print(stderr, "{}\n", spec.error());
    return 1;
  }
  fmt::print(
      "{} pipeline schedules ({} pages), 20 pipelines each, over {} shards; a read at every "
      "30 s refresh; each reader a process of its own\n",
      schedules, pages.size(), shards);
  fmt::print("{:<8} {:>5} {:>8} {:>9} {:>9} {:>8} {:>10} {:>8} {:>8}\n", "reader", "roles",
             "requests", "pipelines", "foreign", "read MB", "requests/h", "MB/h", "VmHWM");
  auto read = [&](ShardAssignment shard) {
    return bench::FinishReader(bench::StartReader([&] {
      Spec own = shard.Sharded() ? SpecOfShard(*spec, shard) : *spec;
      SourceOptions options;
      options.spec = &own.sources.at("ci");
      for (const auto& job : own.jobs) options.jobs.push_back(&job);
      options.shard = shard;
      long requests = 0, pipelines = 0, foreign = 0, bytes = 0;
      platform::HttpTransport send = [&](const HttpRequest& request, const std::atomic<bool>*,
                                         HttpFailure*) -> Result<HttpResponse> {
        ++requests;
        HttpResponse response;
        response.status = 200;
        const std::string& url = request.url;
        std::size_t schedule = url.find("/pipeline_schedules/");
        if (schedule != std::string::npos) {
          int id =
              std::atoi(url.c_str() + schedule + std::string_view("/pipeline_schedules/").size());
          ++pipelines;
          foreign += !shard.Owns(fmt::format("job-{:04d}", id));
          response.body = PipelinesJson(id);
        } else {
          std::size_t page =
              static_cast<std::size_t>(std::atoi(url.c_str() + url.rfind("page=") + 5));
          response.body = page >= 1 && page <= pages.size() ? pages[page - 1] : "[]";
          if (page < pages.size()) response.headers["x-next-page"] = std::to_string(page + 1);
        }
        bytes += static_cast<long>(response.body.size());
        return response;
      };
      auto source = GitLabSource::Create(options, {send, nullptr});
      if (!source) return source.error() + "\n";
      std::atomic<bool> cancelled{false};
      auto snapshot = (*source)->List(ListContext{1796040000, &cancelled});
      if (!snapshot) return "read failed: " + snapshot.error() + "\n";
      return fmt::format("{:<8} {:>5} {:>8} {:>9} {:>9} {:>8.2f} {:>10.0f} {:>8.1f} {:>8.1f}\n",
                         shard.Sharded() ? fmt::format("shard {}", shard.ordinal) : "all",
                         own.jobs.size(), requests, pipelines, foreign, bytes / 1e6,
                         requests * kReadsAnHour, bytes * kReadsAnHour / 1e6,
                         bench::StatusMiB("VmHWM"));
    }));
  };
  fmt::print("{}", read(ShardAssignment{}));
  for (std::uint32_t k = 0; k < shards; ++k) fmt::print("{}", read(ShardAssignment{k, shards}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace schedwatch;
  if (argc > 1 && std::string(argv[1]) == "shards") return Shards(argc, argv);
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
