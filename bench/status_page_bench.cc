// Status page at 10,000 roles: memory of the run history (20 runs a role) and the time to render
// the overview (first 1,000 rows, and all), one role page, and the JSON API.
//   build/bench/status_page_bench [roles]
#include <fmt/format.h>
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "exporter/pages/status_page.h"
#include "exporter/refresh/run_history.h"
#include "sources/catalog.h"

using namespace schedwatch;

namespace {

std::size_t HeapInUse() { return mallinfo2().uordblks + mallinfo2().hblkhd; }

template <typename F>
double Millis(F&& f, int repeat) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeat; ++i) f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         repeat;
}

}  // namespace

int main(int argc, char** argv) {
  int roles = argc > 1 ? std::atoi(argv[1]) : 10000;
  const char* schedules[] = {"*/5 * * * *", "*/10 * * * *", "7 * * * *", "7 3 * * *",
                             "7 9 * * 1-5"};
  std::string text = "version: 1\nsources: {live: {type: kubernetes}}\njobs:\n";
  for (int i = 0; i < roles; ++i) {
    text += fmt::format(
        "  - {{role: job-{:05d}, source: live, schedule: \"{}\", spec_version: "
        "\"1\"}}\n",
        i, schedules[i % 5]);
  }
  auto spec = ParseSpec(text, "spec.yaml", BuiltInCatalog());
  if (!spec) {
    std::fprintf(stderr, "%s\n", spec.error().c_str());
    return 1;
  }
  auto shared = std::make_shared<const Spec>(std::move(*spec));
  const std::int64_t now = 1767268800;
  RunHistoryStore store;
  RefreshResult result;
  // Two refreshes of 20 runs each, overlapping by 10: the store keeps 20 per role.
  for (int refresh = 0; refresh < 2; ++refresh) {
    result = RefreshResult{};
    result.spec = shared;
    result.time = now;
    result.complete = true;
    result.sources.push_back(
        {"live", "kubernetes", true, "", now, 0.1, roles, 0, {}, {}, true, ""});
    for (const auto& job : shared->jobs) {
      RoleObservation observation;
      observation.source_up = true;
      observation.desired_since = now - 86400;
      observation.objects.push_back(
          {"ns/" + job.role, job.role, job.schedule.expression().text(), "", "1", true});
      for (int r = 0; r < 20; ++r) {
        std::int64_t start = now - (30 - r - refresh * 10) * 3000;
        bool last = r == 19;
        observation.history.Add(
            {start, last && job.role.back() == '7' ? std::nullopt : std::optional(start + 60),
             last && job.role.back() == '7'   ? Run::Outcome::kRunning
             : job.role.back() == '3' && last ? Run::Outcome::kFailed
                                              : Run::Outcome::kSucceeded});
      }
      RoleResult role;
      role.job = &job;
      std::vector<Run> runs;
      role.status = Classify(job, observation, now, std::nullopt, &runs);
      store.Add(role, runs);
      role.objects = std::move(observation.objects);
      result.roles.push_back(std::move(role));
    }
    store.Finish(result, RoleOrder(*result.spec));
  }
  std::size_t runs = 0;
  std::vector<RoleRuns> copies;  // to put the runs back after measuring
  for (const auto& role : result.roles) {
    runs += role.runs ? role.runs->size() : 0;
    copies.push_back(role.runs ? *role.runs : RoleRuns{});
  }
  // What the store holds (its map and the lists it shares with `result`): measured by dropping.
  std::size_t with_store = HeapInUse();
  {
    RunHistoryStore gone = std::move(store);
    for (std::size_t i = 0; i < result.roles.size(); ++i) result.roles.Mutable(i).runs.reset();
  }
  std::size_t without_store = HeapInUse();
  std::printf("%d roles, %zu runs kept: run history %.1f MiB (%.0f bytes a role)\n", roles, runs,
              (with_store - without_store) / 1048576.0,
              static_cast<double>(with_store - without_store) / roles);
  for (std::size_t i = 0; i < result.roles.size(); ++i) {
    result.roles.Mutable(i).runs = std::make_shared<const RoleRuns>(std::move(copies[i]));
  }
  std::size_t size = 0;
  double overview = Millis([&] { size = RenderStatusHtml(result).size(); }, 5);
  std::printf("overview, first 1,000 rows (default): %.1f ms, %.2f MB\n", overview, size / 1e6);
  OverviewFilter all;
  all.limit = 0;
  double overview_all = Millis([&] { size = RenderStatusHtml(result, {}, all).size(); }, 3);
  std::printf("overview, all %d rows (?limit=all): %.1f ms, %.2f MB\n", roles, overview_all,
              size / 1e6);
  OverviewFilter failing;
  failing.condition = "failing";
  double filtered = Millis([&] { size = RenderStatusHtml(result, {}, failing).size(); }, 5);
  std::printf("overview filtered to failing: %.1f ms, %.2f MB\n", filtered, size / 1e6);
  double role_page = Millis([&] { size = RenderRoleHtml(result, "job-05000")->size(); }, 50);
  std::printf("one role page (*/5, 20 runs): %.2f ms, %.1f KB\n", role_page, size / 1e3);
  double role_json = Millis([&] { size = RenderRoleJson(result, "job-05000")->size(); }, 50);
  std::printf("one role's JSON: %.2f ms, %.1f KB\n", role_json, size / 1e3);
  double json = Millis([&] { size = RenderStatusJson(result).size(); }, 3);
  std::printf("/api/v1/status: %.1f ms, %.1f MB\n", json, size / 1e6);
  return 0;
}
