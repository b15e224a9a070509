// Cron parsing, fire times, DST policies and periods (core/src/schedule.cc).
#include "schedwatch/schedule.h"

#include <date/tz.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace schedwatch {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

constexpr std::int64_t kHour = 3600;
constexpr std::int64_t kDay = 86400;

std::int64_t Utc(int y, int mo, int d, int h = 0, int mi = 0) {
  const auto t = date::sys_days{date::year{y} / mo / d} + hours{h} + minutes{mi};
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

// A wall-clock time that exists once in the zone.
std::int64_t Local(const char* zone, int y, int mo, int d, int h, int mi) {
  const auto local = date::local_days{date::year{y} / mo / d} + hours{h} + minutes{mi};
  const auto sys = FindZone(zone)->to_sys(local);
  return std::chrono::duration_cast<std::chrono::seconds>(sys.time_since_epoch()).count();
}

CronExpression Cron(const std::string& text) {
  auto parsed = CronExpression::Parse(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error());
  return parsed.ok() ? *parsed : CronExpression();
}

Schedule Make(const std::string& text, const char* zone = "UTC",
              DstPolicy policy = DstPolicy::kWallClock) {
  const date::time_zone* tz = FindZone(zone);
  EXPECT_NE(tz, nullptr) << zone;
  return Schedule(Cron(text), tz, policy);
}

std::string ParseError(const std::string& text, CronDialect dialect = CronDialect::kDebianCron) {
  auto parsed = CronExpression::Parse(text, dialect);
  return parsed.ok() ? "(parsed)" : parsed.error();
}

Schedule Kubernetes(const std::string& text) {
  auto parsed = CronExpression::Parse(text, CronDialect::kKubernetes);
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error());
  return Schedule(parsed.ok() ? *parsed : CronExpression(), FindZone("UTC"), DstPolicy::kWallClock);
}

// The next `count` fire times after `after`.
std::vector<std::int64_t> Fires(const Schedule& schedule, std::int64_t after, int count) {
  std::vector<std::int64_t> fires;
  std::optional<std::int64_t> t = after;
  while (static_cast<int>(fires.size()) < count && (t = schedule.Next(*t))) fires.push_back(*t);
  return fires;
}

// ----------------------------------------------------------------------------------------------
// Parsing.

TEST(CronParseTest, RejectsWrongFieldCount) {
  EXPECT_EQ(ParseError("*/10 * * *"),
            "expected 5 fields (minute hour day-of-month month day-of-week), got 4");
  EXPECT_EQ(ParseError("0 0 * * * /usr/bin/backup"),
            "expected 5 fields (minute hour day-of-month month day-of-week), got 6");
  EXPECT_EQ(ParseError("   "),
            "expected 5 fields (minute hour day-of-month month day-of-week), got 0");
}

TEST(CronParseTest, RejectsOutOfRangeValues) {
  EXPECT_EQ(ParseError("61 * * * *"), "minute field \"61\": 61 is out of range 0-59");
  EXPECT_EQ(ParseError("0 24 * * *"), "hour field \"24\": 24 is out of range 0-23");
  EXPECT_EQ(ParseError("0 0 0 * *"), "day-of-month field \"0\": 0 is out of range 1-31");
  EXPECT_EQ(ParseError("0 0 32 * *"), "day-of-month field \"32\": 32 is out of range 1-31");
  EXPECT_EQ(ParseError("0 0 * 13 *"), "month field \"13\": 13 is out of range 1-12");
  EXPECT_EQ(ParseError("0 0 * * 8"), "day-of-week field \"8\": 8 is out of range 0-7");
  EXPECT_EQ(ParseError("1-70 * * * *"), "minute field \"1-70\": 70 is out of range 0-59");
  EXPECT_EQ(ParseError("99999999999 * * * *"),
            "minute field \"99999999999\": 99999999999 is out of range 0-59");
}

TEST(CronParseTest, RejectsZeroStep) {
  EXPECT_EQ(ParseError("0 */0 * * *"), "hour field \"*/0\": step must be at least 1");
  EXPECT_EQ(ParseError("0-30/0 * * * *"), "minute field \"0-30/0\": step must be at least 1");
}

TEST(CronParseTest, RejectsUnknownNames) {
  EXPECT_EQ(ParseError("0 0 1 foo *"), "month field \"foo\": unknown name \"foo\"");
  EXPECT_EQ(ParseError("0 0 * * monday"), "day-of-week field \"monday\": unknown name \"monday\"");
  EXPECT_EQ(ParseError("0 0 * jan,febr *"), "month field \"jan,febr\": unknown name \"febr\"");
  EXPECT_EQ(ParseError("0 jan * * *"), "hour field \"jan\": \"jan\" is not a number");
}

TEST(CronParseTest, RejectsBackwardRanges) {
  EXPECT_EQ(ParseError("0 0 * * 5-2"),
            "day-of-week field \"5-2\": range start 5 is after its end 2");
  EXPECT_EQ(ParseError("30-10 * * * *"),
            "minute field \"30-10\": range start 30 is after its end 10");
}

// Debian's cron 3.0pl1 accepts names as range ends and with steps (measured against the daemon),
// and so does Kubernetes.
TEST(CronParseTest, AcceptsNamesInRanges) {
  auto weekdays = CronExpression::Parse("0 9 * * mon-fri");
  ASSERT_TRUE(weekdays.ok()) << weekdays.error();
  EXPECT_TRUE(weekdays->Equivalent(*CronExpression::Parse("0 9 * * 1-5")));
  auto quarters = CronExpression::Parse("0 0 1 Jan-dec/3 *");
  ASSERT_TRUE(quarters.ok()) << quarters.error();
  EXPECT_TRUE(quarters->Equivalent(*CronExpression::Parse("0 0 1 1,4,7,10 *")));
  EXPECT_TRUE(
      CronExpression::Parse("0 0 * * 1-fri")->Equivalent(*CronExpression::Parse("0 0 * * 1-5")));
  EXPECT_EQ(ParseError("0 0 * * fri-mon"),
            "day-of-week field \"fri-mon\": range start 5 is after its end 1");
}

TEST(CronParseTest, RejectsEmptyItemsAndTrailingGarbage) {
  EXPECT_EQ(ParseError("1,,2 * * * *"), "minute field \"1,,2\": empty list item");
  EXPECT_EQ(ParseError("5, * * * *"), "minute field \"5,\": empty list item");
  EXPECT_EQ(ParseError(",5 * * * *"), "minute field \",5\": empty list item");
  EXPECT_EQ(ParseError("5x * * * *"), "minute field \"5x\": \"5x\" is not a number");
  EXPECT_EQ(ParseError("*/5x * * * *"), "minute field \"*/5x\": step \"5x\" is not a number");
  EXPECT_EQ(ParseError("0 0 * * 1#2"), "day-of-week field \"1#2\": unexpected \"#2\"");
  EXPECT_EQ(ParseError("0 0 L * *"), "day-of-month field \"L\": \"L\" is not a number");
  EXPECT_EQ(ParseError("*5 * * * *"), "minute field \"*5\": unexpected \"5\"");
  EXPECT_EQ(ParseError("1-5/2/3 * * * *"), "minute field \"1-5/2/3\": unexpected \"/3\"");
  EXPECT_EQ(ParseError("5- * * * *"), "minute field \"5-\": missing range end after \"5-\"");
  EXPECT_EQ(ParseError("*/ * * * *"), "minute field \"*/\": missing step after \"/\"");
  EXPECT_EQ(ParseError("-5 * * * *"),
            "minute field \"-5\": expected a number or \"*\", got \"-5\"");
  EXPECT_EQ(ParseError("0 0 ? * *"),
            "day-of-month field \"?\": expected a number or \"*\", got \"?\"");
  EXPECT_EQ(ParseError("0 0 * ? *"),
            "month field \"?\": expected a number, a name or \"*\", got \"?\"");
}

