#include "schedwatch/interned_text.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>
#include <thread>
#include <vector>

namespace schedwatch {
namespace {

TEST(InternedTextTest, EqualTextsAreOneCopy) {
  std::string built = "Europe/";
  built += "Berlin";
  InternedText a("Europe/Berlin"), b(built), c(std::string_view("Europe/Bern"));
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_NE(&a.str(), &c.str());
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
  EXPECT_TRUE(a != c);
  EXPECT_EQ(c < a, std::string("Europe/Bern") < std::string("Europe/Berlin"));
  EXPECT_EQ(&InternedText().str(), &InternedText("").str());
  EXPECT_TRUE(InternedText().empty());
}

TEST(InternedTextTest, ReadsAsTheStringItReplaces) {
  InternedText source = "host-cron";
  EXPECT_TRUE(source == "host-cron");
  EXPECT_TRUE("host-cron" == source);
  EXPECT_TRUE(source == std::string("host-cron"));
  EXPECT_TRUE(std::string("other") != source);
  EXPECT_TRUE(source != std::string_view("other"));
  const std::string& text = source;
  std::string_view view = source;
  EXPECT_EQ(text, "host-cron");
  EXPECT_EQ(view.size(), 9u);
  EXPECT_EQ(fmt::format("[{}] [{:>10}]", source, InternedText("tz")), "[host-cron] [        tz]");
  std::ostringstream out;
  out << source;
  EXPECT_EQ(out.str(), "host-cron");
  EXPECT_STREQ(source.c_str(), "host-cron");
}

// Specs are loaded on several threads (a reload beside a test's own): one copy still.
TEST(InternedTextTest, ThreadsGetTheSameCopy) {
  std::vector<const std::string*> seen(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] {
      for (int n = 0; n < 1000; ++n) InternedText(fmt::format("zone-{}", n));
      seen[i] = &InternedText("zone-999").str();
    });
  }
  for (auto& thread : threads) thread.join();
  for (const std::string* copy : seen) EXPECT_EQ(copy, seen.front());
}

}  // namespace
}  // namespace schedwatch
