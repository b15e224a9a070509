// The crontab reader against fixture text. The syntax cases and limits below were checked
// against the real daemon (cron 3.0pl1-162 -L 15): "accepted" means cron loaded the file,
// otherwise cron logged the quoted error and ignored the whole file.
#include "sources/crontab/crontab_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace schedwatch::crontab {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

const std::string kFixtures = std::string(SCHEDWATCH_TEST_DIR) + "/sources/crontab/fixtures/";

const CrontabEntry* FindRole(const ParsedCrontab& parsed, const std::string& role) {
  for (const auto& entry : parsed.entries) {
    if (entry.role == role) return &entry;
  }
  return nullptr;
}

std::vector<std::string> Reasons(const ParsedCrontab& parsed) {
  std::vector<std::string> reasons;
  for (const auto& problem : parsed.problems) reasons.emplace_back(ReasonName(problem.reason));
  return reasons;
}

TEST(CrontabFileTest, MarkedFixture) {
  std::string text = testing::ReadFile(kFixtures + "marked.crontab");
  ParsedCrontab parsed = ParseCrontab(text, CrontabKind::kSystem, "", nullptr);
  ASSERT_EQ(parsed.ignored_because, "");

  EXPECT_THAT(parsed.environment,
              ElementsAre(Pair("SHELL", "/bin/sh"), Pair("PATH", "/usr/local/bin:/usr/bin:/bin"),
                          Pair("MAILTO", ""), Pair("INDENTED", "keeps spaces")));

  const CrontabEntry* retry = FindRole(parsed, "retry");
  ASSERT_NE(retry, nullptr);
  EXPECT_EQ(retry->line, 8);
  EXPECT_EQ(retry->schedule, "*/10 * * * *");
  EXPECT_EQ(retry->user, "root");
  EXPECT_EQ(retry->command, "/usr/local/bin/retry --queue main");
  EXPECT_EQ(retry->spec_version, "7");
  EXPECT_TRUE(retry->enabled);

  const CrontabEntry* gate = FindRole(parsed, "gate");
  ASSERT_NE(gate, nullptr);
  EXPECT_FALSE(gate->enabled);  // commented out under its marker
  EXPECT_EQ(gate->schedule, "*/5 * * * *");
  EXPECT_EQ(gate->user, "app");
  EXPECT_EQ(gate->spec_version, "3");

  const CrontabEntry* gate_old = FindRole(parsed, "gate-old");
  ASSERT_NE(gate_old, nullptr);
  EXPECT_FALSE(gate_old->enabled);
  EXPECT_EQ(gate_old->command, "/usr/local/bin/gate --old");

  ASSERT_NE(FindRole(parsed, "warmup"), nullptr);
  EXPECT_EQ(FindRole(parsed, "warmup")->schedule, "@reboot");
  ASSERT_NE(FindRole(parsed, "report"), nullptr);
  EXPECT_EQ(FindRole(parsed, "report")->schedule, "@daily");
  EXPECT_EQ(LoggedCommand(FindRole(parsed, "report")->command), "/usr/local/bin/report");
  ASSERT_NE(FindRole(parsed, "backup"), nullptr);
  EXPECT_EQ(FindRole(parsed, "backup")->schedule, "30 2 * jan-dec mon-fri");

  // The run-parts line has no marker: an entry, but no role.
  int unmarked = 0;
  for (const auto& entry : parsed.entries) unmarked += entry.role.empty();
  EXPECT_EQ(unmarked, 1);
  EXPECT_EQ(FindRole(parsed, "ghost"), nullptr);

  EXPECT_THAT(Reasons(parsed), ElementsAre("marker_without_entry", "marker_without_entry",
                                           "malformed_marker", "malformed_marker"));
  EXPECT_EQ(parsed.problems[0].message,
            "line 25: marker for role \"ghost\" is followed by a blank line");
  EXPECT_EQ(parsed.problems[2].message, "line 32: marker has no role=...");
  EXPECT_EQ(parsed.problems[3].message,
            "line 33: unknown marker key \"sepc_version\" (role, spec_version)");
}

TEST(CrontabFileTest, UserCrontabHasNoUserField) {
  ParsedCrontab parsed = ParseCrontab(
      "# schedwatch: role=sync spec_version=1\n*/15 * * * *   /home/alice/bin/sync --all\n",
      CrontabKind::kUser, "alice", nullptr);
  ASSERT_EQ(parsed.entries.size(), 1u);
  EXPECT_EQ(parsed.entries[0].user, "alice");
  EXPECT_EQ(parsed.entries[0].command, "/home/alice/bin/sync --all");
  // The same line in a system crontab names the user "/home/alice/bin/sync".
  UserTable users = UserTable::FromPasswd("root:x:0:0::/root:/bin/sh\n");
  parsed =
      ParseCrontab("*/15 * * * *   /home/alice/bin/sync --all\n", CrontabKind::kSystem, "", &users);
  EXPECT_EQ(parsed.ignored_because, "line 1: bad username");
}