TEST(CronParseTest, RejectsUnknownMacrosAndReboot) {
  EXPECT_EQ(ParseError("@sometimes"), "unknown macro \"@sometimes\"");
  EXPECT_EQ(ParseError("@daily /usr/bin/backup"), "unexpected text after \"@daily\"");
  EXPECT_EQ(ParseError("@reboot", CronDialect::kKubernetes),
            "@reboot has no fire times and is only allowed for crontab sources");
}

TEST(CronParseTest, AcceptsRebootForCrontabs) {
  auto parsed = CronExpression::Parse("@reboot");
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->is_reboot());
  const Schedule schedule(*parsed, FindZone("UTC"), DstPolicy::kVixieCron);
  EXPECT_EQ(schedule.Next(Utc(2026, 1, 1)), std::nullopt);
  EXPECT_EQ(schedule.Previous(Utc(2026, 1, 1)), std::nullopt);
  EXPECT_EQ(schedule.Period(Utc(2026, 1, 1)), std::nullopt);
  EXPECT_TRUE(parsed->Equivalent(Cron("@REBOOT")));
  EXPECT_FALSE(parsed->Equivalent(Cron("@daily")));
}

TEST(CronParseTest, KeepsTrimmedText) {
  EXPECT_EQ(Cron("  */5\t* *  * *\n").text(), "*/5\t* *  * *");
  EXPECT_EQ(Cron("@Daily").text(), "@Daily");
}

TEST(CronParseTest, ParsesListsRangesAndSteps) {
  const CronExpression e = Cron("1,5,10-12,50-59/4 */6 * * *");
  std::vector<int> minutes;
  for (int m = 0; m < 60; ++m) {
    if (e.MatchesMinute(m)) minutes.push_back(m);
  }
  EXPECT_EQ(minutes, (std::vector<int>{1, 5, 10, 11, 12, 50, 54, 58}));
  std::vector<int> hours;
  for (int h = 0; h < 24; ++h) {
    if (e.MatchesHour(h)) hours.push_back(h);
  }
  EXPECT_EQ(hours, (std::vector<int>{0, 6, 12, 18}));
}

TEST(CronParseTest, SingleValueWithStepRunsToTheEndOfTheRange) {
  EXPECT_TRUE(Cron("10/20 * * * *").Equivalent(Cron("10,30,50 * * * *")));
  EXPECT_TRUE(Cron("0 20/2 * * *").Equivalent(Cron("0 20,22 * * *")));
  EXPECT_TRUE(Cron("0 0 * * 5/1").Equivalent(Cron("0 0 * * 5,6,0")));  // 5-7: 7 is Sunday
}

TEST(CronParseTest, AcceptsNamesInAnyCase) {
  EXPECT_TRUE(Cron("0 0 1 JAN,jul *").Equivalent(Cron("0 0 1 1,7 *")));
  EXPECT_TRUE(Cron("0 0 * * Sun,WED").Equivalent(Cron("0 0 * * 0,3")));
  EXPECT_TRUE(Cron("0 0 1 dec *").Equivalent(Cron("0 0 1 12 *")));
}

TEST(CronParseTest, ZeroAndSevenAreSunday) {
  const CronExpression seven = Cron("0 0 * * 7");
  EXPECT_TRUE(seven.Equivalent(Cron("0 0 * * 0")));
  EXPECT_TRUE(seven.Equivalent(Cron("0 0 * * sun")));
  EXPECT_TRUE(seven.MatchesDay(3, 1, 0));
  EXPECT_FALSE(seven.MatchesDay(3, 2, 1));
  EXPECT_TRUE(Cron("0 0 * * 0-7").Equivalent(Cron("0 0 * * *")));
  EXPECT_TRUE(Cron("0 0 * * 6-7").Equivalent(Cron("0 0 * * 0,6")));
}

TEST(CronParseTest, MacrosExpandToTheirFields) {
  EXPECT_TRUE(Cron("@yearly").Equivalent(Cron("0 0 1 1 *")));
  EXPECT_TRUE(Cron("@annually").Equivalent(Cron("0 0 1 1 *")));
  EXPECT_TRUE(Cron("@monthly").Equivalent(Cron("0 0 1 * *")));
  EXPECT_TRUE(Cron("@weekly").Equivalent(Cron("0 0 * * 0")));
  EXPECT_FALSE(Cron("@weekly").Equivalent(Cron("0 0 * * *")));
  EXPECT_TRUE(Cron("@daily").Equivalent(Cron("0 0 * * *")));
  EXPECT_TRUE(Cron("@midnight").Equivalent(Cron("0 0 * * *")));
  EXPECT_TRUE(Cron("@HOURLY").Equivalent(Cron("0 * * * *")));
  EXPECT_TRUE(Cron("@daily").fixed_time());
  EXPECT_FALSE(Cron("@hourly").fixed_time());  // Vixie cron flags @hourly's hour as '*'
}

TEST(CronParseTest, FixedTimeMeansNeitherMinuteNorHourStartsWithStar) {
  EXPECT_TRUE(Cron("30 2 * * *").fixed_time());
  EXPECT_TRUE(Cron("0,30 1-3 * * *").fixed_time());
  EXPECT_FALSE(Cron("*/30 2 * * *").fixed_time());
  EXPECT_FALSE(Cron("30 * * * *").fixed_time());
  EXPECT_FALSE(Cron("30 */2 * * *").fixed_time());
}

TEST(CronParseTest, EquivalentComparesFireTimesNotText) {
  EXPECT_TRUE(Cron("*/15 * * * *").Equivalent(Cron("0,15,30,45 * * * *")));
  EXPECT_TRUE(Cron("0 0 * * 1-7").Equivalent(Cron("0 0 * * *")));
  EXPECT_TRUE(Cron("0 0 1-31 * 1").Equivalent(Cron("0 0 * * *")));  // OR with every day
  EXPECT_TRUE(Cron("0 0 30 2 *").Equivalent(Cron("5 0 31 4 *")));   // both never fire
  EXPECT_FALSE(Cron("0 0 1 * 1").Equivalent(Cron("0 0 1 * *")));
  EXPECT_FALSE(Cron("*/15 * * * *").Equivalent(Cron("*/20 * * * *")));
  EXPECT_FALSE(Cron("0 0 */2 * sun").Equivalent(Cron("0 0 1-31/2 * sun")));
}

// ----------------------------------------------------------------------------------------------
// Day-of-month / day-of-week rule.

