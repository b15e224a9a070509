// Requests and time per read of the github_actions source for a repository of N scheduled
// workflows (1,000 by default) with 50 runs each, served by
// tests/sources/github_actions/fake_github.py on loopback through the real libcurl client.
// Compares the runs of each workflow asked for by itself (before) with the repository's runs
// listed once (after), with and without conditional requests, then the requests an hour of the
// default settings (min_interval 60 s, a refresh every 30 s) against GitHub's limits.
//
//   github_actions_bench [--workflows N] [--runs N] [--reads N] [--hours H] [--refresh S]
//
// With --shards N instead: what each of N shards pays against one exporter of every workflow at
// the default settings (a cold read, a warm one), each reader a process of its own.
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "bench/shard_readers.h"
#include "schedwatch/platform/api_client.h"
#include "schedwatch/shard.h"
#include "sources/catalog.h"
#include "sources/github_actions/github_actions_source.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using schedwatch::GitHubActionsSource;

struct Server {
  pid_t pid = -1;
  int port = 0;
  ~Server() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  }
};

bool StartServer(Server& server, int workflows, int runs, const fs::path& port_file) {
  std::string script =
      std::string(SCHEDWATCH_SOURCE_DIR) + "/tests/sources/github_actions/fake_github.py";
  std::string workflows_text = std::to_string(workflows), runs_text = std::to_string(runs);
  std::string port_text = port_file.string();
  const char* argv[] = {"/usr/bin/python3",
                        script.c_str(),
                        "--workflows",
                        workflows_text.c_str(),
                        "--runs",
                        runs_text.c_str(),
                        "--port-file",
                        port_text.c_str(),
                        "--lifetime",
                        "600",
                        nullptr};
  if (posix_spawn(&server.pid, argv[0], nullptr, nullptr, const_cast<char**>(argv), environ) != 0) {
    return false;
  }
  for (int i = 0; i < 600 && server.port == 0; ++i) {  // up to a minute
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(port_file);
    in >> server.port;
  }
  return server.port != 0;
}

// `min_interval` empty: the default (60 s).
std::string SpecText(int port, int workflows, const std::string& min_interval) {
  std::string text =
      fmt::format(R"(version: 1
sources:
  big:
    type: github_actions
    repository: bench/big
    api_url: http://127.0.0.1:{}
    token_env: SCHEDWATCH_BENCH_GH_TOKEN
{}    timeout: 60s
jobs:
)",
                  port, min_interval.empty() ? "" : "    min_interval: " + min_interval + "\n");
  for (int i = 0; i < workflows; ++i) {
    text += fmt::format(
        "  - {{role: job-{0:04d}, source: big, workflow: job-{0:04d}.yml, schedule: \"{1} {2} * * "
        "*\", spec_version: \"1\", max_runtime: 1h}}\n",
        i, i % 60, (i / 60) % 24);
  }
  return text;
}

struct Mode {
  const char* name;
  schedwatch::GitHubActionsTuning tuning;
};

// Counts what a transport over libcurl sends and receives.
struct Counted {
  long requests = 0, not_modified = 0, bytes = 0;
  long run_pages = 0;                 // the repository's scheduled runs (/actions/runs)
  std::set<std::string> by_workflow;  // ids of the workflows whose runs were asked for alone
};

schedwatch::platform::HttpTransport CountingTransport(Counted& counted) {
  auto inner = schedwatch::platform::TransportOver(std::make_shared<schedwatch::HttpClient>());
  return [inner, &counted](const schedwatch::HttpRequest& request,
                           const std::atomic<bool>* cancelled, schedwatch::HttpFailure* failure) {
    ++counted.requests;
    const std::string& url = request.url;
    if (url.find("/actions/runs?") != std::string::npos) ++counted.run_pages;
    std::size_t workflow = url.find("/actions/workflows/");
    if (workflow != std::string::npos && url.find("/runs?") != std::string::npos) {
      workflow += std::string_view("/actions/workflows/").size();
      counted.by_workflow.insert(url.substr(workflow, url.find('/', workflow) - workflow));
    }
    auto response = inner(request, cancelled, failure);
    if (response) {
      counted.bytes += static_cast<long>(response->body.size());
      counted.not_modified += response->status == 304;
    }
    return response;
  };
}

