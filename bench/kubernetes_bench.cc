// The kubernetes source at scale: 10,000 CronJobs and 100,000 Jobs served in pages of 500 over
// TLS by the loopback API server (tests/sources/kubernetes/fake_apiserver.py), listed and every
// role classified. Prints wall time and peak memory (targets: under 2 s, under 200 MiB).
//
//   kubernetes_bench [cronjobs [jobs_per_cronjob [page_size]]]
//
// API bytes per hour at the default 30 s refresh, before (every object listed at every
// refresh) and after (one list, then watches), answer bodies as the client receives them:
//
//   kubernetes_bench bytes [cronjobs [jobs_per_cronjob [unrelated_jobs [seconds]]]]
//
// What each of N shards pays against one exporter of every role (defaults: 10,000 CronJobs with
// 10 Jobs each, 10 shards, 30 s of watching): requests and bytes of the first list, watch bytes
// an hour, the objects cached and peak memory, every reader a process of its own:
//
//   kubernetes_bench shards [cronjobs [jobs_per_cronjob [shards [seconds]]]]
//
// One answer of every CronJob (about 2 KiB each with a last-applied-configuration annotation:
// 30,000 make 60 MiB; a server that ignores limit), listed once without watches: the peak
// memory of reading one large answer.
//
//   kubernetes_bench onepage [cronjobs [unreadable]]
//
// With `unreadable`, the answer is instead that many one-byte items, each unreadable (a hostile
// server: 2 bytes an item, each a problem).
//
// The server changes one Job every 0.5 s per 1,000 CronJobs (7,200 MODIFIED events an hour: a
// run of every hourly CronJob brings about as many), sends a bookmark every 10 s and ends every
// watch after 20 s (the real API server: about 60 s, and timeoutSeconds 300), so the watch
// figure is an upper bound; it is measured over `seconds` (default 60) of refreshes every 30 s
// and scaled to an hour.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "bench/shard_readers.h"
#include "schedwatch/classify.h"
#include "schedwatch/shard.h"
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

// The spec the bench's source reads: a kubeconfig for the fake server in `directory`, `settings`
// added to the source, and one role per labelled CronJob (role-0, role-1, ...).
schedwatch::Result<schedwatch::Spec> BenchSpec(const std::filesystem::path& directory,
                                               const std::string& server_url, const char* token,
                                               int roles, const std::string& settings) {
  std::filesystem::path kubeconfig = directory / "kubeconfig";
  std::ofstream(kubeconfig) << "current-context: bench\n"
                               "contexts: [{name: bench, context: {cluster: c, user: u}}]\n"
                               "clusters: [{name: c, cluster: {server: '"
                            << server_url << "', certificate-authority: '"
                            << (schedwatch::testing::SharedPki() / "ca.crt").string()
                            << "'}}]\nusers: [{name: u, user: {token: " << token << "}}]\n";
  std::string text = fmt::format(
      "version: 1\nsources:\n  prod:\n    type: kubernetes\n    kubeconfig: {}\n{}"
      "    timeout: 60s\njobs:{}\n",
      kubeconfig.string(), settings, roles == 0 ? " []" : "");
  for (int i = 0; i < roles; ++i) {
    text += fmt::format(
        "  - {{role: role-{}, source: prod, schedule: \"0 * * * *\", spec_version: \"1\"}}\n", i);
  }
  return schedwatch::ParseSpec(text, (directory / "spec.yaml").string(),
                               schedwatch::BuiltInCatalog());
}

// What the server changes: one Job every 0.5 s per 1,000 CronJobs, in steps of at least 0.05 s.
struct Churn {
  double interval = 0.5;  // seconds
  int jobs = 1;           // each step
};

Churn ChurnOf(int cronjobs) {
  Churn churn{0.5 * 1000.0 / std::max(cronjobs, 1), 1};
  while (churn.interval < 0.05) {
    churn.interval *= 2;
    churn.jobs *= 2;
  }
  return churn;
}

}  // namespace

