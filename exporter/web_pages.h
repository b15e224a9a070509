// The bytes of the status pages and JSON, shared and never copied: a page of 10,000 roles is
// about 17.5 MiB, so each request holding its own copy (or two) would let 20 concurrent
// requests outgrow a 256 MiB container. A page is rendered once per published refresh and
// kept here; every answer holds a reference to the same immutable bytes until it is sent. The
// bytes held by the cache and by answers not yet sent (slow readers) are counted against a
// limit: past it, a page that would need a new rendering is refused (503) instead.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "exporter/refresher.h"

namespace schedwatch {

class PageCache {
 public:
  using Body = std::shared_ptr<const std::string>;

  explicit PageCache(std::size_t max_bytes);

  // The page rendered for `key` from `published`, or null. A newer refresh drops the older's.
  Body Find(const std::shared_ptr<const Published>& published, const std::string& key);
  // Keeps `body` as the page for `key` of `published` (a few keys per refresh; the oldest go).
  void Keep(const std::shared_ptr<const Published>& published, const std::string& key, Body body);

  // `bytes` as a shared body, counted while any answer or the cache holds it.
  Body Hold(std::string bytes);
  // Whether a new rendering must wait: the bytes held are at the limit.
  bool Full() const { return counter_->bytes.load() >= max_bytes_; }
  std::size_t held_bytes() const { return counter_->bytes.load(); }

 private:
  struct Counter {
    std::atomic<std::size_t> bytes{0};
  };
  static constexpr std::size_t kKeysPerRefresh = 8;

  const std::size_t max_bytes_;
  std::shared_ptr<Counter> counter_;  // shared with the bodies, which may outlive the cache
  std::mutex mutex_;
  std::weak_ptr<const Published> for_;
  std::map<std::string, Body> pages_;
  std::deque<std::string> order_;  // keys, oldest first
};

}  // namespace schedwatch
