// The mapping of a real systemd 252's timer and service properties (captured with
// systemd_capture from the manager the real-systemd test boots) to live objects and runs.
#include "sources/systemd/timer_mapping.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/sources/systemd/systemd_fixtures.h"

namespace schedwatch::systemd {
namespace {

using fixtures::kMonotonicToWall;
using fixtures::Load;
using fixtures::LoadJson;
using fixtures::Markers;

std::map<std::string, LiveObject> ById(const TimerMapping& mapped) {
  std::map<std::string, LiveObject> out;
  for (const auto& object : mapped.objects) out[std::string(object.id())] = object;
  return out;
}

TEST(TimerMapping, RealManagersTimersAndServices) {
  ManagerReading reading = Load(LoadJson());
  // Debian's own timers are listed too; without markers they are no objects.
  EXPECT_GE(reading.timers.size(), 10u);
  ProblemSink problems;
  TimerMapping mapped = MapTimers(reading, Markers(), kMonotonicToWall, problems);
  EXPECT_EQ(problems.Total(), 0u);
  auto objects = ById(mapped);
  ASSERT_EQ(objects.size(), 6u);

  const LiveObject& ok = objects["ok.timer"];
  EXPECT_EQ(ok.role(), "ok");
  EXPECT_EQ(ok.schedule(), "*-*-* *:*:00/10");
  EXPECT_EQ(ok.spec_version(), "3");  // from the drop-in
  EXPECT_TRUE(ok.enabled);
  EXPECT_EQ(ok.state(), "");
  EXPECT_EQ(ok.start_delay, 1);  // AccuracySec=1s
  ASSERT_TRUE(ok.next_start);
  const RunHistory& ok_history = mapped.history["ok"];
  ASSERT_EQ(ok_history.runs.size(), 1u);
  EXPECT_EQ(ok_history.runs[0].outcome, Run::Outcome::kSucceeded);
  ASSERT_TRUE(ok_history.last_started);
  EXPECT_LE(ok_history.runs[0].started, *ok_history.last_started);  // LastTriggerUSec
  EXPECT_EQ(mapped.services["ok"], std::vector<std::string>{"ok.service"});

  const RunHistory& fail = mapped.history["fail"];
  ASSERT_EQ(fail.runs.size(), 1u);
  EXPECT_EQ(fail.runs[0].outcome, Run::Outcome::kFailed);
  EXPECT_TRUE(fail.last_failure);
  EXPECT_FALSE(fail.last_success);

  const LiveObject& hung = objects["hung.timer"];
  EXPECT_EQ(hung.start_delay, 4);  // RandomizedDelaySec=3 + AccuracySec=1s
  EXPECT_EQ(hung.state(), "Persistent=true");
  const RunHistory& hung_history = mapped.history["hung"];
  ASSERT_EQ(hung_history.runs.size(), 1u);
  EXPECT_EQ(hung_history.runs[0].outcome, Run::Outcome::kRunning);
  EXPECT_TRUE(hung_history.running_since);

  const LiveObject& off = objects["off.timer"];
  EXPECT_FALSE(off.enabled);
  EXPECT_EQ(off.state(), "disabled, stopped (inactive)");
  EXPECT_EQ(off.schedule(), "*-*-* 00:00:00");  // "daily", as systemd normalises it

  const LiveObject& masked = objects["masked.timer"];
  EXPECT_FALSE(masked.enabled);
  EXPECT_EQ(masked.state(), "masked");
  EXPECT_EQ(masked.schedule(), "Mon..Fri 02:00\nSat 04:00");  // from its own file
  EXPECT_EQ(masked.spec_version(), "1");

  const LiveObject& mono = objects["mono.timer"];
  EXPECT_EQ(mono.schedule(), "monotonic");  // OnUnitActiveSec= and OnActiveSec= only
  EXPECT_TRUE(mono.enabled);
  const RunHistory& mono_history = mapped.history["mono"];
  ASSERT_FALSE(mono_history.runs.empty());
  EXPECT_EQ(mono_history.runs.back().outcome, Run::Outcome::kFailed);
}

TEST(TimerMapping, ServiceResultsSayWhy) {
  ManagerReading reading = Load(LoadJson());
  ProblemSink problems;
  auto fail = NewestServiceRun(reading.services.at("fail.service"), problems);
  ASSERT_TRUE(fail);
  EXPECT_EQ(fail->failure, "exit-code, status 3");
  EXPECT_EQ(fail->invocation_id.size(), 32u);
  auto mono = NewestServiceRun(reading.services.at("mono.service"), problems);
  ASSERT_TRUE(mono);
  EXPECT_EQ(mono->failure, "signal, signal 9");
  auto ok = NewestServiceRun(reading.services.at("ok.service"), problems);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->failure, "");
  EXPECT_EQ(problems.Total(), 0u);
}

TEST(TimerMapping, SurprisingValuesAreCountedProblemsAndTheRestIsRead) {
  nlohmann::json json = LoadJson();
  for (auto& timer : json["timers"]) {
    if (timer["name"] == "ok.timer") {
      timer["kind"]["TimersCalendar"] = {"s", "*-*-* *:*:00/10"};  // a string, not a(sst)
      timer["kind"]["LastTriggerUSec"] = {"t", 18446744073709551614ull - 1};
    }
    if (timer["name"] == "fail.timer") timer["unit"].erase("ActiveState");
  }
  for (auto& service : json["services"]) {
    if (service["name"] == "hung.service") service["kind"]["Result"] = {"s", "exploded"};
  }
  ManagerReading reading = Load(json);
  ProblemSink problems;
  TimerMapping mapped = MapTimers(reading, Markers(), kMonotonicToWall, problems);
  EXPECT_EQ(problems.Count(Reason::kMalformedObject), 4u);
  std::vector<SourceProblem> listed;
  problems.AppendTo(listed);
  std::string all;
  for (const auto& p : listed) all += p.message + "\n";
  EXPECT_NE(all.find("unit ok.timer: property TimersCalendar has type \"s\", expected \"a(sst)\""),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("LastTriggerUSec"), std::string::npos) << all;
  EXPECT_NE(all.find("timer fail.timer: no ActiveState"), std::string::npos) << all;
  EXPECT_NE(all.find("Result \"exploded\""), std::string::npos) << all;
  auto objects = ById(mapped);
  EXPECT_EQ(objects.size(), 5u);                  // fail.timer is no object
  EXPECT_EQ(objects["ok.timer"].schedule(), "");  // unknown, not "monotonic"
  EXPECT_TRUE(objects["hung.timer"].enabled);
}

TEST(TimerMapping, MarkerErrorsAreProblemsNotObjects) {
  ManagerReading reading = Load(LoadJson());
  auto markers = Markers();
  markers["ok.timer"].error = "ok.timer:3: X-Schedwatch-Role is not a role name";
  markers["fail.timer"].role = "ok";  // two timers claim one role: both are objects
  ProblemSink problems;
  TimerMapping mapped = MapTimers(reading, markers, kMonotonicToWall, problems);
  EXPECT_EQ(problems.Count(Reason::kMalformedMarker), 1u);
  auto objects = ById(mapped);
  EXPECT_EQ(objects.count("ok.timer"), 0u);
  EXPECT_EQ(objects["fail.timer"].role(), "ok");
}

TEST(TimerMapping, FixturesRoundTrip) {
  ManagerReading reading = Load(LoadJson());
  auto again = ManagerReadingFromJson(ToJson(reading));
  ASSERT_TRUE(again);
  EXPECT_EQ(ToJson(*again), ToJson(reading));
  EXPECT_FALSE(ManagerReadingFromJson(nlohmann::json::parse(R"({"timers": [{"name": "a.timer",
      "unit": {"LoadState": ["s", 3]}}]})")));
  EXPECT_FALSE(ManagerReadingFromJson(nlohmann::json::parse(R"({"timers": 1})")));
}

}  // namespace
}  // namespace schedwatch::systemd