// Counts the answer bytes a transport receives, streamed ones included, and its requests: of
// watches (watch=1) apart.
struct CountingTransport {
  std::shared_ptr<std::atomic<std::uint64_t>> bytes =
      std::make_shared<std::atomic<std::uint64_t>>(0);
  std::shared_ptr<std::atomic<std::uint64_t>> watch_bytes =
      std::make_shared<std::atomic<std::uint64_t>>(0);
  std::shared_ptr<std::atomic<std::uint64_t>> lists =
      std::make_shared<std::atomic<std::uint64_t>>(0);
  schedwatch::kubernetes::TransportFactory Factory() const {
    return [*this](const schedwatch::TlsOptions& tls) -> schedwatch::platform::HttpTransport {
      auto inner = schedwatch::kubernetes::RealTransport(tls);
      return [inner, counts = *this](const schedwatch::HttpRequest& request,
                                     const std::atomic<bool>* cancelled,
                                     schedwatch::HttpFailure* failure) {
        const bool watch = request.url.find("watch=1") != std::string::npos;
        if (!watch) ++*counts.lists;
        schedwatch::HttpRequest counted = request;
        if (request.on_data) {
          counted.on_data = [&request, counts, watch](std::string_view data) {
            *counts.bytes += data.size();
            if (watch) *counts.watch_bytes += data.size();
            return request.on_data(data);
          };
        }
        auto response = inner(counted, cancelled, failure);
        if (response) *counts.bytes += response->body.size();
        return response;
      };
    };
  }
};

// What one reader of the cluster pays, all N shards and one exporter of every role at once, each
// in a process of its own: the first list (requests, bytes), the watches' bytes an hour, the
// objects its caches keep and its peak memory.
int Shards(int argc, char** argv) {
  using namespace schedwatch;
  const int cronjobs = argc > 2 ? std::atoi(argv[2]) : 10000;
  const int jobs_per_cronjob = argc > 3 ? std::atoi(argv[3]) : 10;
  const auto shards = static_cast<std::uint32_t>(argc > 4 ? std::atoi(argv[4]) : 10);
  const int seconds = argc > 5 ? std::atoi(argv[5]) : 30;
  const char* token = "bench-token";
  char pattern[] = "/tmp/schedwatch-k8s-shards-XXXXXX";
  std::filesystem::path directory = mkdtemp(pattern);
  const Churn churn = ChurnOf(cronjobs);
  testing::FakeApiServer server(
      directory / "server",
      {{"token", token},
       {"bookmark_interval", 10},
       {"watch_close_after", 20},
       {"churn", {{"interval", churn.interval}, {"jobs", churn.jobs}}},
       {"synthetic",
        {{"cronjobs", cronjobs}, {"jobs_per_cronjob", jobs_per_cronjob}, {"namespaces", 20}}}});
  auto spec = BenchSpec(directory, server.url(), token, cronjobs, "");
  if (!spec) {
    std::cerr << spec.error() << "\n";
    return 1;
  }
  std::cout << fmt::format(
      "{} CronJobs with {} Jobs each over {} shards; list, then watch for {} s (a refresh every "
      "30 s, {:.0f} Job changes an hour); each reader a process of its own, all at once\n",
      cronjobs, jobs_per_cronjob, shards, seconds, churn.jobs * 3600 / churn.interval);
  std::cout << fmt::format("(every reader starts from this process: VmRSS {:.1f} MiB)\n",
                           bench::StatusMiB("VmRSS"));
  std::cout << fmt::format("{:<10} {:>6} {:>9} {:>7} {:>6} {:>9} {:>8} {:>10} {:>9} {:>9}\n",
                           "reader", "roles", "CronJobs", "Jobs", "lists", "list MB", "list CPU",
                           "watch MB/h", "VmHWM MiB", "VmRSS MiB");
  auto read = [&](ShardAssignment shard) {
    return bench::StartReader([&, shard] {
      Spec own = shard.Sharded() ? SpecOfShard(*spec, shard) : *spec;
      SourceOptions options;
      options.spec = &own.sources.at("prod");
      for (const auto& job : own.jobs) options.jobs.push_back(&job);
      options.shard = shard;
      CountingTransport counting;
      kubernetes::Tuning tuning;
      tuning.transport = counting.Factory();
      auto source = kubernetes::MakeTunedSource(options, tuning);
      std::atomic<bool> cancelled{false};
      double cpu = CpuSeconds();
      auto first = (*source)->List({0, &cancelled});
      cpu = CpuSeconds() - cpu;
      if (!first) return "list failed: " + first.error() + "\n";
      std::uint64_t list_bytes = counting.bytes->load() - counting.watch_bytes->load();
      std::uint64_t lists = counting.lists->load(), watched = counting.watch_bytes->load();
      auto start = Clock::now();
      while (Seconds(start) < seconds) {
        std::this_thread::sleep_for(std::chrono::seconds(std::min(30, seconds)));
        auto snapshot = (*source)->List({0, &cancelled});
        if (!snapshot) return "read failed: " + snapshot.error() + "\n";
      }
      double per_hour = (counting.watch_bytes->load() - watched) * 3600.0 / Seconds(start);
      auto report = kubernetes::ReportWatches(**source);
      return fmt::format(
          "{:<10} {:>6} {:>9} {:>7} {:>6} {:>9.1f} {:>8.2f} {:>10.1f} {:>9.1f} {:>9.1f}\n",
          shard.Sharded() ? fmt::format("shard {}", shard.ordinal) : "all", own.jobs.size(),
          report->cronjobs, report->jobs, lists, list_bytes / 1e6, cpu, per_hour / 1e6,
          bench::StatusMiB("VmHWM"), bench::StatusMiB("VmRSS"));
    });
  };
  std::vector<bench::Reader> readers = {read(ShardAssignment{})};
  for (std::uint32_t k = 0; k < shards; ++k) readers.push_back(read(ShardAssignment{k, shards}));
  for (auto& reader : readers) std::cout << bench::FinishReader(reader);
  std::filesystem::remove_all(directory);
  return 0;
}

