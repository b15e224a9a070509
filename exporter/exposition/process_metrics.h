// The process_* metrics every Prometheus client library exports, with their names, help and
// meaning (client_golang's process collector), read from /proc/self.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "exporter/exposition/exposition.h"
#include "schedwatch/result.h"

namespace schedwatch {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  double resident_memory_bytes = 0;
  double virtual_memory_bytes = 0;
  double start_time_seconds = 0;  // Unix seconds
  double open_fds = -1;           // -1: unknown (not exported)
  double max_fds = -1;
};

// Parses the text of /proc/<pid>/stat. `boot_time` is /proc/stat's btime. Pure.
Result<ProcessStats> ParseProcStat(std::string_view stat, long ticks_per_second, long page_size,
                                   std::int64_t boot_time);

// Parses the btime line of /proc/stat. Pure.
Result<std::int64_t> ParseBootTime(std::string_view proc_stat);

// Reads this process' figures from /proc/self.
Result<ProcessStats> ReadProcessStats();

// Appends the families in the form asked for, sorted by name.
void RenderProcessMetrics(const ProcessStats& stats, const ExpositionForm& form, std::string& out);

}  // namespace schedwatch