// Found by fuzz/crontab_fuzzer: a uid field of 10 or more characters was still multiplied out,
// a signed overflow (UBSan aborts on it in the sanitizer builds).
TEST(CrontabFileTest, PasswdWithOverlongUidFieldsIsReadWithoutOverflow) {
  UserTable users = UserTable::FromPasswd(
      "root:x:0:0:root:/root:/bin/bash\n"
      "long:x:99999999999999999999999:0::/:/bin/sh\n"
      "junk:x:backup:xwatch: role=a eue mainc_versSHELL=/bin/sh\n"
      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
  EXPECT_EQ(users.Uid("root"), 0);
  EXPECT_EQ(users.Uid("long"), std::nullopt);
  EXPECT_EQ(users.Uid("junk"), std::nullopt);
  EXPECT_EQ(users.Uid("nobody"), 65534);
}

struct SyntaxCase {
  const char* schedule;
  const char* error;  // "" = cron accepts it
};

// Each case was one /etc/cron.d file `<schedule> root echo ok` read by the real daemon.
const SyntaxCase kSyntaxCases[] = {
    {"5/10 * * * *", "bad minute"},
    {"*/0 * * * *", "bad minute"},
    {"*/60 * * * *", ""},
    {"*/61 * * * *", ""},
    {"0-59/15 * * * *", ""},
    {"59-0 * * * *", ""},
    {"60 * * * *", "bad minute"},
    {"1,,2 * * * *", "bad minute"},
    {"1, * * * *", "bad minute"},
    {"*/5,10 * * * *", ""},
    {"1-5/2,30 * * * *", ""},
    {"a * * * *", "bad minute"},
    {"01 * * * *", ""},
    {"*5 * * * *", ""},
    {"-5 * * * *", "bad minute"},
    {"5- * * * *", "bad minute"},
    {"*-5 * * * *", ""},
    {"0 24 * * *", "bad hour"},
    {"0 0 0 * *", "bad day-of-month"},
    {"0 0 32 * *", "bad day-of-month"},
    {"0 0 L * *", "bad day-of-month"},
    {"0 0 ? * *", "bad day-of-month"},
    {"0 0 * 0 *", "bad month"},
    {"0 0 * 13 *", "bad month"},
    {"0 0 * jan *", ""},
    {"0 0 * Jan-mar/2 *", ""},
    {"0 0 * january *", "bad month"},
    {"0 0 * * 7", ""},
    {"0 0 * * 8", "bad day-of-week"},
    {"0 0 * * 0-7", ""},
    {"0 0 * * Sun", ""},
    {"0 0 * * SUNDAY", "bad day-of-week"},
    {"0 0 * * mon-fri", ""},
    {"0 0 * * 1-5/2", ""},
    {"0 0 * * */sun", "bad day-of-week"},
    {"*/jan * * * *", "bad minute"},
    {"*/100 * * * *", ""},
    {"*/5x * * * *", "bad minute"},
    {"5x * * * *", "bad minute"},
    {"0000000000000000000000000000000000000005 * * * *", ""},
    {"+5 * * * *", "bad minute"},
    {"5\t*\t*\t*\t*", ""},
    {"* * * *", "bad day-of-week"},
    {"@daily", ""},
    {"@DAILY", "bad time specifier"},
    {"@reboot", ""},
    {"@midnight", ""},
    {"@annually", ""},
    {"@", "bad time specifier"},
    {"@dailyx", "bad time specifier"},
    {"0 0 * * mon-sun", ""},  // backwards: valid, never runs
};

TEST(CrontabFileTest, SyntaxMatchesDebianCron) {
  UserTable users = UserTable::FromPasswd("root:x:0:0:root:/root:/bin/bash\n");
  for (const auto& test : kSyntaxCases) {
    std::string line = std::string(test.schedule) + " root echo ok";
    auto entry = ParseCronEntry(line, CrontabKind::kSystem, &users);
    EXPECT_EQ(entry.ok() ? "" : entry.error(), test.error) << line;
    ParsedCrontab parsed = ParseCrontab(line + "\n", CrontabKind::kSystem, "", &users);
    EXPECT_EQ(parsed.ignored_because.empty(), std::string(test.error).empty()) << line;
  }
}

TEST(CrontabFileTest, UserFieldAndCommand) {
  UserTable users = UserTable::FromPasswd("root:x:0:0:root:/root:/bin/bash\n");
  auto parse = [&](const std::string& line) {
    auto entry = ParseCronEntry(line, CrontabKind::kSystem, &users);
    return entry.ok() ? "ok:" + entry->command : entry.error();
  };
  EXPECT_EQ(parse("0 0 1 1 * nosuchuser echo"), "bad username");
  EXPECT_EQ(parse("0 0 1 1 * echo ok"), "bad username");  // a 5-field line in cron.d
  EXPECT_EQ(parse("* * * * * root"), "bad username");
  EXPECT_EQ(parse("* * * * * root\t"), "ok:");
  EXPECT_EQ(parse("* * * * * root    echo lead   "), "ok:   echo lead   ");
  EXPECT_EQ(parse("0 0 1 1 * root " + std::string(998, 'x')), "ok:" + std::string(998, 'x'));
  EXPECT_EQ(parse("0 0 1 1 * root " + std::string(999, 'x')), "command too long");
  EXPECT_EQ(parse(std::string("0 0 1 1 * root echo o\0k", 24)), "bad minute");
}

TEST(CrontabFileTest, EnvironmentLinesAsCronReadsThem) {
  struct Case {
    const char* line;
    bool environment;
    const char* name;
    const char* value;
  };
  const Case cases[] = {
      {"FOO = bar baz", true, "FOO", "bar baz"},
      {"X=\"q\"", true, "X", "q"},
      {"  Y=1", true, "Y", "1"},
      {"MAILTO=", false, "", ""},  // cron then fails on it: "bad minute"
      {"MAILTO=\"\"", true, "MAILTO", ""},
      {"=1", true, "", "1"},
      {"\"A B\"=1", true, "A B", "1"},
      {"A\t=\t1", true, "A", "1"},
      {"A=\"1\" x", false, "", ""},
      {"A=\"1", false, "", ""},
      {"A=$HOME/x", true, "A", "$HOME/x"},
      {"A=1\r", true, "A", "1"},
      {"*/5 * * * * root FOO=1 run", false, "", ""},
      {"@daily root x=y", false, "", ""},
  };
  for (const auto& test : cases) {
    std::string name, value;
    EXPECT_EQ(ParseEnvironmentLine(test.line, &name, &value), test.environment) << test.line;
    if (test.environment) {
      EXPECT_EQ(name, test.name) << test.line;
      EXPECT_EQ(value, test.value) << test.line;
    }
  }
  ParsedCrontab parsed = ParseCrontab("MAILTO=\n", CrontabKind::kSystem, "", nullptr);
  EXPECT_EQ(parsed.ignored_because, "line 1: bad minute");
}

std::string Lines(int count, const std::string& line) {
  std::string text;
  for (int i = 0; i < count; ++i) text += line;
  return text;
}

TEST(CrontabFileTest, LineLimit) {
  const std::string entry = "0 0 1 1 * root true\n";
  EXPECT_EQ(ParseCrontab(Lines(10000, entry), CrontabKind::kSystem, "", nullptr).entries.size(),
            10000u);
  EXPECT_EQ(ParseCrontab(Lines(10001, entry), CrontabKind::kSystem, "", nullptr).entries.size(),
            10001u);
  EXPECT_EQ(ParseCrontab(Lines(10003, entry), CrontabKind::kSystem, "", nullptr).ignored_because,
            "");
  ParsedCrontab too_long = ParseCrontab(Lines(10004, entry), CrontabKind::kSystem, "", nullptr);
  EXPECT_THAT(too_long.ignored_because,
              ::testing::StartsWith("line 10004: crontab must not be longer than 10000 lines"));
  EXPECT_TRUE(too_long.entries.empty());
  // Comments and blank lines before count; trailing ones do not.
  EXPECT_NE(
      ParseCrontab(Lines(10003, "#\n") + entry, CrontabKind::kSystem, "", nullptr).ignored_because,
      "");
  EXPECT_NE(
      ParseCrontab(Lines(10003, "\n") + entry, CrontabKind::kSystem, "", nullptr).ignored_because,
      "");
  EXPECT_EQ(
      ParseCrontab(entry + Lines(20000, "#\n"), CrontabKind::kSystem, "", nullptr).ignored_because,
      "");
  // An environment line counts like an entry.
  EXPECT_NE(ParseCrontab(entry + Lines(10002, "#\n") + "A=1\n", CrontabKind::kSystem, "", nullptr)
                .ignored_because,
            "");
  EXPECT_EQ(ParseCrontab(entry + Lines(10001, "#\n") + "A=1\n", CrontabKind::kSystem, "", nullptr)
                .ignored_because,
            "");
}

TEST(CrontabFileTest, FinalNewline) {
  EXPECT_EQ(ParseCrontab("* * * * * root true", CrontabKind::kSystem, "", nullptr).ignored_because,
            "missing newline before EOF");
  // cron minds only an unterminated entry or environment line.
  EXPECT_EQ(
      ParseCrontab("* * * * * root true\n# end", CrontabKind::kSystem, "", nullptr).ignored_because,
      "");
  EXPECT_EQ(ParseCrontab("", CrontabKind::kSystem, "", nullptr).ignored_because, "");
  // A CRLF blank line is no blank line for cron: '\r' starts an entry.
  EXPECT_EQ(ParseCrontab("\r\n", CrontabKind::kSystem, "", nullptr).ignored_because,
            "line 1: bad minute");
}

TEST(CrontabFileTest, VeryLongLines) {
  const std::string huge(1 << 20, 'x');
  // A long comment is harmless; a long command is cron's "command too long".
  EXPECT_EQ(ParseCrontab("#" + huge + "\n* * * * * root true\n", CrontabKind::kSystem, "", nullptr)
                .entries.size(),
            1u);
  EXPECT_EQ(ParseCrontab("* * * * * root " + huge + "\n", CrontabKind::kSystem, "", nullptr)
                .ignored_because,
            "line 1: command too long");
  // cron reads 999 bytes of an environment line: the value is cut, the line still one.
  ParsedCrontab parsed = ParseCrontab("A=" + huge + "\n", CrontabKind::kSystem, "", nullptr);
  ASSERT_EQ(parsed.environment.size(), 1u);
  EXPECT_EQ(parsed.environment[0].second.size(), 997u);
}

TEST(CrontabFileTest, SyntaxErrorIgnoresTheWholeFile) {
  ParsedCrontab parsed = ParseCrontab(
      "# schedwatch: role=retry spec_version=7\n*/10 * * * * root /bin/retry\n61 * * * * root x\n",
      CrontabKind::kSystem, "", nullptr);
  EXPECT_EQ(parsed.ignored_because, "line 3: bad minute");
  EXPECT_TRUE(parsed.entries.empty());
}

TEST(CrontabFileTest, NonUtf8IsReportedAndReadAsBytes) {
  std::string text =
      "# schedwatch: role=retry spec_version=7\n*/10 * * * * root /bin/echo caf\xe9\n"
      "# schedwatch: role=caf\xe9 spec_version=1\n0 0 * * * root true\n";
  ParsedCrontab parsed = ParseCrontab(text, CrontabKind::kSystem, "", nullptr);
  EXPECT_EQ(parsed.ignored_because, "");
  ASSERT_EQ(parsed.entries.size(), 2u);
  EXPECT_EQ(parsed.entries[0].role, "retry");
  EXPECT_EQ(LoggedCommand(parsed.entries[0].command), "/bin/echo caf\\351");
  EXPECT_EQ(parsed.entries[1].role, "");  // the marker with a non-UTF-8 role is refused
  EXPECT_THAT(Reasons(parsed), ElementsAre("non_utf8_crontab", "malformed_marker"));
  EXPECT_EQ(parsed.problems[0].message, "line 2: not valid UTF-8; read as bytes, as cron does");
  EXPECT_EQ(parsed.problems[1].message,
            "line 3: marker item \"role=caf\\xe9\" is not key=value with a printable value");
}

TEST(CrontabFileTest, LoggedCommandMatchesCronsLogLines) {
  // Left: the crontab's command; right: what cron 3.0pl1-162 logged in CMD/END.
  EXPECT_EQ(LoggedCommand("   echo lead   "), "echo lead");
  EXPECT_EQ(LoggedCommand("cat >/dev/null %stdin text"), "cat >/dev/null");
  EXPECT_EQ(LoggedCommand("echo pct date +\\%s >/dev/null"), "echo pct date +%s >/dev/null");
  EXPECT_EQ(LoggedCommand("echo ctl\x01x bs a\\\\b >/dev/null"), "echo ctl^Ax bs a\\b >/dev/null");
  EXPECT_EQ(LoggedCommand("echo h\xc3\xa9llo >/dev/null"), "echo h\\303\\251llo >/dev/null");
  EXPECT_EQ(LoggedCommand("echo\ttab >/dev/null"), "echo^Itab >/dev/null");
  EXPECT_EQ(LoggedCommand("echo Lcr\r"), "echo Lcr^M");
  EXPECT_EQ(LoggedCommand("a\\b"), "a\\b");
}

TEST(CrontabFileTest, Utf8Helpers) {
  EXPECT_EQ(SanitizeUtf8("ok \xc3\xa9 \xff"), "ok \xc3\xa9 \\xff");
  EXPECT_EQ(FirstInvalidUtf8Line("a\nb\n\xed\xa0\x80\n"), 3);  // a UTF-16 surrogate
  EXPECT_EQ(FirstInvalidUtf8Line("a\n\xf0\x9f\x98\x80\n"), 0);
}

}  // namespace
}  // namespace schedwatch::crontab