int Bytes(int argc, char** argv) {
  using namespace schedwatch;
  const int cronjobs = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int jobs_per_cronjob = argc > 3 ? std::atoi(argv[3]) : 5;
  const int unrelated = argc > 4 ? std::atoi(argv[4]) : 20000;
  const int seconds = argc > 5 ? std::atoi(argv[5]) : 60;
  const char* token = "bench-token";
  char pattern[] = "/tmp/schedwatch-k8s-bytes-XXXXXX";
  std::filesystem::path directory = mkdtemp(pattern);
  const Churn churn = ChurnOf(cronjobs);
  testing::FakeApiServer server(directory / "server",
                                {{"token", token},
                                 {"bookmark_interval", 10},
                                 {"watch_close_after", 20},
                                 {"churn", {{"interval", churn.interval}, {"jobs", churn.jobs}}},
                                 {"synthetic",
                                  {{"cronjobs", cronjobs},
                                   {"jobs_per_cronjob", jobs_per_cronjob},
                                   {"unrelated_jobs", unrelated},
                                   {"namespaces", 20}}}});
  auto spec = BenchSpec(directory, server.url(), token, cronjobs, "");
  if (!spec) {
    std::cerr << spec.error() << "\n";
    return 1;
  }
  SourceOptions options;
  options.spec = &spec->sources.at("prod");
  for (const auto& job : spec->jobs) options.jobs.push_back(&job);
  std::atomic<bool> cancelled{false};
  constexpr double kRefreshesPerHour = 3600.0 / 30;
  std::cout << fmt::format(
      "{} labelled CronJobs, {} of their Jobs, {} other Jobs; 30 s refresh; {:.0f} Job changes "
      "an hour\n",
      cronjobs, cronjobs * jobs_per_cronjob, unrelated, churn.jobs * 3600 / churn.interval);

  double before_per_hour = 0;
  {
    CountingTransport counting;
    kubernetes::Tuning tuning;
    tuning.transport = counting.Factory();
    tuning.watch = false;
    auto source = kubernetes::MakeTunedSource(options, tuning);
    if (!source) return 1;
    auto first = (*source)->List({0, &cancelled});
    if (!first) {
      std::cerr << "list failed: " << first.error() << "\n";
      return 1;
    }
    std::uint64_t one = counting.bytes->load();
    before_per_hour = one * kRefreshesPerHour;
    std::cout << fmt::format(
        "before (list every refresh): {:.1f} MB a refresh, {:.1f} MB an hour\n", one / 1e6,
        before_per_hour / 1e6);
  }
  {
    CountingTransport counting;
    kubernetes::Tuning tuning;
    tuning.transport = counting.Factory();
    auto source = kubernetes::MakeTunedSource(options, tuning);
    if (!source) return 1;
    auto first = (*source)->List({0, &cancelled});
    if (!first) {
      std::cerr << "list failed: " << first.error() << "\n";
      return 1;
    }
    std::uint64_t initial = counting.bytes->load();
    auto start = Clock::now();
    int refreshes = 0;
    std::size_t objects = 0;
    while (Seconds(start) < seconds) {
      std::this_thread::sleep_for(std::chrono::seconds(std::min(30, seconds)));
      auto snapshot = (*source)->List({0, &cancelled});
      if (!snapshot) {
        std::cerr << "read failed: " << snapshot.error() << "\n";
        return 1;
      }
      objects = snapshot->objects.size();
      ++refreshes;
    }
    double window = Seconds(start);
    std::uint64_t after = counting.bytes->load() - initial;
    double per_hour = after * 3600.0 / window;
    auto report = kubernetes::ReportWatches(**source);
    std::cout << fmt::format(
        "after (list, then watch): first list {:.1f} MB; then {:.0f} KB in {:.0f} s "
        "({} refreshes, {} CronJobs, {} watches, {} ended by the server, {} relists): "
        "{:.2f} MB an hour, {:.2f}% of before\n",
        initial / 1e6, after / 1e3, window, refreshes, objects, report ? report->counts.watches : 0,
        report ? report->counts.ended : 0,
        report ? report->counts.expired + report->counts.failed : 0, per_hour / 1e6,
        100.0 * per_hour / before_per_hour);
  }
  std::filesystem::remove_all(directory);
  return 0;
}

