// Prints fire times of cron expressions, for the croniter oracle (croniter_oracle.py).
//
// Reads lines `expr<TAB>zone<TAB>from_unix` on stdin and writes one line per input line:
// `ok<TAB>t1<TAB>t2...` (the next --count fire times strictly after from_unix, or with --prev the
// previous ones at or before it, newest first) or `error<TAB>message`.
// Options: --count N (default 5), --policy wallclock|vixie|celery (default wallclock), --prev,
// --dialect debian|gitlab|celery (default debian).
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "schedwatch/schedule.h"

namespace {

int Usage() {
  std::cerr
      << "usage: next_fire_tool [--count N] [--policy wallclock|vixie|celery] [--prev] [--dialect "
         "debian|gitlab|celery] < lines\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 5;
  bool previous = false;
  schedwatch::DstPolicy policy = schedwatch::DstPolicy::kWallClock;
  schedwatch::CronDialect dialect = schedwatch::CronDialect::kDebianCron;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--count" && i + 1 < argc) {
      count = std::atoi(argv[++i]);
      if (count < 1) return Usage();
    } else if (arg == "--policy" && i + 1 < argc) {
      const std::string_view value = argv[++i];
      if (value == "wallclock") {
        policy = schedwatch::DstPolicy::kWallClock;
      } else if (value == "vixie") {
        policy = schedwatch::DstPolicy::kVixieCron;
      } else if (value == "celery") {
        policy = schedwatch::DstPolicy::kCeleryBeat;
      } else {
        return Usage();
      }
    } else if (arg == "--dialect" && i + 1 < argc) {
      const std::string_view value = argv[++i];
      if (value == "debian") {
        dialect = schedwatch::CronDialect::kDebianCron;
      } else if (value == "gitlab") {
        dialect = schedwatch::CronDialect::kGitLab;
      } else if (value == "celery") {
        dialect = schedwatch::CronDialect::kCelery;
      } else if (value == "sidekiq_cron") {
        dialect = schedwatch::CronDialect::kSidekiqCron;
      } else {
        return Usage();
      }
    } else if (arg == "--prev") {
      previous = true;
    } else {
      return Usage();
    }
  }

  std::string line;
  while (std::getline(std::cin, line)) {
    const std::size_t tab1 = line.find('\t');
    const std::size_t tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string::npos) {
      std::cout << "error\texpected expr<TAB>zone<TAB>from_unix\n";
      continue;
    }
    auto expression = schedwatch::CronExpression::Parse(line.substr(0, tab1), dialect);
    if (!expression) {
      std::cout << "error\t" << expression.error() << '\n';
      continue;
    }
    const std::string zone_name = line.substr(tab1 + 1, tab2 - tab1 - 1);
    const date::time_zone* zone = schedwatch::FindZone(zone_name);
    if (zone == nullptr) {
      std::cout << "error\tunknown time zone \"" << zone_name << "\"\n";
      continue;
    }
    const schedwatch::Schedule schedule(std::move(*expression), zone, policy);
    std::optional<std::int64_t> t = std::strtoll(line.c_str() + tab2 + 1, nullptr, 10);
    std::cout << "ok";
    for (int i = 0; i < count; ++i) {
      t = previous ? schedule.Previous(i == 0 ? *t : *t - 1) : schedule.Next(*t);
      if (!t) break;
      std::cout << '\t' << *t;
    }
    std::cout << '\n';
  }
  return 0;
}
