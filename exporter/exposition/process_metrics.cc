#include "exporter/exposition/process_metrics.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace schedwatch {
namespace {

// /proc files are small and not regular files of a size fstat could tell: read them whole.
std::string ReadProcFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<double> ParseNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return value;
}

int CountOpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count - 1;  // the descriptor opendir holds
}

void Family(std::string& out, const char* name, metrics::Type type, const char* help, double value,
            const ExpositionForm& form) {
  const metrics::Metric metric{name, type, "", help};
  AppendHeader(out, metric, form);
  fmt::format_to(std::back_inserter(out), "{} {}\n", name, value);
}

}  // namespace

Result<ProcessStats> ParseProcStat(std::string_view stat, long ticks_per_second, long page_size,
                                   std::int64_t boot_time) {
  // The command name (field 2) is in parentheses and may itself hold spaces and parentheses.
  auto close = stat.rfind(')');
  if (close == std::string_view::npos) return Error{"no command name in /proc/self/stat"};
  std::istringstream fields{std::string(stat.substr(close + 1))};
  std::vector<std::string> values;  // values[0] is field 3 (state)
  for (std::string value; fields >> value;) values.push_back(value);
  auto field = [&](std::size_t number) -> std::optional<double> {
    if (number < 3 || number - 3 >= values.size()) return std::nullopt;
    return ParseNumber(values[number - 3]);
  };
  auto utime = field(14), stime = field(15), start = field(22), vsize = field(23), rss = field(24);
  if (!utime || !stime || !start || !vsize || !rss || ticks_per_second <= 0) {
    return Error{"/proc/self/stat is too short or not numeric"};
  }
  ProcessStats stats;
  stats.cpu_seconds = (*utime + *stime) / static_cast<double>(ticks_per_second);
  stats.start_time_seconds =
      static_cast<double>(boot_time) + *start / static_cast<double>(ticks_per_second);
  stats.virtual_memory_bytes = *vsize;
  stats.resident_memory_bytes = *rss * static_cast<double>(page_size);
  return stats;
}

Result<std::int64_t> ParseBootTime(std::string_view proc_stat) {
  std::istringstream lines{std::string(proc_stat)};
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("btime ", 0) != 0) continue;
    auto value = ParseNumber(line.substr(6));
    if (value) return static_cast<std::int64_t>(*value);
  }
  return Error{"no btime line in /proc/stat"};
}

Result<ProcessStats> ReadProcessStats() {
  auto boot_time = ParseBootTime(ReadProcFile("/proc/stat"));
  if (!boot_time) return Error{boot_time.error()};
  auto stats = ParseProcStat(ReadProcFile("/proc/self/stat"), sysconf(_SC_CLK_TCK),
                             sysconf(_SC_PAGESIZE), *boot_time);
  if (!stats) return stats;
  stats->open_fds = CountOpenFds();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    stats->max_fds = static_cast<double>(limit.rlim_cur);
  }
  return stats;
}

void RenderProcessMetrics(const ProcessStats& stats, const ExpositionForm& form, std::string& out) {
  using metrics::Type;
  Family(out, "process_cpu_seconds_total", Type::kCounter,
         "Total user and system CPU time spent in seconds.", stats.cpu_seconds, form);
  if (form.open_metrics) {  // counted from the process' start
    fmt::format_to(std::back_inserter(out), "process_cpu_seconds_created {}\n",
                   stats.start_time_seconds);
  }
  if (stats.max_fds >= 0) {
    Family(out, "process_max_fds", Type::kGauge, "Maximum number of open file descriptors.",
           stats.max_fds, form);
  }
  if (stats.open_fds >= 0) {
    Family(out, "process_open_fds", Type::kGauge, "Number of open file descriptors.",
           stats.open_fds, form);
  }
  Family(out, "process_resident_memory_bytes", Type::kGauge, "Resident memory size in bytes.",
         stats.resident_memory_bytes, form);
  Family(out, "process_start_time_seconds", Type::kGauge,
         "Start time of the process since unix epoch in seconds.", stats.start_time_seconds, form);
  Family(out, "process_virtual_memory_bytes", Type::kGauge, "Virtual memory size in bytes.",
         stats.virtual_memory_bytes, form);
}

}  // namespace schedwatch
