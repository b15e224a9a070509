// The bytes of the status pages and JSON, shared and never copied: a page of 10,000 roles is
// about 17.5 MiB, so each request holding its own copy (or two) would let 20 concurrent
// requests outgrow a 256 MiB container. A page is rendered once per published refresh and set
// of roles (filters that select the same roles share it) and kept here; every answer holds a
// reference to the same immutable bytes until it is sent.
//
// The bytes of the cached pages, of answers not yet sent (slow readers) and of the page being
// rendered count against a budget, and a page is charged before it is made: a rendering that
// would pass the budget is refused (503) up front, from an estimate, or as soon as its next
// piece does not fit. Room is made by dropping cached pages that no answer reads, least
// recently used first. A page bigger than the whole budget is rendered only when no other page
// is held, and shared only while answers read it, so the bytes held stay below the larger of
// the budget and the biggest page, and go back below the budget once it is sent.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/exposition/exposition.h"
#include "exporter/pages/status_page.h"
#include "exporter/refresh/refresher.h"

namespace schedwatch {

// A page's bytes in pieces that are allocated one at a time, each charged before, and never
// moved (a growing std::string holds its old buffer too while it copies).
struct PageBytes {
  std::vector<std::string> pieces;
  std::size_t size = 0;
  std::string Text() const;  // the pieces joined (tests)
};

class PageCache {
 public:
  using Body = std::shared_ptr<const PageBytes>;
  // What a page's bytes depend on beside the refresh: its kind ("/", "/api/v1/status") and the
  // roles it lists, as indices into the refresh's roles in the page's order.
  struct Key {
    std::string kind;
    std::vector<std::uint32_t> roles;
    bool operator<(const Key& other) const {
      return kind != other.kind ? kind < other.kind : roles < other.roles;
    }
  };
  struct Counts {
    std::uint64_t rendered = 0, cached = 0, refused = 0;
  };

  explicit PageCache(std::size_t max_bytes);

  // The page for `key` of `published`: from the cache, or made by `render` (which writes it to
  // its sink a row at a time) and kept. Null when there is no room for it: answer 503.
  Body Get(const std::shared_ptr<const Published>& published, const Key& key,
           const std::function<bool(const PageSink&)>& render);
  // A page refused before it reached the cache (too many waiting): counted with the others.
  void CountRefused() { refused_.fetch_add(1); }

  Counts counts() const { return {rendered_.load(), cached_.load(), refused_.load()}; }
  std::size_t held_bytes() const { return counter_->bytes.load(); }
  std::size_t size() {  // pages (and keys of big pages being sent) kept
    std::lock_guard<std::mutex> lock(mutex_);
    return pages_.size();
  }

 private:
  struct Counter {
    std::atomic<std::size_t> bytes{0};
  };
  struct Entry {
    Body body;  // null for a page bigger than the budget: kept only while answers read it
    std::weak_ptr<const PageBytes> read;
    std::list<Key>::iterator use;  // its place in uses_
  };

  // Whether `bytes` more fit beside what is held, of which `own` are the caller's rendering's,
  // once cached pages no answer reads are dropped. Call with mutex_ held.
  bool MakeRoom(std::size_t bytes, std::size_t own);
  bool Charge(std::size_t bytes, std::size_t own);
  void ForgetOlder(const std::shared_ptr<const Published>& published);
  std::size_t Estimate(const Key& key);

  const std::size_t max_bytes_;
  std::shared_ptr<Counter> counter_;  // shared with the bodies, which may outlive the cache
  std::mutex mutex_;
  std::weak_ptr<const Published> for_;
  std::map<Key, Entry> pages_;
  std::list<Key> uses_;                           // keys of pages_, least recently used first
  std::map<std::string, std::size_t> row_bytes_;  // by kind: measured on the last big page
  std::atomic<std::uint64_t> rendered_{0}, cached_{0}, refused_{0};
};

// The family of PageCache::Counts in the form asked for (appended at each scrape).
void RenderPageMetrics(const PageCache::Counts& counts, const ExpositionForm& form,
                       std::string& out);

}  // namespace schedwatch
