// SharedText: copies share one counted buffer, which the last one frees (ASan sees a leak or a
// double free; TSan a count changed without atomics, from two threads).
#include "schedwatch/shared_text.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace schedwatch {
namespace {

SharedText Text(const std::string& bytes) {
  SharedText text(bytes.size());
  if (!bytes.empty()) std::memcpy(text.data(), bytes.data(), bytes.size());
  return text;
}

TEST(SharedTextTest, CopiesShareOneBufferAndCompareByBytes) {
  SharedText text = Text("/etc/cron.d/app:12");
  SharedText copy = text;
  EXPECT_EQ(copy.data(), text.data());
  EXPECT_EQ(copy.view(), "/etc/cron.d/app:12");

  SharedText other = Text("/etc/cron.d/app:12");
  EXPECT_NE(other.data(), text.data());
  EXPECT_EQ(other, text);
  EXPECT_FALSE(Text("/etc/cron.d/app:13") == text);

  SharedText moved = std::move(copy);
  EXPECT_EQ(moved.data(), text.data());
  EXPECT_EQ(copy.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  text = SharedText();
  EXPECT_EQ(moved.view(), "/etc/cron.d/app:12");  // the last copy keeps the buffer
  EXPECT_EQ(SharedText(), Text(""));
  EXPECT_EQ(SharedText().view(), "");
}

TEST(SharedTextTest, CopiesMadeAndDroppedOnTwoThreadsFreeTheBufferOnce) {
  SharedText text = Text(std::string(100, 'x'));
  auto churn = [&text] {
    for (int i = 0; i < 100000; ++i) {
      SharedText copy = text;
      ASSERT_EQ(copy.size(), 100u);
    }
  };
  std::thread first(churn), second(churn);
  first.join();
  second.join();
  EXPECT_EQ(text.view(), std::string(100, 'x'));
}

}  // namespace
}  // namespace schedwatch
