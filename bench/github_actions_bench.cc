// Requests and time per refresh of the github_actions source for a repository of 1,000 scheduled
// workflows with 50 runs each, served by tests/sources/github_actions/fake_github.py on loopback
// through the real libcurl client. Compares conditional requests (ETag / If-None-Match) with
// plain ones; "quota" counts the answers GitHub would charge (304s are free).
//
//   github_actions_bench [--workflows N] [--runs N] [--reads N]
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

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

std::string SpecText(int port, int workflows) {
  std::string text = fmt::format(R"(version: 1
sources:
  big:
    type: github_actions
    repository: bench/big
    api_url: http://127.0.0.1:{}
    min_interval: 1s
    timeout: 60s
jobs:
)",
                                 port);
  for (int i = 0; i < workflows; ++i) {
    text += fmt::format(
        "  - {{role: job-{0:04d}, source: big, workflow: job-{0:04d}.yml, schedule: \"{1} {2} * * "
        "*\", spec_version: \"1\", max_runtime: 1h}}\n",
        i, i % 60, (i / 60) % 24);
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  int workflows = 1000, runs = 50, reads = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--workflows") workflows = value;
    if (flag == "--runs") runs = value;
    if (flag == "--reads") reads = value;
  }
  fs::path port_file = fs::temp_directory_path() / fmt::format("gh-bench-{}.port", getpid());
  Server server;
  bool started = StartServer(server, workflows, runs, port_file);
  fs::remove(port_file);
  if (!started) {
    fmt::print(stderr, "the fake GitHub server did not start\n");
    return 1;
  }
  auto spec = schedwatch::ParseSpec(SpecText(server.port, workflows), "/tmp/bench-spec.yaml",
                                    schedwatch::BuiltInCatalog());
  if (!spec) {
    fmt::print(stderr, "{}\n", spec.error());
    return 1;
  }
  schedwatch::SourceOptions options;
  options.spec = &spec->sources.at("big");
  for (const auto& job : spec->jobs) options.jobs.push_back(&job);

  fmt::print(
      "github_actions: {} workflows x {} runs, loopback Python server, one keep-alive "
      "connection\n",
      workflows, runs);
  // "cpu" is this process only (parsing, mapping, libcurl): the server's share is excluded.
  fmt::print("{:<22} {:>5} {:>9} {:>6} {:>6} {:>9} {:>7} {:>8}\n", "mode", "read", "requests",
             "304", "quota", "seconds", "cpu s", "objects");
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  for (bool conditional : {true, false}) {
    auto source = GitHubActionsSource::Create(options, {nullptr, conditional});
    if (!source) {
      fmt::print(stderr, "{}\n", source.error());
      return 1;
    }
    for (int read = 0; read < reads; ++read) {
      auto start = std::chrono::steady_clock::now();
      std::clock_t cpu_start = std::clock();
      // Each read 2 s after the last: past min_interval, so every one is a real read.
      auto snapshot = (*source)->List({now + 2 * read, nullptr});
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
      if (!snapshot) {
        fmt::print(stderr, "read failed: {}\n", snapshot.error());
        return 1;
      }
      auto stats = (*source)->last_read_stats();
      fmt::print("{:<22} {:>5} {:>9} {:>6} {:>6} {:>9.3f} {:>7.3f} {:>8}\n",
                 conditional ? "ETag (If-None-Match)" : "no ETag", read == 0 ? "cold" : "warm",
                 stats.requests, stats.not_modified, stats.requests - stats.not_modified, seconds,
                 cpu, snapshot->objects.size());
    }
  }
  return 0;
}
