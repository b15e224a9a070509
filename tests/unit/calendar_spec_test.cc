// systemd calendar expressions: what systemd 252 accepts and refuses, its normalised forms, and
// elapse times (expected values are systemd-analyze's; tests/oracle/ compares many more).
#include "schedwatch/calendar_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/schedule.h"
#include "schedwatch/spec.h"
#include "sources/catalog.h"

namespace schedwatch {
namespace {

constexpr std::int64_t kUsec = 1000000;

std::string Normalized(const std::string& text) {
  auto spec = CalendarSpec::Parse(text);
  return spec ? spec->normalized() : "error: " + spec.error();
}

std::vector<std::int64_t> Elapses(const std::string& text, const char* zone, std::int64_t base,
                                  int count) {
  auto spec = CalendarSpec::Parse(text);
  EXPECT_TRUE(spec) << spec.error();
  std::vector<std::int64_t> out;
  std::optional<std::int64_t> t = base * kUsec;
  for (int i = 0; i < count && spec; ++i) {
    t = spec->NextUsec(*t, FindZone(zone));
    if (!t) break;
    out.push_back(*t / kUsec);
  }
  return out;
}

Schedule Calendars(std::vector<std::string> texts, const char* zone = "UTC") {
  std::vector<CalendarSpec> specs;
  for (const auto& text : texts) specs.push_back(*CalendarSpec::Parse(text));
  return Schedule(std::move(specs), FindZone(zone));
}

TEST(CalendarSpecTest, NormalisesAsSystemdPrints) {
  EXPECT_EQ(Normalized("daily"), "*-*-* 00:00:00");
  EXPECT_EQ(Normalized("DAILY utc"), "*-*-* 00:00:00 UTC");
  EXPECT_EQ(Normalized("minutely"), "*-*-* *:*:00");
  EXPECT_EQ(Normalized("hourly"), "*-*-* *:00:00");
  EXPECT_EQ(Normalized("weekly"), "Mon *-*-* 00:00:00");
  EXPECT_EQ(Normalized("monthly"), "*-*-01 00:00:00");
  EXPECT_EQ(Normalized("quarterly"), "*-01,04,07,10-01 00:00:00");
  EXPECT_EQ(Normalized("bi-annually"), "*-01,07-01 00:00:00");
  EXPECT_EQ(Normalized("anually"), "*-01-01 00:00:00");
  EXPECT_EQ(Normalized("weekly Pacific/Auckland"), "Mon *-*-* 00:00:00 Pacific/Auckland");
  EXPECT_EQ(Normalized("Sat,Thu,Mon..Wed,Sat..Sun"), "Mon..Thu,Sat,Sun *-*-* 00:00:00");
  EXPECT_EQ(Normalized("Mon,Sun 12-*-* 2,1:23"), "Mon,Sun 2012-*-* 01,02:23:00");
  EXPECT_EQ(Normalized("Wed..Sat,Tue 12-10-15 1:2:3"), "Tue..Sat 2012-10-15 01:02:03");
  EXPECT_EQ(Normalized("mon,fri *-1/2-1,3 *:30:45"), "Mon,Fri *-01/2-01,03 *:30:45");
  EXPECT_EQ(Normalized("Mon-Fri 09:00"), "Mon..Fri *-*-* 09:00:00");
  EXPECT_EQ(Normalized("mon,"), "Mon *-*-* 00:00:00");
  EXPECT_EQ(Normalized("05:40:23.4200004/3.1700005"), "*-*-* 05:40:23.420000/3.170001");
  EXPECT_EQ(Normalized("*:*:1.9999996"), "*-*-* *:*:02");
  EXPECT_EQ(Normalized("*:*:0/0.5"), "*-*-* *:*:00/0.500000");
  EXPECT_EQ(Normalized("*:*:1.5..3.7"), "*-*-* *:*:01.500000..03.500000");
  EXPECT_EQ(Normalized("*:0/15"), "*-*-* *:00/15:00");
  EXPECT_EQ(Normalized("2024-*-01..31/7"), "2024-*-01..29/7 00:00:00");
  EXPECT_EQ(Normalized("*-*-* 1,1,01:0"), "*-*-* 01:00:00");
  EXPECT_EQ(Normalized("*-*~27..27"), "*-*~27 00:00:00");
  EXPECT_EQ(Normalized("*-05~07/2"), "*-05~07/2 00:00:00");
  EXPECT_EQ(Normalized("1-2 3:4"), "*-01-02 03:04:00");
  EXPECT_EQ(Normalized("99-01-01"), "1999-01-01 00:00:00");
  EXPECT_EQ(Normalized("@1700000000 Europe/Berlin"), "2023-11-14 22:13:20 UTC");
  EXPECT_EQ(Normalized("@ 5"), "1970-01-01 00:00:05 UTC");
  EXPECT_EQ(Normalized("Mon..Fri 09:00 America/New_York"),
            "Mon..Fri *-*-* 09:00:00 America/New_York");
}

TEST(CalendarSpecTest, RefusesWhatSystemdRefuses) {
  for (const char* text : {"",
                           " daily",
                           "daily ",
                           "*:*/15",
                           "*-*~01/2",
                           "*-*-* *:*:*.5",
                           "*:*:1.5..1.7",
                           "5..3:00",
                           "2200-01-01",
                           "00:00:60",
                           "*-*~29",
                           "*-*~19,06,23",
                           "1/0:00",
                           "*-13-01",
                           "Mon..",
                           "Mo",
                           "Sat..Mon",
                           "Mon-",
                           "1~2-3",
                           "12",
                           "12:",
                           "12:00:00:00",
                           "@-5",
                           "@99999999999",
                           "1969-01-01",
                           "*-*-* 1,:00",
                           "*-*-* 12:00 Europe/berlin",
                           "UTC",
                           "*-*-* 00:00:00."}) {
    EXPECT_FALSE(CalendarSpec::Parse(text)) << "\"" << text << "\" was accepted";
  }
  EXPECT_EQ(CalendarSpec::Parse("*-*-* 25:00").error(),
            "\"*-*-* 25:00\": hour \"25\" is out of range 0-23");
  EXPECT_EQ(CalendarSpec::Parse("*-*-* 12:00 Nowhere/Zone").error(),
            "\"*-*-* 12:00 Nowhere/Zone\": unknown time zone \"Nowhere/Zone\"");
  EXPECT_EQ(CalendarSpec::Parse("Fryday").error(),
            "\"Fryday\": expected a number in the date field, got \"F\"");
  std::string long_list = "*-*-* *:*:0";
  for (int i = 0; i < 241; ++i) long_list += ",1";
  EXPECT_FALSE(CalendarSpec::Parse(long_list));
}

TEST(CalendarSpecTest, IteratesAsSystemd) {
  // From 2026-01-01 (a Thursday), UTC.
  EXPECT_EQ(Elapses("*-05~07/2", "UTC", 1767225600, 2),
            (std::vector<std::int64_t>{1779667200, 1779840000}));
  EXPECT_EQ(Elapses("Fri *-*~7/1 12:00", "UTC", 1767225600, 2),
            (std::vector<std::int64_t>{1769774400, 1772193600}));
  EXPECT_EQ(Elapses("weekly", "UTC", 1767225600, 2),
            (std::vector<std::int64_t>{1767571200, 1767571200 + 7 * 86400}));
  // A one-off date elapses once.
  EXPECT_EQ(Elapses("2026-01-05", "UTC", 1767225600, 3), (std::vector<std::int64_t>{1767571200}));
  EXPECT_TRUE(Elapses("2025-12-29", "UTC", 1767225600, 1).empty());
  // Sub-second repetitions keep their microseconds.
  auto half = CalendarSpec::Parse("*:*:0/0.5");
  EXPECT_EQ(half->NextUsec(0, nullptr), 500000);
  EXPECT_EQ(half->NextUsec(500000, nullptr), 1000000);
}

TEST(CalendarSpecTest, FollowsSystemdAcrossDstChanges) {
  // New York springs forward on 2024-03-10: 02:30 does not exist that day and is skipped.
  EXPECT_EQ(Elapses("*-*-* 02:30", "America/New_York", 1710050000, 1),
            (std::vector<std::int64_t>{1710138600}));
  // It falls back on 2024-11-03: 01:15 and 01:45 happen twice, and elapse once each.
  EXPECT_EQ(Elapses("*-*-* 01:15,45", "America/New_York", 1730610000, 3),
            (std::vector<std::int64_t>{1730610900, 1730612700, 1730700900}));
  // Lord Howe springs forward by 30 minutes at 02:00: 02:10 is skipped, 02:35 is not.
  EXPECT_EQ(Elapses("*-*-* *:10,35", "Australia/Lord_Howe", 1728140000, 3),
            (std::vector<std::int64_t>{1728140700, 1728142500, 1728144600}));
  // The zone suffix wins over the host's zone.
  EXPECT_EQ(Elapses("*-*-* 02:30 America/New_York", "Asia/Seoul", 1710050000, 1),
            (std::vector<std::int64_t>{1710138600}));
  // Berlin from the second 02:10 of 2024-10-27 (CET): the repeated hour goes on in CET.
  EXPECT_EQ(Elapses("*-*-* *:00,20,40", "Europe/Berlin", 1729991400, 2),
            (std::vector<std::int64_t>{1729992000, 1729993200}));
}

TEST(CalendarScheduleTest, FiresAtTheEarliestOfItsExpressions) {
  const Schedule schedule = Calendars({"*-*-* 12:00", "Mon 06:00"});
  EXPECT_TRUE(schedule.is_calendar());
  EXPECT_EQ(schedule.text(), "*-*-* 12:00\nMon 06:00");
  // 2026-01-04 is a Sunday: Sunday noon, Monday 06:00, Monday noon.
  EXPECT_EQ(schedule.Next(1767484800), 1767528000);
  EXPECT_EQ(schedule.Next(1767528000), 1767592800);
  EXPECT_EQ(schedule.Next(1767592800), 1767614400);
  EXPECT_EQ(schedule.Previous(1767614400), 1767614400);
  EXPECT_EQ(schedule.Previous(1767614399), 1767592800);
  EXPECT_EQ(schedule.Previous(1767592799), 1767528000);
  EXPECT_EQ(schedule.Period(1767225600), 86400);
}

TEST(CalendarScheduleTest, PeriodAndPrevious) {
  EXPECT_EQ(Calendars({"hourly"}).Period(1767225600), 3600);
  EXPECT_EQ(Calendars({"*:*:0/20"}).Period(1767225600), 20);
  EXPECT_EQ(Calendars({"Mon..Fri 09:00"}).Period(1767225600), 3 * 86400);
  EXPECT_EQ(Calendars({"*-02-29"}).Period(1767225600), 4 * 365 * 86400 + 86400);
  // Over a DST change the gap is one hour longer or shorter.
  EXPECT_EQ(Calendars({"daily"}, "Europe/Berlin").Period(1767225600), 90000);
  EXPECT_EQ(Calendars({"09..17:00"}, "Europe/Berlin").Period(1767225600), 16 * 3600 + 3600);
  // The repeated hour elapses once: from 02:59 CEST the next minute is 03:00 CET, 61 minutes on.
  EXPECT_EQ(Calendars({"minutely"}, "Europe/Berlin").Period(1767225600), 3660);
  EXPECT_EQ(Calendars({"*:*:*"}, "Europe/Berlin").Period(1767225600), 3601);
  // Schedule::Next searches from just after a fire time, as systemd does: from 02:59:59 CEST
  // (00:59:59Z) on 2026-10-25 the next second is 03:00:00 CET, not the repeated 02:00:00 CET.
  EXPECT_EQ(Calendars({"*:*:*"}, "Europe/Berlin").Next(1792889999), 1792893600);
  EXPECT_EQ(Calendars({"*:*:0/0.25"}).Next(10), 11);
  // Fires once: no period.
  EXPECT_FALSE(Calendars({"2026-06-01"}).Period(1767225600));
  EXPECT_EQ(Calendars({"daily"}).Previous(1767225600), 1767225600);
  EXPECT_EQ(Calendars({"daily"}).Previous(1767225599), 1767225600 - 86400);
  EXPECT_FALSE(Calendars({"2030-01-01"}).Previous(1767225600));
  EXPECT_EQ(Calendars({"*:*:*"}).Previous(1767225600), 1767225600);
}

TEST(CalendarScheduleTest, ComparesLiveExpressionsByMeaning) {
  const Schedule schedule = Calendars({"daily", "Mon-Fri 18:00 Europe/Berlin"});
  EXPECT_TRUE(schedule.SameAs("*-*-* 00:00:00\nMon..Fri *-*-* 18:00:00 Europe/Berlin"));
  EXPECT_TRUE(schedule.SameAs("Mon..Fri *-*-* 18:00:00 Europe/Berlin\n*-*-* 00:00:00"));
  EXPECT_FALSE(schedule.SameAs("*-*-* 00:00:00\nMon..Fri *-*-* 18:00:00"));
  EXPECT_FALSE(schedule.SameAs("*-*-* 00:00:00"));
  EXPECT_FALSE(schedule.SameAs("*-*-* 00:00:00\nMon..Fri *-*-* 18:00:00 Europe/Berlin\nhourly"));
  EXPECT_FALSE(schedule.SameAs(""));
  EXPECT_TRUE(Calendars({"12:00 UTC"}).SameAs("*-*-* 12:00:00 UTC"));
  EXPECT_FALSE(Calendars({"12:00 UTC"}).SameAs("*-*-* 12:00:00"));
}

TEST(CalendarScheduleTest, CronSchedulesAreUnchanged) {
  EXPECT_FALSE(CronExpression::Parse("daily", CronDialect::kSystemdCalendar));
  const Schedule cron(*CronExpression::Parse("*/15 * * * *"), FindZone("UTC"),
                      DstPolicy::kWallClock);
  EXPECT_FALSE(cron.is_calendar());
  EXPECT_EQ(cron.text(), "*/15 * * * *");
  EXPECT_TRUE(cron.SameAs("0,15,30,45 * * * *"));
  EXPECT_FALSE(cron.SameAs("*/10 * * * *"));
}

TEST(CalendarSpecFileTest, SystemdJobsTakeOneExpressionOrAList) {
  auto spec = ParseSpec(
      "version: 1\n"
      "sources: {host: {type: systemd, bus_address: 'unix:path=/run/dbus/system_bus_socket'}}\n"
      "defaults: {timezone: Europe/Berlin}\n"
      "jobs:\n"
      "  - {role: backup, source: host, schedule: 'Mon..Fri 02:30', spec_version: '1'}\n"
      "  - role: rotate\n"
      "    source: host\n"
      "    schedule: ['*-*-01 04:00', 'Sun 04:00 UTC']\n"
      "    spec_version: '2'\n",
      "spec.yaml", BuiltInCatalog());
  ASSERT_TRUE(spec) << spec.error();
  const JobSpec& backup = spec->jobs[0];
  ASSERT_TRUE(backup.schedule.is_calendar());
  EXPECT_EQ(backup.schedule.calendars().size(), 1u);
  EXPECT_EQ(backup.schedule.zone(), FindZone("Europe/Berlin"));
  EXPECT_EQ(backup.period, 3 * 86400 + 3600);  // Friday to Monday over the fall-back weekend
  const JobSpec& rotate = spec->jobs[1];
  ASSERT_EQ(rotate.schedule.calendars().size(), 2u);
  EXPECT_EQ(rotate.schedule.calendars()[1].normalized(), "Sun *-*-* 04:00:00 UTC");

  // Drift: the timer's lines as systemd reports them, normalised and in any order.
  LiveObject live{"rotate.timer", "rotate", "Sun *-*-* 04:00:00 UTC\n*-*-01 04:00:00", "", "2"};
  EXPECT_FALSE(Drifted(rotate, live));
  live.set_schedule("*-*-01 04:00:00\nSun *-*-* 04:00:00");  // the zone is part of the meaning
  EXPECT_TRUE(Drifted(rotate, live));
  live.set_schedule("*-*-01 04:00:00");
  EXPECT_TRUE(Drifted(rotate, live));
  live = {"backup.timer", "backup", "Mon..Fri *-*-* 02:30:00", "", "1"};
  EXPECT_FALSE(Drifted(backup, live));
  live.set_spec_version("0");
  EXPECT_TRUE(Drifted(backup, live));
}

}  // namespace
}  // namespace schedwatch
