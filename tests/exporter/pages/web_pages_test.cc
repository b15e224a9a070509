// PageCache: one rendering per refresh and set of roles, pages charged to the budget before
// they are made, room made by dropping pages no answer reads.
#include "exporter/pages/web_pages.h"

#include <gtest/gtest.h>

namespace schedwatch {
namespace {

constexpr std::size_t kKiB = 1024;

PageCache::Key KeyOf(std::uint32_t roles, std::uint32_t first = 0) {
  PageCache::Key key{"/", {}};
  for (std::uint32_t i = 0; i < roles; ++i) key.roles.push_back(first + i);
  return key;
}

// A render of `bytes` in rows of 1 KiB that notes how many times it ran and the most bytes the
// cache held meanwhile.
struct Render {
  std::size_t bytes;
  const PageCache* cache;
  int runs = 0;
  std::size_t most_held = 0;
  bool operator()(const PageSink& sink) {
    ++runs;
    std::string row(kKiB, 'r');
    for (std::size_t done = 0; done < bytes; done += row.size()) {
      if (!sink(row)) return false;
      most_held = std::max(most_held, cache->held_bytes());
    }
    return true;
  }
};

PageCache::Body Get(PageCache& cache, const std::shared_ptr<const Published>& published,
                    const PageCache::Key& key, Render& render) {
  return cache.Get(published, key, [&render](const PageSink& sink) { return render(sink); });
}

TEST(PageCacheTest, TheSameRolesRenderOnce) {
  PageCache cache(8 << 20);
  auto published = std::make_shared<const Published>();
  Render render{100 * kKiB, &cache};
  PageCache::Body first = Get(cache, published, KeyOf(100), render);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->size, 100 * kKiB);
  EXPECT_EQ(first->Text(), std::string(100 * kKiB, 'r'));
  // Another request (other filters, the same roles): the same bytes, not a copy.
  EXPECT_EQ(Get(cache, published, KeyOf(100), render), first);
  EXPECT_EQ(render.runs, 1);
  // Other roles, or the JSON of the same roles, are other pages.
  EXPECT_NE(Get(cache, published, KeyOf(100, 1), render), first);
  PageCache::Key json = KeyOf(100);
  json.kind = "/api/v1/status";
  EXPECT_NE(Get(cache, published, json, render), first);
  EXPECT_EQ(render.runs, 3);
  PageCache::Counts counts = cache.counts();
  EXPECT_EQ(counts.rendered, 3u);
  EXPECT_EQ(counts.cached, 1u);
  EXPECT_EQ(counts.refused, 0u);
}

TEST(PageCacheTest, PagesAreChargedBeforeTheyAreMade) {
  const std::size_t budget = 4 << 20;
  PageCache cache(budget);
  auto published = std::make_shared<const Published>();
  // Two pages of 1 MiB that answers still read fill half of the budget.
  Render small{1024 * kKiB, &cache};
  PageCache::Body a = Get(cache, published, KeyOf(10, 0), small);
  PageCache::Body b = Get(cache, published, KeyOf(10, 10), small);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // A third that would pass the budget is stopped as soon as its next piece does not fit (its
  // estimate, 10 rows, said it would), and its pieces are given back.
  Render big{3 << 20, &cache};
  std::size_t held = cache.held_bytes();
  EXPECT_EQ(Get(cache, published, KeyOf(10, 20), big), nullptr);
  EXPECT_EQ(big.runs, 1);
  EXPECT_GT(big.most_held, held);
  EXPECT_LE(big.most_held, budget);
  EXPECT_EQ(cache.held_bytes(), held);
  EXPECT_EQ(cache.counts().refused, 1u);
  // Estimated past the budget: refused before it is rendered at all.
  Render many{kKiB, &cache};
  EXPECT_EQ(Get(cache, published, KeyOf(10000, 30), many), nullptr);
  EXPECT_EQ(many.runs, 0);
  EXPECT_EQ(cache.counts().refused, 2u);
}

TEST(PageCacheTest, RoomIsMadeFromPagesNoAnswerReads) {
  PageCache cache(4 << 20);
  auto published = std::make_shared<const Published>();
  Render page{1536 * kKiB, &cache};
  PageCache::Body read = Get(cache, published, KeyOf(10, 0), page);  // an answer still sends it
  Get(cache, published, KeyOf(10, 10), page);                        // kept, no longer read
  // A third page makes room by dropping the unread one, never the one being read.
  PageCache::Body third = Get(cache, published, KeyOf(10, 20), page);
  ASSERT_NE(third, nullptr);
  EXPECT_LE(page.most_held, 4u << 20);
  EXPECT_EQ(Get(cache, published, KeyOf(10, 0), page), read);  // still cached
  EXPECT_EQ(page.runs, 3);
  // With both being read there is no room for another.
  EXPECT_EQ(Get(cache, published, KeyOf(10, 10), page), nullptr);
  // Once the answers are sent, their pages make room.
  read.reset();
  third.reset();
  EXPECT_NE(Get(cache, published, KeyOf(10, 10), page), nullptr);
}

TEST(PageCacheTest, APageBiggerThanTheBudgetRendersOnlyAlone) {
  PageCache cache(1 << 20);
  auto published = std::make_shared<const Published>();
  Render small{100 * kKiB, &cache};
  PageCache::Body held = Get(cache, published, KeyOf(10, 0), small);
  Render huge{3 << 20, &cache};
  EXPECT_EQ(Get(cache, published, KeyOf(10, 10), huge), nullptr);  // another page is held
  held.reset();
  // Nothing else held (the small page, unread, is dropped): the whole fleet's page still shows.
  PageCache::Body alone = Get(cache, published, KeyOf(10, 10), huge);
  ASSERT_NE(alone, nullptr);
  EXPECT_EQ(alone->size, 3u << 20);
  EXPECT_EQ(Get(cache, published, KeyOf(10, 0), small), nullptr);  // while it is read
  EXPECT_EQ(Get(cache, published, KeyOf(10, 10), huge), alone);    // shared while it is read
  EXPECT_EQ(huge.runs, 2);
  // Once sent it is not kept: the bytes held go back below the budget.
  alone.reset();
  EXPECT_EQ(cache.held_bytes(), 0u);
  EXPECT_NE(Get(cache, published, KeyOf(10, 0), small), nullptr);
  EXPECT_EQ(cache.size(), 1u);  // nor is its key
}

TEST(PageCacheTest, ANewerRefreshDropsTheOlderPages) {
  PageCache cache(8 << 20);
  auto first = std::make_shared<const Published>();
  Render render{kKiB, &cache};
  PageCache::Body body = Get(cache, first, KeyOf(1), render);
  auto second = std::make_shared<const Published>();
  EXPECT_NE(Get(cache, second, KeyOf(1), render), body);
  EXPECT_EQ(render.runs, 2);
  // The older page's bytes go once no answer holds it.
  std::size_t held = cache.held_bytes();
  body.reset();
  EXPECT_LT(cache.held_bytes(), held);
}

TEST(PageCacheTest, PageMetrics) {
  std::string out;
  RenderPageMetrics({3, 2, 1}, {}, out);
  EXPECT_NE(out.find("# TYPE schedwatch_exporter_status_pages_total counter\n"), std::string::npos);
  EXPECT_NE(out.find("schedwatch_exporter_status_pages_total{outcome=\"rendered\"} 3\n"),
            std::string::npos);
  EXPECT_NE(out.find("schedwatch_exporter_status_pages_total{outcome=\"cached\"} 2\n"),
            std::string::npos);
  EXPECT_NE(out.find("schedwatch_exporter_status_pages_total{outcome=\"refused\"} 1\n"),
            std::string::npos);
}

}  // namespace
}  // namespace schedwatch
