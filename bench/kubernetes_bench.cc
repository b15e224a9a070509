// The kubernetes source at scale: 10,000 CronJobs and 100,000 Jobs served in pages of 500 over
// TLS by the loopback API server (tests/sources/kubernetes/fake_apiserver.py), listed and every
// role classified. Prints wall time and peak memory (targets: under 2 s, under 200 MiB).
//
//   kubernetes_bench [cronjobs [jobs_per_cronjob [page_size]]]
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "schedwatch/classify.h"
#include "schedwatch/spec.h"
#include "sources/catalog.h"
#include "sources/kubernetes/kubernetes_source.h"
#include "sources/source.h"
#include "tests/sources/kubernetes/fake_server.h"

namespace {

using Clock = std::chrono::steady_clock;

double MiB(long kibibytes) { return kibibytes / 1024.0; }

long PeakRssKib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// CPU seconds this process used: the client's share of a list, whatever the server costs.
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace schedwatch;
  const int cronjobs = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int jobs_per_cronjob = argc > 2 ? std::atoi(argv[2]) : 10;
  const int page_size = argc > 3 ? std::atoi(argv[3]) : 500;
  const char* token = "bench-token";

  char pattern[] = "/tmp/schedwatch-k8s-bench-XXXXXX";
  std::filesystem::path directory = mkdtemp(pattern);
  auto start = Clock::now();
  testing::FakeApiServer server(
      directory / "server",
      {{"token", token},
       {"synthetic",
        {{"cronjobs", cronjobs}, {"jobs_per_cronjob", jobs_per_cronjob}, {"namespaces", 20}}}});
  std::cout << fmt::format("server: {} CronJobs, {} Jobs generated and serialised in {:.1f} s\n",
                           cronjobs, cronjobs * jobs_per_cronjob, Seconds(start));

  std::filesystem::path kubeconfig = directory / "kubeconfig";
  std::ofstream(kubeconfig) << "current-context: bench\n"
                               "contexts: [{name: bench, context: {cluster: c, user: u}}]\n"
                               "clusters: [{name: c, cluster: {server: '"
                            << server.url() << "', certificate-authority: '"
                            << (testing::SharedPki() / "ca.crt").string()
                            << "'}}]\nusers: [{name: u, user: {token: " << token << "}}]\n";
  std::string spec_text = fmt::format(
      "version: 1\nsources:\n  prod:\n    type: kubernetes\n    kubeconfig: {}\n"
      "    page_size: {}\n    timeout: 60s\njobs:\n",
      kubeconfig.string(), page_size);
  for (int i = 0; i < cronjobs; ++i) {
    spec_text += fmt::format(
        "  - {{role: role-{}, source: prod, schedule: \"0 * * * *\", spec_version: \"1\"}}\n", i);
  }
  auto spec = ParseSpec(spec_text, (directory / "spec.yaml").string(), BuiltInCatalog());
  if (!spec) {
    std::cerr << spec.error() << "\n";
    return 1;
  }
  SourceOptions options;
  options.spec = &spec->sources.at("prod");
  auto source = MakeKubernetesSource(options);
  if (!source) {
    std::cerr << source.error() << "\n";
    return 1;
  }
  long rss_before = PeakRssKib();

  std::atomic<bool> cancelled{false};
  // Ten minutes into the newest (running) Job of the synthetic world: every tenth role is failing.
  const std::int64_t now = 1767225600 + (jobs_per_cronjob - 1) * 3600 + 600;
  for (int round = 1; round <= 2; ++round) {
    auto list_start = Clock::now();
    double cpu_start = CpuSeconds();
    auto snapshot = (*source)->List({now, &cancelled});
    double list_seconds = Seconds(list_start);
    double list_cpu_seconds = CpuSeconds() - cpu_start;
    if (!snapshot) {
      std::cerr << "list failed: " << snapshot.error() << "\n";
      return 1;
    }
    auto classify_start = Clock::now();
    std::map<std::string, std::vector<LiveObject>> objects;
    for (const auto& object : snapshot->objects) objects[object.role].push_back(object);
    std::size_t ok = 0, hung = 0, failing = 0;
    for (const auto& job : spec->jobs) {
      RoleObservation observation;
      observation.source_up = true;
      observation.objects = objects[job.role];
      if (auto it = snapshot->history.find(job.role); it != snapshot->history.end()) {
        observation.history = it->second;
      }
      observation.desired_since = now - 86400;
      RoleStatus status = Classify(job, observation, now);
      ok += status.Has(Condition::kOk);
      hung += status.Has(Condition::kHung);
      failing += status.Has(Condition::kFailing);
    }
    double classify_seconds = Seconds(classify_start);
    std::cout << fmt::format(
        "round {}: listed {} CronJobs ({} problems) in {:.3f} s (client CPU {:.3f} s), "
        "classified {} roles in {:.3f} s (ok {}, hung {}, failing {}): total {:.3f} s\n",
        round, snapshot->objects.size(), snapshot->problems.size(), list_seconds, list_cpu_seconds,
        spec->jobs.size(), classify_seconds, ok, hung, failing, list_seconds + classify_seconds);
  }
  long rss_after = PeakRssKib();
  std::cout << fmt::format(
      "peak RSS: {:.1f} MiB (before listing {:.1f} MiB, so the lists took at "
      "most {:.1f} MiB)\n",
      MiB(rss_after), MiB(rss_before), MiB(rss_after - rss_before));
  std::filesystem::remove_all(directory);
  return 0;
}
