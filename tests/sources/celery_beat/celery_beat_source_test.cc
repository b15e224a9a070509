// The celery_beat source over a SQLite database with django-celery-beat's schema (as its
// migrations make it): what each row becomes, inactive reasons, markers, beat down as one
// problem of the source, and the connection string's password kept out of every message.
#include "sources/celery_beat/celery_beat_source.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "sources/catalog.h"
#include "sources/celery_beat/celery_beat_mapping.h"
#include "sources/repairer.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

constexpr std::int64_t kNow = 1796040000;  // 2026-11-30T12:00:00Z
const fs::path kFixtures = fs::path(SCHEDWATCH_TEST_DIR) / "sources/celery_beat/fixtures";

class CeleryBeatSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (dir_.path() / "db.sqlite3").string();
    Exec(ReadFile(kFixtures / "django_celery_beat_schema.sql"));
  }

  void Exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error != nullptr ? error : "") << "\n" << sql;
    sqlite3_free(error);
    sqlite3_close(db);
  }

  static std::string Quoted(const std::string& text) {  // inside '...' in SQL
    std::string quoted;
    for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return quoted;
  }

  // A crontab task as Django writes it (times in UTC, "YYYY-MM-DD HH:MM:SS.ffffff").
  void AddCrontabTask(int id, const std::string& name, const std::string& description,
                      const std::string& last_run_at, const std::string& fields = "0 3 * * *",
                      const std::string& zone = "Europe/Berlin", bool enabled = true,
                      const std::string& extra = "") {
    std::istringstream in(fields);
    std::string m, h, dom, moy, dow;
    in >> m >> h >> dom >> moy >> dow;
    Exec(fmt::format(
        "INSERT INTO django_celery_beat_crontabschedule (id, minute, hour, day_of_week, "
        "day_of_month, month_of_year, timezone) VALUES ({0}, '{1}', '{2}', '{3}', '{4}', '{5}', "
        "'{6}');"
        "INSERT INTO django_celery_beat_periodictask (id, name, task, args, kwargs, exchange, "
        "routing_key, expires, enabled, last_run_at, total_run_count, date_changed, description, "
        "crontab_id, one_off, start_time, priority, headers, clocked_id, expire_seconds, "
        "queue) VALUES ({0}, '{7}', 'app.tasks.{7}', '[]', '{{}}', NULL, NULL, NULL, {8}, {9}, 0, "
        "'2026-11-01 00:00:00', '{10}', {0}, 0, NULL, NULL, '{{}}', NULL, NULL, NULL);{11}",
        id, m, h, dow, dom, moy, zone, Quoted(name), enabled ? 1 : 0,
        last_run_at.empty() ? "NULL" : "'" + last_run_at + "'", description, extra));
  }

  std::unique_ptr<CeleryBeatSource> Make(const std::string& settings) {
    const std::string text = fmt::format(R"(version: 1
sources:
  beat:
    type: celery_beat
{}
jobs:
  - {{role: nightly, source: beat, schedule: "0 3 * * *", timezone: Europe/Berlin, spec_version: "1"}}
  - {{role: heartbeat, source: beat, schedule: "@every 30s", spec_version: "1"}}
  - {{role: report, source: beat, schedule: "30 6 * * mon-fri", timezone: UTC, spec_version: "1"}}
)",
                                         settings);
    auto parsed = ParseSpec(text, (dir_.path() / "spec.yaml").string(), BuiltInCatalog());
    EXPECT_TRUE(parsed.ok()) << parsed.error();
    if (!parsed.ok()) return nullptr;
    spec_ = std::make_unique<Spec>(std::move(*parsed));
    SourceOptions options;
    options.spec = &spec_->sources.at("beat");
    for (const auto& job : spec_->jobs) options.jobs.push_back(&job);
    auto source = CeleryBeatSource::Create(options);
    EXPECT_TRUE(source.ok()) << source.error();
    return std::move(*source);
  }

  std::unique_ptr<CeleryBeatSource> MakeSqlite() {
    return Make(fmt::format("    dsn: sqlite://{}", db_));
  }

  static const LiveObject* Object(const SourceSnapshot& snapshot, const std::string& role) {
    for (const auto& object : snapshot.objects) {
      if (object.role() == role) return &object;
    }
    return nullptr;
  }

  TempDir dir_;
  std::string db_;
  std::unique_ptr<Spec> spec_;
};

