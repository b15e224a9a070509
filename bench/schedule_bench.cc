// Times the schedule pipeline the exporter runs per job: parse, Next, Previous and Period for
// 100,000 generated expressions in several zones, and prints the figures.
//
// Usage: schedule_bench [count]   (default 100000)
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "schedwatch/schedule.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A realistic mix: hourly-ish, weekday, every-N-minutes, monthly, daily macros, leap days.
std::string Generate(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  static const int kSteps[] = {1, 2, 5, 10, 15, 20, 30};
  switch (pick(0, 9)) {
    case 0:
    case 1:
      return std::to_string(pick(0, 59)) + " */" + std::to_string(pick(1, 12)) + " * * *";
    case 2:
    case 3:
      return std::to_string(pick(0, 59)) + " " + std::to_string(pick(0, 23)) + " * * 1-5";
    case 4:
    case 5:
      return "*/" + std::to_string(kSteps[pick(0, 6)]) + " * * * *";
    case 6:
      return std::to_string(pick(0, 59)) + " " + std::to_string(pick(0, 23)) + " " +
             std::to_string(pick(1, 28)) + " * *";
    case 7:
      return "@daily";
    case 8:
      return std::to_string(pick(0, 59)) + " " + std::to_string(pick(0, 23)) + " * * " +
             std::to_string(pick(0, 6));
    default:
      return "0 0 29 2 *";
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 100000;
  const char* zone_names[] = {"UTC", "Asia/Seoul", "Europe/Berlin", "America/New_York",
                              "Australia/Sydney"};
  std::mt19937 rng(42);
  std::vector<std::string> texts;
  texts.reserve(count);
  for (int i = 0; i < count; ++i) texts.push_back(Generate(rng));
  const std::int64_t reference = 1767225600;  // 2026-01-01T00:00:00Z
  std::vector<std::int64_t> instants;
  instants.reserve(count);
  for (int i = 0; i < count; ++i) {
    instants.push_back(reference +
                       std::uniform_int_distribution<std::int64_t>(0, 365 * 86400)(rng));
  }

  const Clock::time_point total = Clock::now();
  Clock::time_point start = Clock::now();
  const date::time_zone* zones[5];
  for (int z = 0; z < 5; ++z) zones[z] = schedwatch::FindZone(zone_names[z]);
  const double zone_seconds = Seconds(start);

  start = Clock::now();
  std::vector<schedwatch::Schedule> schedules;
  schedules.reserve(count);
  for (int i = 0; i < count; ++i) {
    auto expression = schedwatch::CronExpression::Parse(texts[i]);
    if (!expression) {
      std::fprintf(stderr, "parse failed: %s: %s\n", texts[i].c_str(), expression.error().c_str());
      return 1;
    }
    schedules.emplace_back(
        std::move(*expression), zones[i % 5],
        i % 2 ? schedwatch::DstPolicy::kVixieCron : schedwatch::DstPolicy::kWallClock);
  }
  const double parse_seconds = Seconds(start);

  start = Clock::now();
  std::int64_t checksum = 0;
  for (int i = 0; i < count; ++i) {
    checksum += schedules[i].Next(instants[i]).value_or(0);
    checksum += schedules[i].Previous(instants[i]).value_or(0);
  }
  const double next_seconds = Seconds(start);

  start = Clock::now();
  std::int64_t longest = 0;
  for (int i = 0; i < count; ++i) {
    const std::int64_t period = schedules[i].Period(reference).value_or(0);
    checksum += period;
    if (period > longest) longest = period;
  }
  const double period_seconds = Seconds(start);
  const double total_seconds = Seconds(total);

  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("schedules:            %d (5 zones, both DST policies)\n", count);
  std::printf("zone lookup (5):      %8.3f ms (first use loads the tz database)\n",
              zone_seconds * 1e3);
  std::printf("parse:                %8.3f ms  (%.0f ns each)\n", parse_seconds * 1e3,
              parse_seconds * 1e9 / count);
  std::printf("next + previous:      %8.3f ms  (%.0f ns per pair)\n", next_seconds * 1e3,
              next_seconds * 1e9 / count);
  std::printf("period:               %8.3f ms  (%.0f ns each)\n", period_seconds * 1e3,
              period_seconds * 1e9 / count);
  std::printf("total:                %8.3f ms\n", total_seconds * 1e3);
  std::printf("peak RSS:             %ld KiB\n", usage.ru_maxrss);
  std::printf("longest period:       %lld s (checksum %lld)\n", static_cast<long long>(longest),
              static_cast<long long>(checksum));
  return 0;
}
