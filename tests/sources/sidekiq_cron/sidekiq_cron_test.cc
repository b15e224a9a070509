// The sidekiq_cron source: RESP replies captured from Redis after Sidekiq-cron 1.8 wrote its
// jobs (fixtures/*.resp), read by the pure mapping; the reader's bounds; and the source against
// a loopback server that answers what a hostile Redis would. A real Redis and Sidekiq are
// covered by sidekiq_cron_e2e_test.py.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "schedwatch/timefmt.h"
#include "sources/catalog.h"
#include "sources/repairer.h"
#include "sources/sidekiq_cron/sidekiq_cron_repairer.h"
#include "sources/sidekiq_cron/sidekiq_cron_source.h"
#include "tests/fixtures/loopback.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using sidekiq_cron::ParseReplies;
using sidekiq_cron::RedisValue;
using testing::ReadFile;

const fs::path kFixtures = fs::path(SCHEDWATCH_TEST_DIR) / "sources/sidekiq_cron/fixtures";
constexpr std::int64_t kNow = 1796432600;  // 2026-12-05T01:03:20Z, after the fixtures' enqueues

std::vector<RedisValue> Fixture(const std::string& name) {
  auto replies = ParseReplies(ReadFile(kFixtures / name));
  EXPECT_TRUE(replies.ok()) << replies.error();
  return replies.ok() ? *replies : std::vector<RedisValue>{};
}

TEST(SidekiqCronRedis, RepliesOfSidekiqCronsKeys) {
  auto members = Fixture("smembers.resp");
  ASSERT_EQ(members.size(), 1u);
  ASSERT_TRUE(members[0].is_array());
  std::set<std::string> names;
  for (const auto& member : members[0].elements) names.insert(sidekiq_cron::JobName(member.text));
  EXPECT_EQ(names, (std::set<std::string>{"every5", "nightly", "off"}));
  EXPECT_EQ(sidekiq_cron::JobName("cron_job:"), "");
  EXPECT_EQ(sidekiq_cron::JobName("queue:low"), "");
}

TEST(SidekiqCronRedis, BoundsRefuseHugeRepliesBeforeTakingMemory) {
  // An array header of 2 billion elements, a bulk string of 2 GB that never comes.
  auto array = ParseReplies("*2000000000\r\n:1\r\n");
  ASSERT_FALSE(array.ok());
  EXPECT_NE(array.error().find("more than 1000000 values"), std::string::npos) << array.error();
  sidekiq_cron::ReplyBounds small{1024, 100};
  auto bulk = ParseReplies("$2000000000\r\n" + std::string(4096, 'x'), small);
  ASSERT_FALSE(bulk.ok());
  EXPECT_NE(bulk.error().find("longer than 1024 bytes"), std::string::npos) << bulk.error();
  // Nested arrays count every value.
  std::string nested = "*50\r\n";
  for (int i = 0; i < 50; ++i) nested += "*3\r\n:1\r\n:2\r\n:3\r\n";
  EXPECT_FALSE(ParseReplies(nested, small).ok());
  EXPECT_TRUE(ParseReplies(nested, {1024, 1000}).ok());
  EXPECT_FALSE(ParseReplies("*2\r\n:1\r\n").ok());  // cut short
  EXPECT_FALSE(ParseReplies("?what\r\n").ok());
  auto error = ParseReplies("-NOAUTH Authentication required.\r\n");
  ASSERT_TRUE(error.ok());
  EXPECT_TRUE((*error)[0].is_error());
}

TEST(SidekiqCronMapping, ReadsAJobAsSidekiqCronWroteIt) {
  auto replies = Fixture("nightly.resp");
  ASSERT_EQ(replies.size(), 2u);
  auto job = sidekiq_cron::ReadJob("nightly", replies[0], replies[1]);
  ASSERT_TRUE(job.ok()) << job.error();
  EXPECT_EQ(job->cron, "0 3 * * * Europe/Berlin");
  EXPECT_EQ(job->klass, "NightlyJob");
  EXPECT_EQ(job->queue, "low");
  EXPECT_TRUE(job->enabled());
  EXPECT_EQ(job->last_enqueue_time, ParseRfc3339("2026-12-05T01:02:30Z"));
  ASSERT_EQ(job->history.size(), 2u);
  EXPECT_EQ(job->history[0].jid, "b9d59989438a04584e6dce9f");
  ASSERT_TRUE(job->marker && *job->marker);
  EXPECT_EQ((*job->marker)->role, "nightly");
  EXPECT_EQ((*job->marker)->spec_version, "2");

  LiveObject object = sidekiq_cron::MakeLiveObject(*job, "nightly", "2", "");
  EXPECT_EQ(object.schedule(), "0 3 * * *");
  EXPECT_EQ(object.timezone(), "Europe/Berlin");
  EXPECT_TRUE(object.enabled);

  auto off = Fixture("off.resp");
  auto disabled = sidekiq_cron::ReadJob("off", off[0], off[1]);
  ASSERT_TRUE(disabled.ok()) << disabled.error();
  EXPECT_FALSE(disabled->enabled());
  LiveObject inactive = sidekiq_cron::MakeLiveObject(*disabled, "off", "", "Asia/Tokyo");
  EXPECT_FALSE(inactive.enabled);
  EXPECT_EQ(inactive.schedule(), "@daily");
  EXPECT_EQ(inactive.timezone(), "Asia/Tokyo");  // no suffix: the processes' zone
}

