// The reason vocabulary of schedwatch_source_errors_total and the per-reason caps of a read's
// problems.
#include "sources/problems.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace schedwatch {
namespace {

TEST(ReasonsTest, TheTableFollowsTheEnumAndNamesAreUniqueLabelValues) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < Reasons().size(); ++i) {
    const ReasonInfo& info = Reasons()[i];
    EXPECT_EQ(static_cast<std::size_t>(info.reason), i) << info.name;
    EXPECT_TRUE(std::regex_match(std::string(info.name), std::regex("[a-z]+(_[a-z0-9]+)*")))
        << info.name;
    EXPECT_FALSE(info.meaning.empty()) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << info.name << " twice";
  }
  EXPECT_EQ(ReasonName(Reason::kBadCheckpoint), "bad_checkpoint");
  EXPECT_EQ(ReasonName(Reason::kMalformedObject), "malformed_object");
}

// Every reason a golden exposition shows is one of the vocabulary's.
TEST(ReasonsTest, GoldenExpositionsUseDeclaredReasons) {
  std::set<std::string> declared;
  for (const auto& info : Reasons()) declared.emplace(info.name);
  const std::regex label("schedwatch_source_errors_total\\{[^}]*reason=\"([^\"]*)\"");
  int seen = 0;
  for (const auto& file : std::filesystem::recursive_directory_iterator(
           std::filesystem::path(SCHEDWATCH_TEST_DIR) / "golden")) {
    if (!file.is_regular_file()) continue;
    std::ifstream in(file.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string content = text.str();
    for (std::sregex_iterator it(content.begin(), content.end(), label), end; it != end; ++it) {
      EXPECT_TRUE(declared.count((*it)[1].str())) << (*it)[1].str() << " in " << file.path();
      ++seen;
    }
  }
  EXPECT_GT(seen, 0);
}

// docs/design.md's table of reasons (the one under "| `reason` | meaning |") lists every reason
// and nothing else.
TEST(ReasonsTest, TheDesignDocumentListsEveryReason) {
  std::ifstream in(std::filesystem::path(SCHEDWATCH_SOURCE_DIR) / "docs" / "design.md");
  std::set<std::string> documented;
  const std::regex row("\\| `([a-z0-9_]+)` \\| .+ \\|");
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "| `reason` | meaning |") {
      in_table = true;
      continue;
    }
    if (in_table && line.empty()) break;
    std::smatch match;
    if (in_table && std::regex_match(line, match, row)) documented.insert(match[1].str());
  }
  std::set<std::string> declared;
  for (const auto& info : Reasons()) declared.emplace(info.name);
  EXPECT_EQ(documented, declared);
}

TEST(ReasonsTest, RetryCausesMapToTheirReasons) {
  EXPECT_EQ(ReasonName(ReasonOf(platform::RetryCause::kTransport)),
            platform::RetryCauseName(platform::RetryCause::kTransport));
  for (auto cause : {platform::RetryCause::kTransport, platform::RetryCause::kRateLimited,
                     platform::RetryCause::kServerError, platform::RetryCause::kMalformed}) {
    EXPECT_EQ(ReasonName(ReasonOf(cause)), platform::RetryCauseName(cause));
  }
  SourceProblem problem =
      RecoveredProblem({platform::RetryCause::kServerError, "GET /x: HTTP 503; retrying"});
  EXPECT_EQ(problem.reason, "server_error");
  EXPECT_TRUE(problem.recovered);
}