TEST_F(CeleryBeatSourceTest, ReadsCrontabAndIntervalTasksWithTheirMarkers) {
  AddCrontabTask(1, "nightly", "Export [schedwatch: role=nightly spec_version=1]",
                 "2026-11-30 02:00:00.125000", "0 3 * * *");
  AddCrontabTask(2, "unmarked", "", "2026-11-30 11:59:00");
  Exec(
      "INSERT INTO django_celery_beat_intervalschedule (id, every, period) VALUES (1, 30, "
      "'seconds');"
      "INSERT INTO django_celery_beat_periodictask (id, name, task, args, kwargs, enabled, "
      "last_run_at, total_run_count, date_changed, description, interval_id, one_off, headers) "
      "VALUES (3, 'beat-heart', 'app.tasks.ping', '[]', '{}', 1, '2026-11-30 11:59:45', 5, "
      "'2026-11-01 00:00:00', '[schedwatch: role=heartbeat spec_version=1]', 1, 0, '{}');");
  auto source = MakeSqlite();
  auto snapshot = source->List(ListContext{kNow, nullptr});
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->history_error, "");
  ASSERT_EQ(snapshot->objects.size(), 2u);
  const LiveObject* nightly = Object(*snapshot, "nightly");
  ASSERT_NE(nightly, nullptr);
  EXPECT_EQ(nightly->id(), "nightly");
  EXPECT_EQ(nightly->schedule(), "0 3 * * *");
  EXPECT_EQ(nightly->timezone(), "Europe/Berlin");
  EXPECT_EQ(nightly->spec_version(), "1");
  EXPECT_TRUE(nightly->enabled);
  EXPECT_EQ(snapshot->history.at("nightly").last_started, 1796004000);  // 02:00:00Z, to the second
  const LiveObject* heart = Object(*snapshot, "heartbeat");
  ASSERT_NE(heart, nullptr);
  EXPECT_EQ(heart->schedule(), "@every 30s");
  EXPECT_EQ(heart->timezone(), "");
  EXPECT_EQ(heart->next_start, kNow - 15 + 30);
  EXPECT_TRUE(spec_->jobs[1].schedule.SameAs(heart->schedule()));
}

TEST_F(CeleryBeatSourceTest, SaysWhyATaskIsInactive) {
  AddCrontabTask(1, "off", "[schedwatch: role=nightly spec_version=1]", "2026-11-30 02:00:00",
                 "0 3 * * *", "Europe/Berlin", /*enabled=*/false);
  AddCrontabTask(2, "old", "[schedwatch: role=report spec_version=1]", "2026-11-30 06:30:00",
                 "30 6 * * mon-fri", "UTC", true,
                 "UPDATE django_celery_beat_periodictask SET expires = '2026-11-30 08:00:00' "
                 "WHERE id = 2;");
  AddCrontabTask(3, "once", "[schedwatch: role=heartbeat spec_version=1]", "2026-11-30 11:00:00",
                 "0 11 * * *", "UTC", true,
                 "UPDATE django_celery_beat_periodictask SET one_off = 1, total_run_count = 1 "
                 "WHERE id = 3;");
  auto snapshot = MakeSqlite()->List(ListContext{kNow, nullptr});
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  ASSERT_EQ(snapshot->objects.size(), 3u);
  EXPECT_FALSE(Object(*snapshot, "nightly")->enabled);
  EXPECT_EQ(Object(*snapshot, "nightly")->state(), "disabled (enabled = false)");
  EXPECT_EQ(Object(*snapshot, "report")->state(), "expired at 2026-11-30T08:00:00Z");
  EXPECT_EQ(Object(*snapshot, "heartbeat")->state(), "a one_off task that has run");
}

TEST_F(CeleryBeatSourceTest, BeatDownIsOneProblemOfTheSourceNotOnePerTask) {
  // Every task last ran on the 28th; the nightly's fire time on the 29th passed with none newer.
  AddCrontabTask(1, "nightly", "[schedwatch: role=nightly spec_version=1]", "2026-11-28 02:00:00");
  AddCrontabTask(2, "report", "[schedwatch: role=report spec_version=1]", "2026-11-27 06:30:00",
                 "30 6 * * mon-fri", "UTC");
  auto snapshot = MakeSqlite()->List(ListContext{kNow, nullptr});
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->history_error,
            "beat is not running: periodic task \"nightly\" was due at 2026-11-29T02:00:00Z and no "
            "task's last_run_at has moved since 2026-11-28T02:00:00Z");
  EXPECT_TRUE(snapshot->history.empty());
  EXPECT_EQ(snapshot->objects.size(), 2u);  // existence is still judged
}

TEST_F(CeleryBeatSourceTest, OneTaskLateWhileOthersRunIsThatTasksOwn) {
  // The report's last run is old, but the nightly ran after the report's missed fire time.
  AddCrontabTask(1, "nightly", "[schedwatch: role=nightly spec_version=1]", "2026-11-30 11:00:00",
                 "0 11 * * *", "UTC");
  AddCrontabTask(2, "report", "[schedwatch: role=report spec_version=1]", "2026-11-26 06:30:00",
                 "30 6 * * mon-fri", "UTC");
  auto snapshot = MakeSqlite()->List(ListContext{kNow, nullptr});
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->history_error, "");
  EXPECT_EQ(snapshot->history.at("report").last_started, 1796020200 - 4 * 86400);
}