TEST(CronDayRuleTest, BothRestrictedMeansEither) {
  const CronExpression e = Cron("30 4 1,15 * 5");
  EXPECT_TRUE(e.MatchesDay(1, 1, 4));    // the 1st, a Thursday
  EXPECT_TRUE(e.MatchesDay(1, 2, 5));    // a Friday
  EXPECT_TRUE(e.MatchesDay(1, 15, 4));   // the 15th
  EXPECT_FALSE(e.MatchesDay(1, 14, 3));  // neither
  // 2026-01-01 is a Thursday.
  EXPECT_EQ(Fires(Make("30 4 1,15 * 5"), Utc(2026, 1, 1), 5),
            (std::vector<std::int64_t>{Utc(2026, 1, 1, 4, 30), Utc(2026, 1, 2, 4, 30),
                                       Utc(2026, 1, 9, 4, 30), Utc(2026, 1, 15, 4, 30),
                                       Utc(2026, 1, 16, 4, 30)}));
}

TEST(CronDayRuleTest, StarPrefixedFieldMeansBoth) {
  // Debian: `*/2` starts with '*', so the day fields combine with AND: Sundays with odd dates.
  const CronExpression e = Cron("0 0 */2 * sun");
  EXPECT_FALSE(e.MatchesDay(1, 4, 0));  // Sunday the 4th
  EXPECT_TRUE(e.MatchesDay(1, 11, 0));  // Sunday the 11th
  EXPECT_FALSE(e.MatchesDay(1, 3, 6));  // odd date, not a Sunday
  EXPECT_EQ(Make("0 0 */2 * sun").Next(Utc(2026, 1, 1)), Utc(2026, 1, 11));
  // The same days written without the leading '*' are restricted: either matches.
  EXPECT_TRUE(Cron("0 0 1-31/2 * sun").MatchesDay(1, 4, 0));
  EXPECT_TRUE(Cron("0 0 1-31/2 * sun").MatchesDay(1, 3, 6));
}

TEST(CronDayRuleTest, StarDayOfWeekUsesDayOfMonthOnly) {
  EXPECT_EQ(Make("0 0 13 * *").Next(Utc(2026, 1, 1)), Utc(2026, 1, 13));
  EXPECT_EQ(Make("0 0 * * 1").Next(Utc(2026, 1, 1)), Utc(2026, 1, 5));
  EXPECT_EQ(Make("0 0 13 * */7").Next(Utc(2026, 1, 1)), Utc(2026, 9, 13));  // Sunday the 13th
}

// ----------------------------------------------------------------------------------------------
// Next and Previous.

TEST(ScheduleTest, NextIsStrictlyAfterAndPreviousIsAtOrBefore) {
  const Schedule s = Make("*/10 * * * *");
  const std::int64_t t = Utc(2026, 1, 1);
  EXPECT_EQ(s.Next(t), t + 600);
  EXPECT_EQ(s.Next(t - 1), t);
  EXPECT_EQ(s.Previous(t), t);
  EXPECT_EQ(s.Previous(t - 1), t - 600);
  EXPECT_EQ(s.Next(t + 599), t + 600);
}

TEST(ScheduleTest, WeekdaysSkipTheWeekend) {
  const Schedule s = Make("0 9 * * 1-5");
  EXPECT_EQ(s.Next(Utc(2026, 1, 2, 10)), Utc(2026, 1, 5, 9));  // Friday -> Monday
  EXPECT_EQ(s.Previous(Utc(2026, 1, 5, 8)), Utc(2026, 1, 2, 9));
}

TEST(ScheduleTest, CrossesMonthAndYearEnds) {
  EXPECT_EQ(Make("15 3 31 * *").Next(Utc(2026, 1, 31, 4)), Utc(2026, 3, 31, 3, 15));
  EXPECT_EQ(Make("0 0 1 1 *").Next(Utc(2026, 1, 1)), Utc(2027, 1, 1));
  EXPECT_EQ(Make("0 0 1 1 *").Previous(Utc(2026, 12, 31)), Utc(2026, 1, 1));
  EXPECT_EQ(Make("59 23 31 12 *").Previous(Utc(2026, 6, 1)), Utc(2025, 12, 31, 23, 59));
}

TEST(ScheduleTest, FindsLeapDays) {
  EXPECT_EQ(Make("0 0 29 2 *").Next(Utc(2026, 1, 1)), Utc(2028, 2, 29));
  EXPECT_EQ(Make("0 0 29 2 *").Previous(Utc(2026, 1, 1)), Utc(2024, 2, 29));
  // Leap days on a Sunday (AND, since the weekday field starts with '*'): 2088 -> 2128, across
  // the non-leap 2100.
  const Schedule s = Make("0 0 29 2 */7");
  EXPECT_EQ(s.Next(Utc(2088, 3, 1)), Utc(2128, 2, 29));
  EXPECT_EQ(s.Previous(Utc(2128, 2, 28)), Utc(2088, 2, 29));
}

TEST(ScheduleTest, NeverFiringExpressionsTerminate) {
  for (const char* text : {"0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31 2 */7"}) {
    const Schedule s = Make(text);
    EXPECT_EQ(s.Next(Utc(2026, 1, 1)), std::nullopt) << text;
    EXPECT_EQ(s.Previous(Utc(2026, 1, 1)), std::nullopt) << text;
    EXPECT_EQ(s.Period(Utc(2026, 1, 1)), std::nullopt) << text;
  }
  EXPECT_EQ(Schedule().Next(0), std::nullopt);
}

TEST(ScheduleTest, UsesTheZonesWallClock) {
  // 09:00 in Seoul (UTC+9) is midnight UTC.
  EXPECT_EQ(Make("0 9 * * *", "Asia/Seoul").Next(Utc(2026, 1, 1)), Utc(2026, 1, 2));
  // 05:30 in Kolkata (UTC+5:30) is midnight UTC.
  EXPECT_EQ(Make("30 5 * * *", "Asia/Kolkata").Next(Utc(2026, 1, 1)), Utc(2026, 1, 2));
  EXPECT_EQ(Make("0 0 * * *", "America/New_York").Next(Utc(2026, 1, 1)), Utc(2026, 1, 1, 5));
}

TEST(ScheduleTest, HandlesTimesBefore1970AndOutOfRangeInputs) {
  const Schedule s = Make("*/5 * * * *");
  EXPECT_EQ(s.Next(-1), 0);
  EXPECT_EQ(s.Previous(-1), -300);
  EXPECT_EQ(Make("0 0 1 1 *").Previous(Utc(1901, 6, 1)), Utc(1901, 1, 1));
  EXPECT_EQ(s.Next(std::numeric_limits<std::int64_t>::max()), std::nullopt);
  EXPECT_EQ(s.Previous(std::numeric_limits<std::int64_t>::min()), std::nullopt);
  EXPECT_TRUE(s.Next(std::numeric_limits<std::int64_t>::min()).has_value());
  // Without a zone, UTC.
  const Schedule no_zone(Cron("0 9 * * *"), nullptr, DstPolicy::kWallClock);
  EXPECT_EQ(no_zone.Next(Utc(2026, 1, 1)), Utc(2026, 1, 1, 9));
  EXPECT_EQ(no_zone.Period(Utc(2026, 1, 1)), kDay);
}

