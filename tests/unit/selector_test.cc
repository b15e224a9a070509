// success_metric selectors: what parses, and the exact words for what does not.
#include "schedwatch/selector.h"

#include <gtest/gtest.h>

namespace schedwatch {
namespace {

TEST(SelectorTest, ParsesNameAndEveryMatcherKind) {
  auto selector = ParseSelector(
      " job:last_success:max { job = \"report\", env=~'prod|staging', instance!=``, "
      "zone!~\"d\\\"ev\", } ");
  ASSERT_TRUE(selector.ok()) << selector.error();
  EXPECT_EQ(selector->metric, "job:last_success:max");
  ASSERT_EQ(selector->matchers.size(), 4u);
  EXPECT_EQ(selector->matchers[1].op, "=~");
  EXPECT_EQ(selector->matchers[1].value, "prod|staging");
  EXPECT_EQ(selector->matchers[2].op, "!=");
  EXPECT_EQ(selector->matchers[3].value, "d\"ev");
  EXPECT_TRUE(ParseSelector("{__name__=\"push_time_seconds\"}").ok());
}

TEST(SelectorTest, SaysWhatIsWrongAndWhere) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "expected a metric name or label matchers"},
      {"max(x)", "expected the end of the selector at character 4"},
      {"x y", "expected the end of the selector at character 3"},
      {"9x", "expected a metric name or '{' at character 1"},
      {"x{job}", "expected '=', '!=', '=~' or '!~' after label job at character 6"},
      {"x{job=a}", "expected a quoted value at character 7"},
      {"x{job=\"a\"", "expected ',' or '}' at character 10"},
      {"x{job=\"a}", "the string opened at character 7 is not closed"},
      {"x{=\"a\"}", "expected a label name or '}' at character 3"},
      {"{job=\"\"}", "a selector must have at least one non-empty matcher"},
  };
  for (const auto& [text, message] : cases) {
    auto selector = ParseSelector(text);
    ASSERT_FALSE(selector.ok()) << text;
    EXPECT_EQ(selector.error(), message) << text;
  }
}

}  // namespace
}  // namespace schedwatch