TEST_F(CeleryBeatSourceTest, BadRowsAndMarkersAreProblemsTheRestIsRead) {
  AddCrontabTask(1, "nightly", "[schedwatch: role=nightly spec_version=1]", "2026-11-30 02:00:00");
  AddCrontabTask(2, "broken", "[schedwatch: role=report spec_version=1]", "not a time");
  AddCrontabTask(3, "badmarker", "[schedwatch: role= spec_version=1]", "2026-11-30 02:00:00");
  auto snapshot = MakeSqlite()->List(ListContext{kNow, nullptr});
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->objects.size(), 1u);
  std::string problems;
  for (const auto& p : snapshot->problems) problems += p.reason + ": " + p.message + "\n";
  EXPECT_NE(problems.find("malformed_object: periodic task \"broken\": last_run_at is not a time"),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("malformed_marker: periodic task \"badmarker\""), std::string::npos)
      << problems;
}

TEST_F(CeleryBeatSourceTest, AnUnreadableDatabaseIsAnErrorNeverAnEmptyList) {
  auto source = Make(fmt::format("    dsn: sqlite://{}/absent.sqlite3", dir_.path().string()));
  auto snapshot = source->List(ListContext{kNow, nullptr});
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.error().find("cannot open SQLite database"), std::string::npos)
      << snapshot.error();
  EXPECT_FALSE(fs::exists(dir_.path() / "absent.sqlite3"));  // read-only: never created
}

TEST_F(CeleryBeatSourceTest, ThePasswordIsInNoMessage) {
  const std::string password = "s3cretPassw0rdXYZ";
  WriteFile(dir_.path() / "dsn",
            fmt::format("host=127.0.0.1 port=1 dbname=app user=monitor password={}\n", password));
  auto source = Make(fmt::format("    dsn_file: {}", (dir_.path() / "dsn").string()));
  auto snapshot = source->List(ListContext{kNow, nullptr});
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.error().find("cannot connect to PostgreSQL"), std::string::npos)
      << snapshot.error();
  EXPECT_EQ(snapshot.error().find(password), std::string::npos) << snapshot.error();
  // In the spec itself a password is refused, and the message does not repeat it.
  auto parsed = ParseSpec(fmt::format(R"(version: 1
sources:
  beat: {{type: celery_beat, dsn: "postgresql://monitor:{}@db/app"}}
jobs: []
)",
                                      password),
                          "spec.yaml", BuiltInCatalog());
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().find("holds a password"), std::string::npos) << parsed.error();
  EXPECT_EQ(parsed.error().find(password), std::string::npos) << parsed.error();
}

TEST_F(CeleryBeatSourceTest, DiscoverDraftsEveryTaskAndPrintsTheUpdateThatMarksIt) {
  AddCrontabTask(1, "nightly", "Nightly export [schedwatch: role=nightly spec_version=1]",
                 "2026-11-30 02:00:00");
  AddCrontabTask(2, "it's weekly", "Weekly report", "2026-11-30 02:00:00", "0 6 * * mon", "UTC");
  AddCrontabTask(3, "off", "", "", "0 6 * * mon", "UTC", /*enabled=*/false);
  MakeSqlite();
  auto discoverer = MakeCeleryBeatDiscoverer(SourceOptions{&spec_->sources.at("beat"), {}, {}});
  ASSERT_TRUE(discoverer.ok()) << discoverer.error();
  auto discovery = (*discoverer)->Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery.ok()) << discovery.error();
  ASSERT_EQ(discovery->objects.size(), 3u);
  EXPECT_EQ(discovery->objects[0].role, "nightly");
  EXPECT_TRUE(discovery->objects[0].marked);
  EXPECT_EQ(discovery->objects[1].schedule, "0 6 * * mon");
  EXPECT_EQ(discovery->objects[1].timezone, "UTC");
  EXPECT_EQ(discovery->objects[2].not_run_because, "disabled (enabled = false)");
  EXPECT_EQ((*discoverer)->MarkerInstructions(discovery->objects[1], "weekly", "1"),
            "periodic task \"it's weekly\": set its description (Django admin: Periodic tasks, "
            "Description) to\n  Weekly report [schedwatch: role=weekly spec_version=1]\n  UPDATE "
            "django_celery_beat_periodictask SET description = 'Weekly report [schedwatch: "
            "role=weekly spec_version=1]' WHERE name = 'it''s weekly';\n");
}

