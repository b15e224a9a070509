// Rule generation for a large spec (issue 4): the time to load a 10,000-role spec and to render
// each output in both modes, and the output sizes. Prints figures; asserts nothing.
//
//   build/rulegen_bench [roles]
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>

#include "rulegen/alerts.h"
#include "rulegen/rulegen.h"
#include "sources/catalog.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Processor time of this process (user + system): less sensitive than wall time to the other
// work on a shared machine.
double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// A spec of `roles` jobs over four sources with a mix of schedules, zones and options.
std::string SpecText(int roles) {
  const char* schedules[] = {"*/5 * * * *", "*/10 * * * *", "17 * * * *", "30 2 * * *",
                             "0 9 * * 1-5"};
  const char* zones[] = {"UTC", "Asia/Seoul", "Europe/Berlin", "America/New_York"};
  std::string text =
      "version: 1\ndefaults: {alert_for: 5m}\nsources:\n"
      "  a: {type: file, path: a.yaml}\n  b: {type: file, path: b.yaml}\n"
      "  c: {type: file, path: c.yaml}\n  d: {type: file, path: d.yaml}\njobs:\n";
  for (int i = 0; i < roles; ++i) {
    text += fmt::format(
        "  - {{role: job-{:05d}, source: {}, schedule: '{}', timezone: {}, spec_version: "
        "'{}'{}}}\n",
        i, "abcd"[i % 4], schedules[i % 5], zones[i % 4], i % 7,
        i % 10 == 0 ? ", progress: {file: /var/lib/p, stale_after: 2h}" : "");
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace schedwatch;
  int roles = argc > 1 ? std::atoi(argv[1]) : 10000;
  std::string text = SpecText(roles);

  auto start = Clock::now();
  double cpu_start = CpuSeconds();
  auto spec = ParseSpec(text, "bench-spec.yaml", BuiltInCatalog());
  if (!spec) {
    fmt::print(stderr, "{}\n", spec.error());
    return 1;
  }
  double parse = Seconds(start), parse_cpu = CpuSeconds() - cpu_start;
  fmt::print(
      "rulegen_bench: {} roles, spec {:.1f} MiB parsed in {:.3f} s, processor time {:.3f} s "
      "(core: periods included). Best of 3:\n",
      roles, text.size() / 1048576.0, parse, parse_cpu);

  for (auto mode : {rulegen::Mode::kPerRole, rulegen::Mode::kJoined}) {
    rulegen::Options options;
    options.mode = mode;
    // Best of three: the machine is shared. The renderers stream into a sink that only counts
    // bytes; Write() is everything schedwatch_rulegen does after loading the spec.
    double best_rules = 1e9, best_tests = 1e9, best_write = 1e9, best_cpu = 1e9;
    std::size_t rule_count = 0, rules_bytes = 0, tests_bytes = 0;
    auto directory = std::filesystem::temp_directory_path() / "rulegen_bench";
    for (int round = 0; round < 3; ++round) {
      rules_bytes = tests_bytes = 0;
      start = Clock::now();
      auto groups = rulegen::BuildRules(*spec, options);
      rulegen::RenderRules(groups, &*spec, options,
                           [&](std::string_view chunk) { rules_bytes += chunk.size(); });
      best_rules = std::min(best_rules, Seconds(start));
      rule_count = 0;
      for (const auto& group : groups) rule_count += group.rules.size();
      std::vector<std::string> warnings;
      start = Clock::now();
      rulegen::RenderRuleTests(*spec, options, warnings,
                               [&](std::string_view chunk) { tests_bytes += chunk.size(); });
      best_tests = std::min(best_tests, Seconds(start));

      start = Clock::now();
      double cpu_start = CpuSeconds();
      auto written = rulegen::Write(*spec, options, directory.string(), warnings);
      best_write = std::min(best_write, Seconds(start));
      best_cpu = std::min(best_cpu, CpuSeconds() - cpu_start);
      std::filesystem::remove_all(directory);
      if (!written) {
        fmt::print(stderr, "{}\n", written.error());
        return 1;
      }
    }
    fmt::print(
        "  {:8}: {:6} rules; render rules {:.3f} s ({:.1f} MiB), render tests {:.3f} s "
        "({:.1f} MiB); all four files written in {:.3f} s, processor time {:.3f} s; with the "
        "spec loaded: {:.3f} s\n",
        rulegen::ModeName(mode), rule_count, best_rules, rules_bytes / 1048576.0, best_tests,
        tests_bytes / 1048576.0, best_write, best_cpu, best_write + parse);
  }
  return 0;
}