TEST(ScheduleTest, FindZoneResolvesAndCaches) {
  const date::time_zone* seoul = FindZone("Asia/Seoul");
  ASSERT_NE(seoul, nullptr);
  EXPECT_EQ(FindZone("Asia/Seoul"), seoul);
  EXPECT_NE(FindZone("UTC"), nullptr);
  EXPECT_EQ(FindZone("Asia/Nowhere"), nullptr);
  EXPECT_EQ(FindZone(""), nullptr);
}

// ----------------------------------------------------------------------------------------------
// DST. Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00 UTC); 2026-10-25 03:00 CEST ->
// 02:00 CET (01:00 UTC), so 02:00-02:59 happens twice.

TEST(ScheduleDstTest, VixieRunsSkippedFixedTimeJobsAtTheJump) {
  const Schedule s = Make("30 2 * * *", "Europe/Berlin", DstPolicy::kVixieCron);
  EXPECT_EQ(Fires(s, Utc(2026, 3, 28, 12), 2),
            (std::vector<std::int64_t>{Utc(2026, 3, 29, 1), Utc(2026, 3, 30, 0, 30)}));
  EXPECT_EQ(Local("Europe/Berlin", 2026, 3, 29, 3, 0), Utc(2026, 3, 29, 1));
  EXPECT_EQ(s.Previous(Utc(2026, 3, 29, 1)), Utc(2026, 3, 29, 1));
  EXPECT_EQ(s.Previous(Utc(2026, 3, 29, 1) - 1), Utc(2026, 3, 28, 1, 30));
}

TEST(ScheduleDstTest, WallClockSkipsTimesThatDoNotExist) {
  const Schedule s = Make("30 2 * * *", "Europe/Berlin", DstPolicy::kWallClock);
  EXPECT_EQ(Fires(s, Utc(2026, 3, 28, 12), 1),
            (std::vector<std::int64_t>{Utc(2026, 3, 30, 0, 30)}));
  EXPECT_EQ(s.Previous(Utc(2026, 3, 30)), Utc(2026, 3, 28, 1, 30));
}

TEST(ScheduleDstTest, VixieSkipsNonexistentTimesForWildcardJobs) {
  const Schedule s = Make("*/30 * * * *", "Europe/Berlin", DstPolicy::kVixieCron);
  // 01:30 CET, then 03:00 CEST: 02:00 and 02:30 do not exist.
  EXPECT_EQ(Fires(s, Utc(2026, 3, 29, 0, 15), 3),
            (std::vector<std::int64_t>{Utc(2026, 3, 29, 0, 30), Utc(2026, 3, 29, 1),
                                       Utc(2026, 3, 29, 1, 30)}));
}

TEST(ScheduleDstTest, RepeatedHourRunsFixedTimeJobsOnceUnderVixie) {
  const Schedule s = Make("30 2 * * *", "Europe/Berlin", DstPolicy::kVixieCron);
  EXPECT_EQ(Fires(s, Utc(2026, 10, 24, 12), 2),
            (std::vector<std::int64_t>{Utc(2026, 10, 25, 0, 30), Utc(2026, 10, 26, 1, 30)}));
  EXPECT_EQ(s.Previous(Utc(2026, 10, 25, 23)), Utc(2026, 10, 25, 0, 30));
}

TEST(ScheduleDstTest, RepeatedHourRunsWildcardJobsTwiceUnderVixie) {
  const Schedule s = Make("*/30 * * * *", "Europe/Berlin", DstPolicy::kVixieCron);
  // 02:00 and 02:30 CEST, then 02:00 and 02:30 CET.
  EXPECT_EQ(Fires(s, Utc(2026, 10, 24, 23, 45), 4),
            (std::vector<std::int64_t>{Utc(2026, 10, 25, 0), Utc(2026, 10, 25, 0, 30),
                                       Utc(2026, 10, 25, 1), Utc(2026, 10, 25, 1, 30)}));
  EXPECT_EQ(s.Previous(Utc(2026, 10, 25, 1, 10)), Utc(2026, 10, 25, 1));
}

TEST(ScheduleDstTest, RepeatedHourRunsEverythingTwiceUnderWallClock) {
  const Schedule s = Make("30 2 * * *", "Europe/Berlin", DstPolicy::kWallClock);
  EXPECT_EQ(Fires(s, Utc(2026, 10, 24, 12), 3),
            (std::vector<std::int64_t>{Utc(2026, 10, 25, 0, 30), Utc(2026, 10, 25, 1, 30),
                                       Utc(2026, 10, 26, 1, 30)}));
}

TEST(ScheduleDstTest, LordHoweHalfHourShift) {
  // 2026-10-04 02:00 +10:30 -> 02:30 +11 (2026-10-03 15:30 UTC);
  // 2026-04-05 02:00 +11 -> 01:30 +10:30 (2026-04-04 15:00 UTC).
  const std::int64_t spring = Utc(2026, 10, 3, 15, 30);
  const std::int64_t autumn = Utc(2026, 4, 4, 15);
  const Schedule vixie = Make("15 2 * * *", "Australia/Lord_Howe", DstPolicy::kVixieCron);
  const Schedule wall = Make("15 2 * * *", "Australia/Lord_Howe", DstPolicy::kWallClock);
  EXPECT_EQ(vixie.Next(spring - 6 * kHour), spring);
  EXPECT_EQ(wall.Next(spring - 6 * kHour), spring + kDay - 15 * 60);  // 02:15 +11 next day
  const Schedule vixie_repeat = Make("45 1 * * *", "Australia/Lord_Howe", DstPolicy::kVixieCron);
  const Schedule wall_repeat = Make("45 1 * * *", "Australia/Lord_Howe", DstPolicy::kWallClock);
  EXPECT_EQ(Fires(vixie_repeat, autumn - 6 * kHour, 2),
            (std::vector<std::int64_t>{autumn - 15 * 60, autumn + kDay + 15 * 60}));
  EXPECT_EQ(
      Fires(wall_repeat, autumn - 6 * kHour, 3),
      (std::vector<std::int64_t>{autumn - 15 * 60, autumn + 15 * 60, autumn + kDay + 15 * 60}));
}

// ----------------------------------------------------------------------------------------------
// Period.

TEST(SchedulePeriodTest, FrequentSchedules) {
  EXPECT_EQ(Make("*/10 * * * *").Period(Utc(2026, 1, 1)), 600);
  EXPECT_EQ(Make("* * * * *").Period(Utc(2026, 1, 1)), 60);
  EXPECT_EQ(Make("0 */6 * * *").Period(Utc(2026, 1, 1)), 6 * kHour);
  EXPECT_EQ(Make("0 1,2,23 * * *").Period(Utc(2026, 1, 1)), 21 * kHour);
  EXPECT_EQ(Make("*/10 * * * *", "Asia/Seoul").Period(Utc(2026, 1, 1)), 600);
}

TEST(SchedulePeriodTest, WeekdaysOnlyIsFridayToMonday) {
  EXPECT_EQ(Make("0 9 * * 1-5").Period(Utc(2026, 1, 1)), 259200);
  EXPECT_EQ(Make("*/5 9-17 * * 1-5").Period(Utc(2026, 1, 1)), 259200 - 8 * kHour - 55 * 60);
}