TEST_F(CeleryBeatSourceTest, RepairerInsertsAMissingTaskFromItsTemplateNeverOverAnother) {
  AddCrontabTask(1, "other", "", "", "0 3 * * *", "Europe/Berlin");  // an equal crontab row
  auto source = MakeSqlite();  // Its spec_ outlives the jobs held below.
  auto repairer = MakeRepairer(spec_->sources.at("beat"));
  ASSERT_TRUE(repairer.ok()) << repairer.error();
  const JobSpec& nightly = *spec_->FindJob("nightly");
  const JobSpec& heartbeat = *spec_->FindJob("heartbeat");
  const std::string nightly_template = R"(name: nightly
task: app.tasks.export
description: "Export [schedwatch: role=nightly spec_version=1]"
crontab: "0 3 * * *"
timezone: Europe/Berlin
kwargs: '{"to": "s3"}'
)";
  // Templates that would not create exactly this job are refused before anything is written.
  for (auto [text, message] : {
           std::pair{std::string("name: x\n"), "task: missing"},
           std::pair{nightly_template + "owner: me\n", "unknown key"},
           std::pair{nightly_template + "every: '30'\nperiod: seconds\n", "either crontab"},
           std::pair{std::string(R"(name: nightly
task: t
description: "[schedwatch: role=heartbeat spec_version=1]"
crontab: "0 3 * * *"
timezone: Europe/Berlin
)"),
                     "the marker's role is heartbeat"},
           std::pair{std::string(R"(name: nightly
task: t
description: "[schedwatch: role=nightly spec_version=1]"
crontab: "0 4 * * *"
timezone: Europe/Berlin
)"),
                     "not the job's"},
           std::pair{nightly_template + "args: '{}'\n", "args: must be a JSON list"},
       }) {
    auto validated = (*repairer)->Validate(nightly, text);
    ASSERT_FALSE(validated.ok()) << text;
    EXPECT_NE(validated.error().find(message), std::string::npos) << validated.error();
  }
  ASSERT_TRUE((*repairer)->Validate(nightly, nightly_template).ok());
  auto created = (*repairer)->Create(nightly, nightly_template);
  ASSERT_TRUE(created.ok()) << created.error();
  EXPECT_FALSE(created->already_exists);
  EXPECT_EQ(created->what, "periodic task \"nightly\"");
  auto interval = (*repairer)->Create(heartbeat, R"(name: heartbeat
task: app.tasks.ping
description: "[schedwatch: role=heartbeat spec_version=1]"
every: "30"
period: seconds
)");
  ASSERT_TRUE(interval.ok()) << interval.error();
  // A task of that name is never written over.
  auto again = (*repairer)->Create(nightly, nightly_template);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->already_exists);

  auto snapshot = source->List(ListContext{kNow, nullptr});
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->objects.size(), 2u);
  const LiveObject* task = Object(*snapshot, "nightly");
  ASSERT_NE(task, nullptr);
  EXPECT_FALSE(Drifted(nightly, *task));
  ASSERT_NE(Object(*snapshot, "heartbeat"), nullptr);
  EXPECT_FALSE(Drifted(heartbeat, *Object(*snapshot, "heartbeat")));
  // The equal crontab row is reused; PeriodicTasks.last_update is set as Django's changed() does.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  auto scalar = [db](const char* sql) {
    sqlite3_stmt* statement = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &statement, nullptr), SQLITE_OK) << sql;
    std::string value;
    if (sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
      value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
    }
    sqlite3_finalize(statement);
    return value;
  };
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM django_celery_beat_crontabschedule"), "1");
  EXPECT_EQ(scalar("SELECT crontab_id || ' ' || kwargs || ' ' || enabled || ' ' || one_off || ' ' "
                   "|| headers FROM django_celery_beat_periodictask WHERE name = 'nightly'"),
            "1 {\"to\": \"s3\"} 1 0 {}");
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM django_celery_beat_periodictasks WHERE ident = 1 AND "
                   "last_update IS NOT NULL"),
            "1");
  sqlite3_close(db);
}

TEST_F(CeleryBeatSourceTest, RepairersPasswordIsInNoMessage) {
  const std::string password = "Repair-S3cret-77";
  WriteFile(dir_.path() / "repair-dsn",
            fmt::format("host=127.0.0.1 port=1 dbname=app user=repair password={}\n", password));
  Make(fmt::format("    dsn: sqlite://{}\n    repair_dsn_file: {}", db_,
                   (dir_.path() / "repair-dsn").string()));
  auto repairer = MakeRepairer(spec_->sources.at("beat"));
  ASSERT_TRUE(repairer.ok()) << repairer.error();
  auto created = (*repairer)->Create(*spec_->FindJob("heartbeat"), R"(name: heartbeat
task: app.tasks.ping
description: "[schedwatch: role=heartbeat spec_version=1]"
every: "30"
period: seconds
)");
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.error().find("cannot connect to PostgreSQL"), std::string::npos)
      << created.error();
  EXPECT_EQ(created.error().find(password), std::string::npos) << created.error();
}

}  // namespace
}  // namespace schedwatch
