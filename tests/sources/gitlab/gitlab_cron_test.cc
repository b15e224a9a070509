// GitLab's cron dialect (CronDialect::kGitLab) as fugit computes it: cases written from fugit's
// documentation and spec file, with the times fugit gives (the fugit_oracle test checks many
// more against ruby-fugit itself).
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "schedwatch/schedule.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {
namespace {

std::vector<std::string> NextTimes(const std::string& cron, const std::string& zone,
                                   const std::string& from, int count = 3) {
  auto expression = CronExpression::Parse(cron, CronDialect::kGitLab);
  EXPECT_TRUE(expression.ok()) << cron << ": " << expression.error();
  if (!expression) return {};
  Schedule schedule(*expression, FindZone(zone), DstPolicy::kWallClock);
  std::vector<std::string> times;
  std::optional<std::int64_t> t = ParseRfc3339(from);
  for (int i = 0; i < count && t; ++i) {
    t = schedule.Next(*t);
    if (t) times.push_back(FormatRfc3339(*t));
  }
  return times;
}

using Times = std::vector<std::string>;
const std::string kJan1 = "2026-01-01T00:00:00Z";  // a Thursday

TEST(GitLabCronTest, LastAndNegativeDays) {
  EXPECT_EQ(NextTimes("0 0 L * *", "UTC", kJan1),
            (Times{"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 0 -2 * *", "UTC", kJan1),
            (Times{"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-30T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 0 L 2 *", "UTC", "2027-03-01T00:00:00Z", 2),
            (Times{"2028-02-29T00:00:00Z", "2029-02-28T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 0 -3--1 * *", "UTC", kJan1),
            (Times{"2026-01-29T00:00:00Z", "2026-01-30T00:00:00Z", "2026-01-31T00:00:00Z"}));
  // -31 is day 1 of a 31-day month only.
  EXPECT_EQ(NextTimes("0 0 -31 * *", "UTC", kJan1, 2),
            (Times{"2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"}));
}

TEST(GitLabCronTest, NthWeekdays) {
  EXPECT_EQ(NextTimes("0 0 * * mon#2", "UTC", kJan1, 2),
            (Times{"2026-01-12T00:00:00Z", "2026-02-09T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 0 * * fri#-1", "UTC", kJan1, 2),
            (Times{"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 0 * * 1#5", "UTC", kJan1, 2),
            (Times{"2026-03-30T00:00:00Z", "2026-06-29T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 0 * * 7#1", "UTC", kJan1, 1), (Times{"2026-01-04T00:00:00Z"}));
}

TEST(GitLabCronTest, SundayIsZeroAndSevenAndRangesWrap) {
  EXPECT_EQ(NextTimes("0 0 * * 7", "UTC", kJan1, 1), (Times{"2026-01-04T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 0 * * 5-1", "UTC", kJan1, 4),
            (Times{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z",
                   "2026-01-05T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 22-2 * * *", "UTC", kJan1, 3),
            (Times{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T22:00:00Z"}));
  EXPECT_EQ(NextTimes("50-10/5 * * * *", "UTC", kJan1, 3),
            (Times{"2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z", "2026-01-01T00:50:00Z"}));
  EXPECT_EQ(NextTimes("0 24 * * *", "UTC", kJan1, 1), (Times{"2026-01-02T00:00:00Z"}));
}

TEST(GitLabCronTest, SecondsField) {
  EXPECT_EQ(NextTimes("30 0 0 * * *", "UTC", kJan1, 2),
            (Times{"2026-01-01T00:00:30Z", "2026-01-02T00:00:30Z"}));
  auto six = CronExpression::Parse("30 0 0 * * *", CronDialect::kGitLab);
  auto five = CronExpression::Parse("0 0 * * *", CronDialect::kGitLab);
  ASSERT_TRUE(six.ok() && five.ok());
  EXPECT_FALSE(six->Equivalent(*five));
  // Previous finds the same times, and the extremes stay in range.
  const Schedule seconds(*six, FindZone("UTC"), DstPolicy::kWallClock);
  EXPECT_EQ(seconds.Previous(*ParseRfc3339("2026-01-02T00:00:29Z")),
            ParseRfc3339("2026-01-01T00:00:30Z"));
  EXPECT_EQ(seconds.Previous(*ParseRfc3339("2026-01-02T00:00:30Z")),
            ParseRfc3339("2026-01-02T00:00:30Z"));
  EXPECT_EQ(seconds.Previous(std::numeric_limits<std::int64_t>::min()), std::nullopt);
  EXPECT_TRUE(seconds.Next(std::numeric_limits<std::int64_t>::min()).has_value());
  EXPECT_EQ(seconds.Next(std::numeric_limits<std::int64_t>::max()), std::nullopt);
  EXPECT_FALSE(CronExpression::Parse("30 0 0 * * *").ok());  // Debian cron: five fields
}

TEST(GitLabCronTest, TheDayOrRule) {
  // */10 restricts: days 1, 11, 21, 31 or Sundays (Debian cron: Sundays among those days).
  EXPECT_EQ(NextTimes("0 0 */10 * 0", "UTC", kJan1, 3),
            (Times{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z"}));
  // A `*` item opens day-of-month; in a weekday list it is dropped.
  EXPECT_EQ(NextTimes("0 0 *,5 * 1", "UTC", kJan1, 2),
            (Times{"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 0 1 * 1,*", "UTC", "2026-01-05T00:00:00Z", 2),
            (Times{"2026-01-12T00:00:00Z", "2026-01-19T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 0 L * fri", "UTC", kJan1, 2),
            (Times{"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z"}));
  auto gitlab = CronExpression::Parse("0 0 */10 * 0", CronDialect::kGitLab);
  auto debian = CronExpression::Parse("0 0 */10 * 0");
  ASSERT_TRUE(gitlab.ok() && debian.ok());
  EXPECT_FALSE(gitlab->Equivalent(*debian));
}

// fugit's compact_month_days (issue 34): a month that can hold none of the listed days of month
// is dropped even when weekdays are listed, and a cron left with no month is refused.
TEST(GitLabCronTest, AMonthWithoutAListedDayIsDropped) {
  // February has no 30th: no Mondays and Tuesdays in February either (2026-02-02 is a Monday).
  EXPECT_EQ(NextTimes("11-32 */2 30 2-12 1-2", "UTC", kJan1, 2),
            (Times{"2026-03-02T00:11:00Z", "2026-03-02T00:12:00Z"}));
  // 1/2 is January to November; of those, September and November lack a 31st.
  EXPECT_EQ(NextTimes("0 0 31 1/2 1", "UTC", "2026-08-01T00:00:00Z", 2),
            (Times{"2027-01-04T00:00:00Z", "2027-01-11T00:00:00Z"}));
  // With a `*` item in either field nothing is dropped; a day from the end fits every month.
  EXPECT_EQ(NextTimes("0 0 30 */1 1", "UTC", "2026-02-01T00:00:00Z", 1),
            (Times{"2026-02-02T00:00:00Z"}));
  EXPECT_EQ(NextTimes("0 0 31,L 2 *", "UTC", kJan1, 1), (Times{"2026-02-28T00:00:00Z"}));
  // Debian cron keeps every listed month.
  auto debian = CronExpression::Parse("11-32 */2 30 2-12 1-2");
  auto gitlab = CronExpression::Parse("11-32 */2 30 2-12 1-2", CronDialect::kGitLab);
  ASSERT_TRUE(debian.ok() && gitlab.ok());
  EXPECT_TRUE(debian->MatchesDay(2, 2, 1));
  EXPECT_FALSE(gitlab->MatchesDay(2, 2, 1));

  EXPECT_EQ(CronExpression::Parse("*/5 15-20/4 31 11 */3", CronDialect::kGitLab).error(),
            "no month of \"11\" has a day \"31\": GitLab (fugit) refuses the cron, even with "
            "weekdays listed");
  EXPECT_FALSE(CronExpression::Parse("0 0 30 feb mon#1", CronDialect::kGitLab).ok());
}

TEST(GitLabCronTest, DaylightSavingFollowsTheWallClock) {
  // 02:30 does not exist in New York on 2026-03-08; 01:30 happens twice on 2026-11-01.
  EXPECT_EQ(NextTimes("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2),
            (Times{"2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}));
  EXPECT_EQ(NextTimes("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 3),
            (Times{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"}));
}

TEST(GitLabCronTest, RefusedAsFugitRefusesThem) {
  for (const char* text :
       {"@daily", "@reboot", "0 0 ? * *", "0 0 * * 8", "0 60 * * *", "0 0 32 * *", "0 0 * * 1#6",
        "0 0 * * 1#0", "0 0 -32 * *", "0 0 -0 * *", "0 0 L-1 * *", "0 0 L/2 * *", "0 0 jan * *",
        "0 0 * * 1#1-3", "* * * * * * *", "0 0 15W * *", "0 0 * * 5L", "0 0 * * mon%2"}) {
    EXPECT_FALSE(CronExpression::Parse(text, CronDialect::kGitLab).ok()) << text;
  }
  EXPECT_EQ(CronExpression::Parse("0 0 * * mon%2", CronDialect::kGitLab).error(),
            "day-of-week field \"mon%2\": a weekday modulo (`mon%2`, every other week) is not "
            "supported");
  EXPECT_EQ(CronExpression::Parse("@daily", CronDialect::kGitLab).error(),
            "GitLab does not accept macros such as \"@daily\"");
  // Debian cron keeps its own reading.
  EXPECT_FALSE(CronExpression::Parse("0 0 L * *").ok());
  EXPECT_FALSE(CronExpression::Parse("0 22-2 * * *").ok());
}

}  // namespace
}  // namespace schedwatch
