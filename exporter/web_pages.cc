#include "exporter/web_pages.h"

#include <utility>

namespace schedwatch {

PageCache::PageCache(std::size_t max_bytes)
    : max_bytes_(max_bytes), counter_(std::make_shared<Counter>()) {}

PageCache::Body PageCache::Find(const std::shared_ptr<const Published>& published,
                                const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (for_.lock() != published) {
    for_ = published;
    pages_.clear();
    order_.clear();
    return nullptr;
  }
  auto it = pages_.find(key);
  return it == pages_.end() ? nullptr : it->second;
}

void PageCache::Keep(const std::shared_ptr<const Published>& published, const std::string& key,
                     Body body) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (for_.lock() != published) {  // the pages of one refresh at a time
    for_ = published;
    pages_.clear();
    order_.clear();
  }
  if (pages_.count(key) == 0) order_.push_back(key);
  pages_[key] = std::move(body);
  while (order_.size() > kKeysPerRefresh) {
    pages_.erase(order_.front());
    order_.pop_front();
  }
}

PageCache::Body PageCache::Hold(std::string bytes) {
  std::size_t size = bytes.size();
  counter_->bytes.fetch_add(size);
  std::shared_ptr<Counter> counter = counter_;
  return Body(new std::string(std::move(bytes)), [counter, size](const std::string* body) {
    counter->bytes.fetch_sub(size);
    delete body;
  });
}

}  // namespace schedwatch
