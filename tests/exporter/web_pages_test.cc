// PageCache: one rendering per refresh and key, shared bodies counted while held.
#include "exporter/web_pages.h"

#include <gtest/gtest.h>

namespace schedwatch {
namespace {

TEST(PageCacheTest, BodiesAreCountedWhileAnyoneHoldsThem) {
  PageCache cache(100);
  EXPECT_FALSE(cache.Full());
  PageCache::Body a = cache.Hold(std::string(60, 'a'));
  PageCache::Body reader = a;  // an answer still being sent
  EXPECT_EQ(cache.held_bytes(), 60u);
  PageCache::Body b = cache.Hold(std::string(40, 'b'));
  EXPECT_TRUE(cache.Full());  // a new rendering would go past the limit: refused (503)
  a.reset();
  EXPECT_TRUE(cache.Full());  // the slow reader still holds it
  reader.reset();
  EXPECT_EQ(cache.held_bytes(), 40u);
  EXPECT_FALSE(cache.Full());
}

TEST(PageCacheTest, OneRenderingPerRefreshAndKey) {
  PageCache cache(1 << 20);
  auto first = std::make_shared<const Published>();
  EXPECT_EQ(cache.Find(first, "/api/v1/status"), nullptr);
  PageCache::Body body = cache.Hold("{}");
  cache.Keep(first, "/api/v1/status", body);
  EXPECT_EQ(cache.Find(first, "/api/v1/status"), body);  // the same bytes, not a copy
  EXPECT_EQ(cache.Find(first, "/\nstale"), nullptr);
  // A newer refresh: the older pages go, and their bytes once no answer holds them.
  auto second = std::make_shared<const Published>();
  EXPECT_EQ(cache.Find(second, "/api/v1/status"), nullptr);
  EXPECT_EQ(cache.held_bytes(), 2u);
  body.reset();
  EXPECT_EQ(cache.held_bytes(), 0u);
}

TEST(PageCacheTest, KeepsAFewKeysPerRefresh) {
  PageCache cache(1 << 20);
  auto published = std::make_shared<const Published>();
  cache.Find(published, "");
  for (int i = 0; i < 20; ++i) cache.Keep(published, std::to_string(i), cache.Hold("x"));
  EXPECT_EQ(cache.Find(published, "0"), nullptr);  // the oldest went
  EXPECT_NE(cache.Find(published, "19"), nullptr);
  EXPECT_LE(cache.held_bytes(), 8u);
}

}  // namespace
}  // namespace schedwatch
