// Running a helper program: output streamed to the caller, failures worded with the first line
// of standard error, cancellation and over-long lines ending it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "schedwatch/platform/subprocess.h"

namespace schedwatch::platform {
namespace {

std::size_t WholeLines(std::string_view text, std::vector<std::string>& lines) {
  std::size_t used = 0;
  for (auto end = text.find('\n'); end != std::string_view::npos; end = text.find('\n', used)) {
    lines.emplace_back(text.substr(used, end - used));
    used = end + 1;
  }
  return used;
}

TEST(RunCommandTest, StreamsOutputInWholeLines) {
  std::vector<std::string> lines;
  auto ran = RunCommand(
      {"/bin/sh", "-c", "printf 'one\\ntw'; sleep 0.05; printf 'o\\nthree\\n'"},
      [&](std::string_view text) { return WholeLines(text, lines); }, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.error();
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two", "three"}));
}

TEST(RunCommandTest, AFailureSaysTheExitStatusAndTheFirstErrorLine) {
  CommandOptions options;
  options.clean_error = [](std::string_view text) { return "<" + std::string(text) + ">"; };
  auto ran = RunCommand(
      {"/bin/sh", "-c", "echo 'no journal' >&2; echo more >&2; exit 3"},
      [](std::string_view text) { return text.size(); }, nullptr, options);
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.error(), "/bin/sh failed (exit status 3): <no journal>");

  auto missing = RunCommand(
      {"/nonexistent/journalctl"}, [](std::string_view text) { return text.size(); }, nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/journalctl"), std::string::npos);
  EXPECT_FALSE(RunCommand(
                   {}, [](std::string_view) { return std::size_t{0}; }, nullptr)
                   .ok());
}

TEST(RunCommandTest, CancellationKillsTheProgramAtOnce) {
  std::atomic<bool> cancelled{false};
  auto start = std::chrono::steady_clock::now();
  auto ran = RunCommand(
      {"/bin/sh", "-c", "echo started; exec sleep 30"},
      [&](std::string_view text) {
        cancelled = true;
        return text.size();
      },
      &cancelled);
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.error(), "/bin/sh cancelled");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(RunCommandTest, ALineLongerThanTheLimitEndsIt) {
  CommandOptions options;
  options.max_line_bytes = 1u << 20;
  auto ran = RunCommand(
      {"/bin/sh", "-c", "head -c 3000000 /dev/zero | tr '\\\\0' x; sleep 30"},
      [](std::string_view) { return std::size_t{0}; }, nullptr, options);
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.error(), "/bin/sh wrote a line longer than 1 MiB");
}

}  // namespace
}  // namespace schedwatch::platform