TEST(SidekiqCronMapping, MalformedJobsSayWhy) {
  RedisValue none;
  auto hash = [](std::vector<std::string> texts) {
    RedisValue value;
    value.type = RedisValue::Type::kArray;
    for (auto& text : texts) {
      RedisValue element;
      element.type = RedisValue::Type::kString;
      element.text = text;
      value.elements.push_back(element);
    }
    return value;
  };
  EXPECT_EQ(sidekiq_cron::ReadJob("a", hash({"name", "a"}), none).error(), "it has no cron");
  EXPECT_EQ(sidekiq_cron::ReadJob("a", hash({"name"}), none).error(), "its hash is no hash");
  EXPECT_EQ(sidekiq_cron::ReadJob("a", hash({"cron", std::string(5000, '*')}), none).error(),
            "its cron is no string of at most 4096 bytes");
  // Garbled history entries are skipped, the job kept.
  auto job = sidekiq_cron::ReadJob(
      "a", hash({"cron", "* * * * *", "status", "disabled", "last_enqueue_time", "garbage"}),
      hash({"{\"jid\":1}", "[", "{\"jid\":\"j1\",\"enqueued\":\"2026-12-05 01:00:00 UTC\"}"}));
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(job->last_enqueue_time);
  ASSERT_EQ(job->history.size(), 1u);
  EXPECT_EQ(job->history[0].enqueued, *ParseRfc3339("2026-12-05T01:00:00Z"));
  EXPECT_FALSE(job->marker);
}

TEST(SidekiqCronMapping, EnqueueTimesAndZoneSuffixes) {
  EXPECT_EQ(sidekiq_cron::ParseEnqueueTime("2026-12-05 10:00:00 +0900"),
            ParseRfc3339("2026-12-05T01:00:00Z"));
  EXPECT_EQ(sidekiq_cron::ParseEnqueueTime("2026-12-05 01:00:00 UTC"),
            ParseRfc3339("2026-12-05T01:00:00Z"));
  EXPECT_EQ(sidekiq_cron::ParseEnqueueTime("2026-12-05T01:00:00Z"),
            ParseRfc3339("2026-12-05T01:00:00Z"));
  EXPECT_FALSE(sidekiq_cron::ParseEnqueueTime("2026-12-05 01:00:00 CET"));
  using sidekiq_cron::SplitZone;
  EXPECT_EQ(SplitZone("30 0 3 * * mon America/New_York").fields, "30 0 3 * * mon");
  EXPECT_EQ(SplitZone("30 0 3 * * mon America/New_York").zone, "America/New_York");
  EXPECT_EQ(SplitZone("0 3 * * * +09:00").zone, "Etc/GMT-9");
  EXPECT_EQ(SplitZone("0 3 * * * -0500").zone, "Etc/GMT+5");
  EXPECT_EQ(SplitZone("0 3 * * * +05:30").zone, "+05:30");
  EXPECT_EQ(SplitZone("0 3 * * * UTC").zone, "UTC");
  EXPECT_EQ(SplitZone("0 3 * * mon").zone, "");
  EXPECT_EQ(SplitZone("0 3 * * mon").fields, "0 3 * * mon");
  EXPECT_EQ(SplitZone("@daily").fields, "@daily");
}

TEST(SidekiqCronMapping, MarkerInTheDescriptionElseTheName) {
  auto described =
      sidekiq_cron::JobMarker("Export [schedwatch: role=a spec_version=1]", "[schedwatch: role=b]");
  ASSERT_TRUE(described && *described);
  EXPECT_EQ((*described)->role, "a");
  auto named = sidekiq_cron::JobMarker("", "export [schedwatch: role=b]");
  ASSERT_TRUE(named && *named);
  EXPECT_EQ((*named)->role, "b");
  EXPECT_FALSE(sidekiq_cron::JobMarker("Export", "export"));
  auto broken = sidekiq_cron::JobMarker("[schedwatch: role=a", "x");
  ASSERT_TRUE(broken);
  EXPECT_FALSE(broken->ok());
}

