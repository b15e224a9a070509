// Cron expressions in every scheduler dialect, evaluated in UTC and a zone
// with DST under each DST policy. A Celery crontab row's fields joined by spaces is one of them.
// Input: the expression, optionally "\n" and an IANA zone name to evaluate it in instead of
// America/New_York.
#include <limits>

#include "fuzz/fuzz_util.h"
#include "schedwatch/schedule.h"
#include "schedwatch/spec.h"

namespace {

using namespace schedwatch;

// Around DST changes in New York and Berlin, the period reference, and the extremes.
constexpr std::int64_t kInstants[] = {kPeriodReference,
                                      1710054000,  // 2024-03-10 07:00Z, US spring forward
                                      1730595600,  // 2024-11-03 01:00Z, US fall back
                                      1711846800,  // 2024-03-31 01:00Z, EU spring forward
                                      0,
                                      -1,
                                      std::numeric_limits<std::int64_t>::min(),
                                      std::numeric_limits<std::int64_t>::max()};

void Evaluate(const CronExpression& expression, const date::time_zone* zone) {
  for (DstPolicy policy : {DstPolicy::kVixieCron, DstPolicy::kWallClock, DstPolicy::kCeleryBeat}) {
    Schedule schedule(expression, zone, policy);
    for (std::int64_t at : kInstants) {
      schedule.Next(at);
      schedule.Previous(at);
    }
    schedule.Period(kPeriodReference);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::AsText(data, size);
  std::string_view zone_name = "America/New_York";
  if (auto newline = text.find('\n'); newline != std::string_view::npos) {
    zone_name = text.substr(newline + 1);
    text = text.substr(0, newline);
  }
  static const date::time_zone* utc = FindZone("UTC");
  const date::time_zone* zone = FindZone(zone_name);
  for (CronDialect dialect :
       {CronDialect::kDebianCron, CronDialect::kKubernetes, CronDialect::kGitHubActions,
        CronDialect::kGitLab, CronDialect::kCelery}) {
    auto expression = CronExpression::Parse(text, dialect);
    if (!expression) continue;
    if (!expression->Equivalent(*expression)) __builtin_trap();  // equivalence is reflexive
    Evaluate(*expression, utc);
    if (zone != nullptr) Evaluate(*expression, zone);
  }
  return 0;
}