int OnePage(int argc, char** argv) {
  using namespace schedwatch;
  const int cronjobs = argc > 2 ? std::atoi(argv[2]) : 30000;
  const int unreadable = argc > 3 ? std::atoi(argv[3]) : 0;
  const char* token = "bench-token";
  char pattern[] = "/tmp/schedwatch-k8s-page-XXXXXX";
  std::filesystem::path directory = mkdtemp(pattern);
  nlohmann::json faults = nlohmann::json::array();
  if (unreadable > 0) {
    std::string page = R"({"kind":"CronJobList","metadata":{"resourceVersion":"1"},"items":[)";
    for (int i = 0; i < unreadable; ++i) page += i ? ",1" : "1";
    faults.push_back({{"path", "/apis/batch/v1/cronjobs"}, {"raw", page + "]}"}});
  }
  testing::FakeApiServer server(directory / "server", {{"token", token},
                                                       {"faults", faults},
                                                       {"ignore_limit", true},
                                                       {"synthetic",
                                                        {{"cronjobs", cronjobs},
                                                         {"jobs_per_cronjob", 0},
                                                         {"namespaces", 20},
                                                         {"annotation_bytes", 780}}}});
  auto spec = BenchSpec(directory, server.url(), token, 0, "");
  if (!spec) {
    std::cerr << spec.error() << "\n";
    return 1;
  }
  SourceOptions options;
  options.spec = &spec->sources.at("prod");
  CountingTransport counting;
  kubernetes::Tuning tuning;
  tuning.transport = counting.Factory();
  tuning.watch = false;
  auto source = kubernetes::MakeTunedSource(options, tuning);
  if (!source) {
    std::cerr << source.error() << "\n";
    return 1;
  }
  long rss_before = PeakRssKib();
  std::atomic<bool> cancelled{false};
  auto start = Clock::now();
  auto snapshot = (*source)->List({0, &cancelled});
  if (!snapshot) {
    std::cout << fmt::format(
        "list failed after {:.1f} MiB received: {}; peak RSS {:.1f} MiB before the list, {:.1f} "
        "MiB after\n",
        counting.bytes->load() / 1048576.0, snapshot.error(), MiB(rss_before), MiB(PeakRssKib()));
    return 0;
  }
  std::cout << fmt::format(
      "one answer of {} CronJobs, {:.1f} MiB received, listed in {:.2f} s: {} objects; peak RSS "
      "{:.1f} MiB before the list, {:.1f} MiB after\n",
      cronjobs, counting.bytes->load() / 1048576.0, Seconds(start), snapshot->objects.size(),
      MiB(rss_before), MiB(PeakRssKib()));
  return 0;
}

int main(int argc, char** argv) {
  using namespace schedwatch;
  if (argc > 1 && std::string(argv[1]) == "bytes") return Bytes(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "onepage") return OnePage(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "shards") return Shards(argc, argv);
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

  auto spec = BenchSpec(directory, server.url(), token, cronjobs,
                        fmt::format("    page_size: {}\n", page_size));
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
    for (const auto& object : snapshot->objects) {
      objects[std::string(object.role())].push_back(object);
    }
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
