// One read of a sidekiq_cron source: `sidekiq_cron_bench SPEC` reads the spec's source `app`
// once and prints the objects, the roles with runs, the seconds taken and the RESP bytes read.
// Peak memory is measured from outside (/usr/bin/time -v), by bench/sidekiq_cron_bench.py.
#include <chrono>
#include <cstdio>
#include <ctime>

#include "sources/catalog.h"
#include "sources/sidekiq_cron/sidekiq_cron_source.h"

int main(int argc, char** argv) {
  using namespace schedwatch;
  if (argc != 2) {
    std::fprintf(stderr, "usage: sidekiq_cron_bench SPEC\n");
    return 2;
  }
  auto spec = LoadSpecFile(argv[1]);
  if (!spec) {
    std::fprintf(stderr, "%s\n", spec.error().c_str());
    return 2;
  }
  SourceOptions options{&spec->sources.at("app"), {}, {}};
  for (const JobSpec& job : spec->jobs) options.jobs.push_back(&job);
  auto source = SidekiqCronSource::Create(options);
  if (!source) {
    std::fprintf(stderr, "%s\n", source.error().c_str());
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  auto snapshot = (*source)->List({static_cast<std::int64_t>(std::time(nullptr)), nullptr});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!snapshot) {
    std::fprintf(stderr, "%s\n", snapshot.error().c_str());
    return 1;
  }
  std::printf("objects=%zu roles_with_runs=%zu problems=%zu seconds=%.3f bytes_read=%llu\n",
              snapshot->objects.size(), snapshot->history.size(), snapshot->problems.size(),
              seconds, static_cast<unsigned long long>((*source)->bytes_read()));
  return 0;
}