TEST(SchedulePeriodTest, RareSchedulesLookAhead) {
  // 2028-02-29 to 2032-02-29: 4 * 365 + 1 days.
  EXPECT_EQ(Make("0 0 29 2 *").Period(Utc(2026, 1, 1)), 126230400);
  EXPECT_EQ(Make("0 0 1 1 *").Period(Utc(2026, 1, 1)), 365 * kDay);
  EXPECT_EQ(Make("0 0 1 1 *").Period(Utc(2027, 6, 1)), 366 * kDay);  // 2028 is a leap year
  EXPECT_EQ(Make("@monthly").Period(Utc(2026, 1, 1)), 31 * kDay);
  EXPECT_EQ(Make("0 0 29 2 */7").Period(Utc(2090, 1, 1)), Utc(2156, 2, 29) - Utc(2128, 2, 29));
}

TEST(SchedulePeriodTest, MidnightInBerlinIncludesTheLongDay) {
  for (DstPolicy policy : {DstPolicy::kVixieCron, DstPolicy::kWallClock}) {
    EXPECT_EQ(Make("0 0 * * *", "Europe/Berlin", policy).Period(Utc(2026, 1, 1)), 25 * kHour);
  }
}

TEST(SchedulePeriodTest, SkippedTimeInBerlinDependsOnThePolicy) {
  // WallClock: 2026-03-28 02:30 CET to 2026-03-30 02:30 CEST, a skipped day minus the lost hour.
  EXPECT_EQ(Make("30 2 * * *", "Europe/Berlin", DstPolicy::kWallClock).Period(Utc(2026, 1, 1)),
            47 * kHour);
  // Vixie: runs at 03:00 CEST on 2026-03-29 and once on 2026-10-25 (02:30 CEST), so the longest
  // gap is 02:30 CEST to 02:30 CET the next day.
  EXPECT_EQ(Make("30 2 * * *", "Europe/Berlin", DstPolicy::kVixieCron).Period(Utc(2026, 1, 1)),
            25 * kHour);
}

TEST(SchedulePeriodTest, CountsGapsAtBothEdgesOfTheYear) {
  // The longest gap is the first one of the year...
  EXPECT_EQ(Make("0 0 1 1,11,12 *").Period(Utc(2026, 1, 1)), Utc(2026, 11, 1) - Utc(2026, 1, 1));
  // ...or one that only whole days in the middle of the year contain (01:00 to 20:00), when
  // the year starts and ends in the middle of a day.
  EXPECT_EQ(Make("0 1,20,21 * * *").Period(Utc(2026, 1, 1, 1, 30)), 19 * kHour);
}

TEST(SchedulePeriodTest, IncludesTheGapAcrossTheYearEnd) {
  // Fires 2026-03-01 and 2026-06-01 in the year from 2026-01-01; the longest gap is from June
  // to the next March.
  EXPECT_EQ(Make("0 0 1 3,6 *").Period(Utc(2026, 1, 1)), Utc(2027, 3, 1) - Utc(2026, 6, 1));
}

// ----------------------------------------------------------------------------------------------
// Properties on random expressions, checked against simple references that look at every real
// minute.

class RandomCron {
 public:
  explicit RandomCron(std::uint32_t seed) : rng_(seed) {}

  std::string Expression() {
    return Field(0, 59, 1) + " " + Field(0, 23, 2) + " " + Field(1, 31, 3) + " " + Field(1, 12, 4) +
           " " + Field(0, 7, 3);
  }

  // `star_weight`: how often the field is a plain '*' (out of 6).
  std::string Field(int lo, int hi, int star_weight) {
    const int kind = Uniform(0, 5 + star_weight);
    if (kind >= 6) return "*";
    switch (kind) {
      case 0:
        return "*/" + std::to_string(Uniform(1, (hi - lo) / 2 + 1));
      case 1:
        return std::to_string(Uniform(lo, hi));
      case 2: {
        const int a = Uniform(lo, hi);
        return std::to_string(a) + "-" + std::to_string(Uniform(a, hi));
      }
      case 3: {
        const int a = Uniform(lo, hi);
        return std::to_string(a) + "-" + std::to_string(Uniform(a, hi)) + "/" +
               std::to_string(Uniform(1, 5));
      }
      case 4:
        return std::to_string(Uniform(lo, hi)) + "," + std::to_string(Uniform(lo, hi)) + "," +
               std::to_string(Uniform(lo, hi));
      default:
        return std::to_string(Uniform(lo, hi)) + "/" + std::to_string(Uniform(1, 9));
    }
  }

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::int64_t Uniform64(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }

 private:
  std::mt19937 rng_;
};

// Offsets of a zone, looked up once per interval.
class OffsetCache {
 public:
  explicit OffsetCache(const date::time_zone* zone) : zone_(zone) {}
  std::int64_t Offset(std::int64_t t) {
    if (t < begin_ || t >= end_) {
      const auto info = zone_->get_info(date::sys_seconds{std::chrono::seconds{t}});
      begin_ = info.begin.time_since_epoch().count();
      end_ = info.end.time_since_epoch().count();
      offset_ = info.offset.count();
    }
    return offset_;
  }

 private:
  const date::time_zone* zone_;
  std::int64_t begin_ = 1, end_ = 0, offset_ = 0;
};

bool MatchesLocalMinute(const CronExpression& e, std::int64_t local_minute) {
  const std::int64_t local_day =
      local_minute >= 0 ? local_minute / 1440 : -((-local_minute + 1439) / 1440);
  const int tod = static_cast<int>(local_minute - local_day * 1440);
  const date::year_month_day ymd{date::sys_days{date::days{local_day}}};
  const int weekday =
      static_cast<int>(date::weekday{date::sys_days{date::days{local_day}}}.c_encoding());
  return e.MatchesMinute(tod % 60) && e.MatchesHour(tod / 60) &&
         e.MatchesDay(static_cast<int>(static_cast<unsigned>(ymd.month())),
                      static_cast<int>(static_cast<unsigned>(ymd.day())), weekday);
}

// Every real minute in (from, to] whose wall clock matches: Kubernetes' rule.
std::vector<std::int64_t> WallClockReference(const CronExpression& e, const date::time_zone* zone,
                                             std::int64_t from, std::int64_t to) {
  OffsetCache offsets(zone);
  std::vector<std::int64_t> fires;
  for (std::int64_t t = (from / 60 + 1) * 60; t <= to; t += 60) {
    if (MatchesLocalMinute(e, (t + offsets.Offset(t)) / 60)) fires.push_back(t);
  }
  return fires;
}