TEST(SidekiqCronMapping, RunsFromJidsAgainstRetryDeadAndWorkSets) {
  auto failed = sidekiq_cron::FailedEntry(
      R"({"retry":true,"queue":"default","class":"Boom","args":[],"jid":"f1","created_at":1796432400.1,)"
      R"("enqueued_at":1796432400.2,"error_message":"boom","error_class":"RuntimeError",)"
      R"("failed_at":1796432401.5,"retry_count":0})");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->first, "f1");
  EXPECT_EQ(failed->second, 1796432401);
  EXPECT_FALSE(sidekiq_cron::FailedEntry(R"({"jid":"x"})"));
  auto work = sidekiq_cron::WorkEntry(
      R"({"queue":"default","payload":"{\"class\":\"Hang\",\"jid\":\"h1\"}","run_at":1796432300})");
  ASSERT_TRUE(work);
  EXPECT_EQ(work->first, "h1");
  EXPECT_EQ(work->second, 1796432300);
  EXPECT_FALSE(sidekiq_cron::WorkEntry(R"({"payload":"{","run_at":1})"));

  sidekiq_cron::CronJob job;
  job.history = {{"new", kNow - 5},
                 {"q1", kNow - 100},
                 {"h1", kNow - 300},
                 {"f1", kNow - 600},
                 {"ok", kNow - 900}};
  job.last_enqueue_time = kNow - 5;
  sidekiq_cron::JidStates states;
  states.failed["f1"] = kNow - 590;
  states.running["h1"] = kNow - 290;
  states.queued.insert("q1");
  RunHistory history = sidekiq_cron::JobHistory(job, states, kNow);
  ASSERT_EQ(history.runs.size(), 5u);
  EXPECT_EQ(history.runs[0].outcome, Run::Outcome::kSucceeded);  // left every set
  EXPECT_EQ(history.runs[1].outcome, Run::Outcome::kFailed);
  EXPECT_EQ(history.runs[1].finished, kNow - 590);
  EXPECT_EQ(history.runs[2].outcome, Run::Outcome::kRunning);  // in a work set
  EXPECT_EQ(history.runs[3].outcome, Run::Outcome::kRunning);  // still in its queue
  EXPECT_EQ(history.runs[4].outcome, Run::Outcome::kRunning);  // before the next heartbeat
  EXPECT_EQ(history.last_started, kNow - 5);
  // A queue too long to read whole: its absent jids are not taken for successes.
  job.queue = "default";
  states.unsure_queues.insert("default");
  EXPECT_EQ(sidekiq_cron::JobHistory(job, states, kNow).runs[0].outcome, Run::Outcome::kRunning);
  EXPECT_EQ(sidekiq_cron::PayloadJid(R"({"class":"A","jid":"q9","args":[]})"), "q9");
}

// A loopback peer that answers what a hostile Redis would.
using FakeRedis = testing::HostilePeer;

Result<SourceSnapshot> ListFrom(int port, const std::string& extra = "") {
  auto spec = ParseSpec(fmt::format(R"(version: 1
sources: {{app: {{type: sidekiq_cron, url: "redis://127.0.0.1:{}/0"{}}}}}
jobs:
  - {{role: nightly, source: app, schedule: "0 3 * * *", timezone: Europe/Berlin, spec_version: "2"}}
)",
                                    port, extra),
                        "/spec.yaml", BuiltInCatalog());
  EXPECT_TRUE(spec.ok()) << spec.error();
  if (!spec.ok()) return Error{spec.error()};
  SourceOptions options{&spec->sources.at("app"), {&spec->jobs[0]}, {}};
  auto source = SidekiqCronSource::Create(options);
  if (!source) return Error{source.error()};
  return (*source)->List({kNow, nullptr});
}

TEST(SidekiqCronSource, AnEndlessReplyIsRefusedAtTheBound) {
  FakeRedis server("$9000000000\r\n", /*endless=*/true);
  auto snapshot = ListFrom(server.port());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.error().find("a reply longer than"), std::string::npos) << snapshot.error();
}

TEST(SidekiqCronSource, ASilentServerTimesOut) {
  FakeRedis server("", false);
  auto snapshot = ListFrom(server.port(), ", timeout: 1s");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.error().find("no whole answer within the timeout (0 of 1 replies)"),
            std::string::npos)
      << snapshot.error();
}

