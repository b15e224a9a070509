#include "exporter/exposition/process_metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

namespace schedwatch {
namespace {

// A /proc/<pid>/stat line whose command name holds a space and a parenthesis.
constexpr const char* kStat =
    "4242 (sched watch) exp) S 1 4242 4242 0 -1 4194560 2010 0 0 0 250 150 0 0 20 0 9 0 "
    "123400 215040000 5120 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";

TEST(ProcessMetricsTest, ParsesProcStat) {
  auto stats = ParseProcStat(kStat, 100, 4096, 1700000000);
  ASSERT_TRUE(stats) << stats.error();
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 4.0);  // (250 + 150) ticks at 100 per second
  EXPECT_DOUBLE_EQ(stats->start_time_seconds, 1700001234.0);
  EXPECT_DOUBLE_EQ(stats->virtual_memory_bytes, 215040000.0);
  EXPECT_DOUBLE_EQ(stats->resident_memory_bytes, 5120.0 * 4096);
}

TEST(ProcessMetricsTest, RefusesTruncatedOrGarbledStat) {
  EXPECT_FALSE(ParseProcStat("4242 (x) S 1 2 3", 100, 4096, 0));
  EXPECT_FALSE(ParseProcStat("no parenthesis at all", 100, 4096, 0));
  std::string garbled = kStat;
  garbled.replace(garbled.find(" 250 "), 5, " 2x0 ");
  EXPECT_FALSE(ParseProcStat(garbled, 100, 4096, 0));
}

TEST(ProcessMetricsTest, ParsesBootTime) {
  EXPECT_EQ(*ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1764547200\nprocesses 9\n"), 1764547200);
  EXPECT_FALSE(ParseBootTime("cpu 1 2 3\n"));
}

TEST(ProcessMetricsTest, ReadsThisProcess) {
  auto stats = ReadProcessStats();
  ASSERT_TRUE(stats) << stats.error();
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(stats->start_time_seconds, now - 3600);
  EXPECT_LE(stats->start_time_seconds, now + 1);
  EXPECT_GT(stats->resident_memory_bytes, 0);
  EXPECT_GE(stats->virtual_memory_bytes, stats->resident_memory_bytes);
  EXPECT_GE(stats->open_fds, 3);  // at least stdin, stdout, stderr
  int extra = dup(0);
  auto more = ReadProcessStats();
  close(extra);
  EXPECT_EQ(more->open_fds, stats->open_fds + 1);
  EXPECT_GE(stats->max_fds, stats->open_fds);
}

TEST(ProcessMetricsTest, RendersTheClientLibraryFamilies) {
  ProcessStats stats;
  stats.cpu_seconds = 1.5;
  stats.resident_memory_bytes = 4096;
  stats.virtual_memory_bytes = 8192;
  stats.start_time_seconds = 1700000000.25;
  stats.open_fds = 12;
  stats.max_fds = 1024;
  std::string out;
  RenderProcessMetrics(stats, {}, out);
  EXPECT_EQ(out,
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
            "# TYPE process_cpu_seconds_total counter\n"
            "process_cpu_seconds_total 1.5\n"
            "# HELP process_max_fds Maximum number of open file descriptors.\n"
            "# TYPE process_max_fds gauge\n"
            "process_max_fds 1024\n"
            "# HELP process_open_fds Number of open file descriptors.\n"
            "# TYPE process_open_fds gauge\n"
            "process_open_fds 12\n"
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
            "# TYPE process_resident_memory_bytes gauge\n"
            "process_resident_memory_bytes 4096\n"
            "# HELP process_start_time_seconds Start time of the process since unix epoch in "
            "seconds.\n"
            "# TYPE process_start_time_seconds gauge\n"
            "process_start_time_seconds 1700000000.25\n"
            "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
            "# TYPE process_virtual_memory_bytes gauge\n"
            "process_virtual_memory_bytes 8192\n");
}

}  // namespace
}  // namespace schedwatch