// A minute-by-minute simulation of Debian cron 3.0pl1's main loop (cron.c): virtual time,
// wake-up kinds for clock jumps, wildcard versus fixed-time entries. Fires in (from, to].
std::vector<std::int64_t> VixieReference(const CronExpression& e, const date::time_zone* zone,
                                         std::int64_t from, std::int64_t to) {
  OffsetCache offsets(zone);
  std::vector<std::int64_t> fires;
  auto local_minute = [&](std::int64_t t) { return (t + offsets.Offset(t)) / 60; };
  std::int64_t t = from / 60 * 60;
  std::int64_t time_running = local_minute(t);
  std::int64_t virtual_time = time_running;
  auto find_jobs = [&](std::int64_t vtime, bool do_wild, bool do_nonwild) {
    const bool wild = !e.fixed_time();
    if (((do_wild && wild) || (do_nonwild && !wild)) && MatchesLocalMinute(e, vtime)) {
      if (fires.empty() || fires.back() != t) fires.push_back(t);
    }
  };
  for (t += 60; t <= to; t += 60) {
    const std::int64_t clock_time = local_minute(t);
    if (clock_time == time_running) continue;  // the wall clock did not advance
    time_running = clock_time;
    const std::int64_t diff = time_running - virtual_time;
    if (diff == 1) {
      virtual_time = time_running;
      find_jobs(virtual_time, true, true);
      continue;
    }
    int kind = -1;
    if (diff > -3 * 60) kind = 0;
    if (diff > 0) kind = 1;
    if (diff > 5) kind = 2;
    if (diff > 3 * 60) kind = 3;
    switch (kind) {
      case 1:
        do {
          ++virtual_time;
          find_jobs(virtual_time, true, true);
        } while (virtual_time < time_running);
        break;
      case 2:
        find_jobs(time_running, true, false);
        do {
          ++virtual_time;
          find_jobs(virtual_time, false, true);
        } while (virtual_time < time_running);
        break;
      case 0:
        find_jobs(time_running, true, false);
        break;
      default:
        virtual_time = time_running;
        find_jobs(time_running, true, true);
    }
  }
  return fires;
}

std::vector<std::int64_t> FiresBetween(const Schedule& s, std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> fires;
  for (auto t = s.Next(from); t && *t <= to; t = s.Next(*t)) fires.push_back(*t);
  return fires;
}

std::vector<std::int64_t> FiresBetweenBackwards(const Schedule& s, std::int64_t from,
                                                std::int64_t to) {
  std::vector<std::int64_t> fires;
  for (auto t = s.Previous(to); t && *t > from; t = s.Previous(*t - 1)) fires.push_back(*t);
  std::reverse(fires.begin(), fires.end());
  return fires;
}

// DST transitions of 2026 and 2027 (UTC instants) in the zones under test.
std::vector<std::int64_t> Transitions(const date::time_zone* zone) {
  std::vector<std::int64_t> result;
  std::int64_t t = Utc(2026, 1, 1);
  while (t < Utc(2028, 1, 1)) {
    const auto info = zone->get_info(date::sys_seconds{std::chrono::seconds{t}});
    t = info.end.time_since_epoch().count();
    if (t < Utc(2028, 1, 1)) result.push_back(t);
  }
  return result;
}

constexpr const char* kDstZones[] = {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
                                     "Australia/Sydney"};