TEST(ProblemSinkTest, CapsEachReasonApartAndSaysHowManyThereWere) {
  ProblemSink sink(100);
  int made = 0;
  for (int i = 0; i < 250; ++i) {
    sink.Add(Reason::kUnmatchedLine, [&made, i] {
      ++made;
      return fmt::format("#{}", i);
    });
  }
  sink.Add(Reason::kGarbledLine, [] { return std::string("g"); });
  EXPECT_EQ(made, 100) << "messages are made only for the problems listed";
  EXPECT_EQ(sink.Count(Reason::kUnmatchedLine), 250u);
  EXPECT_EQ(sink.Count(Reason::kGarbledLine), 1u);
  EXPECT_EQ(sink.Total(), 251u);

  std::vector<SourceProblem> problems;
  sink.AppendTo(problems);
  ASSERT_EQ(problems.size(), 101u);
  EXPECT_EQ(problems[0].reason, "unmatched_line");
  EXPECT_EQ(problems[0].message, "250 problems like this one (100 listed): #0");
  EXPECT_EQ(problems[1].message, "#1");
  EXPECT_EQ(problems[99].message, "#99");
  EXPECT_EQ(problems[100].reason, "garbled_line");
  EXPECT_EQ(problems[100].message, "g");
}

TEST(ProblemSinkTest, MergeKeepsTheCapAndTheCounts) {
  ProblemSink first(2), second(2);
  first.Add(MakeProblem(Reason::kMalformedObject, "a"));
  second.Add(MakeProblem(Reason::kMalformedObject, "b"));
  second.Add(MakeProblem(Reason::kMalformedObject, "c"));
  second.Add(MakeProblem(Reason::kServerError, "s", /*recovered=*/true));
  first.Merge(second);
  EXPECT_EQ(first.Count(Reason::kMalformedObject), 3u);
  std::vector<SourceProblem> problems;
  first.AppendTo(problems);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].message, "3 problems like this one (2 listed): a");
  EXPECT_EQ(problems[1].message, "b");
  EXPECT_EQ(problems[2].reason, "server_error");
  EXPECT_TRUE(problems[2].recovered);
}

TEST(CapProblemsTest, KeepsTheOrderAndCapsEachReason) {
  std::vector<SourceProblem> problems;
  problems.push_back(MakeProblem(Reason::kServerError, "retry", true));
  for (int i = 0; i < 5; ++i) {
    problems.push_back(MakeProblem(Reason::kMalformedObject, "m" + std::to_string(i)));
    problems.push_back(MakeProblem(Reason::kListRestarted, "r" + std::to_string(i), true));
  }
  auto capped = CapProblems(problems, 3);
  ASSERT_EQ(capped.size(), 7u);
  EXPECT_EQ(capped[0].message, "retry");
  EXPECT_EQ(capped[1].message, "5 problems like this one (3 listed): m0");
  EXPECT_EQ(capped[2].message, "5 problems like this one (3 listed): r0");
  EXPECT_EQ(capped[5].message, "m2");
  EXPECT_EQ(capped[6].message, "r2");
  EXPECT_TRUE(capped[6].recovered);
  // Within the cap nothing changes.
  auto same = CapProblems(problems, 5);
  ASSERT_EQ(same.size(), problems.size());
  EXPECT_EQ(same[1].message, "m0");
}

TEST(CapProblemsTest, ASinksTallyIsCountedNotTalliedTwice) {
  // A page's sink listed 3 of 299 unreadable items; the read adds one more of its own.
  ProblemSink sink(3);
  for (int i = 0; i < 299; ++i)
    sink.Add(Reason::kMalformedObject, [i] { return "m" + std::to_string(i); });
  std::vector<SourceProblem> problems;
  sink.AppendTo(problems);
  problems.push_back(MakeProblem(Reason::kMalformedObject, "pipeline"));
  auto capped = CapProblems(problems, 3);
  ASSERT_EQ(capped.size(), 3u);
  EXPECT_EQ(capped[0].message, "300 problems like this one (3 listed): m0");
  EXPECT_EQ(capped[2].message, "m2");
  // Within the cap the tally stands as it was.
  problems.pop_back();
  auto same = CapProblems(problems, 3);
  ASSERT_EQ(same.size(), 3u);
  EXPECT_EQ(same[0].message, "299 problems like this one (3 listed): m0");
}

}  // namespace
}  // namespace schedwatch