TEST(SidekiqCronSource, AnErrorReplyIsAnErrorNotAnEmptyList) {
  FakeRedis server("-NOAUTH Authentication required.\r\n", false);
  auto snapshot = ListFrom(server.port());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(), "SMEMBERS cron_jobs: NOAUTH Authentication required.");
}

TEST(SidekiqCronSource, TheWrongPasswordIsNowhereInTheError) {
  // A server that echoes what it was sent, as a broken proxy might.
  testing::TempDir dir;
  const std::string password = "s3cret-Pa55word";
  testing::WriteFile(dir.path() / "password", password + "\n");
  FakeRedis server("-WRONGPASS invalid password " + password + "\r\n", false);
  auto snapshot = ListFrom(server.port(),
                           fmt::format(", password_file: {}", (dir.path() / "password").string()));
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().find(password), std::string::npos) << snapshot.error();
  EXPECT_NE(snapshot.error().find("WRONGPASS"), std::string::npos) << snapshot.error();
}

TEST(SidekiqCronSource, NothingListeningIsAnError) {
  auto snapshot = ListFrom(testing::UnusedLoopbackPort());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.error().find("connect to 127.0.0.1:"), std::string::npos) << snapshot.error();
}

JobSpec NightlyJob() {
  auto spec = ParseSpec(R"(version: 1
sources: {app: {type: sidekiq_cron}}
jobs:
  - {role: nightly, source: app, schedule: "0 3 * * *", timezone: Europe/Berlin, spec_version: "2"}
)",
                        "/spec.yaml", BuiltInCatalog());
  EXPECT_TRUE(spec.ok()) << spec.error();
  return spec->jobs.at(0);
}

constexpr const char* kTemplate = R"(name: nightly_export
cron: "0 3 * * * Europe/Berlin"
class: ExportWorker
queue: exports
args: [s3://exports, 3, {full: true}]
description: "Nightly export [schedwatch: role=nightly spec_version=2]"
)";

TEST(SidekiqCronRepair, TheHashIsJobSavesFields) {
  auto read = sidekiq_cron::ReadJobTemplate(kTemplate, NightlyJob(), "");
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read->name, "nightly_export");
  // As Sidekiq-cron 1.8's Job#save wrote them for the same job (captured with redis-cli).
  std::vector<std::pair<std::string, std::string>> expected = {
      {"name", "nightly_export"},
      {"klass", "ExportWorker"},
      {"cron", "0 3 * * * Europe/Berlin"},
      {"description", "Nightly export [schedwatch: role=nightly spec_version=2]"},
      {"args", R"(["s3://exports",3,{"full":true}])"},
      {"date_as_argument", "false"},
      {"message",
       R"({"queue":"exports","class":"ExportWorker","args":["s3://exports",3,{"full":true}]})"},
      {"status", "enabled"},
      {"active_job", "false"},
      {"queue_name_prefix", ""},
      {"queue_name_delimiter", ""},
      {"last_enqueue_time", ""},
      {"symbolize_args", "false"}};
  EXPECT_EQ(read->fields, expected);
  // A mapping is one argument, no args an empty list, no queue the default one.
  std::string text = kTemplate;
  auto one = sidekiq_cron::ReadJobTemplate(
      std::string(text).replace(text.find("[s3"), text.find("]\n") - text.find("[s3") + 1,
                                "{a: 1}"),
      NightlyJob(), "");
  ASSERT_TRUE(one.ok()) << one.error();
  EXPECT_EQ(one->fields[4].second, R"([{"a":1}])");
  auto bare = sidekiq_cron::ReadJobTemplate(
      "name: n\ncron: 0 3 * * *\nklass: K\ndescription: '[schedwatch: role=nightly "
      "spec_version=2]'\n",
      NightlyJob(), "Europe/Berlin");
  ASSERT_TRUE(bare.ok()) << bare.error();
  EXPECT_EQ(bare->fields[4].second, "[]");
  EXPECT_EQ(bare->fields[6].second, R"({"queue":"default","class":"K","args":[]})");
}

TEST(SidekiqCronRepair, TemplatesOfAnotherJobAreRefused) {
  auto refused = [](std::string_view from, std::string_view to) {
    std::string text = kTemplate;
    text.replace(text.find(from), from.size(), to);
    auto read = sidekiq_cron::ReadJobTemplate(text, NightlyJob(), "");
    return read.ok() ? std::string("accepted") : read.error();
  };
  EXPECT_EQ(refused("role=nightly", "role=other"),
            "description: the marker's role is other, not nightly");
  EXPECT_NE(refused("0 3 * * * Europe", "0 4 * * * Europe").find("not the job's schedule"),
            std::string::npos);
  EXPECT_NE(refused("Europe/Berlin", "UTC").find("not the job's schedule"), std::string::npos);
  EXPECT_NE(refused("spec_version=2", "spec_version=1").find("spec_version 1"), std::string::npos);
  EXPECT_EQ(refused("queue: exports", "status: disabled"),
            "status: disabled would create a disabled job");
  EXPECT_EQ(refused("queue: exports", "retry: 3"),
            "unknown key the value \"retry\" (name, cron, class or klass, queue, args, "
            "description, status)");
  EXPECT_EQ(refused("queue: exports", "klass: Other"), "class and klass: give one");
  EXPECT_NE(refused("[schedwatch: role=nightly spec_version=2]", "").find("must carry"),
            std::string::npos);
  EXPECT_EQ(refused("name: nightly_export", "name: \"a\\nb\""), "name: a control character");
  EXPECT_EQ(refused("class: ExportWorker", "class: [A]"), "class: must be a string");
  // Aliases expanding into 100,000 arguments are refused at the budget.
  std::string bomb =
      "name: n\ncron: 0 3 * * * Europe/Berlin\nclass: K\n"
      "description: '[schedwatch: role=nightly spec_version=2]'\nargs: [&a [1, 2, 3, 4, 5, 6, 7, "
      "8, 9, 10]";
  for (char level = 'b'; level <= 'e'; ++level) {
    bomb += fmt::format(", &{} [", level);
    for (int i = 0; i < 10; ++i) bomb += fmt::format("{}*{}", i ? ", " : "", char(level - 1));
    bomb += "]";
  }
  bomb += "]\n";
  auto read = sidekiq_cron::ReadJobTemplate(bomb, NightlyJob(), "");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error(), "args: more than 10000 values");
}