// One exporter of every workflow, then each of `shards`, at the default settings: a cold read, and
// a warm one an hour later, quiet (every answer a 304) or with every answer changed (conditional
// requests off); an hour holds a read every `refresh` past the read floor.
int Shards(const schedwatch::Spec& spec, std::uint32_t shards, int refresh) {
  using namespace schedwatch;
  fmt::print(
      "{} workflows over {} shards, default settings, a refresh every {} s; each reader a process "
      "of its own. Warm reads an hour: quiet (every answer a 304, free with a token) / every "
      "answer changed\n",
      spec.jobs.size(), shards, refresh);
  fmt::print("{:<8} {:>5} {:>8} {:>7} {:>7} {:>5} {:>7} {:>8} {:>7} {:>10} {:>11} {:>6}\n",
             "reader", "roles", "cold req", "cold MB", "run pgs", "alone", "foreign", "warm req",
             "reads/h", "changed/h", "changed MB/h", "VmHWM");
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  auto read = [&](ShardAssignment shard) {
    return bench::FinishReader(bench::StartReader([&] {
      Spec own = shard.Sharded() ? SpecOfShard(spec, shard) : spec;
      SourceOptions options;
      options.spec = &own.sources.at("big");
      for (const auto& job : own.jobs) options.jobs.push_back(&job);
      options.shard = shard;
      // A cold read and a warm one an hour later; what the warm one cost.
      auto cold_and_warm = [&](bool conditional, Counted& cold, Counted& warm,
                               std::int64_t& floor) -> Result<SourceSnapshot> {
        Counted counted;
        GitHubActionsTuning tuning;
        tuning.send = CountingTransport(counted);
        tuning.conditional_requests = conditional;
        auto source = GitHubActionsSource::Create(options, tuning);
        if (!source) return Error{source.error()};
        auto snapshot = (*source)->List({now, nullptr});
        if (!snapshot) return snapshot;
        cold = counted;
        counted = {};
        auto again = (*source)->List({now + 3600, nullptr});
        if (!again) return again;
        warm = counted;
        floor = (*source)->ReadFloor();
        return snapshot;
      };
      Counted cold, quiet, ignored, changed;
      std::int64_t floor = 0;
      auto snapshot = cold_and_warm(true, cold, quiet, floor);
      if (!snapshot) return "read failed: " + snapshot.error() + "\n";
      auto unconditional = cold_and_warm(false, ignored, changed, floor);
      if (!unconditional) return "read failed: " + unconditional.error() + "\n";
      // Runs asked for alone of a workflow none of this reader's jobs names.
      std::set<std::string> ids;
      for (const auto& object : snapshot->objects) ids.insert(std::string(object.id()));
      long foreign = 0;
      for (const auto& id : cold.by_workflow) foreign += ids.count(id) == 0;
      double reads = 3600.0 / (refresh * std::ceil(static_cast<double>(floor) / refresh));
      return fmt::format(
          "{:<8} {:>5} {:>8} {:>7.2f} {:>7} {:>5} {:>7} {:>8} {:>7.0f} {:>10.0f} {:>11.1f} "
          "{:>6.1f}\n",
          shard.Sharded() ? fmt::format("shard {}", shard.ordinal) : "all", own.jobs.size(),
          cold.requests, cold.bytes / 1e6, cold.run_pages, cold.by_workflow.size(), foreign,
          fmt::format("{} ({})", quiet.requests, quiet.not_modified), reads,
          reads * changed.requests, reads * changed.bytes / 1e6, bench::StatusMiB("VmHWM"));
    }));
  };
  fmt::print("{}", read(ShardAssignment{}));
  for (std::uint32_t k = 0; k < shards; ++k) fmt::print("{}", read(ShardAssignment{k, shards}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int workflows = 1000, runs = 50, reads = 3;
  double hours = 1;
  int refresh = 30;  // the exporter's default --refresh.interval
  int shards = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--workflows") workflows = value;
    if (flag == "--runs") runs = value;
    if (flag == "--reads") reads = value;
    if (flag == "--hours") hours = std::atof(argv[i + 1]);
    if (flag == "--refresh") refresh = value;
    if (flag == "--shards") shards = value;
  }
  // 304s are free of the primary limit only with a token.
  setenv("SCHEDWATCH_BENCH_GH_TOKEN", "ghp_benchTOKEN", 1);
  fs::path port_file = fs::temp_directory_path() / fmt::format("gh-bench-{}.port", getpid());
  Server server;
  bool started = StartServer(server, workflows, runs, port_file);
  fs::remove(port_file);
  if (!started) {
    fmt::print(stderr, "the fake GitHub server did not start\n");
    return 1;
  }
  auto parse = [&](const std::string& min_interval) {
    return schedwatch::ParseSpec(SpecText(server.port, workflows, min_interval),
                                 "/tmp/bench-spec.yaml", schedwatch::BuiltInCatalog());
  };
  auto every_read = parse("1s");
  auto defaults = parse("");
  if (!every_read || !defaults) {
    fmt::print(stderr, "{}\n", every_read ? defaults.error() : every_read.error());
    return 1;
  }
  if (shards > 0) return Shards(*defaults, static_cast<std::uint32_t>(shards), refresh);
  auto options_of = [](const schedwatch::Spec& spec) {
    schedwatch::SourceOptions options;
    options.spec = &spec.sources.at("big");
    for (const auto& job : spec.jobs) options.jobs.push_back(&job);
    return options;
  };
  const Mode modes[] = {
      {"per workflow, ETag", {nullptr, true, nullptr, false, false}},
      {"per workflow, no ETag", {nullptr, false, nullptr, false, false}},
      {"repository, ETag", {nullptr, true, nullptr, true, true}},
      {"repository, no ETag", {nullptr, false, nullptr, true, true}},
  };

  fmt::print(
      "github_actions: {} workflows x {} runs, loopback Python server, one keep-alive "
      "connection\n",
      workflows, runs);
  // "cpu" is this process only (parsing, mapping, libcurl): the server's share is excluded.
  // "charged" counts the answers GitHub's primary limit charges (304s are free with a token).
  fmt::print("{:<22} {:>5} {:>9} {:>6} {:>8} {:>9} {:>7} {:>8}\n", "mode", "read", "requests",
             "304", "charged", "seconds", "cpu s", "objects");
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  for (const Mode& mode : modes) {
    auto source = GitHubActionsSource::Create(options_of(*every_read), mode.tuning);
    if (!source) {
      fmt::print(stderr, "{}\n", source.error());
      return 1;
    }
    for (int read = 0; read < reads; ++read) {
      auto start = std::chrono::steady_clock::now();
      std::clock_t cpu_start = std::clock();
      // Each read an hour after the last: past any floor, so every one is a real read.
      auto snapshot = (*source)->List({now + 3600 * read, nullptr});
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
      if (!snapshot) {
        fmt::print(stderr, "read failed: {}\n", snapshot.error());
        return 1;
      }
      auto stats = (*source)->last_read_stats();
      fmt::print("{:<22} {:>5} {:>9} {:>6} {:>8} {:>9.3f} {:>7.3f} {:>8}\n", mode.name,
                 read == 0 ? "cold" : "warm", stats.requests, stats.not_modified,
                 stats.requests - stats.not_modified, seconds, cpu, snapshot->objects.size());
    }
  }

  // The default spec (min_interval 60 s) refreshed every `refresh` seconds for `hours` of
  // simulated time: real reads and requests counted, the first (cold) read included. Against
  // GitHub's limits: 5,000 requests an hour for a token (304s free), 900 points a minute.
  fmt::print("\ndefault settings, a refresh every {} s for {} h (simulated clock)\n", refresh,
             hours);
  fmt::print("{:<34} {:>6} {:>10} {:>10} {:>12} {:>8}\n", "mode", "reads", "requests/h",
             "charged/h", "peak req/min", "floor s");
  const Mode hourly[] = {
      {"before: per workflow, min_interval", {nullptr, true, nullptr, false, false}},
      {"per workflow + budget floor", {nullptr, true, nullptr, false, true}},
      {"after: repository runs + floor", {nullptr, true, nullptr, true, true}},
      {"after, every answer changed", {nullptr, false, nullptr, true, true}},
  };
  for (const Mode& mode : hourly) {
    auto source = GitHubActionsSource::Create(options_of(*defaults), mode.tuning);
    if (!source) return 1;
    int real_reads = 0;
    long requests = 0, charged = 0, peak_minute = 0;
    std::map<std::int64_t, long> by_minute;
    const auto steps = static_cast<int>(hours * 3600 / refresh);
    for (int step = 0; step < steps; ++step) {
      std::int64_t at = now + static_cast<std::int64_t>(step) * refresh;
      auto counts_before = (*source)->RequestCounts();
      auto snapshot = (*source)->List({at, nullptr});
      if (!snapshot) {
        fmt::print(stderr, "read failed: {}\n", snapshot.error());
        return 1;
      }
      auto counts_after = (*source)->RequestCounts();
      long sent = 0, not_modified = 0;
      for (const auto& [outcome, count] : counts_after->by_outcome) {
        auto old = counts_before->by_outcome.find(outcome);
        long delta = static_cast<long>(count) -
                     (old == counts_before->by_outcome.end() ? 0 : static_cast<long>(old->second));
        sent += delta;
        if (outcome == "304") not_modified += delta;
      }
      if (sent > 0) ++real_reads;
      requests += sent;
      charged += sent - not_modified;
      peak_minute = std::max(peak_minute, by_minute[(at - now) / 60] += sent);
    }
    fmt::print("{:<34} {:>6} {:>10.0f} {:>10.0f} {:>12} {:>8}\n", mode.name, real_reads,
               requests / hours, charged / hours, peak_minute, (*source)->ReadFloor());
  }
  return 0;
}