TEST(SchedulePropertyTest, MatchesMinuteByMinuteReferencesAroundTransitions) {
  RandomCron random(20260329);
  int compared = 0;
  for (const char* zone_name : kDstZones) {
    const date::time_zone* zone = FindZone(zone_name);
    const std::vector<std::int64_t> transitions = Transitions(zone);
    ASSERT_EQ(transitions.size(), 4u) << zone_name;
    for (std::int64_t transition : transitions) {
      for (int i = 0; i < 40; ++i) {
        // Dense in hours around the transition so that the skipped and repeated hours matter.
        std::string text =
            random.Field(0, 59, 2) + " " + random.Field(0, 23, 2) + " * * " + random.Field(0, 7, 6);
        if (i % 4 == 0) text = random.Expression();
        const CronExpression e = Cron(text);
        const std::int64_t from = transition - 2 * kDay + random.Uniform(0, 3600);
        const std::int64_t to = transition + 2 * kDay;
        for (DstPolicy policy : {DstPolicy::kWallClock, DstPolicy::kVixieCron}) {
          const Schedule s(e, zone, policy);
          const std::vector<std::int64_t> expected = policy == DstPolicy::kWallClock
                                                         ? WallClockReference(e, zone, from, to)
                                                         : VixieReference(e, zone, from, to);
          ASSERT_EQ(FiresBetween(s, from, to), expected)
              << text << " in " << zone_name << " around " << transition
              << (policy == DstPolicy::kWallClock ? " (wall clock)" : " (vixie)");
          ASSERT_EQ(FiresBetweenBackwards(s, from, to), expected)
              << text << " in " << zone_name << " around " << transition;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 600);
}

TEST(SchedulePropertyTest, NextAndPreviousAgree) {
  RandomCron random(7);
  const char* zones[] = {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Seoul",
                         "UTC"};
  for (int i = 0; i < 3000; ++i) {
    const std::string text = random.Expression();
    const char* zone = zones[i % 5];
    const DstPolicy policy = i % 2 ? DstPolicy::kVixieCron : DstPolicy::kWallClock;
    const Schedule s = Make(text, zone, policy);
    // Random instants, half of them within a few hours of a DST transition.
    std::int64_t t = random.Uniform64(Utc(2000, 1, 1), Utc(2036, 1, 1));
    if (i % 2 == 0) {
      const auto info = FindZone(zone)->get_info(date::sys_seconds{std::chrono::seconds{t}});
      if (info.end.time_since_epoch().count() < Utc(2037, 1, 1)) {
        t = info.end.time_since_epoch().count() + random.Uniform(-4 * 3600, 4 * 3600);
      }
    }
    const std::optional<std::int64_t> next = s.Next(t);
    const std::optional<std::int64_t> previous = s.Previous(t);
    ASSERT_EQ(next.has_value(), previous.has_value()) << text << " " << zone << " " << t;
    if (!next) continue;
    ASSERT_GT(*next, t);
    ASSERT_LE(*previous, t);
    ASSERT_EQ(*next % 60, 0);
    ASSERT_EQ(s.Previous(*next), *next) << text << " " << zone << " " << t;
    ASSERT_EQ(s.Next(*previous), next) << text << " " << zone << " " << t;
    ASSERT_EQ(s.Previous(*next - 1), previous) << text << " " << zone << " " << t;
  }
}

TEST(SchedulePropertyTest, PeriodMatchesEnumeratingTheYear) {
  RandomCron random(11);
  const char* zones[] = {"Europe/Berlin",    "America/New_York", "Australia/Lord_Howe",
                         "Australia/Sydney", "Asia/Seoul",       "UTC"};
  int checked = 0;
  for (int i = 0; i < 400; ++i) {
    // At most a few fire times a day: the reference enumerates the year with Next.
    std::string text = std::to_string(random.Uniform(0, 59)) + " " + random.Field(0, 23, 1) + " " +
                       random.Field(1, 31, 3) + " " + random.Field(1, 12, 4) + " " +
                       random.Field(0, 7, 3);
    if (i % 5 == 0)
      text =
          "*/" + std::to_string(random.Uniform(10, 30)) + " " + random.Field(0, 23, 0) + " * * *";
    const char* zone = zones[i % 6];
    const DstPolicy policy = i % 2 ? DstPolicy::kVixieCron : DstPolicy::kWallClock;
    const Schedule s = Make(text, zone, policy);
    std::int64_t from = random.Uniform64(Utc(2024, 1, 1), Utc(2030, 1, 1));
    if (i % 3 == 0) {  // start right at or next to a transition
      const auto info = FindZone(zone)->get_info(date::sys_seconds{std::chrono::seconds{from}});
      from = info.end.time_since_epoch().count() + random.Uniform(-2 * 3600, 2 * 3600);
      if (from > Utc(2034, 1, 1)) from = Utc(2030, 1, 1);
    }
    const std::int64_t year_end =
        std::chrono::duration_cast<std::chrono::seconds>(
            (date::sys_days{date::year_month_day{date::floor<date::days>(
                                date::sys_seconds{std::chrono::seconds{from}})} +
                            date::years{1}} +
             std::chrono::seconds{from % kDay})
                .time_since_epoch())
            .count();
    std::optional<std::int64_t> expected;
    std::optional<std::int64_t> t = s.Next(from - 1);
    if (t && *t >= year_end) {
      const auto second = s.Next(*t);
      if (second) expected = *second - *t;
    } else {
      std::int64_t longest = 0;
      while (t && *t < year_end) {
        const auto next = s.Next(*t);
        if (!next) break;
        longest = std::max(longest, *next - *t);
        t = next;
      }
      if (t) expected = longest;
    }
    if (!expected) continue;
    ASSERT_EQ(s.Period(from), expected)
        << text << " in " << zone << " from " << from
        << (policy == DstPolicy::kWallClock ? " (wall clock)" : " (vixie)");
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

}  // namespace
}  // namespace schedwatch

namespace schedwatch {
namespace {

// ----------------------------------------------------------------------------------------------
// Dialects. The Kubernetes cases are robfig/cron v3's own (spec_test.go TestActivation, the
// 5-field ones, read with ParseStandard as Kubernetes does): a time matches when the first fire
// strictly after one second before it is that time.

bool FiresAt(const Schedule& schedule, std::int64_t t) { return schedule.Next(t - 1) == t; }

TEST(CronDialectTest, KubernetesActivationCasesOfRobfigCron) {
  struct Case {
    std::int64_t time;
    const char* spec;
    bool expected;
  };
  const Case cases[] = {
      {Utc(2012, 7, 9, 15, 0), "0/15 * * * *", true},
      {Utc(2012, 7, 9, 15, 45), "0/15 * * * *", true},
      {Utc(2012, 7, 9, 15, 40), "0/15 * * * *", false},
      {Utc(2012, 7, 9, 15, 5), "5/15 * * * *", true},
      {Utc(2012, 7, 9, 15, 20), "5/15 * * * *", true},
      {Utc(2012, 7, 9, 15, 50), "5/15 * * * *", true},
      {Utc(2012, 7, 15, 15, 0), "0/15 * * Jul *", true},
      {Utc(2012, 7, 15, 15, 0), "0/15 * * Jun *", false},
      {Utc(2012, 7, 15, 8, 30), "30 08 ? Jul Sun", true},
      {Utc(2012, 7, 15, 8, 30), "30 08 15 Jul ?", true},
      {Utc(2012, 7, 16, 8, 30), "30 08 ? Jul Sun", false},
      {Utc(2012, 7, 16, 8, 30), "30 08 15 Jul ?", false},
      {Utc(2012, 7, 9, 15, 0), "@hourly", true},
      {Utc(2012, 7, 9, 15, 4), "@hourly", false},
      {Utc(2012, 7, 9, 15, 0), "@daily", false},
      {Utc(2012, 7, 9, 0, 0), "@daily", true},
      {Utc(2012, 7, 9, 0, 0), "@weekly", false},
      {Utc(2012, 7, 8, 0, 0), "@weekly", true},
      {Utc(2012, 7, 8, 1, 0), "@weekly", false},
      {Utc(2012, 7, 8, 0, 0), "@monthly", false},
      {Utc(2012, 7, 1, 0, 0), "@monthly", true},
      // Both day fields restricted: either matches.
      {Utc(2012, 7, 15), "* * 1,15 * Sun", true},
      {Utc(2012, 6, 15), "* * 1,15 * Sun", true},
      {Utc(2012, 8, 1), "* * 1,15 * Sun", true},
      {Utc(2012, 7, 15), "* * */10 * Sun", true},  // robfig/cron issue 70
      // One of them a star: both must match.
      {Utc(2012, 7, 15), "* * * * Mon", false},
      {Utc(2012, 7, 9), "* * 1,15 * *", false},
      {Utc(2012, 7, 15), "* * 1,15 * *", true},
      {Utc(2012, 7, 15), "* * */2 * Sun", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FiresAt(Kubernetes(c.spec), c.time), c.expected) << c.spec << " at " << c.time;
  }
}

TEST(CronDialectTest, AStepAboveOneRestrictsTheDayOnlyInKubernetes) {
  // The example: a CronJob "0 0 */10 * 0" fires on days 1, 11, 21, 31 and on Sundays;
  // Debian cron reads a field starting with '*' as unrestricted, so only on such days that are
  // Sundays.
  const std::int64_t from = Utc(2026, 1, 1) - 1;  // 2026-01-01 is a Thursday
  EXPECT_EQ(Fires(Kubernetes("0 0 */10 * 0"), from, 5),
            (std::vector<std::int64_t>{Utc(2026, 1, 1), Utc(2026, 1, 4), Utc(2026, 1, 11),
                                       Utc(2026, 1, 18), Utc(2026, 1, 21)}));
  EXPECT_EQ(Fires(Make("0 0 */10 * 0"), from, 3),
            (std::vector<std::int64_t>{Utc(2026, 1, 11), Utc(2026, 2, 1), Utc(2026, 3, 1)}));
  // A step of 1 keeps robfig's star bit, and so does a '*' anywhere in a list.
  EXPECT_EQ(Fires(Kubernetes("0 0 */1 * 1"), from, 2),
            (std::vector<std::int64_t>{Utc(2026, 1, 5), Utc(2026, 1, 12)}));
  EXPECT_EQ(Fires(Kubernetes("0 0 1,* * 1"), from, 2),
            (std::vector<std::int64_t>{Utc(2026, 1, 5), Utc(2026, 1, 12)}));
  EXPECT_FALSE(
      Kubernetes("0 0 */10 * 0").expression().Equivalent(Make("0 0 */10 * 0").expression()));
}

TEST(CronDialectTest, QuestionMarkIsAWildcardOnlyInKubernetes) {
  EXPECT_TRUE(Kubernetes("? ? ? ? ?").expression().Equivalent(Cron("* * * * *")));
  EXPECT_TRUE(Kubernetes("?/15 * * * *").expression().Equivalent(Cron("*/15 * * * *")));
  EXPECT_EQ(ParseError("0 0 ? * *"),
            "day-of-month field \"?\": expected a number or \"*\", got \"?\"");
  EXPECT_EQ(ParseError("0 0 ? * *", CronDialect::kGitHubActions),
            "day-of-month field \"?\": expected a number or \"*\", got \"?\"");
}

TEST(CronDialectTest, KubernetesIgnoresTheRangeEndOfAWildcard) {
  // robfig/cron's getRange looks no further than the '*' of "*-5".
  EXPECT_TRUE(Kubernetes("*-5 * * * *").expression().Equivalent(Cron("* * * * *")));
  EXPECT_TRUE(Kubernetes("*-5/20 * * * *").expression().Equivalent(Cron("*/20 * * * *")));
  EXPECT_EQ(ParseError("*-5 * * * *"), "minute field \"*-5\": unexpected \"-5\"");
}

TEST(CronDialectTest, SevenIsSundayOnlyInDebianCron) {
  EXPECT_TRUE(Cron("0 0 * * 7").Equivalent(Cron("0 0 * * 0")));
  EXPECT_EQ(ParseError("0 0 * * 7", CronDialect::kKubernetes),
            "day-of-week field \"7\": 7 is out of range 0-6");
  EXPECT_EQ(ParseError("0 0 * * 5-7", CronDialect::kGitHubActions),
            "day-of-week field \"5-7\": 7 is out of range 0-6");
}

TEST(CronDialectTest, MacrosPerScheduler) {
  EXPECT_TRUE(Cron("@DAILY").Equivalent(Cron("0 0 * * *")));  // Debian cron: any case
  EXPECT_TRUE(Kubernetes("@midnight").expression().Equivalent(Cron("0 0 * * *")));
  EXPECT_EQ(ParseError("@DAILY", CronDialect::kKubernetes), "unknown macro \"@DAILY\"");
  EXPECT_EQ(ParseError("@every 1h30m", CronDialect::kKubernetes),
            "@every is not supported: its fire times depend on when the CronJob was created");
  EXPECT_EQ(ParseError("@daily", CronDialect::kGitHubActions),
            "GitHub Actions does not accept macros such as \"@daily\"");
  EXPECT_EQ(ParseError("@reboot", CronDialect::kGitHubActions),
            "GitHub Actions does not accept macros such as \"@reboot\"");
  EXPECT_EQ(ParseError("TZ=Europe/Berlin 0 2 * * *", CronDialect::kKubernetes),
            "Kubernetes refuses TZ= and CRON_TZ= in a schedule: set the job's timezone");
  EXPECT_EQ(ParseError("CRON_TZ=UTC 0 2 * * *", CronDialect::kKubernetes),
            "Kubernetes refuses TZ= and CRON_TZ= in a schedule: set the job's timezone");
}

TEST(CronDialectTest, TheDialectTravelsWithTheExpression) {
  EXPECT_EQ(Kubernetes("0 0 * * *").expression().dialect(), CronDialect::kKubernetes);
  EXPECT_EQ(Cron("0 0 * * *").dialect(), CronDialect::kDebianCron);
}

// Celery's crontab (CronDialect::kCelery) under a real beat's DST behaviour (kCeleryBeat).
Schedule Celery(const std::string& text, const char* zone = "UTC") {
  auto parsed = CronExpression::Parse(text, CronDialect::kCelery);
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error());
  return Schedule(parsed.ok() ? *parsed : CronExpression(), FindZone(zone), DstPolicy::kCeleryBeat);
}

TEST(CelerySchedule, BeatAcrossBerlinsSpringChangeRunsOnceAtTheJump) {
  // What `celery beat` with DatabaseScheduler did under libfaketime on 2026-03-29: 01:00-01:45
  // CET, then once at the jump (03:00 CEST, "02:00+01:00"), then the next night.
  EXPECT_EQ(Fires(Celery("*/15 1-2 * * *", "Europe/Berlin"), Utc(2026, 3, 28, 23, 40), 6),
            (std::vector<std::int64_t>{Utc(2026, 3, 29, 0), Utc(2026, 3, 29, 0, 15),
                                       Utc(2026, 3, 29, 0, 30), Utc(2026, 3, 29, 0, 45),
                                       Utc(2026, 3, 29, 1), Utc(2026, 3, 29, 23)}));
}

TEST(CelerySchedule, BeatRunsTheRepeatedHourOnce) {
  // 2026-10-25: 02:00-02:45 CEST ran, the same wall times in CET did not.
  EXPECT_EQ(Fires(Celery("*/15 1-2 * * *", "Europe/Berlin"), Utc(2026, 10, 24, 23, 40), 5),
            (std::vector<std::int64_t>{Utc(2026, 10, 24, 23, 45), Utc(2026, 10, 25, 0),
                                       Utc(2026, 10, 25, 0, 15), Utc(2026, 10, 25, 0, 30),
                                       Utc(2026, 10, 25, 0, 45)}));
  EXPECT_EQ(Celery("*/15 1-2 * * *", "Europe/Berlin").Next(Utc(2026, 10, 25, 0, 45)),
            Utc(2026, 10, 26, 0));
}

TEST(CelerySchedule, DayOfMonthAndDayOfWeekBothApply) {
  // Friday the 13th only (cron would fire on every Friday and every 13th).
  EXPECT_EQ(Fires(Celery("0 0 13 * fri"), Utc(2026, 1, 1), 2),
            (std::vector<std::int64_t>{Utc(2026, 2, 13), Utc(2026, 3, 13)}));
}

TEST(CelerySchedule, ReadsItemsAsCelerysParserDoes) {
  // Weekday names in any field, wrapping ranges stepped in Celery's order, int()'s forms, and
  // what follows a matched range ignored.
  EXPECT_EQ(Fires(Celery("mon 22-2/3 * * *"), Utc(2026, 1, 1), 3),
            (std::vector<std::int64_t>{Utc(2026, 1, 1, 1, 1), Utc(2026, 1, 1, 22, 1),
                                       Utc(2026, 1, 2, 1, 1)}));
  EXPECT_TRUE(Celery("1_0 +5 * * *").SameAs("10 5 * * *"));
  EXPECT_TRUE(Celery("1-5! * * * fridge").SameAs("1-5 * * * 5"));
  EXPECT_TRUE(Celery("0 0 * * fri-mon").SameAs("0 0 * * 0,1,5,6"));
}

TEST(CelerySchedule, RefusesWhatCeleryRefuses) {
  EXPECT_EQ(ParseError("5/15 * * * *", CronDialect::kCelery),
            "minute field \"5/15\": \"5/15\" is neither a number nor a weekday");
  EXPECT_EQ(ParseError("0 0 * * 7", CronDialect::kCelery),
            "day-of-week field \"7\": 7 is out of range 0-6");
  EXPECT_EQ(ParseError("0 0 * jan *", CronDialect::kCelery),
            "month field \"jan\": \"jan\" is neither a number nor a weekday");
  EXPECT_EQ(ParseError("*/0 * * * *", CronDialect::kCelery),
            "minute field \"*/0\": step must be at least 1");
  EXPECT_EQ(ParseError("0 0 31 2 *", CronDialect::kCelery),
            "no month of \"2\" has a day \"31\": Celery cannot schedule it");
  EXPECT_EQ(ParseError("@daily", CronDialect::kCelery),
            "Celery has no macros such as \"@daily\"; an interval task is \"@every <duration>\"");
}

TEST(CelerySchedule, AnIntervalIsAPeriodWithoutFireTimes) {
  const Schedule every = Celery("@every 30s");
  EXPECT_EQ(every.expression().every(), 30);
  EXPECT_EQ(every.Next(Utc(2026, 1, 1)), std::nullopt);
  EXPECT_EQ(every.Period(Utc(2026, 1, 1)), 30);
  EXPECT_TRUE(every.SameAs("@every 30s"));
  EXPECT_FALSE(every.SameAs("@every 1m"));
  EXPECT_EQ(ParseError("@every 0s", CronDialect::kCelery), "@every needs a period longer than 0s");
}

}  // namespace
}  // namespace schedwatch