TEST(SidekiqCronRepair, ReconcileCanRepairSidekiqCron) {
  auto spec = ParseSpec(R"(version: 1
sources: {app: {type: sidekiq_cron}}
jobs: []
)",
                        "/spec.yaml", BuiltInCatalog());
  ASSERT_TRUE(spec.ok()) << spec.error();
  auto repairer = MakeRepairer(spec->sources.at("app"));
  EXPECT_TRUE(repairer.ok()) << repairer.error();
}

TEST(SidekiqCronSpec, UrlsAndSettings) {
  using sidekiq_cron::ParseRedisUrl;
  EXPECT_EQ(ParseRedisUrl("redis://10.0.0.5:6380/3")->port, 6380);
  EXPECT_EQ(ParseRedisUrl("redis://10.0.0.5:6380/3")->db, 3);
  EXPECT_EQ(ParseRedisUrl("redis://[::1]:7000")->host, "::1");
  EXPECT_EQ(ParseRedisUrl("unix:///run/redis/redis.sock?db=2")->socket, "/run/redis/redis.sock");
  EXPECT_EQ(ParseRedisUrl("unix:/run/redis.sock")->socket, "/run/redis.sock");
  EXPECT_NE(ParseRedisUrl("rediss://h:6380").error().find("hiredis 0.14 lacks"), std::string::npos);
  EXPECT_EQ(ParseRedisUrl("redis://:pw@h:6379").error(),
            "credentials in the url are refused: set password_file or password_env");
  EXPECT_FALSE(ParseRedisUrl("redis://h:99999").ok());
  EXPECT_FALSE(ParseRedisUrl("unix:relative.sock").ok());
  auto spec = ParseSpec(R"(version: 1
sources: {app: {type: sidekiq_cron, url: "rediss://h:6380"}}
jobs: []
)",
                        "/spec.yaml", BuiltInCatalog());
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.error().find("rediss:// needs TLS"), std::string::npos) << spec.error();
  auto macro = ParseSpec(R"(version: 1
sources: {app: {type: sidekiq_cron}}
jobs:
  - {role: a, source: app, schedule: "@noon", spec_version: "1"}
  - {role: b, source: app, schedule: "30 */5 * * * *", spec_version: "1"}
)",
                         "/spec.yaml", BuiltInCatalog());
  ASSERT_TRUE(macro.ok()) << macro.error();
  EXPECT_EQ(macro->jobs[0].schedule.expression().dialect(), CronDialect::kSidekiqCron);
  EXPECT_TRUE(macro->jobs[0].schedule.SameAs("0 12 * * *"));
}

}  // namespace
}  // namespace schedwatch
