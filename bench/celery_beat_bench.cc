// One read of django-celery-beat's tables as the celery_beat source makes it: the SELECT, every
// row parsed, the marked ones made live objects, beat judged up or down. Prints the rows, the
// bytes received, the time and the process's peak resident memory (VmHWM).
//
//   celery_beat_bench DSN      (sqlite:///path or a libpq connection string)
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <string>

#include "sources/celery_beat/celery_beat_db.h"
#include "sources/celery_beat/celery_beat_mapping.h"

int main(int argc, char** argv) {
  using namespace schedwatch;
  if (argc != 2) {
    fmt::print(stderr, "usage: celery_beat_bench DSN\n");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  auto tables = celery_beat::ReadTables(argv[1], std::chrono::seconds(60), nullptr);
  if (!tables) {
    fmt::print(stderr, "{}\n", tables.error());
    return 1;
  }
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  std::vector<celery_beat::Task> tasks;
  std::size_t objects = 0;
  for (const auto& row : tables->tasks) {
    auto task = celery_beat::ParseTask(row);
    if (!task) continue;
    if (task->marker && *task->marker) {
      celery_beat::MakeLiveObject(*task, **task->marker, now);
      ++objects;
    }
    tasks.push_back(std::move(*task));
  }
  const bool down = celery_beat::BeatDown(tasks, now, 300).has_value();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string peak = "?";
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) peak = line.substr(6);
  }
  fmt::print("rows={} objects={} results={} bytes={} beat_down={} seconds={:.3f} peak={}\n",
             tables->tasks.size(), objects, tables->results ? tables->results->size() : 0,
             tables->bytes, down, seconds, peak);
  return 0;
}
