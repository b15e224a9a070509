// Core benchmark (issue 2): load and validate a 100,000-job spec with mixed schedules and zones,
// compute next/previous fire times and periods for all, then classify 100,000 roles.
// Prints figures; asserts nothing.
//
//   core_bench [JOBS] [--windows | --missed-starts]
//
// --windows: 16 maintenance windows in the defaults ("* * * * *" for 30s to 45s), stale_after 1h
// and a success 30 days old: each role's covered time is summed over many windows (issue 34).
// --missed-starts: missed_starts 1000 and one window "0 * * * *" for 3540s in the defaults.
#include <fmt/format.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <random>
#include <string>

#include "schedwatch/classify.h"
#include "schedwatch/spec.h"
#include "schedwatch/yaml_tree.h"
#include "sources/catalog.h"

namespace {

// CPU time of this (single-threaded) process: what the work costs, even on a busy machine.
struct Clock {
  using time_point = double;
  static double now() {
    timespec spec{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec);
    return static_cast<double>(spec.tv_sec) + spec.tv_nsec / 1e9;
  }
};

double Seconds(double since) { return Clock::now() - since; }

long PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

std::string MakeSpec(int jobs, const std::string& defaults, const std::string& job_keys) {
  const char* zones[] = {"UTC", "Asia/Seoul", "Europe/Berlin", "America/New_York",
                         "Australia/Sydney"};
  std::mt19937 random(42);
  std::string text = "version: 1\n" + defaults +
                     "sources:\n  cron: {type: crontab}\n  k8s: {type: kubernetes}\njobs:\n";
  text.reserve(static_cast<std::size_t>(jobs) * 140);
  for (int i = 0; i < jobs; ++i) {
    int minute = static_cast<int>(random() % 60), hour = static_cast<int>(random() % 24);
    std::string schedule;
    switch (random() % 6) {
      case 0:
        schedule = fmt::format("*/{} * * * *", 5 + random() % 26);
        break;
      case 1:
        schedule = fmt::format("{} */{} * * *", minute, 1 + random() % 6);
        break;
      case 2:
        schedule = fmt::format("{} {} * * 1-5", minute, hour);
        break;
      case 3:
        schedule = fmt::format("{} {} {} * *", minute, hour, 1 + random() % 28);
        break;
      case 4:
        schedule = "@daily";
        break;
      default:
        schedule = fmt::format("{} {} * * sun", minute, hour);
        break;
    }
    text += fmt::format(
        "  - role: job-{}\n    source: {}\n    schedule: \"{}\"\n    timezone: {}\n"
        "    spec_version: \"{}\"\n    max_runtime: {}m\n{}",
        i, i % 2 ? "cron" : "k8s", schedule, zones[random() % 5], random() % 9 + 1,
        5 + random() % 55, job_keys);
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace schedwatch;
  int jobs = 100000;
  std::string defaults, job_keys;
  std::int64_t success_age = 0;  // 0: the latest fire time's run
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--windows") {
      defaults = "defaults:\n  maintenance:\n";
      for (int w = 0; w < 16; ++w)
        defaults += fmt::format("    - {{schedule: \"* * * * *\", duration: {}s}}\n", 30 + w);
      job_keys = "    stale_after: 1h\n";
      success_age = 30 * 86400;
    } else if (arg == "--missed-starts") {
      defaults =
          "defaults:\n  missed_starts: 1000\n"
          "  maintenance: [{schedule: \"0 * * * *\", duration: 3540s}]\n";
    } else {
      jobs = std::stoi(arg);
    }
  }
  std::string text = MakeSpec(jobs, defaults, job_keys);
  fmt::print("spec: {} jobs, {:.1f} MiB of YAML (times are CPU seconds)\n", jobs,
             text.size() / 1048576.0);

  auto parse_start = Clock::now();
  auto document = YamlDocument::Parse(text);
  fmt::print("of which YAML parsing alone (libyaml into the tree): {:.3f} s\n",
             Seconds(parse_start));
  document = Error{"released"};
  auto start = Clock::now();
  auto spec = ParseSpec(text, "bench.yaml", BuiltInCatalog());
  double load = Seconds(start);
  if (!spec) {
    fmt::print("spec error: {}\n", spec.error());
    return 1;
  }
  text.clear();
  text.shrink_to_fit();

  const std::int64_t now = 1796040000;  // 2026-11-30T12:00:00Z
  auto fires_start = Clock::now();
  std::int64_t checksum = 0;
  for (const auto& job : spec->jobs) {
    checksum += job.schedule.Next(now).value_or(0) - job.schedule.Previous(now).value_or(0);
  }
  double fires = Seconds(fires_start);
  fmt::print(
      "load + validate + periods: {:.3f} s; next + previous for all: {:.3f} s; "
      "total {:.3f} s (target < 2 s)\n",
      load, fires, load + fires);

  std::vector<RoleObservation> observations(spec->jobs.size());
  for (std::size_t i = 0; i < spec->jobs.size(); ++i) {
    const JobSpec& job = spec->jobs[i];
    RoleObservation& observation = observations[i];
    observation.source_up = i % 50 != 0;
    observation.absence_confirmed = true;
    if (i % 40 != 0) {
      observation.objects.push_back({"id-" + std::to_string(i), job.role,
                                     job.schedule.expression().text(), "",
                                     i % 30 ? job.spec_version : "0", i % 25 != 0});
    }
    std::int64_t last = success_age ? now - success_age : job.schedule.Previous(now).value_or(now);
    observation.history.Add(
        {last + 5, last + 60, i % 20 ? Run::Outcome::kSucceeded : Run::Outcome::kFailed});
    observation.desired_since = now - 86400 - success_age;
  }
  auto classify_start = Clock::now();
  std::size_t healthy = 0;
  MaintenanceMemo maintenance;  // as a refresh holds one
  for (std::size_t i = 0; i < spec->jobs.size(); ++i) {
    healthy += Classify(spec->jobs[i], observations[i], now, std::nullopt, nullptr, &maintenance)
                   .Has(Condition::kOk);
  }
  double classify = Seconds(classify_start);
  fmt::print("classify {} roles: {:.1f} ms (target < 100 ms); {} ok\n", spec->jobs.size(),
             classify * 1000, healthy);
  fmt::print("peak RSS: {} MiB (target < 300 MiB); checksum {}\n", PeakRssMiB(), checksum);
  return 0;
}
